//! How a field's value is told apart per event without printing it: a key read from one or
//! two columns (a table id, a syscall number), such that events with equal keys have equal
//! values. Keys may be finer than values (two process entries can share a name); groups are
//! merged by printed value once per key, at the end ([`super::FieldGroups::finish`]).

use iocap_filter::fields::{FieldId, FieldInfo, Read};
use iocap_format::{Col, ColSet, ColSlice, Columns, Holds};

/// A column holding a table id, whose entry decides the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdCol {
    /// The process entry: `proc.name`, `proc.exe`, `proc.cmdline`, `proc.ppid`, `proc.cgroup`,
    /// `user.*`.
    Proc,
    /// The file entry: every `fd.*` field but `fd.num`. Groups are keyed by the file it refers
    /// to ([`iocap_format::Tables::file_key`]), which the column alone does not tell.
    File,
}

/// The key of a field: events with equal keys have equal values of the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOf {
    /// A table id (the column says which).
    Id(IdCol),
    /// A column's value, for a field every event has that is read from the column alone
    /// ([`Read::Column`]): `proc.pid`, `thread.tid`, `evt.cpu`, `io.bytes`, `evt.res`,
    /// `latency`.
    Column(Col),
    /// The class and one more column of at most 32 bits: `blk.dev`, `blk.op`, `blk.flags` (and
    /// `blk.pattern`, `blk.queued`), `blk.cause` (absent for calls), `fd.num`, `disk.requests`
    /// (absent for block requests).
    ClassAnd(Col),
    /// The class, the cause and the syscall number: `blk.syscall`.
    ClassCauseNr,
    /// Class, syscall number and op: `evt.type`, `evt.class`, `io.dir` and its flags.
    EventType,
    /// Class, syscall number and file: `evt.waits` (a read waits or not by its file's type).
    TypeFile,
    /// The return value when negative, else 0: `evt.errno`, `evt.failed`.
    Error,
    /// Nothing: a field with one value per capture (`host`, `capture.id`), printed from the
    /// capture's header.
    Capture,
    /// The printed value, interned, printed from an event of these columns. A 64-bit value
    /// that is absent for some classes (`blk.bytes`, `disk.bytes`) has no exact key in 64
    /// bits, nor has a sum (`blk.total`); `evt.time` and `io.offset` are a value per event,
    /// rarely grouped by, with no cheaper key worth keeping: those read every column.
    Printed(ColSet),
}

impl KeyOf {
    /// The key that decides `field`'s value.
    pub fn of(field: &FieldInfo) -> KeyOf {
        use FieldId::*;
        let class_and = |cols: ColSet| cols.union(ColSet::NONE.with(Col::Class));
        match field.read {
            Read::Column { col, of: Holds::All } => return KeyOf::Column(col),
            Read::Column { col, .. } if col.raw_bits() <= 32 => return KeyOf::ClassAnd(col),
            Read::Column { col, .. } => return KeyOf::Printed(class_and(ColSet::NONE.with(col))),
            Read::Sum { cols: (a, b), .. } => return KeyOf::Printed(class_and(ColSet::NONE.with(a).with(b))),
            Read::Rest {
                from, minus: (a, b), ..
            } => return KeyOf::Printed(class_and(ColSet::NONE.with(from).with(a).with(b))),
            Read::Other { .. } => {}
        }
        match field.id {
            ProcName | ProcExe | ProcCmdline | ProcPpid | ProcCgroup | UserUid | UserName | ContainerId
            | ContainerFullId | ContainerRuntime | ContainerName | ContainerImage | K8sPodName | K8sPodUid
            | K8sNsName => KeyOf::Id(IdCol::Proc),
            FdName | FdType | FdDirectory | FdFilename | FdDev => KeyOf::Id(IdCol::File),
            FdNum => KeyOf::ClassAnd(Col::Fd),
            BlkDev => KeyOf::ClassAnd(Col::Dev),
            BlkOp => KeyOf::ClassAnd(Col::Op),
            BlkFlags | BlkPattern | BlkQueued | EvtUnfinished => KeyOf::ClassAnd(Col::Flags),
            BlkCause => KeyOf::ClassAnd(Col::Cause),
            WaitReason => KeyOf::ClassAnd(Col::Reason),
            WakerProcName => KeyOf::ClassAnd(Col::WakerProc),
            StackUser | StackTop => KeyOf::ClassAnd(Col::StackUser),
            StackKernel => KeyOf::ClassAnd(Col::StackKernel),
            BlkSyscall => KeyOf::ClassCauseNr,
            EvtType | EvtClass | IoDir | IsIoRead | IsIoWrite => KeyOf::EventType,
            EvtErrno | EvtFailed => KeyOf::Error,
            Host | CaptureId => KeyOf::Capture,
            EvtTime | IoOffset => KeyOf::Printed(ColSet::ALL),
            EvtWaits => KeyOf::TypeFile,
            // Read from their columns, above; a field read otherwise that is not named here
            // is printed from every column (right, and slow: a test fails on it).
            _ => KeyOf::Printed(ColSet::ALL),
        }
    }

    /// The columns the key reads, which are also all a sample event needs for the value to
    /// be printed from it.
    pub fn columns(self) -> ColSet {
        use Col::*;
        let cols: &[Col] = match self {
            KeyOf::Id(IdCol::Proc) => &[Proc],
            KeyOf::Id(IdCol::File) => &[File],
            KeyOf::Column(c) => return ColSet::NONE.with(c),
            KeyOf::ClassAnd(c) => return ColSet::NONE.with(Class).with(c),
            KeyOf::ClassCauseNr => &[Class, Cause, Nr],
            KeyOf::EventType => &[Class, Nr, Op],
            KeyOf::TypeFile => &[Class, Nr, File],
            KeyOf::Error => &[Ret],
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
        match self {
            KeyOf::Id(IdCol::Proc) => g(&c.proc),
            KeyOf::Id(IdCol::File) => g(&c.file),
            // Every column type fits in 64 bits: the value is the key (two's complement).
            KeyOf::Column(col) => c.get(col).wide(i) as u64,
            KeyOf::ClassAnd(col) => class << 40 | (c.get(col).wide(i) as u64 & 0xffff_ffff),
            KeyOf::ClassCauseNr => class << 40 | byte(&c.cause) << 32 | g(&c.nr),
            KeyOf::Error => c.ret.get(i).copied().unwrap_or(0).min(0) as u64,
            KeyOf::Capture => 0,
            KeyOf::TypeFile => (class & 0xff) << 56 | (g(&c.nr) & 0xff_ffff) << 32 | g(&c.file),
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

    /// The column of a key that is a u32 column's value (a table id, a pid), whose value is
    /// the key itself.
    pub fn id_column(self, c: &Columns) -> Option<&[u32]> {
        match self {
            KeyOf::Id(IdCol::Proc) => Some(&c.proc),
            KeyOf::Id(IdCol::File) => Some(&c.file),
            KeyOf::Column(col) => match c.get(col) {
                ColSlice::U32(v) => Some(v),
                _ => None,
            },
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field has a key of its own kind: only a value per event that is rarely grouped by
    /// (`evt.time`, `io.offset`) is printed from every column. A field read by its id that
    /// `KeyOf::of` does not name fails here, rather than grouping slowly.
    #[test]
    fn only_values_per_event_are_printed_from_every_column() {
        for f in iocap_filter::fields::all() {
            let slow = KeyOf::of(f) == KeyOf::Printed(ColSet::ALL);
            let per_event = matches!(f.id, FieldId::EvtTime | FieldId::IoOffset);
            assert_eq!(slow, per_event, "{}: {:?}", f.name, KeyOf::of(f));
        }
    }
}
