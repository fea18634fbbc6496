#!/bin/sh
# Recorder overhead on a one-byte read() loop: untraced, under iocap record, bpftrace with empty
# raw_syscalls probes, perf record -e 'raw_syscalls:*', strace -f. Prints ns/syscall, ratio,
# iocap's drops and bytes/event. Run as root from the workspace: sh crates/record/benches/overhead.sh
# (build first: cargo build --release). N overrides the loop count.
set -eu
N=${N:-5000000}
IOCAP=${IOCAP:-target/release/iocap}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat > "$T/loop.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int c, char **v) {
    long n = atol(v[1]); char b; int fd = open("/dev/zero", O_RDONLY);
    struct timespec a, z; clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) read(fd, &b, 1);
    clock_gettime(CLOCK_MONOTONIC, &z);
    printf("%.1f\n", ((z.tv_sec - a.tv_sec) * 1e9 + (z.tv_nsec - a.tv_nsec)) / n);
    return 0;
}
C
cc -O2 -o "$T/loop" "$T/loop.c"
base=$("$T/loop" "$N")
row() { awk -v n="$1" -v ns="$2" -v b="$base" 'BEGIN { printf "%-28s %9.1f ns/syscall %6.2fx\n", n, ns, ns / b }'; }
row untraced "$base"
ns=$("$IOCAP" record -w "$T/r.cap" -c "$T/loop $N" 2>"$T/err")
row "iocap record" "$ns"
"$IOCAP" info "$T/r.cap" | awk '/^events|^drops|^file/'
if command -v bpftrace >/dev/null; then
    bpftrace -e 'tracepoint:raw_syscalls:sys_enter {} tracepoint:raw_syscalls:sys_exit {}' >/dev/null 2>&1 &
    bp=$!; sleep 3
    row "bpftrace empty probes" "$("$T/loop" "$N")"
    kill -INT $bp 2>/dev/null || true; wait $bp 2>/dev/null || true
fi
if command -v perf >/dev/null; then
    ns=$(perf record -q -o "$T/perf.data" -e 'raw_syscalls:*' -- "$T/loop" "$N" 2>/dev/null)
    row "perf record raw_syscalls:*" "$ns"
fi
if command -v strace >/dev/null; then
    m=$((N / 100))
    ns=$(strace -f -o /dev/null "$T/loop" "$m")
    row "strace -f (N/100)" "$ns"
fi
