//! Several captures read as one (#17): `report`, `events`, `iostat`, `spectrogram` and `info`
//! of files, directories, patterns and a rotation's ring; merged exactly, told apart by `host`
//! and `capture.id`, and laid on one wall-clock timeline.

use std::path::{Path, PathBuf};

use iocap_format::{Event, Meta};
use iocap_testkit::{add_proc, block, create, meta, Rng, VDA};
use serde_json::Value;

use crate::util::run;

/// Wall clock of the test host at its boot (`iocap_testkit::meta`).
const WALL: i64 = 1_700_000_000_000_000_000;

/// A capture at `path` with `meta` holding `events` (each given process table entry 0, pid 10),
/// finished at the last event's end.
fn write(path: &Path, meta: &Meta, events: &[Event]) {
    let mut w = create(path, meta, 64, 1);
    let proc = add_proc(&mut w, 10, 1, b"app");
    let mut end = meta.start_ts;
    for e in events {
        w.push(&Event { proc, ..e.clone() }).unwrap();
        end = end.max(e.end());
    }
    w.finish(end + 1).unwrap();
}

/// `n` reads, writes and fsyncs (syscalls 0, 1, 74) of pid 10 from `from` ns on, with varied
/// latencies and sizes.
fn calls(rng: &mut Rng, from: u64, n: u64) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let nr = *rng.pick(&[0u32, 1, 74]);
            let latency = 1_000 + rng.below(5_000_000);
            Event {
                bytes: rng.below(65_536),
                ..Event::syscall(from + i * 10_000_000, latency, 10, 10, nr, 0)
            }
        })
        .collect()
}

/// A header of `host` whose boot clock reads `boot_offset` ns more than the test host's at
/// the same instant, its recording started at `start` ns of its own boot clock.
fn host_meta(host: &str, boot_offset: i64, start: u64) -> Meta {
    Meta {
        host: host.into(),
        boot_to_wall_ns: WALL - boot_offset,
        ..meta(start)
    }
}

fn json(args: &[&str]) -> Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "iocap {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn two_captures_report_what_one_holding_both_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::new(17);
    let (first, second) = (calls(&mut rng, 1_000_000_000, 300), calls(&mut rng, 5_000_000_000, 500));
    let m = meta(1_000_000_000);
    let (a, b, both) = (
        dir.path().join("a.cap"),
        dir.path().join("b.cap"),
        dir.path().join("both.cap"),
    );
    write(&a, &m, &first);
    write(&b, &m, &second);
    write(&both, &m, &[first, second].concat());
    for extra in [&[][..], &["--fine"][..], &["evt.type=read"][..]] {
        let mut two = vec!["report", s(&a), s(&b)];
        two.extend(extra);
        two.extend(["--by", "evt.type", "--json"]);
        let mut one = vec!["report", s(&both)];
        one.extend(extra);
        one.extend(["--by", "evt.type", "--json"]);
        let (two, one) = (json(&two), json(&one));
        for key in [
            "matched",
            "total",
            "bytes",
            "latency_ns",
            "histogram",
            "groups",
            "group_count",
        ] {
            assert_eq!(two[key], one[key], "{key} with {extra:?}");
        }
        assert_eq!(two["captures"], 2);
        assert!(two["matched"].as_u64().unwrap() > 100, "{two}");
    }
}

/// Three captures of 3, 5 and 7 calls, from hosts db1, db2 and db3.
fn three_hosts(dir: &Path) -> Vec<PathBuf> {
    let mut rng = Rng::new(3);
    [("db1", 3), ("db2", 5), ("db3", 7)]
        .iter()
        .map(|&(host, n)| {
            let path = dir.join(format!("{host}.cap"));
            write(
                &path,
                &host_meta(host, 0, 1_000_000_000),
                &calls(&mut rng, 1_000_000_000, n),
            );
            path
        })
        .collect()
}

#[test]
fn captures_of_three_hosts_are_grouped_and_filtered_by_host() {
    let dir = tempfile::tempdir().unwrap();
    let caps = three_hosts(dir.path());
    let mut args = vec!["report"];
    args.extend(caps.iter().map(|p| s(p)));
    let by: Vec<&str> = args.iter().copied().chain(["--by", "host", "--json"]).collect();
    let v = json(&by);
    let groups: Vec<(String, u64)> = v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap().to_owned(), g["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        groups,
        [("db3".to_owned(), 7), ("db2".to_owned(), 5), ("db1".to_owned(), 3)]
    );
    let db2: Vec<&str> = args.iter().copied().chain(["host=db2", "--json"]).collect();
    let v = json(&db2);
    assert_eq!((v["matched"].as_u64(), v["total"].as_u64()), (Some(5), Some(15)));
    // capture.id tells the captures apart too, one group each.
    let ids: Vec<&str> = args.iter().copied().chain(["--by", "capture.id", "--json"]).collect();
    assert_eq!(json(&ids)["group_count"], 3);
    let id = json(&["events", s(&caps[0]), "--json", "--limit", "1"])["capture.id"].clone();
    let one: Vec<String> = args
        .iter()
        .map(|a| a.to_string())
        .chain([format!("capture.id={}", id.as_str().unwrap()), "--json".into()])
        .collect();
    let one: Vec<&str> = one.iter().map(String::as_str).collect();
    assert_eq!(json(&one)["matched"], 3);
}

/// Two hosts whose boot clocks differ by 5 s, recordings overlapping in wall time: db1 starts
/// at wall +1 s with calls at +1.2 s and +2.2 s; db2 (boot clock 5 s ahead) starts at +1.5 s
/// with calls at +1.7 s and +2.6 s.
fn two_clocks(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("db1.cap"), dir.join("db2.cap"));
    let call = |ts: u64, nr: u32| Event::syscall(ts, 1_000, 10, 10, nr, 0);
    write(
        &a,
        &host_meta("db1", 0, 1_000_000_000),
        &[call(1_200_000_000, 0), call(2_200_000_000, 0)],
    );
    write(
        &b,
        &host_meta("db2", 5_000_000_000, 6_500_000_000),
        &[call(6_700_000_000, 1), call(7_600_000_000, 1)],
    );
    (a, b)
}

#[test]
fn captures_of_two_clocks_are_laid_on_one_by_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_clocks(dir.path());
    let (code, out, err) = run(&["events", s(&b), s(&a), "--time", "start"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<(String, String)> = out
        .lines()
        .skip(1)
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[0].to_owned(), w[1].to_owned())
        })
        .collect();
    let want = [
        ("0.200000000", "db1"),
        ("0.700000000", "db2"),
        ("1.200000000", "db1"),
        ("1.600000000", "db2"),
    ];
    let want: Vec<(String, String)> = want.iter().map(|(t, h)| (t.to_string(), h.to_string())).collect();
    assert_eq!(rows, want, "{out}");
    assert!(out.lines().next().unwrap().contains("HOST"), "{out}");
    // evt.time means the same instant in both: from the earliest start.
    let (code, out, err) = run(&["events", s(&a), s(&b), "evt.time>=1s", "--json"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let got: Vec<(&Value, &Value)> = lines.iter().map(|v| (&v["evt.time"], &v["host"])).collect();
    assert_eq!(
        got,
        [
            (&1_200_000_000.into(), &"db1".into()),
            (&1_600_000_000.into(), &"db2".into())
        ]
    );
    assert_eq!(json(&["report", s(&a), s(&b), "evt.time>=1s", "--json"])["matched"], 2);
    // One capture alone keeps its own start.
    let (_, alone, _) = run(&["events", s(&b)]);
    assert!(
        alone.lines().nth(1).unwrap().trim_start().starts_with("0.200001000"),
        "{alone}"
    );
    // The spectrogram's rows hold each event at its wall time: one cell in each of rows 0-3.
    let (code, out, err) = run(&["spectrogram", s(&a), s(&b), "--interval", "500ms", "--color", "never"]);
    assert_eq!(code, 0, "{err}");
    let cells: Vec<(String, usize)> = out
        .lines()
        .skip(1)
        .filter(|l| l.contains("s |"))
        .map(|l| {
            let (time, cells) = l.split_once(" |").unwrap();
            (
                time.trim().to_owned(),
                cells.chars().filter(|c| !matches!(c, ' ' | '|')).count(),
            )
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("0.000s".to_owned(), 1),
            ("0.500s".to_owned(), 1),
            ("1.000s".to_owned(), 1),
            ("1.500s".to_owned(), 1)
        ],
        "{out}"
    );
}

#[test]
fn iostat_of_two_hosts_counts_each_hosts_disk_apart() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("db1.cap"), dir.path().join("db2.cap"));
    write(
        &a,
        &host_meta("db1", 0, 1_000_000_000),
        &[block(1_100_000_000, 1_000_000, 10, 0, VDA, 4096)],
    );
    write(
        &b,
        &host_meta("db2", 5_000_000_000, 6_000_000_000),
        &[
            block(6_100_000_000, 1_000_000, 10, 0, VDA, 4096),
            block(7_100_000_000, 1_000_000, 10, 0, VDA, 8192),
        ],
    );
    let v = json(&["iostat", s(&a), s(&b), "--json"]);
    let devices: Vec<(String, u64)> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["device"].as_str().unwrap().to_owned(), d["reads"].as_u64().unwrap()))
        .collect();
    assert_eq!(devices, [("db1/vda".to_owned(), 1), ("db2/vda".to_owned(), 2)], "{v}");
    // Both hosts' first requests are 0.1 s after their (same wall) starts: interval 0; db2's
    // second in interval 1.
    let first = &v["intervals"][0]["devices"];
    assert_eq!(first.as_array().unwrap().len(), 2, "{v}");
    assert_eq!(v["intervals"][1]["devices"][1]["reads"], 1, "{v}");
}

#[test]
fn a_directory_and_a_quoted_pattern_name_captures() {
    let dir = tempfile::tempdir().unwrap();
    let caps = dir.path().join("caps");
    std::fs::create_dir(&caps).unwrap();
    let mut rng = Rng::new(5);
    write(
        &caps.join("x.cap"),
        &meta(1_000_000_000),
        &calls(&mut rng, 1_000_000_000, 4),
    );
    write(
        &caps.join("x.cap1"),
        &meta(2_000_000_000),
        &calls(&mut rng, 2_000_000_000, 6),
    );
    write(
        &caps.join("y.cap"),
        &meta(1_000_000_000),
        &calls(&mut rng, 1_000_000_000, 10),
    );
    std::fs::write(caps.join("notes.txt"), "not a capture").unwrap();
    assert_eq!(json(&["report", s(&caps), "--json"])["total"], 20);
    let pattern = format!("{}/x.cap*", caps.display());
    assert_eq!(json(&["report", &pattern, "--json"])["total"], 10);
    let pattern = format!("{}/*.cap", caps.display());
    assert_eq!(json(&["report", &pattern, "evt.type=read", "--json"])["captures"], 2);
    // After a first capture too.
    let y = caps.join("y.cap");
    let x = format!("{}/x.cap?", caps.display());
    assert_eq!(json(&["report", s(&y), &x, "--json"])["total"], 16);
}

/// A rotation of files `names` in `dir`: file `i` starts at `i + 1` s, holds `3 + i` calls and
/// names the next one in its header.
fn write_ring(dir: &Path, names: &[&str]) {
    let mut rng = Rng::new(9);
    for (i, name) in names.iter().enumerate() {
        let start = 1_000_000_000 * (i as u64 + 1);
        let m = Meta {
            next_file: names.get(i + 1).map(|n| n.to_string()),
            ..meta(start)
        };
        write(&dir.join(name), &m, &calls(&mut rng, start, 3 + i as u64));
    }
}

#[test]
fn a_ring_is_read_from_its_first_file_with_ring() {
    let dir = tempfile::tempdir().unwrap();
    write_ring(dir.path(), &["ring.cap", "ring.cap1", "ring.cap2"]);
    let first = dir.path().join("ring.cap");
    assert_eq!(
        json(&["report", s(&first), "--json"])["total"],
        3,
        "one file by default"
    );
    let v = json(&["report", s(&first), "--ring", "--json"]);
    assert_eq!((v["total"].as_u64(), v["captures"].as_u64()), (Some(12), Some(3)));
    // The ring's times are one timeline: the last file's events from 2 s on.
    let v = json(&["report", s(&first), "--ring", "evt.time>=2s", "--json"]);
    assert_eq!(v["matched"], 5);
    let (code, out, err) = run(&["info", s(&first), "--ring"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("total        3 captures from testhost: 12 events"),
        "{out}"
    );
}

/// `--ring` past a file gone from the middle of a rotation: it says so on stderr and goes on
/// with the next file of the rotation there; an unreadable one fails, naming it.
#[test]
fn a_ring_missing_a_file_says_so_and_reads_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    write_ring(dir.path(), &["ring.cap", "ring.cap1", "ring.cap2", "ring.cap3"]);
    std::fs::remove_file(dir.path().join("ring.cap1")).unwrap();
    let first = dir.path().join("ring.cap");
    let (code, out, err) = run(&["report", s(&first), "--ring", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["total"].as_u64(), v["captures"].as_u64()),
        (Some(3 + 5 + 6), Some(3))
    );
    assert!(
        err.contains("iocap: ring.cap1 is missing (after ring.cap): going on with ring.cap2"),
        "{err}"
    );
    std::fs::write(dir.path().join("ring.cap1"), b"not a capture").unwrap();
    let (code, _, err) = run(&["report", s(&first), "--ring"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("ring.cap1") && err.contains("not an iocap capture"),
        "{err}"
    );
}

#[test]
fn info_of_several_has_a_block_each_and_totals() {
    let dir = tempfile::tempdir().unwrap();
    let caps = three_hosts(dir.path());
    let mut args = vec!["info"];
    args.extend(caps.iter().map(|p| s(p)));
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.matches("capture      ").count(), 3, "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("events")).count(), 3, "{out}");
    assert!(
        out.lines()
            .last()
            .unwrap()
            .starts_with("total        3 captures from db1, db2, db3: 15 events (15 syscall, 0 block)"),
        "{out}"
    );
    args.push("--json");
    let v = json(&args);
    assert_eq!(v["captures"].as_array().unwrap().len(), 3);
    assert_eq!(v["captures"][1]["host"], "db2");
    assert_eq!(v["captures"][1]["events"], 5);
    assert_eq!(v["total"]["events"], 15);
    assert_eq!(v["total"]["hosts"], serde_json::json!(["db1", "db2", "db3"]));
    // One capture: as ever, no totals.
    assert!(json(&["info", s(&caps[0]), "--json"]).get("total").is_none());
}

#[test]
fn several_captures_refuse_what_they_cannot_be() {
    let dir = tempfile::tempdir().unwrap();
    let caps = three_hosts(dir.path());
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let none = format!("{}/*.nothing", dir.path().display());
    let cases: [(Vec<&str>, &str); 5] = [
        (vec!["report", &none], "no capture matches"),
        (vec!["report", s(&caps[0]), &none], "no capture matches"),
        (vec!["report", s(&empty)], "no capture in the directory"),
        (vec!["report", "-", s(&caps[0])], "cannot be read with others"),
        (vec!["events", s(&caps[0]), "-"], "cannot be read with others"),
    ];
    for (args, says) in cases {
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let (code, _, err) = run(&["events", "-f", s(&caps[0]), s(&caps[1])]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("-f follows one capture"), "{err}");
}
