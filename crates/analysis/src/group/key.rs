//! How a field's value is told apart per event without printing it: a key read from one or
//! two columns (a table id, a syscall number), such that events with equal keys have equal
//! values. Keys may be finer than values (two process entries can share a name); groups are
//! merged by printed value once per key, at the end ([`super::FieldGroups::finish`]).

use iocap_filter::fields::{FieldId, FieldInfo};
use iocap_format::{Col, ColSet, Columns};

/// A column holding a table id or a plain number that decides the value alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdCol {
    /// The process entry: `proc.name`, `proc.exe`, `proc.cmdline`, `proc.ppid`, `proc.cgroup`,
    /// `user.*`.
    Proc,
    /// `proc.pid`.
    Pid,
    /// `thread.tid`.
    Tid,
    /// The file entry: every `fd.*` field but `fd.num`. Groups are keyed by the file it refers
    /// to ([`iocap_format::Tables::file_key`]), which the column alone does not tell.
    File,
    /// `evt.cpu`.
    Cpu,
}

/// The key of a field: events with equal keys have equal values of the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOf {
    /// A table id or plain number (the column says which).
    Id(IdCol),
    /// The class and one more column of at most 32 bits: `blk.dev`, `blk.op`, `blk.flags` (and
    /// `blk.pattern`, `blk.queued`), `blk.cause` (absent for calls), `fd.num`, `disk.requests`
    /// (absent for block requests).
    ClassAnd(Col),
    /// The class, the cause and the syscall number: `blk.syscall`.
    ClassCauseNr,
    /// The bytes column, which decides `io.bytes` alone, whatever the class.
    Bytes,
    /// Class, syscall number and op: `evt.type`, `evt.class`, `io.dir` and its flags.
    EventType,
    /// The return value when negative, else 0: `evt.errno`, `evt.failed`.
    Error,
    /// The return value: `evt.res`.
    Ret,
    /// Nothing: a field with one value per capture (`host`, `capture.id`), printed from the
    /// capture's header.
    Capture,
    /// The printed value, interned, printed from an event of these columns. A 64-bit value
    /// that is absent for some classes (`blk.bytes`, `disk.bytes`) has no exact key in 64
    /// bits; anything else (latencies, times, sectors) is rarely grouped by and a value per
    /// event, so there is no cheaper key worth keeping: those read every column.
    Printed(ColSet),
}

impl KeyOf {
    /// The key that decides `field`'s value.
    pub fn of(field: &FieldInfo) -> KeyOf {
        use FieldId::*;
        match field.id {
            ProcName | ProcExe | ProcCmdline | ProcPpid | ProcCgroup | UserUid | UserName => KeyOf::Id(IdCol::Proc),
            EvtCpu => KeyOf::Id(IdCol::Cpu),
            ProcPid => KeyOf::Id(IdCol::Pid),
            ThreadTid => KeyOf::Id(IdCol::Tid),
            FdName | FdType | FdDirectory | FdFilename | FdDev => KeyOf::Id(IdCol::File),
            FdNum => KeyOf::ClassAnd(Col::Fd),
            BlkDev => KeyOf::ClassAnd(Col::Dev),
            BlkOp => KeyOf::ClassAnd(Col::Op),
            BlkFlags | BlkPattern | BlkQueued | EvtUnfinished => KeyOf::ClassAnd(Col::Flags),
            BlkCause => KeyOf::ClassAnd(Col::Cause),
            DiskRequests => KeyOf::ClassAnd(Col::DiskReqs),
            BlkSyscall => KeyOf::ClassCauseNr,
            IoBytes => KeyOf::Bytes,
            BlkBytes => KeyOf::Printed(ColSet::NONE.with(Col::Class).with(Col::Bytes)),
            DiskBytes => KeyOf::Printed(ColSet::NONE.with(Col::Class).with(Col::DiskBytes)),
            EvtType | EvtClass | IoDir | IsIoRead | IsIoWrite => KeyOf::EventType,
            EvtErrno | EvtFailed => KeyOf::Error,
            EvtRes => KeyOf::Ret,
            Host | CaptureId => KeyOf::Capture,
            _ => KeyOf::Printed(ColSet::ALL),
        }
    }

    /// The columns the key reads, which are also all a sample event needs for the value to
    /// be printed from it.
    pub fn columns(self) -> ColSet {
        use Col::*;
        let cols: &[Col] = match self {
            KeyOf::Id(IdCol::Proc) => &[Proc],
            KeyOf::Id(IdCol::Pid) => &[Pid],
            KeyOf::Id(IdCol::Tid) => &[Tid],
            KeyOf::Id(IdCol::File) => &[File],
            KeyOf::Id(IdCol::Cpu) => &[Cpu],
            KeyOf::ClassAnd(c) => return ColSet::NONE.with(Class).with(c),
            KeyOf::ClassCauseNr => &[Class, Cause, Nr],
            KeyOf::Bytes => &[Bytes],
            KeyOf::EventType => &[Class, Nr, Op],
            KeyOf::Error | KeyOf::Ret => &[Ret],
            KeyOf::Printed(cols) => return cols,
            KeyOf::Capture => &[],
        };
        cols.iter().copied().collect()
    }

    /// Row `i`'s key, for every kind but [`KeyOf::Printed`] (which needs the tables).
    #[inline(always)]
    pub fn key(self, c: &Columns, i: usize) -> u64 {
        let g = |v: &Vec<u32>| v.get(i).copied().map_or(0, u64::from);
        let byte = |v: &Vec<u8>| v.get(i).copied().map_or(0, u64::from);
        let class = byte(&c.class);
        let ret = || c.ret.get(i).copied().unwrap_or(0);
        match self {
            KeyOf::Id(IdCol::Proc) => g(&c.proc),
            KeyOf::Id(IdCol::Pid) => g(&c.pid),
            KeyOf::Id(IdCol::Tid) => g(&c.tid),
            KeyOf::Id(IdCol::File) => g(&c.file),
            KeyOf::Id(IdCol::Cpu) => g(&c.cpu),
            KeyOf::ClassAnd(Col::Dev) => class << 40 | g(&c.dev),
            KeyOf::ClassAnd(Col::Op) => class << 40 | byte(&c.op),
            KeyOf::ClassAnd(Col::Flags) => class << 40 | g(&c.flags),
            KeyOf::ClassAnd(Col::Cause) => class << 40 | byte(&c.cause),
            KeyOf::ClassAnd(Col::DiskReqs) => class << 40 | g(&c.disk_reqs),
            // `fd.num`, the one other.
            KeyOf::ClassAnd(_) => class << 40 | c.fd.get(i).map_or(0, |&fd| u64::from(fd as u32)),
            KeyOf::ClassCauseNr => class << 40 | byte(&c.cause) << 32 | g(&c.nr),
            KeyOf::Bytes => c.bytes.get(i).copied().unwrap_or(0),
            KeyOf::Error => ret().min(0) as u64,
            KeyOf::Ret => ret() as u64,
            KeyOf::Capture => 0,
            KeyOf::EventType | KeyOf::Printed(_) => {
                let (nr, op) = (g(&c.nr), c.op.get(i).copied().map_or(0, u64::from));
                // Small keys are counted in a table rather than hashed: syscall numbers and
                // ops fit in 15 bits; anything larger (a hostile number) keeps a wide key.
                if class < 4 && nr < 512 && op < 16 {
                    class << 13 | nr << 4 | op
                } else {
                    1 << 63 | class << 40 | nr << 8 | op
                }
            }
        }
    }

    /// The column of an [`KeyOf::Id`] key, whose value is the key itself.
    pub fn id_column(self, c: &Columns) -> Option<&[u32]> {
        match self {
            KeyOf::Id(IdCol::Proc) => Some(&c.proc),
            KeyOf::Id(IdCol::Pid) => Some(&c.pid),
            KeyOf::Id(IdCol::Tid) => Some(&c.tid),
            KeyOf::Id(IdCol::File) => Some(&c.file),
            KeyOf::Id(IdCol::Cpu) => Some(&c.cpu),
            _ => None,
        }
    }
}

/// The [`KeyOf::EventType`] key of every row of `c` into `out`, when every row's is a small
/// one (class, syscall number and op in 15 bits): then they are built in loops that
/// vectorise, 2 bytes a row. Whether it did.
pub(crate) fn small_type_keys(c: &Columns, out: &mut Vec<u16>) -> bool {
    let n = c.len();
    if [c.class.len(), c.nr.len(), c.op.len()] != [n; 3] {
        return false;
    }
    let max = |v: &[u8]| v.iter().fold(0, |m, &x| m.max(x));
    if max(&c.class) >= 4 || max(&c.op) >= 16 || c.nr.iter().fold(0, |m, &x| m.max(x)) >= 512 {
        return false;
    }
    out.clear();
    out.extend(
        c.class
            .iter()
            .zip(&c.nr)
            .zip(&c.op)
            .map(|((&class, &nr), &op)| u16::from(class) << 13 | (nr as u16) << 4 | u16::from(op)),
    );
    true
}
