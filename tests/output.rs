//! Where `export -o` writes: a new 0600 file put in place only when whole, a character device
//! or FIFO written in place, never a device node replaced, nothing left behind when killed.

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::util::{iocap, run, synthetic_capture};

fn export_csv(cap: &Path, out: &str) -> (i32, String, String) {
    run(&["export", cap.to_str().unwrap(), "--format", "csv", "-o", out])
}

/// `iocap export CAP --format csv -o OUT`, to spawn.
fn export_cmd(cap: &Path, out: &Path) -> std::process::Command {
    let mut c = iocap();
    c.args(["export", cap.to_str().unwrap(), "--format", "csv", "-o"])
        .arg(out);
    c
}

#[test]
fn dev_null_stays_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 500);
    let (code, _, err) = export_csv(&cap, "/dev/null");
    assert_eq!(code, 0, "{err}");
    let m = std::fs::symlink_metadata("/dev/null").unwrap();
    assert!(m.file_type().is_char_device(), "/dev/null was replaced: {m:?}");
    // And nothing was created beside it.
    let strays: Vec<_> = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("iocap"))
        .collect();
    assert!(strays.is_empty(), "{strays:?}");
}

/// A full disk (`/dev/full`) is one line, exit 1, for every format, the cause said once (the
/// parquet crate's error names its source in its own message too).
#[test]
fn a_full_disk_is_said_once() {
    // Big enough that the writers meet the full disk before their last flush.
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mixed.cap");
    for format in ["csv", "jsonl", "parquet"] {
        let (code, _, err) = run(&["export", cap.to_str().unwrap(), "--format", format, "-o", "/dev/full"]);
        assert_eq!(code, 1, "{format}: {err}");
        assert_eq!(err.lines().count(), 1, "{format}: {err}");
        assert_eq!(err.matches("No space left on device").count(), 1, "{format}: {err}");
    }
}

#[test]
fn a_fifo_is_written_to_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 500);
    let fifo = dir.path().join("pipe");
    crate::util::mkfifo(&fifo);
    let child = export_cmd(&cap, &fifo).stderr(Stdio::piped()).spawn().unwrap();
    let mut text = String::new();
    std::fs::File::open(&fifo).unwrap().read_to_string(&mut text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().count(), 501, "a header and 500 events");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // `-o /dev/stdout` is a symlink to the process's own stdout (here a pipe): written through.
    let out = export_cmd(&cap, Path::new("/dev/stdout")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 501);
    // A symlink to a regular file is still replaced, never written through (export_svg_heatmap).
}

#[test]
fn directories_block_devices_and_dev_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 50);
    let (code, _, err) = export_csv(&cap, dir.path().to_str().unwrap());
    assert_eq!(code, 1);
    assert!(err.contains("is a directory") && err.lines().count() == 1, "{err}");
    if let Some(blk) = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
    {
        let p = blk.path();
        let before = std::fs::symlink_metadata(&p).unwrap();
        let (code, _, err) = export_csv(&cap, p.to_str().unwrap());
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("is a block device"), "{err}");
        let after = std::fs::symlink_metadata(&p).unwrap();
        assert!(after.file_type().is_block_device());
        assert_eq!(
            std::os::unix::fs::MetadataExt::ino(&before),
            std::os::unix::fs::MetadataExt::ino(&after)
        );
    }
    let (code, _, err) = export_csv(&cap, "/dev/iocap-export-test.csv");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("under /dev"), "{err}");
    assert!(!Path::new("/dev/iocap-export-test.csv").exists());
}

/// A target replaced by a new file: other hard links keep the old content, the mode is 0600.
#[test]
fn an_existing_file_is_replaced_not_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 50);
    let out = dir.path().join("out.csv");
    std::fs::write(&out, "old").unwrap();
    std::fs::set_permissions(&out, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let twin = dir.path().join("twin");
    std::fs::hard_link(&out, &twin).unwrap();
    let (code, _, err) = export_csv(&cap, out.to_str().unwrap());
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read_to_string(&twin).unwrap(), "old");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 51);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&out).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

/// An export killed half-way (SIGKILL, SIGTERM, SIGINT) leaves the directory as it was.
#[test]
fn a_killed_export_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 200_000);
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("big.csv");
    for sig in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT] {
        let mut cmd = export_cmd(&cap, &out);
        // As a terminal's foreground job gets them: a test run started in the background by a
        // non-interactive shell (`… &`) ignores SIGINT, and the export keeps an ignored signal
        // ignored (as it should: nohup's, a shell's), so it would finish its work unharmed.
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                Ok(())
            });
        }
        let mut child = cmd.stderr(Stdio::null()).spawn().unwrap();
        // Wait until it holds a file in out_dir open, and has written something to it.
        let fd_dir = format!("/proc/{}/fd", child.id());
        let t0 = Instant::now();
        let writing = loop {
            let open_there = std::fs::read_dir(&fd_dir).ok().and_then(|fds| {
                fds.filter_map(|e| e.ok())
                    .find(|e| std::fs::read_link(e.path()).is_ok_and(|l| l.starts_with(&out_dir)))
            });
            if let Some(fd) = open_there {
                if std::fs::metadata(fd.path()).is_ok_and(|m| m.len() > 0) {
                    break true;
                }
            }
            if t0.elapsed() > Duration::from_secs(20) || child.try_wait().unwrap().is_some() {
                break false;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        assert!(
            writing,
            "signal {sig}: the export never got to writing (too fast to catch?)"
        );
        // SAFETY: kill has no memory-safety preconditions.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert!(!status.success(), "signal {sig}: {status:?}");
        let left: Vec<_> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "signal {sig} left {left:?}");
    }
}

/// Names from the traced host that a spreadsheet would run as formulas are exported as text;
/// negative numbers stay numbers.
#[test]
fn csv_cells_are_not_formulas() {
    use iocap_format::{Event, FdType, FileEntry, Meta, ProcEntry, Writer, WriterOptions};
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("hostile.cap");
    let mut w = Writer::new(
        std::fs::File::create(&cap).unwrap(),
        &Meta::default(),
        WriterOptions::default(),
    )
    .unwrap();
    let name = w.intern(b"@evil");
    let proc = w.add_proc(ProcEntry {
        pid: 7,
        name,
        ..ProcEntry::default()
    });
    let hostile = [
        &b"=HYPERLINK(\"http://x\",\"y\")"[..],
        b"+1+1",
        b"-2+3",
        b"\tx",
        b"/ok/path",
    ];
    for (i, path) in hostile.iter().enumerate() {
        let name = w.intern(path);
        let file = w.add_file(FileEntry {
            pid: 7,
            fd: 3 + i as i32,
            kind: FdType::File,
            name,
            ..FileEntry::default()
        });
        w.push(&Event {
            proc,
            file,
            fd: 3 + i as i32,
            ret: -2,
            ..Event::syscall(1_000 + i as u64, 10, 7, 7, 0, 0)
        })
        .unwrap();
    }
    w.finish(10_000).unwrap();
    let out = dir.path().join("o.csv");
    let (code, _, err) = export_csv(&cap, out.to_str().unwrap());
    assert_eq!(code, 0, "{err}");
    let text = std::fs::read_to_string(&out).unwrap();
    let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
    let ret_col = header.iter().position(|h| *h == "evt.res").expect("an evt.res column");
    let mut rows = 0;
    for line in text.lines().skip(1) {
        // Good enough to split these rows: the only quoted cell is the HYPERLINK one.
        let cells: Vec<String> = split_csv(line);
        assert_eq!(cells[ret_col], "-2", "{line}");
        for (k, c) in cells.iter().enumerate() {
            if k != ret_col {
                assert!(
                    !c.starts_with(['=', '+', '-', '@', '\t']),
                    "cell {} is a formula: {line}",
                    header[k]
                );
            }
        }
        assert!(line.contains("'@evil"), "{line}");
        rows += 1;
    }
    assert_eq!(rows, hostile.len());
    assert!(text.contains("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""), "{text}");
    assert!(text.contains(",/ok/path,"), "a plain path is left as it is: {text}");
}

/// RFC 4180 cells of one line.
fn split_csv(line: &str) -> Vec<String> {
    let (mut cells, mut cur, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    cells.push(cur);
    cells
}

/// `iocap ... | head` closes the pipe early: every command that prints stops quietly with
/// status 0, as ripgrep does, whether it prints text or JSON (a JSON writer's error once came
/// out as "iocap: Broken pipe (os error 32)" with status 1).
#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 2000);
    let cap = cap.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["info", cap],
        &["info", "--json", cap],
        &["report", cap, "--by", "proc.name"],
        &["report", "--json", cap],
        &["events", cap],
        &["events", "--json", cap],
        &["iostat", cap],
        &["iostat", "--json", cap],
        &["spectrogram", cap],
        &["export", cap, "--format", "jsonl", "-o", "-"],
        &["export", cap, "--format", "svg", "-o", "-"],
        &["fields"],
        &["fields", "--json"],
        &["help", "filter"],
    ];
    for args in commands {
        let (read_end, write_end) = std::io::pipe().unwrap();
        // Closed before iocap writes: its first write fails with EPIPE.
        drop(read_end);
        let out = iocap().args(*args).stdout(write_end).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}
