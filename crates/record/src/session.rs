//! Loading and attaching the BPF programs, and the recording loop: a poller on the caller's
//! thread, a writer thread that owns the capture [`Writer`].

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::mem::MaybeUninit;
use std::path::Path;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iocap_filter::Filter;
use iocap_format::{DropStats, Meta, Writer, WriterOptions};
use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject, RingBufferBuilder};

use crate::abi;
use crate::procfs;
use crate::skel::{IocapSkel, IocapSkelBuilder};
use crate::state::{LiveFilter, Tracker};

/// Why recording could not start or went wrong. Each message is one line with the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("recording needs root, or CAP_BPF and CAP_PERFMON: run it with sudo")]
    Privileges,
    #[error("this kernel has no BTF (/sys/kernel/btf/vmlinux): use a kernel built with CONFIG_DEBUG_INFO_BTF=y")]
    NoBtf,
    #[error("this kernel has no tracepoint {0}: it is needed for {1}")]
    MissingTracepoint(String, &'static str),
    #[error("loading BPF programs failed: {0}")]
    Bpf(String),
    /// What is readable is what a reader recovers from the file(s), which the caller, who
    /// knows their paths, can count: the writer's own count includes what was still buffered.
    #[error("the disk is full: recording stopped")]
    DiskFull,
    #[error("writing the capture failed: {0}")]
    Write(iocap_format::Error),
    #[error("starting the next file of the rotation failed: {0}")]
    Rotate(String),
}

/// What to record.
#[derive(Clone, Debug)]
pub struct Config {
    /// Trace only these thread groups (empty: everything but ourselves).
    pub pids: Vec<u32>,
    /// Also trace the processes the traced ones fork.
    pub follow_forks: bool,
    pub syscalls: bool,
    pub block: bool,
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            pids: Vec::new(),
            follow_forks: false,
            syscalls: true,
            block: true,
            min_latency_ns: 0,
            ring_bytes: 64 << 20,
            filter: false,
            syscall_nrs: None,
            names: None,
        }
    }
}

/// Figures for the live status line.
#[derive(Clone, Copy, Debug, Default)]
pub struct Progress {
    pub events: u64,
    pub drops: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// How a recording ended.
#[derive(Clone, Copy, Debug, Default)]
pub struct Summary {
    /// Events written (kept by the filter), in all files.
    pub events: u64,
    /// Events the record-time filter left out in userspace (the kernel's share is not counted).
    pub filtered: u64,
    pub drops: u64,
    /// Bytes written, in all files.
    pub bytes: u64,
    /// Files written (more than one with rotation).
    pub files: u32,
}

/// Where and what [`Recorder::run`] writes, besides the first file's writer.
pub struct Output<W> {
    /// The header the first file was started with: every file of a rotation gets it, with its
    /// own `start_ts` and the devices known by then. The filter's `evt.time` counts from its `start_ts`.
    pub meta: Meta,
    /// For the files of a rotation.
    pub options: WriterOptions,
    /// Keep only the events it matches: tested in the writer thread, on the live tables.
    /// What the kernel can decide ([`Filter::pushdown`]) goes in [`Config`] too.
    pub filter: Option<Filter>,
    pub rotate: Option<Rotate<W>>,
}

/// Size-based rotation: a new file each time the current one reaches `max_bytes`.
pub struct Rotate<W> {
    /// Checked after each record: a file ends at the first chunk (or once-a-second flush) past this size.
    pub max_bytes: u64,
    /// Opens file number `n` (1, 2, ...; the first file, number 0, is the writer given to
    /// `run`); also the place to remove the oldest file of a ring.
    pub open: Box<dyn FnMut(u32) -> std::io::Result<W> + Send>,
}

/// Whether this process may load BPF programs and read tracepoints.
pub fn check_privileges() -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if eff & (1 << CAP_BPF) != 0 && eff & (1 << CAP_PERFMON) != 0 {
        Ok(())
    } else {
        Err(Error::Privileges)
    }
}

/// The kernel's preemption model (`none`, `voluntary`, `full`, `lazy`, `rt`), from the
/// first place that tells: debugfs (the live setting), `preempt=` on the command line, the
/// kernel's build config. `None` when nothing does.
fn preemption_model() -> Option<String> {
    if let Ok(s) = std::fs::read_to_string("/sys/kernel/debug/sched/preempt") {
        // "none (voluntary) full lazy": the current one is in parentheses.
        if let Some(m) = s
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
        {
            return Some(m.to_owned());
        }
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if let Some(m) = cmdline.split_whitespace().find_map(|w| w.strip_prefix("preempt=")) {
        return Some(m.to_owned());
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config = std::fs::read(format!("/boot/config-{}", release.trim()))
        .ok()
        .or_else(|| {
            // gzip is everywhere; a decompressor linked in for this one file is not worth it.
            let out = std::process::Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status.success().then_some(out.stdout)
        })?;
    model_from_config(&String::from_utf8_lossy(&config))
}

/// The default preemption model a kernel config builds.
fn model_from_config(config: &str) -> Option<String> {
    let set = |opt: &str| config.lines().any(|l| l.trim() == format!("CONFIG_{opt}=y"));
    let model = if set("PREEMPT_RT") {
        "rt"
    } else if set("PREEMPT_NONE") {
        "none"
    } else if set("PREEMPT_VOLUNTARY") {
        "voluntary"
    } else if set("PREEMPT_LAZY") {
        "lazy"
    } else if set("PREEMPT") {
        "full"
    } else {
        return None;
    };
    Some(model.to_owned())
}

/// Whether per-CPU state is safe for the syscall programs: with `none` and `voluntary`
/// preemption, kernel code (and so a BPF program) is never preempted half-way.
fn cpu_slot_safe(model: Option<&str>) -> bool {
    matches!(model, Some("none" | "voluntary"))
}

const TRACEPOINTS: [(&str, &str, &str); 10] = [
    ("raw_syscalls", "sys_enter", "syscalls"),
    ("raw_syscalls", "sys_exit", "syscalls"),
    ("sched", "sched_switch", "syscalls"),
    ("sched", "sched_process_fork", "process names"),
    ("sched", "sched_process_exec", "process names"),
    ("sched", "sched_process_exit", "process names"),
    ("task", "task_rename", "process names"),
    ("block", "block_rq_insert", "block requests (or use --no-block)"),
    ("block", "block_rq_issue", "block requests (or use --no-block)"),
    ("block", "block_rq_complete", "block requests (or use --no-block)"),
];

/// Name the first thing this kernel lacks, to explain a load failure.
fn diagnose(cfg: &Config, err: &libbpf_rs::Error) -> Error {
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        return Error::NoBtf;
    }
    let dirs = ["/sys/kernel/tracing/events", "/sys/kernel/debug/tracing/events"];
    if dirs.iter().any(|d| Path::new(d).is_dir()) {
        for (cat, name, why) in TRACEPOINTS {
            if cat == "block" && !cfg.block {
                continue;
            }
            if !dirs.iter().any(|d| Path::new(d).join(cat).join(name).exists()) {
                return Error::MissingTracepoint(format!("{cat}:{name}"), why);
            }
        }
    }
    Error::Bpf(format!("{err:#}").lines().next().unwrap_or("").to_owned())
}

/// Loaded and attached programs.
pub struct Recorder {
    skel: IocapSkel<'static>,
    _links: Vec<Link>,
    started: Instant,
    ring_bytes: u32,
}

impl Recorder {
    /// Load and attach everything; from here on the kernel records.
    pub fn start(cfg: &Config) -> Result<Recorder, Error> {
        check_privileges()?;
        // libbpf's own log is pages of verifier output: only on request.
        if std::env::var_os("IOCAP_BPF_DEBUG").is_none() {
            libbpf_rs::set_print(None);
        }
        // The skeleton borrows its object storage for its whole life; one recorder lives as
        // long as the process, so the storage is leaked rather than threaded through lifetimes.
        let storage: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let mut open = IocapSkelBuilder::default()
            .open(storage)
            .map_err(|e| diagnose(cfg, &e))?;
        // IOCAP_CPU_SLOT=0/1 overrides the choice (tests run both ways on one kernel).
        let cpu_slot = match std::env::var("IOCAP_CPU_SLOT").as_deref() {
            Ok("0") => false,
            Ok("1") => true,
            _ => cpu_slot_safe(preemption_model().as_deref()),
        };
        if !cpu_slot {
            open.progs.spill_call.set_autoload(false);
        }
        if let Some(ro) = open.maps.rodata_data.as_mut() {
            ro.self_tgid = std::process::id();
            ro.filter_pids = cfg.filter || !cfg.pids.is_empty();
            ro.follow_forks = cfg.follow_forks;
            ro.want_sys = cfg.syscalls;
            ro.want_blk = cfg.block;
            ro.min_latency = cfg.min_latency_ns;
            ro.cpu_slot = cpu_slot;
            if let Some(nrs) = &cfg.syscall_nrs {
                // A number past the bitmap (none on x86_64) leaves the choice to userspace.
                if nrs.iter().all(|&nr| (nr as usize) < ro.allow_nrs.len() * 64) {
                    ro.filter_nrs = true;
                    for &nr in nrs {
                        ro.allow_nrs[nr as usize / 64] |= 1 << (nr % 64);
                    }
                }
            }
            if let Some(names) = cfg.names.as_ref().filter(|n| n.len() <= ro.comms.len()) {
                // An empty set would mean "no process": the caller refuses such a filter.
                if !names.is_empty() && names.iter().all(|n| n.len() < 16) {
                    ro.n_comms = names.len() as u32;
                    for (slot, name) in ro.comms.iter_mut().zip(names) {
                        // NUL-padded, as the kernel keeps a comm, then as two words.
                        let mut comm = [0u8; 16];
                        comm[..name.len()].copy_from_slice(name.as_bytes());
                        for (w, bytes) in slot.iter_mut().zip(comm.chunks_exact(8)) {
                            *w = u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
                        }
                    }
                }
            }
        }
        open.maps
            .rb
            .set_max_entries(cfg.ring_bytes)
            .map_err(|e| Error::Bpf(format!("ring buffer of {} bytes: {e}", cfg.ring_bytes)))?;
        if !cfg.block {
            for p in [
                &mut open.progs.blk_insert,
                &mut open.progs.blk_issue,
                &mut open.progs.blk_complete,
            ] {
                p.set_autoload(false);
            }
        }
        let mut skel = open.load().map_err(|e| diagnose(cfg, &e))?;
        // Limited from the first event: without it, a flood fills the whole ring before the
        // recording loop starts, and the file stays that far behind for seconds.
        set_backlog_max(&mut skel, INITIAL_BACKLOG.min(u64::from(cfg.ring_bytes) / 2));
        let mut links = Vec::new();
        {
            let p = &skel.progs;
            let mut progs = vec![
                (&p.proc_fork, "sched:sched_process_fork"),
                (&p.proc_exec, "sched:sched_process_exec"),
                (&p.proc_exit, "sched:sched_process_exit"),
                (&p.proc_rename, "task:task_rename"),
                (&p.sys_enter, "raw_syscalls:sys_enter"),
                (&p.sys_exit, "raw_syscalls:sys_exit"),
            ];
            if cpu_slot {
                // Before sys_enter: a call must never be left in a CPU's slot unspilled.
                progs.insert(4, (&p.spill_call, "sched:sched_switch"));
            }
            if cfg.block {
                progs.push((&p.blk_insert, "block:block_rq_insert"));
                progs.push((&p.blk_issue, "block:block_rq_issue"));
                progs.push((&p.blk_complete, "block:block_rq_complete"));
            }
            for (prog, name) in progs {
                let link = prog
                    .attach()
                    .map_err(|e| Error::Bpf(format!("attaching to {name}: {e}")))?;
                links.push(link);
            }
        }
        let r = Recorder {
            skel,
            _links: links,
            started: Instant::now(),
            ring_bytes: cfg.ring_bytes,
        };
        for &pid in &cfg.pids {
            r.add_pid(pid)?;
        }
        Ok(r)
    }

    /// Trace `pid` too (with pid filtering on).
    pub fn add_pid(&self, pid: u32) -> Result<(), Error> {
        let err = |e: libbpf_rs::Error| Error::Bpf(format!("adding pid {pid}: {e}"));
        let maps = &self.skel.maps;
        maps.pids
            .update(&pid.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(err)?;
        // Threads cache whether they are traced: a new generation makes them look again.
        // The kernel bumps it too (by 1, atomically, on traced forks and exits) and this
        // read-modify-write can lose such a bump: a step this large still lands on a value
        // no cache holds, which is all a generation has to be.
        const STEP: u32 = 1 << 20;
        let key = 0u32.to_ne_bytes();
        let gen = match maps.pids_gen.lookup(&key, MapFlags::ANY).map_err(err)? {
            Some(v) => v.get(..4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_ne_bytes),
            None => 0,
        };
        maps.pids_gen
            .update(&key, &gen.wrapping_add(STEP).to_ne_bytes(), MapFlags::ANY)
            .map_err(err)
    }

    fn drops(&self) -> DropStats {
        let per_cpu = match self.skel.maps.drops.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(v)) => v
                .iter()
                .map(|b| b.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes))
                .collect(),
            _ => Vec::new(),
        };
        DropStats {
            ts: procfs::boot_ns(),
            per_cpu,
        }
    }

    /// Record into `writer` until `stop()` says so (checked every poll), then drain, finish
    /// the file and return what was written. `progress` is called about 4 times a second.
    pub fn run<W: Write + Send + 'static>(
        mut self,
        writer: Writer<W>,
        out: Output<W>,
        stop: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Summary, Error> {
        let shared = Arc::new(Shared::default());
        // A short queue: what waits in it is lost if the recorder is killed, and the kernel
        // sheds what the writer cannot take (see `backlog_max`), counted, rather than this
        // process buffering seconds of events in memory.
        let (tx, rx) = sync_channel::<Msg>(QUEUE);
        let arch = std::env::consts::ARCH;
        let filter = out.filter.clone().map(|filter| LiveFilter {
            filter,
            meta: out.meta.clone(),
        });
        let mut tracker = Tracker::new(writer, arch, &out.meta.devices, filter);
        let sh = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("iocap-writer".into())
            .spawn(move || {
                tracker.snapshot();
                write_loop(tracker, rx, &sh, out)
            })
            .map_err(|e| Error::Bpf(format!("starting the writer thread: {e}")))?;

        let batch = Rc::new(RefCell::new(Vec::<u8>::with_capacity(BATCH)));
        let mut rbb = RingBufferBuilder::new();
        let b2 = Rc::clone(&batch);
        // The syscall path stamps CLOCK_MONOTONIC (cheaper in the kernel); refreshed every poll.
        let boot_offset = Rc::new(Cell::new(procfs::boot_offset_ns()));
        let off = Rc::clone(&boot_offset);
        rbb.add(&self.skel.maps.rb, move |data: &[u8]| {
            let mut b = b2.borrow_mut();
            b.extend_from_slice(&(data.len() as u32).to_ne_bytes());
            let start = b.len();
            b.extend_from_slice(data);
            abi::to_boottime(&mut b[start..], off.get());
            // libbpf's consume() goes on for as long as records keep coming: under a flood it
            // would never return, growing the batch without bound and never checking for
            // stop. A negative return ends it (this record is kept: libbpf has already moved
            // past it).
            if b.len() >= BATCH {
                -1
            } else {
                0
            }
        })
        .map_err(|e| Error::Bpf(format!("ring buffer: {e}")))?;
        let rb = rbb.build().map_err(|e| Error::Bpf(format!("ring buffer: {e}")))?;

        let mut last_drops = Instant::now();
        let mut sent_drops = None;
        let mut last_progress = Instant::now();
        let mut last_backlog = Instant::now();
        let mut writer_gone;
        // Consume until the ring is empty, handing over each full batch (waiting for room),
        // for at most `budget` bytes: a flood never empties the ring, and stop, drops and
        // the backlog limit must be looked at between rounds. False once the writer is gone.
        let pump = |budget: usize| -> bool {
            let mut moved = 0;
            loop {
                let _ = rb.consume();
                if batch.borrow().len() < BATCH {
                    return true;
                }
                let b = std::mem::replace(&mut *batch.borrow_mut(), Vec::with_capacity(BATCH));
                moved += b.len();
                if tx.send(Msg::Batch(b)).is_err() {
                    return false;
                }
                if moved >= budget {
                    return true;
                }
            }
        };
        loop {
            let stopping = stop() || shared.failed.load(Ordering::Relaxed);
            boot_offset.set(procfs::boot_offset_ns());
            writer_gone = !pump(QUEUE * BATCH);
            if !batch.borrow().is_empty() && !writer_gone {
                let b = std::mem::replace(&mut *batch.borrow_mut(), Vec::with_capacity(BATCH));
                match tx.try_send(Msg::Batch(b)) {
                    Ok(()) => {}
                    Err(TrySendError::Full(Msg::Batch(b))) => {
                        // The writer is behind: keep what we have and retry after the next poll.
                        *batch.borrow_mut() = b;
                    }
                    Err(_) => writer_gone = true,
                }
            }
            // Read often and sent whenever they grew, in line with the batches (waiting for
            // room if need be): drops happen exactly when the queue is full, and a reading
            // skipped then would place a whole overload's losses at its end.
            if last_drops.elapsed() >= DROPS_EVERY && !stopping && !writer_gone {
                let d = self.drops();
                let total = d.total();
                shared.drops.store(total, Ordering::Relaxed);
                if sent_drops != Some(total) && (total > 0 || sent_drops.is_some()) {
                    if tx.send(Msg::Drops(d)).is_err() {
                        writer_gone = true;
                    }
                    sent_drops = Some(total);
                }
                last_drops = Instant::now();
            }
            if last_backlog.elapsed() >= Duration::from_millis(100) {
                let rate = shared.drain_rate.load(Ordering::Relaxed);
                if rate > 0 {
                    set_backlog_max(&mut self.skel, backlog_for(rate, u64::from(self.ring_bytes)));
                }
                last_backlog = Instant::now();
            }
            if last_progress.elapsed() >= Duration::from_millis(250) {
                progress(&shared.progress(self.started));
                last_progress = Instant::now();
            }
            if stopping || writer_gone {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Final drain: what the kernel holds now (not what a flood adds while we drain).
        if !writer_gone && pump(self.ring_bytes as usize) {
            let b = std::mem::take(&mut *batch.borrow_mut());
            if !b.is_empty() {
                let _ = tx.send(Msg::Batch(b));
            }
            let _ = tx.send(Msg::Drops(self.drops()));
            let _ = tx.send(Msg::Finish(procfs::boot_ns()));
        }
        drop(tx);
        let result = handle
            .join()
            .map_err(|_| Error::Bpf("the writer thread panicked".into()))?;
        progress(&shared.progress(self.started));
        result
    }
}

/// Bytes of ring records handed to the writer at once.
const BATCH: usize = 128 << 10;
/// Batches that may wait for the writer: with `BATCH`, half a megabyte.
const QUEUE: usize = 4;
/// How often the drop counters are read (and written to the file when they grew).
const DROPS_EVERY: Duration = Duration::from_millis(250);
/// The ring backlog allowed before the writer's drain rate is known.
const INITIAL_BACKLOG: u64 = 4 << 20;
/// The backlog the kernel may build, as time of the writer's drain rate.
const BACKLOG_TIME: Duration = Duration::from_millis(150);
/// How often the open chunk is closed and everything written is handed to the kernel: what
/// a killed recorder can lose on top of the backlog and the queue.
const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// The least backlog allowed however slow the writer: jitter of a few ms at full rate.
const MIN_BACKLOG: u64 = 1 << 20;

/// The ring backlog for a writer that drains `rate` bytes a second: `BACKLOG_TIME` of it,
/// within [`MIN_BACKLOG`, half the ring].
fn backlog_for(rate: u64, ring_bytes: u64) -> u64 {
    let want = (rate as f64 * BACKLOG_TIME.as_secs_f64()) as u64;
    want.clamp(MIN_BACKLOG.min(ring_bytes / 2), ring_bytes / 2)
}

enum Msg {
    Batch(Vec<u8>),
    Drops(DropStats),
    Finish(u64),
}

#[derive(Default)]
struct Shared {
    /// How fast the writer gets through ring bytes while it works (bytes per second of
    /// wall time spent outside waiting for a batch, so a writer starved of CPU measures slow).
    drain_rate: AtomicU64,
    events: AtomicU64,
    bytes: AtomicU64,
    drops: AtomicU64,
    failed: AtomicBool,
}

impl Shared {
    fn progress(&self, started: Instant) -> Progress {
        Progress {
            events: self.events.load(Ordering::Relaxed),
            drops: self.drops.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            elapsed: started.elapsed(),
        }
    }
}

fn is_enospc(e: &iocap_format::Error) -> bool {
    matches!(e, iocap_format::Error::Io(io) if matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)))
}

fn write_loop<W: Write>(
    mut t: Tracker<W>,
    rx: Receiver<Msg>,
    sh: &Shared,
    mut out: Output<W>,
) -> Result<Summary, Error> {
    let fail = |e: iocap_format::Error, sh: &Shared| -> Error {
        sh.failed.store(true, Ordering::Relaxed);
        if is_enospc(&e) {
            Error::DiskFull
        } else {
            Error::Write(e)
        }
    };
    let mut last_flush = Instant::now();
    let mut drops = DropStats::default();
    // Each file counts its own drops: the counters as they were when it started.
    let mut base = Vec::new();
    let mut stop_ts = None;
    let mut done_bytes = 0;
    let mut files = 1;
    let mut rotate_err = None;
    let mut rate = DrainRate::default();
    while let Ok(msg) = rx.recv() {
        let got = Instant::now();
        let mut batch_bytes = 0;
        match msg {
            Msg::Batch(b) => {
                batch_bytes = b.len();
                let mut rest = &b[..];
                while rest.len() >= 4 {
                    let n = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                    let Some(rec) = rest.get(4..4 + n) else { break };
                    if let Some(r) = abi::decode(rec) {
                        if let Err(e) = t.apply(r) {
                            return Err(fail(e, sh));
                        }
                    }
                    rest = &rest[4 + n..];
                    // Checked per record: a late poll can make a batch of many chunks.
                    if out
                        .rotate
                        .as_ref()
                        .is_some_and(|r| t.writer().bytes_written() >= r.max_bytes)
                    {
                        match next_file(&mut t, &mut out, &mut files) {
                            Ok(old) => done_bytes += old,
                            Err(Error::Rotate(e)) => {
                                sh.failed.store(true, Ordering::Relaxed);
                                rotate_err = Some(Error::Rotate(e));
                                break;
                            }
                            Err(e) => {
                                sh.failed.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                        base.clone_from(&drops.per_cpu);
                    }
                }
                sh.events.store(t.events, Ordering::Relaxed);
                if rotate_err.is_some() {
                    // Keep what is written: the current file is finished below.
                    break;
                }
            }
            Msg::Drops(d) => {
                drops = d;
                if let Err(e) = t.writer().record_drops(&since(&drops, &base)) {
                    return Err(fail(e, sh));
                }
            }
            Msg::Finish(ts) => {
                stop_ts = Some(ts);
                break;
            }
        }
        if last_flush.elapsed() >= FLUSH_EVERY {
            if let Err(e) = t.writer().flush() {
                return Err(fail(e, sh));
            }
            t.tidy();
            last_flush = Instant::now();
        }
        sh.bytes
            .store(done_bytes + t.writer().bytes_written(), Ordering::Relaxed);
        if let Some(r) = rate.add(batch_bytes, got.elapsed()) {
            sh.drain_rate.store(r, Ordering::Relaxed);
        }
    }
    let (events, filtered) = (t.events, t.filtered);
    let w = t.into_writer();
    let stop_ts = stop_ts.unwrap_or_else(procfs::boot_ns);
    let bytes = done_bytes + w.bytes_written();
    match w.finish(stop_ts) {
        Ok(_) => match rotate_err {
            Some(e) => Err(e),
            None => Ok(Summary {
                events,
                filtered,
                drops: drops.total(),
                bytes,
                files,
            }),
        },
        Err(e) => {
            sh.failed.store(true, Ordering::Relaxed);
            Err(if is_enospc(&e) {
                Error::DiskFull
            } else {
                Error::Write(e)
            })
        }
    }
}

/// The ring backlog past which the kernel sheds syscall and block records.
fn set_backlog_max(skel: &mut IocapSkel<'static>, bytes: u64) {
    if let Some(bss) = skel.maps.bss_data.as_mut() {
        // SAFETY: the .bss map is mmapped for the skeleton's life; a volatile store makes
        // sure it reaches the memory the BPF programs read.
        unsafe { std::ptr::write_volatile(&mut bss.backlog_max, bytes) };
    }
}

/// The writer's drain rate: bytes over busy time, per window of at least 100 ms of work,
/// smoothed over windows.
#[derive(Default)]
struct DrainRate {
    bytes: u64,
    busy: Duration,
    smoothed: Option<f64>,
}

impl DrainRate {
    /// Count `bytes` handled in `busy`; returns a new estimate once a window is complete.
    fn add(&mut self, bytes: usize, busy: Duration) -> Option<u64> {
        self.bytes += bytes as u64;
        self.busy += busy;
        if self.busy < Duration::from_millis(100) || self.bytes == 0 {
            return None;
        }
        let now = self.bytes as f64 / self.busy.as_secs_f64();
        let r = self.smoothed.map_or(now, |old| 0.5 * old + 0.5 * now);
        self.smoothed = Some(r);
        (self.bytes, self.busy) = (0, Duration::ZERO);
        Some(r as u64)
    }
}

/// Start file number `files` of the rotation and finish the current one; returns the bytes
/// the finished file took (up to its index).
fn next_file<W: Write>(t: &mut Tracker<W>, out: &mut Output<W>, files: &mut u32) -> Result<u64, Error> {
    let Some(rot) = out.rotate.as_mut() else { return Ok(0) };
    let w = (rot.open)(*files).map_err(|e| Error::Rotate(e.to_string()))?;
    let mut meta = out.meta.clone();
    meta.start_ts = procfs::boot_ns();
    meta.devices = t.devices();
    // The header on disk at once: the new file opens even if the recorder is killed now.
    let next = Writer::new(w, &meta, out.options.clone())
        .and_then(|mut w| w.flush().map(|()| w))
        .map_err(|e| Error::Rotate(e.to_string()))?;
    let old = t.rotate(next);
    let bytes = old.bytes_written();
    *files += 1;
    match old.finish(meta.start_ts) {
        Ok(_) => Ok(bytes),
        Err(e) if is_enospc(&e) => Err(Error::DiskFull),
        Err(e) => Err(Error::Write(e)),
    }
}

/// The drop counters `d` minus those at `base` (when the current file started).
fn since(d: &DropStats, base: &[u64]) -> DropStats {
    DropStats {
        ts: d.ts,
        per_cpu: d
            .per_cpu
            .iter()
            .enumerate()
            .map(|(i, &n)| n.saturating_sub(base.get(i).copied().unwrap_or(0)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_model_from_a_kernel_config() {
        let config = |opts: &[&str]| {
            let mut c =
                String::from("# Linux kernel config\nCONFIG_PREEMPT_BUILD=y\n# CONFIG_PREEMPT_VOLUNTARY is not set\n");
            for o in opts {
                c += &format!("CONFIG_{o}=y\n");
            }
            model_from_config(&c)
        };
        assert_eq!(config(&["PREEMPT_NONE", "PREEMPT_DYNAMIC"]).as_deref(), Some("none"));
        assert_eq!(config(&["PREEMPT_VOLUNTARY"]).as_deref(), Some("voluntary"));
        assert_eq!(config(&["PREEMPT", "PREEMPT_DYNAMIC"]).as_deref(), Some("full"));
        assert_eq!(config(&["PREEMPT_LAZY"]).as_deref(), Some("lazy"));
        assert_eq!(config(&["PREEMPT", "PREEMPT_RT"]).as_deref(), Some("rt"));
        assert_eq!(config(&[]), None, "\"is not set\" lines set nothing");
    }

    #[test]
    fn per_cpu_state_only_where_programs_are_not_preempted() {
        assert!(cpu_slot_safe(Some("none")) && cpu_slot_safe(Some("voluntary")));
        for m in [Some("full"), Some("lazy"), Some("rt"), Some("other"), None] {
            assert!(!cpu_slot_safe(m), "{m:?}");
        }
    }
}
