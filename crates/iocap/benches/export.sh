#!/bin/sh
# How fast `iocap export` writes each format, and what Parquet costs in bytes beside iocap's own
# file. For each capture: events per second of user CPU (the export runs on one core) and of wall
# time, the median of R rounds, for CSV and JSON lines to /dev/null and Parquet to a file; then
# bytes per event of the Parquet file and of the capture.
# Run from the workspace with a release build:
#   IOCAP=target/release/iocap sh crates/iocap/benches/export.sh A.cap [B.cap ...]
# R (rounds, default 3) overrides; FORMATS (default "csv jsonl parquet") picks formats.
set -eu
: "${IOCAP:=target/release/iocap}"
R=${R:-3}
FORMATS=${FORMATS:-csv jsonl parquet}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
for cap in "$@"; do
    events=$("$IOCAP" info --json "$cap" | sed -n 's/^ *"events": \([0-9]*\).*/\1/p')
    bytes=$(wc -c < "$cap")
    echo "$cap: $events events, $(awk "BEGIN { printf \"%.2f\", $bytes / $events }") bytes/event"
    for f in $FORMATS; do
        out=/dev/null
        [ "$f" = parquet ] && out="$T/out.parquet"
        rm -f "$T/user" "$T/wall"
        i=0
        while [ $i -lt "$R" ]; do
            i=$((i + 1))
            /usr/bin/time -f "%U %e" -o "$T/time" "$IOCAP" export "$cap" --format "$f" -o "$out"
            read -r u w < "$T/time"
            echo "$u" >> "$T/user"; echo "$w" >> "$T/wall"
        done
        u=$(median "$T/user"); w=$(median "$T/wall")
        line=$(awk "BEGIN { printf \"%-8s %6.2fs user %6.2fs wall  %5.2f M events/s (user)  %5.2f M/s (wall)\", \"$f\", $u, $w, $events / ($u > 0 ? $u : 0.01) / 1e6, $events / ($w > 0 ? $w : 0.01) / 1e6 }")
        if [ "$f" = parquet ]; then
            pb=$(wc -c < "$out")
            line="$line  $(awk "BEGIN { printf \"%.2f bytes/event\", $pb / $events }")"
        fi
        echo "  $line"
    done
done
