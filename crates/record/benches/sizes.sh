#!/bin/sh
# Bytes/event of real recordings, with one binary or two side by side: each workload recorded
# with `iocap record -c` (the workload alone), R rounds (3), interleaved when BEFORE is given.
#   findddcat  find /usr/share -maxdepth 3, dd 300 x 64 KiB with fsync, cat the file back
#   tar        tar of /usr/share into a pipe to cat, warm cache
#   sqlite     10,000 small transactions on a tmpfs database
#   fio        4 KiB random reads, O_DIRECT, libaio at iodepth 16, 3 s, on a loop device over tmpfs
#   randrw     the same with random reads and writes mixed half and half
# Prints each run's events and bytes/event, then each binary's median per workload.
# Run as root from the workspace after `cargo build --release` (needs fio, sqlite3, losetup):
#   R=3 BEFORE=/path/to/old/iocap sh crates/record/benches/sizes.sh
# KEEP=DIR keeps each recording there (WORKLOAD-BINARY#-RUN.cap), to compare writers on the very
# same events (format_bench --rewrite).
set -eu
IOCAP=${IOCAP:-target/release/iocap}
BEFORE=${BEFORE:-}
R=${R:-3}
for c in fio sqlite3 losetup "$IOCAP" ${BEFORE:+"$BEFORE"}; do
    command -v "$c" >/dev/null || { echo "sizes.sh: needs $c" >&2; exit 1; }
done
T=$(mktemp -d)
dev="" mnt=""
# tmpfs_loop, sql_transactions, sql_database.
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
trap '[ -z "$dev" ] || losetup -d "$dev" || true
[ -z "$mnt" ] || umount "$mnt" || true
rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

tmpfs_loop "$T" 128
sql_transactions 10000 > "$T/tx.sql"

# The command line of workload $1 (after its preparation).
workload() {
    case $1 in
    findddcat) echo "find /usr/share -maxdepth 3 >/dev/null; dd if=/dev/zero of=$T/f bs=64k count=300 conv=fsync status=none; cat $T/f >/dev/null" ;;
    tar)
        tar -cf - /usr/share 2>/dev/null | cat >/dev/null
        echo "tar -cf - /usr/share 2>/dev/null | cat >/dev/null"
        ;;
    sqlite)
        sql_database "$mnt/db"
        echo "sqlite3 $mnt/db < $T/tx.sql >/dev/null"
        ;;
    fio | randrw)
        rw=randread
        [ "$1" = randrw ] && rw=randrw
        echo "fio --name=$1 --filename=$dev --rw=$rw --bs=4k --direct=1 --ioengine=libaio --iodepth=16 --time_based --runtime=3 --output=/dev/null"
        ;;
    esac
}

bins="$IOCAP"
[ -n "$BEFORE" ] && bins="$BEFORE $IOCAP"
: > "$T/results"
for w in findddcat tar sqlite fio randrw; do
    r=1
    while [ "$r" -le "$R" ]; do
        for b in $bins; do
            cmd=$(workload "$w")
            rm -f "$T/w.cap"
            "$b" record -w "$T/w.cap" -c "$cmd" >/dev/null 2>&1
            # "file  N bytes in K chunks, X bytes/event" and "events  N (...)"
            bpe=$("$IOCAP" info "$T/w.cap" | awk '$1 == "file" { print $(NF-1) }')
            n=$("$IOCAP" info "$T/w.cap" | awk '$1 == "events" { print $2 }')
            printf '%-9s %-40s run %d: %9d events, %5s bytes/event\n' "$w" "$b" "$r" "$n" "$bpe"
            [ -z "${KEEP:-}" ] || cp "$T/w.cap" "$KEEP/$w-$(echo "$bins" | tr ' ' '\n' | grep -nx "$b" | cut -d: -f1)-$r.cap"
            echo "$w $b $bpe" >> "$T/results"
        done
        r=$((r + 1))
    done
done
echo "median bytes/event:"
for w in findddcat tar sqlite fio randrw; do
    line=$(printf '%-9s' "$w")
    for b in $bins; do
        med=$(awk -v w="$w" -v b="$b" '$1 == w && $2 == b { print $3 }' "$T/results" | sort -n |
            awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
        line="$line  $b: $med"
    done
    echo "$line"
done
