//! `iocap info` on good, recovered and bad files.

use serde_json::json;

use crate::util::{run, synthetic_capture};

#[test]
fn info_json_has_the_documented_keys() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let (code, out, err) = run(&["info", "--json", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["events"], 1000);
    assert_eq!(v["syscall_events"], 900);
    assert_eq!(v["block_events"], 100);
    assert_eq!(v["drops"], 0);
    assert_eq!(v["unseen_block_requests"], 0);
    assert_eq!(v["unseen_block_requests_by_disk"], json!({}));
    assert_eq!(v["clean"], true);
    let version = format!("{}.{}", iocap_format::FORMAT_MAJOR, iocap_format::FORMAT_MINOR);
    assert_eq!(v["format_version"], version.as_str());
    assert_eq!(v["host"], "testhost");
    assert_eq!(v["kernel"], "6.18.0");
    assert_eq!(v["duration_ns"], 1000 * 1_000_000u64);
    assert_eq!(v["start"], "2023-11-14T22:13:21.000000000Z");
    assert_eq!(v["end"], "2023-11-14T22:13:22.000000000Z");
    assert_eq!(v["file_bytes"], std::fs::metadata(&cap).unwrap().len());
}

#[test]
fn info_on_a_cut_file_says_not_clean() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    let cut = dir.path().join("cut.cap");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (code, out, err) = run(&["info", "--json", cut.to_str().unwrap()]);
    assert_eq!(code, 0, "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["clean"], false);
    let events = v["events"].as_u64().unwrap();
    assert!(
        events > 0 && events < 1000 && events.is_multiple_of(100),
        "whole chunks only: {events}"
    );
    let (code, text, _) = run(&["info", cut.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(text.contains("clean        no: recovered by scanning"), "{text}");
}

#[test]
fn info_on_bad_files_is_one_line_and_nonzero() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&str, &[u8]); 3] = [("empty", b""), ("four", b"IOCA"), ("garbage", &[0x5a; 4096])];
    for (name, bytes) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let (code, out, err) = run(&["info", p.to_str().unwrap()]);
        assert_eq!(code, 1, "{name}: {err}");
        assert!(out.is_empty(), "{name}: nothing on stdout");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(
            err.starts_with("iocap: ") && err.contains("not an iocap capture"),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked"));
    }
    let (code, _, err) = run(&["info", dir.path().join("missing.cap").to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("No such file"), "{err}");
}

/// An OS error is said once: "No such file or directory (os error 2)", not that twice over.
#[test]
fn an_os_error_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.cap");
    let missing = missing.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["info", missing],
        &["report", missing],
        &["events", missing],
        &["iostat", missing],
        &["spectrogram", missing],
        &["view", missing],
        &["export", missing, "--format", "csv", "-o", "-"],
    ];
    for cmd in commands {
        let (code, _, err) = run(cmd);
        assert_eq!(code, 1, "{err}");
        assert_eq!(err.matches("os error").count(), 1, "{cmd:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{cmd:?}: {err}");
    }
}

/// A FIFO, a device or a directory given as the capture is refused at once, by what it is: a
/// FIFO used to block the open until something wrote to it, and /dev/zero read as "empty".
#[test]
fn paths_that_are_not_files_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.cap");
    crate::util::mkfifo(&fifo);
    let cases = [
        (fifo.to_str().unwrap(), "it is a FIFO"),
        ("/dev/zero", "it is a device"),
        (dir.path().to_str().unwrap(), "it is a directory"),
    ];
    for (path, says) in cases {
        for cmd in ["info", "report", "view"] {
            let mut child = crate::util::iocap()
                .args([cmd, path])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let t0 = std::time::Instant::now();
            while child.try_wait().unwrap().is_none() && t0.elapsed() < std::time::Duration::from_secs(10) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let hung = child.try_wait().unwrap().is_none();
            if hung {
                child.kill().unwrap();
            }
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!hung, "{cmd} {path} hung");
            // A directory is a set of captures to the commands that read several (#17) and to
            // the viewer, one recording (#19): this one holds none.
            let (code, says) = if path == dir.path().to_str().unwrap() {
                (2, "no capture in the directory")
            } else {
                (1, says)
            };
            assert_eq!(out.status.code(), Some(code), "{cmd} {path}: {err}");
            assert!(err.contains(says) && err.lines().count() == 1, "{cmd} {path}: {err}");
        }
    }
}

/// Block requests the recorder saw issued and never saw complete are said beside the drops by
/// `info`, `report` and `compare`, in text and JSON; a capture without any says nothing of them in text.
#[test]
fn info_and_report_say_the_unseen_block_requests() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unseen.cap");
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(1_000_000_000), 100, 3);
    for i in 0..10u64 {
        w.push(&iocap_format::Event::syscall(
            1_000_000_000 + i * 1_000,
            500,
            1,
            1,
            0,
            0,
        ))
        .unwrap();
    }
    // 3 on the capture's disk, vda, and 1 on a disk it does not name.
    let unnamed = iocap_format::mkdev(7, 3);
    w.record_unseen(
        1_000_020_000,
        &std::collections::BTreeMap::from([(iocap_testkit::VDA, 3), (unnamed, 1)]),
    )
    .unwrap();
    w.finish(1_000_050_000).unwrap();
    let cap = path.to_str().unwrap();
    let (code, out, err) = run(&["info", "--json", cap]);
    assert_eq!(code, 0, "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["drops"].as_u64(), v["unseen_block_requests"].as_u64()),
        (Some(0), Some(4))
    );
    assert_eq!(v["unseen_block_requests_by_disk"], json!({"vda": 3, "7:3": 1}));
    let (_, text, _) = run(&["info", cap]);
    assert!(
        text.contains(
            "drops        0, 4 block requests issued whose completion never reached the recorder (7:3 1, vda 3)\n"
        ),
        "{text}"
    );
    let (code, out, err) = run(&["report", cap, "--json"]);
    assert_eq!(code, 0, "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["unseen_block_requests"], 4);
    assert_eq!(v["unseen_block_requests_by_disk"], json!({"vda": 3, "7:3": 1}));
    let (_, text, _) = run(&["report", cap]);
    assert!(
        text.contains(
            "0 dropped while recording, 4 block requests issued whose completion never reached the recorder (7:3 1, vda 3)"
        ),
        "{text}"
    );
    let (code, out, err) = run(&["compare", cap, cap, "--json"]);
    assert_eq!(code, 0, "stderr: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["a"]["unseen_block_requests"], &v["b"]["unseen_block_requests"]),
        (&json!(4), &json!(4))
    );
    let (_, text, _) = run(&["compare", cap, cap]);
    assert!(
        text.contains("dropped while recording, 4 block requests issued whose completion never reached the recorder"),
        "{text}"
    );
    let plain = synthetic_capture(dir.path(), 100);
    let (_, text, _) = run(&["info", plain.to_str().unwrap()]);
    assert!(text.contains("drops        0\n"), "{text}");
    let (_, text, _) = run(&["report", plain.to_str().unwrap()]);
    assert!(!text.contains("never reached"), "{text}");
}

/// Counts a file claims are believed, but never overflow: drops of u64::MAX on two CPUs and as
/// many unseen requests, in each of two captures read together, saturate.
#[test]
fn counts_claimed_past_u64_saturate() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (k, host) in ["a", "b"].into_iter().enumerate() {
        let path = dir.path().join(format!("{host}.cap"));
        let meta = iocap_format::Meta {
            host: host.into(),
            ..iocap_testkit::meta(1_000_000_000)
        };
        let mut w = iocap_testkit::create(&path, &meta, 100, 3);
        w.push(&iocap_format::Event::syscall(1_000_000_000 + k as u64, 500, 1, 1, 0, 0))
            .unwrap();
        w.record_drops(&iocap_format::DropStats {
            ts: 1_000_000_100,
            per_cpu: vec![u64::MAX, u64::MAX],
        })
        .unwrap();
        w.record_unseen(
            1_000_000_100,
            &std::collections::BTreeMap::from([(iocap_testkit::VDA, u64::MAX)]),
        )
        .unwrap();
        w.finish(1_000_000_200).unwrap();
        paths.push(path.to_str().unwrap().to_owned());
    }
    let (a, b) = (paths[0].as_str(), paths[1].as_str());
    for args in [
        vec!["info", "--json", a, b],
        vec!["info", a, b],
        vec!["report", "--json", a, b],
        vec!["report", a],
        vec!["compare", a, b, "--json"],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if args.contains(&"--json") && args[0] != "compare" {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            let v = if args[0] == "info" { &v["total"] } else { &v };
            assert_eq!(
                (&v["drops"], &v["unseen_block_requests"]),
                (&json!(u64::MAX), &json!(u64::MAX)),
                "{args:?}"
            );
        }
    }
}
