//! `iocap export --format parquet` read by a real engine: captures of several hosts exported
//! into one Hive dataset, and DuckDB (from PyPI, in a virtual environment under the target
//! directory) running docs/fleet.sql as it is. Its counts are `iocap report`'s, its
//! percentiles within iocap's bucket error of them, its iostat figures `iocap iostat`'s.
//!
//! The environment is made once (`python3 -m venv` and `pip install duckdb`, which need the
//! network the first time; scripts/setup.sh makes it too). `IOCAP_NO_DUCKDB=1` skips these
//! tests, saying so, where there is no network.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use iocap_format::{Event, FdType, Meta};
use iocap_testkit::{add_file, add_proc, block, Rng, VDA};
use serde_json::Value;

use crate::util::{iocap, machine_shared, run};

/// The Python of the virtual environment with DuckDB, made on first use; `None` when
/// `IOCAP_NO_DUCKDB` is set.
fn duckdb_python() -> Option<PathBuf> {
    static PYTHON: OnceLock<Option<PathBuf>> = OnceLock::new();
    PYTHON
        .get_or_init(|| {
            if std::env::var_os("IOCAP_NO_DUCKDB").is_some() {
                eprintln!("IOCAP_NO_DUCKDB is set: the DuckDB tests are skipped");
                return None;
            }
            let env = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pyenv");
            let python = env.join("bin/python");
            let has_duckdb = |p: &Path| {
                Command::new(p)
                    .args(["-c", "import duckdb"])
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !has_duckdb(&python) {
                let made = Command::new("python3").arg("-m").arg("venv").arg(&env).status();
                assert!(
                    made.is_ok_and(|s| s.success()),
                    "python3 -m venv {} failed: install python3-venv (scripts/setup.sh does)",
                    env.display()
                );
                let pip = Command::new(env.join("bin/pip"))
                    .args(["install", "-q", "duckdb"])
                    .status();
                assert!(
                    pip.is_ok_and(|s| s.success()),
                    "pip install duckdb failed (no network? IOCAP_NO_DUCKDB=1 skips these tests)"
                );
            }
            Some(python)
        })
        .clone()
}

/// The repository's root, where docs/ and scripts/ are.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Run docs/fleet.sql with DuckDB on the dataset at `dir`: each query's rows.
fn fleet_sql(python: &Path, dir: &Path) -> BTreeMap<String, Vec<Vec<Value>>> {
    let out = Command::new(python)
        .arg(root().join("scripts/fleet-sql.py"))
        .arg("duckdb")
        .arg(dir)
        .arg(root().join("docs/fleet.sql"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One simulated host's capture at `dir/NAME.cap`: its own mix of syscalls (reads, writes,
/// fsyncs, failed opens) on a few files, with latencies over four decades, and block reads and
/// writes with queue times on `vda`, over about two seconds from `start` (ns since boot).
fn host_capture(dir: &Path, name: &str, host: &str, seed: u64, start: u64) -> PathBuf {
    let path = dir.join(format!("{name}.cap"));
    let meta = Meta {
        host: host.into(),
        boot_to_wall_ns: 1_750_000_000_000_000_000 + seed as i64 * 86_400_000_000_000,
        ..iocap_testkit::meta(start)
    };
    let mut w = iocap_testkit::create(&path, &meta, 1_000, 1);
    let mut rng = Rng::new(seed);
    let procs = [
        add_proc(&mut w, 100, 1, b"postgres"),
        add_proc(&mut w, 200, 1, b"nginx"),
    ];
    let files: Vec<u32> = (0..4)
        .map(|k| {
            let name = format!("/data/{name}/file-{k}.db");
            add_file(&mut w, 100, 3 + k, FdType::File, name.as_bytes(), VDA)
        })
        .collect();
    let mut ts = start;
    for _ in 0..20_000 + seed * 1_000 {
        ts += rng.below(200_000);
        // Log-uniform over 1 us .. 10 ms.
        let latency = (1_000.0 * 10f64.powf(rng.below(4_000) as f64 / 1_000.0)) as u64 + rng.below(1_000);
        let k = rng.below(100);
        let e = if k < 8 {
            Event {
                op: if k < 4 { 0 } else { 1 },
                queue: rng.below(100_000),
                sector: rng.below(1 << 30),
                ..block(ts, latency, 100, procs[0], VDA, 4096 << rng.below(4))
            }
        } else {
            let (nr, ret) = match k {
                8..=50 => (0, 4096),
                51..=85 => (1, 4096),
                86..=92 => (74, 0),
                _ => (257, -2),
            };
            let p = rng.below(2) as usize;
            Event {
                proc: procs[p],
                fd: 3,
                file: *rng.pick(&files),
                bytes: ret.max(0) as u64,
                ..Event::syscall(ts, latency, 100 * (p as u32 + 1), 100 * (p as u32 + 1), nr, ret)
            }
        };
        w.push(&e).unwrap();
    }
    w.finish(ts + 1).unwrap();
    path
}

/// `iocap export CAPTURES... --format parquet -o OUT`, which must succeed.
fn export_parquet(captures: &[&Path], out: &Path) {
    let mut args = vec!["export"];
    args.extend(captures.iter().map(|c| c.to_str().unwrap()));
    args.extend(["--format", "parquet", "-o", out.to_str().unwrap()]);
    let (code, _, err) = run(&args);
    assert_eq!(code, 0, "{args:?}: {err}");
}

fn json_of(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn a_fleet_dataset_answers_the_documented_queries_as_iocap_does() {
    let _shared = machine_shared();
    let Some(python) = duckdb_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fleet/");
    let hosts = [("db", "db-1.example.com"), ("web", "web-2"), ("odd", "odd/../h\nost%")];
    let mut captures = Vec::new();
    for (k, (name, host)) in hosts.iter().enumerate() {
        let cap = host_capture(dir.path(), name, host, k as u64 + 1, 5_000_000_000 * (k as u64 + 1));
        export_parquet(&[&cap], &data);
        captures.push(cap);
    }
    // One directory per host, each holding its capture's file, 0600; nothing escaped the
    // dataset's directory.
    let mut parts: Vec<String> = walk(&data)
        .iter()
        .map(|p| p.strip_prefix(&data).unwrap().display().to_string())
        .collect();
    parts.sort();
    assert_eq!(parts.len(), 3, "{parts:?}");
    assert!(
        parts[0].starts_with("host=db-1.example.com/date=2025-06-16/part-"),
        "{parts:?}"
    );
    assert!(
        parts[1].starts_with("host=odd%2F..%2Fh%5Cnost%25/date=2025-06-18/part-"),
        "{parts:?}"
    );
    assert!(parts[2].starts_with("host=web-2/date=2025-06-17/part-"), "{parts:?}");
    for p in walk(&data) {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600,
            "{p:?}"
        );
    }
    assert_eq!(
        walk(dir.path())
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
            .count(),
        3
    );

    let results = fleet_sql(&python, &data);
    for (cap, (_, host)) in captures.iter().zip(hosts) {
        agrees_with_iocap(&results, cap, host);
    }
    // Five types on each host, four of them syscalls, one disk.
    assert_eq!(results["events_by_type"].len(), 15);
    assert_eq!(results["latency_by_host_and_syscall"].len(), 12);
    assert_eq!(results["iostat"].len(), 3);
    // The slowest files, fleet-wide: each host's files are its own, and the worst of them
    // is first.
    let slow = &results["slowest_files"];
    assert_eq!(slow.len(), 12, "{slow:?}");
    let worst: Vec<u64> = slow.iter().map(|r| r[3].as_u64().unwrap()).collect();
    assert!(worst.windows(2).all(|w| w[0] >= w[1]), "{worst:?}");
}

#[test]
fn exporting_a_capture_again_replaces_its_file_and_a_plain_file_stays_a_file() {
    let _shared = machine_shared();
    let Some(python) = duckdb_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = host_capture(dir.path(), "db", "db-1", 1, 1_000_000_000);
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // An existing directory is a dataset, with or without the trailing slash.
    for _ in 0..2 {
        export_parquet(&[&cap], &data);
    }
    assert_eq!(walk(&data).len(), 1, "{:?}", walk(&data));
    let results = fleet_sql(&python, &data);
    let total: u64 = results["events_by_type"].iter().map(|r| r[2].as_u64().unwrap()).sum();
    assert_eq!(total, 21_000);

    // `-o FILE` is one file; `-o -` the same bytes on standard output.
    let file = dir.path().join("one.parquet");
    export_parquet(&[&cap], &file);
    let piped = iocap()
        .args(["export", cap.to_str().unwrap(), "--format", "parquet", "-o", "-"])
        .output()
        .unwrap();
    assert!(piped.status.success());
    assert_eq!(piped.stdout, std::fs::read(&file).unwrap());
    assert_eq!(&piped.stdout[..4], b"PAR1");
}

/// What DuckDB answered of `host`'s capture `cap` is what iocap says of it: events per type
/// exactly, each syscall's p50, p99 and max within iocap's bucket error, every event in the
/// heatmap, and each disk's iostat figures.
fn agrees_with_iocap(results: &BTreeMap<String, Vec<Vec<Value>>>, cap: &Path, host: &str) {
    // The host column, as the partition decodes, is the host as iocap shows it (escaped).
    let shown = iocap_format::escape::escape(host.as_bytes());
    let rows = |query: &str| -> Vec<&Vec<Value>> { results[query].iter().filter(|r| r[0] == shown.as_str()).collect() };
    let cap = cap.to_str().unwrap();
    let report = json_of(&["report", cap, "--json", "--by", "evt.type", "--top", "100000"]);
    let by_type: BTreeMap<String, u64> = report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap().to_string(), g["count"].as_u64().unwrap()))
        .collect();
    let sql: BTreeMap<String, u64> = rows("events_by_type")
        .iter()
        .map(|r| (r[1].as_str().unwrap().to_string(), r[2].as_u64().unwrap()))
        .collect();
    assert_eq!(sql, by_type, "{host}: events per type");
    assert!(!by_type.is_empty());

    // iocap's percentile is its bucket's upper bound: never below the exact value,
    // at most 1/16 of an octave (6.25 %) above.
    let syscalls = rows("latency_by_host_and_syscall");
    assert!(!syscalls.is_empty(), "{host}");
    for r in syscalls {
        let ty = r[1].as_str().unwrap();
        let report = json_of(&["report", cap, &format!("evt.type={ty}"), "--json"]);
        for (col, key) in [(3, "p50"), (4, "p99"), (5, "max")] {
            let exact = r[col].as_u64().unwrap() as f64;
            let iocap = report["latency_ns"][key]
                .as_u64()
                .unwrap_or_else(|| panic!("{key} in {report}")) as f64;
            assert!(
                iocap >= exact && iocap <= exact * 1.0625,
                "{host} {ty} {key}: iocap {iocap}, exact {exact}"
            );
        }
    }

    let heat: u64 = rows("latency_heatmap").iter().map(|r| r[3].as_u64().unwrap()).sum();
    assert_eq!(
        heat,
        report["matched"].as_u64().unwrap(),
        "{host}: the heatmap holds every event"
    );

    let iostat = json_of(&["iostat", cap, "--json"]);
    let disks = iostat["devices"].as_array().unwrap();
    let sql = rows("iostat");
    assert_eq!(sql.len(), disks.len(), "{host}: {sql:?}");
    for row in sql {
        let disk = disks
            .iter()
            .find(|d| d["device"] == row[2])
            .unwrap_or_else(|| panic!("{row:?}"));
        for (col, key) in [(3, "r_per_s"), (4, "w_per_s"), (5, "r_await_ms"), (6, "w_await_ms")] {
            // SQL's mean of no reads is null, iocap's 0.
            let (a, b) = (row[col].as_f64().unwrap_or(0.0), disk[key].as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                "{host} {key}: SQL {a}, iocap {b}"
            );
        }
    }
}

/// Real recordings of two simulated hosts (`record --host`), each of a command writing and
/// syncing a file, exported into one dataset: DuckDB agrees with iocap on each.
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
#[test]
fn recordings_of_two_hosts_make_one_dataset() {
    let Some(_running) = crate::record::recording() else {
        return;
    };
    let Some(python) = duckdb_python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fleet/");
    let hosts = ["alpha", "beta"];
    let mut captures = Vec::new();
    for (k, host) in hosts.iter().enumerate() {
        let cap = dir.path().join(format!("{host}.cap"));
        let target = dir.path().join(format!("{host}.dat"));
        let cmd = format!(
            "dd if=/dev/zero of={} bs=4k count={} conv=fsync status=none; cat {} > /dev/null",
            target.display(),
            100 * (k + 1),
            target.display()
        );
        let out = iocap()
            .args(["record", "--host", host, "-w", cap.to_str().unwrap(), "-c", &cmd])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(json_of(&["info", "--json", cap.to_str().unwrap()])["host"], *host);
        export_parquet(&[&cap], &data);
        captures.push(cap);
    }
    let results = fleet_sql(&python, &data);
    for (cap, host) in captures.iter().zip(hosts) {
        agrees_with_iocap(&results, cap, host);
    }
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Several captures in one command (files, then a directory of them) make the dataset that
/// exporting them one by one makes, byte for byte; several without a dataset directory, and
/// `--ring` outside Parquet, are usage errors. (Needs no DuckDB.)
#[test]
fn several_captures_go_into_one_dataset_in_one_command() {
    let dir = tempfile::tempdir().unwrap();
    let caps_dir = dir.path().join("caps");
    std::fs::create_dir(&caps_dir).unwrap();
    let caps: Vec<PathBuf> = [("db", "db-1"), ("web", "web-2"), ("cache", "cache-3")]
        .iter()
        .enumerate()
        .map(|(k, (name, host))| host_capture(&caps_dir, name, host, k as u64 + 1, 1_000_000_000))
        .collect();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let files = |data: &Path| -> BTreeMap<String, Vec<u8>> {
        walk(data)
            .into_iter()
            .map(|p| {
                (
                    p.strip_prefix(data).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect()
    };
    let one_by_one = dir.path().join("one/");
    for cap in &caps {
        export_parquet(&[cap], &one_by_one);
    }
    let want = files(&one_by_one);
    assert_eq!(want.len(), 3);
    let together = dir.path().join("together/");
    export_parquet(&caps.iter().map(PathBuf::as_path).collect::<Vec<_>>(), &together);
    assert_eq!(files(&together), want, "one command, three files");
    let from_dir = dir.path().join("from-dir/");
    export_parquet(&[&caps_dir], &from_dir);
    assert_eq!(files(&from_dir), want, "a directory of captures");
    // Several into one file cannot be; a ring is read only into a dataset.
    let file = dir.path().join("all.parquet");
    let (code, _, err) = run(&[
        "export",
        &s(&caps[0]),
        &s(&caps[1]),
        "--format",
        "parquet",
        "-o",
        &s(&file),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-o DIR/") && !file.exists(), "{err}");
    let (code, _, err) = run(&["export", &s(&caps[0]), "--ring", "--format", "csv", "-o", "-"]);
    assert_eq!(code, 2, "{err}");
}
