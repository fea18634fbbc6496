//! Memory bombs (fixtures/hostile/, made by crates/format/tests/format/bombs.rs): files of a
//! few KB declaring huge string tables or huge zstd columns. Every command that reads a capture
//! (`info`, `report`, `export`, and the viewer's scan, run as `iocap view` on a pseudo-terminal)
//! must stay under 128 MB of peak RSS on each, measured on the child with `wait4`.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// 128 MB, in the KiB `ru_maxrss` counts.
const MAX_RSS_KIB: u64 = 128_000_000 / 1024;

/// The crafted files (see fixtures/hostile/README.md).
const BOMBS: [&str; 8] = [
    "strings-frames.cap",
    "string-255mib.cap",
    "column-files.cap",
    "column-bomb.cap",
    "column-bombs.cap",
    "column-at-limit.cap",
    "dense-chunks.cap",
    "index-repeats.cap",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hostile")
        .join(name)
}

/// The binary under test; `IOCAP_HOSTILE_BIN` runs these tests against another build (an older
/// one, to see them fail).
fn iocap() -> Command {
    match std::env::var_os("IOCAP_HOSTILE_BIN") {
        Some(bin) => Command::new(bin),
        None => Command::new(env!("CARGO_BIN_EXE_iocap")),
    }
}

/// Wait for child `pid` (blocking, or not with `WNOHANG`): its wait status and resource usage
/// (peak RSS in `ru_maxrss`, KiB), or `None` while it still runs.
fn wait4(pid: u32, flags: i32) -> Option<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain data, valid all zero.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet reaped (std's `Child` is never waited on here);
    // status and ru are valid for writes.
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, flags, &mut ru) };
    assert!(r >= 0, "wait4: {}", std::io::Error::last_os_error());
    (r != 0).then_some((status, ru))
}

fn cpu_seconds(ru: &libc::rusage) -> f64 {
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

/// What one run cost and said.
struct Run {
    rss_kib: u64,
    cpu: f64,
    /// Exit code; `None` when killed by a signal (an abort on allocation).
    code: Option<i32>,
    stderr: String,
}

impl Run {
    /// Print what `cmd` on `name` cost, and check its peak RSS is within the bound.
    fn within_memory(&self, cmd: &str, name: &str) {
        eprintln!(
            "{name:22} {cmd:7} peak RSS {:6.1} MB, CPU {:.2} s, exit {:?}",
            self.rss_kib as f64 * 1024.0 / 1e6,
            self.cpu,
            self.code
        );
        assert!(
            self.rss_kib <= MAX_RSS_KIB,
            "{cmd} {name}: peak RSS {} KiB over 128 MB",
            self.rss_kib
        );
    }
}

/// Run `iocap args`, its output thrown away, and measure it.
fn measure(args: &[&std::ffi::OsStr]) -> Run {
    let mut err = tempfile::tempfile().unwrap();
    let child = iocap()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .expect("run iocap");
    let (status, ru) = wait4(child.id(), 0).expect("blocking wait");
    std::mem::forget(child);
    let mut stderr = String::new();
    std::io::Seek::rewind(&mut err).unwrap();
    err.read_to_string(&mut stderr).unwrap();
    Run {
        rss_kib: ru.ru_maxrss as u64,
        cpu: cpu_seconds(&ru),
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stderr,
    }
}

/// column-bomb.cap's chunk frame `n` times after its header, without an index (so the reader
/// finds them by scanning): the 2,000-chunk file that kept the viewer busy for over a minute.
fn many_column_bombs(dir: &Path, n: usize) -> PathBuf {
    let bytes = std::fs::read(fixture("column-bomb.cap")).unwrap();
    let frame_end = |at: usize| at + 16 + u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    let header_end = frame_end(16);
    let chunk = &bytes[header_end..frame_end(header_end)];
    assert_eq!(
        u16::from_le_bytes([chunk[4], chunk[5]]),
        6,
        "the second frame is the chunk"
    );
    let path = dir.join("bombs-2000.cap");
    let mut f = std::io::BufWriter::new(File::create(&path).unwrap());
    f.write_all(&bytes[..header_end]).unwrap();
    for _ in 0..n {
        f.write_all(chunk).unwrap();
    }
    f.flush().unwrap();
    path
}

fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = BOMBS.iter().map(|n| fixture(n)).collect();
    files.push(many_column_bombs(dir, 2000));
    files
}

#[test]
fn crafted_files_cost_info_report_and_export_little_memory() {
    let _running = crate::util::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.csv");
    let parquet = dir.path().join("out.parquet");
    for file in all_files(dir.path()) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let commands: [Vec<&std::ffi::OsStr>; 4] = [
            vec!["info".as_ref(), file.as_ref()],
            vec!["report".as_ref(), file.as_ref()],
            vec![
                "export".as_ref(),
                "--format".as_ref(),
                "csv".as_ref(),
                "-o".as_ref(),
                out.as_ref(),
                file.as_ref(),
            ],
            vec![
                "export".as_ref(),
                "--format".as_ref(),
                "parquet".as_ref(),
                "-o".as_ref(),
                parquet.as_ref(),
                file.as_ref(),
            ],
        ];
        for args in commands {
            let cmd = args[0].to_string_lossy();
            let run = measure(&args);
            run.within_memory(&cmd, &name);
            // An error, if any, is one line, and no command is killed (an abort on allocation).
            assert!(
                matches!(run.code, Some(0 | 1)),
                "{cmd} {name}: {:?} {}",
                run.code,
                run.stderr
            );
            assert!(
                run.stderr.trim_end().lines().count() <= 1,
                "{cmd} {name}: {}",
                run.stderr
            );
            // info opens the file only; a column bomb is what report and export read.
            let column_bomb = name.contains("bomb");
            if column_bomb && cmd != "info" {
                assert!(
                    run.stderr
                        .contains("column of a 262144-event chunk is 268435456 bytes, over the limit"),
                    "{cmd} {name}: {}",
                    run.stderr
                );
            } else {
                assert_eq!(run.code, Some(0), "{cmd} {name}: {}", run.stderr);
            }
            // What a file claims is bounded by its bytes: no export of billions of lines.
            if cmd == "export" && (name == "dense-chunks.cap" || name == "index-repeats.cap") {
                let size = std::fs::metadata(&out).map_or(0, |m| m.len());
                assert!(size < 1 << 20, "{name}: {size} bytes of CSV");
            }
        }
    }
}

/// A pseudo-terminal: the master side, and the path of the slave.
struct Pty {
    master: File,
    slave: PathBuf,
}

fn open_pty(rows: u16, cols: u16) -> Pty {
    // SAFETY: plain libc calls on a descriptor we own; ptsname_r writes into our buffer.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = File::from_raw_fd(fd);
        assert_eq!(libc::grantpt(fd), 0);
        assert_eq!(libc::unlockpt(fd), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0);
        let slave = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        let ws = libc::winsize {
            ws_row: rows,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        assert_eq!(libc::ioctl(fd, libc::TIOCSWINSZ, &ws), 0);
        Pty {
            master,
            slave: slave.into(),
        }
    }
}

const ROWS: usize = 40;
const COLS: usize = 300;

/// CPU time (s) child `pid` has used so far, from /proc; `None` once it is gone or a zombie.
fn cpu_so_far(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if fields.first() == Some(&"Z") {
        return None;
    }
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / hz)
}

/// Run `iocap view file` on a pseudo-terminal until it has been idle for two seconds, its scan
/// answered and its cache warmed, then quit it with `q`. Returns what it cost, and the screen
/// it left just before quitting.
/// The peak resident memory of process `pid`'s current image (VmHWM, KiB), while it runs.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn view(file: &Path, state: &Path) -> (Run, String) {
    let pty = open_pty(ROWS as u16, COLS as u16);
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&pty.slave)
        .unwrap();
    let mut cmd = iocap();
    cmd.arg("view")
        .arg(file)
        .env("XDG_STATE_HOME", state)
        .env("TERM", "xterm-256color")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
    // controlling terminal is the pseudo-terminal on stdin.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child: Child = cmd.spawn().expect("run iocap view");
    drop(cmd);
    let pid = child.id();
    std::mem::forget(child);
    let output = Arc::new(Mutex::new(Vec::new()));
    let (mut master, seen) = (pty.master.try_clone().unwrap(), Arc::clone(&output));
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 65536];
        // Ends with an error (EIO) once the viewer has exited and closed the terminal.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    // Wait for the answer on the status line ("matching/total" where "…/total" was), then for
    // the idle cache fill after it: until under half a CPU over two seconds (the UI thread of
    // a debug build redraws at a few percent), at most 30 s.
    let start = Instant::now();
    let mut samples: Vec<(Instant, f64)> = Vec::new();
    let (mut alive, mut answered) = (false, None);
    // The viewer's own peak (VmHWM of the image it execs): `pre_exec` makes std fork rather
    // than spawn, and a forked child's ru_maxrss counts the pages it shared with this test
    // process before exec (a CI run: 131 MB for a viewer that peaks at 13 MB, with the other
    // tests' memory in this process).
    let mut hwm_kib = 0;
    while start.elapsed() < Duration::from_secs(300) {
        let Some(cpu) = cpu_so_far(pid) else { break };
        alive = true;
        hwm_kib = hwm_kib.max(peak_rss_kib(pid).unwrap_or(0));
        let now = Instant::now();
        samples.push((now, cpu));
        if answered.is_none() {
            let text = screen(&String::from_utf8_lossy(&output.lock().unwrap()), ROWS, COLS);
            answered = has_answer(&text).then_some(now);
        }
        if let Some(at) = answered {
            let calm = samples
                .iter()
                .find(|(t, _)| now.duration_since(*t) <= Duration::from_secs(2))
                .is_some_and(|&(t, before)| now.duration_since(t) > Duration::from_millis(1900) && cpu - before < 1.0);
            if (calm && now.duration_since(at) > Duration::from_secs(2))
                || now.duration_since(at) > Duration::from_secs(30)
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let still_running = cpu_so_far(pid).is_some();
    hwm_kib = hwm_kib.max(peak_rss_kib(pid).unwrap_or(0));
    let drawn = output.lock().unwrap().len();
    let _ = (&pty.master).write_all(b"q");
    let deadline = Instant::now() + Duration::from_secs(10);
    let (status, ru) = loop {
        if let Some(done) = wait4(pid, libc::WNOHANG) {
            break done;
        }
        if Instant::now() > deadline {
            // SAFETY: pid is our child, not yet reaped.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            break wait4(pid, 0).expect("blocking wait");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(pty);
    let _ = reader.join();
    let text = screen(&String::from_utf8_lossy(&output.lock().unwrap()[..drawn]), ROWS, COLS);
    assert!(
        alive && still_running,
        "{}: the viewer exited before it was asked to: {text}",
        file.display()
    );
    let run = Run {
        rss_kib: if hwm_kib > 0 { hwm_kib } else { ru.ru_maxrss as u64 },
        cpu: cpu_seconds(&ru),
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stderr: String::new(),
    };
    (run, text)
}

/// Whether the viewer's status line shows an answer: "matching/total", not "…/total".
fn has_answer(screen: &str) -> bool {
    screen.lines().any(|l| {
        l.split(" │ ").nth(1).is_some_and(|m| {
            m.split('/')
                .next()
                .is_some_and(|a| !a.is_empty() && a.chars().all(|c| c.is_ascii_digit() || c == ','))
        })
    })
}

/// The screen a terminal stream leaves, `rows` lines of `cols` characters: printable
/// characters at the cursor, cursor moves (`CSI row;col H`, CR, LF), every other escape
/// sequence ignored. Enough for what the viewer draws (it moves, then writes changed cells).
fn screen(stream: &str, rows: usize, cols: usize) -> String {
    let mut grid = vec![vec![' '; cols]; rows];
    let (mut r, mut c) = (0usize, 0usize);
    let mut chars = stream.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\u{1b}' => {
                if chars.peek() != Some(&'[') {
                    chars.next();
                    continue;
                }
                chars.next();
                let mut params = String::new();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        if d == 'J' && params == "2" {
                            grid.iter_mut().for_each(|row| row.fill(' '));
                        }
                        if d == 'H' {
                            let mut it = params.split(';').map(|p| p.parse::<usize>().unwrap_or(1).max(1));
                            r = it.next().unwrap_or(1) - 1;
                            c = it.next().unwrap_or(1) - 1;
                        }
                        break;
                    }
                    params.push(d);
                }
            }
            '\r' => c = 0,
            '\n' => r += 1,
            ch if !ch.is_control() => {
                if let Some(cell) = grid.get_mut(r).and_then(|row| row.get_mut(c)) {
                    *cell = ch;
                }
                c += 1;
            }
            _ => {}
        }
    }
    grid.into_iter()
        .map(|row| row.into_iter().collect::<String>() + "\n")
        .collect()
}

#[test]
fn the_viewer_scans_crafted_files_in_little_memory() {
    let _running = crate::util::machine_shared();
    let dir = tempfile::tempdir().unwrap();
    for file in all_files(dir.path()) {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let (run, text) = view(&file, dir.path());
        run.within_memory("view", &name);
        assert_eq!(run.code, Some(0), "view {name} did not quit cleanly: {text}");
        if name.contains("bomb") {
            // The scan answered, leaving the column bombs out and saying so.
            assert!(text.contains("unreadable chunk"), "view {name}: {text}");
        }
        if name == "bombs-2000.cap" {
            // Refused before decompressing: 2,000 of them took over a minute of CPU before.
            assert!(run.cpu < 10.0, "view {name}: {:.1} s of CPU", run.cpu);
        }
    }
}

/// `iocap view a.cap B`: a second word that names something is a capture to compare, and what is
/// not one (missing, a device, a FIFO, a directory) is one line and exit 1 before the terminal is
/// taken, without blocking on the FIFO; a filter word is still a filter.
#[test]
fn a_second_capture_that_is_not_one_is_said_before_the_viewer_opens() {
    let dir = tempfile::tempdir().unwrap();
    let a = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dd-buffered.cap");
    let fifo = dir.path().join("fifo.cap");
    crate::util::mkfifo(&fifo);
    let missing = dir.path().join("missing.cap");
    let a = a.to_str().unwrap();
    for (b, says) in [
        (missing.to_str().unwrap(), "No such file"),
        ("/dev/null", "it is a device"),
        (fifo.to_str().unwrap(), "it is a FIFO"),
        (dir.path().to_str().unwrap(), "it is a directory"),
    ] {
        let (code, out, err) = crate::util::run(&["view", a, b]);
        assert_eq!(code, 1, "view {a} {b}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(b) && err.contains(says), "view {a} {b}: {err}");
    }
    // A filter after one capture is a filter: the viewer then wants a terminal.
    let (code, _, err) = crate::util::run(&["view", a, "proc.name=dd"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("view needs a terminal"), "{err}");
}

/// A finished capture of a few events whose header names `next` as the file its recording went
/// on in, at `dir/name`, starting at `start` (ns).
fn chained(dir: &Path, name: &str, next: &str, start: u64) -> PathBuf {
    let path = dir.join(name);
    let mut meta = iocap_testkit::meta(start);
    meta.next_file = Some(next.into());
    let mut w = iocap_testkit::create(&path, &meta, 100, 3);
    let p = iocap_testkit::add_proc(&mut w, 100, 1, b"cyc");
    for i in 0..5 {
        let e = iocap_format::Event {
            proc: p,
            ..iocap_format::Event::syscall(start + i * 1_000, 500, 100, 100, 0, 0)
        };
        w.push(&e).unwrap();
    }
    w.finish(start + 10_000).unwrap();
    path
}

/// Headers are data, not instructions: a rotation whose headers name their files in a loop
/// (t.cap → t.cap1 → t.cap2 → t.cap) is followed once around, not printed again and again
/// until descriptors run out; a next file that is a symlink (to /dev/zero, a FIFO, a file
/// root must not read) is refused before anything is opened through it.
#[test]
fn a_rotation_named_in_a_loop_or_through_a_link_is_followed_once_and_never_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let t = chained(dir.path(), "t.cap", "t.cap1", 1_000_000_000);
    chained(dir.path(), "t.cap1", "t.cap2", 2_000_000_000);
    chained(dir.path(), "t.cap2", "t.cap", 3_000_000_000);
    let out = iocap()
        .args(["events", "-f"])
        .arg(&t)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (text, err) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
    let rows = text.lines().filter(|l| l.contains(" cyc ")).count();
    assert_eq!(rows, 15, "each file's 5 events once: {text}");
    assert!(err.contains("which was read already: the rotation loops"), "{err}");

    // A next file that is a symlink: not followed, and not opened (a FIFO there would block).
    let link = tempfile::tempdir().unwrap();
    let first = chained(link.path(), "l.cap", "l.cap1", 1_000_000_000);
    let fifo = link.path().join("fifo");
    crate::util::mkfifo(&fifo);
    std::os::unix::fs::symlink(&fifo, link.path().join("l.cap1")).unwrap();
    let started = Instant::now();
    let out = iocap()
        .args(["events", "--ring"])
        .arg(&first)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    // Judged without being opened (lstat, then O_NOFOLLOW): refused as what it is.
    assert!(
        err.contains("l.cap1") && (err.contains("symbolic link") || err.contains("it is a FIFO, not a regular file")),
        "{err}"
    );
}

/// `iocap ARGS` with its limit of open files at `soft` (and the hard limit at `hard`).
fn with_files_limit(args: &[&std::ffi::OsStr], soft: u64, hard: u64) -> std::process::Output {
    let mut cmd = iocap();
    cmd.args(args).stdin(Stdio::null());
    // SAFETY: setrlimit only, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

/// A recording of more files than descriptors allowed: the soft limit is raised to the hard
/// one, and past the hard one every command fails saying so; none answers for the files it
/// could open as if they were the whole recording (`iostat -f` showed 43 s of 56 s and exited 0).
#[test]
fn more_files_than_descriptors_is_an_error_never_a_partial_answer() {
    let dir = tempfile::tempdir().unwrap();
    const N: u64 = 120;
    for i in 0..N {
        let name = if i == 0 {
            "r.cap".to_owned()
        } else {
            format!("r.cap{i}")
        };
        chained(dir.path(), &name, &format!("r.cap{}", i + 1), 1_000_000_000 * (i + 1));
    }
    let first = dir.path().join("r.cap");
    let ring = ["report", "--ring"].map(std::ffi::OsStr::new);
    let (ring, follow, all) = (
        [&ring[..], &[first.as_os_str()]].concat(),
        [std::ffi::OsStr::new("iostat"), "-f".as_ref(), first.as_os_str()],
        [std::ffi::OsStr::new("info"), dir.path().as_os_str()],
    );
    // A low soft limit under a high hard one: raised, and the answer is whole.
    let out = with_files_limit(&ring, 32, 4096);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains(&format!("of {} events", N * 5)), "{text}");
    // Past the hard limit: an error that says so, from every command.
    for args in [&ring[..], &follow[..], &all[..]] {
        let out = with_files_limit(args, 32, 32);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("Too many open files") && err.contains("ulimit -n"),
            "{args:?}: {err}"
        );
    }
}
