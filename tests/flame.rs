//! `iocap flame` and `export --format folded|svg-flame` on a capture with stacks whose names are
//! hostile (markup, a terminal escape, the folded format's own `;`): what each writes, and what
//! a capture without stacks says.

use std::path::{Path, PathBuf};

use iocap_format::{Event, Stack, StackFrame, StackKind, Writer};
use iocap_testkit::add_proc;

use crate::util::{iocap, run, synthetic_capture};

/// Two calls of a process named `db<x>\x1b[31m;1` with user stack main → `a<b>&c` → `x;y`,
/// 3 ms and 1 ms, the second with a kernel stack; a third call with none; and a block request
/// of 700 µs the first call issued.
fn capture(dir: &Path) -> PathBuf {
    capture_as(dir, "stacks.cap", 1)
}

/// [`capture`] in file `name`, its calls `k` times as slow.
fn capture_as(dir: &Path, name: &str, k: u64) -> PathBuf {
    let path = dir.join(name);
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(1_000_000_000), 100, 3);
    let db = add_proc(&mut w, 7, 1, b"db<x>\x1b[31m;1");
    let stack = |w: &mut Writer<std::fs::File>, kind, names: &[&[u8]]| {
        let frames = (names.iter().rev())
            .map(|n| StackFrame {
                addr: 0x40,
                sym: w.intern(n),
                module: 0,
                build_id: 0,
            })
            .collect();
        w.add_stack(&Stack { kind, frames })
    };
    let user = stack(&mut w, StackKind::User, &[b"main", b"a<b>&c", b"x;y"]);
    let kernel = stack(&mut w, StackKind::Kernel, &[b"do_fsync", b"jbd2_log_wait_commit"]);
    let calls = [(3_000_000u64, user, 0), (1_000_000, user, kernel), (500, 0, 0)];
    for (i, (lat, u, ks)) in calls.into_iter().enumerate() {
        let mut e = Event::syscall(1_000_000_000 + i as u64 * 10_000_000, lat * k, 7, 7, 74, 0);
        (e.proc, e.stack_user, e.stack_kernel) = (db, u, ks);
        w.push(&e).unwrap();
    }
    w.push(&Event {
        cause: iocap_format::Cause::Syscall as u8,
        link: 200_000,
        ..iocap_testkit::block(1_000_200_000, 700_000, 7, db, iocap_testkit::VDA, 4096)
    })
    .unwrap();
    w.finish(1_100_000_000).unwrap();
    path
}

#[test]
fn folded_stacks_name_frames_escaped_and_weighted() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    let cap = cap.to_str().unwrap();
    let (code, out, err) = run(&["flame", cap]);
    assert_eq!(code, 0, "{err}");
    // The process's escape sequence is shown, not sent; `;` inside a name would split a frame.
    assert_eq!(out, "db<x>\\x1b[31m:1;main;a<b>&c;x:y 4700000\n");
    let (_, out, _) = run(&["flame", cap, "--by", "kernel", "--weight", "count"]);
    assert_eq!(out, "db<x>\\x1b[31m:1;do_fsync;jbd2_log_wait_commit 1\n");
    let (_, out, _) = run(&["flame", cap, "--by", "both", "latency<2ms"]);
    assert_eq!(
        out,
        "db<x>\\x1b[31m:1;main;a<b>&c;x:y 700000\n\
         db<x>\\x1b[31m:1;main;a<b>&c;x:y;do_fsync;jbd2_log_wait_commit 1000000\n"
    );
    let (_, out, _) = run(&["export", cap, "--format", "folded", "-o", "-", "evt.class=syscall"]);
    assert_eq!(out, "db<x>\\x1b[31m:1;main;a<b>&c;x:y 4000000\n");
    // A block request under the stack of the call that issued it.
    let (_, out, _) = run(&["flame", cap, "evt.class=block"]);
    assert_eq!(out, "db<x>\\x1b[31m:1;main;a<b>&c;x:y 700000\n");
    // Nothing matches with a stack: said, not an error.
    let (code, out, err) = run(&["flame", cap, "latency<600us"]);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(
        err.contains("no matching call has a user stack (1 matched without one)"),
        "{err}"
    );
}

/// `--diff`: each path with A's weight and B's, flamegraph.pl's differential input.
#[test]
fn a_differential_graph_has_both_sides_weights() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (capture(dir.path()), capture_as(dir.path(), "slower.cap", 2));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, out, err) = run(&["flame", a, b, "--diff", "--by", "both", "evt.class=syscall"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "db<x>\\x1b[31m:1;main;a<b>&c;x:y 3000000 6000000\n\
         db<x>\\x1b[31m:1;main;a<b>&c;x:y;do_fsync;jbd2_log_wait_commit 1000000 2000000\n"
    );
    let (code, _, err) = run(&["flame", a, "--diff"]);
    assert_eq!(code, 2);
    assert!(err.contains("--diff compares two captures, A then B: 1 given"), "{err}");
}

#[test]
fn an_svg_flame_graph_is_well_formed_and_titled() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    for (args, file) in [
        (vec!["flame", cap.to_str().unwrap(), "-o"], "f.svg"),
        (
            vec!["export", cap.to_str().unwrap(), "--format", "svg-flame", "-o"],
            "e.svg",
        ),
    ] {
        let out = dir.path().join(file);
        let st = iocap().args(&args).arg(&out).output().unwrap();
        assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(!svg.contains('\x1b'), "a raw escape in the SVG");
        // inferno's SVG starts with a DOCTYPE, which the parser takes only when allowed.
        let opts = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..roxmltree::ParsingOptions::default()
        };
        let doc = roxmltree::Document::parse_with_options(&svg, opts).expect("well-formed XML");
        let text: String = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(text.contains("3 events by user stack"), "{text}");
        assert!(text.contains("a<b>&c"), "markup kept as text: {text}");
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&out).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
    }
    // An empty graph is not drawn, and leaves no file.
    let empty = dir.path().join("empty.svg");
    let (code, _, err) = run(&[
        "flame",
        cap.to_str().unwrap(),
        "latency<600us",
        "-o",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("there is no flame graph to draw"), "{err}");
    assert!(!empty.exists());
}

#[test]
fn a_capture_without_stacks_says_how_to_record_them() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 50);
    let (code, out, err) = run(&["flame", cap.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (1, ""));
    assert!(err.contains("has no stacks: record with --stacks"), "{err}");
}

/// `-o` at a symlink replaces the link, never writes where it points.
#[test]
fn an_output_symlink_is_replaced_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let cap = capture(dir.path());
    let target = dir.path().join("precious");
    std::fs::write(&target, "keep").unwrap();
    let link = dir.path().join("out.folded");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let st = iocap().args(["flame"]).arg(&cap).arg("-o").arg(&link).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(!std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(&link).unwrap().ends_with(" 4700000\n"));
}
