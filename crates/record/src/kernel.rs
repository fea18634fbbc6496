//! What the running kernel has of what the recorder uses, asked before anything is loaded
//! ([`Kernel::support`]). A requirement it lacks is one line naming it and the oldest Linux that
//! has it ([`Error::Unsupported`]); an optional tracepoint it lacks leaves its part of the
//! recording out, which the recorder says once and writes in the capture's header
//! ([`Support::missing`]).
//!
//! A kernel can also have a feature and refuse iocap's program for it: a security policy that
//! refuses BPF iterators, a verifier that rejects a program another kernel takes. So every
//! optional program is also probed by loading it: one the kernel refuses is left out the same
//! way, with the kernel's own reason ([`Support::refuse`], [`PROGRAMS`]); a required
//! program it refuses ends the recording with that reason.
//!
//! `IOCAP_HIDE=ringbuf,block_io_start` takes the features it names (each [`Feature::key`]) for
//! absent, so that a test on a kernel that has everything goes through the same probes, errors
//! and degraded recordings as a kernel that lacks them.

use libbpf_rs::MapType;

use crate::config::Config;
use crate::error::Error;
use crate::probe::KernelBtf;

/// How a feature is asked for.
#[derive(Clone, Copy, Debug)]
enum Probe {
    /// `/sys/kernel/btf/vmlinux`, readable.
    Btf,
    /// `libbpf_probe_bpf_map_type`: the kernel creates a map of this type.
    Map(MapType),
    /// The kernel's BTF has `btf_trace_<key>`, which a `tp_btf` program attaches by.
    Tracepoint,
    /// The kernel's BTF names BPF helper `<key>` (`BPF_FUNC_<key>` of `enum bpf_func_id`).
    Helper,
    /// Only by loading the program (`Recorder::start`): present unless hidden.
    Load,
    /// `pidfd_open(PIDFD_THREAD)` makes a pidfd of a thread.
    PidfdThread,
}

/// A kernel feature the recorder uses.
#[derive(Debug)]
pub struct Feature {
    /// Its name in `IOCAP_HIDE`; a tracepoint's is its event's name (`block_rq_issue`).
    pub key: &'static str,
    probe: Probe,
    /// Its name in messages (a tracepoint's `category:event`: see [`Feature::name`]).
    pub what: &'static str,
    /// The oldest Linux that has it as iocap uses it ("5.8").
    pub since: &'static str,
    /// The kernel option it takes besides ("" when every build has it).
    pub config: &'static str,
    /// What iocap needs it for: "every event", "block requests".
    pub role: &'static str,
    /// What a recording leaves out without it, when it can go on ("" for a requirement).
    pub lost: &'static str,
}

impl Feature {
    /// How messages name it: "the BPF ring buffer (BPF_MAP_TYPE_RINGBUF)", "the tracepoint
    /// block:block_io_start".
    pub fn name(&self) -> String {
        match self.probe {
            Probe::Tracepoint => format!("the tracepoint {}", self.what),
            _ => self.what.to_owned(),
        }
    }

    /// "Linux 5.4 and later have it, built with CONFIG_DEBUG_INFO_BTF=y".
    fn since_text(&self) -> String {
        let mut s = format!("Linux {} and later have it", self.since);
        if !self.config.is_empty() {
            s += &format!(", built with {}", self.config);
        }
        s
    }

    /// The same Feature with the kernel option it takes.
    const fn built_with(mut self, config: &'static str) -> Feature {
        self.config = config;
        self
    }

    /// "the tracepoint io_uring:io_uring_submit_req (Linux 5.19 and later): io_uring requests
    /// are not recorded": how a capture's header names what its kernel lacked.
    fn missing_note(&self) -> String {
        format!("{} (Linux {} and later): {}", self.name(), self.since, self.lost)
    }
}

/// The oldest Linux iocap records on (with BTF): the newest of its requirements, task storage.
pub const OLDEST_LINUX: &str = "5.11";

const BTF: Feature = Feature {
    key: "btf",
    probe: Probe::Btf,
    what: "BTF type information (/sys/kernel/btf/vmlinux)",
    since: "5.4",
    config: "CONFIG_DEBUG_INFO_BTF=y",
    role: "its programs, built once for every kernel (CO-RE)",
    lost: "",
};

/// Without any of these nothing is recorded, in this order (BTF first: without it no
/// tracepoint can be found). `tp_btf` programs (BPF_PROG_TYPE_TRACING, 5.5) are not probed:
/// libbpf's probe of that type loads an fentry program, which a kernel without ftrace's
/// trampolines refuses while it takes `tp_btf` ones (this one does), and every kernel with
/// task storage (5.11) has them.
const REQUIRED: [Feature; 9] = [
    BTF,
    Feature {
        key: "ringbuf",
        probe: Probe::Map(MapType::RingBuf),
        what: "the BPF ring buffer (BPF_MAP_TYPE_RINGBUF)",
        since: "5.8",
        config: "",
        role: "every event",
        lost: "",
    },
    Feature {
        key: "task_storage",
        probe: Probe::Map(MapType::TaskStorage),
        what: "BPF task storage (BPF_MAP_TYPE_TASK_STORAGE)",
        since: "5.11",
        config: "",
        role: "calls that block",
        lost: "",
    },
    tracepoint("sys_enter", "raw_syscalls:sys_enter", "5.5", "syscalls", "").built_with(SYSCALLS),
    tracepoint("sys_exit", "raw_syscalls:sys_exit", "5.5", "syscalls", "").built_with(SYSCALLS),
    tracepoint(
        "sched_process_fork",
        "sched:sched_process_fork",
        "5.5",
        "process names",
        "",
    ),
    tracepoint(
        "sched_process_exec",
        "sched:sched_process_exec",
        "5.5",
        "process names",
        "",
    ),
    tracepoint(
        "sched_process_exit",
        "sched:sched_process_exit",
        "5.5",
        "process names",
        "",
    ),
    tracepoint("task_rename", "task:task_rename", "5.5", "process names", ""),
];

/// The syscall tracepoints are a build option.
const SYSCALLS: &str = "CONFIG_FTRACE_SYSCALLS=y";

/// What is lost without any of [`BLOCK`].
const NO_BLOCK: &str = "block requests are not recorded";

/// Without any of these block requests are not recorded (the programs read their
/// `(struct request *)` prototype, which 5.11 brought).
const BLOCK: [Feature; 3] = [
    tracepoint(
        "block_rq_insert",
        "block:block_rq_insert",
        "5.11",
        "block requests",
        NO_BLOCK,
    ),
    tracepoint(
        "block_rq_issue",
        "block:block_rq_issue",
        "5.11",
        "block requests",
        NO_BLOCK,
    ),
    tracepoint(
        "block_rq_complete",
        "block:block_rq_complete",
        "5.11",
        "block requests",
        NO_BLOCK,
    ),
];

const BLOCK_IO_START: Feature = tracepoint(
    "block_io_start",
    "block:block_io_start",
    "6.5",
    "where a block request is created",
    "a block request is taken as created at its first insert or issue, by the task doing that \
     (usually the one that created it)",
);
const BLOCK_RQ_MERGE: Feature = tracepoint(
    "block_rq_merge",
    "block:block_rq_merge",
    "5.11",
    "requests merged into others",
    "disk.time stops counting for a call one of whose requests the scheduler merged into another",
);
/// What is lost without any of [`WRITEBACK`].
const NO_WRITEBACK: &str = "writeback requests have blk.cause none";
const WRITEBACK: [Feature; 2] = [
    tracepoint(
        "writeback_single_inode_start",
        "writeback:writeback_single_inode_start",
        "5.5",
        "the cause of writeback",
        NO_WRITEBACK,
    ),
    tracepoint(
        "writeback_single_inode",
        "writeback:writeback_single_inode",
        "5.5",
        "the cause of writeback",
        NO_WRITEBACK,
    ),
];
/// What is lost without any of [`JOURNAL`].
const NO_JOURNAL: &str = "a journal commit's requests have blk.cause none, and commits are no events";
const JOURNAL: [Feature; 2] = [
    tracepoint(
        "jbd2_start_commit",
        "jbd2:jbd2_start_commit",
        "5.5",
        "the cause of a journal's requests",
        NO_JOURNAL,
    ),
    tracepoint(
        "jbd2_end_commit",
        "jbd2:jbd2_end_commit",
        "5.5",
        "the cause of a journal's requests",
        NO_JOURNAL,
    ),
];
/// What is lost without any of [`IO_URING`].
const NO_URING: &str = "io_uring requests are not recorded";
const IO_URING: [Feature; 2] = [
    tracepoint(
        "io_uring_submit_req",
        "io_uring:io_uring_submit_req",
        "5.19",
        "io_uring requests",
        NO_URING,
    ),
    tracepoint(
        "io_uring_complete",
        "io_uring:io_uring_complete",
        "5.5",
        "io_uring requests",
        NO_URING,
    ),
];
const SCHED_SWITCH: Feature = tracepoint(
    "sched_switch",
    "sched:sched_switch",
    "5.5",
    "per-CPU call slots; the anatomy of calls",
    "every call goes through task storage (a little slower), and calls have no anatomy \
     (runq.time, wait.time, wait.count, waker.tid)",
);
const CGROUP_ATTACH: Feature = tracepoint(
    "cgroup_attach_task",
    "cgroup:cgroup_attach_task",
    "5.5",
    "processes moved to another cgroup",
    "a process moved to another cgroup without an exec keeps the cgroup and container it had (proc.cgroup, container.*), and one moved into --cgroup's is not traced",
);
const SCHED_WAKING: Feature = tracepoint(
    "sched_waking",
    "sched:sched_waking",
    "5.5",
    "the anatomy of calls: who woke a blocked call",
    "calls have no anatomy (runq.time, wait.time, wait.count, waker.tid)",
);

/// The tracepoints that say why a call blocked (`wait.throttle` ...), in groups that go
/// together (a span's begin and end), each group's programs behind [`Gate::Why`] of its index.
const WHY: [&[Feature]; 7] = [
    &WHY_THROTTLE,
    &WHY_WB_WAIT,
    &WHY_LOCK,
    &WHY_RECLAIM,
    &WHY_TIMERS,
    &WHY_FLUSH,
    &WHY_NET,
];
const WHY_THROTTLE: [Feature; 1] = [tracepoint(
    "balance_dirty_pages",
    "writeback:balance_dirty_pages",
    "5.5",
    "why calls blocked: dirty page throttling",
    "a call throttled for its dirty pages is counted as waiting for what ended its pause, not in wait.throttle",
)];
const WHY_WB_WAIT: [Feature; 1] = [tracepoint(
    "folio_wait_writeback",
    "writeback:folio_wait_writeback",
    "5.16",
    "why calls blocked: waits on a folio's writeback",
    "a call waiting on a folio's writeback is counted by who woke it",
)];
const NO_WHY_LOCK: &str = "a call blocked in lock contention is counted by who woke it, not in wait.lock";
const WHY_LOCK: [Feature; 2] = [
    tracepoint(
        "contention_begin",
        "lock:contention_begin",
        "5.19",
        "why calls blocked: lock contention",
        NO_WHY_LOCK,
    ),
    tracepoint(
        "contention_end",
        "lock:contention_end",
        "5.19",
        "why calls blocked: lock contention",
        NO_WHY_LOCK,
    ),
];
const NO_WHY_RECLAIM: &str = "a call blocked in direct reclaim is counted by who woke it, not in wait.reclaim";
const WHY_RECLAIM: [Feature; 2] = [
    tracepoint(
        "mm_vmscan_direct_reclaim_begin",
        "vmscan:mm_vmscan_direct_reclaim_begin",
        "5.5",
        "why calls blocked: direct reclaim",
        NO_WHY_RECLAIM,
    ),
    tracepoint(
        "mm_vmscan_direct_reclaim_end",
        "vmscan:mm_vmscan_direct_reclaim_end",
        "5.5",
        "why calls blocked: direct reclaim",
        NO_WHY_RECLAIM,
    ),
];
const NO_WHY_NET: &str = "a call woken by a packet's arrival is counted by who the softirq ran in, not in wait.net";
const WHY_NET: [Feature; 2] = [
    tracepoint(
        "softirq_exit",
        "irq:softirq_exit",
        "5.5",
        "why calls blocked: the network",
        NO_WHY_NET,
    ),
    tracepoint(
        "softirq_entry",
        "irq:softirq_entry",
        "5.5",
        "why calls blocked: the network",
        NO_WHY_NET,
    ),
];
const NO_WHY_FLUSH: &str = "a call waiting for a flusher's work (sync) is counted in wait.other, not in wait.writeback";
const WHY_FLUSH: [Feature; 2] = [
    tracepoint(
        "writeback_pages_written",
        "writeback:writeback_pages_written",
        "5.5",
        "why calls blocked: a flusher's work",
        NO_WHY_FLUSH,
    ),
    tracepoint(
        "writeback_exec",
        "writeback:writeback_exec",
        "5.5",
        "why calls blocked: a flusher's work",
        NO_WHY_FLUSH,
    ),
];
const NO_WHY_TIMER: &str = "a call woken by a timer is counted in wait.other, not in wait.timer";
const WHY_TIMERS: [Feature; 4] = [
    tracepoint(
        "timer_expire_exit",
        "timer:timer_expire_exit",
        "5.5",
        "why calls blocked: timers",
        NO_WHY_TIMER,
    ),
    tracepoint(
        "timer_expire_entry",
        "timer:timer_expire_entry",
        "5.5",
        "why calls blocked: timers",
        NO_WHY_TIMER,
    ),
    tracepoint(
        "hrtimer_expire_exit",
        "timer:hrtimer_expire_exit",
        "5.5",
        "why calls blocked: timers",
        NO_WHY_TIMER,
    ),
    tracepoint(
        "hrtimer_expire_entry",
        "timer:hrtimer_expire_entry",
        "5.5",
        "why calls blocked: timers",
        NO_WHY_TIMER,
    ),
];

/// What is lost without the `end_calls` iterator.
const CALLS_FROM_USERSPACE: &str = "calls in flight when the recording stops are read from userspace instead \
     (each thread's task storage, by pidfd)";

/// Finding the calls in flight at the recording's end in the per-CPU call slots.
const END_CALLS: Feature = Feature {
    key: "map_lookup_percpu_elem",
    probe: Probe::Helper,
    what: "the BPF helper bpf_map_lookup_percpu_elem",
    since: "5.19",
    config: "",
    role: "calls in flight when the recording stops",
    lost: CALLS_FROM_USERSPACE,
};

/// The `end_calls` program: a task iterator, which some security policies refuse.
const ITER_TASK: Feature = Feature {
    key: "iter_task",
    probe: Probe::Load,
    what: "BPF task iterators (iter/task)",
    since: "5.8",
    config: "",
    role: "calls in flight when the recording stops",
    lost: CALLS_FROM_USERSPACE,
};

/// Without the iterator, each thread's task storage is read by a pidfd of the thread.
const PIDFD_THREAD: Feature = Feature {
    key: "pidfd_thread",
    probe: Probe::PidfdThread,
    what: "pidfds of threads (PIDFD_THREAD)",
    since: "6.9",
    config: "",
    role: "calls in flight when the recording stops, read from userspace",
    lost: "of the calls in flight when the recording stops, only each process's main thread's are found",
};

/// The `end_rqs` program, run once at the stop (BPF_PROG_TEST_RUN of a raw tracepoint program
/// that walks the request maps with bpf_for_each_map_elem).
const END_RQS: Feature = Feature {
    key: "end_rqs",
    probe: Probe::Load,
    what: "a BPF program run on demand over the request maps (raw_tp, bpf_for_each_map_elem)",
    since: "5.13",
    config: "",
    role: "block requests in flight when the recording stops",
    lost: "block requests still in flight when the recording stops are left out (those that end \
           after it are not)",
};

/// How a note of [`Support::missing`] for a program the kernel refused begins.
pub(crate) const REFUSES: &str = "this kernel refuses";

/// When a program is loaded and attached, of what [`Support`] allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Every recording.
    Always,
    /// Per-CPU call slots are used (`cpu_slot`), or the anatomy of calls is recorded.
    Switch,
    /// The anatomy of calls is recorded.
    Anatomy,
    /// ... and the tracepoints of [`WHY`]'s group of this index are there.
    Why(usize),
    /// Block requests are recorded.
    Block,
    /// ... and their completions traced (not with `IOCAP_LOSE_COMPLETIONS=1`).
    BlockCompletions,
    /// ... and `block_io_start` is there.
    BlockIoStart,
    /// ... and `block_rq_merge` is there.
    BlockMerge,
    /// ... and the writeback tracepoints are there.
    Writeback,
    /// ... and the journal's (jbd2) tracepoints are there.
    Journal,
    /// io_uring requests are recorded.
    IoUring,
    /// The calls in flight at the stop are handed over by the task iterator.
    EndCalls,
    /// The block requests in flight at the stop are handed over by `end_rqs`.
    EndRqs,
    /// `cgroup_attach_task` is there: processes moved to another cgroup are followed.
    CgroupMoves,
}

/// The settings a [`Gate`] is decided on.
pub(crate) struct Gates<'s> {
    pub support: &'s Support,
    pub cpu_slot: bool,
    /// Block completions are traced (see [`Gate::BlockCompletions`]).
    pub completions: bool,
}

impl Gates<'_> {
    /// Whether a program behind `gate` is loaded (and attached, when it attaches).
    pub fn on(&self, gate: Gate) -> bool {
        let s = self.support;
        match gate {
            Gate::Always => true,
            Gate::Switch => self.cpu_slot || s.anatomy,
            Gate::Anatomy => s.anatomy,
            Gate::Why(i) => s.anatomy && s.why.get(i).copied().unwrap_or(false),
            Gate::Block => s.block,
            Gate::BlockCompletions => s.block && self.completions,
            Gate::BlockIoStart => s.block && s.block_io_start,
            Gate::BlockMerge => s.block && s.block_rq_merge,
            Gate::Writeback => s.block && s.writeback,
            Gate::Journal => s.block && s.journal,
            Gate::IoUring => s.io_uring,
            Gate::EndCalls => s.end_calls,
            Gate::EndRqs => s.block && s.end_rqs,
            Gate::CgroupMoves => s.cgroup_moves,
        }
    }
}

/// One of the recorder's BPF programs (a `SEC` function of bpf/iocap.bpf.c).
#[derive(Debug)]
pub(crate) struct Program {
    /// Its function's name.
    pub name: &'static str,
    /// The tracepoint it attaches to (`category:event`); `None` for one run on demand.
    pub attach: Option<&'static str>,
    pub gate: Gate,
    /// What it records, said when the kernel refuses a required one.
    pub role: &'static str,
    /// The feature it serves, when the recording can go without it; `None`: required.
    pub feature: Option<&'static Feature>,
    /// It claims calls (sys_enter, sys_exit, sched_switch): detached first at the end when
    /// userspace hands the calls in flight over (`ended.rs`).
    pub claims_calls: bool,
}

const fn prog(
    name: &'static str,
    attach: Option<&'static str>,
    gate: Gate,
    role: &'static str,
    feature: Option<&'static Feature>,
) -> Program {
    Program {
        name,
        attach,
        gate,
        role,
        feature,
        claims_calls: false,
    }
}

impl Program {
    /// Whether a run of it the kernel skips (a recursion miss) loses an event, and so counts
    /// among the drops. The anatomy's timing of a waking (sched_waking) and the programs that
    /// say why a call blocked make a call's parts less exact when skipped, but lose no event:
    /// on a PREEMPT_RT kernel, where programs run preemptible, the softirq ones are skipped
    /// now and then (a softirq thread preempting another's in the same program).
    pub fn misses_lose_events(&self) -> bool {
        !matches!(self.gate, Gate::Why(_) | Gate::Anatomy)
    }
}

const fn claiming(mut p: Program) -> Program {
    p.claims_calls = true;
    p
}

/// Every program, in the order they attach (sched_switch before sys_enter: a call must never
/// be left in a CPU's slot unspilled). The one table autoload, attach and the refusals read;
/// a test checks it names every program of the skeleton.
pub(crate) const PROGRAMS: [Program; 36] = [
    prog(
        "proc_fork",
        Some("sched:sched_process_fork"),
        Gate::Always,
        "process names",
        None,
    ),
    prog(
        "proc_exec",
        Some("sched:sched_process_exec"),
        Gate::Always,
        "process names",
        None,
    ),
    prog(
        "proc_exit",
        Some("sched:sched_process_exit"),
        Gate::Always,
        "process names",
        None,
    ),
    prog(
        "proc_rename",
        Some("task:task_rename"),
        Gate::Always,
        "process names",
        None,
    ),
    prog(
        "proc_cgroup",
        Some("cgroup:cgroup_attach_task"),
        Gate::CgroupMoves,
        "processes moved to another cgroup",
        Some(&CGROUP_ATTACH),
    ),
    claiming(prog(
        "spill_call",
        Some("sched:sched_switch"),
        Gate::Switch,
        "per-CPU call slots; the anatomy of calls",
        Some(&SCHED_SWITCH),
    )),
    prog(
        "anat_waking",
        Some("sched:sched_waking"),
        Gate::Anatomy,
        "the anatomy of calls",
        Some(&SCHED_WAKING),
    ),
    // A span's end attaches before its begin: a flag set is always cleared.
    prog(
        "why_throttle",
        Some("writeback:balance_dirty_pages"),
        Gate::Why(0),
        "why calls blocked",
        Some(&WHY_THROTTLE[0]),
    ),
    prog(
        "why_wb_wait",
        Some("writeback:folio_wait_writeback"),
        Gate::Why(1),
        "why calls blocked",
        Some(&WHY_WB_WAIT[0]),
    ),
    prog(
        "why_lock_out",
        Some("lock:contention_end"),
        Gate::Why(2),
        "why calls blocked",
        Some(&WHY_LOCK[1]),
    ),
    prog(
        "why_lock_in",
        Some("lock:contention_begin"),
        Gate::Why(2),
        "why calls blocked",
        Some(&WHY_LOCK[0]),
    ),
    prog(
        "why_reclaim_out",
        Some("vmscan:mm_vmscan_direct_reclaim_end"),
        Gate::Why(3),
        "why calls blocked",
        Some(&WHY_RECLAIM[1]),
    ),
    prog(
        "why_reclaim_in",
        Some("vmscan:mm_vmscan_direct_reclaim_begin"),
        Gate::Why(3),
        "why calls blocked",
        Some(&WHY_RECLAIM[0]),
    ),
    prog(
        "why_flush_out",
        Some("writeback:writeback_pages_written"),
        Gate::Why(5),
        "why calls blocked",
        Some(&WHY_FLUSH[0]),
    ),
    prog(
        "why_flush_in",
        Some("writeback:writeback_exec"),
        Gate::Why(5),
        "why calls blocked",
        Some(&WHY_FLUSH[1]),
    ),
    prog(
        "why_timer_out",
        Some("timer:timer_expire_exit"),
        Gate::Why(4),
        "why calls blocked",
        Some(&WHY_TIMERS[0]),
    ),
    prog(
        "why_timer_in",
        Some("timer:timer_expire_entry"),
        Gate::Why(4),
        "why calls blocked",
        Some(&WHY_TIMERS[1]),
    ),
    prog(
        "why_hrtimer_out",
        Some("timer:hrtimer_expire_exit"),
        Gate::Why(4),
        "why calls blocked",
        Some(&WHY_TIMERS[2]),
    ),
    prog(
        "why_hrtimer_in",
        Some("timer:hrtimer_expire_entry"),
        Gate::Why(4),
        "why calls blocked",
        Some(&WHY_TIMERS[3]),
    ),
    prog(
        "why_net_out",
        Some("irq:softirq_exit"),
        Gate::Why(6),
        "why calls blocked",
        Some(&WHY_NET[0]),
    ),
    prog(
        "why_net_in",
        Some("irq:softirq_entry"),
        Gate::Why(6),
        "why calls blocked",
        Some(&WHY_NET[1]),
    ),
    claiming(prog(
        "sys_enter",
        Some("raw_syscalls:sys_enter"),
        Gate::Always,
        "every syscall",
        None,
    )),
    claiming(prog(
        "sys_exit",
        Some("raw_syscalls:sys_exit"),
        Gate::Always,
        "every syscall",
        None,
    )),
    prog(
        "blk_insert",
        Some("block:block_rq_insert"),
        Gate::Block,
        "block requests",
        Some(&BLOCK[0]),
    ),
    prog(
        "blk_issue",
        Some("block:block_rq_issue"),
        Gate::Block,
        "block requests",
        Some(&BLOCK[1]),
    ),
    prog(
        "blk_complete",
        Some("block:block_rq_complete"),
        Gate::BlockCompletions,
        "block requests",
        Some(&BLOCK[2]),
    ),
    prog(
        "blk_start",
        Some("block:block_io_start"),
        Gate::BlockIoStart,
        "where a block request is created",
        Some(&BLOCK_IO_START),
    ),
    prog(
        "blk_merge",
        Some("block:block_rq_merge"),
        Gate::BlockMerge,
        "requests merged into others",
        Some(&BLOCK_RQ_MERGE),
    ),
    prog(
        "wb_start",
        Some("writeback:writeback_single_inode_start"),
        Gate::Writeback,
        "the cause of writeback",
        Some(&WRITEBACK[0]),
    ),
    prog(
        "wb_end",
        Some("writeback:writeback_single_inode"),
        Gate::Writeback,
        "the cause of writeback",
        Some(&WRITEBACK[1]),
    ),
    prog(
        "jr_end",
        Some("jbd2:jbd2_end_commit"),
        Gate::Journal,
        "the cause of a journal's requests",
        Some(&JOURNAL[1]),
    ),
    prog(
        "jr_start",
        Some("jbd2:jbd2_start_commit"),
        Gate::Journal,
        "the cause of a journal's requests",
        Some(&JOURNAL[0]),
    ),
    prog(
        "uring_submit",
        Some("io_uring:io_uring_submit_req"),
        Gate::IoUring,
        "io_uring requests",
        Some(&IO_URING[0]),
    ),
    prog(
        "uring_complete",
        Some("io_uring:io_uring_complete"),
        Gate::IoUring,
        "io_uring requests",
        Some(&IO_URING[1]),
    ),
    prog(
        "end_calls",
        None,
        Gate::EndCalls,
        "calls in flight when the recording stops",
        Some(&ITER_TASK),
    ),
    prog(
        "end_rqs",
        None,
        Gate::EndRqs,
        "block requests in flight when the recording stops",
        Some(&END_RQS),
    ),
];

/// The program named `name`, if it is one of [`PROGRAMS`].
pub(crate) fn program(name: &str) -> Option<&'static Program> {
    PROGRAMS.iter().find(|p| p.name == name)
}

/// How many programs the recording can go without: how many times a load is tried again.
pub(crate) fn optional_programs() -> usize {
    PROGRAMS.iter().filter(|p| p.feature.is_some()).count()
}

/// The tracepoint `what` (`category:event`), found by its event's name `key`, in Linux since
/// `since`, which iocap uses for `role`; `lost` is what a recording without it leaves out ("":
/// it cannot go on).
const fn tracepoint(
    key: &'static str,
    what: &'static str,
    since: &'static str,
    role: &'static str,
    lost: &'static str,
) -> Feature {
    Feature {
        key,
        probe: Probe::Tracepoint,
        what,
        since,
        config: "",
        role,
        lost,
    }
}

/// Every feature probed, for `IOCAP_HIDE`'s check of its names.
fn all_features() -> impl Iterator<Item = &'static Feature> {
    const OPTIONAL: [&Feature; 9] = [
        &BLOCK_IO_START,
        &BLOCK_RQ_MERGE,
        &SCHED_SWITCH,
        &SCHED_WAKING,
        &END_CALLS,
        &ITER_TASK,
        &PIDFD_THREAD,
        &END_RQS,
        &CGROUP_ATTACH,
    ];
    REQUIRED
        .iter()
        .chain(&BLOCK)
        .chain(&WRITEBACK)
        .chain(&JOURNAL)
        .chain(&IO_URING)
        .chain(OPTIONAL)
        .chain(WHY.into_iter().flatten())
}

/// GUIDE.md's table of what the recorder uses of the kernel, one row a feature, as [`Kernel`]
/// probes them: what GUIDE.md says is what the recorder does (a test compares the two).
#[cfg(test)]
fn readme_table() -> String {
    let mut t =
        String::from("| `IOCAP_HIDE` | the kernel lacks | Linux that has it | what it costs |\n|---|---|---|---|\n");
    for f in all_features() {
        let since = match f.config {
            "" => f.since.to_owned(),
            c => format!("{}, with `{c}`", f.since),
        };
        let lost = if f.lost.is_empty() { "no recording" } else { f.lost };
        t += &format!("| `{}` | {} | {since} | {lost} |\n", f.key, f.name());
    }
    t
}

/// The running kernel, as far as the probes tell.
pub(crate) struct Kernel {
    btf: KernelBtf,
    /// Features `IOCAP_HIDE` takes for absent.
    hidden: Vec<String>,
    /// `uname -r`, for messages.
    release: String,
}

/// What this kernel lets a recording do, of what its [`Config`] asks.
#[derive(Debug, Default)]
pub(crate) struct Support {
    /// Block requests are recorded.
    pub block: bool,
    /// `block_io_start` keys a request where it is created.
    pub block_io_start: bool,
    /// `block_rq_merge` ends a merged request.
    pub block_rq_merge: bool,
    /// The writeback tracepoints give flushers' requests their cause.
    pub writeback: bool,
    /// The jbd2 tracepoints give a journal commit's requests their cause.
    pub journal: bool,
    /// io_uring requests are recorded.
    pub io_uring: bool,
    /// `sched_switch` spills per-CPU call slots (it is asked only when the slots or the
    /// anatomy are wanted).
    pub sched_switch: bool,
    /// `sched_switch` and `sched_waking` time calls off the CPU, by why.
    pub anatomy: bool,
    /// Of [`WHY`]'s groups, those whose tracepoints say why calls blocked.
    pub why: [bool; WHY.len()],
    /// `io_uring_complete` passes `(ctx, req, cqe)` (older kernels pass the cqe's fields).
    pub uring_complete_cqe: bool,
    /// The `end_calls` iterator hands over the calls in flight at the end (it looks through
    /// the per-CPU slots by a helper of 5.19); else userspace reads them (`ended.rs`).
    pub end_calls: bool,
    /// The `end_rqs` program hands over the block requests in flight at the end.
    pub end_rqs: bool,
    /// `proc_cgroup` follows processes moved to another cgroup.
    pub cgroup_moves: bool,
    /// What was asked for and is left out, each a line for the capture's header
    /// ([`iocap_format::Meta::missing`]).
    pub missing: Vec<String>,
}

impl Support {
    /// Record that `f` is missing and its part left out.
    fn leave_out(&mut self, f: &Feature) {
        self.missing.push(f.missing_note());
    }

    /// The kernel refused to load program `prog`, for `reason` (its error, and the verifier's
    /// last word when it had one): when the recording can go on without it, leave its part
    /// out, say why in [`Support::missing`] and return the note to say once; `None` when
    /// `prog` is not optional.
    pub fn refuse(&mut self, prog: &str, reason: &str) -> Option<String> {
        let f = program(prog)?.feature?;
        if BLOCK.iter().any(|b| std::ptr::eq(b, f)) {
            self.block = false;
            self.block_io_start = false;
            self.block_rq_merge = false;
            self.writeback = false;
            self.journal = false;
            self.end_rqs = false;
        } else if std::ptr::eq(f, &BLOCK_IO_START) {
            self.block_io_start = false;
        } else if std::ptr::eq(f, &BLOCK_RQ_MERGE) {
            self.block_rq_merge = false;
        } else if WRITEBACK.iter().any(|w| std::ptr::eq(w, f)) {
            self.writeback = false;
        } else if JOURNAL.iter().any(|j| std::ptr::eq(j, f)) {
            self.journal = false;
        } else if IO_URING.iter().any(|u| std::ptr::eq(u, f)) {
            self.io_uring = false;
        } else if std::ptr::eq(f, &SCHED_SWITCH) {
            self.sched_switch = false;
            self.anatomy = false;
        } else if std::ptr::eq(f, &SCHED_WAKING) {
            self.anatomy = false;
        } else if let Some(i) = WHY.iter().position(|g| g.iter().any(|w| std::ptr::eq(w, f))) {
            self.why[i] = false;
        } else if std::ptr::eq(f, &ITER_TASK) {
            self.end_calls = false;
        } else if std::ptr::eq(f, &END_RQS) {
            self.end_rqs = false;
        } else if std::ptr::eq(f, &CGROUP_ATTACH) {
            self.cgroup_moves = false;
        }
        let note = format!("{REFUSES} {} ({prog}: {reason}): {}", f.name(), f.lost);
        self.missing.push(note.clone());
        Some(note)
    }
}

impl Kernel {
    /// Read what the probes need: the kernel's BTF (~4 ms), `IOCAP_HIDE`, the release.
    pub fn probe() -> Result<Kernel, Error> {
        let hidden: Vec<String> = std::env::var("IOCAP_HIDE")
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|k| !k.is_empty())
            .map(str::to_owned)
            .collect();
        if let Some(bad) = hidden.iter().find(|k| !all_features().any(|f| f.key == *k)) {
            let keys: Vec<&str> = all_features().map(|f| f.key).collect();
            return Err(Error::Hide(format!(
                "IOCAP_HIDE: `{}` is no feature iocap probes; these are: {}",
                iocap_format::escape::escape(bad.as_bytes()),
                keys.join(", ")
            )));
        }
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        Ok(Kernel {
            btf: if hidden.iter().any(|k| k == BTF.key) {
                KernelBtf::none()
            } else {
                KernelBtf::load()
            },
            hidden,
            release: release.trim().to_owned(),
        })
    }

    /// Whether the kernel has `f`. A probe that cannot tell (an error other than "no") answers
    /// yes: the load then fails with libbpf's own reason.
    fn has(&self, f: &Feature) -> bool {
        if self.hidden.iter().any(|k| k == f.key) {
            return false;
        }
        match f.probe {
            Probe::Btf => self.btf.is_loaded(),
            Probe::Map(t) => t.is_supported().unwrap_or(true),
            Probe::Tracepoint => self.btf.has_tracepoint(f.key),
            Probe::Helper => self.btf.has_helper(f.key),
            Probe::Load => true,
            Probe::PidfdThread => crate::ended::thread_pidfds(),
        }
    }

    /// The first of `features` the kernel lacks.
    fn lacks<'f>(&self, features: &'f [Feature]) -> Option<&'f Feature> {
        features.iter().find(|f| !self.has(f))
    }

    fn unsupported(&self, f: &Feature) -> Error {
        Error::Unsupported {
            kernel: self.release.clone(),
            what: f.name(),
            role: f.role,
            since: f.since_text(),
        }
    }

    /// What a recording of `cfg` (with per-CPU call slots when `cpu_slot`) can do here: an
    /// error when a requirement is missing or nothing that was asked for can be recorded.
    pub fn support(&self, cfg: &Config, cpu_slot: bool) -> Result<Support, Error> {
        let mut s = self.support_unchecked(cfg, cpu_slot)?;
        self.check_classes(cfg, &mut s)?;
        Ok(s)
    }

    /// Once the programs have loaded (some perhaps refused: [`Support::refuse`]): whether the
    /// calls in flight at the stop, when userspace reads them, are found in every thread.
    pub fn check_calls_fallback(&self, cfg: &Config, s: &mut Support) {
        if cfg.syscalls && !s.end_calls && !self.has(&PIDFD_THREAD) {
            s.leave_out(&PIDFD_THREAD);
        }
    }

    /// An error when nothing that was asked for can be recorded (what [`Support::refuse`]
    /// left out counted too).
    pub fn check_classes(&self, cfg: &Config, s: &mut Support) -> Result<(), Error> {
        if cfg.syscalls || s.block || s.io_uring {
            return Ok(());
        }
        let lacked = if cfg.block {
            self.lacks(&BLOCK)
        } else {
            self.lacks(&IO_URING)
        };
        match lacked {
            Some(f) => Err(self.unsupported(f)),
            // Refused, not lacking: the refusal (said already) is the cause.
            None => Err(Error::Bpf(format!(
                "nothing that was asked for can be recorded: {}",
                s.missing.last().map_or("", String::as_str)
            ))),
        }
    }

    fn support_unchecked(&self, cfg: &Config, cpu_slot: bool) -> Result<Support, Error> {
        if let Some(f) = self.lacks(&REQUIRED) {
            return Err(self.unsupported(f));
        }
        let mut s = Support::default();
        if cfg.block {
            match self.lacks(&BLOCK) {
                Some(f) => s.leave_out(f),
                None => {
                    s.block = true;
                    s.end_rqs = self.has(&END_RQS);
                    if !s.end_rqs {
                        s.leave_out(&END_RQS);
                    }
                    s.block_io_start = self.has(&BLOCK_IO_START);
                    s.block_rq_merge = self.has(&BLOCK_RQ_MERGE);
                    let writeback = self.lacks(&WRITEBACK);
                    s.writeback = writeback.is_none();
                    let journal = self.lacks(&JOURNAL);
                    s.journal = journal.is_none();
                    for f in [
                        (!s.block_io_start).then_some(&BLOCK_IO_START),
                        (!s.block_rq_merge).then_some(&BLOCK_RQ_MERGE),
                        writeback,
                        journal,
                    ]
                    .into_iter()
                    .flatten()
                    {
                        s.leave_out(f);
                    }
                }
            }
        }
        if cfg.io_uring {
            match self.lacks(&IO_URING) {
                Some(f) => s.leave_out(f),
                None => {
                    s.io_uring = true;
                    // io_uring_complete(ctx, req, cqe) on recent kernels; (ctx, req,
                    // user_data, res, cflags, extra1, extra2) on older ones (6.1).
                    s.uring_complete_cqe = self.btf.tracepoint_arity("io_uring_complete") == Some(3);
                }
            }
        }
        let anatomy = cfg.anatomy && cfg.syscalls;
        if cpu_slot || anatomy {
            s.sched_switch = self.has(&SCHED_SWITCH);
            if !s.sched_switch {
                s.leave_out(&SCHED_SWITCH);
            }
        }
        if anatomy && s.sched_switch {
            s.anatomy = self.has(&SCHED_WAKING);
            if !s.anatomy {
                s.leave_out(&SCHED_WAKING);
            }
        }
        if s.anatomy {
            for (i, group) in WHY.iter().enumerate() {
                match self.lacks(group) {
                    Some(f) => s.leave_out(f),
                    None => s.why[i] = true,
                }
            }
        }
        if cfg.syscalls {
            s.end_calls = true;
            for f in [&END_CALLS, &ITER_TASK] {
                if s.end_calls && !self.has(f) {
                    s.end_calls = false;
                    s.leave_out(f);
                }
            }
        }
        s.cgroup_moves = self.has(&CGROUP_ATTACH);
        if !s.cgroup_moves {
            s.leave_out(&CGROUP_ATTACH);
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_feature_has_its_own_name_and_the_oldest_linux_is_the_newest_requirement() {
        let keys: Vec<&str> = all_features().map(|f| f.key).collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        let version = |s: &str| -> (u32, u32) {
            let (a, b) = s.split_once('.').unwrap_or((s, "0"));
            (a.parse().unwrap(), b.parse().unwrap())
        };
        let newest = REQUIRED.iter().map(|f| version(f.since)).max();
        assert_eq!(newest, Some(version(OLDEST_LINUX)));
    }

    #[test]
    fn the_probes_answer_on_this_kernel() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            eprintln!("needs root and kernel BTF: skipped");
            return;
        }
        // An error would be taken for "present": these must really answer.
        assert_eq!(MapType::RingBuf.is_supported().ok(), Some(true));
        assert_eq!(MapType::TaskStorage.is_supported().ok(), Some(true));
        let s = Kernel::probe().unwrap().support(&Config::default(), true).unwrap();
        assert!(s.block && s.io_uring && s.sched_switch, "{s:?}");
    }

    /// A refused program of a why group turns that group off, and only it, with a note.
    #[test]
    fn a_refused_why_program_leaves_its_group_out() {
        let mut s = Support {
            anatomy: true,
            why: [true; WHY.len()],
            ..Support::default()
        };
        let note = s.refuse("why_lock_in", "EPERM").expect("optional");
        assert!(
            note.contains("lock:contention_begin") && note.contains("wait.lock"),
            "{note}"
        );
        let gates = Gates {
            support: &s,
            cpu_slot: true,
            completions: true,
        };
        for p in PROGRAMS.iter().filter(|p| p.name.starts_with("why_")) {
            assert_eq!(gates.on(p.gate), !p.name.starts_with("why_lock"), "{}", p.name);
        }
    }

    #[test]
    fn an_optional_program_on_a_tracepoint_attaches_to_the_one_its_feature_probes() {
        let mut checked = 0;
        for p in &PROGRAMS {
            if let (Some(tp), Some(f)) = (p.attach, p.feature) {
                if matches!(f.probe, Probe::Tracepoint) {
                    assert_eq!(tp, f.what, "{p:?}");
                    checked += 1;
                }
            }
        }
        assert_eq!(
            checked, 28,
            "the block, writeback, journal, io_uring, sched_switch, sched_waking, why and cgroup programs"
        );
        // Exactly the programs the recording cannot go without are required.
        let required: Vec<&str> = PROGRAMS
            .iter()
            .filter(|p| p.feature.is_none())
            .map(|p| p.name)
            .collect();
        assert_eq!(
            required,
            [
                "proc_fork",
                "proc_exec",
                "proc_exit",
                "proc_rename",
                "sys_enter",
                "sys_exit"
            ]
        );
    }

    #[test]
    fn readme_lists_every_feature_as_the_probes_know_it() {
        let readme = include_str!("../../../GUIDE.md");
        let want = readme_table();
        assert!(
            readme.contains(&want),
            "GUIDE.md's kernel table is not kernel.rs's; it should read:\n{want}"
        );
    }

    #[test]
    fn a_missing_part_is_named_with_its_release_and_cost() {
        assert_eq!(
            IO_URING[0].missing_note(),
            "the tracepoint io_uring:io_uring_submit_req (Linux 5.19 and later): io_uring requests are not recorded"
        );
    }
}
