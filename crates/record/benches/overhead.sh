#!/bin/sh
# Recorder overhead. In one run: a one-byte read() loop untraced, under `iocap record -c`, under a
# system-wide `iocap record`, under bpftrace with empty raw_syscalls probes, under
# `perf record -e 'raw_syscalls:*'` and under `strace -f`; a 4 KiB pread() loop untraced and under
# `iocap record -c`; and a sustained run of S syscalls (much more than the ring holds, so a consumer
# that falls behind shows as drops) giving events/s written to the file. Prints ns/syscall and the
# ratio to untraced (the median of R runs each), iocap's event and drop counts and bytes/event
# (of the loops, and of a small mixed real workload).
# Each loop times itself in thread CPU time (CLOCK_THREAD_CPUTIME_ID): the cost a traced thread
# pays per call, steady on a shared machine where wall time counts waiting for a CPU too.
# Run as root from the workspace after `cargo build --release`:
#   sh crates/record/benches/overhead.sh
# N (loop count), R (repeats), S (sustained loop count) and IOCAP (binary) override the defaults.
set -eu
N=${N:-3000000}
R=${R:-3}
S=${S:-20000000}
IOCAP=${IOCAP:-target/release/iocap}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/loop.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* loop r N: N one-byte reads of /dev/zero; loop p N FILE: N 4 KiB preads at offset 0 of FILE. */
int main(int c, char **v) {
    if (c < 3) return 2;
    long n = atol(v[2]); static char b[4096];
    int pread_mode = v[1][0] == 'p';
    int fd = open(pread_mode && c > 3 ? v[3] : "/dev/zero", O_RDONLY);
    if (fd < 0) return 1;
    struct timespec a, z; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    if (pread_mode)
        for (long i = 0; i < n; i++) pread(fd, b, sizeof(b), 0);
    else
        for (long i = 0; i < n; i++) read(fd, b, 1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &z);
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
# Events, drops and bytes/event of the last capture (one line).
facts() { "$IOCAP" info "$1" | awk '/^events/ { e = $2 } /^drops/ { d = $2 } /bytes\/event/ { for (i = 1; i <= NF; i++) if ($i == "bytes/event") b = $(i - 1) } END { printf "    events %s, drops %s, %s bytes/event\n", e, d, b }'; }
# Wait (up to 10 s) for a line matching $2 in file $1; fail if it never comes.
# (Its counter is not `i`: sh variables are global, and median's loop counts with `i`.)
await() {
    w=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        w=$((w + 1)); [ $w -lt 100 ] || return 1; sleep 0.1
    done
}
iocap_c() { "$IOCAP" record -w "$T/c.cap" -c "$T/loop $*" 2>"$T/err"; }
# A system-wide recording around one loop run: the loop starts only once every probe is attached.
iocap_all() {
    "$IOCAP" record -w "$T/a.cap" 2>"$T/aerr" &
    ip=$!
    if ! await "$T/aerr" '^recording'; then kill -INT $ip; wait $ip || true; cat "$T/aerr" >&2; return 1; fi
    "$T/loop" "$@"
    kill -INT $ip; wait $ip
}

base=$(median "$T/loop" r "$N")
row "untraced read 1 B" "$base" "$base"
row "iocap record -c" "$(median iocap_c r "$N")" "$base"
facts "$T/c.cap"
row "iocap record (system-wide)" "$(median iocap_all r "$N")" "$base"
facts "$T/a.cap"
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
# bytes/event of a mixed real workload (metadata walk, buffered writes with fsync, reads back).
"$IOCAP" record -w "$T/w.cap" -c "find /usr/share -maxdepth 3 >/dev/null; dd if=/dev/zero of=$T/f bs=64k count=300 conv=fsync status=none; cat $T/f >/dev/null" 2>/dev/null
echo "real workload (find, dd, cat):"
facts "$T/w.cap"
# Sustained: S reads in one run; events/s = one event per syscall over the loop's time.
ns=$(iocap_c r "$S")
awk -v ns="$ns" -v s="$S" 'BEGIN { printf "sustained, iocap record -c, %d reads: %.2f M events/s\n", s, 1e3 / ns }'
facts "$T/c.cap"
