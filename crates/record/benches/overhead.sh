#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# Recorder overhead. In one run: a one-byte read() loop untraced, under `iocap record -c`, under a
# system-wide `iocap record`, under bpftrace with empty raw_syscalls probes, under
# `perf record -e 'raw_syscalls:*'` and under `strace -f`; under the floor (floor.bpf.c: the
# same loop with two empty tp_btf programs on sys_enter/sys_exit attached, then with one clock
# read in each, the least any tracer of enter -> exit latency runs), and iocap's added cost
# (ns over untraced) over the floor's; a 4 KiB pread() loop untraced and under
# `iocap record -c`; and a sustained run of S syscalls (much more than the ring holds, so a consumer
# that falls behind shows as drops) giving events/s written to the file. Prints ns/syscall and the
# ratio to untraced (the median of R runs each), iocap's event and drop counts and bytes/event
# (of the loops, and of a small mixed real workload).
# Each loop times itself in thread CPU time (CLOCK_THREAD_CPUTIME_ID): the cost a traced thread
# pays per call, steady on a shared machine where wall time counts waiting for a CPU too.
# Run as root from the workspace after `cargo build --release`:
#   sh crates/record/benches/overhead.sh
# N (loop count), R (repeats), S (sustained loop count) and IOCAP (binary) override the defaults.
# The floor needs clang and libbpf's headers (libbpf-dev); without them its rows say so.
# Rows (ns/syscall, the median of R runs, and the ratio to untraced; the single-loop rows down to
# the floors are run interleaved, R rounds of each once):
#   untraced read 1 B              the loop alone
#   iocap record -c                iocap tracing the loop's process only (every other call filtered)
#   iocap record -c --no-anatomy   the same without the anatomy of calls (sched_switch's timing
#                                  and sched_waking's program): a call that never blocks should
#                                  cost the same
#   iocap record (system-wide)     iocap tracing every process
#   floor: empty progs             two empty tp_btf programs on sys_enter/sys_exit, every process
#   floor: + 2 clock reads         the same with one bpf_ktime_get_ns() in each
#   floor: + clocks + one shared ring  and a 32-byte record per call through one BPF ring buffer
#   floor: + clocks + per-CPU rings  the record through this CPU's own ring instead, as iocap
#                                  does for every record but the hot path's
#   floor: + clocks + per-CPU lanes  the record in this CPU's lane (a mapped array, no reserve
#                                  or submit), as iocap writes the hot path's 32-byte record
#   iocap record -c, rings only    IOCAP_LANES=0: every record through the rings, as before
#                                  the lanes
#   two loops at once              a loop on each CPU at once: untraced, under the floors with
#                                  one shared ring and with per-CPU rings, and under iocap
#                                  system-wide (the mean of the two loops' ns/syscall)
#   iocap added / floor added      (iocap - untraced) / (floor with clock reads - untraced), for -c
#                                  and system-wide: what iocap's own work costs above the floor
#   bpftrace, perf, strace         peers on the same loop (strace on N/100 calls: it is that slow)
#   sched pipe                     context switches: `perf bench sched pipe -l P` (two processes
#                                  passing a byte, every call blocks) untraced, under `record -c
#                                  --no-anatomy` and `record -c`, ns per round trip (wall time,
#                                  the median of R interleaved rounds), and what the anatomy adds
#                                  per round trip
#   sustained                      S reads under `iocap record -c`: events/s, then the recorder's
#                                  CPU per 1 M events/s, split: its BPF programs (charged to the
#                                  traced thread: the loop's ns over untraced) and its own threads
#                                  (ring poller, writer and encoder: iocap's user + system time,
#                                  less the loop's, per event), then each of those threads alone
#   sustained, two loops           two loops of S reads at once (both CPUs) under one recording:
#                                  events/s offered (the loops' calls over the span from the
#                                  first start to the last end) and recorded, and the drops;
#                                  then again with the recorder at nice -10 (record --nice)
set -eu
N=${N:-3000000}
R=${R:-3}
S=${S:-20000000}
P=${P:-200000}
IOCAP=${IOCAP:-target/release/iocap}
T=$(mktemp -d)
fp=
# facts (a capture's events, drops, bytes/event), await (a line in a file), thread_ticks and
# bpf_stats_off/back.
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
# kernel.bpf_stats_enabled off while this measures, as it was afterwards.
bpf_stats_off
trap '[ -z "$fp" ] || { kill -INT "$fp"; wait "$fp"; } 2>/dev/null || true; rm -rf "$T"
bpf_stats_back' EXIT
# sh runs the EXIT trap on exit only, not when a signal ends it (the floor would stay attached).
trap 'exit 130' INT
trap 'exit 143' TERM HUP
cat > "$T/loop.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* loop r N: N one-byte reads of /dev/zero; loop p N FILE: N 4 KiB preads at offset 0 of FILE;
   both print the thread CPU ns per call. loop w N: the reads, printing when they started and
   ended (CLOCK_MONOTONIC ns), for a rate over several loops at once. */
int main(int c, char **v) {
    if (c < 3) return 2;
    long n = atol(v[2]); static char b[4096];
    int pread_mode = v[1][0] == 'p', wall = v[1][0] == 'w';
    clockid_t clock = wall ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    int fd = open(pread_mode && c > 3 ? v[3] : "/dev/zero", O_RDONLY);
    if (fd < 0) return 1;
    struct timespec a, z; clock_gettime(clock, &a);
    if (pread_mode)
        for (long i = 0; i < n; i++) pread(fd, b, sizeof(b), 0);
    else
        for (long i = 0; i < n; i++) read(fd, b, 1);
    clock_gettime(clock, &z);
    if (wall)
        printf("%.0f %.0f\n", a.tv_sec * 1e9 + a.tv_nsec, z.tv_sec * 1e9 + z.tv_nsec);
    else
        printf("%.1f\n", ((z.tv_sec - a.tv_sec) * 1e9 + (z.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
C
cc -O2 -o "$T/loop" "$T/loop.c"
head -c 65536 /dev/urandom > "$T/data"

# The median of R runs of "$@" (each prints one number).
median() {
    i=0; : > "$T/m"
    while [ $i -lt "$R" ]; do "$@" >> "$T/m"; i=$((i + 1)); done
    sort -n "$T/m" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
row() { awk -v n="$1" -v ns="$2" -v b="$3" 'BEGIN { printf "%-34s %9.1f ns/syscall %6.2fx\n", n, ns, ns / b }'; }
iocap_c() { "$IOCAP" record -w "$T/c.cap" -c "$T/loop $*" 2>"$T/err"; }
iocap_c_noanat() { "$IOCAP" record --no-anatomy -w "$T/n.cap" -c "$T/loop $*" 2>"$T/err"; }
iocap_c_rings() { IOCAP_LANES=0 "$IOCAP" record -w "$T/r.cap" -c "$T/loop $*" 2>"$T/err"; }
# A system-wide recording around one loop run: the loop starts only once every probe is attached.
iocap_all() {
    "$IOCAP" record -w "$T/a.cap" 2>"$T/aerr" &
    ip=$!
    if ! await "$T/aerr" '^recording'; then kill -INT $ip; wait $ip || true; cat "$T/aerr" >&2; return 1; fi
    "$T/loop" "$@"
    kill -INT $ip; wait $ip
}

# The floor's two objects and their loader, built as build.rs builds iocap's programs (same
# flags, same vmlinux.h). Fails without clang or libbpf's headers (the caller says so).
build_floor() {
    b=$(dirname "$0")
    for v in 0 1 2 3 4; do
        clang -D__TARGET_ARCH_x86 -DFLOOR_CLOCK=$v -I"$b/../../../bpf" -fno-stack-protector -g -O2 -target bpf \
            -c "$b/floor.bpf.c" -o "$T/floor-$v.o" || return 1
    done
    cc -O2 -o "$T/floor-load" "$b/floor-load.c" -lbpf
}
# Attach the floor object $1 (system-wide) in this shell, so the EXIT trap can detach it.
floor_on() {
    "$T/floor-load" "$1" >"$T/fl" 2>&1 &
    fp=$!
    await "$T/fl" '^ready' && return 0
    kill -INT $fp 2>/dev/null || true; wait $fp 2>/dev/null || true; fp=
    echo "floor: not attached: $(tr '\n' ' ' < "$T/fl")" >&2; return 1
}
floor_off() { kill -INT $fp; wait $fp; fp=; }
# Two loops at once (one per CPU): the mean of their ns/syscall.
two_loops() {
    { "$T/loop" r "$N" & "$T/loop" r "$N"; wait; } | awk '{ s += $1 } END { printf "%.1f\n", s / NR }'
}
iocap_all_two() {
    "$IOCAP" record -w "$T/a.cap" 2>"$T/aerr" &
    ip=$!
    if ! await "$T/aerr" '^recording'; then kill -INT $ip; wait $ip || true; cat "$T/aerr" >&2; return 1; fi
    two_loops
    kill -INT $ip; wait $ip
}
# (iocap's ns - untraced) / (the floor's ns - untraced), one figure.
added() { awk -v i="$1" -v f="$2" -v b="$base" 'BEGIN { printf "%.2fx", (i - b) / (f - b) }'; }

# The single-loop variants run interleaved: R rounds, each running every variant once, in an
# order rotated round by round, so that the host's drift (its other tenants) reaches every
# variant alike rather than whichever ran in a bad minute. Rows are each variant's median; the
# goal's ratio is also taken round by round (each round's iocap, floor and untraced) and its
# median printed beside.
floor=; build_floor 2>"$T/fberr" && floor=1
variants="base c noanat rings all"
[ -z "$floor" ] || variants="$variants floor0 floor1 floor2 floor3 floor4"
# One run of variant $1, appending its ns/syscall to $T/v.$1 (in this shell: floor_on's
# process must be one the EXIT trap can stop).
one() {
    case $1 in
        base) "$T/loop" r "$N" ;;
        c) iocap_c r "$N" ;;
        noanat) iocap_c_noanat r "$N" ;;
        rings) iocap_c_rings r "$N" ;;
        all) iocap_all r "$N" ;;
        floor*) floor_on "$T/floor-${1#floor}.o"; "$T/loop" r "$N"; floor_off ;;
    esac >> "$T/v.$1"
}
i=0
while [ $i -lt "$R" ]; do
    set -- $variants
    k=0
    while [ $k -lt $((i % $#)) ]; do set -- "$@" "$1"; shift; k=$((k + 1)); done
    for v in "$@"; do one "$v"; done
    i=$((i + 1))
done
med() { sort -n "$T/v.$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The median over rounds of (iocap's ns - untraced) / (floor's ns - untraced), variant $1.
round_ratio() {
    paste "$T/v.$1" "$T/v.floor1" "$T/v.base" | awk '{ print ($1 - $3) / ($2 - $3) }' |
        sort -n | awk '{ v[NR] = $1 } END { printf "%.2fx", v[int((NR + 1) / 2)] }'
}
base=$(med base)
row "untraced read 1 B" "$base" "$base"
c_ns=$(med c)
row "iocap record -c" "$c_ns" "$base"
facts "$T/c.cap"
row "iocap record -c --no-anatomy" "$(med noanat)" "$base"
r_ns=$(med rings)
row "iocap record -c, rings only" "$r_ns" "$base"
a_ns=$(med all)
row "iocap record (system-wide)" "$a_ns" "$base"
facts "$T/a.cap"
if [ -n "$floor" ]; then
    row "floor: empty progs" "$(med floor0)" "$base"
    f2=$(med floor1)
    row "floor: + 2 clock reads" "$f2" "$base"
    f3=$(med floor2)
    row "floor: + clocks + one shared ring" "$f3" "$base"
    f4=$(med floor3)
    row "floor: + clocks + per-CPU rings" "$f4" "$base"
    f5=$(med floor4)
    row "floor: + clocks + per-CPU lanes" "$f5" "$base"
    echo "iocap added / floor added (+ 2 clock reads), of the medians: -c $(added "$c_ns" "$f2"), system-wide $(added "$a_ns" "$f2") (goal <= 1.15x)"
    echo "    the median of each round's: -c $(round_ratio c), system-wide $(round_ratio all); rings only (IOCAP_LANES=0): -c $(added "$r_ns" "$f2"), each round's $(round_ratio rings)"
    awk -v r="$f3" -v p="$f4" -v l="$f5" -v c="$c_ns" -v f="$f2" 'BEGIN { printf "    of which the lane record %.1f ns (per-CPU ring: %.1f ns, one shared ring: %.1f ns), iocap'"'"'s bookkeeping %.1f ns\n", l - f, p - f, r - f, c - l }'
    # Both CPUs making calls at once: what sharing one ring costs each call.
    echo "two loops at once (ns/syscall, each loop's mean):"
    row "  untraced" "$(median two_loops)" "$base"
    floor_on "$T/floor-1.o"
    row "  floor: + 2 clock reads" "$(median two_loops)" "$base"
    floor_off
    floor_on "$T/floor-2.o"
    row "  floor: + clocks + one shared ring" "$(median two_loops)" "$base"
    floor_off
    floor_on "$T/floor-3.o"
    row "  floor: + clocks + per-CPU rings" "$(median two_loops)" "$base"
    floor_off
    floor_on "$T/floor-4.o"
    row "  floor: + clocks + per-CPU lanes" "$(median two_loops)" "$base"
    floor_off
    row "  iocap record (system-wide)" "$(median iocap_all_two)" "$base"
    facts "$T/a.cap"
else
    echo "floor: not built (needs clang and libbpf-dev): $(head -1 "$T/fberr")"
fi
if command -v bpftrace >/dev/null; then
    # BEGIN runs once every probe is attached: wait for it, or the loop runs untraced.
    bpftrace -B none -e 'BEGIN { printf("ready\n"); } tracepoint:raw_syscalls:sys_enter {} tracepoint:raw_syscalls:sys_exit {}' >"$T/bt" 2>&1 &
    bp=$!
    if await "$T/bt" '^ready'; then
        row "bpftrace empty probes" "$(median "$T/loop" r "$N")" "$base"
    else
        echo "bpftrace empty probes: probes not attached: $(tr '\n' ' ' < "$T/bt")"
    fi
    kill -INT $bp 2>/dev/null || true; wait $bp 2>/dev/null || true
fi
if command -v perf >/dev/null; then
    ns=$(perf record -q -o "$T/perf.data" -e 'raw_syscalls:*' -- "$T/loop" r "$N" 2>/dev/null)
    row "perf record raw_syscalls:*" "$ns" "$base"
    rm -f "$T/perf.data"
fi
if command -v strace >/dev/null; then
    ns=$(strace -f -o /dev/null "$T/loop" r $((N / 100)))
    row "strace -f (N/100)" "$ns" "$base"
fi
pbase=$(median "$T/loop" p "$N" "$T/data")
row "untraced pread 4 KiB" "$pbase" "$pbase"
row "iocap record -c, pread 4 KiB" "$(median iocap_c p "$N" "$T/data")" "$pbase"
facts "$T/c.cap"
if command -v perf >/dev/null; then
    # Every call of the benchmark blocks: the anatomy's programs run at each switch and waking.
    # ns per round trip (perf's usecs/op), interleaved rounds as above.
    bench="perf bench sched pipe -l $P"
    ns_op() { awk '/usecs\/op/ { print $1 * 1000 }'; }
    : > "$T/p.base"; : > "$T/p.noanat"; : > "$T/p.c"
    i=0
    while [ $i -lt "$R" ]; do
        $bench 2>/dev/null | ns_op >> "$T/p.base"
        "$IOCAP" record --no-anatomy -w "$T/s.cap" -c "$bench" 2>/dev/null | ns_op >> "$T/p.noanat"
        "$IOCAP" record -w "$T/s.cap" -c "$bench" 2>/dev/null | ns_op >> "$T/p.c"
        i=$((i + 1))
    done
    pmed() { sort -n "$T/p.$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    pb=$(pmed base); pn=$(pmed noanat); pc=$(pmed c)
    prow() { awk -v n="$1" -v ns="$2" -v b="$pb" 'BEGIN { printf "%-34s %9.0f ns/round trip %6.2fx\n", n, ns, ns / b }'; }
    prow "sched pipe untraced" "$pb"
    prow "sched pipe, record -c --no-anatomy" "$pn"
    prow "sched pipe, record -c" "$pc"
    awk -v n="$pn" -v c="$pc" 'BEGIN { printf "    the anatomy adds %.0f ns a round trip (the median rounds'"'"' difference)\n", c - n }'
fi
# bytes/event of a mixed real workload (metadata walk, buffered writes with fsync, reads back).
"$IOCAP" record -w "$T/w.cap" -c "find /usr/share -maxdepth 3 >/dev/null; dd if=/dev/zero of=$T/f bs=64k count=300 conv=fsync status=none; cat $T/f >/dev/null" 2>/dev/null
echo "real workload (find, dd, cat):"
facts "$T/w.cap"
# Sustained: S reads in one run; events/s = one event per syscall over the loop's time.
# The recorder's CPU, split: its BPF programs run in the traced thread (the loop's ns over
# untraced), its own threads (ring poller, writer, encoder) are iocap's user + system time less the
# loop's (time counts the child iocap waited for; the loop's thread CPU is S × its ns).
/usr/bin/time -f "%U %S" -o "$T/rtime" "$IOCAP" record -w "$T/c.cap" -c "$T/loop r $S" >"$T/ns" 2>"$T/err" &
tp=$!
# Each of iocap's threads' CPU (user + system ticks, /proc/PID/task/TID/stat), sampled every
# 0.1 s while it runs; the last sample of each thread counts (what its final drain adds is lost).
: > "$T/tasks"
while kill -0 "$tp" 2>/dev/null; do
    rp=$(pgrep -P "$tp" | head -1)
    [ -z "$rp" ] || cat /proc/"$rp"/task/*/stat >> "$T/tasks" 2>/dev/null || true
    sleep 0.1
done
wait "$tp"
ns=$(cat "$T/ns")
awk -v ns="$ns" -v s="$S" 'BEGIN { printf "sustained, iocap record -c, %d reads: %.2f M events/s\n", s, 1e3 / ns }'
facts "$T/c.cap"
events=$("$IOCAP" info "$T/c.cap" | awk '/^events/ { print $2 }')
read -r u sy < "$T/rtime"
awk -v ns="$ns" -v b="$base" -v u="$u" -v sy="$sy" -v e="$events" -v s="$S" 'BEGIN {
    own = u + sy - s * ns / 1e9
    printf "    recorder CPU per 1 M events/s: BPF programs %.2f CPUs (%.0f ns/event), iocap'"'"'s threads %.2f CPUs (%.0f ns/event)\n",
        (ns - b) / 1e3, ns - b, own / e * 1e6, own / e * 1e9 }'
thread_ticks poller "$T/tasks" | awk -v e="$events" -v hz="$(getconf CLK_TCK)" '{
        cpu[$1] = $3 / hz; who[$1] = $2
    }
    END {
        for (t in cpu) by[who[t]] += cpu[t]
        line = "    by thread (CPUs per 1 M events/s):"
        split("poller writer encoder", order, " ")
        for (i = 1; i <= 3; i++)
            if (order[i] in by) line = line sprintf(" %s %.2f (%.0f ns/event)", order[i], by[order[i]] / e * 1e6, by[order[i]] / e * 1e9)
        print line
    }'
# Sustained on both CPUs: the loops and the recorder share the two CPUs, so this is the rate
# the recorder keeps when it gets only what the traced work leaves it.
"$IOCAP" record -w "$T/c2.cap" -c "$T/loop w $S & $T/loop w $S; wait" >"$T/span" 2>"$T/err"
events=$("$IOCAP" info "$T/c2.cap" | awk '/^events/ { print $2 }')
awk -v s="$S" -v e="$events" '{ if (NR == 1 || $1 < a) a = $1; if ($2 > z) z = $2 }
    END { printf "sustained, two loops of %d reads: %.2f M events/s offered, %.2f M/s recorded\n", s, 2 * s / (z - a) * 1e3, e / (z - a) * 1e3 }' "$T/span"
facts "$T/c2.cap"
# The same with the recorder's threads at nice -10 (record --nice): it takes the CPU it needs
# and the loops slow instead.
"$IOCAP" record --nice -10 -w "$T/c2.cap" -c "$T/loop w $S & $T/loop w $S; wait" >"$T/span" 2>"$T/err"
events=$("$IOCAP" info "$T/c2.cap" | awk '/^events/ { print $2 }')
awk -v s="$S" -v e="$events" '{ if (NR == 1 || $1 < a) a = $1; if ($2 > z) z = $2 }
    END { printf "sustained, two loops, record --nice -10: %.2f M events/s offered, %.2f M/s recorded\n", 2 * s / (z - a) * 1e3, e / (z - a) * 1e3 }' "$T/span"
facts "$T/c2.cap"
