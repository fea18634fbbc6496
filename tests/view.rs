//! `iocap view` end to end: the built binary in a real terminal (tmux), driven by keys and the
//! mouse (SGR mouse reports written to the pane, as a terminal sends them).
//!
//! Skipped, with the reason printed, where tmux is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::util::synthetic_capture;

/// A tmux server of our own (`-L`), so the test never touches the user's sessions.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux")
    }

    pub(crate) fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "view"]).stdout).into_owned()
    }

    /// Wait until the screen satisfies `ok`; returns the last screen either way.
    pub(crate) fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
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

    pub(crate) fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "view"];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }

    /// Write `bytes` to the viewer's terminal as they are, in one piece (a mouse report must not
    /// be split, or its Esc reads as the key).
    fn raw(&self, bytes: &[u8]) {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut args = vec!["send-keys", "-t", "view", "-H"];
        args.extend(hex.iter().map(String::as_str));
        assert!(self.cmd(&args).status.success());
    }

    /// A left-button drag from screen cell `from` to `to` (0-based column, row), through
    /// `via`, as SGR mouse reports: press, moves with the button held, release.
    fn drag(&self, from: (usize, usize), via: &[(usize, usize)], to: (usize, usize)) {
        // SGR: `ESC [ < button ; column ; row M`, `m` for a release, 1-based; 32 is "moved".
        let report = |button: u8, (x, y): (usize, usize), end: char| format!("\x1b[<{button};{};{}{end}", x + 1, y + 1);
        let mut seq = report(0, from, 'M');
        for &cell in via.iter().chain([&to]) {
            seq.push_str(&report(32, cell, 'M'));
        }
        seq.push_str(&report(0, to, 'm'));
        self.raw(seq.as_bytes());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// Whether tmux is installed; when it is not, says on stderr that the test is skipped.
pub(crate) fn tmux_present() -> bool {
    let present = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        eprintln!("tmux is not installed: `iocap view` end-to-end test skipped");
    }
    present
}

/// The viewer on `cap` in a 100×30 tmux window of its own server, named after the test.
fn start(test: &str, cap: &Path, state: &Path, filter: &str) -> Tmux {
    start_sized(test, cap, state, filter, (100, 30))
}

/// [`start`] in a window of `(columns, rows)`.
fn start_sized(test: &str, cap: &Path, state: &Path, filter: &str, size: (u16, u16)) -> Tmux {
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' view '{}' {filter}",
        state.display(),
        env!("CARGO_BIN_EXE_iocap"),
        cap.display()
    );
    start_command(test, &cmd, size)
}

/// The shell command `cmd` in a tmux window of `(columns, rows)` of its own server, named after
/// the test, kept after the command exits.
pub(crate) fn start_command(test: &str, cmd: &str, (w, h): (u16, u16)) -> Tmux {
    let tmux = Tmux {
        socket: format!("iocap-test-{}-{test}", std::process::id()),
    };
    let (w, h) = (w.to_string(), h.to_string());
    let out = tmux.cmd(&["new-session", "-d", "-s", "view", "-x", &w, "-y", &h, cmd]);
    assert!(out.status.success(), "tmux: {}", String::from_utf8_lossy(&out.stderr));
    // Keep the pane after the viewer exits, to check how it left the terminal.
    tmux.cmd(&["set-option", "-t", "view", "remain-on-exit", "on"]);
    tmux
}

#[test]
fn view_filters_drills_down_and_restores_the_terminal() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap: PathBuf = synthetic_capture(dir.path(), 1000);
    let state = dir.path().join("state");
    let t = start("keys", &cap, &state, "");

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

    // Drill down into the breakdown: group by evt.type (picked: `f`, typed, Enter) and add the
    // top one.
    t.keys(&["Tab", "f"]);
    t.wait_for("the picker", |s| s.contains("type to search"));
    t.keys(&["-l", "evt.ty"]);
    t.keys(&["Enter"]);
    // Its row, not only its title: Enter on a breakdown whose rows have not come yet adds
    // nothing (the title comes with the field, the rows with the answer).
    // (The event list shows `futex` too: the row wanted is the breakdown's, with its share.)
    t.wait_for("the evt.type breakdown", |s| {
        s.contains("By evt.type") && s.lines().any(|l| l.contains("futex") && l.contains("100%"))
    });
    t.keys(&["Enter"]);
    // The status line counts the new filter's matches once its scan answers ("…" until then).
    t.wait_for("the drill-down", |s| {
        s.contains("and evt.type=") && s.contains("400/1,000")
    });

    // The event list, slowest first: its rows come from the rows thread.
    t.keys(&["Tab", "s"]);
    // The first row is the slowest event, the histogram's max (2.00µs).
    let first_row = |s: &str| -> String {
        let mut lines = s.lines().skip_while(|l| !l.contains("END"));
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
    t.keys(&["Escape"]);
    quit_cleanly(&t);
    // The applied filters were kept for the next run.
    let history = std::fs::read_to_string(state.join("iocap/history")).unwrap();
    assert!(history.lines().any(|l| l == "proc.name=postgres"), "{history}");
}

/// `q`: the viewer exits with status 0 and leaves the alternate screen (its frame is gone).
pub(crate) fn quit_cleanly(t: &Tmux) {
    t.keys(&["q"]);
    exited_cleanly(t);
}

/// The command in `t` has exited with status 0 (within 10 s) and left the alternate screen.
pub(crate) fn exited_cleanly(t: &Tmux) {
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
}

/// The line of `screen` that starts with `prefix`, and its row.
fn line_at<'a>(screen: &'a str, prefix: &str) -> Option<(usize, &'a str)> {
    screen.lines().enumerate().find(|(_, l)| l.starts_with(prefix))
}

/// The status line's count of matching events: `400` of `│ 400/1,000 │`.
fn matching(screen: &str) -> Option<u64> {
    let status = screen.lines().rev().find(|l| l.contains("/1,000"))?;
    let count = status.split('│').find(|f| f.contains("/1,000"))?;
    count.trim().split('/').next()?.replace(',', "").parse().ok()
}

/// What `iocap report` counts for `filter`: the viewer must agree.
fn report_matched(cap: &Path, filter: &str) -> u64 {
    let (code, out, err) = crate::util::run(&["report", cap.to_str().unwrap(), filter, "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    json["matched"].as_u64().unwrap()
}

/// The mouse selects a region that stays selected (the status line says what Enter and Esc do)
/// and Enter filters to it, as `iocap report` counts it; a filter longer than the window scrolls
/// in the bar, `…` where cut, and readline's keys edit it.
#[test]
fn view_mouse_region_and_a_long_filter() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap: PathBuf = synthetic_capture(dir.path(), 1000);
    let state = dir.path().join("state");
    let t = start("mouse", &cap, &state, "");
    let s = t.wait_for("the first frame", |s| {
        s.contains("Spectrogram") && s.contains("1,000/1,000")
    });

    // The plot from the screen: its first row is the one labelled +0.000s, and the 1µs decade
    // starts where its label does on the line above.
    let (row, _) = line_at(&s, "│+0.000s").expect("the first time label");
    let labels = s.lines().nth(row - 1).unwrap();
    let col = labels.chars().position(|c| c == 'µ').expect("the 1µs label") - 1;
    let interval_ms: u64 = {
        let status = s.lines().rev().find(|l| l.contains("/row")).unwrap();
        let per_row = status.split('│').find(|f| f.contains("/row")).unwrap();
        per_row
            .trim()
            .trim_end_matches("/row")
            .trim_end_matches("ms")
            .parse()
            .unwrap()
    };
    // From the 1µs cell on the first row to 8 cells right, 2 rows down: postgres's and fio's reads.
    let (from, to) = ((col, row), (col + 8, row + 2));
    t.drag(from, &[(col + 4, row + 1)], to);
    let s = t.wait_for("the region selected", |s| {
        s.contains("region: Enter filters, Esc drops")
    });
    assert!(s.contains("filter: (all events)"), "releasing applied nothing: {s}");
    assert_eq!(matching(&s), Some(1000), "{s}");

    // Enter filters to the region: three rows, and the latencies dragged over.
    t.keys(&["Enter"]);
    let s = t.wait_for("the region's filter", |s| {
        s.contains("filter: evt.time<") && matching(s).is_some_and(|n| n < 1000)
    });
    let (_, bar) = line_at(&s, "filter: ").unwrap();
    let filter = bar["filter: ".len()..].trim_end();
    assert!(
        filter.starts_with(&format!("evt.time<{}ms and latency>=", 3 * interval_ms))
            && filter.contains(" and latency<"),
        "{filter}"
    );
    assert!(!s.contains("region:"), "{s}");
    let n = matching(&s).unwrap();
    assert!(n > 0, "{s}");
    assert_eq!(n, report_matched(&cap, filter), "{filter}");

    // Undo; drag again, then Esc drops the region and Enter filters to the cursor's cell alone.
    t.keys(&["u"]);
    t.wait_for("the undo", |s| {
        s.contains("filter: (all events)") && matching(s) == Some(1000)
    });
    t.drag(from, &[], to);
    t.wait_for("the region selected again", |s| s.contains("region: Enter filters"));
    t.keys(&["Escape"]);
    t.wait_for("the region dropped", |s| !s.contains("region:"));
    // An empty cell (blank on screen) is not filtered to: the note says where events are.
    let blank = s.lines().nth(to.1).and_then(|l| l.chars().nth(to.0)) == Some(' ');
    t.keys(&["Enter"]);
    if blank {
        let s = t.wait_for("the note", |s| s.contains("no event under the cursor"));
        assert!(s.contains("filter: (all events)"), "{s}");
        // Onto the next slower events, then Enter.
        t.keys(&["]", "Enter"]);
    }
    // Its count once answered (`…` until then): some events, not none.
    let s = t.wait_for("the cell's filter", |s| {
        s.contains("filter: evt.time>=") && matching(s).is_some()
    });
    let (_, bar) = line_at(&s, "filter: ").unwrap();
    assert!(matching(&s).is_some_and(|n| n > 0), "{s}");
    if !blank {
        assert!(
            bar.contains(&format!(
                "evt.time>={}ms and evt.time<{}ms",
                2 * interval_ms,
                3 * interval_ms
            )),
            "{bar}"
        );
    }

    // A filter longer than the window: typed, it scrolls, the end in sight.
    let long = "proc.name=postgres and latency>=1us and latency<1s and evt.time<2s \
                and evt.type!=read and evt.type!=write and proc.pid!=12345 and evt.class!=block";
    assert!(long.len() > 140);
    t.keys(&["/", "C-u"]);
    t.keys(&["-l", long]);
    let s = t.wait_for("the end of the long filter", |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.trim_end().ends_with("and evt.class!=block"))
    });
    let top = s.lines().next().unwrap();
    assert!(top.starts_with("/ …"), "{top}");
    // Ctrl-A: its start, cut on the right.
    t.keys(&["C-a"]);
    let s = t.wait_for("the start of the long filter", |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.starts_with("/ proc.name=postgres and"))
    });
    assert!(s.lines().next().unwrap().trim_end().ends_with('…'), "{s}");
    // Ctrl-E, Ctrl-W: the last clause goes (a filter ending in `and` is an error); Ctrl-Y
    // brings it back.
    t.keys(&["C-e", "C-w"]);
    t.wait_for("the last clause deleted", |s| s.contains("expected a condition"));
    t.keys(&["C-y"]);
    t.wait_for("the clause back", |s| {
        !s.contains("expected a condition")
            && s.lines()
                .next()
                .is_some_and(|l| l.trim_end().ends_with("and evt.class!=block"))
    });
    // Alt-B, Alt-D: the last word goes; Ctrl-Y brings it back.
    t.keys(&["M-b", "M-d"]);
    t.wait_for("the last word deleted", |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.trim_end().ends_with("and evt.class!="))
    });
    t.keys(&["C-y"]);
    t.wait_for("the word back", |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.trim_end().ends_with("and evt.class!=block"))
    });
    t.keys(&["Enter"]);
    let s = t.wait_for("the long filter applied", |s| matching(s) == Some(400));
    let (_, bar) = line_at(&s, "filter: ").unwrap();
    let bar = bar.trim_end();
    assert!(bar.starts_with("filter: proc.name=postgres and "), "{bar}");
    assert!(bar.ends_with(" and evt.class!=block") && bar.contains('…'), "{bar}");
    assert_eq!(report_matched(&cap, long), 400);
    t.keys(&["q"]);
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

/// A program named `liveprobe` that reads /dev/zero 200 times a second until killed.
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
const PROBE: &str = r#"
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
int main(void) {
    int fd = open("/dev/zero", O_RDONLY);
    char b[64];
    struct timespec pause = {0, 5000000};
    for (;;) {
        read(fd, b, sizeof b);
        nanosleep(&pause, 0);
    }
}
"#;

/// The status line's count of matching events and of all events: `(12, 3,456)` of
/// `│ 12/3,456 │`; `None` until the first scan has answered.
pub(crate) fn counts(screen: &str) -> Option<(u64, u64)> {
    let status = screen.lines().rev().find(|l| l.contains("│ drops"))?;
    let field = status.split('│').map(str::trim).find(|f| {
        f.contains('/')
            && f.chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '/' || c == '…')
    })?;
    let (a, b) = field.split_once('/')?;
    let n = |s: &str| s.replace(',', "").parse().ok();
    Some((n(a)?, n(b)?))
}

/// The viewer on a file a recorder is still writing: it says LIVE, the events of a workload
/// started afterwards appear within 2 s and keep coming; when the recorder is SIGKILLed it says
/// so and shows what was flushed (what `iocap report` reads from the file); `q` leaves the
/// terminal as it was.
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
#[test]
fn view_follows_a_recording_as_it_is_written() {
    let Some(_running) = crate::record::recording() else {
        return;
    };
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let probe = crate::record::build_c(dir.path(), "liveprobe", PROBE);
    let cap = dir.path().join("live.cap");
    let mut recorder = crate::util::iocap()
        .args(["record", "-w"])
        .arg(&cap)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The file gets its name once its header is on disk.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cap.exists() {
        assert!(Instant::now() < deadline, "the recorder made no file");
        std::thread::sleep(Duration::from_millis(20));
    }
    let state = dir.path().join("state");
    let t = start_sized("live", &cap, &state, "proc.name=liveprobe", (160, 30));
    let s = t.wait_for("the viewer on the live file", |s| {
        s.contains("● LIVE") && counts(s).is_some_and(|(n, _)| n == 0)
    });
    assert!(!s.contains("recovered"), "a file being written is not damaged: {s}");
    let mut workload = Command::new(&probe).spawn().unwrap();
    let started = Instant::now();
    let s = t.wait_for("the workload's events", |s| counts(s).is_some_and(|(n, _)| n > 0));
    let took = started.elapsed();
    eprintln!("live view: the workload's first events on screen after {took:?}");
    assert!(took < Duration::from_secs(2), "its events took {took:?} to appear: {s}");
    let (first, total) = counts(&s).unwrap();
    let s = t.wait_for("more of them", |s| {
        counts(s).is_some_and(|(n, all)| n > first && all > total)
    });
    assert!(s.contains("● LIVE"), "{s}");
    // The recorder killed: what it flushed stays on screen, and the status line says why no more comes.
    recorder.kill().unwrap();
    recorder.wait().unwrap();
    let _ = workload.kill();
    let _ = workload.wait();
    let s = t.wait_for("the recorder gone", |s| {
        !s.contains("● LIVE") && s.contains("unfinished file, recovered")
    });
    let (shown, _) = counts(&s).expect("the count stays");
    assert_eq!(shown, report_matched(&cap, "proc.name=liveprobe"), "{s}");
    quit_cleanly(&t);
}

/// With `-C`, the viewer moves on to the next file of the rotation once the recorder has
/// finished one, and follows it live.
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
#[test]
fn view_moves_on_to_the_next_file_of_a_rotation() {
    let Some(_running) = crate::record::recording() else {
        return;
    };
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("rot.cap");
    let mut recorder = crate::util::iocap()
        .args(["record", "--no-block", "-C", "2MB", "-w"])
        .arg(&cap)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cap.exists() {
        assert!(Instant::now() < deadline, "the recorder made no file");
        std::thread::sleep(Duration::from_millis(20));
    }
    let state = dir.path().join("state");
    let t = start_sized("rotation", &cap, &state, "", (160, 30));
    t.wait_for("the viewer on the first file", |s| s.contains("rot.cap ● LIVE"));
    let mut workload = Command::new("sh")
        .args([
            "-c",
            "while :; do dd if=/dev/zero of=/dev/null bs=1 count=20000 status=none; done",
        ])
        .spawn()
        .unwrap();
    // The status line names the file shown: a later one of the rotation, followed live.
    let later = |s: &str| {
        s.lines().rev().find(|l| l.contains("│ drops")).is_some_and(|l| {
            l.split("rot.cap")
                .nth(1)
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains("● LIVE"))
        })
    };
    let s = t.wait_for("a later file of the rotation", later);
    assert!(!s.contains("recovered"), "{s}");
    let _ = workload.kill();
    let _ = workload.wait();
    recorder.kill().unwrap();
    recorder.wait().unwrap();
    quit_cleanly(&t);
}

/// Latency of every `postgres` call in [`two_captures`]: 10 µs.
const PG_LATENCY: u64 = 10_000;
/// Latency of every `fio` call in [`two_captures`]: 1 ms.
const FIO_LATENCY: u64 = 1_000_000;

/// A capture at `dir/name` of `postgres` calls and `fio` calls, interleaved, one every `every`
/// ns from 1 s of boot time, wall clock `wall_offset` ns later than the testkit's.
fn procs_capture(dir: &Path, name: &str, (postgres, fio): (u64, u64), every: u64, wall_offset: i64) -> PathBuf {
    let path = dir.join(name);
    let start = 1_000_000_000;
    let mut meta = iocap_testkit::meta(start);
    meta.boot_to_wall_ns += wall_offset;
    let mut w = iocap_testkit::create(&path, &meta, 64, 1);
    let pg = iocap_testkit::add_proc(&mut w, 200, 1, b"postgres");
    let f = iocap_testkit::add_proc(&mut w, 100, 1, b"fio");
    let (mut left_pg, mut left_fio) = (postgres, fio);
    let mut ts = start;
    while left_pg + left_fio > 0 {
        // Alternately, while both have calls left.
        let (pid, proc, latency) = if left_pg > 0 && (left_fio == 0 || left_pg >= left_fio) {
            left_pg -= 1;
            (200, pg, PG_LATENCY)
        } else {
            left_fio -= 1;
            (100, f, FIO_LATENCY)
        };
        let e = iocap_format::Event {
            proc,
            ..iocap_format::Event::syscall(ts, latency, pid, pid, 0, 0)
        };
        w.push(&e).unwrap();
        ts += every;
    }
    w.finish(ts).unwrap();
    path
}

/// The comparison's two captures in `dir`: `a.cap`, 300 `postgres` calls and 100 `fio` over
/// 800 ms, and `b.cap`, 300 and 250 over 550 ms, an hour later by the wall clock (so compared
/// from each start; A's longer span widens the view past B's end).
fn two_captures(dir: &Path) -> (PathBuf, PathBuf) {
    let a = procs_capture(dir, "a.cap", (300, 100), 2_000_000, 0);
    let b = procs_capture(dir, "b.cap", (300, 250), 1_000_000, 3_600_000_000_000);
    (a, b)
}

/// The viewer comparing `a` with `b` under `filter`, in a window of `size`.
fn start_compare(test: &str, (a, b): (&Path, &Path), state: &Path, filter: &str, size: (u16, u16)) -> Tmux {
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' view '{}' '{}' {filter}",
        state.display(),
        env!("CARGO_BIN_EXE_iocap"),
        a.display(),
        b.display()
    );
    start_command(test, &cmd, size)
}

/// The histogram's title counts comparing, `(A, B)` of ` Latency, A 400 B 550 `; `None` until
/// both sides have answered.
fn hist_counts(screen: &str) -> Option<(u64, u64)> {
    let title = screen.split("Latency, A ").nth(1)?;
    let mut words = title.split_whitespace();
    let n = |w: Option<&str>| w?.replace(',', "").parse().ok();
    let a = n(words.next())?;
    (words.next()? == "B").then_some(())?;
    Some((a, n(words.next())?))
}

/// The breakdown's row for `value` comparing: A's count, B's and the change as shown (`+150`).
/// `None` until A's count is in (`…` before).
fn breakdown_row(screen: &str, value: &str) -> Option<(u64, u64, String)> {
    screen.lines().flat_map(|l| l.split('│')).find_map(|cell| {
        let words: Vec<&str> = cell.split_whitespace().collect();
        match words[..] {
            [v, a, b, delta] if v == value => Some((a.parse().ok()?, b.parse().ok()?, delta.to_owned())),
            _ => None,
        }
    })
}

/// The change the breakdown shows from `a` to `b` events: `+150`, `-300`, `0`.
fn delta(a: u64, b: u64) -> String {
    match b.cmp(&a) {
        std::cmp::Ordering::Equal => "0".into(),
        std::cmp::Ordering::Greater => format!("+{}", b - a),
        std::cmp::Ordering::Less => format!("-{}", a - b),
    }
}

/// `iocap report --json --by proc.name` of `cap` under `filter`: each process's count.
fn report_by_proc(cap: &Path, filter: &str) -> Vec<(String, u64)> {
    let (code, out, err) = crate::util::run(&["report", cap.to_str().unwrap(), filter, "--json", "--by", "proc.name"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    json["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["key"].as_str().unwrap().to_owned(), g["count"].as_u64().unwrap()))
        .collect()
}

/// The count `report` gives `name` among `groups` (0 when absent).
fn count_of(groups: &[(String, u64)], name: &str) -> u64 {
    groups.iter().find(|(k, _)| k == name).map_or(0, |g| g.1)
}

/// Every process either side counts under `filter` is a breakdown row with A's count, B's
/// (as `iocap report --by proc.name` counts them on `a` and `b`) and their difference; no other
/// process is.
fn breakdown_agrees(screen: &str, (a, b): (&Path, &Path), filter: &str) {
    let (by_a, by_b) = (report_by_proc(a, filter), report_by_proc(b, filter));
    for name in ["postgres", "fio"] {
        let (na, nb) = (count_of(&by_a, name), count_of(&by_b, name));
        match na + nb {
            0 => assert!(breakdown_row(screen, name).is_none(), "{name} has no row: {screen}"),
            _ => assert_eq!(
                breakdown_row(screen, name),
                Some((na, nb, delta(na, nb))),
                "{name} under `{filter}`: {screen}"
            ),
        }
    }
}

/// Both sides answered: the histogram's counts and every breakdown row's A count are in.
fn compared(screen: &str) -> bool {
    hist_counts(screen).is_some() && !screen.contains("…  ")
}

/// `iocap view a.cap b.cap` as a user sees it: the line under the filter bar names both files,
/// the histogram and the breakdown count each side as `iocap report` counts each file, before
/// and after a filter typed in the bar, the spectrogram shows B − A or (`b`) both; `q` leaves
/// the terminal as it was.
#[test]
fn view_compares_two_captures() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_captures(dir.path());
    let state = dir.path().join("state");
    let t = start_compare("compare", (&a, &b), &state, "", (100, 30));
    let s = t.wait_for("both sides' answers", |s| {
        compared(s) && breakdown_row(s, "fio").is_some()
    });
    let (_, line) = line_at(&s, " A ▀ ").expect("the comparison's line");
    assert_eq!(
        line.trim_end(),
        " A ▀ a.cap  B ▄ b.cap  one filter, aligned from each start"
    );
    assert!(
        s.contains("Spectrogram B−A ") && s.contains("B more +++++ A more -----"),
        "{s}"
    );
    // The known counts, and `iocap report`'s of each file: 400 in A, 550 in B.
    assert_eq!(hist_counts(&s), Some((400, 550)), "{s}");
    assert_eq!(hist_counts(&s), Some((report_matched(&a, ""), report_matched(&b, ""))));
    breakdown_agrees(&s, (&a, &b), "");
    assert_eq!(breakdown_row(&s, "fio"), Some((100, 250, "+150".into())), "{s}");
    assert_eq!(breakdown_row(&s, "postgres"), Some((300, 300, "0".into())), "{s}");
    // A figures line per side.
    for side in ["A p50 ", "B p50 "] {
        assert!(
            s.lines().flat_map(|l| l.split('│')).any(|c| c.starts_with(side)),
            "{side}: {s}"
        );
    }
    // The status line is B's.
    assert_eq!(counts(&s), Some((550, 550)), "{s}");

    // Side by side, then the difference again.
    t.keys(&["b"]);
    // (Once drawn whole: tmux may show a frame half written.)
    t.wait_for("the two plots, no difference map", |s| {
        s.contains("Spectrogram A | B ") && !s.contains("B−A") && !s.contains("B more")
    });

    // A filter typed in the bar is both sides'.
    t.keys(&["/"]);
    t.keys(&["-l", "proc.name=fio"]);
    t.keys(&["Enter"]);
    let fio = (report_matched(&a, "proc.name=fio"), report_matched(&b, "proc.name=fio"));
    assert_eq!(fio, (100, 250));
    let s = t.wait_for("the filtered counts", |s| {
        hist_counts(s) == Some(fio) && compared(s) && counts(s) == Some((250, 550))
    });
    assert!(s.contains("filter: proc.name=fio"), "{s}");
    breakdown_agrees(&s, (&a, &b), "proc.name=fio");
    assert!(s.contains("Spectrogram A | B "), "{s}");
    t.keys(&["b"]);
    t.wait_for("the difference again", |s| s.contains("Spectrogram B−A "));
    quit_cleanly(&t);
}

/// On one capture, `p` pins the filter in force as side A; the bar then edits side B alone:
/// A keeps postgres's count while B's becomes fio's, each process a row with 0 on the side that
/// has none of it. `p` again ends the comparison.
#[test]
fn view_pins_a_filter_as_side_a() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, b) = two_captures(dir.path());
    let state = dir.path().join("state");
    let t = start("pin", &b, &state, "proc.name=postgres");
    t.wait_for("the first answer", |s| counts(s) == Some((300, 550)));
    assert!(!t.screen().contains(" A ▀ "), "not comparing yet");
    t.keys(&["p"]);
    let s = t.wait_for("side A pinned", |s| compared(s) && s.contains(" A ▀ "));
    let (_, line) = line_at(&s, " A ▀ ").unwrap();
    assert_eq!(
        line.trim_end(),
        " A ▀ proc.name=postgres  B ▄ (filter bar)  one capture"
    );
    let postgres = report_matched(&b, "proc.name=postgres");
    assert_eq!(hist_counts(&s), Some((postgres, postgres)), "{s}");
    assert_eq!(breakdown_row(&s, "postgres"), Some((300, 300, "0".into())), "{s}");

    t.keys(&["/", "C-u"]);
    t.keys(&["-l", "proc.name=fio"]);
    t.keys(&["Enter"]);
    let fio = report_matched(&b, "proc.name=fio");
    let s = t.wait_for("B filtered alone", |s| {
        hist_counts(s) == Some((postgres, fio)) && compared(s) && breakdown_row(s, "postgres").is_some()
    });
    assert_eq!((postgres, fio), (300, 250));
    assert!(s.contains("filter: proc.name=fio"), "{s}");
    let (_, line) = line_at(&s, " A ▀ ").unwrap();
    assert!(line.starts_with(" A ▀ proc.name=postgres  B ▄ (filter bar)"), "{line}");
    assert_eq!(
        breakdown_row(&s, "postgres"),
        Some((postgres, 0, format!("-{postgres}"))),
        "{s}"
    );
    assert_eq!(breakdown_row(&s, "fio"), Some((0, fio, format!("+{fio}"))), "{s}");

    // `p` again: one side, under the bar's filter.
    t.keys(&["p"]);
    // (The status line says so in full once its `scanning…` has gone.)
    t.wait_for("the comparison ended", |s| {
        !s.contains(" A ▀ ") && !s.contains("B−A") && s.contains("Latency, 250") && s.contains("comparison ended")
    });
    quit_cleanly(&t);
}

/// The comparison at 80×24 and at 60×20: no panic, the comparison's line and the difference map
/// on screen, the counts right; side by side too.
#[test]
fn view_compares_in_small_windows() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_captures(dir.path());
    let state = dir.path().join("state");
    for (w, h) in [(80, 24), (60, 20)] {
        let t = start_compare(&format!("compare-{w}x{h}"), (&a, &b), &state, "", (w, h));
        let s = t.wait_for("both sides' answers", |s| {
            compared(s) && breakdown_row(s, "fio").is_some()
        });
        let (_, line) = line_at(&s, " A ▀ ").expect("the comparison's line");
        assert!(line.starts_with(" A ▀ a.cap  B ▄ b.cap  "), "{w}x{h}: {s}");
        assert!(s.contains("B−A"), "{w}x{h}: {s}");
        assert_eq!(hist_counts(&s), Some((400, 550)), "{w}x{h}: {s}");
        breakdown_agrees(&s, (&a, &b), "");
        t.keys(&["b"]);
        t.wait_for("the two plots", |s| s.contains("A | B"));
        quit_cleanly(&t);
    }
}

/// A ring of three files in `dir`, `r.cap`, `r.cap1`, `r.cap2`, each naming the next, 1 s of
/// boot time each: postgres's and fio's calls (`k + 2` hundred and `k + 1` hundred in file
/// `k`), the two entered in another order in each file, so their table ids differ.
fn ring_of_three(dir: &Path) -> Vec<PathBuf> {
    let names = ["r.cap", "r.cap1", "r.cap2"];
    let mut paths = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let start = 1_000_000_000 * (k as u64 + 1);
        let meta = iocap_format::Meta {
            next_file: names.get(k + 1).map(|n| n.to_string()),
            ..iocap_testkit::meta(start)
        };
        let path = dir.join(name);
        let mut w = iocap_testkit::create(&path, &meta, 64, 1);
        let (pg, fio) = if k == 1 {
            let fio = iocap_testkit::add_proc(&mut w, 100, 1, b"fio");
            (iocap_testkit::add_proc(&mut w, 200, 1, b"postgres"), fio)
        } else {
            (
                iocap_testkit::add_proc(&mut w, 200, 1, b"postgres"),
                iocap_testkit::add_proc(&mut w, 100, 1, b"fio"),
            )
        };
        let (n_pg, n_fio) = (100 * (k as u64 + 2), 100 * (k as u64 + 1));
        for i in 0..n_pg + n_fio {
            // fio's calls every other one until they are all made.
            let (pid, proc, latency) = if i % 2 == 1 && i / 2 < n_fio {
                (100, fio, FIO_LATENCY)
            } else {
                (200, pg, PG_LATENCY)
            };
            let e = iocap_format::Event {
                proc,
                ..iocap_format::Event::syscall(start + i * 1_000_000, latency, pid, pid, 0, 0)
            };
            w.push(&e).unwrap();
        }
        w.finish(start + 1_000_000_000).unwrap();
        paths.push(path);
    }
    paths
}

/// `report --ring --json` of the ring from `first` under `filter`: matched and total.
fn report_ring(first: &Path, filter: &str) -> (u64, u64) {
    let (code, out, err) = crate::util::run(&["report", first.to_str().unwrap(), "--ring", filter, "--json"]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    (json["matched"].as_u64().unwrap(), json["total"].as_u64().unwrap())
}

/// The viewer on `what` (a directory, or a file and `--ring`) with `filter`, in a 200×30
/// window: waits for the first answer and returns its counts and screen, then quits.
fn view_recording(test: &str, what: &str, state: &Path, filter: &str) -> ((u64, u64), String) {
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' view {what} {filter}",
        state.display(),
        env!("CARGO_BIN_EXE_iocap"),
    );
    let t = start_command(test, &cmd, (200, 30));
    let s = t.wait_for("the first answer", |s| counts(s).is_some() && !s.contains("scanning"));
    let got = counts(&s).unwrap();
    quit_cleanly(&t);
    (got, s)
}

/// `iocap view DIR/` and `iocap view FILE --ring` show a rotation's files as one recording,
/// counting what `report --ring` counts; a file missing from its middle is named on the status
/// line and the files after it are still shown; so is one that cannot be read.
#[test]
fn view_shows_a_recording_of_several_files_as_one() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ring = dir.path().join("ring");
    std::fs::create_dir(&ring).unwrap();
    let files = ring_of_three(&ring);
    let state = dir.path().join("state");
    let filter = "proc.name=postgres";
    let want = report_ring(&files[0], filter);
    assert_eq!(want, (900, 1500));
    let dir_arg = format!("'{}/'", ring.display());
    let ring_arg = format!("'{}' --ring", files[0].display());
    let (got, s) = view_recording("ring-dir", &dir_arg, &state, filter);
    assert_eq!(got, want, "{s}");
    assert!(s.contains("(3 files)"), "{s}");
    let (got, _) = view_recording("ring-follow", &ring_arg, &state, filter);
    assert_eq!(got, want);

    // The middle file gone: the first and last files' events, and the gap said.
    std::fs::remove_file(&files[1]).unwrap();
    let rest = (200 + 400, 300 + 700);
    for (test, arg) in [("gap-dir", &dir_arg), ("gap-follow", &ring_arg)] {
        let (got, s) = view_recording(test, arg, &state, filter);
        assert_eq!(got, rest, "{test}: {s}");
        assert!(s.contains("recording: r.cap1 is missing (after r.cap)"), "{test}: {s}");
    }
    // Back, but not a capture: said as unreadable.
    std::fs::write(&files[1], b"not a capture at all").unwrap();
    let (got, s) = view_recording("unreadable", &dir_arg, &state, filter);
    assert_eq!(got, rest, "{s}");
    assert!(
        s.contains("recording: r.cap1 could not be read (not an iocap capture"),
        "{s}"
    );
}

/// A capture of `files` distinct files (a tree walk's), each opened once by `find`.
fn many_files_capture(dir: &Path, files: u32) -> PathBuf {
    let path = dir.join("walk.cap");
    let start = 1_000_000_000;
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(start), 4096, 1);
    let p = iocap_testkit::add_proc(&mut w, 100, 1, b"find");
    for i in 0..files {
        let name = format!("/usr/share/doc/pkg{}/file{i:06}", i % 997);
        let f = iocap_testkit::add_file(&mut w, 100, 3, iocap_format::FdType::File, name.as_bytes(), 0);
        let e = iocap_format::Event {
            proc: p,
            fd: 3,
            file: f,
            bytes: 512,
            ..iocap_format::Event::syscall(start + u64::from(i) * 1_000, 800, 100, 100, 0, 512)
        };
        w.push(&e).unwrap();
    }
    w.finish(start + u64::from(files) * 1_000 + 1).unwrap();
    path
}

/// Seconds since `since` when the viewer in `t` has exited (within `limit`), else `None`.
fn exited_within(t: &Tmux, since: Instant, limit: Duration) -> Option<f64> {
    while since.elapsed() < limit + Duration::from_millis(500) {
        let out = t.cmd(&["display-message", "-p", "-t", "view", "#{pane_dead}"]);
        if String::from_utf8_lossy(&out.stdout).trim() == "1" {
            return Some(since.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

/// A 100 KB filter pasted into the filter bar on a capture of 100,000 files is one edit,
/// checked once (not compiled against the files at every character): the viewer still takes
/// `q` at once. Typed without bracketed paste (as a terminal without it sends a paste, a
/// keystroke a character), it is one edit a frame, and Ctrl-C behind it still quits at once.
#[test]
fn a_pasted_100_kb_filter_leaves_the_viewer_answering() {
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = many_files_capture(dir.path(), 100_000);
    let mut filter = String::new();
    let mut i = 0;
    while filter.len() < 100 << 10 {
        filter += &format!("fd.name=/usr/share/doc/pkg{}/file{i:06} or ", i % 997);
        i += 1;
    }
    filter += "latency>1s";
    let clip = dir.path().join("clip");
    std::fs::write(&clip, &filter).unwrap();

    let t = start_sized("paste", &cap, dir.path(), "", (120, 30));
    t.wait_for("the first frame", |s| s.contains("100,000/100,000"));
    t.keys(&["/"]);
    t.wait_for("the filter bar", |s| {
        s.lines().next().is_some_and(|l| l.starts_with('/'))
    });
    assert!(t.cmd(&["load-buffer", clip.to_str().unwrap()]).status.success());
    assert!(t.cmd(&["paste-buffer", "-p", "-t", "view"]).status.success());
    // The end of the paste is where the caret is, in view.
    t.wait_for("the pasted filter", |s| s.contains("latency>1s"));
    t.keys(&["Escape"]);
    // (Esc and q at once would read as Alt-q.)
    t.wait_for("the bar closed", |s| {
        !s.lines().next().is_some_and(|l| l.starts_with('/'))
    });
    let q = Instant::now();
    t.keys(&["q"]);
    let took = exited_within(&t, q, Duration::from_secs(1));
    assert!(took.is_some_and(|s| s < 1.0), "q took {took:?} s after the paste");

    // Without bracketed paste: 20 KB as keystrokes, then Ctrl-C right behind them.
    let t = start_sized("typed", &cap, dir.path(), "", (120, 30));
    t.wait_for("the first frame", |s| s.contains("100,000/100,000"));
    t.keys(&["/"]);
    t.wait_for("the filter bar", |s| {
        s.lines().next().is_some_and(|l| l.starts_with('/'))
    });
    // In pieces: tmux takes a command of a few KB at most.
    for piece in filter.as_bytes()[..20 << 10].chunks(2 << 10) {
        t.keys(&["-l", std::str::from_utf8(piece).unwrap()]);
    }
    let c = Instant::now();
    t.keys(&["C-c"]);
    let took = exited_within(&t, c, Duration::from_secs(5));
    assert!(
        took.is_some_and(|s| s < 5.0),
        "Ctrl-C took {took:?} s behind 20 KB of keystrokes"
    );
}

/// SIGTERM, SIGINT, SIGHUP or SIGQUIT to the viewer: it leaves the terminal as it found it (out
/// of raw mode, the alternate screen and mouse reporting), then exits.
#[test]
fn a_signal_ends_the_viewer_with_the_terminal_restored() {
    if !tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 2_000);
    for (sig, name) in [
        (libc::SIGTERM, "term"),
        (libc::SIGINT, "int"),
        (libc::SIGHUP, "hup"),
        (libc::SIGQUIT, "quit"),
    ] {
        let t = start(&format!("signal-{name}"), &cap, dir.path(), "");
        t.wait_for("the first frame", |s| s.contains("Spectrogram"));
        let out = t.cmd(&["display-message", "-p", "-t", "view", "#{pane_pid}"]);
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        // SAFETY: a signal to the viewer this test started.
        assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
        exited_cleanly(&t);
        // Mouse reporting off: tmux says whether the pane asked for it.
        let out = t.cmd(&[
            "display-message",
            "-p",
            "-t",
            "view",
            "#{mouse_any_flag}#{alternate_on}",
        ]);
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "00", "SIG{name}");
    }
}

/// An investigation as #46 found it hard, typed as a user would at 80×24 and 200×60 on a real
/// capture: the cursor starts on events (a first Enter does not empty the view); `>` reaches
/// the slowest column in one press and Enter filters to it; the breakdown's field is picked by
/// typing (`f`, `evt.ty`, Enter); the list by time reads in order, its END column the time it is
/// ordered by.
#[test]
fn view_an_investigation_in_a_few_keys() {
    let _running = crate::util::machine_shared();
    if !tmux_present() {
        return;
    }
    let cap = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mixed.cap");
    for (w, h) in [(80u16, 24u16), (200, 60)] {
        let dir = tempfile::tempdir().unwrap();
        let t = start_sized(&format!("inv{w}"), &cap, &dir.path().join("state"), "", (w, h));
        let s = t.wait_for("the first frame", |s| counts(s).is_some_and(|(m, _)| m == 46_200));
        // Enter at once: the cursor's cell holds events, so the view keeps some.
        t.keys(&["Enter"]);
        let s2 = t.wait_for("the first Enter's filter", |s| {
            s.contains("latency>=") && counts(s).is_some()
        });
        let (m, all) = counts(&s2).unwrap();
        assert!(m > 0 && m < all, "{m} of {all}:\n{s}\n{s2}");
        t.keys(&["u"]);
        // The exact picture, not the index's first one (`≈index`): a jump reads it.
        t.wait_for("undone", |s| {
            counts(s) == Some((46_200, 46_200)) && !s.contains("latency>=") && !s.contains("≈index")
        });
        // The slowest column in one key, Enter: the slowest events only.
        t.keys(&[">", "Enter"]);
        let s = t.wait_for("the slowest events", |s| s.contains("latency>=") && counts(s).is_some());
        let (slow, _) = counts(&s).unwrap();
        assert!(slow > 0 && slow < m.max(2), "{slow}:\n{s}");
        t.keys(&["u"]);
        // The exact picture, not the index's first one (`≈index`): a jump reads it.
        t.wait_for("undone", |s| {
            counts(s) == Some((46_200, 46_200)) && !s.contains("latency>=") && !s.contains("≈index")
        });
        // The breakdown's field by typing.
        t.keys(&["Tab", "f"]);
        t.wait_for("the picker", |s| s.contains("type to search"));
        t.keys(&["-l", "evt.ty"]);
        t.keys(&["Enter"]);
        t.wait_for("the evt.type breakdown", |s| {
            s.contains("By evt.type") && !s.contains("type to search")
        });
        // The list by time: its END times in order.
        t.keys(&["/"]);
        t.keys(&["-l", "latency>10ms"]);
        t.keys(&["Enter"]);
        let times = |s: &str| -> Vec<f64> {
            s.lines()
                .skip_while(|l| !l.contains("END"))
                .skip(1)
                .filter_map(|l| {
                    let w = l.trim_start_matches(['│', ' ']).split_whitespace().next()?;
                    w.strip_prefix('+')?.strip_suffix('s')?.parse().ok()
                })
                .collect()
        };
        let s = t.wait_for("the slow calls' rows", |s| {
            s.contains("filter: latency>10ms") && times(s).len() >= 3
        });
        let times = times(&s);
        assert!(times.windows(2).all(|p| p[0] <= p[1]), "{times:?}\n{s}");
        quit_cleanly(&t);
    }
}
