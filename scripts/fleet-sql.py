#!/usr/bin/env python3
"""Run docs/fleet.sql on a dataset `iocap export --format parquet -o DIR/` made, on DuckDB or Spark.

    fleet-sql.py duckdb|spark DIR [SQL_FILE]

Makes `events` a view of DIR's files with Hive partitioning (host=, date=), runs each query of
the file as it is (each starts at a `-- query: NAME` line), and prints one JSON object: each
query's name and its rows (lists of values; numbers as numbers, dates and timestamps as text).
The tests run it with DuckDB; scripts/spark-check.sh runs it with Spark.
"""
import datetime
import decimal
import json
import os
import sys


def queries(path):
    """(name, sql) for each `-- query: NAME` of the file, its text up to the `;` that ends it."""
    out, name, lines = [], None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("-- query:"):
                name, lines = line.split(":", 1)[1].strip(), []
            elif name is not None:
                lines.append(line)
                if line.rstrip().endswith(";"):
                    out.append((name, "".join(lines).rstrip().rstrip(";")))
                    name = None
    return out


def plain(v):
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, (datetime.date, datetime.datetime)):
        return v.isoformat()
    return v


def main():
    engine, data = sys.argv[1], os.path.abspath(sys.argv[2])
    sql = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "docs", "fleet.sql")
    results = {}
    if engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute(
            "CREATE VIEW events AS SELECT * FROM read_parquet('%s/**/*.parquet', hive_partitioning = true)"
            % data.replace("'", "''")
        )
        for name, q in queries(sql):
            results[name] = [[plain(v) for v in row] for row in con.execute(q).fetchall()]
    elif engine == "spark":
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .appName("iocap-fleet")
            # Spark has no nanosecond timestamps: `ts` reads as a long (ns since the epoch).
            .config("spark.sql.legacy.parquet.nanosAsLong", "true")
            .config("spark.ui.enabled", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        spark.read.parquet(data).createOrReplaceTempView("events")
        for name, q in queries(sql):
            results[name] = [[plain(v) for v in row] for row in spark.sql(q).collect()]
        spark.stop()
    else:
        sys.exit("fleet-sql.py: the engine is duckdb or spark")
    json.dump(results, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
