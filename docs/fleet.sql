-- Questions a fleet's dataset answers: `iocap export CAPTURE --format parquet -o DIR/` for each
-- capture, then these queries over a table or view named `events` holding DIR's files
-- (PARQUET.md says how to make one in DuckDB and in Spark). They run unchanged on DuckDB and
-- Spark SQL (the tests run this file as it is, on both). Latencies are ns; each query is
-- ordered to the last column, so both engines print the same rows.

-- query: events_by_type
-- Events per host and type: what `iocap report --by evt.type` counts, per host.
SELECT host, evt_type, COUNT(*) AS events
FROM events
GROUP BY host, evt_type
ORDER BY host, evt_type;

-- query: latency_by_host_and_syscall
-- p50 and p99 of each syscall's latency per host, and the worst: the value of the event at
-- rank ceil(q * n), as `iocap report` ranks them (iocap reports the upper bound of that event's
-- 1/16-octave bucket: never below these, at most 6.25 % above).
SELECT host, evt_type, COUNT(*) AS calls,
       CAST(percentile_disc(0.5) WITHIN GROUP (ORDER BY latency) AS BIGINT) AS p50_ns,
       CAST(percentile_disc(0.99) WITHIN GROUP (ORDER BY latency) AS BIGINT) AS p99_ns,
       MAX(latency) AS max_ns
FROM events
WHERE evt_class = 'syscall'
GROUP BY host, evt_type
ORDER BY host, evt_type;

-- query: latency_heatmap
-- A latency heatmap per host: events per second of the capture (from its start) and power of
-- two of the latency (bucket b holds latencies in [2^b, 2^(b+1)) ns; 0 ns is in bucket 0).
SELECT host,
       CAST(FLOOR(evt_time / 1000000000) AS BIGINT) AS second,
       CAST(FLOOR(LOG2(GREATEST(latency, 1))) AS BIGINT) AS log2_ns,
       COUNT(*) AS events
FROM events
GROUP BY host, CAST(FLOOR(evt_time / 1000000000) AS BIGINT), CAST(FLOOR(LOG2(GREATEST(latency, 1))) AS BIGINT)
ORDER BY host, second, log2_ns;

-- query: slowest_files
-- The files whose calls waited longest, fleet-wide: the worst call, the total and the count.
SELECT host, fd_name, COUNT(*) AS calls, MAX(latency) AS max_ns, SUM(latency) AS total_ns
FROM events
WHERE fd_type = 'file' AND evt_class <> 'block'
GROUP BY host, fd_name
ORDER BY max_ns DESC, host, fd_name
LIMIT 20;

-- query: iostat
-- iostat -x per host and disk over each capture's span, as `iocap iostat` counts its totals:
-- reads and writes completed per second, their mean wait (insert to completion, ms), and a
-- %util that adds up device times (it can pass 100 with requests in parallel, which iocap's
-- own %util counts once).
SELECT host, capture_id, blk_dev,
       SUM(CASE WHEN blk_op = 'read' THEN 1 ELSE 0 END) / (MAX(capture_ns) / 1e9) AS r_s,
       SUM(CASE WHEN blk_op = 'write' THEN 1 ELSE 0 END) / (MAX(capture_ns) / 1e9) AS w_s,
       AVG(CASE WHEN blk_op = 'read' THEN blk_total END) / 1e6 AS r_await_ms,
       AVG(CASE WHEN blk_op = 'write' THEN blk_total END) / 1e6 AS w_await_ms,
       100 * SUM(blk_latency) / MAX(capture_ns) AS util_sum_pct
FROM events
WHERE evt_class = 'block'
GROUP BY host, capture_id, blk_dev
ORDER BY host, capture_id, blk_dev;
