//! Captures read from standard input (`-`, as `ssh HOST sudo iocap record -w - | iocap view -`
//! brings them) and captures followed as they grow (`events -f`, `iostat -f`).

use std::io::Write;
use std::path::Path;
use std::process::{Child, Output, Stdio};

use iocap_format::Reader;

use crate::util::{iocap, synthetic_capture};

/// Run `iocap ARGS` with `input` on its standard input and `TMPDIR` set to `tmp`.
fn run_with_stdin(args: &[&str], input: &[u8], tmp: &Path) -> Output {
    let mut child = iocap()
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = input.to_vec();
    // A command may refuse before reading it all: a closed pipe is its answer, not ours.
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What each reading command prints for `FILE`, with `{}` where the capture goes.
const COMMANDS: &[&[&str]] = &[
    &["info", "{}"],
    &["info", "--json", "{}"],
    &["report", "{}", "proc.name=fio", "--by", "evt.type"],
    &["events", "{}", "latency>5us"],
    &["events", "--json", "{}", "--limit", "7"],
    &["iostat", "{}", "--interval", "200ms"],
    &["spectrogram", "{}", "--interval", "100ms", "--color", "never"],
    &["export", "{}", "--format", "csv", "-o", "-"],
    &["export", "{}", "evt.class=block", "--format", "jsonl", "-o", "-"],
];

fn with(args: &[&str], cap: &str) -> Vec<String> {
    args.iter().map(|a| a.replace("{}", cap)).collect()
}

#[test]
fn every_reading_command_reads_standard_input_as_it_reads_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for args in COMMANDS {
        let from_file = iocap().args(with(args, cap.to_str().unwrap())).output().unwrap();
        assert!(from_file.status.success(), "{args:?}: {}", text(&from_file.stderr));
        let piped = with(args, "-");
        let from_stdin = run_with_stdin(&piped.iter().map(String::as_str).collect::<Vec<_>>(), &bytes, &tmp);
        assert!(from_stdin.status.success(), "{piped:?}: {}", text(&from_stdin.stderr));
        assert_eq!(text(&from_stdin.stdout), text(&from_file.stdout), "{piped:?}");
        assert!(!from_stdin.stdout.is_empty(), "{piped:?}");
    }
    // Every copy was removed: nothing is left in $TMPDIR.
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    // The viewer refuses a pipe for its screen, as it does with a file, after reading the start.
    let out = run_with_stdin(&["view", "-"], &bytes, &tmp);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("needs a terminal"), "{}", text(&out.stderr));
}

#[test]
fn save_keeps_the_stream_as_it_came_and_goes_only_with_a_dash() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 300);
    let bytes = std::fs::read(&cap).unwrap();
    let kept = dir.path().join("kept.cap");
    // Something at the path is replaced by a new file, never written through.
    std::fs::write(&kept, b"old").unwrap();
    let out = run_with_stdin(&["info", "-", "--save", kept.to_str().unwrap()], &bytes, dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&kept).unwrap(), bytes);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600);
    let link = dir.path().join("link.cap");
    std::os::unix::fs::symlink(&cap, &link).unwrap();
    let out = run_with_stdin(&["info", "-", "--save", link.to_str().unwrap()], &bytes, dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("symbolic link"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read(&cap).unwrap(), bytes, "not written through");
    let (code, _, err) = crate::util::run(&["info", cap.to_str().unwrap(), "--save", kept.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("goes with `-`"), "{err}");
}

#[test]
fn a_stream_that_is_empty_or_no_capture_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_with_stdin(&["report", "-"], b"", dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("no capture was piped in"),
        "{}",
        text(&out.stderr)
    );
    let out = run_with_stdin(&["events", "-f", "-"], b"Hello, this is a text file\n", dir.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not an iocap capture"),
        "{}",
        text(&out.stderr)
    );
}

/// `yes | iocap report -`: bytes that are not a capture are refused as soon as they show, by
/// the commands that read the stream whole too, not copied into $TMPDIR until it is full. The
/// feed is endless: only iocap's refusal ends it.
#[test]
fn an_endless_stream_of_garbage_is_refused_at_once_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        &["report", "-"][..],
        &["info", "-"],
        &["export", "-", "--format", "csv", "-o", "-"],
    ] {
        let mut child = spawn_piped(cmd, dir.path());
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || {
            let line = b"y\n".repeat(32 << 10);
            let mut fed = 0usize;
            // Bounded, so that a failing test ends: 1 GiB.
            while fed < 1 << 30 && stdin.write_all(&line).is_ok() {
                fed += line.len();
            }
            fed
        });
        let out = child.wait_with_output().unwrap();
        let fed = feeder.join().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(err.contains("not an iocap capture"), "{cmd:?}: {err}");
        assert!(fed < 64 << 20, "{cmd:?} read {fed} bytes of garbage before refusing it");
    }
}

/// A copy of standard input that cannot go on (its $TMPDIR full) is an error, with a non-zero
/// exit, for every command that reads the stream whole: never an answer for the part that fit,
/// presented as the whole. (Root: a tmpfs of 200 KiB.)
#[test]
fn a_copy_cut_by_a_full_disk_is_an_error_not_a_short_answer() {
    if let Some(why) = crate::util::root_skip_reason() {
        eprintln!("a_copy_cut_by_a_full_disk: {why}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let st = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=200k", "tmpfs"])
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(st.success());
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(self.0).status();
        }
    }
    let _mounted = Unmount(dir.path());
    let cap = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/fio-randread.cap")).unwrap();
    assert!(cap.len() > 400 << 10);
    for cmd in [
        &["report", "-"][..],
        &["info", "-"],
        &["iostat", "-"],
        &["export", "-", "--format", "csv", "-o", "-"],
    ] {
        let out = run_with_stdin(cmd, &cap, dir.path());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(err.contains("No space left on device"), "{cmd:?}: {err}");
        assert!(out.stdout.is_empty(), "{cmd:?}: nothing answered for a cut capture");
    }
    // A follower prints what came, then says why no more will, and fails.
    let out = run_with_stdin(&["events", "-f", "-"], &cap, dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("No space left on device") && err.contains("nothing more will come"),
        "{err}"
    );
}

/// A stream cut inside a chunk (a recorder or connection killed) keeps every whole chunk
/// before the cut, and says what it lost.
#[test]
fn a_stream_cut_inside_a_chunk_keeps_every_whole_chunk_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    let r = Reader::open(&cap).unwrap();
    assert_eq!(r.chunks().len(), 10);
    let cut = r.chunks()[6].offset as usize + 40;
    let out = run_with_stdin(&["info", "--json", "-"], &bytes[..cut], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["events"], 600, "{v}");
    assert_eq!(
        (&v["clean"], &v["live"]),
        (&serde_json::json!(false), &serde_json::json!(false))
    );
    assert!(v["recovery"].as_str().unwrap().contains("cut short"), "{v}");
    let out = run_with_stdin(&["events", "-"], &bytes[..cut], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let (_, all, _) = crate::util::run(&["events", cap.to_str().unwrap()]);
    let kept: Vec<&str> = all.lines().take(601).collect();
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), kept);
}

/// Start `iocap ARGS` with its standard input a pipe of ours, its output captured.
fn spawn_piped(args: &[&str], tmp: &Path) -> Child {
    iocap()
        .args(args)
        .env("TMPDIR", tmp)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Fill `buf` with lines from `from` until `ok` holds of what has come (or panic after 20 s).
fn read_until(from: &mut impl std::io::BufRead, buf: &mut String, what: &str, ok: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ok(buf) {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}: {buf}"
        );
        let mut line = String::new();
        if from.read_line(&mut line).unwrap() == 0 {
            panic!("output ended before {what}: {buf}");
        }
        buf.push_str(&line);
    }
}

#[test]
fn events_f_prints_a_stream_s_events_as_they_come_and_ends_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    let r = Reader::open(&cap).unwrap();
    let (_, all, _) = crate::util::run(&["events", cap.to_str().unwrap()]);
    let all: Vec<&str> = all.lines().collect();
    let mut child = spawn_piped(&["events", "-f", "-"], dir.path());
    let mut stdin = child.stdin.take().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    // Up to the middle of the fourth chunk: the first three chunks' events, and no more.
    stdin.write_all(&bytes[..r.chunks()[3].offset as usize + 40]).unwrap();
    stdin.flush().unwrap();
    let mut got = String::new();
    read_until(&mut out, &mut got, "three chunks", |s| s.lines().count() >= 301);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(child.try_wait().unwrap().is_none(), "it waits for more");
    // The rest: every event once, in file order, and the end of the stream ends it.
    stdin.write_all(&bytes[r.chunks()[3].offset as usize + 40..]).unwrap();
    drop(stdin);
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    got.push_str(&rest);
    assert!(status.success(), "{status}");
    assert_eq!(got.lines().collect::<Vec<_>>(), all);
}

#[test]
fn events_f_on_a_stream_cut_short_prints_what_came_and_says_it_ended_unfinished() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    let r = Reader::open(&cap).unwrap();
    let cut = r.chunks()[5].offset as usize + 40;
    let out = run_with_stdin(&["events", "-f", "-", "proc.name=fio"], &bytes[..cut], dir.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("standard input ended before the capture was finished"),
        "{err}"
    );
    let (_, all, _) = crate::util::run(&["events", cap.to_str().unwrap(), "proc.name=fio"]);
    // The first five chunks' matches: fio's events among their 500.
    let five: Vec<&str> = all
        .lines()
        .take_while(|l| {
            l.split_whitespace()
                .next()
                .unwrap()
                .parse::<f64>()
                .map_or(true, |t| t < 0.5)
        })
        .collect();
    assert!(five.len() > 200, "{}", five.len());
    assert_eq!(text(&out.stdout).lines().collect::<Vec<_>>(), five);
}

/// `iostat -f` prints each interval once the recording's clock is past it (here, with every
/// event there but the trailer, as time passes), then the whole capture once it is finished:
/// the same text as `iostat` on the finished capture.
#[test]
fn iostat_f_prints_intervals_as_they_end_and_the_whole_once_finished() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    for json in [false, true] {
        let mut args = vec!["iostat", "-f", "-", "--interval", "200ms"];
        if json {
            args.push("--json");
        }
        let mut child = spawn_piped(&args, dir.path());
        let mut stdin = child.stdin.take().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        // All but the 16-byte trailer: still being written, as far as a reader can tell.
        stdin.write_all(&bytes[..bytes.len() - 16]).unwrap();
        stdin.flush().unwrap();
        let mut got = String::new();
        let intervals = |s: &str| {
            s.lines()
                .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()) || l.contains("\"start_s\""))
                .count()
        };
        read_until(&mut out, &mut got, "the five intervals", |s| intervals(s) == 5);
        assert!(!got.contains("whole"), "not finished yet: {got}");
        assert!(child.try_wait().unwrap().is_none());
        stdin.write_all(&bytes[bytes.len() - 16..]).unwrap();
        drop(stdin);
        let status = child.wait().unwrap();
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        got.push_str(&rest);
        assert!(status.success(), "{status}");
        let mut offline = vec!["iostat", cap.to_str().unwrap(), "--interval", "200ms"];
        if json {
            offline.push("--json");
        }
        let (code, whole, err) = crate::util::run(&offline);
        assert_eq!(code, 0, "{err}");
        if json {
            let lines: Vec<serde_json::Value> = got.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            let mut want: serde_json::Value = serde_json::from_str(&whole).unwrap();
            assert_eq!(serde_json::Value::from(lines[..5].to_vec()), want["intervals"]);
            want.as_object_mut().unwrap().remove("intervals");
            assert_eq!(lines[5], want);
            assert_eq!(lines.len(), 6);
        } else {
            assert_eq!(got, whole);
        }
    }
}

/// `iocap view -` in a terminal (tmux) on a stream that comes in two parts: LIVE with the first
/// part's events, then every event once the rest has come (no longer live); its copy of the
/// stream is gone once it quits, and the terminal is left as it was.
#[test]
fn view_reads_a_stream_as_it_comes_and_leaves_nothing_behind() {
    let _running = crate::util::machine_shared();
    if !crate::view::tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let r = Reader::open(&cap).unwrap();
    let (first, rest) = (dir.path().join("first"), dir.path().join("rest"));
    let bytes = std::fs::read(&cap).unwrap();
    let cut = r.chunks()[3].offset as usize + 40;
    std::fs::write(&first, &bytes[..cut]).unwrap();
    std::fs::write(&rest, &bytes[cut..]).unwrap();
    let (tmp, state) = (dir.path().join("tmp"), dir.path().join("state"));
    std::fs::create_dir(&tmp).unwrap();
    // The rest comes once `go` exists.
    let go = dir.path().join("go");
    let cmd = format!(
        "(cat '{}'; while [ ! -e '{}' ]; do sleep 0.05; done; cat '{}') | env TMPDIR='{}' XDG_STATE_HOME='{}' '{}' view -",
        first.display(),
        go.display(),
        rest.display(),
        tmp.display(),
        state.display(),
        env!("CARGO_BIN_EXE_iocap"),
    );
    let t = crate::view::start_command("stdin", &cmd, (120, 30));
    let s = t.wait_for("the first part", |s| {
        s.contains("standard input ● LIVE") && crate::view::counts(s) == Some((300, 300))
    });
    assert!(!s.contains("recovered"), "{s}");
    std::fs::write(&go, b"").unwrap();
    let s = t.wait_for("the rest", |s| crate::view::counts(s) == Some((1000, 1000)));
    assert!(!s.contains("LIVE"), "finished: {s}");
    crate::view::quit_cleanly(&t);
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A file something other than the recorder writes (`ssh HOST sudo iocap record -w - >
/// trace.cap`) has no recorder's lock: `view -f` follows it all the same, until its end comes.
#[test]
fn view_f_follows_a_file_no_recorder_holds_until_its_end() {
    let _running = crate::util::machine_shared();
    if !crate::view::tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    let cut = Reader::open(&cap).unwrap().chunks()[3].offset as usize + 40;
    let growing = dir.path().join("growing.cap");
    std::fs::write(&growing, &bytes[..cut]).unwrap();
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' view -f '{}'",
        dir.path().join("state").display(),
        env!("CARGO_BIN_EXE_iocap"),
        growing.display(),
    );
    let t = crate::view::start_command("view-f", &cmd, (120, 30));
    let s = t.wait_for("the first part, live", |s| {
        s.contains("growing.cap ● LIVE") && crate::view::counts(s) == Some((300, 300))
    });
    assert!(!s.contains("recovered"), "{s}");
    let mut f = std::fs::OpenOptions::new().append(true).open(&growing).unwrap();
    f.write_all(&bytes[cut..]).unwrap();
    drop(f);
    let s = t.wait_for("the rest", |s| crate::view::counts(s) == Some((1000, 1000)));
    assert!(!s.contains("LIVE"), "finished: {s}");
    crate::view::quit_cleanly(&t);
}

/// Ctrl-C (SIGINT) ends a follower quietly, with what it printed so far.
#[test]
fn ctrl_c_ends_a_follower_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let bytes = std::fs::read(&cap).unwrap();
    for args in [&["events", "-f", "-"][..], &["iostat", "-f", "-"][..]] {
        let mut child = spawn_piped(args, dir.path());
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(&bytes[..bytes.len() / 2]).unwrap();
        stdin.flush().unwrap();
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut got = String::new();
        // Its header or first interval: it is following.
        read_until(&mut out, &mut got, "a first line", |s| !s.is_empty());
        // SAFETY: kill has no memory effects; the pid is our child's, not yet waited for.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        assert_eq!(text(&out.stderr), "", "{args:?}");
        drop(stdin);
    }
}

/// A file being followed that another is renamed over: the follower says the path names
/// another file now, once, and goes on with the file it was reading.
#[test]
fn a_followed_file_renamed_over_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.cap");
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(1_000_000_000), 100, 1);
    let p = iocap_testkit::add_proc(&mut w, 100, 1, b"live");
    for i in 0..10 {
        let e = iocap_format::Event {
            proc: p,
            ..iocap_format::Event::syscall(1_000_000_000 + i * 1_000, 500, 100, 100, 0, 0)
        };
        w.push(&e).unwrap();
    }
    w.flush().unwrap();
    // A recorder that holds it: the follower reads it as live.
    let held = std::fs::File::open(&path).unwrap();
    iocap_format::lock_for_writing(&held).unwrap();
    let mut child = spawn_piped(&["events", "-f", path.to_str().unwrap()], dir.path());
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut seen = String::new();
    read_until(&mut out, &mut seen, "the first events", |s| s.lines().count() >= 5);
    let other = dir.path().join("other.cap");
    std::fs::copy(synthetic_capture(dir.path(), 10), &other).unwrap();
    std::fs::rename(&other, &path).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    // SAFETY: a signal to the follower this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(
        err.matches("now names another file, or none: still following the file it named")
            .count(),
        1,
        "{err}"
    );
    drop((w, held));
}
