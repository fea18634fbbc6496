//! Recordings streamed to standard output (`record -w -`) and followed while they are written
//! (`events -f`, `iostat -f`), for real, with BPF (root only; elsewhere they print why and pass).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use iocap_format::{Class, Liveness, Reader};

use crate::record::{build_c, flooding, recording};
use crate::util::{iocap, LoopDev};

/// `burster FILE N BURSTS PAUSE_MS`: BURSTS bursts of exactly N 64-byte pwrites to FILE, PAUSE_MS
/// apart.
const BURSTER: &str = r#"
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = atoi(argv[2]), bursts = atoi(argv[3]), pause_ms = atoi(argv[4]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char b[64] = {0};
    for (int k = 0; k < bursts; k++) {
        if (k > 0) {
            struct timespec t = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
            nanosleep(&t, 0);
        }
        for (int i = 0; i < n; i++) pwrite(fd, b, sizeof b, (off_t)i * 64);
    }
    close(fd);
    return 0;
}
"#;

/// The burster's command line, writing into `dir`.
fn burster(dir: &Path, n: u32, bursts: u32, pause_ms: u32) -> String {
    let bin = build_c(dir, "burster", BURSTER);
    format!(
        "{} {} {n} {bursts} {pause_ms}",
        bin.display(),
        dir.join("data.bin").display()
    )
}

/// Events of the process named `burster` in `cap`, counted by syscall number; asserts the
/// capture is finished and lost nothing.
fn burster_types(cap: &Path) -> BTreeMap<u32, u64> {
    let r = Reader::open(cap).unwrap();
    assert!(r.is_clean(), "{}: {:?}", cap.display(), r.recovery());
    assert_eq!(r.drops(), 0, "{}", cap.display());
    let t = r.tables();
    let mut types = BTreeMap::new();
    for e in r.events() {
        let e = e.unwrap();
        let name = t.proc(e.proc).map(|p| t.string(p.name));
        if e.class == Class::Syscall && name == Some("burster") {
            *types.entry(e.nr).or_default() += 1;
        }
    }
    types
}

/// Read all of `from` into `to`, `chunk` bytes at a time, sleeping `pause` before each read.
fn drain(mut from: impl Read, to: &Path, chunk: usize, pause: Duration) {
    let mut out = std::fs::File::create(to).unwrap();
    let mut buf = vec![0u8; chunk];
    loop {
        std::thread::sleep(pause);
        match from.read(&mut buf).unwrap() {
            0 => return,
            n => out.write_all(&buf[..n]).unwrap(),
        }
    }
}

fn record_stdout(args: &[&str]) -> Child {
    iocap()
        .args(["record", "-w", "-"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stderr_of(child: &mut Child) -> String {
    let mut s = String::new();
    child.stderr.take().unwrap().read_to_string(&mut s).unwrap();
    s
}

/// The same workload recorded into a file, through a pipe, and through a pipe read slowly (a
/// writer blocked on a full pipe): the same events of every type, exactly.
#[test]
fn a_stream_through_a_pipe_or_a_slow_reader_holds_what_a_file_holds() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cmd = burster(dir.path(), 2000, 3, 200);
    let file = dir.path().join("file.cap");
    let out = iocap()
        .args(["record", "--no-block", "-w"])
        .arg(&file)
        .args(["-c", &cmd])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let want = burster_types(&file);
    assert_eq!(
        want[&iocap_format::syscalls::number("x86_64", "pwrite64").unwrap()],
        6000
    );
    for (name, chunk, pause) in [
        ("pipe", 64 << 10, Duration::ZERO),
        ("slow", 512, Duration::from_millis(1)),
    ] {
        let mut rec = record_stdout(&["--no-block", "-c", &cmd]);
        let cap = dir.path().join(format!("{name}.cap"));
        drain(rec.stdout.take().unwrap(), &cap, chunk, pause);
        let err = stderr_of(&mut rec);
        assert!(rec.wait().unwrap().success(), "{name}: {err}");
        assert!(
            crate::record::without_refusals(&err).starts_with("recording to standard output"),
            "{name}: {err}"
        );
        assert!(err.contains("iocap: wrote"), "{name}: {err}");
        assert_eq!(burster_types(&cap), want, "{name}");
    }
}

/// A recorder killed while it streams leaves, in the file its pipe was copied to, every whole
/// chunk it sent: the file reads as recovered and every chunk it lists decodes.
#[test]
fn a_stream_killed_mid_chunk_keeps_every_whole_chunk() {
    // A flood of syscalls: alone among the time-sensitive tests.
    let Some(_running) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mut rec = record_stdout(&[]);
    let cap = dir.path().join("killed.cap");
    let stdout = rec.stdout.take().unwrap();
    let copy = {
        let cap = cap.clone();
        std::thread::spawn(move || drain(stdout, &cap, 4096, Duration::ZERO))
    };
    let mut load = Command::new("sh")
        .args([
            "-c",
            "while :; do dd if=/dev/zero of=/dev/null bs=1 count=20000 status=none; done",
        ])
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    rec.kill().unwrap();
    rec.wait().unwrap();
    let _ = load.kill();
    let _ = load.wait();
    copy.join().unwrap();
    let r = Reader::open(&cap).unwrap();
    assert_eq!(r.liveness(), Liveness::Recovered);
    assert!(!r.is_clean());
    assert!(r.recovery().unwrap().contains("did not finish"), "{:?}", r.recovery());
    assert!(r.chunks().len() >= 3, "a few seconds of flushes: {}", r.chunks().len());
    let mut decoded = 0u64;
    for e in r.events() {
        e.expect("every listed chunk decodes");
        decoded += 1;
    }
    assert_eq!(decoded, r.event_count());
    // And read back through a pipe, as a stream cut short.
    let mut child = iocap()
        .args(["info", "--json", "-"])
        .stdin(Stdio::from(std::fs::File::open(&cap).unwrap()))
        .output()
        .unwrap();
    assert!(child.status.success(), "{}", String::from_utf8_lossy(&child.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::mem::take(&mut child.stdout)).unwrap();
    assert_eq!(v["events"], r.event_count());
}

/// `record -w - > FILE`: the shell's file is locked as a capture file of ours is, so it reads
/// as being recorded while the recorder writes it, and as finished after.
#[test]
fn a_stream_redirected_to_a_file_reads_as_live_then_finished() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("redirected.cap");
    let cmd = burster(dir.path(), 100, 10, 300);
    let mut rec = iocap()
        .args(["record", "--no-block", "-w", "-", "-c", &cmd])
        .stdout(Stdio::from(std::fs::File::create(&cap).unwrap()))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let r = Reader::open(&cap).unwrap();
    assert_eq!((r.liveness(), r.recovery()), (Liveness::Live, None));
    assert!(rec.wait().unwrap().success());
    let r = Reader::open(&cap).unwrap();
    assert!(r.is_clean(), "{:?}", r.recovery());
    assert!(r.event_count() > 0);
}

/// Lines read from `from` by a thread, each with when it came.
fn lines_as_they_come(from: impl Read + Send + 'static) -> std::sync::mpsc::Receiver<(Instant, String)> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(from).lines() {
            let Ok(line) = line else { return };
            if tx.send((Instant::now(), line)).is_err() {
                return;
            }
        }
    });
    rx
}

/// Start `record ARGS -w cap` and wait until the capture opens (its header is on disk).
fn start_recording(cap: &Path, args: &[&str]) -> Child {
    let rec = iocap()
        .args(["record", "-w"])
        .arg(cap)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Reader::open(cap).is_err() {
        assert!(Instant::now() < deadline, "no capture at {}", cap.display());
        std::thread::sleep(Duration::from_millis(20));
    }
    rec
}

/// Wait for `child` to exit (at most 30 s); when it did.
fn exited(child: &mut Child) -> (Instant, std::process::ExitStatus) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (Instant::now(), st);
        }
        assert!(Instant::now() < deadline, "still running");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn events_f_prints_events_while_they_are_recorded_and_ends_with_the_recording() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cmd = burster(dir.path(), 300, 3, 1000);
    let cap = dir.path().join("followed.cap");
    let mut rec = start_recording(&cap, &["--no-block", "-c", &cmd]);
    let filter = ["proc.name=burster", "and", "evt.type=pwrite64"];
    let mut follower = iocap()
        .args(["events", "-f"])
        .arg(&cap)
        .args(filter)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_as_they_come(follower.stdout.take().unwrap());
    // The first burst's 300 pwrites (and the header line), while the recorder still runs.
    let mut got = Vec::new();
    while got.len() < 301 {
        let (_, l) = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the first burst's events");
        got.push(l);
    }
    assert!(rec.try_wait().unwrap().is_none(), "the recording is still going");
    let (recorded, st) = exited(&mut rec);
    assert!(st.success());
    let (followed, st) = exited(&mut follower);
    assert!(st.success(), "{}", stderr_of(&mut follower));
    assert!(
        followed.duration_since(recorded) < Duration::from_secs(2),
        "ended with the recording: {:?} after",
        followed.duration_since(recorded)
    );
    got.extend(lines.iter().map(|(_, l)| l));
    let (code, whole, err) = crate::util::run(&[&["events", cap.to_str().unwrap()][..], &filter[..]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(got, whole.lines().collect::<Vec<_>>());
    assert_eq!(got.len(), 901);
}

/// One interval's rows of `iostat` text (each after its TIME, the interval's start), by that
/// time; the whole capture's rows under `whole capture`.
fn intervals(text: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut whole = false;
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with("whole capture") {
            whole = true;
            out.insert(t.to_owned(), Vec::new());
        } else if t.is_empty() || t.starts_with("TIME") || t.starts_with("Device") {
            continue;
        } else if whole {
            if let Some((_, v)) = out.iter_mut().find(|(k, _)| k.starts_with("whole capture")) {
                v.push(t.to_owned());
            }
        } else {
            let (time, row) = t.split_once(' ').unwrap_or((t, ""));
            let rows = out.entry(time.to_owned()).or_default();
            if !row.trim().is_empty() {
                rows.push(row.trim().to_owned());
            }
        }
    }
    out
}

#[test]
fn iostat_f_prints_intervals_while_they_are_recorded_as_iostat_counts_them_after() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img).unwrap().set_len(64 << 20).unwrap();
    let dev = LoopDev::attach(&img);
    dev.direct_io();
    let work = format!(
        "for i in 1 2 3 4 5 6; do dd if=/dev/zero of={} bs=4k count=100 oflag=direct status=none; sleep 0.7; done",
        dev.path
    );
    let cap: PathBuf = dir.path().join("disk.cap");
    let mut rec = start_recording(&cap, &["--no-syscalls", "-c", &work]);
    let filter = format!("blk.dev={}", dev.name());
    let mut follower = iocap()
        .args(["iostat", "-f"])
        .arg(&cap)
        .args(["--interval", "500ms", &filter])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_as_they_come(follower.stdout.take().unwrap());
    let (first, line) = lines.recv_timeout(Duration::from_secs(20)).expect("an interval");
    let (recorded, st) = exited(&mut rec);
    assert!(st.success());
    assert!(first < recorded, "an interval was printed while recording");
    let (_, st) = exited(&mut follower);
    assert!(st.success(), "{}", stderr_of(&mut follower));
    let live: Vec<String> = std::iter::once(line).chain(lines.iter().map(|(_, l)| l)).collect();
    let (code, whole, err) = crate::util::run(&["iostat", cap.to_str().unwrap(), "--interval", "500ms", &filter]);
    assert_eq!(code, 0, "{err}");
    let (live, whole) = (intervals(&live.join("\n")), intervals(&whole));
    assert_eq!(live.keys().collect::<Vec<_>>(), whole.keys().collect::<Vec<_>>());
    for (span, rows) in &live {
        // Before the disk's first request the live interval has no row, the finished one a row of zeros.
        if rows.is_empty() {
            assert!(whole[span]
                .iter()
                .all(|r| r.split_whitespace().skip(1).all(|x| x.parse::<f64>() == Ok(0.0))));
        } else {
            assert_eq!(rows, &whole[span], "{span}");
        }
    }
    let busy = live
        .values()
        .filter(|rows| rows.iter().any(|r| r.starts_with(dev.name())))
        .count();
    assert!(busy >= 4, "intervals with the disk's figures: {live:?}");
}

/// `-w -` with rotation, with `--view` or onto a terminal, and `--view` off a terminal, are
/// refused before anything is loaded (no root needed to be told).
#[test]
fn a_stream_or_a_view_is_refused_where_it_cannot_work() {
    let (code, _, err) = crate::util::run(&["record", "-w", "-", "-C", "1MB"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("rotation (-C, -W) needs files"), "{err}");
    let (code, _, err) = crate::util::run(&["record", "-w", "-", "--view"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a stream is viewed where it arrives"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("x.cap");
    let (code, _, err) = crate::util::run(&["record", "-w", cap.to_str().unwrap(), "--view"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--view needs a terminal"), "{err}");
    assert!(!cap.exists());
    // A terminal: script(1)'s pseudo-terminal.
    let cmd = format!("{} record -w -", env!("CARGO_BIN_EXE_iocap"));
    let Ok(out) = Command::new("script").args(["-qec", &cmd, "/dev/null"]).output() else {
        eprintln!("script(1) is not installed: the terminal case is skipped");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("standard output, which is a terminal"), "{text}");
}

/// `record --view` in a terminal (tmux): the viewer follows the file as it is recorded; `q`
/// stops the recording, which finishes the file, and leaves the terminal as it was, with the
/// recorder's last line on it.
#[test]
fn record_view_shows_the_recording_and_quitting_finishes_the_file() {
    // A flood of syscalls: alone among the time-sensitive tests.
    let Some(_running) = flooding() else { return };
    if !crate::view::tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("viewed.cap");
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' record --no-block -w '{}' --view proc.name=dd",
        dir.path().join("state").display(),
        env!("CARGO_BIN_EXE_iocap"),
        cap.display()
    );
    let t = crate::view::start_command("record-view", &cmd, (160, 30));
    t.wait_for("the viewer on the recording", |s| s.contains("viewed.cap ● LIVE"));
    let mut load = Command::new("sh")
        .args([
            "-c",
            "while :; do dd if=/dev/zero of=/dev/null bs=1 count=2000 status=none; done",
        ])
        .spawn()
        .unwrap();
    let s = t.wait_for("dd's events", |s| crate::view::counts(s).is_some_and(|(n, _)| n > 1000));
    assert!(s.contains("● LIVE"), "{s}");
    assert!(
        !s.contains("events/s"),
        "no status line of the recorder over the viewer: {s}"
    );
    let _ = load.kill();
    let _ = load.wait();
    crate::view::quit_cleanly(&t);
    let s = t.screen();
    assert!(s.contains("iocap: wrote "), "{s}");
    let r = Reader::open(&cap).unwrap();
    assert!(r.is_clean(), "{:?}", r.recovery());
    assert_eq!(r.liveness(), Liveness::Finished);
    let wrote: u64 = s
        .split("iocap: wrote ")
        .nth(1)
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert_eq!(r.event_count(), wrote);
}

/// With `-c`, the command's output never reaches the viewer's screen, the recording ends with
/// the command while the viewer stays (showing it finished); a SIGTERM closes the viewer,
/// restoring the terminal.
#[test]
fn record_view_with_a_command_keeps_its_output_off_the_screen_and_sigterm_closes_it() {
    let Some(_running) = recording() else { return };
    if !crate::view::tmux_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cmd.cap");
    let work = "for i in 1 2 3; do echo SCRIBBLE; echo SCRAWL >&2; sleep 0.3; done";
    let cmd = format!(
        "env XDG_STATE_HOME='{}' '{}' record --no-block -w '{}' --view -c '{work}'",
        dir.path().join("state").display(),
        env!("CARGO_BIN_EXE_iocap"),
        cap.display()
    );
    let t = crate::view::start_command("record-view-c", &cmd, (160, 30));
    let s = t.wait_for("the recording finished", |s| s.contains("the recording finished"));
    assert!(!s.contains("SCRIBBLE") && !s.contains("SCRAWL"), "{s}");
    let r = Reader::open(&cap).unwrap();
    assert!(r.is_clean(), "finished while still viewed: {:?}", r.recovery());
    // The viewer stays until told: a SIGTERM to iocap closes it.
    let out = t.cmd(&["display-message", "-p", "-t", "view", "#{pane_pid}"]);
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    crate::view::exited_cleanly(&t);
    assert!(t.screen().contains("iocap: wrote "), "{}", t.screen());
}

/// A recorder killed while followed: `events -f` and `iostat -f` print what it wrote, say it
/// stopped without finishing the file, and exit 1.
#[test]
fn followers_say_when_the_recorder_dies() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("dies.cap");
    // A workload of its own, filtered in the kernel: the machine is not traced for it.
    let mut rec = start_recording(&cap, &["--no-block", "proc.name=burster"]);
    let mut work = Command::new("sh")
        .args(["-c", &burster(dir.path(), 100, 30, 200)])
        .spawn()
        .unwrap();
    let followers: Vec<Child> = [&["events", "-f"][..], &["iostat", "-f", "--interval", "200ms"][..]]
        .iter()
        .map(|args| {
            iocap()
                .args(*args)
                .arg(&cap)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(3000));
    rec.kill().unwrap();
    rec.wait().unwrap();
    let _ = work.kill();
    let _ = work.wait();
    for f in followers {
        let out = f.wait_with_output().unwrap();
        let (stdout, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("stopped without finishing it"), "{err}");
        assert!(stdout.lines().count() > 3, "it printed what came: {stdout}");
    }
}

/// With `-C`, the followers go on in each next file of the rotation, as the viewer does:
/// `events -f` prints what `events` prints of every file, in order, and ends with the
/// recording; `iostat -f` counts its intervals from the first file's start to the last's end.
#[test]
fn followers_go_on_through_a_rotation() {
    // A flood of syscalls: alone among the time-sensitive tests.
    let Some(_running) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("rot.cap");
    let mut rec = start_recording(&cap, &["--no-block", "-C", "300KB", "-d", "5s"]);
    let follow = |args: &[&str]| {
        iocap()
            .args(args)
            .arg(&cap)
            .arg("proc.name=dd")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let events = follow(&["events", "-f"]);
    let iostat = follow(&["iostat", "-f", "--interval", "500ms"]);
    let mut load = Command::new("sh")
        .args([
            "-c",
            "while :; do dd if=/dev/zero of=/dev/null bs=1 count=20000 status=none; done",
        ])
        .spawn()
        .unwrap();
    let (_, st) = exited(&mut rec);
    let _ = load.kill();
    let _ = load.wait();
    assert!(st.success());
    let (events, iostat) = (events.wait_with_output().unwrap(), iostat.wait_with_output().unwrap());
    for out in [&events, &iostat] {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let mut files: Vec<(u32, PathBuf)> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let n = name.strip_prefix("rot.cap")?;
            Some((if n.is_empty() { 0 } else { n.parse().ok()? }, dir.path().join(&name)))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 3, "rotated: {files:?}");
    // Times count from each file's start in `events FILE`, from the first file's in `events -f`:
    // the rest of each line is the same.
    let untimed = |text: &str| -> Vec<String> {
        text.lines()
            .skip(1)
            .map(|l| {
                l.trim_start()
                    .split_once(' ')
                    .map_or("", |(_, rest)| rest.trim_start())
                    .to_owned()
            })
            .collect()
    };
    let mut want = Vec::new();
    for (_, f) in &files {
        let (code, text, err) = crate::util::run(&["events", f.to_str().unwrap(), "proc.name=dd"]);
        assert_eq!(code, 0, "{err}");
        want.extend(untimed(&text));
    }
    let got = untimed(&String::from_utf8_lossy(&events.stdout));
    assert!(want.len() > 1000, "{}", want.len());
    assert_eq!(got.len(), want.len());
    assert!(got == want, "events -f printed the files' events in order");
    // The intervals run on through the files: to about the recording's 5 s (each line begins
    // with its interval's start, 500 ms long).
    let text = String::from_utf8_lossy(&iostat.stdout);
    let last = text
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.strip_suffix('s')?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    assert!(last + 0.5 > 4.5, "{last}: {text}");
}
