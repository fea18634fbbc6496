//! `iocap view` end to end: the built binary in a real terminal (tmux), driven by keys.
//!
//! Skipped, with the reason printed, where tmux is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::synthetic_capture;

/// A tmux server of our own (`-L`), so the test never touches the user's sessions.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "view"]).stdout).into_owned()
    }

    /// Wait until the screen satisfies `ok`; returns the last screen either way.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "view"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

fn tmux_missing() -> Option<&'static str> {
    match Command::new("tmux").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("tmux is not installed: `iocap view` end-to-end test skipped"),
    }
}

fn start(cap: &Path, state: &Path, filter: &str) -> Tmux {
    let tmux = Tmux {
        socket: format!("iocap-test-{}-{}", std::process::id(), filter.len()),
    };
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' view '{}' {filter}",
        state.display(),
        env!("CARGO_BIN_EXE_iocap"),
        cap.display()
    );
    let out = tmux.cmd(&["new-session", "-d", "-s", "view", "-x", "100", "-y", "30", &cmd]);
    assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
    // Keep the pane after the viewer exits, to check how it left the terminal.
    tmux.cmd(&["set-option", "-t", "view", "remain-on-exit", "on"]);
    tmux
}

#[test]
fn view_filters_drills_down_and_restores_the_terminal() {
    let _running = crate::util::machine_shared();
    if let Some(why) = tmux_missing() {
        eprintln!("{why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap: PathBuf = synthetic_capture(dir.path(), 1000);
    let state = dir.path().join("state");
    let t = start(&cap, &state, "");

    // The first frame, then the exact scan: 1000 events in the status line.
    let s = t.wait_for("the first frame", |s| {
        s.contains("Spectrogram") && s.contains("1,000/1,000")
    });
    assert!(s.contains("By proc.name"), "{s}");
    assert!(s.contains("fio") && s.contains("postgres"), "{s}");

    // Filter to postgres: 400 of the 1000 events (odd ones, less the block writes at i % 10 == 9).
    t.keys(&["/"]);
    t.keys(&["-l", "proc.name=postgres"]);
    t.keys(&["Enter"]);
    let s = t.wait_for("the filter", |s| s.contains("400/1,000"));
    assert!(s.contains("filter: proc.name=postgres"), "{s}");

    // A typo shows the error and the suggestion, live; Esc keeps the applied filter.
    t.keys(&["/"]);
    t.keys(&["-l", " and proc.nme=x"]);
    let s = t.wait_for("the error", |s| s.contains("unknown field"));
    assert!(s.contains("proc.name"), "{s}");
    t.keys(&["Escape"]);
    t.wait_for("the bar to close", |s| s.contains("filter: proc.name=postgres"));

    // Drill down into the breakdown: group by evt.type and add the top one.
    t.keys(&["Tab", "f"]);
    t.wait_for("the evt.type breakdown", |s| s.contains("By evt.type"));
    t.keys(&["Enter"]);
    let s = t.wait_for("the drill-down", |s| s.contains("and evt.type="));
    assert!(s.contains("400/1,000"), "{s}");

    // The event list, slowest first: its rows come from the rows thread.
    t.keys(&["Tab", "s"]);
    // The first row is the slowest event, the histogram's max (2.00µs).
    let first_row = |s: &str| -> String {
        let mut lines = s.lines().skip_while(|l| !l.contains("TIME"));
        lines.nth(1).unwrap_or("").to_owned()
    };
    let s = t.wait_for("the latency-sorted rows", |s| {
        let first = first_row(s);
        s.contains("slowest first")
            && first.contains("postgres")
            && first.contains("2.00µs")
            && s.lines().filter(|l| l.contains("postgres")).count() >= 5
    });
    // A row not decoded yet would show as `…` alone.
    assert!(
        !s.lines().any(|l| l.starts_with("│…")),
        "every row on screen decoded: {s}"
    );

    // Help, then quit.
    t.keys(&["?"]);
    t.wait_for("the help", |s| {
        s.contains("Keys") && s.contains("undo the last filter change")
    });
    t.keys(&["Escape", "q"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = t.cmd(&[
            "display-message",
            "-p",
            "-t",
            "view",
            "#{pane_dead} #{pane_dead_status} #{pane_pid}",
        ]);
        let status = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if status.starts_with("1 0 ") {
            break;
        }
        // tmux 3.3 sometimes misses the child's exit and leaves it a zombie with no status:
        // the kernel still has the exit status, so read it there.
        if let Some(code) = status
            .strip_prefix("1  ")
            .and_then(|pid| zombie_wait_status(pid.trim()))
        {
            assert_eq!(code, 0, "viewer exited with wait status {code:#x}");
            break;
        }
        assert!(Instant::now() < deadline, "viewer did not exit cleanly: {status}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Out of the alternate screen: the viewer's frame is gone.
    assert!(!t.screen().contains("Spectrogram"), "{}", t.screen());
    // The applied filters were kept for the next run.
    let history = std::fs::read_to_string(state.join("iocap/history")).unwrap();
    assert!(history.lines().any(|l| l == "proc.name=postgres"), "{history}");
}

/// The raw wait status of process `pid` if it has exited and not been reaped (a zombie):
/// the last field of /proc/PID/stat.
fn zombie_wait_status(pid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name in parentheses may hold spaces: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    (fields.next()? == "Z").then_some(())?;
    fields.last()?.parse().ok()
}

#[test]
fn view_rejects_a_bad_filter_before_taking_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 100);
    let (code, _, err) = crate::util::run(&["view", cap.to_str().unwrap(), "proc.nme=x"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("unknown field `proc.nme`") && err.contains("did you mean `proc.name`"),
        "{err}"
    );
    // Without a terminal the viewer says so instead of drawing into a pipe.
    let (code, _, err) = crate::util::run(&["view", cap.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("needs a terminal"), "{err}");
}
