//! The event model: what one recorded operation is, and the tables events refer to.
//!
//! An [`Event`] is one completed operation — a syscall (enter → exit) or a block request
//! (issue → complete) — emitted once, at completion. Events are flat rows: fields that do not
//! apply to an event's [`Class`] are zero (or `-1` for `fd`). Events refer to the process and
//! file tables by id, so a reader never has to replay opens and closes to know what an fd was.

use serde::{Deserialize, Serialize};

/// What kind of operation an event records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[repr(u8)]
pub enum Class {
    /// A system call, timed from enter to exit.
    #[default]
    Syscall = 0,
    /// A block I/O request, timed from issue to the device to completion.
    Block = 1,
    /// An io_uring request, timed from its submission to its completion (since format 1.4).
    IoUring = 2,
    /// A journal commit, timed from jbd2's `jbd2_start_commit` to its `jbd2_end_commit`, with
    /// its block requests' sums as a call's (since format 1.20).
    Journal = 3,
}

impl Class {
    /// Every class, by on-disk code.
    pub const ALL: [Class; 4] = [Class::Syscall, Class::Block, Class::IoUring, Class::Journal];

    /// The class with this on-disk code, if any.
    pub fn from_code(code: u64) -> Option<Class> {
        match code {
            0 => Some(Class::Syscall),
            1 => Some(Class::Block),
            2 => Some(Class::IoUring),
            3 => Some(Class::Journal),
            _ => None,
        }
    }

    /// The name used by the filter language and the CLI (`syscall`, `block`, `io_uring`,
    /// `journal`).
    pub fn name(self) -> &'static str {
        match self {
            Class::Syscall => "syscall",
            Class::Block => "block",
            Class::IoUring => "io_uring",
            Class::Journal => "journal",
        }
    }
}

/// The operation of a block request, reduced from the kernel's `REQ_OP_*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum BlockOp {
    /// Data from the device into memory (`REQ_OP_READ`).
    #[default]
    Read = 0,
    /// Data from memory onto the device (`REQ_OP_WRITE`).
    Write = 1,
    /// Empty the device's volatile write cache; moves no data (`REQ_OP_FLUSH`).
    Flush = 2,
    /// Sectors the filesystem no longer uses, the device may forget them (`REQ_OP_DISCARD`, TRIM).
    Discard = 3,
    /// Anything else (write-zeroes, zone management, driver-private).
    Other = 4,
}

impl BlockOp {
    /// The op with this on-disk code; unknown codes read as [`BlockOp::Other`].
    pub fn from_code(code: u8) -> BlockOp {
        match code {
            0 => BlockOp::Read,
            1 => BlockOp::Write,
            2 => BlockOp::Flush,
            3 => BlockOp::Discard,
            _ => BlockOp::Other,
        }
    }

    /// The name used by the filter language (`blk.op`) and the CLI: `read`, `write`, ...
    pub fn name(self) -> &'static str {
        match self {
            BlockOp::Read => "read",
            BlockOp::Write => "write",
            BlockOp::Flush => "flush",
            BlockOp::Discard => "discard",
            BlockOp::Other => "other",
        }
    }
}

/// Block request flags kept in [`Event::flags`] (a reduced, stable set, not the kernel's bits).
pub mod blk_flags {
    /// `REQ_SYNC`: synchronous, a caller waits for it (`fsync`, `O_SYNC` or `O_DIRECT` writes).
    pub const SYNC: u32 = 1 << 0;
    /// `REQ_META`: filesystem metadata, not file data.
    pub const META: u32 = 1 << 1;
    /// `REQ_FUA`: forced unit access, complete only once on stable media.
    pub const FUA: u32 = 1 << 2;
    /// `REQ_PREFLUSH`: the device's write cache is flushed before the request.
    pub const PREFLUSH: u32 = 1 << 3;
    /// `REQ_RAHEAD`: readahead, which no one waits for yet and which may fail.
    pub const RAHEAD: u32 = 1 << 4;
    /// `REQ_PRIO`: boosted priority (metadata the filesystem waits on).
    pub const PRIO: u32 = 1 << 5;
    /// `REQ_IDLE`: in the kernel's words, "anticipate more IO after this one".
    pub const IDLE: u32 = 1 << 6;
    /// The bits above are the kernel's `REQ_*` flags; the ones below are iocap's own.
    pub const KERNEL: u32 = 0x7f;
    /// iocap: the request was inserted into a queue (an I/O scheduler's, or a plug) before it
    /// was issued; without it the request went straight to the driver (since 1.5).
    pub const QUEUED: u32 = 1 << 7;
    /// iocap: the request starts at the sector where the device's previous completed request
    /// ended (biopattern's definition; since 1.5).
    pub const SEQUENTIAL: u32 = 1 << 8;
    /// iocap: the request starts anywhere else. Neither bit: the device's first request in the
    /// capture, or a capture older than 1.5.
    pub const RANDOM: u32 = 1 << 9;
    /// iocap, on an event of any class (since 1.10): the operation was still in flight when
    /// the recording stopped. Its latency runs to the stop, so it is a lower bound, and a
    /// syscall's return value is unknown (0).
    pub const UNFINISHED: u32 = 1 << 10;
    /// Names of the kernel's bits in bit order, for display and the filter language.
    pub const NAMES: [(u32, &str); 7] = [
        (SYNC, "sync"),
        (META, "meta"),
        (FUA, "fua"),
        (PREFLUSH, "preflush"),
        (RAHEAD, "rahead"),
        (PRIO, "prio"),
        (IDLE, "idle"),
    ];
}

/// One completed operation.
///
/// `ts` is the start (syscall enter, block issue) in nanoseconds of `CLOCK_BOOTTIME`;
/// [`Meta::boot_to_wall_ns`] turns it into wall-clock time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    /// Syscall, block request or io_uring request: which of the fields below apply. An
    /// io_uring request has the syscall fields (`nr` is its opcode, `ret` its completion's
    /// result) and the `disk_*` ones.
    pub class: Class,
    /// Start of the operation, ns since boot.
    pub ts: u64,
    /// Syscall: exit − enter. Block: complete − issue (device time, as biolatency). io_uring:
    /// completion − submission (a multishot request's later completions: − the previous one).
    pub latency: u64,
    /// Thread group id (what users call the pid).
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Id in the process table ([`ProcEntry::id`]); 0 when unknown.
    pub proc: u32,
    /// Syscall number (architecture in [`Meta::arch`]); io_uring: the opcode
    /// (`IORING_OP_*`, named by [`crate::uring::op_name`]); block: its cause's (the syscall's
    /// number, the io_uring opcode), else 0.
    pub nr: u32,
    /// Syscall return value, io_uring completion result; block: 0 on success, a negative
    /// errno on error.
    pub ret: i64,
    /// The fd the syscall (io_uring request) operated on, -1 when it takes none or it is a
    /// registered (fixed) file. Block: -1.
    pub fd: i32,
    /// Id in the file table ([`FileEntry::id`]); 0 when the event has no known file.
    pub file: u32,
    /// Bytes transferred (I/O syscalls, block requests); 0 otherwise.
    pub bytes: u64,
    /// Block: device number as the kernel's `dev_t` (major << 20 | minor). Syscalls: 0.
    pub dev: u32,
    /// Block: first sector (512-byte units).
    pub sector: u64,
    /// Block: time from the request's making to its issue, ns: from the kernel's own start
    /// (`start_time_ns`, what /proc/diskstats times waits from) when it keeps one, else from
    /// the insert. Recorders before 2026-11-23 wrote insert to issue, 0 without an insert.
    pub queue: u64,
    /// Block: [`BlockOp`] code.
    pub op: u8,
    /// Block: [`blk_flags`] bits. Any class: [`blk_flags::UNFINISHED`].
    pub flags: u32,
    /// Block: what the request was issued for, a [`Cause`] code. Syscalls: 0.
    pub cause: u8,
    /// Block with cause [`Cause::Syscall`] or [`Cause::IoUring`]: how long before this
    /// request's `ts` that syscall (io_uring request) started, so its event is the syscall
    /// (io_uring request) of the same `tid` (the submitting thread) at `ts - link`. Kept as
    /// an offset, which is small and compresses. [`Cause::Journal`]: how long before `ts` the
    /// commit began. 0 otherwise.
    pub link: u64,
    /// Syscall, io_uring: block requests it issued (created while it was in flight). Block: 0.
    pub disk_reqs: u32,
    /// Syscall: the bytes of those requests, as issued to the device. Block: 0.
    pub disk_bytes: u64,
    /// Syscall: ns of its latency during which at least one of its requests was in the block
    /// layer (created, not yet complete). Block: 0.
    pub disk_time: u64,
    /// The CPU the event ended on: a syscall's exit, a block request's completion (where its
    /// interrupt ran), an io_uring request's completion (since 1.5; 0 in older captures).
    pub cpu: u32,
    /// Positional I/O syscalls (`pread64`, `pwrite64`, `preadv`, `pwritev`, `preadv2`,
    /// `pwritev2`): the file offset they were given; 0 otherwise (since 1.5). `preadv2`'s
    /// offset -1 (the file's position) is stored as `u64::MAX`. A block request of cause
    /// [`Cause::Journal`]: the journal transaction (since 1.19).
    pub offset: u64,
    /// Block: the request's I/O priority as the kernel keeps it (`class << 13 | hint << 3 |
    /// level`, see ioprio_set(2)); 0 is none, the device's default (since 1.18).
    pub prio: u32,
    /// Syscall: ns of its latency its thread was runnable and not running (preempted, or
    /// woken and waiting for a CPU) (since 1.19; 0 when not recorded).
    pub runq: u64,
    /// Syscall: ns of its latency its thread was blocked (asleep until woken) (since 1.19).
    pub wait: u64,
    /// Syscall: how many times its thread blocked (since 1.19).
    pub sleeps: u32,
    /// Syscall: the thread that woke its longest sleep (since 1.19): 0 for none, or for the
    /// idle task (an interrupt on an idle CPU: a timer, a device).
    pub waker: u32,
    /// Syscall: ns of `wait` its thread blocked on a block request's completion (any request's: its own, the journal's, a flusher's) (since 1.19).
    pub wait_disk: u64,
    /// Syscall: ns of `wait` its thread blocked on dirty page throttling (`balance_dirty_pages`) (since 1.19).
    pub wait_throttle: u64,
    /// Syscall: ns of `wait` its thread blocked on a folio's writeback, or a flusher thread writing an inode back (since 1.19).
    pub wait_writeback: u64,
    /// Syscall: ns of `wait` its thread blocked on the journal thread (jbd2) (since 1.19).
    pub wait_journal: u64,
    /// Syscall: ns of `wait` its thread blocked on lock contention (since 1.19).
    pub wait_lock: u64,
    /// Syscall: ns of `wait` its thread blocked on direct reclaim (since 1.19).
    pub wait_reclaim: u64,
    /// Syscall: ns of `wait` its thread blocked on a timer (a sleep, a timeout) (since 1.19).
    pub wait_timer: u64,
    /// Syscall: ns of `wait` its thread blocked on another thread inside a call (a pipe, a futex, a socket) (since 1.19).
    pub wait_call: u64,
    /// Syscall: ns of `wait` its thread blocked on the network: woken by the receive softirq (since 1.19).
    pub wait_net: u64,
    /// Syscall: ns of `wait` its thread blocked until a signal woke it (since 1.19).
    pub wait_signal: u64,
    /// Syscall: ns of `wait` its thread blocked on anything else: a thread outside any call, or a sleep with no waking seen (since 1.19).
    pub wait_other: u64,
    /// Syscall: why its thread blocked the most, a [`Reason`] code (since 1.19).
    pub reason: u8,
    /// Syscall: ns after `ts` at which `waker` woke its longest sleep (0: none): what the
    /// waker was doing then is its event that holds that instant, else the last to end
    /// before it (since 1.20).
    pub woken: u64,
    /// Syscall: the process of `waker`, an id in the process table (0: none or unknown)
    /// (since 1.19).
    pub waker_proc: u32,
    /// Syscall: its user stack as it returned, an id in the stack table (0: none; recorded
    /// with `--stacks`, since 1.21).
    pub stack_user: u32,
    /// Syscall: the kernel stack of its longest sleep, where it slept, an id in the stack
    /// table (0: none; since 1.21).
    pub stack_kernel: u32,
}

/// Why a call's thread blocked: each sleep by what the thread said it was doing as it went to
/// sleep, else by who woke it ([`Event::reason`] is the one with the most of its `wait`; since
/// format 1.19). Each has its own time in the event (`wait_disk` ...).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Reason {
    /// It never blocked (or the recorder did not time it).
    #[default]
    None = 0,
    /// Woken by a block request's completion.
    Disk = 1,
    /// Dirty page throttling.
    Throttle = 2,
    /// Waiting on a folio's writeback, or woken by a flusher thread writing an inode back.
    Writeback = 3,
    /// Woken by the journal thread (jbd2).
    Journal = 4,
    /// Lock contention.
    Lock = 5,
    /// Direct reclaim.
    Reclaim = 6,
    /// Woken by a timer.
    Timer = 7,
    /// Woken by another thread inside a call.
    Call = 8,
    /// Woken by the network's receive softirq (a packet's arrival).
    Net = 9,
    /// Woken by a signal sent to its process.
    Signal = 10,
    /// Anything else.
    Other = 11,
}

impl Reason {
    /// Every reason, by on-disk code.
    pub const ALL: [Reason; 12] = [
        Reason::None,
        Reason::Disk,
        Reason::Throttle,
        Reason::Writeback,
        Reason::Journal,
        Reason::Lock,
        Reason::Reclaim,
        Reason::Timer,
        Reason::Call,
        Reason::Net,
        Reason::Signal,
        Reason::Other,
    ];

    /// The reason with this on-disk code; unknown codes read as [`Reason::Other`].
    pub fn from_code(code: u8) -> Reason {
        Reason::ALL.get(usize::from(code)).copied().unwrap_or(Reason::Other)
    }

    /// The name used by the filter language (`wait.reason`), and the suffix of its time's
    /// field (`wait.disk` ...): `none`, `disk`, `throttle`, `writeback`, `journal`, `lock`,
    /// `reclaim`, `timer`, `call`, `net`, `signal`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            Reason::None => "none",
            Reason::Disk => "disk",
            Reason::Throttle => "throttle",
            Reason::Writeback => "writeback",
            Reason::Journal => "journal",
            Reason::Lock => "lock",
            Reason::Reclaim => "reclaim",
            Reason::Timer => "timer",
            Reason::Call => "call",
            Reason::Net => "net",
            Reason::Signal => "signal",
            Reason::Other => "other",
        }
    }
}

/// The columns of [`Event::wait_by`], in its order.
pub const WAIT_COLS: [crate::Col; 11] = {
    use crate::Col;
    [
        Col::WaitDisk,
        Col::WaitThrottle,
        Col::WaitWriteback,
        Col::WaitJournal,
        Col::WaitLock,
        Col::WaitReclaim,
        Col::WaitTimer,
        Col::WaitCall,
        Col::WaitNet,
        Col::WaitSignal,
        Col::WaitOther,
    ]
};

impl Event {
    /// Of `wait`, the time of each reason but [`Reason::None`], in code order
    /// (their columns: [`WAIT_COLS`]).
    pub fn wait_by(&self) -> [u64; 11] {
        [
            self.wait_disk,
            self.wait_throttle,
            self.wait_writeback,
            self.wait_journal,
            self.wait_lock,
            self.wait_reclaim,
            self.wait_timer,
            self.wait_call,
            self.wait_net,
            self.wait_signal,
            self.wait_other,
        ]
    }

    /// The reason with the most of `wait` (the first of equals), [`Reason::None`] when it is 0.
    pub fn main_reason(&self) -> Reason {
        let by = self.wait_by();
        match by.iter().enumerate().rev().max_by_key(|&(_, t)| *t) {
            Some((i, &t)) if t > 0 => Reason::ALL[i + 1],
            _ => Reason::None,
        }
    }
}

/// Why a block request was issued: the span its submitting thread was inside when the request
/// was created (since format 1.3; older captures read as [`Cause::None`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Cause {
    /// Outside any traced span: a page fault, readahead from a kernel thread, a journal before
    /// format 1.19, or a capture older than 1.3.
    #[default]
    None = 0,
    /// A syscall of the submitting thread, which [`Event::link`] and `tid` name.
    Syscall = 1,
    /// A flusher thread writing back one inode's dirty pages.
    Writeback = 2,
    /// An io_uring request submitted by the submitting thread, which [`Event::link`] and `tid`
    /// name (since format 1.4).
    IoUring = 3,
    /// A journal commit (jbd2's, from `jbd2_start_commit` to `jbd2_end_commit`): `tid` is the
    /// journal thread's, [`Event::link`] the commit's start, [`Event::offset`] the transaction
    /// (since 1.19).
    Journal = 4,
}

impl Cause {
    /// Every cause, by on-disk code.
    pub const ALL: [Cause; 5] = [
        Cause::None,
        Cause::Syscall,
        Cause::Writeback,
        Cause::IoUring,
        Cause::Journal,
    ];

    /// The cause with this on-disk code; unknown codes read as [`Cause::None`].
    pub fn from_code(code: u8) -> Cause {
        Cause::ALL.get(usize::from(code)).copied().unwrap_or_default()
    }

    /// The name used by the filter language (`blk.cause`): `none`, `syscall`, `writeback`,
    /// `io_uring`, `journal`.
    pub fn name(self) -> &'static str {
        match self {
            Cause::None => "none",
            Cause::Syscall => "syscall",
            Cause::Writeback => "writeback",
            Cause::IoUring => "io_uring",
            Cause::Journal => "journal",
        }
    }
}

impl Event {
    /// A syscall event with every block-only field cleared.
    pub fn syscall(ts: u64, latency: u64, pid: u32, tid: u32, nr: u32, ret: i64) -> Event {
        Event {
            class: Class::Syscall,
            ts,
            latency,
            pid,
            tid,
            nr,
            ret,
            fd: -1,
            ..Event::default()
        }
    }

    /// Whether the operation was still in flight when the recording stopped
    /// ([`blk_flags::UNFINISHED`]): its latency is a lower bound.
    pub fn unfinished(&self) -> bool {
        self.flags & blk_flags::UNFINISHED != 0
    }

    /// The end of the operation, saturating.
    pub fn end(&self) -> u64 {
        self.ts.saturating_add(self.latency)
    }
}

/// What an fd refers to, as sysdig's `fd.type`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[repr(u8)]
pub enum FdType {
    /// The recorder could not tell (an anonymous inode of a kind it does not know).
    #[default]
    Unknown = 0,
    /// A regular file.
    File = 1,
    /// A directory, opened to list it or as the base of `openat` and friends.
    Directory = 2,
    /// An `AF_INET` socket.
    Ipv4 = 3,
    /// An `AF_INET6` socket.
    Ipv6 = 4,
    /// An `AF_UNIX` socket.
    Unix = 5,
    /// A pipe or FIFO end.
    Pipe = 6,
    /// An `eventfd` (sysdig's name).
    Event = 7,
    /// A `signalfd`.
    Signalfd = 8,
    /// An `epoll` instance.
    Eventpoll = 9,
    /// An `inotify` instance.
    Inotify = 10,
    /// A `timerfd`.
    Timerfd = 11,
    /// A `memfd_create` file: anonymous memory with a file's interface.
    Memfd = 12,
    /// A socket of another family (netlink, packet, vsock, ...).
    Socket = 13,
    /// A character or block device node, FIFO or other special file opened by path.
    Device = 14,
    /// A `pidfd_open` or `CLONE_PIDFD` handle on a process.
    Pidfd = 15,
    /// A `userfaultfd`.
    Userfaultfd = 16,
    /// A BPF map, program or link.
    Bpf = 17,
    /// A `perf_event_open` event.
    Perf = 18,
    /// An `io_uring` instance.
    IoUring = 19,
    /// A `fanotify` instance.
    Fanotify = 20,
}

impl FdType {
    /// Every type, by on-disk code (`FdType::ALL[code]` is the type with that code).
    pub const ALL: [FdType; 21] = [
        FdType::Unknown,
        FdType::File,
        FdType::Directory,
        FdType::Ipv4,
        FdType::Ipv6,
        FdType::Unix,
        FdType::Pipe,
        FdType::Event,
        FdType::Signalfd,
        FdType::Eventpoll,
        FdType::Inotify,
        FdType::Timerfd,
        FdType::Memfd,
        FdType::Socket,
        FdType::Device,
        FdType::Pidfd,
        FdType::Userfaultfd,
        FdType::Bpf,
        FdType::Perf,
        FdType::IoUring,
        FdType::Fanotify,
    ];

    /// The type with this on-disk code; unknown codes read as [`FdType::Unknown`].
    pub fn from_code(code: u8) -> FdType {
        FdType::ALL.get(usize::from(code)).copied().unwrap_or(FdType::Unknown)
    }

    /// sysdig-style name: `file`, `directory`, `ipv4`, `unix`, `pipe`, `event`, ...
    pub fn name(self) -> &'static str {
        match self {
            FdType::Unknown => "unknown",
            FdType::File => "file",
            FdType::Directory => "directory",
            FdType::Ipv4 => "ipv4",
            FdType::Ipv6 => "ipv6",
            FdType::Unix => "unix",
            FdType::Pipe => "pipe",
            FdType::Event => "event",
            FdType::Signalfd => "signalfd",
            FdType::Eventpoll => "eventpoll",
            FdType::Inotify => "inotify",
            FdType::Timerfd => "timerfd",
            FdType::Memfd => "memfd",
            FdType::Socket => "socket",
            FdType::Device => "device",
            FdType::Pidfd => "pidfd",
            FdType::Userfaultfd => "userfaultfd",
            FdType::Bpf => "bpf",
            FdType::Perf => "perf",
            FdType::IoUring => "io_uring",
            FdType::Fanotify => "fanotify",
        }
    }

    /// The type with this name, as accepted by the filter language.
    pub fn from_name(name: &str) -> Option<FdType> {
        FdType::ALL.iter().copied().find(|t| t.name() == name)
    }
}

/// An interned string's id in the string table. Id 0 is always the empty string.
pub type StrId = u32;

/// A process (thread group) as it was from `start_ts` on. An `exec` or a `comm` change
/// gives the same pid a new entry with a new id; events carry the id that was current.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcEntry {
    /// Table id, unique in the file, never 0.
    pub id: u32,
    /// Thread group id (what users call the pid).
    pub pid: u32,
    /// The parent's pid when this entry became current; 0 for init and kthreadd, which have none.
    pub ppid: u32,
    /// `comm` (at most 15 bytes in the kernel).
    pub name: StrId,
    /// Executable path.
    pub exe: StrId,
    /// Command line, arguments joined by spaces.
    pub cmdline: StrId,
    /// When this entry became current (ns since boot); 0 when it predates the capture.
    pub start_ts: u64,
    /// Who the process runs as: its effective uid when the entry became current, `None` when
    /// the recorder could not tell (and in captures older than 1.5).
    pub uid: Option<u32>,
    /// That uid's user name on the recording host (from its passwd), 0 when it has none.
    pub user: StrId,
    /// The process's cgroup (v2) path on the recording host, `/system.slice/x.service`; 0 when
    /// unknown. A container's cgroup names it (`.../docker-<id>.scope`).
    pub cgroup: StrId,
    /// The container the process ran in: its [`ContainerEntry`]'s id, 0 for none (the host,
    /// or a capture older than 1.23: [`Meta::containers`] tells which).
    pub container: u32,
}

/// A container, as its cgroup path and its runtime named it when the recorder first saw one
/// of its processes. The strings are 0 where the runtime did not say (or did not answer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerEntry {
    /// Table id, unique in the file, never 0.
    pub id: u32,
    /// Who ran it, as its cgroup path (or the runtime's state where the path does not) says.
    pub runtime: crate::container::Runtime,
    /// Its full id (64 hex digits; a machine's name for systemd-nspawn).
    pub full_id: StrId,
    /// Its name as the runtime lists it (`docker ps`, `podman ps`); for a Kubernetes
    /// container, the container's name in its pod.
    pub name: StrId,
    /// The image it was made from, as the runtime names it (`localhost/bb:latest`).
    pub image: StrId,
    /// The Kubernetes pod's name.
    pub pod_name: StrId,
    /// The Kubernetes pod's uid.
    pub pod_uid: StrId,
    /// The Kubernetes pod's namespace.
    pub namespace: StrId,
}

/// An open file description as seen through one process's fd, from open to close.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileEntry {
    /// Table id, unique in the file, never 0.
    pub id: u32,
    /// The process (thread group) whose fd table holds it.
    pub pid: u32,
    /// The fd number in that process; a later entry may reuse it after a close.
    pub fd: i32,
    /// What the fd refers to.
    pub kind: FdType,
    /// Path, or `laddr:lport->raddr:rport` for sockets, `pipe:[ino]` and so on.
    pub name: StrId,
    /// Device of the file's filesystem (kernel `dev_t`), 0 when none.
    pub dev: u32,
    /// When the fd was opened (ns since boot); 0 when it was open before the capture started.
    pub open_ts: u64,
}

impl FileEntry {
    /// What the entry names: all a reader keeps of it unless asked for more.
    pub fn target(&self) -> FdTarget {
        FdTarget {
            kind: self.kind,
            name: self.name,
            dev: self.dev,
        }
    }
}

/// What a file entry's fd refers to: its type, its name and the device of its filesystem, as
/// every filter, breakdown and list reads it. A reader keeps each distinct one once, and for each
/// entry only which it is: a tree walk's recording has an entry for every open (546,461 in 4.2
/// × 10^6 events of tar and find) but few distinct files (25,157). An entry's process, fd
/// and opening time stay in the file, read on request ([`crate::ReadOptions::file_details`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FdTarget {
    /// What the fd refers to.
    pub kind: FdType,
    /// Path, or `laddr:lport->raddr:rport` for sockets, `pipe:[ino]` and so on.
    pub name: StrId,
    /// Device of the file's filesystem (kernel `dev_t`), 0 when none.
    pub dev: u32,
}

/// Which side of the kernel a stack of the stack table is of.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StackKind {
    /// A process's own code, as a call returned to it.
    #[default]
    User = 0,
    /// The kernel's, where a call's thread slept.
    Kernel = 1,
}

/// One frame of a stack: where, and what it is when the recorder could name it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StackFrame {
    /// A user frame: its offset in `module`'s file when the recorder found the file (the same
    /// in every run of that binary), else its virtual address; a kernel frame: its address.
    pub addr: u64,
    /// The function's name, a string id (0: not named).
    pub sym: StrId,
    /// The file it is in, a string id: a binary or library's path, `[kernel]`, or a kernel
    /// module's `[name]` (0: unknown).
    pub module: StrId,
    /// A user frame's file's build ID, in hex, a string id (0: none or unknown): with the
    /// offset, what a host with the file (or its debug file) names the frame by later.
    pub build_id: StrId,
}

/// A stack of the stack table (since 1.21): its frames innermost first, as the kernel gives
/// them. Events refer to it by id ([`Event::stack_user`], [`Event::stack_kernel`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Stack {
    /// User or kernel.
    pub kind: StackKind,
    /// Innermost first: a user stack starts in the function that made the call (libc's
    /// wrapper), a kernel stack in `__schedule`.
    pub frames: Vec<StackFrame>,
}

/// A block device the capture may mention.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Device {
    /// Kernel `dev_t` (major << 20 | minor), as in [`Event::dev`].
    pub dev: u32,
    /// Disk name: `vda`, `nvme0n1`, `loop3`, `sdb1`.
    pub name: String,
}

/// Make a kernel-internal `dev_t` (as tracepoints report it) from major and minor.
pub fn mkdev(major: u32, minor: u32) -> u32 {
    (major << 20) | (minor & 0xfffff)
}

/// The `major:minor` of a kernel-internal `dev_t`.
pub fn dev_parts(dev: u32) -> (u32, u32) {
    (dev >> 20, dev & 0xfffff)
}

/// Capture metadata, stored once in the header frame (as JSON).
///
/// Missing fields read as their defaults and unknown fields are ignored, so minor versions
/// can add fields in either direction.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// Version of the iocap that wrote the file.
    pub iocap_version: String,
    /// Host name of the traced machine (`uname -n`).
    pub host: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Architecture whose syscall numbers the events use (`x86_64`, `aarch64`).
    pub arch: String,
    /// Add to an event's `ts` to get ns since the Unix epoch.
    pub boot_to_wall_ns: i64,
    /// When recording started, ns since boot.
    pub start_ts: u64,
    /// The recorder's command line.
    pub command_line: Vec<String>,
    /// The filter given at record time, if any.
    pub filter: Option<String>,
    /// Online CPUs while recording.
    pub cpus: u32,
    /// Block devices known when recording started; more may follow in device table frames.
    pub devices: Vec<Device>,
    /// With rotation (`record -C`): the name of the file the recording goes on in once this
    /// one is full, in the same directory (`trace.cap1` after `trace.cap`). A reader following
    /// the recording moves on to it when this file is finished; `None` without rotation.
    pub next_file: Option<String>,
    /// What the recording was asked for and its kernel could not record, one line each naming
    /// the missing feature, the oldest Linux that has it and what was left out (since 1.6;
    /// empty: nothing was missing, or an older recorder did not say).
    pub missing: Vec<String>,
    /// Of a recording narrowed to some processes (`record -p`, `-c`): what it also kept of
    /// other threads' events because the traced calls' chains reach them (the writeback of
    /// their files, the journal's commits, the flushes they asked for), a line each (since
    /// 1.20; empty: not narrowed, or an older recorder did not say).
    pub kept: Vec<String>,
    /// `record --stacks`: the latency from which a call kept its stacks, ns (since 1.21;
    /// `None`: no stacks were taken).
    pub stacks_min_ns: Option<u64>,
    /// The recorder placed each process in its container ([`ProcEntry::container`], 0 the
    /// host); false in captures older than 1.23, whose processes' containers are not known.
    pub containers: bool,
}

impl Meta {
    /// The capture's id: 16 hex digits of a hash (FNV-1a, 64 bits) of its host, boot-to-wall
    /// offset and start, the same for every reader of the file and different for each recording
    /// (each file of a rotation starts anew). What tells captures apart where several are read
    /// together (`capture.id`, the Parquet export's column).
    pub fn capture_id(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        let (wall, start) = (self.boot_to_wall_ns.to_le_bytes(), self.start_ts.to_le_bytes());
        let bytes = self.host.as_bytes().iter().chain(&[0u8]).chain(&wall).chain(&start);
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{h:016x}")
    }

    /// Where the recording goes on after the file at `path` ([`Meta::next_file`] in its
    /// directory), when that is a plain file name: a header naming another directory is not
    /// followed.
    pub fn next_path(&self, path: &std::path::Path) -> Option<std::path::PathBuf> {
        let name = self.next_file.as_deref()?;
        let plain = !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\']);
        plain.then(|| path.with_file_name(name))
    }
}

/// Cumulative per-CPU counts of events the kernel could not hand over (ring buffer full).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DropStats {
    /// When the counters were read, ns since boot.
    pub ts: u64,
    /// Cumulative drops per CPU since recording started.
    pub per_cpu: Vec<u64>,
}

impl DropStats {
    /// Drops on every CPU together, since recording started (saturating: the counts come
    /// from the file, which may claim anything).
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().fold(0, |a, &b| a.saturating_add(b))
    }
}

/// Events dropped of one process (its thread group), as the recorder placed them (1.22).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProcDrops {
    /// The process's pid (thread group id), as [`Event::pid`].
    pub pid: u32,
    /// Its process table entry ([`ProcEntry::id`]) when the recorder knew it, else 0. A
    /// joined recording's ids are shifted as its events' are.
    pub proc: u32,
    /// Events dropped.
    pub count: u64,
}

/// One reading of the drop counters placed by process (frame kind 18, since 1.22): how many
/// events of each process were dropped since the previous reading, in the file, of the
/// recorder. Drops between two readings happened between their `ts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcDropStats {
    /// When the counters were read, ns since boot: the `ts` of the [`DropStats`] it goes with.
    pub ts: u64,
    /// The processes whose count grew, in increasing pid order, each once.
    pub procs: Vec<ProcDrops>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_id_is_fixed_by_host_clock_and_start() {
        let m = Meta {
            host: "db1".into(),
            boot_to_wall_ns: 1_700_000_000_000_000_000,
            start_ts: 5_000_000_000,
            ..Meta::default()
        };
        let id = m.capture_id();
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        // Whatever else the header says; another host, boot or start is another capture.
        let same = Meta {
            kernel: "6.1".into(),
            cpus: 8,
            ..m.clone()
        };
        assert_eq!(same.capture_id(), id);
        for other in [
            Meta {
                host: "db2".into(),
                ..m.clone()
            },
            Meta {
                boot_to_wall_ns: m.boot_to_wall_ns + 1,
                ..m.clone()
            },
            Meta {
                start_ts: m.start_ts + 1,
                ..m.clone()
            },
        ] {
            assert_ne!(other.capture_id(), id);
        }
    }

    #[test]
    fn the_next_file_is_a_plain_name_beside_this_one() {
        let at = |next: &str| {
            let m = Meta {
                next_file: Some(next.into()),
                ..Meta::default()
            };
            m.next_path(std::path::Path::new("/data/trace.cap"))
        };
        assert_eq!(at("trace.cap1"), Some("/data/trace.cap1".into()));
        for bad in ["", ".", "..", "../etc/passwd", "/etc/passwd", "a/b", "a\\b"] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(Meta::default().next_path(std::path::Path::new("x")), None);
    }
}
