#!/usr/bin/env bash
# docs/fleet.sql on Spark (local mode, from PyPI; Java 17) beside DuckDB, on a dataset made of the
# captures given: each exported with `iocap export --format parquet -o DIR/`. Prints Spark's
# answers, then whether both engines gave the same rows (numbers within 1e-9 relative), and how
# long Spark took. Too slow for every test run (a JVM starts); the tests run DuckDB only.
#   IOCAP=target/release/iocap scripts/spark-check.sh A.cap [B.cap ...]
# PYENV (default target/tmp/pyenv-spark) is the virtual environment made for pyspark and duckdb.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${IOCAP:=target/release/iocap}"
: "${PYENV:=${CARGO_TARGET_DIR:-target}/tmp/pyenv-spark}"
[ $# -gt 0 ] || { echo "usage: $0 CAPTURE..." >&2; exit 2; }
if ! "$PYENV/bin/python" -c "import pyspark, duckdb" 2>/dev/null; then
    python3 -m venv "$PYENV"
    "$PYENV/bin/pip" install -q pyspark duckdb
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for cap in "$@"; do
    "$IOCAP" export "$cap" --format parquet -o "$T/fleet/"
done
find "$T/fleet" -name '*.parquet' | sed "s|$T/||"
"$PYENV/bin/python" scripts/fleet-sql.py duckdb "$T/fleet" > "$T/duckdb.json"
start=$(date +%s.%N)
"$PYENV/bin/python" scripts/fleet-sql.py spark "$T/fleet" > "$T/spark.json" 2> "$T/spark.log" || {
    cat "$T/spark.log" >&2
    exit 1
}
end=$(date +%s.%N)
cat "$T/spark.json"
"$PYENV/bin/python" - "$T/duckdb.json" "$T/spark.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def same(x, y):
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
        return abs(x - y) <= 1e-9 * max(abs(x), abs(y), 1)
    return x == y
bad = [q for q in sorted(set(a) | set(b)) if not same(a.get(q), b.get(q))]
for q in bad:
    print(f"{q}: DuckDB and Spark differ\n  duckdb {a.get(q)}\n  spark  {b.get(q)}")
print("DuckDB and Spark agree on every query" if not bad else f"{len(bad)} queries differ")
sys.exit(1 if bad else 0)
PY
echo "spark: $(awk "BEGIN { printf \"%.1f\", $end - $start }")s (JVM start included)"
