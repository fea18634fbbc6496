//! What a recording is asked to do ([`Config`]: what the kernel records; [`Output`]: where the
//! writer thread writes it, with a filter and rotation) and what it reports back
//! ([`Progress`] while it runs, [`Summary`] at the end).

use std::time::Duration;

use iocap_filter::Filter;
use iocap_format::{Meta, WriterOptions};

/// What to record.
#[derive(Clone, Debug)]
pub struct Config {
    /// Trace only these thread groups (empty: everything but ourselves).
    pub pids: Vec<u32>,
    /// Also trace the processes the traced ones fork.
    pub follow_forks: bool,
    /// Emit syscall events (`--no-syscalls` clears it). The syscall programs run either way,
    /// so that the fd table stays whole.
    pub syscalls: bool,
    /// Attach the block request programs (`--no-block` leaves them unloaded).
    pub block: bool,
    /// Attach the io_uring request programs (off with `--no-syscalls`, or a filter that only
    /// matches other classes).
    pub io_uring: bool,
    /// Drop events faster than this, in the kernel (ns).
    pub min_latency_ns: u64,
    /// Ring buffer size in bytes (a power of two, a multiple of the page size).
    pub ring_bytes: u32,
    /// Force pid filtering even with no pids yet (for `-c`: the child is added later).
    pub filter: bool,
    /// Only these syscall numbers, decided in the kernel (`None`: all).
    pub syscall_nrs: Option<Vec<u32>>,
    /// Only processes with these names (their leader's comm), decided in the kernel for
    /// syscalls (`None`: all). Up to 8 names of at most 15 bytes; more or longer are left
    /// to the writer thread's filter.
    pub names: Option<Vec<String>>,
    /// Time each call's thread spends off the CPU, by why: in the run queue, blocked, and who
    /// woke it (`--no-anatomy` clears it).
    pub anatomy: bool,
    /// `--stacks`: a call at least this slow (ns) keeps its user stack and the kernel stack of
    /// its longest sleep; `None`: no stacks are taken.
    pub stacks_ns: Option<u64>,
    /// `--cgroup`: also trace every process in this cgroup or below it, now and as they fork
    /// or exec there.
    pub scope: Option<CgroupScope>,
}

pub use crate::procfs::{cgroup_scope, CgroupScope};

impl Default for Config {
    fn default() -> Self {
        Config {
            pids: Vec::new(),
            follow_forks: false,
            syscalls: true,
            block: true,
            io_uring: true,
            min_latency_ns: 0,
            ring_bytes: 64 << 20,
            filter: false,
            syscall_nrs: None,
            names: None,
            anatomy: true,
            stacks_ns: None,
            scope: None,
        }
    }
}

/// Figures for the live status line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    /// The writer thread has read /proc and takes events as they come: the moment to start a
    /// traced command, whose first burst would otherwise meet a pipeline not yet draining.
    pub ready: bool,
    /// Events written so far (kept by the filter), in all files.
    pub events: u64,
    /// Events lost so far, on every CPU: ring full, shed at the backlog limit, or discarded
    /// by the poller for having ended too long ago.
    pub drops: u64,
    /// Bytes written so far, in all files.
    pub bytes: u64,
    /// Time since the programs were attached.
    pub elapsed: Duration,
}

/// How a recording ended.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Events written (kept by the filter), in all files.
    pub events: u64,
    /// Events the record-time filter left out in userspace (the kernel's share is not counted).
    pub filtered: u64,
    /// Events lost, as [`Progress::drops`] counts them, over the whole recording.
    pub drops: u64,
    /// Bytes written, in all files.
    pub bytes: u64,
    /// Files written (more than one with rotation).
    pub files: u32,
    /// Block requests the kernel issued and whose completion never reached the recorder, so
    /// that they are in no file: not in `drops` (the recorder did not fall behind), and
    /// written to the files as their own count (unseen frames, read by `Reader::unseen`).
    pub unseen: u64,
    /// `unseen` disk by disk: each disk's name (escaped, else `major:minor`) and count, in
    /// `dev_t` order.
    pub unseen_by_disk: Vec<(String, u64)>,
    /// Events written unfinished: calls and block requests still in flight when the
    /// recording stopped, their latency counted to the stop.
    pub unfinished: u64,
}

/// Where and what [`Recorder::run`](crate::Recorder::run) writes, besides the first file's writer.
pub struct Output<W> {
    /// The header the first file was started with: every file of a rotation gets it, with its
    /// own `start_ts` and the devices known by then. The filter's `evt.time` counts from its `start_ts`.
    pub meta: Meta,
    /// For the files of a rotation.
    pub options: WriterOptions,
    /// Keep only the events it matches: tested in the writer thread, on the live tables.
    /// What the kernel can decide ([`Filter::pushdown`]) goes in [`Config`] too.
    pub filter: Option<Filter>,
    /// Start a new file past a size; `None`: one file, however large it grows.
    pub rotate: Option<Rotate<W>>,
}

/// Size-based rotation: a new file each time the current one reaches `max_bytes`.
pub struct Rotate<W> {
    /// Checked after each record: a file ends at the first chunk (or flush, at least every 500 ms) past this size.
    pub max_bytes: u64,
    /// The first file's path: the others are named after it ([`crate::rotation`]), and each
    /// file's header names the next ([`iocap_format::Meta::next_file`]).
    pub base: std::path::PathBuf,
    /// Opens file number `n` (1, 2, ...; the first file, number 0, is the writer given to
    /// `run`); also the place to remove the oldest file of a ring.
    pub open: Box<dyn FnMut(u32) -> std::io::Result<W> + Send>,
}
