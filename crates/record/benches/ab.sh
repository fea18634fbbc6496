#!/bin/sh
# Recorder overhead, before against after: two iocap binaries traced on the same loops,
# interleaved round by round so that both see the same machine. Each round: a one-byte read()
# loop untraced, under `BEFORE record -c` and `AFTER record -c`, then a 4 KiB pread() loop under
# each. Prints thread CPU ns per call (the loop of overhead.sh, whose C it reuses).
# Run as root from the workspace with two release builds:
#   BEFORE=/tmp/iocap-old AFTER=target/release/iocap sh crates/record/benches/ab.sh
# N (loop count) and R (rounds) override the defaults.
set -eu
N=${N:-2000000}
R=${R:-7}
: "${BEFORE:?the older iocap binary}" "${AFTER:=target/release/iocap}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# The loop program is the one overhead.sh builds (between its `cat > "$T/loop.c"` and `C` lines).
sed -n '/^cat > "\$T\/loop.c" <<.C.$/,/^C$/p' "$(dirname "$0")/overhead.sh" | sed '1d;$d' > "$T/loop.c"
cc -O2 -o "$T/loop" "$T/loop.c"
head -c 65536 /dev/urandom > "$T/data"
under() { "$1" record -w "$T/c.cap" -c "$2" 2>/dev/null | tail -1; }
i=0
while [ $i -lt "$R" ]; do
    i=$((i + 1))
    u=$("$T/loop" r "$N")
    rb=$(under "$BEFORE" "$T/loop r $N"); ra=$(under "$AFTER" "$T/loop r $N")
    pb=$(under "$BEFORE" "$T/loop p $N $T/data"); pa=$(under "$AFTER" "$T/loop p $N $T/data")
    echo "round $i  untraced $u  read 1 B: before $rb after $ra  pread 4 KiB: before $pb after $pa"
done
