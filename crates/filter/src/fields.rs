//! The fields of the filter language: names, types, descriptions, and what each one's value is
//! for an event.
//!
//! This is the single source of truth: the checker accepts exactly these names, the compiler
//! evaluates exactly these meanings over columns, and `iocap events --json` / `export` print
//! [`value`] under these names, so an output key means what a filter on it compares.

use std::borrow::Cow;
use std::fmt;

use iocap_format::{
    blk_flags, dev_parts, syscalls, uring, BlockOp, Cause, Class, Col, ColSlice, Event, FdType, Holds, Meta, Reason,
    Tables,
};

use crate::lookup::{Lookup, ProcView};

/// What a field holds, which decides the operators and literals it accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// Text: `= != contains icontains startswith endswith glob in exists`.
    Str,
    /// A signed integer.
    Int,
    /// An unsigned integer.
    UInt,
    /// Nanoseconds; literals take a unit: `500us`, `1.5ms`, `2s`.
    Duration,
    /// A size in bytes; literals may take a unit: `4KiB`, `1MB`.
    Bytes,
    /// `true` or `false`; the field alone is a condition (`evt.failed`).
    Bool,
}

impl FieldType {
    /// The name `iocap fields` shows.
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Str => "string",
            FieldType::Int => "int",
            FieldType::UInt => "uint",
            FieldType::Duration => "duration",
            FieldType::Bytes => "size",
            FieldType::Bool => "bool",
        }
    }

    pub(crate) fn is_numeric(self) -> bool {
        !matches!(self, FieldType::Str)
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which value a field reads; aliases share one.
///
/// Each variant is named by the field it backs; [`info`] gives the field's type and what it
/// means (the description `iocap fields` prints), kept in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldId {
    /// `proc.name`.
    ProcName,
    /// `proc.pid`.
    ProcPid,
    /// `proc.ppid`.
    ProcPpid,
    /// `proc.exe`.
    ProcExe,
    /// `proc.cmdline`.
    ProcCmdline,
    /// `thread.tid`, and its alias `proc.tid`.
    ThreadTid,
    /// `evt.type`.
    EvtType,
    /// `evt.class`.
    EvtClass,
    /// `evt.res`.
    EvtRes,
    /// `evt.failed`.
    EvtFailed,
    /// `evt.unfinished`.
    EvtUnfinished,
    /// `evt.errno`.
    EvtErrno,
    /// `evt.time`: relative to the capture's start (of several read together, the earliest's,
    /// in wall-clock time), not since boot.
    EvtTime,
    /// `latency`, and its alias `evt.latency`.
    Latency,
    /// `fd.num`.
    FdNum,
    /// `fd.type`.
    FdType,
    /// `fd.name`.
    FdName,
    /// `fd.directory`.
    FdDirectory,
    /// `fd.filename`.
    FdFilename,
    /// `fd.dev`: the file's filesystem's device, where [`FieldId::BlkDev`] is a request's.
    FdDev,
    /// `io.bytes`.
    IoBytes,
    /// `io.dir`.
    IoDir,
    /// `evt.is_io_read`.
    IsIoRead,
    /// `evt.is_io_write`.
    IsIoWrite,
    /// `evt.waits`.
    EvtWaits,
    /// `blk.dev`.
    BlkDev,
    /// `blk.op`.
    BlkOp,
    /// `blk.sector`.
    BlkSector,
    /// `blk.bytes`.
    BlkBytes,
    /// `blk.queue`.
    BlkQueue,
    /// `blk.flags`.
    BlkFlags,
    /// `blk.latency`: the same value as `latency`, but absent for syscalls.
    BlkLatency,
    /// `blk.total`.
    BlkTotal,
    /// `blk.cause`.
    BlkCause,
    /// `blk.syscall`.
    BlkSyscall,
    /// `disk.requests`.
    DiskRequests,
    /// `disk.bytes`.
    DiskBytes,
    /// `disk.time`.
    DiskTime,
    /// `evt.cpu`.
    EvtCpu,
    /// `io.offset`.
    IoOffset,
    /// `user.uid`.
    UserUid,
    /// `user.name`.
    UserName,
    /// `proc.cgroup`.
    ProcCgroup,
    /// `container.id`: the short id, `host` outside any container.
    ContainerId,
    /// `container.full_id`.
    ContainerFullId,
    /// `container.runtime`: `host` outside any container.
    ContainerRuntime,
    /// `container.name`: `host` outside any container.
    ContainerName,
    /// `container.image`.
    ContainerImage,
    /// `k8s.pod.name`.
    K8sPodName,
    /// `k8s.pod.uid`.
    K8sPodUid,
    /// `k8s.ns.name`.
    K8sNsName,
    /// `blk.pattern`.
    BlkPattern,
    /// `blk.queued`.
    BlkQueued,
    /// `blk.prio`.
    BlkPrio,
    /// `cpu.time`: a call's latency less `runq.time` and `wait.time`.
    CpuTime,
    /// `runq.time`.
    RunqTime,
    /// `wait.time`.
    WaitTime,
    /// `wait.count`.
    WaitCount,
    /// `waker.tid`.
    WakerTid,
    /// `waker.after`.
    WakerAfter,
    /// `wait.disk`.
    WaitDisk,
    /// `wait.throttle`.
    WaitThrottle,
    /// `wait.writeback`.
    WaitWriteback,
    /// `wait.journal`.
    WaitJournal,
    /// `wait.lock`.
    WaitLock,
    /// `wait.reclaim`.
    WaitReclaim,
    /// `wait.timer`.
    WaitTimer,
    /// `wait.call`.
    WaitCall,
    /// `wait.net`.
    WaitNet,
    /// `wait.signal`.
    WaitSignal,
    /// `wait.other`.
    WaitOther,
    /// `wait.reason`.
    WaitReason,
    /// `waker.proc.name`.
    WakerProcName,
    /// `stack.user`: a call's user stack, its frames' names joined by `;`, outermost first.
    StackUser,
    /// `stack.kernel`: the kernel stack of a call's longest sleep, as `stack.user`.
    StackKernel,
    /// `stack.top`: the innermost frame of a call's user stack.
    StackTop,
    /// `host`: the capture's, one value for all its events ([`FieldId::is_per_capture`]).
    Host,
    /// `capture.id`: [`Meta::capture_id`], one value for all a capture's events.
    CaptureId,
}

/// The `container.*` and `k8s.*` fields, as a pattern: each read from the container entry of
/// the event's process, so process fields like `proc.name`.
macro_rules! container_fields {
    () => {
        FieldId::ContainerId
            | FieldId::ContainerFullId
            | FieldId::ContainerRuntime
            | FieldId::ContainerName
            | FieldId::ContainerImage
            | FieldId::K8sPodName
            | FieldId::K8sPodUid
            | FieldId::K8sNsName
    };
}
pub(crate) use container_fields;

impl FieldId {
    /// Whether the field has one value for every event of a capture, read from its header
    /// (`host`, `capture.id`): a filter decides it once per capture, and it says which of
    /// several captures read together an event came from.
    pub fn is_per_capture(self) -> bool {
        matches!(self, FieldId::Host | FieldId::CaptureId)
    }

    /// Whether the field is known only once the recording is written (`stack.*`: the
    /// recorder names a stack's frames after its record-time filter has judged the call).
    pub fn is_named_after_recording(self) -> bool {
        matches!(self, FieldId::StackUser | FieldId::StackKernel | FieldId::StackTop)
    }
}

/// How a field's value is read from an event. The filter's compiler, group keys, exports and
/// the Parquet schema derive their fast paths from this; [`value_in`] is written by hand and
/// is what tests check them against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Read {
    /// A column's value as a number of the field's type, for the events `of` (absent for the
    /// others). The column must be one for those events ([`Col::holds`]).
    Column {
        /// The column.
        col: Col,
        /// The events that have the field.
        of: Holds,
    },
    /// The saturating sum of two columns, for the events `of`.
    Sum {
        /// The columns.
        cols: (Col, Col),
        /// The events that have the field.
        of: Holds,
    },
    /// What is left of one column less two others (saturating at 0), for the events `of`:
    /// the part of a call's latency its thread spent on a CPU.
    Rest {
        /// The column taken from.
        from: Col,
        /// The columns taken away.
        minus: (Col, Col),
        /// The events that have the field.
        of: Holds,
    },
    /// Anything else (a table entry, a code's name, a flag, a value from the header), which
    /// each consumer reads by the field's [`FieldId`].
    Other {
        /// Whether every event has a value (the Parquet column is then required).
        always: bool,
    },
}

/// Row `i` of a [`Read::Sum`]: the saturating sum of columns `a` and `b` (a negative value
/// counts as 0). The filter's scans and the exports both read sums through this.
#[inline(always)]
pub fn sum_at(a: ColSlice<'_>, b: ColSlice<'_>, i: usize) -> u64 {
    let wide = |v: ColSlice<'_>| v.wide(i).clamp(0, i128::from(u64::MAX)) as u64;
    wide(a).saturating_add(wide(b))
}

/// Row `i` of a [`Read::Rest`]: column `from` less columns `a` and `b`, saturating at 0. The
/// filter's scans and the exports both read rests through this.
#[inline(always)]
pub fn rest_at(from: ColSlice<'_>, a: ColSlice<'_>, b: ColSlice<'_>, i: usize) -> u64 {
    (from.wide(i) - a.wide(i) - b.wide(i)).clamp(0, i128::from(u64::MAX)) as u64
}

impl Read {
    /// Whether every event has a value.
    pub fn always(self) -> bool {
        match self {
            Read::Column { of, .. } | Read::Sum { of, .. } | Read::Rest { of, .. } => of == Holds::All,
            Read::Other { always } => always,
        }
    }

    /// The events that have the field, for one read from columns.
    pub fn of(self) -> Option<Holds> {
        match self {
            Read::Column { of, .. } | Read::Sum { of, .. } | Read::Rest { of, .. } => Some(of),
            Read::Other { .. } => None,
        }
    }

    /// The columns a value is read from, for one read from columns.
    pub fn columns(self) -> Option<iocap_format::ColSet> {
        use iocap_format::ColSet;
        match self {
            Read::Column { col, .. } => Some(ColSet::NONE.with(col)),
            Read::Sum { cols: (a, b), .. } => Some(ColSet::NONE.with(a).with(b)),
            Read::Rest {
                from, minus: (a, b), ..
            } => Some(ColSet::NONE.with(from).with(a).with(b)),
            Read::Other { .. } => None,
        }
    }
}

/// Whether an event of `class` is one of the events `of`.
pub fn holds_for(of: Holds, class: Class) -> bool {
    match of {
        Holds::All => true,
        Holds::Blocks => class == Class::Block,
        Holds::Others => class != Class::Block,
    }
}

/// One field as `iocap fields` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The name a filter uses: `proc.name`.
    pub name: &'static str,
    /// What it holds, which decides the operators and literals it accepts.
    pub ty: FieldType,
    /// What it means, in one line.
    pub description: &'static str,
    /// The value it reads: an alias has its field's id.
    pub id: FieldId,
    /// How its value is read.
    pub read: Read,
    /// Whether a breakdown may group by it: false for a value per event (a result, an
    /// offset, a sector) and for yes/no views of a field offered whole. Durations, aliases
    /// and the header's fields are never grouped by either.
    pub group: bool,
}

const fn f(name: &'static str, ty: FieldType, id: FieldId, read: Read, description: &'static str) -> FieldInfo {
    FieldInfo {
        name,
        ty,
        description,
        id,
        read,
        group: true,
    }
}

impl FieldInfo {
    /// This field, not offered to group by ([`FieldInfo::group`]).
    const fn ungrouped(self) -> FieldInfo {
        FieldInfo { group: false, ..self }
    }
}

/// A field read from column `col` for the events `of`.
const fn col(col: Col, of: Holds) -> Read {
    Read::Column { col, of }
}

/// A field read by its id, present for every event.
const ALWAYS: Read = Read::Other { always: true };
/// A field read by its id, absent for some events.
const SOME: Read = Read::Other { always: false };

use FieldType as T;

static FIELDS: &[FieldInfo] = &[
    f(
        "proc.name",
        T::Str,
        FieldId::ProcName,
        SOME,
        "process name (comm); for a block request, the task that queued it",
    ),
    f(
        "proc.pid",
        T::UInt,
        FieldId::ProcPid,
        col(Col::Pid, Holds::All),
        "process id (thread group id)",
    ),
    f(
        "proc.ppid",
        T::UInt,
        FieldId::ProcPpid,
        SOME,
        "parent process id",
    ),
    f(
        "proc.exe",
        T::Str,
        FieldId::ProcExe,
        SOME,
        "executable path",
    ),
    f(
        "proc.cmdline",
        T::Str,
        FieldId::ProcCmdline,
        SOME,
        "command line, arguments joined by spaces",
    ),
    f(
        "proc.cgroup",
        T::Str,
        FieldId::ProcCgroup,
        SOME,
        "cgroup (v2) path of the process: /system.slice/x.service, a container's scope",
    ),
    f(
        "container.id",
        T::Str,
        FieldId::ContainerId,
        SOME,
        "container the process ran in: its short id (12 hex digits, as docker ps shows), host outside any",
    ),
    f(
        "container.full_id",
        T::Str,
        FieldId::ContainerFullId,
        SOME,
        "container's full id (64 hex digits; a machine's name for systemd-nspawn)",
    ),
    f(
        "container.runtime",
        T::Str,
        FieldId::ContainerRuntime,
        SOME,
        "docker, containerd, cri-o, podman, systemd-nspawn (unknown: a Kubernetes path with an id alone), host outside any container",
    ),
    f(
        "container.name",
        T::Str,
        FieldId::ContainerName,
        SOME,
        "container's name as its runtime lists it (in a pod: the container's), host outside any container",
    ),
    f(
        "container.image",
        T::Str,
        FieldId::ContainerImage,
        SOME,
        "image the container was made from, as its runtime names it",
    ),
    f(
        "k8s.pod.name",
        T::Str,
        FieldId::K8sPodName,
        SOME,
        "Kubernetes pod of the container",
    ),
    f(
        "k8s.pod.uid",
        T::Str,
        FieldId::K8sPodUid,
        SOME,
        "uid of the Kubernetes pod of the container (from its cgroup path)",
    ),
    f(
        "k8s.ns.name",
        T::Str,
        FieldId::K8sNsName,
        SOME,
        "Kubernetes namespace of the container's pod",
    ),
    f(
        "user.uid",
        T::UInt,
        FieldId::UserUid,
        SOME,
        "effective uid of the process",
    ),
    f(
        "user.name",
        T::Str,
        FieldId::UserName,
        SOME,
        "name of user.uid on the recording host",
    ),
    f(
        "thread.tid",
        T::UInt,
        FieldId::ThreadTid,
        col(Col::Tid, Holds::All),
        "thread id",
    ),
    f(
        "proc.tid",
        T::UInt,
        FieldId::ThreadTid,
        col(Col::Tid, Holds::All),
        "alias of thread.tid",
    ),
    f(
        "evt.type",
        T::Str,
        FieldId::EvtType,
        ALWAYS,
        "syscall name (read, openat, fsync...), `block` for a block request, io_uring opcode (read, readv, fsync...), `commit` for a journal commit",
    ),
    f(
        "evt.class",
        T::Str,
        FieldId::EvtClass,
        ALWAYS,
        "syscall, block, io_uring or journal (a journal commit, jbd2's)",
    ),
    f(
        "evt.cpu",
        T::UInt,
        FieldId::EvtCpu,
        col(Col::Cpu, Holds::All),
        "CPU the event ended on (a syscall's exit, a block request's completion interrupt)",
    ),
    f(
        "evt.res",
        T::Int,
        FieldId::EvtRes,
        col(Col::Ret, Holds::All),
        "return value; io_uring: the completion's result; block: 0, or a negative errno on error",
    ).ungrouped(),
    f(
        "evt.failed",
        T::Bool,
        FieldId::EvtFailed,
        ALWAYS,
        "the return value is negative (an error)",
    ).ungrouped(),
    f(
        "evt.unfinished",
        T::Bool,
        FieldId::EvtUnfinished,
        ALWAYS,
        "still in flight when the recording stopped: latency runs to the stop (a lower bound), a syscall's evt.res is unknown (0)",
    ).ungrouped(),
    f(
        "evt.errno",
        T::Str,
        FieldId::EvtErrno,
        SOME,
        "error name (ENOENT, EAGAIN...) of a failed event; absent otherwise",
    ),
    f(
        "evt.time",
        T::Duration,
        FieldId::EvtTime,
        ALWAYS,
        "start of the event, as time since the capture started (of several captures, the earliest, by wall clock)",
    ),
    f(
        "latency",
        T::Duration,
        FieldId::Latency,
        col(Col::Latency, Holds::All),
        "syscall: enter to exit; block: issue to completion (device time); io_uring: submission to completion",
    ),
    f(
        "evt.latency",
        T::Duration,
        FieldId::Latency,
        col(Col::Latency, Holds::All),
        "alias of latency",
    ),
    f(
        "fd.num",
        T::Int,
        FieldId::FdNum,
        SOME,
        "the fd the syscall (io_uring request) operated on; absent when it takes none",
    ),
    f(
        "fd.type",
        T::Str,
        FieldId::FdType,
        SOME,
        "file, directory, ipv4, ipv6, unix, pipe, event, memfd, device...",
    ),
    f(
        "fd.name",
        T::Str,
        FieldId::FdName,
        SOME,
        "path, or laddr:lport->raddr:rport for a socket, pipe:[ino]...",
    ),
    f(
        "fd.directory",
        T::Str,
        FieldId::FdDirectory,
        SOME,
        "directory part of a path fd.name (/var/lib for /var/lib/x.db)",
    ),
    f(
        "fd.filename",
        T::Str,
        FieldId::FdFilename,
        SOME,
        "last component of a path fd.name (x.db for /var/lib/x.db)",
    ),
    f(
        "fd.dev",
        T::Str,
        FieldId::FdDev,
        SOME,
        "block device of the file's filesystem (vda, nvme0n1, or major:minor)",
    ),
    f(
        "io.bytes",
        T::Bytes,
        FieldId::IoBytes,
        col(Col::Bytes, Holds::All),
        "bytes transferred: by an I/O syscall, or by a block request",
    ),
    f(
        "io.dir",
        T::Str,
        FieldId::IoDir,
        ALWAYS,
        "read, write or none: by syscall (read, pwritev...) or block op",
    ),
    f(
        "io.offset",
        T::Int,
        FieldId::IoOffset,
        SOME,
        "file offset given to pread64, pwrite64, preadv, pwritev, preadv2, pwritev2 (-1: the file's position)",
    ).ungrouped(),
    f(
        "evt.is_io_read",
        T::Bool,
        FieldId::IsIoRead,
        ALWAYS,
        "io.dir is read",
    ).ungrouped(),
    f(
        "evt.is_io_write",
        T::Bool,
        FieldId::IsIoWrite,
        ALWAYS,
        "io.dir is write",
    ).ungrouped(),
    f(
        "evt.waits",
        T::Bool,
        FieldId::EvtWaits,
        ALWAYS,
        "a syscall made to wait, slow by design: sleeps, waits for a child, a signal, a poll or a futex, accept, and reads of a pipe, eventfd, signalfd, timerfd or inotify",
    ).ungrouped(),
    f(
        "blk.dev",
        T::Str,
        FieldId::BlkDev,
        SOME,
        "disk of a block request (vda, sdb, nvme0n1, or major:minor)",
    ),
    f(
        "blk.op",
        T::Str,
        FieldId::BlkOp,
        SOME,
        "read, write, flush, discard or other",
    ),
    f(
        "blk.sector",
        T::UInt,
        FieldId::BlkSector,
        col(Col::Sector, Holds::Blocks),
        "first sector of a block request (512-byte units); absent for one without (a flush)",
    ).ungrouped(),
    f(
        "blk.bytes",
        T::Bytes,
        FieldId::BlkBytes,
        col(Col::Bytes, Holds::Blocks),
        "size of a block request",
    ),
    f(
        "blk.queue",
        T::Duration,
        FieldId::BlkQueue,
        col(Col::Queue, Holds::Blocks),
        "time a block request waited before issue: from its making (the kernel's start, which /proc/diskstats times waits from) to its issue",
    ),
    f(
        "blk.flags",
        T::Str,
        FieldId::BlkFlags,
        SOME,
        "flags of a block request, comma-separated: sync,meta,fua,preflush...",
    ),
    f(
        "blk.queued",
        T::Bool,
        FieldId::BlkQueued,
        SOME,
        "a block request was inserted into a queue before issue (rather than sent straight to the driver)",
    ),
    f(
        "blk.prio",
        T::UInt,
        FieldId::BlkPrio,
        col(Col::Prio, Holds::Blocks),
        "I/O priority of a block request as the kernel keeps it: class << 13 | level (0: none, the default; 16384 + n: best-effort level n)",
    ),
    f(
        "blk.pattern",
        T::Str,
        FieldId::BlkPattern,
        SOME,
        "sequential (starts where the disk's previous request ended) or random; absent for a disk's first",
    ),
    f(
        "blk.latency",
        T::Duration,
        FieldId::BlkLatency,
        col(Col::Latency, Holds::Blocks),
        "device time of a block request (issue to completion)",
    ),
    f(
        "blk.total",
        T::Duration,
        FieldId::BlkTotal,
        Read::Sum { cols: (Col::Queue, Col::Latency), of: Holds::Blocks },
        "blk.queue + blk.latency: making to completion, the wait iostat's await averages",
    ),
    f(
        "blk.cause",
        T::Str,
        FieldId::BlkCause,
        SOME,
        "what issued a block request: syscall, io_uring, writeback (a flusher thread), journal (a commit) or none",
    ),
    f(
        "blk.syscall",
        T::Str,
        FieldId::BlkSyscall,
        SOME,
        "type of the syscall that issued a block request (pread64, fsync...)",
    ),
    f(
        "disk.requests",
        T::UInt,
        FieldId::DiskRequests,
        col(Col::DiskReqs, Holds::Others),
        "block requests a syscall (io_uring request) issued",
    ),
    f(
        "disk.bytes",
        T::Bytes,
        FieldId::DiskBytes,
        col(Col::DiskBytes, Holds::Others),
        "bytes of the block requests a syscall (io_uring request) issued",
    ),
    f(
        "disk.time",
        T::Duration,
        FieldId::DiskTime,
        col(Col::DiskTime, Holds::Others),
        "part of a syscall's (io_uring request's) latency with one of its block requests in flight",
    ),
    f(
        "cpu.time",
        T::Duration,
        FieldId::CpuTime,
        Read::Rest {
            from: Col::Latency,
            minus: (Col::Runq, Col::Wait),
            of: Holds::Others,
        },
        "part of a syscall's latency its thread was on a CPU: latency - runq.time - wait.time",
    ),
    f(
        "runq.time",
        T::Duration,
        FieldId::RunqTime,
        col(Col::Runq, Holds::Others),
        "part of a syscall's latency its thread was runnable and not running: preempted, or woken and waiting for a CPU",
    ),
    f(
        "wait.time",
        T::Duration,
        FieldId::WaitTime,
        col(Col::Wait, Holds::Others),
        "part of a syscall's latency its thread was blocked (asleep until woken): locks, throttling, its own I/O...",
    ),
    f(
        "wait.count",
        T::UInt,
        FieldId::WaitCount,
        col(Col::Sleeps, Holds::Others),
        "how many times a syscall's thread blocked during it",
    ),
    f(
        "waker.tid",
        T::UInt,
        FieldId::WakerTid,
        col(Col::Waker, Holds::Others),
        "thread that woke a syscall's longest sleep: 0 when it never blocked, or when an interrupt on an idle CPU (a timer, a device) woke it",
    ),
    f(
        "waker.proc.name",
        T::Str,
        FieldId::WakerProcName,
        SOME,
        "name of the process of waker.tid (jbd2/sda1-8, a kworker, postgres...); absent when it never blocked or the idle task woke it",
    ),
    f(
        "stack.user",
        T::Str,
        FieldId::StackUser,
        SOME,
        "a syscall's user stack as it returned, its frames' function names outermost first joined by ; (main;slow_path;fsync): `stack.user contains slow_path`; absent unless recorded with --stacks and the call was at least as slow as its threshold",
    ),
    f(
        "stack.kernel",
        T::Str,
        FieldId::StackKernel,
        SOME,
        "the kernel stack of a syscall's longest sleep, where it slept, as stack.user (...;ext4_sync_file;jbd2_log_wait_commit); absent when it did not sleep that long",
    ),
    f(
        "stack.top",
        T::Str,
        FieldId::StackTop,
        SOME,
        "the innermost frame of a syscall's user stack: the function that made the call (often the C library's wrapper, fsync)",
    ),
    f(
        "waker.after",
        T::Duration,
        FieldId::WakerAfter,
        col(Col::Woken, Holds::Others),
        "how long after a syscall's start waker.tid woke its longest sleep (0 when no thread did)",
    ),
    f(
        "wait.disk",
        T::Duration,
        FieldId::WaitDisk,
        col(Col::WaitDisk, Holds::Others),
        "part of wait.time its thread blocked on a block request's completion (any request's: its own, the journal's, a flusher's)",
    ),
    f(
        "wait.throttle",
        T::Duration,
        FieldId::WaitThrottle,
        col(Col::WaitThrottle, Holds::Others),
        "part of wait.time its thread blocked on dirty page throttling (balance_dirty_pages)",
    ),
    f(
        "wait.writeback",
        T::Duration,
        FieldId::WaitWriteback,
        col(Col::WaitWriteback, Holds::Others),
        "part of wait.time its thread blocked on a folio's writeback, or woken by a flusher thread writing an inode back",
    ),
    f(
        "wait.journal",
        T::Duration,
        FieldId::WaitJournal,
        col(Col::WaitJournal, Holds::Others),
        "part of wait.time its thread blocked on woken by the journal thread (jbd2)",
    ),
    f(
        "wait.lock",
        T::Duration,
        FieldId::WaitLock,
        col(Col::WaitLock, Holds::Others),
        "part of wait.time its thread blocked on lock contention",
    ),
    f(
        "wait.reclaim",
        T::Duration,
        FieldId::WaitReclaim,
        col(Col::WaitReclaim, Holds::Others),
        "part of wait.time its thread blocked on direct reclaim",
    ),
    f(
        "wait.timer",
        T::Duration,
        FieldId::WaitTimer,
        col(Col::WaitTimer, Holds::Others),
        "part of wait.time its thread blocked on woken by a timer (a sleep, a timeout)",
    ),
    f(
        "wait.call",
        T::Duration,
        FieldId::WaitCall,
        col(Col::WaitCall, Holds::Others),
        "part of wait.time its thread blocked on woken by another thread inside a call (a pipe, a futex, a socket)",
    ),
    f(
        "wait.net",
        T::Duration,
        FieldId::WaitNet,
        col(Col::WaitNet, Holds::Others),
        "part of wait.time its thread blocked on woken by the network's receive softirq (a packet's arrival)",
    ),
    f(
        "wait.signal",
        T::Duration,
        FieldId::WaitSignal,
        col(Col::WaitSignal, Holds::Others),
        "part of wait.time its thread blocked on woken by a signal sent to its process",
    ),
    f(
        "wait.other",
        T::Duration,
        FieldId::WaitOther,
        col(Col::WaitOther, Holds::Others),
        "part of wait.time its thread blocked on anything else: woken by a thread outside any call, or no waking seen",
    ),
    f(
        "wait.reason",
        T::Str,
        FieldId::WaitReason,
        SOME,
        "why a syscall's thread blocked the most (the wait.* part with the most time): disk, throttle, writeback, journal, lock, reclaim, timer, call, net, signal, other, or none",
    ),
    f(
        "host",
        T::Str,
        FieldId::Host,
        ALWAYS,
        "host name of the traced machine, from the capture's header (one value per capture)",
    ),
    f(
        "capture.id",
        T::Str,
        FieldId::CaptureId,
        ALWAYS,
        "id of the recording (16 hex digits of its host, clock and start): which of several captures read together",
    ),
];

/// Every field, aliases included, in the order `iocap fields` lists them.
pub fn all() -> &'static [FieldInfo] {
    FIELDS
}

/// Every field without its aliases (`proc.tid`, `evt.latency`): one key per value, for
/// `events --json` and `export`.
pub fn canonical() -> impl Iterator<Item = &'static FieldInfo> {
    FIELDS.iter().filter(|f| !f.is_alias())
}

impl FieldInfo {
    /// Whether this name is another name for an earlier field (`evt.latency` for `latency`).
    pub fn is_alias(&self) -> bool {
        info(self.id).name != self.name
    }
}

/// The field called `name`.
pub fn lookup(name: &str) -> Option<&'static FieldInfo> {
    FIELDS.iter().find(|f| f.name == name)
}

/// The first (canonical) field with this id.
pub fn info(id: FieldId) -> &'static FieldInfo {
    FIELDS.iter().find(|f| f.id == id).unwrap_or(&FIELDS[0])
}

/// A field's value for one event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Text; strings from the traced host in their escaped form, as the tables hold them.
    Str(Cow<'a, str>),
    /// A signed integer: `evt.res`, `fd.num`.
    Int(i64),
    /// An unsigned integer: pids, `blk.sector`.
    UInt(u64),
    /// Nanoseconds.
    Duration(u64),
    /// Bytes.
    Bytes(u64),
    /// `evt.failed`, `evt.is_io_read`, `evt.is_io_write`.
    Bool(bool),
    /// The field does not apply to this event (fd.name of a block request).
    Absent,
}

impl Value<'_> {
    /// Whether the field does not apply to the event ([`Value::Absent`]).
    pub fn is_absent(&self) -> bool {
        matches!(self, Value::Absent)
    }
}

impl fmt::Display for Value<'_> {
    /// Plain text: durations in ns, sizes in bytes, absent as the empty string.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) | Value::Duration(v) | Value::Bytes(v) => write!(f, "{v}"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Absent => Ok(()),
        }
    }
}

/// The value of `field` for event `e` of a capture with these `meta` and `tables`.
pub fn value<'a>(field: &FieldInfo, e: &Event, meta: &Meta, tables: &'a Tables) -> Value<'a> {
    value_in(field, e, meta, tables)
}

/// A `container.*` or `k8s.*` field of process `p` (in container `p.container`, or on the host,
/// which a capture says only since 1.23: [`Meta::containers`]). Empty names are absent. Of an
/// older capture, what the process's cgroup v2 path says (its id, runtime and pod uid; no
/// names), and nothing of a process whose path names no container.
fn container_value<'a>(id: FieldId, p: &ProcView<'a>, meta: &Meta) -> Value<'a> {
    let s = |x: &'a str| match x {
        "" => Value::Absent,
        x => Value::Str(Cow::Borrowed(x)),
    };
    let Some(c) = p.container else {
        if !meta.containers {
            let Some(c) = iocap_format::container::parse_cgroup(p.cgroup) else {
                return Value::Absent;
            };
            let owned = |x: String| Value::Str(Cow::Owned(x));
            return match id {
                FieldId::ContainerId => owned(c.short_id().to_owned()),
                FieldId::ContainerFullId => owned(c.id),
                FieldId::ContainerRuntime => s(c.runtime.name()),
                FieldId::K8sPodUid => c.pod_uid.map_or(Value::Absent, owned),
                _ => Value::Absent,
            };
        }
        return match id {
            FieldId::ContainerId | FieldId::ContainerRuntime | FieldId::ContainerName => s("host"),
            _ => Value::Absent,
        };
    };
    match id {
        FieldId::ContainerId => s(iocap_format::container::short_id(c.full_id)),
        FieldId::ContainerFullId => s(c.full_id),
        FieldId::ContainerRuntime => s(c.runtime.name()),
        FieldId::ContainerName => s(c.name),
        FieldId::ContainerImage => s(c.image),
        FieldId::K8sPodName => s(c.pod_name),
        FieldId::K8sPodUid => s(c.pod_uid),
        FieldId::K8sNsName => s(c.namespace),
        _ => Value::Absent,
    }
}

/// The value of `field` for event `e`, with the event's process, file and device looked up in
/// `tables`: a capture's [`Tables`], or any other [`Lookup`] (the recorder's live tables).
pub fn value_in<'a, L: Lookup + ?Sized>(field: &FieldInfo, e: &Event, meta: &Meta, tables: &'a L) -> Value<'a> {
    let block = e.class == Class::Block;
    let proc = || tables.lookup_proc(e.proc);
    let file = || tables.lookup_file(e.file);
    let blk = |v: Value<'a>| if block { v } else { Value::Absent };
    let sys = |v: Value<'a>| if block { Value::Absent } else { v };
    let s = |x: &'a str| Value::Str(Cow::Borrowed(x));
    match field.id {
        FieldId::ProcName => proc().map_or(Value::Absent, |p| s(p.name)),
        FieldId::ProcPid => Value::UInt(u64::from(e.pid)),
        FieldId::ProcPpid => proc().map_or(Value::Absent, |p| Value::UInt(u64::from(p.ppid))),
        FieldId::ProcExe => proc().map_or(Value::Absent, |p| s(p.exe)),
        FieldId::ProcCmdline => proc().map_or(Value::Absent, |p| s(p.cmdline)),
        FieldId::ThreadTid => Value::UInt(u64::from(e.tid)),
        FieldId::EvtType => Value::Str(evt_type(&meta.arch, e.class, e.nr)),
        FieldId::EvtClass => s(e.class.name()),
        FieldId::EvtRes => Value::Int(e.ret),
        FieldId::EvtFailed => Value::Bool(e.ret < 0),
        FieldId::EvtUnfinished => Value::Bool(e.unfinished()),
        FieldId::EvtErrno => match e.ret {
            r if r < 0 => Value::Str(errno_name(r.unsigned_abs())),
            _ => Value::Absent,
        },
        FieldId::EvtTime => Value::Duration(e.ts.saturating_sub(meta.start_ts)),
        FieldId::Latency => Value::Duration(e.latency),
        FieldId::FdNum => match e.fd {
            fd if fd >= 0 && !block => Value::Int(i64::from(fd)),
            _ => Value::Absent,
        },
        FieldId::FdType => file().map_or(Value::Absent, |f| s(f.kind.name())),
        FieldId::FdName => file().map_or(Value::Absent, |f| s(f.name)),
        FieldId::FdDirectory => file()
            .and_then(|f| split_path(f.name))
            .map_or(Value::Absent, |(d, _)| s(d)),
        FieldId::FdFilename => file()
            .and_then(|f| split_path(f.name))
            .map_or(Value::Absent, |(_, n)| s(n)),
        FieldId::FdDev => match file() {
            Some(f) if f.dev != 0 => Value::Str(device_name_in(f.dev, tables)),
            _ => Value::Absent,
        },
        FieldId::IoBytes => Value::Bytes(e.bytes),
        FieldId::IoDir => s(io_dir(&meta.arch, e.class, e.nr, e.op).name()),
        FieldId::IsIoRead => Value::Bool(io_dir(&meta.arch, e.class, e.nr, e.op) == IoDir::Read),
        FieldId::IsIoWrite => Value::Bool(io_dir(&meta.arch, e.class, e.nr, e.op) == IoDir::Write),
        FieldId::EvtWaits => Value::Bool(waits(&meta.arch, e.class, e.nr, || file().map(|f| f.kind))),
        FieldId::BlkDev => blk(Value::Str(device_name_in(e.dev, tables))),
        FieldId::BlkOp => blk(s(BlockOp::from_code(e.op).name())),
        // A flush has no sector: the kernel gives all ones.
        FieldId::BlkSector if e.sector == u64::MAX => Value::Absent,
        FieldId::BlkSector => blk(Value::UInt(e.sector)),
        FieldId::BlkBytes => blk(Value::Bytes(e.bytes)),
        FieldId::BlkQueue => blk(Value::Duration(e.queue)),
        FieldId::BlkFlags => blk(Value::Str(Cow::Borrowed(flags_name(e.flags)))),
        FieldId::BlkLatency => blk(Value::Duration(e.latency)),
        FieldId::BlkTotal => blk(Value::Duration(e.queue.saturating_add(e.latency))),
        FieldId::BlkCause => blk(s(Cause::from_code(e.cause).name())),
        FieldId::BlkSyscall => match Cause::from_code(e.cause) {
            Cause::Syscall if block => Value::Str(syscall_name(&meta.arch, e.nr)),
            _ => Value::Absent,
        },
        FieldId::DiskRequests => sys(Value::UInt(u64::from(e.disk_reqs))),
        FieldId::DiskBytes => sys(Value::Bytes(e.disk_bytes)),
        FieldId::DiskTime => sys(Value::Duration(e.disk_time)),
        FieldId::EvtCpu => Value::UInt(u64::from(e.cpu)),
        FieldId::IoOffset => match e.class {
            Class::Syscall if is_positional(&meta.arch, e.nr) => Value::Int(e.offset as i64),
            _ => Value::Absent,
        },
        FieldId::UserUid => proc()
            .and_then(|p| p.uid)
            .map_or(Value::Absent, |u| Value::UInt(u64::from(u))),
        FieldId::UserName => proc()
            .filter(|p| !p.user.is_empty())
            .map_or(Value::Absent, |p| s(p.user)),
        FieldId::ProcCgroup => proc()
            .filter(|p| !p.cgroup.is_empty())
            .map_or(Value::Absent, |p| s(p.cgroup)),
        container_fields!() => match proc() {
            Some(p) => container_value(field.id, &p, meta),
            None => Value::Absent,
        },
        FieldId::BlkPattern => match e.flags & (blk_flags::SEQUENTIAL | blk_flags::RANDOM) {
            blk_flags::SEQUENTIAL if block => s("sequential"),
            blk_flags::RANDOM if block => s("random"),
            _ => Value::Absent,
        },
        FieldId::BlkQueued => blk(Value::Bool(e.flags & blk_flags::QUEUED != 0)),
        FieldId::BlkPrio => blk(Value::UInt(u64::from(e.prio))),
        FieldId::CpuTime => sys(Value::Duration(e.latency.saturating_sub(e.runq).saturating_sub(e.wait))),
        FieldId::RunqTime => sys(Value::Duration(e.runq)),
        FieldId::WaitTime => sys(Value::Duration(e.wait)),
        FieldId::WaitCount => sys(Value::UInt(u64::from(e.sleeps))),
        FieldId::WakerTid => sys(Value::UInt(u64::from(e.waker))),
        FieldId::WakerAfter => sys(Value::Duration(e.woken)),
        FieldId::WaitDisk => sys(Value::Duration(e.wait_disk)),
        FieldId::WaitThrottle => sys(Value::Duration(e.wait_throttle)),
        FieldId::WaitWriteback => sys(Value::Duration(e.wait_writeback)),
        FieldId::WaitJournal => sys(Value::Duration(e.wait_journal)),
        FieldId::WaitLock => sys(Value::Duration(e.wait_lock)),
        FieldId::WaitReclaim => sys(Value::Duration(e.wait_reclaim)),
        FieldId::WaitTimer => sys(Value::Duration(e.wait_timer)),
        FieldId::WaitCall => sys(Value::Duration(e.wait_call)),
        FieldId::WaitNet => sys(Value::Duration(e.wait_net)),
        FieldId::WaitSignal => sys(Value::Duration(e.wait_signal)),
        FieldId::WaitOther => sys(Value::Duration(e.wait_other)),
        FieldId::WaitReason => sys(s(Reason::from_code(e.reason).name())),
        FieldId::WakerProcName => match tables.lookup_proc(e.waker_proc) {
            Some(p) if !block && e.waker_proc != 0 => s(p.name),
            _ => Value::Absent,
        },
        FieldId::StackUser | FieldId::StackKernel | FieldId::StackTop => {
            let id = match field.id {
                FieldId::StackKernel => e.stack_kernel,
                _ => e.stack_user,
            };
            match tables.lookup_stack(id).filter(|_| !block && id != 0) {
                Some(names) if field.id == FieldId::StackTop => names
                    .last()
                    .map_or(Value::Absent, |n| Value::Str(Cow::Owned(n.to_string()))),
                Some(names) => Value::Str(Cow::Owned(names.join(";"))),
                None => Value::Absent,
            }
        }
        FieldId::Host => Value::Str(Cow::Owned(meta.host.clone())),
        FieldId::CaptureId => Value::Str(Cow::Owned(meta.capture_id())),
    }
}

/// Whether an event's return value is an address (`mmap`, `mmap2`, `mremap`, `brk`, `shmat`),
/// which reads better in hex.
pub fn returns_address(arch: &str, class: Class, nr: u32) -> bool {
    class == Class::Syscall
        && syscalls::name(arch, nr).is_some_and(|n| matches!(n, "mmap" | "mmap2" | "mremap" | "brk" | "shmat"))
}

/// The syscalls made to wait (`evt.waits`), whatever their fd.
pub(crate) const WAIT_CALLS: &[&str] = &[
    "wait4",
    "waitid",
    "nanosleep",
    "clock_nanosleep",
    "pause",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "futex",
    "futex_waitv",
    "io_getevents",
    "io_pgetevents",
    "semtimedop",
    "msgrcv",
    "mq_timedreceive",
    "accept",
    "accept4",
];

/// The reads made to wait (`evt.waits`) when their fd is of one of [`WAIT_FDS`]' types.
pub(crate) const WAIT_READS: &[&str] = &["read", "readv"];

/// The fds a read of waits on another thread or the clock, not on I/O.
pub(crate) const WAIT_FDS: &[FdType] = &[
    FdType::Pipe,
    FdType::Event,
    FdType::Signalfd,
    FdType::Timerfd,
    FdType::Inotify,
];

/// `evt.waits` of a syscall `nr` of `arch` whose fd is of type `kind()` (asked only of reads).
fn waits(arch: &str, class: Class, nr: u32, kind: impl FnOnce() -> Option<FdType>) -> bool {
    let Some(name) = syscalls::name(arch, nr).filter(|_| class == Class::Syscall) else {
        return false;
    };
    WAIT_CALLS.contains(&name) || (WAIT_READS.contains(&name) && kind().is_some_and(|k| WAIT_FDS.contains(&k)))
}

/// `evt.waits` as a filter of other fields, which the compiler compiles in its place.
pub(crate) fn waits_filter() -> String {
    let fds: Vec<&str> = WAIT_FDS.iter().map(|t| t.name()).collect();
    format!(
        "evt.class=syscall and (evt.type in ({}) or (evt.type in ({}) and fd.type in ({})))",
        WAIT_CALLS.join(", "),
        WAIT_READS.join(", "),
        fds.join(", ")
    )
}

/// The syscalls given a file offset, which `io.offset` reads.
pub(crate) const POSITIONAL_CALLS: &[&str] = &["pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2"];

/// Whether syscall `nr` is one of [`POSITIONAL_CALLS`].
pub(crate) fn is_positional(arch: &str, nr: u32) -> bool {
    syscalls::name(arch, nr).is_some_and(|n| POSITIONAL_CALLS.contains(&n))
}

/// `evt.type`: the syscall's name, `block`, the io_uring opcode's name, `commit` (a journal's),
/// or `sys_NNN` (`uring_NNN`) for a number iocap does not know.
pub fn evt_type(arch: &str, class: Class, nr: u32) -> Cow<'static, str> {
    match class {
        Class::Block => Cow::Borrowed("block"),
        Class::Journal => Cow::Borrowed("commit"),
        Class::Syscall => syscall_name(arch, nr),
        Class::IoUring => uring_op_name(nr),
    }
}

fn uring_op_name(op: u32) -> Cow<'static, str> {
    uring::op_name(op).map_or_else(|| Cow::Owned(format!("uring_{op}")), Cow::Borrowed)
}

pub(crate) fn syscall_name(arch: &str, nr: u32) -> Cow<'static, str> {
    syscalls::name(arch, nr).map_or_else(|| Cow::Owned(format!("sys_{nr}")), Cow::Borrowed)
}

/// Direction of an event's I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IoDir {
    Read,
    Write,
    None,
}

impl IoDir {
    /// The `io.dir` value: `read`, `write`, `none`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            IoDir::Read => "read",
            IoDir::Write => "write",
            IoDir::None => "none",
        }
    }
}

const READ_CALLS: &[&str] = &[
    "read", "pread64", "readv", "preadv", "preadv2", "recvfrom", "recvmsg", "recvmmsg",
];
const WRITE_CALLS: &[&str] = &[
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "sendfile",
    "copy_file_range",
];

/// Direction of syscall `name`, by what it moves between the caller and its fd.
pub(crate) fn syscall_dir(name: &str) -> IoDir {
    if READ_CALLS.contains(&name) {
        IoDir::Read
    } else if WRITE_CALLS.contains(&name) {
        IoDir::Write
    } else {
        IoDir::None
    }
}

/// `io.dir` of an event: by syscall, by io_uring opcode, or by block op.
pub(crate) fn io_dir(arch: &str, class: Class, nr: u32, op: u8) -> IoDir {
    match class {
        Class::Syscall => syscalls::name(arch, nr).map_or(IoDir::None, syscall_dir),
        Class::IoUring => uring::op_name(nr).map_or(IoDir::None, uring_dir),
        Class::Block => block_dir(op),
        Class::Journal => IoDir::None,
    }
}

/// Direction of io_uring opcode `name`.
fn uring_dir(name: &str) -> IoDir {
    if uring::READ_OPS.contains(&name) {
        IoDir::Read
    } else if uring::WRITE_OPS.contains(&name) {
        IoDir::Write
    } else {
        IoDir::None
    }
}

pub(crate) fn block_dir(op: u8) -> IoDir {
    match BlockOp::from_code(op) {
        BlockOp::Read => IoDir::Read,
        BlockOp::Write => IoDir::Write,
        _ => IoDir::None,
    }
}

/// Mask of the block flags iocap knows (the kernel's and its own); other bits are ignored
/// everywhere.
pub(crate) const FLAGS_MASK: u32 = 0x7ff;

/// `blk.flags`: the names of the known bits of `flags`, comma-separated, in bit order.
pub fn flags_name(flags: u32) -> &'static str {
    // Every combination of the seven kernel bits, built once.
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        (0..=blk_flags::KERNEL)
            .map(|bits| {
                let parts: Vec<&str> = blk_flags::NAMES
                    .iter()
                    .filter(|(b, _)| bits & b != 0)
                    .map(|(_, n)| *n)
                    .collect();
                parts.join(",")
            })
            .collect()
    });
    names
        .get((flags & blk_flags::KERNEL) as usize)
        .map_or("", String::as_str)
}

/// A block device's name from the capture's device table (the reader merges the header's into it), else `major:minor`.
pub fn device_name<'a>(dev: u32, tables: &'a Tables) -> Cow<'a, str> {
    device_name_in(dev, tables)
}

fn device_name_in<'a, L: Lookup + ?Sized>(dev: u32, tables: &'a L) -> Cow<'a, str> {
    // The reader merges the header's devices into the table.
    match tables.lookup_device(dev) {
        Some(n) => Cow::Borrowed(n),
        None => {
            let (major, minor) = dev_parts(dev);
            Cow::Owned(format!("{major}:{minor}"))
        }
    }
}

/// `(directory, filename)` of an absolute path; `None` for socket names, `pipe:[..]` and such.
pub(crate) fn split_path(name: &str) -> Option<(&str, &str)> {
    if !name.starts_with('/') {
        return None;
    }
    let i = name.rfind('/')?;
    let dir = if i == 0 { "/" } else { &name[..i] };
    Some((dir, &name[i + 1..]))
}

/// The error name for errno `n` (`ENOENT`), or `errno_N` for a number without one.
pub fn errno_name(n: u64) -> Cow<'static, str> {
    usize::try_from(n)
        .ok()
        .and_then(|i| ERRNOS.get(i))
        .filter(|s| !s.is_empty())
        .map_or_else(|| Cow::Owned(format!("errno_{n}")), |s| Cow::Borrowed(*s))
}

/// Every errno name iocap knows (for checking and suggesting filter values).
pub(crate) fn errno_names() -> impl Iterator<Item = &'static str> {
    ERRNOS.iter().copied().filter(|s| !s.is_empty())
}

/// Linux's generic errno numbers (asm-generic/errno-base.h, errno.h), which x86_64 and
/// aarch64 share; then the kernel-internal restart codes a traced syscall may return.
#[rustfmt::skip]
pub(crate) static ERRNOS: &[&str] = &[
    "", "EPERM", "ENOENT", "ESRCH", "EINTR", "EIO", "ENXIO", "E2BIG", "ENOEXEC", "EBADF", "ECHILD",
    "EAGAIN", "ENOMEM", "EACCES", "EFAULT", "ENOTBLK", "EBUSY", "EEXIST", "EXDEV", "ENODEV", "ENOTDIR",
    "EISDIR", "EINVAL", "ENFILE", "EMFILE", "ENOTTY", "ETXTBSY", "EFBIG", "ENOSPC", "ESPIPE", "EROFS",
    "EMLINK", "EPIPE", "EDOM", "ERANGE", "EDEADLK", "ENAMETOOLONG", "ENOLCK", "ENOSYS", "ENOTEMPTY", "ELOOP",
    "", "ENOMSG", "EIDRM", "ECHRNG", "EL2NSYNC", "EL3HLT", "EL3RST", "ELNRNG", "EUNATCH", "ENOCSI",
    "EL2HLT", "EBADE", "EBADR", "EXFULL", "ENOANO", "EBADRQC", "EBADSLT", "", "EBFONT", "ENOSTR",
    "ENODATA", "ETIME", "ENOSR", "ENONET", "ENOPKG", "EREMOTE", "ENOLINK", "EADV", "ESRMNT", "ECOMM",
    "EPROTO", "EMULTIHOP", "EDOTDOT", "EBADMSG", "EOVERFLOW", "ENOTUNIQ", "EBADFD", "EREMCHG", "ELIBACC", "ELIBBAD",
    "ELIBSCN", "ELIBMAX", "ELIBEXEC", "EILSEQ", "ERESTART", "ESTRPIPE", "EUSERS", "ENOTSOCK", "EDESTADDRREQ", "EMSGSIZE",
    "EPROTOTYPE", "ENOPROTOOPT", "EPROTONOSUPPORT", "ESOCKTNOSUPPORT", "EOPNOTSUPP", "EPFNOSUPPORT", "EAFNOSUPPORT", "EADDRINUSE", "EADDRNOTAVAIL", "ENETDOWN",
    "ENETUNREACH", "ENETRESET", "ECONNABORTED", "ECONNRESET", "ENOBUFS", "EISCONN", "ENOTCONN", "ESHUTDOWN", "ETOOMANYREFS", "ETIMEDOUT",
    "ECONNREFUSED", "EHOSTDOWN", "EHOSTUNREACH", "EALREADY", "EINPROGRESS", "ESTALE", "EUCLEAN", "ENOTNAM", "ENAVAIL", "EISNAM",
    "EREMOTEIO", "EDQUOT", "ENOMEDIUM", "EMEDIUMTYPE", "ECANCELED", "ENOKEY", "EKEYEXPIRED", "EKEYREVOKED", "EKEYREJECTED", "EOWNERDEAD",
    "ENOTRECOVERABLE", "ERFKILL", "EHWPOISON",
];

/// The values a string field can take, when they form a closed set known without a capture:
/// used to reject `fd.type=fiel` with a suggestion instead of silently matching nothing.
pub(crate) fn vocabulary(id: FieldId) -> Option<Vec<&'static str>> {
    Some(match id {
        FieldId::EvtClass => Class::ALL.iter().map(|c| c.name()).collect(),
        FieldId::FdType => FdType::ALL.iter().map(|t| t.name()).collect(),
        FieldId::IoDir => vec!["read", "write", "none"],
        FieldId::BlkOp => vec!["read", "write", "flush", "discard", "other"],
        FieldId::BlkCause => Cause::ALL.iter().map(|c| c.name()).collect(),
        FieldId::WaitReason => Reason::ALL.iter().map(|r| r.name()).collect(),
        FieldId::BlkPattern => vec!["sequential", "random"],
        FieldId::BlkSyscall => syscalls::names("x86_64").collect(),
        FieldId::EvtType => {
            let mut v: Vec<&str> = syscalls::names("x86_64")
                .chain(["block", "commit"])
                .chain(uring::op_names())
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        }
        FieldId::EvtErrno => errno_names().collect(),
        _ => return None,
    })
}

/// Whether `v` is a value of a closed-vocabulary field that the vocabulary cannot list
/// (`sys_335`, `errno_600`: numbers iocap has no name for).
pub(crate) fn is_numbered_name(id: FieldId, v: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match id {
        FieldId::EvtType => ["sys_", "uring_"].iter().any(|p| v.strip_prefix(p).is_some_and(digits)),
        FieldId::BlkSyscall => v.strip_prefix("sys_").is_some_and(digits),
        FieldId::EvtErrno => v.strip_prefix("errno_").is_some_and(digits),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events of every class with every column random (xorshift), some values 0 or negative.
    fn varied_events(n: usize) -> Vec<Event> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match x % 5 {
                0 => 0,
                1 => x % 100,
                _ => x,
            }
        };
        (0..n)
            .map(|i| Event {
                class: Class::ALL[i % 4],
                ts: next(),
                latency: next(),
                pid: next() as u32,
                tid: next() as u32,
                nr: next() as u32 % 600,
                ret: next() as i64,
                fd: next() as i32,
                bytes: next(),
                dev: next() as u32,
                sector: next(),
                queue: next(),
                op: next() as u8 % 6,
                flags: next() as u32,
                cause: next() as u8 % 5,
                link: next(),
                disk_reqs: next() as u32,
                disk_bytes: next(),
                disk_time: next(),
                cpu: next() as u32,
                offset: next(),
                prio: next() as u32,
                runq: next(),
                wait: next(),
                sleeps: next() as u32,
                waker: next() as u32,
                ..Event::default()
            })
            .collect()
    }

    /// What a descriptor says a field's value is, read as the fast paths read it: from the
    /// event's columns, by the field's type.
    fn read_by_descriptor(field: &FieldInfo, e: &Event) -> Option<Value<'static>> {
        if !holds_for(field.read.of()?, e.class) {
            return Some(Value::Absent);
        }
        let mut cols = iocap_format::Columns::default();
        cols.push(e);
        let w = |c: Col| cols.get(c).wide(0);
        let v = match field.read {
            Read::Column { col, .. } => w(col),
            Read::Sum { cols: (a, b), .. } => (w(a) + w(b)).min(i128::from(u64::MAX)),
            Read::Rest {
                from, minus: (a, b), ..
            } => (w(from) - w(a) - w(b)).max(0),
            Read::Other { .. } => return None,
        };
        Some(match field.ty {
            FieldType::UInt => Value::UInt(v as u64),
            FieldType::Duration => Value::Duration(v as u64),
            FieldType::Bytes => Value::Bytes(v as u64),
            FieldType::Int => Value::Int(v as i64),
            ty => panic!("{}: a {ty} field read from a column", field.name),
        })
    }

    /// Every field read from columns says so truly: on events of every class, the descriptor
    /// gives what `value_in` (the hand-written oracle) gives. A field of block requests
    /// naming a column of the calls' (or the other way round) fails here, and so does a
    /// field said to be present for every event that is sometimes absent.
    #[test]
    fn descriptors_agree_with_the_oracle() {
        let (meta, tables) = (Meta::default(), Tables::default());
        for field in all() {
            let (Some(cols), Some(of)) = (field.read.columns(), field.read.of()) else {
                continue;
            };
            for col in cols.cols() {
                assert!(
                    col.holds() == Holds::All || col.holds() == of,
                    "{}: a field of {of:?} reads {}, a column of {:?}",
                    field.name,
                    col.name(),
                    col.holds()
                );
            }
        }
        for e in varied_events(3_000) {
            for field in all() {
                let oracle = value_in(field, &e, &meta, &tables);
                if let Some(v) = read_by_descriptor(field, &e) {
                    assert_eq!(v, oracle, "{} of {e:?}", field.name);
                }
                if field.read.always() {
                    assert!(!oracle.is_absent(), "{} is said always present: {e:?}", field.name);
                }
            }
        }
    }

    #[test]
    fn names_are_unique_and_described() {
        let mut names: Vec<_> = all().iter().map(|f| f.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all().len());
        assert!(all().iter().all(|f| !f.description.is_empty()));
        assert_eq!(lookup("evt.latency").map(|f| f.id), Some(FieldId::Latency));
        let aliases: Vec<_> = all().iter().filter(|f| f.is_alias()).map(|f| f.name).collect();
        assert_eq!(aliases, ["proc.tid", "evt.latency"]);
        assert_eq!(canonical().count(), all().len() - 2);
    }

    #[test]
    fn derived_values() {
        assert_eq!(errno_name(2), "ENOENT");
        assert_eq!(errno_name(41), "errno_41");
        assert_eq!(errno_name(u64::MAX), format!("errno_{}", u64::MAX));
        assert_eq!(split_path("/var/lib/x.db"), Some(("/var/lib", "x.db")));
        assert_eq!(split_path("/x"), Some(("/", "x")));
        assert_eq!(split_path("1.2.3.4:5->6.7.8.9:10"), None);
        assert_eq!(flags_name(blk_flags::SYNC | blk_flags::FUA | 0x8000), "sync,fua");
        assert_eq!(io_dir("x86_64", Class::Syscall, 17, 0), IoDir::Read, "17 is pread64");
        assert_eq!(io_dir("x86_64", Class::Block, 0, BlockOp::Flush as u8), IoDir::None);
        assert_eq!(evt_type("x86_64", Class::Syscall, 100_000), "sys_100000");
    }
}

#[cfg(test)]
mod container_tests {
    use super::*;
    use crate::lookup::ContainerView;
    use iocap_format::container::Runtime;

    /// Tables of one process, in container `c` or on the host, in cgroup `/` (v2's).
    struct One<'a>(Option<ContainerView<'a>>);

    impl Lookup for One<'_> {
        fn lookup_proc(&self, id: u32) -> Option<ProcView<'_>> {
            (id == 1).then_some(ProcView {
                container: self.0,
                cgroup: "/",
                ..ProcView::default()
            })
        }
        fn lookup_file(&self, _: u32) -> Option<crate::lookup::FileView<'_>> {
            None
        }
        fn lookup_device(&self, _: u32) -> Option<&str> {
            None
        }
    }

    fn get(name: &str, t: &One<'_>, meta: &Meta, proc: u32) -> String {
        let e = Event {
            proc,
            ..Event::default()
        };
        let v = value_in(lookup(name).unwrap(), &e, meta, t);
        if v.is_absent() {
            "<absent>".into()
        } else {
            v.to_string()
        }
    }

    #[test]
    fn a_container_the_host_and_a_capture_that_does_not_say() {
        let placed = Meta {
            containers: true,
            ..Meta::default()
        };
        let c = ContainerView {
            runtime: Runtime::Containerd,
            full_id: "2b577d8fa9ac90135a4e949d68120c9ef2524bf9f1efd7291ba5d14ea2f6ad71",
            name: "web",
            pod_name: "web-7d4f",
            namespace: "prod",
            ..ContainerView::default()
        };
        let t = One(Some(c));
        let all = [
            ("container.id", "2b577d8fa9ac", "host", "<absent>"),
            ("container.full_id", c.full_id, "<absent>", "<absent>"),
            ("container.runtime", "containerd", "host", "<absent>"),
            ("container.name", "web", "host", "<absent>"),
            ("container.image", "<absent>", "<absent>", "<absent>"),
            ("k8s.pod.name", "web-7d4f", "<absent>", "<absent>"),
            ("k8s.pod.uid", "<absent>", "<absent>", "<absent>"),
            ("k8s.ns.name", "prod", "<absent>", "<absent>"),
        ];
        for (field, inside, host, unsaid) in all {
            assert_eq!(get(field, &t, &placed, 1), inside, "{field} in a container");
            assert_eq!(get(field, &One(None), &placed, 1), host, "{field} on the host");
            let old = Meta::default();
            assert_eq!(
                get(field, &One(None), &old, 1),
                unsaid,
                "{field}: a capture older than 1.23"
            );
            assert_eq!(get(field, &t, &placed, 7), "<absent>", "{field} of an unknown process");
        }
    }

    /// Of a capture older than 1.23, what the process's cgroup v2 path says.
    #[test]
    fn an_older_capture_reads_the_container_from_the_cgroup_path() {
        struct Old;
        impl Lookup for Old {
            fn lookup_proc(&self, id: u32) -> Option<ProcView<'_>> {
                let cgroup = match id {
                    1 => "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8e1f2a3b_1c2d_4e5f_8a9b_0c1d2e3f4a5b.slice/cri-containerd-2b577d8fa9ac90135a4e949d68120c9ef2524bf9f1efd7291ba5d14ea2f6ad71.scope",
                    _ => "/system.slice/sshd.service",
                };
                Some(ProcView {
                    cgroup,
                    ..ProcView::default()
                })
            }
            fn lookup_file(&self, _: u32) -> Option<crate::lookup::FileView<'_>> {
                None
            }
            fn lookup_device(&self, _: u32) -> Option<&str> {
                None
            }
        }
        let old = Meta::default();
        let get = |name: &str, proc: u32| {
            let e = Event {
                proc,
                ..Event::default()
            };
            let v = value_in(lookup(name).unwrap(), &e, &old, &Old);
            if v.is_absent() {
                "<absent>".into()
            } else {
                v.to_string()
            }
        };
        assert_eq!(get("container.id", 1), "2b577d8fa9ac");
        assert_eq!(get("container.runtime", 1), "containerd");
        assert_eq!(get("k8s.pod.uid", 1), "8e1f2a3b-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
        assert_eq!(get("container.name", 1), "<absent>", "names were not recorded");
        for f in ["container.id", "container.runtime", "container.name"] {
            assert_eq!(get(f, 2), "<absent>", "{f}: not known to be the host's");
        }
    }
}
