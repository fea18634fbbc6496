//! Drops placed by process (#46): `iocap info` lists whose events were dropped, `iocap report`
//! with a filter naming a process says how many of its events were, in text and JSON; a
//! capture whose recorder did not place its drops says "not recorded", not 0.

use std::path::{Path, PathBuf};

use iocap_format::{DropStats, Event, ProcDropStats, ProcDrops};
use iocap_testkit::{add_proc, create, meta};

use crate::util::run;

const S: u64 = 1_000_000_000;

/// A recording of two seconds: postgres (pid 123) and dd (pid 77) each make 10 calls every
/// 100 ms, idle (pid 99) one; 445,287 events were dropped, 445,185 of dd's and 102 of
/// postgres's (the traced writer), read at 1.5 s and 2.5 s. `placed`: whether its recorder
/// placed them (1.22), or wrote only the stats frames, as older ones did.
fn capture(dir: &Path, name: &str, placed: bool) -> PathBuf {
    let path = dir.join(name);
    let mut w = create(&path, &meta(S), 64, 1);
    let pg = add_proc(&mut w, 123, 1, b"postgres");
    let dd = add_proc(&mut w, 77, 1, b"dd");
    let idle = add_proc(&mut w, 99, 1, b"idle");
    for i in 0..20u64 {
        let ts = S + i * 100_000_000;
        for k in 0..10 {
            w.push(&Event {
                proc: pg,
                ..Event::syscall(ts + k, 1_000, 123, 123, 1, 4096)
            })
            .unwrap();
            w.push(&Event {
                proc: dd,
                ..Event::syscall(ts + k, 500, 77, 77, 0, 1)
            })
            .unwrap();
        }
        w.push(&Event {
            proc: idle,
            ..Event::syscall(ts, 500, 99, 99, 0, 1)
        })
        .unwrap();
    }
    // Two readings: at 1.5 s and 2.5 s.
    for (ts, total, procs) in [
        (S + S / 2, 200_000, vec![(77, dd, 199_950), (123, pg, 50)]),
        (2 * S + S / 2, 445_287, vec![(77, dd, 245_235), (123, pg, 52)]),
    ] {
        w.record_drops(&DropStats {
            ts,
            per_cpu: vec![total / 2, total - total / 2],
        })
        .unwrap();
        if placed {
            let procs = procs
                .into_iter()
                .map(|(pid, proc, count)| ProcDrops { pid, proc, count })
                .collect();
            w.record_drops_by_process(&ProcDropStats { ts, procs }).unwrap();
        }
    }
    w.finish(3 * S).unwrap();
    path
}

#[test]
fn info_lists_whose_events_were_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "placed.cap", true);
    let (code, out, err) = run(&["info", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("drops        445287\n"), "{out}");
    assert!(
        out.contains("dropped of   dd (pid 77) 445185, postgres (pid 123) 102\n"),
        "{out}"
    );
    let (code, out, err) = run(&["info", "--json", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["drops"], 445_287);
    assert_eq!(
        v["drops_by_process"],
        serde_json::json!([
            { "pid": 77, "name": "dd", "drops": 445_185 },
            { "pid": 123, "name": "postgres", "drops": 102 },
        ])
    );
    assert_eq!(v["drops_of_no_known_process"], 0);
}

#[test]
fn info_of_an_older_recorders_drops_says_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "old.cap", false);
    let (code, out, err) = run(&["info", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("dropped of   not recorded"), "{out}");
    let (_, out, _) = run(&["info", "--json", cap.to_str().unwrap()]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["drops"], 445_287);
    assert!(v["drops_by_process"].is_null(), "{v}");
    assert!(v["drops_of_no_known_process"].is_null(), "{v}");
}

#[test]
fn report_says_how_many_of_the_named_process_events_were_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "placed.cap", true);
    let c = cap.to_str().unwrap();
    for filter in [
        "proc.name=postgres",
        "proc.pid=123",
        "proc.name=postgres and latency>1us",
    ] {
        let (code, out, err) = run(&["report", c, filter]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("dropped while recording: 102 of this process's events (445287 in all)\n"),
            "{filter}: {out}"
        );
        let (code, out, err) = run(&["report", "--json", c, filter]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["process_drops"],
            serde_json::json!({
                "processes": [{ "pid": 123, "name": "postgres" }],
                "dropped": 102,
                "dropped_in_all": 445_287,
            }),
            "{filter}"
        );
    }
    let (_, out, _) = run(&["report", c, "proc.name in (dd, postgres)"]);
    assert!(
        out.contains("dropped while recording: 445287 of these 2 processes' events (445287 in all)\n"),
        "{out}"
    );
    let (_, out, _) = run(&["report", c, "proc.name=idle"]);
    assert!(
        out.contains("dropped while recording: 0 of this process's events (445287 in all)\n"),
        "{out}"
    );
    // A filter naming no process, or one any process's events may pass: no such line.
    for filter in ["latency>1us", "proc.name=postgres or latency>1us"] {
        let (_, out, _) = run(&["report", c, filter]);
        assert!(!out.contains("dropped while recording:"), "{filter}: {out}");
        let (_, out, _) = run(&["report", "--json", c, filter]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert!(v.get("process_drops").is_none(), "{filter}: {v}");
    }
}

#[test]
fn report_of_an_older_recorders_drops_says_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path(), "old.cap", false);
    let c = cap.to_str().unwrap();
    let (code, out, err) = run(&["report", c, "proc.name=postgres"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("dropped while recording: 445287 in all, not recorded by process"),
        "{out}"
    );
    let (_, out, _) = run(&["report", "--json", c, "proc.name=postgres"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["process_drops"]["dropped"].is_null(), "{v}");
    assert_eq!(v["process_drops"]["dropped_in_all"], 445_287);
}
