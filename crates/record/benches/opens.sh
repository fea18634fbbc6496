#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# The recorder's own CPU per event on a workload of opens of distinct files: `tar -cf -
# /usr/share | cat >/dev/null` (warm cache), T times, under `iocap record` system-wide. Each
# open names a file the recorder has not seen (its string, file and inode entries are new), so
# this is where its per-open work shows (workloads.sh's tar row is the same workload, timed).
# Prints each thread's CPU (/proc/PID/task/*/stat ticks over the tars) per event written: the
# poller (iocap's main thread), the writer and the encoder; with BEFORE, that binary's rows
# too, the two interleaved round by round so that both see the same machine; then the medians.
# Run as root from the workspace after `cargo build --release`:
#   BEFORE=/tmp/iocap-old sh crates/record/benches/opens.sh
# R (rounds, 5), T (tars a round, 3), IOCAP (binary) and BEFORE override the defaults.
set -eu
R=${R:-5}
T=${T:-3}
IOCAP=${IOCAP:-target/release/iocap}
BEFORE=${BEFORE:-}
for c in tar "$IOCAP" ${BEFORE:+"$BEFORE"}; do
    command -v "$c" >/dev/null || { echo "opens.sh: needs $c" >&2; exit 1; }
done
D=$(mktemp -d)
tp=''
# thread_ticks, await.
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
trap '[ -z "$tp" ] || { kill -INT "$tp"; wait "$tp"; } 2>/dev/null || true
rm -rf "$D"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

tars() {
    j=0
    while [ $j -lt "$T" ]; do
        tar -cf - /usr/share 2>/dev/null | cat >/dev/null
        j=$((j + 1))
    done
}

# One round of binary $1, labelled $2: prints `label poller writer encoder` in ns/event.
one() {
    tars
    "$1" record -w "$D/o.cap" > "$D/rec.log" 2>&1 &
    tp=$!
    await "$D/rec.log" 'recording to' || { echo "opens.sh: $1 did not start" >&2; cat "$D/rec.log" >&2; exit 1; }
    # Past the recorder's reading of every process's fds from /proc at its start.
    sleep 1
    thread_ticks poller /proc/"$tp"/task/*/stat > "$D/t0"
    tars
    thread_ticks poller /proc/"$tp"/task/*/stat > "$D/t1"
    kill -INT "$tp"; wait "$tp" || true
    tp=''
    ev=$(sed -n 's/.*wrote \([0-9]*\) events.*/\1/p' "$D/rec.log")
    rm -f "$D/o.cap"
    awk -v l="$2" -v ev="$ev" -v hz="$(getconf CLK_TCK)" 'NR == FNR { a[$2] += $3; next } { b[$2] += $3 }
        END { printf "%s", l; split("poller writer encoder", r, " ")
              for (i = 1; i <= 3; i++) printf " %.0f", (b[r[i]] - a[r[i]]) / hz * 1e9 / ev
              printf " %d\n", ev }' "$D/t0" "$D/t1"
}

# The binaries run as `iocap`: thread_ticks tells the threads by their names, and the main
# thread's is the binary's.
mkdir "$D/after" "$D/before"
cp "$IOCAP" "$D/after/iocap"
[ -z "$BEFORE" ] || cp "$BEFORE" "$D/before/iocap"
i=0
while [ $i -lt "$R" ]; do
    i=$((i + 1))
    for bin in "$D/after/iocap" ${BEFORE:+"$D/before/iocap"}; do
        if [ "$bin" = "$D/after/iocap" ]; then l=after; else l=before; fi
        [ -n "$BEFORE" ] || l=iocap
        one "$bin" "$l" | tee -a "$D/rows" | awk -v r=$i '{ printf "round %d  %-7s poller %4d  writer %4d  encoder %4d ns/event  (%d events)\n", r, $1, $2, $3, $4, $5 }'
    done
done
echo "median of $R rounds, the recorder's CPU per event (ns), $T tars of /usr/share a round:"
for l in before after iocap; do
    grep -q "^$l " "$D/rows" || continue
    for k in 2 3 4; do grep "^$l " "$D/rows" | awk -v k=$k '{ print $k }' | sort -n > "$D/c$k"; done
    med() { awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }' "$1"; }
    printf '  %-7s poller %4d  writer %4d  encoder %4d\n' "$l" "$(med "$D/c2")" "$(med "$D/c3")" "$(med "$D/c4")"
done
