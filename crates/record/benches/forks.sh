#!/bin/sh
# shellcheck source-path=SCRIPTDIR
# The recorder's cost of a fork on a host that holds many open fds (a database server's
# backends hold hundreds of thousands): every fork copies its parent's fds in the recorder's
# tables, and must not look at anyone else's. Runs `iocap record` system-wide around F forks of
# a small program (each child exits at once), first with no other fds open, then with HOLDERS
# processes each holding FDS open fds of /dev/null; prints the forks' own µs/fork and the
# recorder's threads' CPU (ms, from /proc/PID/task/*/stat) over the forks, then per fork.
# Run as root from the workspace after `cargo build --release` (needs cc):
#   sh crates/record/benches/forks.sh
# F (5000 forks), HOLDERS (10), FDS (9000, under the usual hard limit of 20,000 fds a process)
# and IOCAP (binary; BEFORE=another binary runs each case with it too) override the defaults.
set -eu
F=${F:-5000}
HOLDERS=${HOLDERS:-10}
FDS=${FDS:-9000}
IOCAP=${IOCAP:-target/release/iocap}
BEFORE=${BEFORE:-}
for c in cc "$IOCAP" ${BEFORE:+"$BEFORE"}; do
    command -v "$c" >/dev/null || { echo "forks.sh: needs $c" >&2; exit 1; }
done
T=$(mktemp -d)
held='' tp=''
# thread_ticks, await.
# shellcheck source=common.sh
. "$(dirname "$0")/common.sh"
trap '[ -z "$tp" ] || { kill -INT "$tp"; wait "$tp"; } 2>/dev/null || true
[ -z "$held" ] || kill $held 2>/dev/null || true
rm -rf "$T"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

cat > "$T/holder.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/resource.h>
/* holder N: open /dev/null N times, say so, and wait to be killed. */
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    struct rlimit r = { n + 64, n + 64 };
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) { perror("setrlimit"); return 1; }
    for (int i = 0; i < n; i++)
        if (open("/dev/null", O_RDONLY) < 0) { perror("open"); return 1; }
    printf("ready\n");
    fflush(stdout);
    pause();
    return 0;
}
C
cat > "$T/forker.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
/* forker N: N forks, each child exiting at once and waited for; prints µs per fork. */
int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    struct timespec a, z;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) _exit(0);
        waitpid(p, 0, 0);
    }
    clock_gettime(CLOCK_MONOTONIC, &z);
    printf("%.1f\n", ((z.tv_sec - a.tv_sec) * 1e9 + (z.tv_nsec - a.tv_nsec)) / 1e3 / n);
    return 0;
}
C
cc -O2 -o "$T/holder" "$T/holder.c"
cc -O2 -o "$T/forker" "$T/forker.c"

# The recorder $1's threads' ticks (all of them), summed.
ticks() { cat /proc/"$1"/task/*/stat | thread_ticks main | awk '{ s += $3 } END { print s + 0 }'; }

# One case: binary $1, with the fds already held; prints its row, labelled $2.
one() {
    "$1" record -w "$T/f.cap" > "$T/rec.log" 2>&1 &
    tp=$!
    await "$T/rec.log" 'recording to' || { echo "forks.sh: $1 did not start" >&2; cat "$T/rec.log" >&2; exit 1; }
    # The recorder reads every process's fds from /proc at its start: past that.
    sleep 2
    a=$(ticks "$tp")
    us=$("$T/forker" "$F")
    z=$(ticks "$tp")
    kill -INT "$tp"; wait "$tp" || true
    tp=''
    hz=$(getconf CLK_TCK)
    awk -v l="$2" -v b="$1" -v us="$us" -v t=$((z - a)) -v hz="$hz" -v f="$F" 'BEGIN {
        ms = t * 1000 / hz
        printf "%-28s %-28s %7.1f us/fork  recorder %6.0f ms, %6.1f us/fork\n", l, b, us, ms, ms * 1000 / f }'
}

echo "$F forks under iocap record (system-wide); the recorder's CPU over them:"
for bin in "$IOCAP" ${BEFORE:+"$BEFORE"}; do one "$bin" "no fds held"; done
i=0
while [ $i -lt "$HOLDERS" ]; do
    "$T/holder" "$FDS" > "$T/h$i.out" &
    held="$held $!"
    i=$((i + 1))
done
i=0
while [ $i -lt "$HOLDERS" ]; do
    await "$T/h$i.out" ready || { echo "forks.sh: a holder failed" >&2; exit 1; }
    i=$((i + 1))
done
for bin in "$IOCAP" ${BEFORE:+"$BEFORE"}; do one "$bin" "$HOLDERS x $FDS fds held"; done
