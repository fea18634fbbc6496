//! `iocap record`: the recorder's command line (Linux, root). Options become a [`Request`],
//! which `iocap_record::plan` turns into the kernel's settings with the filter's pushdown; this
//! module creates the output files ([`crate::output`]), names a rotation's files
//! ([`rotation`]), starts the `-c` command, handles signals and draws the status line.
//!
//! The order matters for the error promises: the filter is parsed and planned, privileges are
//! checked and the BPF programs are loaded before the output file is created, so a failure
//! leaves no file behind.

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use iocap_filter::Filter;
use iocap_format::{Meta, Reader, Writer, WriterOptions};
use iocap_record::{rotation, Output, Progress, Recorder, Request, Rotate};

use crate::output::FileId;
use crate::{output, signals};
use crate::{say, UsageError};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The capture file to write (a new file, 0600; an existing file is replaced, a symlink,
    /// device or FIFO refused); `-` writes it to standard output, to a pipe or ssh (`iocap
    /// view -` reads it), not a terminal.
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    file: PathBuf,
    /// Stop after this long: 10s, 500ms, 2m.
    #[arg(short = 'd', long, value_parser = parse_duration, value_name = "TIME")]
    duration: Option<Duration>,
    /// Trace only this process (repeatable); decided in the kernel.
    #[arg(short = 'p', long = "pid", value_name = "PID")]
    pids: Vec<u32>,
    /// Trace only the processes of this cgroup and those below it (a container's, a
    /// service's), decided in the kernel: a directory under /sys/fs/cgroup, or a path from its
    /// root (`/system.slice/docker-<id>.scope`, as `proc.cgroup` shows it). With -p, both.
    #[arg(long, value_name = "PATH")]
    cgroup: Option<PathBuf>,
    /// Run this shell command, trace it and its descendants, stop when it exits.
    #[arg(short = 'c', long, value_name = "CMD")]
    command: Option<String>,
    /// Do not record syscalls.
    #[arg(long)]
    no_syscalls: bool,
    /// Do not record block requests.
    #[arg(long)]
    no_block: bool,
    /// Do not time calls off the CPU (run queue, blocked, who woke them): saves the work the
    /// kernel does at every context switch.
    #[arg(long)]
    no_anatomy: bool,
    /// Keep the stacks of calls at least this slow (bare `--stacks`: 1ms): the user stack the
    /// call returned to and the kernel stack of its longest sleep, named on this host as the
    /// recording runs (`iocap flame` draws them). Costs the slow calls only: taking a stack
    /// on every context switch would double the cost of a switch.
    #[arg(long, value_parser = parse_duration, value_name = "TIME", num_args = 0..=1,
          require_equals = true, default_missing_value = "1ms")]
    stacks: Option<Duration>,
    /// Keep only operations at least this slow (decided in the kernel): 1ms, 200us.
    #[arg(long, value_parser = parse_duration, value_name = "TIME")]
    min_latency: Option<Duration>,
    /// Run the recorder's own threads at this nice value (-20 to 19; the traced processes and
    /// a -c command keep theirs). Negative: when the traced work saturates every CPU, the
    /// recorder still gets the CPU it needs, so the work slows rather than events being dropped.
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-20..=19))]
    nice: Option<i32>,
    /// Ring buffer size in MiB (a power of two), shared out among the CPUs' rings (each at
    /// least 256 KiB); where the kernel cannot preempt the programs, each CPU's share is split
    /// in three: its ring and its two lanes for the syscalls' records.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    ring_mib: u32,
    /// Start a new file when the current one reaches SIZE: 100MB, 1GiB, 500KiB; a plain number
    /// is millions of bytes, as for tcpdump. Files are FILE, FILE1, FILE2, ...
    #[arg(short = 'C', long = "file-size", value_parser = parse_size, value_name = "SIZE")]
    file_size: Option<u64>,
    /// With -C: keep at most COUNT files, removing the oldest (a ring).
    #[arg(short = 'W', long = "file-count", value_name = "COUNT", requires = "file_size")]
    file_count: Option<u32>,
    /// Open the viewer on the file as it is recorded; quitting it stops the recording, which
    /// finishes the file. A -c command's output is discarded meanwhile.
    #[arg(long)]
    view: bool,
    /// Name the host in the capture's header (`host` in `info`, the Parquet export's column
    /// and partition) rather than by the kernel's host name: what tells the captures of a
    /// fleet's dataset apart when machines share a name (containers, clones).
    #[arg(long, value_name = "NAME")]
    host: Option<String>,
    /// Keep only matching events (the viewer's filter language); pids, syscalls and a latency
    /// floor are decided in the kernel: `proc.name=fio and latency>1ms`.
    filter: Vec<String>,
}

/// `100MB`, `1GiB`, `500KiB`, `4096B`; a plain number is millions of bytes (tcpdump's `-C`).
fn parse_size(s: &str) -> Result<u64, String> {
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale: u64 = match unit {
        "" | "M" | "MB" => 1_000_000,
        "B" => 1,
        "K" | "KB" => 1_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "G" | "GB" => 1_000_000_000,
        "GiB" => 1 << 30,
        _ => {
            return Err(format!(
                "unknown size unit `{unit}`: use B, KB, KiB, MB, MiB, GB or GiB"
            ))
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size, like 100MB or 1GiB"))?;
    let bytes = n * scale as f64;
    if !(1.0..=1e18).contains(&bytes) {
        return Err(format!("`{s}` is out of range"));
    }
    Ok(bytes as u64)
}

/// `10s`, `500ms`, `250us`, `100ns`, `2m`, or plain seconds: the same parser as every `--interval`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    iocap_analysis::units::parse_duration(s).map(Duration::from_nanos)
}

/// The capture's write buffer: small, as what sits in it is lost if the recorder is killed
/// (a chunk frame larger than it goes straight through).
const OUT_BUFFER: usize = 64 << 10;

/// A new capture file at `path` (0600, owned by us; what was there is replaced by a rename),
/// with the header on disk before it gets its name: a recorder killed at any point leaves
/// either nothing or a file that opens. The caller has [`output::check_capture_target`]ed the path; whatever
/// is planted there since is replaced by the rename, never followed or written through.
fn create_capture(path: &Path, meta: &Meta) -> anyhow::Result<(Writer<BufWriter<File>>, FileId)> {
    let (file, mut new) = create_locked(path)?;
    let ident = FileId::of(&file).with_context(|| format!("{}", path.display()))?;
    let writer = Writer::with_encoder(
        BufWriter::with_capacity(OUT_BUFFER, file),
        meta,
        WriterOptions::default(),
    )
    .and_then(|mut w| w.flush().map(|()| w))
    .with_context(|| format!("writing {}", path.display()))?;
    new.publish()?;
    Ok((writer, ident))
}

/// The capture written to standard output (`-w -`): a pipe, a socket (ssh), or a file the
/// shell opened (`> trace.cap`), which is then locked for writing as a capture file of ours
/// is, for readers to follow it while it grows. The writer only appends (it never seeks nor
/// asks its output's size), and a stream ends as a file does, with its index and trailer.
fn stream_capture(meta: &Meta) -> anyhow::Result<Writer<BufWriter<File>>> {
    if crate::std_streams::stdout_closed() {
        bail!("{STDOUT} is closed: there is nothing to write the capture to");
    }
    let out = std::io::stdout().as_fd().try_clone_to_owned().context(STDOUT)?;
    let out = File::from(out);
    if out.metadata().is_ok_and(|m| m.is_file()) {
        // `> trace.cap` made it with the shell's umask (0644): a capture is 0600, as iocap
        // makes its own files.
        use std::os::unix::fs::PermissionsExt;
        out.set_permissions(std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("making {STDOUT} (a file) private to its owner"))?;
        let _ = iocap_format::lock_for_writing(&out);
    }
    Writer::with_encoder(
        BufWriter::with_capacity(OUT_BUFFER, out),
        meta,
        WriterOptions::default(),
    )
    .and_then(|mut w| w.flush().map(|()| w))
    .context("writing to standard output")
}

/// Standard output, as messages name it.
const STDOUT: &str = "standard output";

/// A new file for a capture, as [`output::create`] makes it, locked for writing before it has a
/// name: readers see it live until the recorder closes it, whether it finishes the file or dies
/// ([`iocap_format::lock_for_writing`]). The lock is a courtesy to readers: a filesystem
/// without locks records all the same, only not seen live.
fn create_locked(path: &Path) -> anyhow::Result<(File, output::NewFile)> {
    let (file, new) = output::create(path)?;
    let _ = iocap_format::lock_for_writing(&file);
    Ok((file, new))
}

/// Where a `-c` command's standard streams go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ChildIo {
    /// Ours.
    Inherit,
    /// Standard output is the capture's stream (`-w -`): its output goes to standard error.
    OutToStderr,
    /// The viewer has the terminal (`--view`): none, not even the keyboard.
    Discard,
}

/// Start CMD held before it runs, so that its pid is in the kernel's filter before it runs a
/// single instruction of the command: a shell waits for the release pipe to close, then execs
/// `sh -c CMD` (same pid). The wait cannot be in `pre_exec`: `spawn` waits for the exec.
fn spawn_held(cmd: &str, io: ChildIo) -> anyhow::Result<(Child, File)> {
    let out = match io {
        ChildIo::Inherit | ChildIo::Discard => None,
        ChildIo::OutToStderr => Some(
            std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .context("standard error")?,
        ),
    };
    let mut fds = [0; 2];
    // SAFETY: fds is a valid array of two ints for pipe2 to fill.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    let (rd, wr) = (fds[0], fds[1]);
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg("read _ <&3; exec 3<&-; exec /bin/sh -c \"$0\"")
        .arg(cmd);
    // SAFETY: between fork and exec the child only calls dup2, which is async-signal-safe.
    unsafe {
        c.pre_exec(move || {
            if libc::dup2(rd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    if let Some(err) = out {
        c.stdout(err);
    }
    if io == ChildIo::Discard {
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    }
    let child = c.spawn().with_context(|| format!("cannot run `{cmd}`"));
    // SAFETY: rd is ours and the child has its own copy (fd 3).
    unsafe { libc::close(rd) };
    // SAFETY: wr is a valid fd we own from here on.
    let release = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(wr) };
    Ok((child?, release))
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let src = args.filter.join(" ");
    let filter = Filter::parse(&src).map_err(|e| UsageError(format!("bad filter: {}", e.render(&src))))?;
    if args.file_count == Some(0) || args.file_size == Some(0) {
        return Err(UsageError("-C and -W must be at least 1".into()).into());
    }
    if !args.ring_mib.is_power_of_two() || args.ring_mib > 2048 {
        return Err(UsageError("--ring-mib must be a power of two up to 2048".into()).into());
    }
    let to_stdout = args.file == Path::new("-");
    if to_stdout && args.file_size.is_some() {
        return Err(UsageError("-w - writes one stream: rotation (-C, -W) needs files of its own".into()).into());
    }
    if to_stdout && std::io::stdout().is_terminal() {
        return Err(UsageError(
            "-w - writes the capture to standard output, which is a terminal here: pipe it \
             (| iocap view -, through ssh) or redirect it (> trace.cap)"
                .into(),
        )
        .into());
    }
    if args.view && to_stdout {
        return Err(UsageError(
            "--view watches the file being recorded: a stream is viewed where it arrives (| iocap view -)".into(),
        )
        .into());
    }
    if args.view && !std::io::stdout().is_terminal() {
        return Err(UsageError("--view needs a terminal".into()).into());
    }
    let target = if to_stdout {
        STDOUT.to_string()
    } else {
        args.file.display().to_string()
    };
    let request = Request {
        pids: args.pids.clone(),
        command: args.command.is_some(),
        syscalls: !args.no_syscalls,
        block: !args.no_block,
        anatomy: !args.no_anatomy,
        stacks_ns: args.stacks.map(|d| d.as_nanos() as u64),
        min_latency_ns: args.min_latency.map_or(0, |d| d.as_nanos() as u64),
        ring_bytes: args.ring_mib << 20,
        scope: match &args.cgroup {
            Some(path) => Some(iocap_record::cgroup_scope(path).map_err(UsageError)?),
            None => None,
        },
    };
    let cfg = iocap_record::plan(&request, &filter).map_err(|e| UsageError(e.to_string()))?;
    iocap_record::check_privileges()?;
    // Refused now rather than after the probes are attached.
    if !to_stdout {
        output::check_capture_target(&args.file)?;
    } else if crate::std_streams::stdout_closed() {
        bail!("{STDOUT} is closed: there is nothing to write the capture to");
    }
    let mut recorder = Recorder::start(&cfg)?;
    if let Some(nice) = args.nice {
        recorder.set_nice(nice)?;
    }
    // Said once here, and kept in the header for `iocap info`.
    for m in recorder.missing_said() {
        say(format_args!("iocap: {m}"));
    }
    let mut meta = iocap_record::meta(
        std::env::args().collect(),
        env!("CARGO_PKG_VERSION"),
        (!filter.is_all()).then(|| filter.to_string()),
    );
    if let Some(host) = &args.host {
        // Escaped as the kernel's name is.
        meta.host = iocap_format::escape::escape(host.as_bytes());
    }
    // Each file of a rotation names the next, for readers following the recording.
    meta.next_file = args.file_size.and_then(|_| rotation::next_name(&args.file, 0));
    // The origin of every time in the capture: before the first event, not after the attach.
    meta.start_ts = recorder.start_ns();
    meta.missing = recorder.missing().to_vec();
    meta.kept = recorder.kept();
    meta.stacks_min_ns = request.stacks_ns;
    let recording = format!(
        "recording to {target} (syscalls: {}, block: {}); Ctrl-C stops",
        if cfg.syscalls { "on" } else { "off" },
        if recorder.records_block() { "on" } else { "off" }
    );
    let (writer, first) = if to_stdout {
        // Said before the stream starts: its reader (a viewer) may share this terminal.
        say(format_args!("{recording}"));
        (stream_capture(&meta)?, None)
    } else {
        let (w, ident) = create_capture(&args.file, &meta)?;
        (w, Some((args.file.clone(), ident)))
    };
    // The files of this recording that still exist, to count what is readable after an error
    // and to check at the end that each is still where it was made.
    let files: Arc<Mutex<Vec<(PathBuf, FileId)>>> = Arc::new(Mutex::new(first.into_iter().collect()));
    let rotate = args.file_size.map(|max_bytes| {
        let (base, keep, files) = (args.file.clone(), args.file_count, Arc::clone(&files));
        Rotate {
            max_bytes,
            base: args.file.clone(),
            open: Box::new(move |n: u32| {
                if let Some(old) = rotation::expired(&base, n, keep) {
                    files
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .retain(|(p, _)| *p != old);
                    match std::fs::remove_file(&old) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                        _ => {}
                    }
                }
                let path = rotation::path(&base, n);
                let new_file = || -> anyhow::Result<(File, FileId)> {
                    output::check_capture_target(&path)?;
                    let (file, mut new) = create_locked(&path)?;
                    let ident = FileId::of(&file)?;
                    new.publish()?;
                    Ok((file, ident))
                };
                let file = new_file().map(|(f, ident)| {
                    files
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((path.clone(), ident));
                    f
                });
                file.map(|f| BufWriter::with_capacity(OUT_BUFFER, f))
                    .map_err(|e| std::io::Error::other(format!("{e:#}")))
            }) as Box<dyn FnMut(u32) -> std::io::Result<BufWriter<File>> + Send>,
        }
    });
    let out = Output {
        meta,
        options: WriterOptions::default(),
        filter: (!filter.is_all()).then_some(filter),
        rotate,
    };
    // With the viewer, a closed terminal stops the recording too, which then finishes the file.
    signals::install(args.view);
    // The command is held until the writer has read /proc and takes events as they come.
    let (mut child, mut release) = match &args.command {
        Some(cmd) => {
            let io = match (to_stdout, args.view) {
                (true, _) => ChildIo::OutToStderr,
                (_, true) => ChildIo::Discard,
                _ => ChildIo::Inherit,
            };
            let (child, release) = spawn_held(cmd, io)?;
            recorder.add_pid(child.id())?;
            (Some(child), Some(release))
        }
        None => (None, None),
    };
    if !to_stdout {
        say(format_args!("{recording}"));
    }
    // After the line above, which the viewer's screen then covers until it quits.
    let viewing = match args.view {
        true => Some(Viewing::start(&args.file)?),
        false => None,
    };
    let started = Instant::now();
    let duration = args.duration;
    let child_done = std::cell::Cell::new(false);
    let stop = || {
        if signals::stop_requested() || duration.is_some_and(|d| started.elapsed() >= d) {
            return true;
        }
        // Set by the progress callback, which polls the child ~4 times a second.
        child_done.get() || viewing.as_ref().is_some_and(Viewing::ended)
    };
    // Not over a stream's reader, which may be drawing on the same terminal (`| iocap view -`).
    let tty = std::io::stderr().is_terminal() && !to_stdout && !args.view;
    let mut last = (Instant::now(), 0u64);
    let mut progress = |p: &Progress| {
        if p.ready {
            // Closing the pipe lets the held command run.
            release.take();
        }
        if let Some(c) = child.as_mut() {
            if matches!(c.try_wait(), Ok(Some(_))) {
                child_done.set(true);
            }
        }
        if !tty {
            return;
        }
        let dt = last.0.elapsed().as_secs_f64().max(1e-3);
        let rate = (p.events.saturating_sub(last.1)) as f64 / dt;
        last = (Instant::now(), p.events);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[K{} events  {:.0}/s  {} drops  {:.1} MB  {:.1}s",
            p.events,
            rate,
            p.drops,
            p.bytes as f64 / 1e6,
            p.elapsed.as_secs_f64()
        );
        let _ = err.flush();
    };
    let result = recorder.run(writer, out, &stop, &mut progress);
    // The file is finished (or what it holds is said below): the viewer shows it until quit.
    let viewed = viewing.map_or(Ok(()), Viewing::finish);
    if tty {
        say(format_args!(""));
    }
    if let Some(mut c) = child {
        if !child_done.get() {
            // Stopped by a signal or -d: we started the command, so we stop it too.
            let _ = c.kill();
        }
        let _ = c.wait();
    }
    let s = match result {
        Ok(s) => s,
        Err(e @ iocap_record::Error::DiskFull) => {
            // What a reader gets back, counted by reading it back: the writer's own count
            // would include what was still in its buffers.
            let files: Vec<PathBuf> = files
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .map(|(p, _)| p.clone())
                .collect();
            let readable: u64 = files
                .iter()
                .filter_map(|p| iocap_format::Reader::open(p).ok())
                .map(|r| r.event_count())
                .sum();
            let names = match files.len() {
                1 => files[0].display().to_string(),
                n => format!("{} and {} more files", files[0].display(), n - 1),
            };
            bail!("{e}; {readable} events are kept and readable in {names}");
        }
        Err(iocap_record::Error::Write(iocap_format::Error::Io(e)))
            if to_stdout && e.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            // `| iocap view -` quit, `| head -c`: the way a stream's recording is stopped.
            say(format_args!(
                "iocap: {STDOUT} was closed (its reader went away): recording stopped"
            ));
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    // Written, but where no one will find it: say so, and fail, rather than name a file that
    // is not there (or is another recorder's).
    let kept = files.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let gone: Vec<String> = kept
        .iter()
        .filter(|(p, ident)| FileId::at(p) != Some(*ident))
        .map(|(p, _)| p.display().to_string())
        .collect();
    if !gone.is_empty() {
        bail!(
            "{} removed or replaced by another program while iocap recorded into it: what iocap \
             wrote there is lost",
            gone.join(", ")
        );
    }
    let files = match s.files {
        1 => String::new(),
        n => format!(" and {} more files", n - 1),
    };
    // The files' own sizes, as `ls` says them (the writer's count leaves out what it wrote
    // outside its frames' accounting, its index and trailer); a stream's count is the writer's.
    let on_disk: u64 = kept
        .iter()
        .filter_map(|(p, _)| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let bytes = if to_stdout { s.bytes } else { on_disk };
    say(format_args!(
        "iocap: wrote {} events ({} dropped) in {bytes} bytes to {target}{files}",
        s.events, s.drops,
    ));
    if s.unfinished > 0 {
        say(format_args!(
            "iocap: {} still in flight at the stop, written unfinished (evt.unfinished), with their \
             latency so far",
            s.unfinished
        ));
    }
    if s.unseen > 0 {
        say(format_args!(
            "iocap: block requests issued whose completion never reached iocap, so not in the \
             capture: {}{}",
            s.unseen,
            crate::text::by_disk(s.unseen_by_disk.iter().map(|(name, n)| (name.as_str(), *n)))
        ));
    }
    viewed
}

/// `--view`: the viewer on the file being recorded, on a thread of its own, which has the
/// terminal while this one records. Whichever way the viewer ends (quit, an error, a panic),
/// the recording stops and finishes the file.
struct Viewing {
    thread: std::thread::JoinHandle<anyhow::Result<()>>,
    /// Set once the viewer has ended.
    ended: Arc<AtomicBool>,
    /// Set to close the viewer (the recording was stopped by a signal).
    quit: Arc<AtomicBool>,
}

/// Sets its flag when dropped: when the viewer's thread ends, a panic included.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl Viewing {
    /// Open the viewer on `path`, whose header is on disk and which the recorder holds.
    fn start(path: &Path) -> anyhow::Result<Viewing> {
        let (ended, quit) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (path, done, told) = (path.to_path_buf(), SetOnDrop(Arc::clone(&ended)), Arc::clone(&quit));
        let thread = std::thread::Builder::new()
            .name("iocap-view".into())
            .spawn(move || {
                let _done = done;
                let r = Reader::open(&path).with_context(|| format!("{}", path.display()))?;
                let filter = iocap_tui::check_filter("", &r).map_err(|e| anyhow::anyhow!("{e}"))?;
                iocap_tui::run_until(&path, r, filter, &told).context("terminal")
            })
            .context("cannot start the viewer's thread")?;
        Ok(Viewing { thread, ended, quit })
    }

    /// Whether the viewer has ended.
    fn ended(&self) -> bool {
        self.ended.load(Ordering::Relaxed)
    }

    /// Once the recording is over: wait for the user to quit the viewer, or for a signal
    /// (SIGTERM, SIGHUP), which closes it, giving it a second to restore the terminal (one that
    /// hung up cannot be restored, nor can the viewer's input thread end: it is left).
    fn finish(self) -> anyhow::Result<()> {
        let mut told: Option<Instant> = None;
        while !self.thread.is_finished() {
            match told {
                None if signals::stop_requested() => {
                    self.quit.store(true, Ordering::Relaxed);
                    told = Some(Instant::now());
                }
                Some(t) if t.elapsed() > Duration::from_secs(1) => return Ok(()),
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        match self.thread.join() {
            Ok(r) => r,
            Err(_) => bail!("the viewer failed (its message is above)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_duration, parse_size};
    use std::time::Duration;

    #[test]
    fn sizes_and_names() {
        assert_eq!(parse_size("100MB"), Ok(100_000_000));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("1.5KiB"), Ok(1536));
        assert_eq!(parse_size("2"), Ok(2_000_000), "tcpdump: millions of bytes");
        assert!(parse_size("5parsecs").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("0.1B").is_err());
        assert!(parse_size("1e30").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1.5ms"), Ok(Duration::from_micros(1500)));
        assert!(parse_duration("5parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("1e400s").is_err());
    }
}
