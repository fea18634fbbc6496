//! The `iocap` command: record latency on a server, replay it anywhere.
//!
//! Each subcommand lives in a module of its own; this file parses the command line, runs
//! one, and turns its error into a one-line message and an exit code:
//! 0 ok, 1 runtime error, 2 usage or filter error.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

mod compare;
mod events;
mod export;
mod fields;
mod flame;
mod follow;
mod info;
mod input;
mod iostat;
#[cfg(unix)]
mod output;
mod packaging;
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
mod record;
mod report;
mod sides;
mod signals;
mod spectrogram;
#[cfg(unix)]
mod stream;
mod text;
mod version;
mod view;
mod why;

/// What `record --help` says of the kernel features the recorder can go without (GUIDE.md's
/// "Kernel support" has the table).
#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
const RECORD_KERNELS: &str = "\
Kernels: Linux 5.11 or later with BTF, the BPF ring buffer, task storage and the syscall and
process tracepoints. Optional, each probed in the kernel's BTF and by loading (a kernel that lacks one, or whose
security policy refuses it, leaves its part out, says so once and names it in the capture's
header, which `iocap info` shows):
  block tracepoints (5.11)               block requests
  io_uring tracepoints (5.19)            io_uring requests
  block:block_io_start (6.5)             where a request was created (else its first insert/issue)
  block:block_rq_merge (5.11)            disk.time of calls whose request was merged
  writeback tracepoints (5.5)            blk.cause of writeback
  sched:sched_switch, sched_waking (5.5) a call's anatomy: runq.time, wait.time, waker.tid
  writeback, lock, vmscan, timer tps      why it blocked: wait.throttle, wait.lock... (lock: 5.19)
  BPF task iterators (5.8)               calls in flight at the stop: read from userspace instead
  PIDFD_THREAD (6.9), without them       ... then only each process's main thread's
  raw_tp run, for_each_map_elem (5.13)   block requests in flight at the stop";

/// Record every syscall and block I/O request with its latency; replay it anywhere.
#[derive(Parser, Debug)]
#[command(
    name = "iocap",
    version,
    about,
    propagate_version = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Record every syscall and block request with its latency into a capture (Linux, root).
    #[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
    #[command(after_long_help = RECORD_KERNELS)]
    Record(record::Args),
    /// Record (not in this build: recording needs Linux on x86_64, built with the `record` feature).
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64", feature = "record")))]
    Record {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
        args: Vec<String>,
    },
    /// Summarize a capture: events, time span, drops, host, whether it was finished cleanly.
    Info(info::Args),
    /// Latency distribution of the matching events: histogram, percentiles, top groups (--by).
    Report(report::Args),
    /// Two captures, or two filters on one, side by side: histograms, percentiles, flagged changes.
    Compare(compare::Args),
    /// The matching events, one per line (or JSON lines keyed by field names).
    Events(events::Args),
    /// Per-disk r/s, w/s, kB/s, await, aqu-sz and %util per interval, from the block requests the
    /// filter keeps.
    Iostat(iostat::Args),
    /// sysdig's latency spectrogram: one row per interval, ten columns per decade of latency.
    Spectrogram(spectrogram::Args),
    /// The latency flame graph of the matching calls, from the stacks `record --stacks` kept:
    /// folded stacks, or an SVG with `-o FILE.svg`.
    Flame(flame::Args),
    /// Write the matching events as CSV or JSON lines, or a latency heatmap (or two sides compared) as SVG.
    Export(export::Args),
    /// The terminal viewer: scrub a latency spectrogram, read histograms, narrow with filters.
    View(view::Args),
    /// List every filter field with its type and description.
    Fields(fields::Args),
    /// Help on a subcommand, or on the filter language: `iocap help filter`.
    Help(fields::HelpArgs),
    /// Print a shell completion script: `iocap completions bash|zsh|fish`.
    #[command(hide = true)]
    Completions(packaging::CompletionsArgs),
    /// Print the man page (roff), or write every page into a directory with --dir.
    #[command(hide = true)]
    Man(packaging::ManArgs),
}

/// An error that should exit with status 2 (bad usage, a filter that does not parse).
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn main() -> ExitCode {
    let files_allowed = raise_open_files();
    // The version names the libraries linked in, which only a function call can tell.
    let matches = Cli::command().version(version::text()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        #[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
        Command::Record(args) => record::run(args),
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64", feature = "record")))]
        Command::Record { .. } => Err(anyhow::anyhow!(
            "this iocap ({}/{}) reads captures only: recording needs Linux on x86_64 and the `record` feature",
            std::env::consts::OS,
            std::env::consts::ARCH
        )),
        Command::Info(args) => info::run(args),
        Command::Report(args) => report::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Events(args) => events::run(args),
        Command::Iostat(args) => iostat::run(args),
        Command::Spectrogram(args) => spectrogram::run(args),
        Command::Export(args) => export::run(args),
        Command::Flame(args) => flame::run(args),
        Command::View(args) => view::run(args),
        Command::Fields(args) => fields::run(args),
        Command::Help(args) => fields::help(args),
        Command::Completions(args) => packaging::completions(args, Cli::command()),
        Command::Man(args) => packaging::man(args, Cli::command()),
    };
    match result {
        Ok(()) => {
            for line in std::mem::take(&mut *LATER.lock().unwrap_or_else(|e| e.into_inner())) {
                say(format_args!("{line}"));
            }
            ExitCode::SUCCESS
        }
        Err(err) => {
            if is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            say(format_args!("iocap: {}", one_line(&err)));
            if too_many_files(&err) {
                say(format_args!(
                    "iocap: this process may have {files_allowed} files open at once (ulimit -n, raised \
                     to its hard limit already): raise the hard limit, or read fewer files at once"
                ));
            }
            if err.downcast_ref::<UsageError>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Standard streams started closed (`iocap record -w - >&-`).
pub mod std_streams {
    /// Whether standard output was closed when iocap started. Rust's runtime puts /dev/null,
    /// opened read-write, on a standard stream that starts closed (before `main`), so that no
    /// file opened later takes its number: that is what is looked for. A shell's `> /dev/null`
    /// opens it write-only, and is taken as meant.
    pub fn stdout_closed() -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::{FileTypeExt, MetadataExt};
            let Ok(null) = std::fs::metadata("/dev/null") else {
                return false;
            };
            // SAFETY: fcntl on fd 1 reads its flags only.
            let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
            let Ok(out) = std::fs::metadata("/proc/self/fd/1") else {
                return false;
            };
            out.file_type().is_char_device() && out.rdev() == null.rdev() && flags & libc::O_ACCMODE == libc::O_RDWR
        }
        #[cfg(not(unix))]
        false
    }
}

/// Raise the soft limit of open files to the hard one, as Go's runtime does: a rotation
/// ring or a directory of captures is read with a descriptor per file, and the soft limit
/// (often 1,024) is below what such a recording holds. Returns the limit now in force.
fn raise_open_files() -> u64 {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit and setrlimit read and write the struct given, nothing else.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                return 0;
            }
            if lim.rlim_cur < lim.rlim_max {
                let raised = libc::rlimit {
                    rlim_cur: lim.rlim_max,
                    rlim_max: lim.rlim_max,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                    lim = raised;
                }
            }
        }
        lim.rlim_cur
    }
    #[cfg(not(unix))]
    0
}

/// Whether `err` came of running out of file descriptors (EMFILE).
fn too_many_files(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.raw_os_error() == Some(24))
            || c.to_string().contains("Too many open files")
    })
}

/// The error and its causes on one line, as `{:#}` writes them (`a: b: c`), less a cause the
/// message before it already ends with: some errors name their source in their own message
/// too (the parquet crate's `External: <the I/O error>`), and it would be said twice.
fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !line.is_empty() && line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Lines said once the command has succeeded ([`say_later`]).
static LATER: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// A line on stderr about an answer (it is for part of a capture), said after it if the
/// command succeeds: an error is one line, said alone.
pub fn say_later(line: std::fmt::Arguments) {
    LATER.lock().unwrap_or_else(|e| e.into_inner()).push(line.to_string());
}

/// A line on stderr. Unlike `eprintln!`, a closed stderr (`iocap record ... 2>&1 | grep -m1
/// recording`) is not a panic: the line is lost and iocap goes on.
pub fn say(line: std::fmt::Arguments) {
    use std::io::Write;
    // Paths the user typed, names a header or a directory listing brought: whatever they hold,
    // nothing in a message acts on the terminal (escape sequences, bells, bidi overrides).
    let text = line.to_string();
    let text = iocap_format::escape::controls(&text);
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.write_all(b"\n"));
}

/// `iocap events big.cap | head` closes our stdout early: that is not an error. A JSON
/// writer's error wraps the I/O error without naming it as its source, so it is asked.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        let kind = e
            .downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| e.downcast_ref::<serde_json::Error>()?.io_error_kind());
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}
