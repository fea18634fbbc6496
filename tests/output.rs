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

#[test]
fn a_fifo_is_written_to_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 500);
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let child = iocap()
        .args([
            "export",
            cap.to_str().unwrap(),
            "--format",
            "csv",
            "-o",
            fifo.to_str().unwrap(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    std::fs::File::open(&fifo).unwrap().read_to_string(&mut text).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.lines().count(), 501, "a header and 500 events");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
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
        let mut child = iocap()
            .args([
                "export",
                cap.to_str().unwrap(),
                "--format",
                "csv",
                "-o",
                out.to_str().unwrap(),
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
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
