#!/bin/sh
# What `iocap compare` costs against two `iocap report`s of the same captures, which is what it
# must not exceed: each side is one report scan. Interleaved round by round so both see the same
# machine (and the same page cache); prints wall seconds per round and the medians.
# Run from the workspace with a release build:
#   IOCAP=target/release/iocap sh crates/iocap/benches/compare.sh A.cap B.cap [FILTER words]
# R (rounds, default 5) and BY (the --by field, default proc.name; empty for none) override.
set -eu
: "${IOCAP:=target/release/iocap}"
R=${R:-5}
BY=${BY-proc.name}
A=${1:?capture A}
B=${2:?capture B}
shift 2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
by() { if [ -n "$BY" ]; then echo "--by $BY"; fi; }
now() { date +%s%N; }
secs() { awk "BEGIN { printf \"%.3f\", ($2 - $1) / 1e9 }"; }
# One untimed pass of each so that both start from a warm page cache.
"$IOCAP" report "$A" "$@" $(by) > /dev/null
"$IOCAP" report "$B" "$@" $(by) > /dev/null
i=0
while [ $i -lt "$R" ]; do
    i=$((i + 1))
    t0=$(now)
    "$IOCAP" compare "$A" "$B" "$@" $(by) > /dev/null
    t1=$(now)
    "$IOCAP" report "$A" "$@" $(by) > /dev/null
    "$IOCAP" report "$B" "$@" $(by) > /dev/null
    t2=$(now)
    c=$(secs "$t0" "$t1"); r=$(secs "$t1" "$t2")
    echo "$c" >> "$T/compare"; echo "$r" >> "$T/reports"
    echo "round $i  compare ${c}s  two reports ${r}s"
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "median  compare $(median "$T/compare")s  two reports $(median "$T/reports")s"
