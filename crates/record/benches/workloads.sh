#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# Real workloads under iocap and its peers, in one run. Workloads:
#   fio     4 KiB random reads, O_DIRECT, libaio at iodepth 16, FIO_SECS seconds (time-based), on
#           a loop device over a 256 MiB image on a tmpfs this script mounts (a device fast
#           enough that tracing shows); the figure is fio's read IOPS (from its JSON).
#   disk    the same on a 1 GiB file on the machine's own disk (in DISK_DIR, /var/tmp: a device
#           whose speed, not the CPU, bounds fio, as most disks a user traces).
#   tar     `tar -cf - /usr/share | cat >/dev/null` with a warm page cache (an untimed,
#           untraced run just before each run: a shared machine's tests drop caches); wall
#           seconds. (Not `tar -cf /dev/null`: GNU tar then reads no file data.)
#   sqlite  the sqlite3 CLI on a database on the same tmpfs (fsync is free there, so the calls
#           themselves are what costs): SQL_TX small transactions (update an account, read it
#           back, insert a history row, commit: ~45 syscalls each), fixed by a seeded generator;
#           wall seconds, the database made afresh, untimed and untraced, before each run.
# Tools:
#   none      untraced
#   iocap     `iocap record -w FILE`, system-wide, every event written
#   iocap-stacks  the same with `--stacks=1ms`: the stacks of every call of 1 ms or more
#   bpftrace  a latency histogram of the same events: raw_syscalls sys_enter -> sys_exit per
#             thread, block_rq_issue -> block_rq_complete per (device, sector)
#   perf      `perf trace -o /dev/null` (every syscall formatted, like strace)
#   strace    `strace -f -o /dev/null`
# perf and strace wrap the workload; iocap and bpftrace are started first, the workload runs once
# they say they are attached, and they are stopped with SIGINT. Each figure is timed inside the
# traced command, so a tool's own start-up is not counted. R rounds, each running every
# (workload, tool) pair once, the tools in an order rotated round by round, so drift on the
# machine reaches every tool alike.
# Prints, per workload and tool, the median figure of the R runs and the slowdown: traced time
# over untraced time (untraced IOPS over traced IOPS for fio), 1.00x = no cost; then iocap's
# events, drops and bytes/event for each of its runs; then, from one more fio run under iocap
# (not in the table: it turns on kernel.bpf_stats_enabled, which costs every BPF program two
# clock reads), iocap's CPU per fio I/O: its BPF programs' run time (their fds' fdinfo) and each
# of its threads' (/proc/PID/task/*/stat ticks), and bpftrace's programs' the same way.
# Wall time and IOPS are only as steady as the machine: on a shared or virtual one the rounds
# differ by 2x and more (the figures of each round are printed beside the median, to judge).
# Run as root from the workspace after `cargo build --release` (needs fio, sqlite3, losetup;
# bpftrace, perf and strace are skipped when missing):
#   sh crates/record/benches/workloads.sh
# R (rounds, 3), FIO_SECS (5), SQL_TX (10000 transactions), DISK_DIR (/var/tmp), WORKLOADS (all four:
# "fio disk tar sqlite"), TOOLS (those found of "none iocap iocap-stacks bpftrace perf strace")
# and IOCAP (binary)
# override the defaults.
set -eu
R=${R:-3}
FIO_SECS=${FIO_SECS:-5}
SQL_TX=${SQL_TX:-10000}
IOCAP=${IOCAP:-target/release/iocap}
for c in fio sqlite3 losetup "$IOCAP"; do
    command -v "$c" >/dev/null || { echo "workloads.sh: $c not found" >&2; exit 1; }
done
T=$(mktemp -d)
D=$(mktemp -d "${DISK_DIR:-/var/tmp}/iocap-bench.XXXXXX")
mnt='' dev='' tp=''
# facts (a capture's events, drops, unseen requests, bytes/event), await (a line in a file), thread_ticks,
# bpf_stats_off/back, tmpfs_loop and the SQLite workload's sql_transactions and sql_database.
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
# kernel.bpf_stats_enabled off but for the last runs, as it was afterwards.
bpf_stats_off
# Only what this script made: its tracer, its loop device (never `losetup -D`), its tmpfs.
trap '[ -z "$tp" ] || { kill -INT "$tp"; wait "$tp"; } 2>/dev/null || true
bpf_stats_back
[ -z "$dev" ] || losetup -d "$dev" || true
[ -z "$mnt" ] || umount "$mnt" || true
rm -rf "$T" "$D"' EXIT
# sh runs the EXIT trap on exit only, not when a signal ends it.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

tmpfs_loop "$T" 256

# The workloads, each a script that prints its figure (the timed part is inside it).
cat > "$T/fio.sh" <<EOF
fio --name=randread --filename=$dev --readonly --rw=randread --bs=4k --direct=1 \
    --ioengine=libaio --iodepth=16 --time_based --runtime=$FIO_SECS --output-format=json \
    --output=$T/fio.json >/dev/null
awk '/"read" *:/ { r = 1 } r && /"iops" *:/ { gsub(/[",]/, ""); print \$3; exit }' $T/fio.json
EOF
fio --name=fill --filename="$D/img" --size=1g --rw=write --bs=1m --direct=1 --output=/dev/null
cat > "$T/disk.sh" <<EOF
fio --name=randread --filename=$D/img --readonly --rw=randread --bs=4k --direct=1 \
    --ioengine=libaio --iodepth=16 --time_based --runtime=$FIO_SECS --output-format=json \
    --output=$T/disk.json >/dev/null
awk '/"read" *:/ { r = 1 } r && /"iops" *:/ { gsub(/[",]/, ""); print \$3; exit }' $T/disk.json
EOF
cat > "$T/tar.sh" <<EOF
a=\$(date +%s%N)
tar -cf - /usr/share 2>/dev/null | cat >/dev/null
z=\$(date +%s%N)
awk -v a="\$a" -v z="\$z" 'BEGIN { printf "%.3f\n", (z - a) / 1e9 }'
EOF
sql_transactions "$SQL_TX" > "$T/tx.sql"
cat > "$T/sqlite.sh" <<EOF
a=\$(date +%s%N)
sqlite3 $mnt/db < $T/tx.sql >/dev/null
z=\$(date +%s%N)
awk -v a="\$a" -v z="\$z" 'BEGIN { printf "%.3f\n", (z - a) / 1e9 }'
EOF
workloads=${WORKLOADS:-fio disk tar sqlite}
# What workload $1 needs before each run, untimed and untraced.
prepare() {
    case $1 in
    tar) sh "$T/tar.sh" >/dev/null ;;
    sqlite) sql_database "$mnt/db" ;;
    esac
}
tools="none iocap iocap-stacks"
for t in bpftrace perf strace; do command -v $t >/dev/null && tools="$tools $t"; done
tools=${TOOLS:-$tools}

# Start a system-wide tracer ("$@", its output to $T/tp) in this shell, so the EXIT trap can stop
# it; wait for the line $1 says it is attached with.
start() {
    ready=$1; shift
    "$@" >"$T/tp" 2>&1 &
    tp=$!
    await "$T/tp" "$ready" && return 0
    echo "workloads.sh: $1 did not attach: $(tr '\n' ' ' < "$T/tp")" >&2; return 1
}
stop() { kill -INT "$tp"; wait "$tp"; tp=; }
BT='BEGIN { printf("ready\n"); }
tracepoint:raw_syscalls:sys_enter { @start[tid] = nsecs; }
tracepoint:raw_syscalls:sys_exit /@start[tid]/ { @sys_ns = hist(nsecs - @start[tid]); delete(@start[tid]); }
tracepoint:block:block_rq_issue { @rq[args->dev, args->sector] = nsecs; }
tracepoint:block:block_rq_complete /@rq[args->dev, args->sector]/ {
    @blk_ns = hist(nsecs - @rq[args->dev, args->sector]); delete(@rq[args->dev, args->sector]); }
END { clear(@start); clear(@rq); }'
# Run workload $2 under tool $1 (round $3); print its figure.
under() {
    case $1 in
    none) sh "$T/$2.sh" ;;
    iocap)
        start '^recording' "$IOCAP" record -w "$T/$2.cap"
        sh "$T/$2.sh"
        stop
        echo "  $2, round $3: $(facts "$T/$2.cap" | sed 's/^ *//')" >> "$T/iocap-facts"
        rm -f "$T/$2.cap"
        ;;
    iocap-stacks)
        start '^recording' "$IOCAP" record --stacks=1ms -w "$T/$2.cap"
        sh "$T/$2.sh"
        stop
        echo "  $2 with stacks, round $3: $(facts "$T/$2.cap" | sed 's/^ *//'), $("$IOCAP" info "$T/$2.cap" | grep '^stacks ' | sed 's/  */ /g')" >> "$T/iocap-facts"
        rm -f "$T/$2.cap"
        ;;
    bpftrace) start '^ready' bpftrace -B none -e "$BT"; sh "$T/$2.sh"; stop ;;
    perf) perf trace -o /dev/null -- sh "$T/$2.sh" ;;
    strace) strace -f -o /dev/null sh "$T/$2.sh" ;;
    esac
}

order=$tools
i=0
while [ $i -lt "$R" ]; do
    i=$((i + 1))
    for w in $workloads; do
        for t in $order; do
            prepare "$w"
            under "$t" "$w" "$i" > "$T/fig"
            # A tool that failed leaves no number: stop rather than print a wrong table.
            grep -Eq '^[0-9.]+$' "$T/fig" || { echo "workloads.sh: $w under $t gave no figure" >&2; exit 1; }
            cat "$T/fig" >> "$T/res-$w-$t"
        done
    done
    # The next round starts with the next tool, so no tool is always first after a workload change.
    order="${order#* } ${order%% *}"
done

med() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median of $R rounds; slowdown = traced / untraced time (untraced / traced IOPS for fio and disk)"
printf '%-28s %-9s %14s %9s   %s\n' workload tool figure slowdown "each round"
for w in $workloads; do
    case $w in
    fio) name="fio 4K randread, loop dev" unit=IOPS ;;
    disk) name="fio 4K randread, disk" unit=IOPS ;;
    tar) name="tar /usr/share, warm" unit=s ;;
    sqlite) name="sqlite3, $SQL_TX transactions" unit=s ;;
    esac
    base=$(med "$T/res-$w-none")
    for t in $tools; do
        awk -v n="$name" -v t="$t" -v f="$(med "$T/res-$w-$t")" -v b="$base" -v u="$unit" \
            -v runs="$(tr '\n' ' ' < "$T/res-$w-$t")" 'BEGIN {
            fmt = u == "s" ? "%.2f" : "%.0f"
            printf "%-28s %-9s %9s %-4s %8.2fx  ", n, t, sprintf(fmt, f), u, u == "s" ? f / b : b / f
            k = split(runs, r, " "); for (j = 1; j <= k; j++) printf " " fmt, r[j]; printf "\n" }'
    done
done
if [ -f "$T/iocap-facts" ]; then
    echo "iocap record, each run:"
    cat "$T/iocap-facts"
fi

# Tracer $1's CPU so far: its BPF programs' run time in ns (each program's fd's fdinfo, with
# kernel.bpf_stats_enabled), then its threads' user + system ticks: iocap's by role, another
# tracer's all together.
tracer_cpu() {
    cat /proc/"$tp"/fdinfo/* 2>/dev/null | awk '/^run_time_ns:/ { s += $2 } END { print "bpf", s + 0 }'
    if [ "$1" = iocap ]; then other=poller; else other=threads; fi
    cat /proc/"$tp"/task/*/stat 2>/dev/null | thread_ticks "$other" | awk '{ print $2, $3 }'
}
# One fio run under tracer $1 (started as under() does): its figures per fio I/O.
cost() {
    prepare fio
    case $1 in
    iocap) start '^recording' "$IOCAP" record -w "$T/fio.cap" ;;
    bpftrace) start '^ready' bpftrace -B none -e "$BT" ;;
    esac
    tracer_cpu "$1" > "$T/cpu0"
    iops=$(sh "$T/fio.sh")
    tracer_cpu "$1" > "$T/cpu1"
    stop
    rm -f "$T/fio.cap"
    ios=$(awk '/"read" *:/ { r = 1 } r && /"total_ios" *:/ { gsub(/[",]/, ""); print $3; exit }' "$T/fio.json")
    awk -v ios="$ios" -v iops="$iops" -v hz="$(getconf CLK_TCK)" -v t="$1" 'NR == FNR { was[$1] += $2; next } { now[$1] += $2 }
        END {
            # Threads cost more per I/O when fio runs slower: they wake on a clock too.
            line = sprintf("  %s, %.0f IOPS: BPF programs %.0f ns", t, iops, (now["bpf"] - was["bpf"]) / ios)
            split("poller writer encoder threads", order, " ")
            for (i = 1; i <= 4; i++)
                if (order[i] in now) line = line sprintf(", %s %.0f ns", order[i], (now[order[i]] - was[order[i]]) / hz * 1e9 / ios)
            print line
        }' "$T/cpu0" "$T/cpu1"
}
if sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
    echo "CPU per fio I/O (one more run each, kernel.bpf_stats_enabled on):"
    for t in iocap bpftrace; do
        case " $tools " in *" $t "*) cost "$t" ;; esac
    done
fi
