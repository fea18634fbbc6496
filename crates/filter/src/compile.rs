//! The compiler and evaluator: a checked filter + one capture's tables → [`Compiled`], a tree
//! of column kernels that turns a decoded chunk into a [`Bitmap`].
//!
//! String predicates never run per event. At compile time each one is decided once per table
//! entry — per process id, file id, syscall number, errno, block op, flags combination, device —
//! by asking [`fields::value`] about a synthetic event carrying only that id, so the compiled
//! form means exactly what `fields::value` says. Evaluation is then integer scans: a range test
//! on a column, or a bit test of an id in a precomputed set, 64 events to a word.

use iocap_format::{Cause, ChunkSummary, Class, Col, ColSet, ColSlice, Columns, Event, Holds, Meta, Tables};

use crate::bitmap::Bitmap;
use crate::check::{Node, Pred, Test};
use crate::fields::{self, FieldId, FieldType, Read, Value};

/// A filter ready to run over the chunks of one capture. `Send + Sync`: share it between the
/// threads that decode and filter chunks.
#[derive(Clone, Debug)]
pub struct Compiled {
    root: CNode,
    columns: ColSet,
}

#[derive(Clone, Debug)]
pub(crate) enum CNode {
    Const(bool),
    And(Vec<CNode>),
    Or(Vec<CNode>),
    Not(Box<CNode>),
    Leaf(Kernel),
}

/// A column an integer test reads, and how a value becomes the u64 key the ranges are over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumSrc {
    /// A column ([`fields::Read::Column`]); `signed` (a field of type int): the key is the
    /// value as an i64 with its sign bit flipped (order-preserving).
    Col { col: Col, signed: bool },
    /// The saturating sum of two columns ([`fields::Read::Sum`]).
    Sum(Col, Col),
    /// A column less two others, saturating at 0 ([`fields::Read::Rest`]).
    Rest(Col, Col, Col),
    /// `fd.num`: the fd column, signed, present only when not negative.
    Fd,
}

/// A column whose values are ids tested against an [`IdSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IdSrc {
    Proc,
    File,
    /// `-ret` of events with `ret < 0`; other events have no errno.
    Errno,
    /// Known bits of the block flags.
    Flags,
    Dev,
    /// A block request's [`iocap_format::Cause`] code.
    Cause,
    /// A call's [`iocap_format::Reason`] code.
    Reason,
    /// The process table id of a call's waker.
    WakerProc,
    /// The syscall number of a block request (its linked syscall's).
    Nr,
    /// The stack table id of a call's user stack.
    StackUser,
    /// The stack table id of the kernel stack of a call's longest sleep.
    StackKernel,
}

#[derive(Clone, Debug)]
pub(crate) enum Kernel {
    /// `class` (when required) matches and the key lies in one of `ranges` (none of them, when
    /// `negate`). Fields that exist only on one class set `class`; `fd.num` also needs `fd >= 0`.
    Num {
        src: NumSrc,
        class: Option<u8>,
        ranges: Vec<(u64, u64)>,
        negate: bool,
    },
    Ids {
        src: IdSrc,
        class: Option<u8>,
        set: IdSet,
    },
    /// A field that depends on the class (boxed: three sets are much larger than the other
    /// kernels).
    Split(Box<ByClass>),
}

/// Which events pass, per class: syscalls by number, block requests by op, io_uring requests
/// by opcode (in the `nr` column), journal commits all or none.
#[derive(Clone, Debug)]
pub(crate) struct ByClass {
    pub(crate) nrs: IdSet,
    pub(crate) ops: IdSet,
    pub(crate) urings: IdSet,
    pub(crate) journal: bool,
}

/// Which ids satisfy a predicate: a bitset over `0..dense_len`, a sorted list of larger known
/// ids, and a rule for every other id.
#[derive(Clone, Debug)]
pub(crate) struct IdSet {
    dense: Vec<u64>,
    dense_len: u64,
    sparse: Vec<(u64, bool)>,
    beyond: Beyond,
    /// The members, when they are 1 to 4 ids below 2^32 and nothing beyond them matches,
    /// repeated to fill the array: a scan compares with each rather than looking each event up.
    few: Option<[u32; 4]>,
}

#[derive(Clone, Debug)]
enum Beyond {
    Const(bool),
    /// Decide by the field's value for a synthetic event of `class` with this id (numbers
    /// iocap has no name for: `sys_NNN`, `uring_NNN`, `errno_NNN`, `major:minor`). Only hostile
    /// or unusual data gets here.
    Eval {
        field: FieldId,
        class: Class,
        test: Test,
        meta: Box<Meta>,
    },
}

/// Table ids above this many times the table size (plus slack) go to the sparse list, so a
/// hostile id of 4 billion does not allocate 512 MB.
const DENSE_SLACK: u64 = 1 << 16;

impl IdSet {
    fn build(ids: impl IntoIterator<Item = (u64, bool)>, dense_len_hint: u64, beyond: Beyond) -> IdSet {
        let items: Vec<(u64, bool)> = ids.into_iter().collect();
        let limit = (items.len() as u64)
            .saturating_mul(4)
            .saturating_add(DENSE_SLACK)
            .max(dense_len_hint);
        let dense_len = items
            .iter()
            .map(|&(id, _)| id + 1)
            .filter(|&n| n <= limit)
            .max()
            .unwrap_or(0)
            .max(dense_len_hint);
        Self::place(items, dense_len, beyond)
    }

    /// The set of `members` and nothing else, of a table whose ids are at most `max_id`, and
    /// `count` of them (`ids`): [`IdSet::build`] without a list of every id and whether it
    /// is in (16 bytes each while building), for the file table, one entry per open.
    fn of_members(members: impl Iterator<Item = u64>, ids: (u64, u64)) -> IdSet {
        let (max_id, count) = ids;
        let dense_len = max_id
            .saturating_add(1)
            .min(count.saturating_mul(4).saturating_add(DENSE_SLACK));
        Self::place(members.map(|id| (id, true)), dense_len, Beyond::Const(false))
    }

    /// The set of the ids `items` says are in (`true`), those below `dense_len` in the bitset,
    /// the others listed with what they say, and `beyond` for every other id.
    fn place(items: impl IntoIterator<Item = (u64, bool)>, dense_len: u64, beyond: Beyond) -> IdSet {
        let mut dense = vec![0u64; dense_len.div_ceil(64) as usize];
        let mut sparse = Vec::new();
        for (id, m) in items {
            if id < dense_len {
                if m {
                    dense[(id / 64) as usize] |= 1 << (id % 64);
                }
            } else {
                sparse.push((id, m));
            }
        }
        sparse.sort_unstable_by_key(|&(id, _)| id);
        sparse.dedup_by_key(|&mut (id, _)| id);
        let few = Self::few(&dense, &sparse, &beyond);
        IdSet {
            dense,
            dense_len,
            sparse,
            beyond,
            few,
        }
    }

    /// [`IdSet::few`] of a set built of these parts.
    fn few(dense: &[u64], sparse: &[(u64, bool)], beyond: &Beyond) -> Option<[u32; 4]> {
        if !matches!(beyond, Beyond::Const(false)) {
            return None;
        }
        // Five at most: enough to tell more than four.
        let members: Vec<u64> = crate::bitmap::ones(dense)
            .map(|id| id as u64)
            .chain(sparse.iter().filter(|&&(_, m)| m).map(|&(id, _)| id))
            .take(5)
            .collect();
        if members.is_empty() || members.len() > 4 {
            return None;
        }
        let mut few = [0u32; 4];
        for (k, slot) in few.iter_mut().enumerate() {
            *slot = u32::try_from(members[k.min(members.len() - 1)]).ok()?;
        }
        Some(few)
    }

    #[inline(always)]
    fn contains(&self, id: u64) -> bool {
        if id < self.dense_len {
            // The index is below dense_len, which the words cover.
            self.dense[(id / 64) as usize] >> (id % 64) & 1 == 1
        } else {
            self.contains_slow(id)
        }
    }

    #[cold]
    fn contains_slow(&self, id: u64) -> bool {
        if let Ok(i) = self.sparse.binary_search_by_key(&id, |&(x, _)| x) {
            return self.sparse[i].1;
        }
        match &self.beyond {
            Beyond::Const(b) => *b,
            Beyond::Eval {
                field,
                class,
                test,
                meta,
            } => {
                let e = synthetic(*field, *class, id);
                test_value(test, &fields::value(fields::info(*field), &e, meta, &Tables::default()))
            }
        }
    }

    /// Whether any id may be in the set (for chunk skipping).
    pub(crate) fn maybe_any(&self) -> bool {
        self.dense.iter().any(|&w| w != 0)
            || self.sparse.iter().any(|&(_, m)| m)
            || !matches!(self.beyond, Beyond::Const(false))
    }
}

/// The fields of an event's process table entry (every `proc.*` and `user.*` but `proc.pid`,
/// the event's own column), as a pattern.
macro_rules! process_fields {
    () => {
        FieldId::ProcName
            | FieldId::ProcExe
            | FieldId::ProcCmdline
            | FieldId::ProcPpid
            | FieldId::UserUid
            | FieldId::UserName
            | FieldId::ProcCgroup
            | crate::fields::container_fields!()
    };
}

/// An event of `class` carrying only `id` in the column `field` reads (for id-keyed fields;
/// the block-only fields make a block event whatever `class` says).
pub(crate) fn synthetic(field: FieldId, class: Class, id: u64) -> Event {
    let id32 = u32::try_from(id).unwrap_or(u32::MAX);
    let mut e = Event {
        class,
        fd: -1,
        ..Event::default()
    };
    match field {
        process_fields!() => e.proc = id32,
        FieldId::FdType | FieldId::FdName | FieldId::FdDirectory | FieldId::FdFilename | FieldId::FdDev => {
            e.file = id32
        }
        FieldId::EvtErrno => e.ret = -(i64::try_from(id).unwrap_or(i64::MAX)),
        FieldId::BlkFlags | FieldId::BlkPattern | FieldId::BlkQueued => {
            e.class = Class::Block;
            e.flags = id32;
        }
        FieldId::BlkDev => {
            e.class = Class::Block;
            e.dev = id32;
        }
        FieldId::EvtUnfinished => e.flags = id32,
        _ => e.nr = id32,
    }
    e
}

/// Whether a field's value passes a test; absent values pass only `not`-ed tests, which the
/// tree handles above this.
pub(crate) fn test_value(test: &Test, v: &Value<'_>) -> bool {
    let n = match v {
        Value::Absent => return false,
        _ if matches!(test, Test::Exists) => return true,
        Value::Str(s) => {
            return match test {
                Test::Str { m, negate } => m.matches(s) != *negate,
                _ => false,
            }
        }
        Value::Int(x) => i128::from(*x),
        Value::UInt(x) | Value::Duration(x) | Value::Bytes(x) => i128::from(*x),
        Value::Bool(b) => i128::from(*b),
    };
    match test {
        Test::Num { ranges, negate } => ranges.iter().any(|&(lo, hi)| lo <= n && n <= hi) != *negate,
        _ => false,
    }
}

const SYSCALL: u8 = Class::Syscall as u8;
pub(crate) const BLOCK: u8 = Class::Block as u8;
const IO_URING: u8 = Class::IoUring as u8;
const JOURNAL: u8 = Class::Journal as u8;

/// Whether class code `code` is class `want`. A code other than block (only in a hostile file)
/// is a syscall, as `Columns::event` and the chunk summary count it.
#[inline(always)]
fn is_class(code: u8, want: u8) -> bool {
    (code == BLOCK) == (want == BLOCK)
}

/// Compile `node` for a capture with these `meta` and `tables`, `evt.time` counted from
/// `origin` (ns on the capture's boot clock: its `start_ts`, or the instant aligned with
/// another capture's start when several are read together).
pub(crate) fn compile(node: &Node, meta: &Meta, tables: &Tables, origin: u64) -> Compiled {
    let root = compile_node(node, meta, tables, origin);
    let mut columns = ColSet::NONE;
    root.columns(&mut columns);
    Compiled { root, columns }
}

pub(crate) fn compile_node(node: &Node, meta: &Meta, tables: &Tables, origin: u64) -> CNode {
    match node {
        Node::All => CNode::Const(true),
        Node::And(..) | Node::Or(..) => {
            let and = matches!(node, Node::And(..));
            let mut v = Vec::new();
            for operand in chain(node) {
                match compile_node(operand, meta, tables, origin) {
                    CNode::And(inner) if and => v.extend(inner),
                    CNode::Or(inner) if !and => v.extend(inner),
                    // The identity of the operator drops out; its absorbing element decides.
                    CNode::Const(b) if b == and => {}
                    CNode::Const(b) => return CNode::Const(b),
                    c => v.push(c),
                }
            }
            match v.len() {
                0 => CNode::Const(and),
                1 => v.pop().unwrap_or(CNode::Const(and)),
                _ if and => CNode::And(v),
                _ => CNode::Or(v),
            }
        }
        Node::Not(a) => match compile_node(a, meta, tables, origin) {
            CNode::Const(b) => CNode::Const(!b),
            CNode::Not(inner) => *inner,
            c => CNode::Not(Box::new(c)),
        },
        Node::Pred(p) if p.field == FieldId::EvtWaits => {
            // Compiled as the filter it stands for, that or its negation as the test says.
            static WAITS: std::sync::OnceLock<crate::Filter> = std::sync::OnceLock::new();
            let waits = WAITS
                .get_or_init(|| crate::Filter::parse(&fields::waits_filter()).expect("evt.waits's filter is a filter"));
            let holds = |b: bool| test_value(&p.test, &Value::Bool(b));
            match (holds(true), holds(false)) {
                (true, true) => CNode::Const(true),
                (false, false) => CNode::Const(false),
                (true, false) => compile_node(&waits.checked, meta, tables, origin),
                (false, true) => CNode::Not(Box::new(compile_node(&waits.checked, meta, tables, origin))),
            }
        }
        Node::Pred(p) if p.field == FieldId::IoOffset => {
            // io.offset is absent but on the positional calls: their numbers and the offset.
            let positional = (0..1024u64).map(|nr| (nr, fields::is_positional(&meta.arch, nr as u32)));
            let calls = Kernel::Split(Box::new(ByClass {
                nrs: IdSet::build(positional, 1024, Beyond::Const(false)),
                ops: IdSet::build(std::iter::empty(), 0, Beyond::Const(false)),
                urings: IdSet::build(std::iter::empty(), 0, Beyond::Const(false)),
                journal: false,
            }));
            CNode::And(vec![
                CNode::Leaf(calls),
                CNode::Leaf(compile_pred(p, meta, tables, origin)),
            ])
        }
        Node::Pred(p) if p.field == FieldId::BlkSyscall => {
            // blk.syscall is absent unless a syscall issued the request: the number test
            // and the cause test together.
            let syscall_caused = Kernel::Ids {
                src: IdSrc::Cause,
                class: Some(BLOCK),
                set: IdSet::build([(Cause::Syscall as u64, true)], 256, Beyond::Const(false)),
            };
            CNode::And(vec![
                CNode::Leaf(syscall_caused),
                CNode::Leaf(compile_pred(p, meta, tables, origin)),
            ])
        }
        // One value for the whole capture: decided here, so a capture it rules out costs
        // nothing (its chunks are skipped by `may_match`).
        Node::Pred(p) if p.field.is_per_capture() => {
            let e = Event::default();
            CNode::Const(test_value(
                &p.test,
                &fields::value(fields::info(p.field), &e, meta, tables),
            ))
        }
        Node::Pred(p) => CNode::Leaf(compile_pred(p, meta, tables, origin)),
    }
}

/// The operands of a left-deep chain of one operator, walked by a loop: a chain of 500 `and`s
/// must not recurse 500 frames deep.
fn chain(node: &Node) -> Vec<&Node> {
    let mut out = Vec::new();
    let mut n = node;
    loop {
        match (node, n) {
            (Node::And(..), Node::And(a, b)) | (Node::Or(..), Node::Or(a, b)) => {
                out.push(&**b);
                n = a;
            }
            _ => {
                out.push(n);
                out.reverse();
                return out;
            }
        }
    }
}

/// Integer ranges of a test, mapped into a column's key space.
fn key_ranges(test: &Test, signed: bool) -> (Vec<(u64, u64)>, bool) {
    let (ranges, negate) = match test {
        Test::Num { ranges, negate } => (ranges.clone(), *negate),
        // `exists` on a column field: any value, given the presence conditions.
        _ => (vec![(i128::MIN, i128::MAX)], false),
    };
    let (min, max) = if signed {
        (i128::from(i64::MIN), i128::from(i64::MAX))
    } else {
        (0, i128::from(u64::MAX))
    };
    let out = ranges
        .into_iter()
        .map(|(lo, hi)| (lo.max(min), hi.min(max)))
        .filter(|(lo, hi)| lo <= hi)
        .map(|(lo, hi)| {
            if signed {
                (signed_key(lo as i64), signed_key(hi as i64))
            } else {
                (lo as u64, hi as u64)
            }
        })
        .collect();
    (out, negate)
}

#[inline(always)]
fn always<T>(_: T) -> bool {
    true
}

#[inline(always)]
fn signed_key(x: i64) -> u64 {
    (x as u64) ^ (1 << 63)
}

fn compile_pred(p: &Pred, meta: &Meta, tables: &Tables, origin: u64) -> Kernel {
    let num = |src: NumSrc, class: Option<u8>| {
        let signed = matches!(src, NumSrc::Col { signed: true, .. } | NumSrc::Fd);
        let (ranges, negate) = key_ranges(&p.test, signed);
        Kernel::Num {
            src,
            class,
            ranges,
            negate,
        }
    };
    let info = fields::info(p.field);
    let passes = |e: &Event| test_value(&p.test, &fields::value(info, e, meta, tables));
    let eval_beyond_in = |class: Class| Beyond::Eval {
        field: p.field,
        class,
        test: p.test.clone(),
        meta: Box::new(meta.clone()),
    };
    let eval_beyond = || eval_beyond_in(Class::Syscall);
    // Syscall numbers (io_uring opcodes) iocap may know a name for; others are decided one by
    // one, as `beyond` says.
    let nr_set = |class: Class, known: u64, beyond: Beyond| {
        let nrs = (0..known).map(|nr| {
            let e = Event {
                class,
                ..Event::syscall(0, 0, 0, 0, nr as u32, 0)
            };
            (nr, passes(&e))
        });
        IdSet::build(nrs, known, beyond)
    };
    // `beyond` decides the syscall numbers and io_uring opcodes past the known ones.
    let split = |beyond: &dyn Fn(Class) -> Beyond| {
        let ops = (0..256u64).map(|op| {
            let e = Event {
                class: Class::Block,
                op: op as u8,
                ..Event::default()
            };
            (op, passes(&e))
        });
        Kernel::Split(Box::new(ByClass {
            nrs: nr_set(Class::Syscall, 1024, beyond(Class::Syscall)),
            ops: IdSet::build(ops, 256, Beyond::Const(false)),
            urings: nr_set(Class::IoUring, 256, beyond(Class::IoUring)),
            journal: passes(&Event {
                class: Class::Journal,
                ..Event::default()
            }),
        }))
    };
    // The events a field is for, as the class a kernel tests.
    let class_of = |of: Holds| match of {
        Holds::All => None,
        Holds::Blocks => Some(BLOCK),
        Holds::Others => Some(SYSCALL),
    };
    match info.read {
        Read::Column { col, of } if p.field == FieldId::BlkSector => {
            // A request without a sector (a flush: all ones) has no `blk.sector`, as
            // `fields::value` says: no test of it passes, nor does its negation.
            let mut k = num(NumSrc::Col { col, signed: false }, class_of(of));
            if let Kernel::Num { ranges, negate, .. } = &mut k {
                if *negate {
                    ranges.push((u64::MAX, u64::MAX));
                } else {
                    for r in ranges.iter_mut() {
                        r.1 = r.1.min(u64::MAX - 1);
                    }
                    ranges.retain(|r| r.0 <= r.1);
                }
            }
            return k;
        }
        Read::Column { col, of } => {
            let signed = info.ty == FieldType::Int;
            return num(NumSrc::Col { col, signed }, class_of(of));
        }
        Read::Sum { cols: (a, b), of } => return num(NumSrc::Sum(a, b), class_of(of)),
        Read::Rest {
            from,
            minus: (a, b),
            of,
        } => return num(NumSrc::Rest(from, a, b), class_of(of)),
        Read::Other { .. } => {}
    }
    match p.field {
        // Read from their columns, above.
        FieldId::ProcPid
        | FieldId::ThreadTid
        | FieldId::EvtRes
        | FieldId::Latency
        | FieldId::IoBytes
        | FieldId::BlkSector
        | FieldId::BlkBytes
        | FieldId::BlkQueue
        | FieldId::BlkLatency
        | FieldId::BlkTotal
        | FieldId::DiskRequests
        | FieldId::DiskBytes
        | FieldId::DiskTime
        | FieldId::EvtCpu
        | FieldId::BlkPrio
        | FieldId::CpuTime
        | FieldId::RunqTime
        | FieldId::WaitTime
        | FieldId::WaitCount
        | FieldId::WakerTid
        | FieldId::WakerAfter
        | FieldId::WaitDisk
        | FieldId::WaitThrottle
        | FieldId::WaitWriteback
        | FieldId::WaitJournal
        | FieldId::WaitLock
        | FieldId::WaitReclaim
        | FieldId::WaitTimer
        | FieldId::WaitCall
        | FieldId::WaitNet
        | FieldId::WaitSignal
        | FieldId::WaitOther => unreachable!("{:?} is read from columns", p.field),
        FieldId::EvtWaits => unreachable!("evt.waits is compiled as its filter by compile_node"),
        FieldId::EvtFailed => {
            // true ⇔ ret < 0: map the {0, 1} test onto ranges of ret.
            let t = |b: bool| test_value(&p.test, &Value::Bool(b));
            let mut ranges = Vec::new();
            if t(true) {
                ranges.push((signed_key(i64::MIN), signed_key(-1)));
            }
            if t(false) {
                ranges.push((signed_key(0), signed_key(i64::MAX)));
            }
            Kernel::Num {
                src: NumSrc::Col {
                    col: Col::Ret,
                    signed: true,
                },
                class: None,
                ranges,
                negate: false,
            }
        }
        FieldId::EvtTime => {
            // evt.time = ts - origin (saturating): a range of it is a range of ts.
            let start = origin;
            let (ranges, negate) = key_ranges(&p.test, false);
            let ranges = ranges
                .into_iter()
                .filter_map(|(lo, hi)| {
                    let from = if lo == 0 { 0 } else { start.checked_add(lo)? };
                    Some((from, start.saturating_add(hi)))
                })
                .collect();
            Kernel::Num {
                src: NumSrc::Col {
                    col: Col::Ts,
                    signed: false,
                },
                class: None,
                ranges,
                negate,
            }
        }
        FieldId::FdNum => num(NumSrc::Fd, Some(SYSCALL)),
        // Only on the positional calls: `compile_node` adds that half.
        FieldId::IoOffset => num(
            NumSrc::Col {
                col: Col::Offset,
                signed: true,
            },
            Some(SYSCALL),
        ),
        FieldId::BlkCause => {
            let ids = (0..256u64).map(|c| {
                let e = Event {
                    class: Class::Block,
                    cause: c as u8,
                    ..Event::default()
                };
                (c, passes(&e))
            });
            Kernel::Ids {
                src: IdSrc::Cause,
                class: Some(BLOCK),
                set: IdSet::build(ids, 256, Beyond::Const(false)),
            }
        }
        FieldId::WaitReason => {
            let ids = (0..256u64).map(|c| {
                let e = Event {
                    class: Class::Syscall,
                    reason: c as u8,
                    ..Event::default()
                };
                (c, passes(&e))
            });
            Kernel::Ids {
                src: IdSrc::Reason,
                class: Some(SYSCALL),
                set: IdSet::build(ids, 256, Beyond::Const(false)),
            }
        }
        FieldId::BlkSyscall => {
            // Only on requests a syscall issued (see `compile` for the cause half): decided
            // here over the syscall numbers those carry.
            let ids = (0..1024u64).map(|nr| {
                let e = Event {
                    class: Class::Block,
                    cause: Cause::Syscall as u8,
                    nr: nr as u32,
                    ..Event::default()
                };
                (nr, passes(&e))
            });
            Kernel::Ids {
                src: IdSrc::Nr,
                class: Some(BLOCK),
                set: IdSet::build(ids, 1024, eval_beyond()),
            }
        }
        FieldId::WakerProcName => {
            // As the process fields, over the waker's process.
            // Id 0 (no waker, or unknown) too: a negated test passes it.
            let ids = std::iter::once(0)
                .chain(tables.procs().iter().map(|pr| pr.id))
                .map(|id| {
                    let e = Event {
                        class: Class::Syscall,
                        waker_proc: id,
                        ..Event::default()
                    };
                    (u64::from(id), passes(&e))
                });
            Kernel::Ids {
                src: IdSrc::WakerProc,
                class: Some(SYSCALL),
                set: IdSet::build(ids, 0, Beyond::Const(false)),
            }
        }
        FieldId::StackUser | FieldId::StackTop | FieldId::StackKernel => {
            // Decided once per stack of the table, as the waker's process is per process;
            // id 0 (no stack) too: a negated test passes it.
            let kernel = p.field == FieldId::StackKernel;
            let ids = std::iter::once(0).chain(tables.stacks().map(|(id, _)| id)).map(|id| {
                let mut e = Event {
                    class: Class::Syscall,
                    ..Event::default()
                };
                if kernel {
                    e.stack_kernel = id;
                } else {
                    e.stack_user = id;
                }
                (u64::from(id), passes(&e))
            });
            Kernel::Ids {
                src: if kernel { IdSrc::StackKernel } else { IdSrc::StackUser },
                class: Some(SYSCALL),
                set: IdSet::build(ids, 0, Beyond::Const(false)),
            }
        }
        process_fields!() => {
            let ids = tables.procs().iter().map(|pr| {
                let e = Event {
                    proc: pr.id,
                    ..Event::default()
                };
                (u64::from(pr.id), passes(&e))
            });
            Kernel::Ids {
                src: IdSrc::Proc,
                class: None,
                set: IdSet::build(ids, 0, Beyond::Const(false)),
            }
        }
        FieldId::FdType | FieldId::FdName | FieldId::FdDirectory | FieldId::FdFilename | FieldId::FdDev => {
            // Decided once for each file the entries refer to; only the matching ids are
            // gathered (a day's recording has tens of millions of entries).
            let members = tables.file_ids_where(|file| {
                passes(&Event {
                    file,
                    ..Event::default()
                })
            });
            let ids = (u64::from(tables.max_file_id()), tables.file_count() as u64);
            Kernel::Ids {
                src: IdSrc::File,
                class: None,
                set: IdSet::of_members(members.map(u64::from), ids),
            }
        }
        FieldId::EvtErrno => {
            let ids = (0..4096u64).map(|n| (n, n > 0 && passes(&synthetic(p.field, Class::Syscall, n))));
            Kernel::Ids {
                src: IdSrc::Errno,
                class: None,
                set: IdSet::build(ids, 4096, eval_beyond()),
            }
        }
        FieldId::BlkFlags | FieldId::BlkPattern | FieldId::BlkQueued => {
            let ids = (0..=u64::from(fields::FLAGS_MASK)).map(|f| (f, passes(&synthetic(p.field, Class::Block, f))));
            Kernel::Ids {
                src: IdSrc::Flags,
                class: Some(BLOCK),
                set: IdSet::build(ids, u64::from(fields::FLAGS_MASK) + 1, Beyond::Const(false)),
            }
        }
        FieldId::EvtUnfinished => {
            let ids = (0..=u64::from(fields::FLAGS_MASK)).map(|f| (f, passes(&synthetic(p.field, Class::Syscall, f))));
            Kernel::Ids {
                src: IdSrc::Flags,
                class: None,
                set: IdSet::build(ids, u64::from(fields::FLAGS_MASK) + 1, Beyond::Const(false)),
            }
        }
        FieldId::BlkDev => {
            let devs = tables.devices().iter().map(|d| d.dev);
            let ids: Vec<(u64, bool)> = devs
                .map(|d| (u64::from(d), passes(&synthetic(p.field, Class::Block, u64::from(d)))))
                .collect();
            // Device numbers are large and few: all of them go to the sorted list.
            let mut set = IdSet::build(std::iter::empty(), 0, eval_beyond());
            set.sparse = ids;
            set.sparse.sort_unstable_by_key(|&(id, _)| id);
            set.sparse.dedup_by_key(|&mut (id, _)| id);
            Kernel::Ids {
                src: IdSrc::Dev,
                class: Some(BLOCK),
                set,
            }
        }
        FieldId::EvtType => split(&eval_beyond_in),
        // Decided once per capture by `compile_node`; as a kernel, the same for every event.
        FieldId::Host | FieldId::CaptureId => Kernel::Ids {
            src: IdSrc::Proc,
            class: None,
            set: IdSet::build(std::iter::empty(), 0, Beyond::Const(passes(&Event::default()))),
        },
        FieldId::EvtClass | FieldId::IoDir | FieldId::IsIoRead | FieldId::IsIoWrite | FieldId::BlkOp => {
            // Unknown syscall numbers (opcodes) have a constant value for these fields per
            // class (io.dir none...).
            split(&|class| {
                Beyond::Const(passes(&Event {
                    class,
                    ..Event::syscall(0, 0, 0, 0, u32::MAX, 0)
                }))
            })
        }
    }
}

impl CNode {
    fn columns(&self, out: &mut ColSet) {
        match self {
            CNode::Const(_) => {}
            CNode::And(v) | CNode::Or(v) => v.iter().for_each(|c| c.columns(out)),
            CNode::Not(c) => c.columns(out),
            CNode::Leaf(k) => *out = out.union(k.columns()),
        }
    }

    /// This node within a chunk with summary `s`: every part the summary decides (no event
    /// may match it, or every event surely does) made a constant, and constants folded away.
    fn given(&self, s: &ChunkSummary) -> CNode {
        match self.bounds(s) {
            (false, _) => return CNode::Const(false),
            (_, true) => return CNode::Const(true),
            _ => {}
        }
        match self {
            CNode::And(v) | CNode::Or(v) => {
                let and = matches!(self, CNode::And(_));
                // In an `and` a true part adds nothing, in an `or` a false one; the decided
                // parts of the other kind were caught by the bounds above.
                let parts: Vec<CNode> = v
                    .iter()
                    .map(|c| c.given(s))
                    .filter(|c| !matches!(c, CNode::Const(b) if *b == and))
                    .collect();
                match parts.len() {
                    0 => CNode::Const(and),
                    1 => parts.into_iter().next().unwrap_or(CNode::Const(and)),
                    _ if and => CNode::And(parts),
                    _ => CNode::Or(parts),
                }
            }
            CNode::Not(c) => CNode::Not(Box::new(c.given(s))),
            other => other.clone(),
        }
    }

    /// `(may, all)`: whether some event of the chunk may match, and whether all surely do.
    fn bounds(&self, s: &ChunkSummary) -> (bool, bool) {
        match self {
            CNode::Const(b) => (*b, *b),
            CNode::And(v) => v.iter().fold((true, true), |(m, a), c| {
                let (cm, ca) = c.bounds(s);
                (m && cm, a && ca)
            }),
            CNode::Or(v) => v.iter().fold((false, false), |(m, a), c| {
                let (cm, ca) = c.bounds(s);
                (m || cm, a || ca)
            }),
            CNode::Not(c) => {
                let (m, a) = c.bounds(s);
                (!a, !m)
            }
            CNode::Leaf(k) => k.bounds(s),
        }
    }
}

impl Kernel {
    fn columns(&self) -> ColSet {
        let class = |c: &Option<u8>| {
            if c.is_some() {
                ColSet::NONE.with(Col::Class)
            } else {
                ColSet::NONE
            }
        };
        match self {
            Kernel::Num { src, class: c, .. } => {
                let cols = match *src {
                    NumSrc::Col { col, .. } => ColSet::NONE.with(col),
                    NumSrc::Sum(a, b) => ColSet::NONE.with(a).with(b),
                    NumSrc::Rest(f, a, b) => ColSet::NONE.with(f).with(a).with(b),
                    NumSrc::Fd => ColSet::NONE.with(Col::Fd),
                };
                cols.union(class(c))
            }
            Kernel::Ids { src, class: c, .. } => {
                let col = match src {
                    IdSrc::Proc => Col::Proc,
                    IdSrc::File => Col::File,
                    IdSrc::Errno => Col::Ret,
                    IdSrc::Flags => Col::Flags,
                    IdSrc::Dev => Col::Dev,
                    IdSrc::Cause => Col::Cause,
                    IdSrc::Reason => Col::Reason,
                    IdSrc::WakerProc => Col::WakerProc,
                    IdSrc::Nr => Col::Nr,
                    IdSrc::StackUser => Col::StackUser,
                    IdSrc::StackKernel => Col::StackKernel,
                };
                ColSet::NONE.with(col).union(class(c))
            }
            Kernel::Split(_) => ColSet::NONE.with(Col::Class).with(Col::Nr).with(Col::Op),
        }
    }

    fn bounds(&self, s: &ChunkSummary) -> (bool, bool) {
        if s.events == 0 {
            return (false, true);
        }
        let class_may = |c: &Option<u8>| match *c {
            Some(SYSCALL) => s.syscalls > 0,
            Some(_) => s.blocks > 0,
            None => true,
        };
        match self {
            Kernel::Num {
                src,
                class,
                ranges,
                negate,
            } => {
                if !class_may(class) {
                    return (false, false);
                }
                let (lo, hi) = match src {
                    NumSrc::Col { col: Col::Latency, .. } => (s.min_latency, s.max_latency),
                    NumSrc::Col { col: Col::Ts, .. } => (s.min_ts, s.max_ts),
                    _ => return (true, false),
                };
                let meets = ranges.iter().any(|&(a, b)| a <= hi && lo <= b);
                let covers = ranges.iter().any(|&(a, b)| a <= lo && hi <= b);
                let sure = class.is_none() && *src != NumSrc::Fd;
                if *negate {
                    (!covers, sure && !meets)
                } else {
                    (meets, sure && covers)
                }
            }
            Kernel::Ids { class, set, .. } => (class_may(class) && set.maybe_any(), false),
            Kernel::Split(by) => {
                let ByClass {
                    nrs,
                    ops,
                    urings,
                    journal,
                } = &**by;
                // The summary counts io_uring requests and journal commits among the syscalls
                // (the non-block events).
                let syscall_may = s.syscalls > 0 && (nrs.maybe_any() || urings.maybe_any() || *journal);
                (syscall_may || (s.blocks > 0 && ops.maybe_any()), false)
            }
        }
    }
}

/// How a kernel's result combines with what `out` already holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Set,
    And,
    Or,
}

/// A column of `cols`, or zeros when it was not decoded (a caller that decoded fewer columns
/// than [`Compiled::columns`] gets an answer, not a panic).
fn col<T: Copy + Default>(v: &[T], n: usize) -> std::borrow::Cow<'_, [T]> {
    match v.get(..n) {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(vec![T::default(); n]),
    }
}

#[inline(always)]
fn combine(out: &mut u64, mode: Mode, w: u64) {
    match mode {
        Mode::Set => *out = w,
        Mode::And => *out &= w,
        Mode::Or => *out |= w,
    }
}

/// The 64 tests of a word, one byte each (0 or 1), as the word's bits: event `j`'s at bit `j`.
/// Testing into bytes and packing them after lets the compiler run the tests many at a
/// time; or-ing each test's bit into the word as it came did not vectorize well (a file
/// filter's scan over a joined ring: 5.6 % → 2.4 % of its profile).
#[inline(always)]
fn pack_bits(tests: &[u8; 64]) -> u64 {
    let mut bits = 0u64;
    for (k, eight) in tests.chunks_exact(8).enumerate() {
        let w = u64::from_le_bytes(eight.try_into().unwrap_or([0; 8]));
        // Multiplying moves byte j's low bit to bit 56 + j, with no two products overlapping.
        bits |= (w.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * k);
    }
    bits
}

/// Fill words of `out` from a per-event test over one column.
#[inline(always)]
fn scan1<A: Copy>(a: &[A], out: &mut [u64], mode: Mode, f: impl Fn(A) -> bool) {
    let mut tests = [0u8; 64];
    for (w, chunk) in out.iter_mut().zip(a.chunks(64)) {
        if mode == Mode::And && *w == 0 {
            continue;
        }
        let bits = if chunk.len() == 64 {
            for (t, &x) in tests.iter_mut().zip(chunk) {
                *t = u8::from(f(x));
            }
            pack_bits(&tests)
        } else {
            chunk
                .iter()
                .enumerate()
                .fold(0, |bits, (j, &x)| bits | u64::from(f(x)) << j)
        };
        combine(w, mode, bits);
    }
}

/// Fill words of `out` from a per-event test over two columns.
#[inline(always)]
fn scan2<A: Copy, B: Copy>(a: &[A], b: &[B], out: &mut [u64], mode: Mode, f: impl Fn(A, B) -> bool) {
    let mut tests = [0u8; 64];
    for ((w, ca), cb) in out.iter_mut().zip(a.chunks(64)).zip(b.chunks(64)) {
        if mode == Mode::And && *w == 0 {
            continue;
        }
        let bits = if ca.len() == 64 && cb.len() == 64 {
            for ((t, &x), &y) in tests.iter_mut().zip(ca).zip(cb) {
                *t = u8::from(f(x, y));
            }
            pack_bits(&tests)
        } else {
            ca.iter()
                .zip(cb)
                .enumerate()
                .fold(0, |bits, (j, (&x, &y))| bits | u64::from(f(x, y)) << j)
        };
        combine(w, mode, bits);
    }
}

/// Range scan over a column (and the class column when the field needs a class).
fn scan_num<T: Copy + Default>(
    v: &[T],
    class: Option<(&[u8], u8)>,
    key: impl Fn(T) -> u64 + Copy,
    present: impl Fn(T) -> bool + Copy,
    (ranges, negate): (&[(u64, u64)], bool),
    out: &mut [u64],
    mode: Mode,
) {
    macro_rules! go {
        ($inside:expr) => {{
            let inside = $inside;
            let test = move |x: T| present(x) && (inside(key(x)) != negate);
            match class {
                Some((c, want)) => scan2(c, v, out, mode, move |cl: u8, x: T| is_class(cl, want) && test(x)),
                None => scan1(v, out, mode, test),
            }
        }};
    }
    match ranges {
        [] => go!(|_k: u64| false),
        &[(lo, hi)] => go!(move |k: u64| k.wrapping_sub(lo) <= hi - lo),
        rs => go!(move |k: u64| rs.iter().any(|&(lo, hi)| lo <= k && k <= hi)),
    }
}

impl Kernel {
    fn eval(&self, cols: &Columns, out: &mut Bitmap, mode: Mode) {
        let n = out.len();
        let words = out.words_mut();
        let classes = col(&cols.class, if self.needs_class() { n } else { 0 });
        let class_of = |c: &Option<u8>| c.map(|want| (&classes[..], want));
        match self {
            Kernel::Num {
                src,
                class,
                ranges,
                negate,
            } => {
                let cl = class_of(class);
                let test = (&ranges[..], *negate);
                // A column whose every value is present, keyed by `key`.
                macro_rules! plain {
                    ($v:expr, $key:expr) => {
                        scan_num(&col($v, n), cl, $key, always, test, words, mode)
                    };
                }
                match *src {
                    NumSrc::Col { col: c, signed } => match cols.get(c) {
                        ColSlice::U8(v) if signed => plain!(v, |x| signed_key(i64::from(x))),
                        ColSlice::U8(v) => plain!(v, u64::from),
                        ColSlice::U32(v) if signed => plain!(v, |x| signed_key(i64::from(x))),
                        ColSlice::U32(v) => plain!(v, u64::from),
                        ColSlice::U64(v) if signed => plain!(v, |x| signed_key(x as i64)),
                        ColSlice::U64(v) => plain!(v, |x| x),
                        ColSlice::I32(v) => plain!(v, |x| signed_key(i64::from(x))),
                        ColSlice::I64(v) => plain!(v, signed_key),
                    },
                    NumSrc::Fd => scan_num(
                        &col(&cols.fd, n),
                        cl,
                        |x| signed_key(i64::from(x)),
                        |x: i32| x >= 0,
                        test,
                        words,
                        mode,
                    ),
                    NumSrc::Sum(a, b) => {
                        let sums: Vec<u64> = match (cols.get(a), cols.get(b)) {
                            // Two u64 columns (times in ns): the sum, without widening.
                            (ColSlice::U64(x), ColSlice::U64(y)) => {
                                let (x, y) = (col(x, n), col(y, n));
                                x.iter().zip(y.iter()).map(|(p, q)| p.saturating_add(*q)).collect()
                            }
                            (x, y) => (0..n).map(|i| fields::sum_at(x, y, i)).collect(),
                        };
                        scan_num(&sums, cl, |x| x, always, test, words, mode)
                    }
                    NumSrc::Rest(f, a, b) => {
                        let (f, a, b) = (cols.get(f), cols.get(a), cols.get(b));
                        let rests: Vec<u64> = (0..n).map(|i| fields::rest_at(f, a, b, i)).collect();
                        scan_num(&rests, cl, |x| x, always, test, words, mode)
                    }
                }
            }
            Kernel::Ids { src, class, set } => {
                let cl = class_of(class);
                match src {
                    IdSrc::Proc => scan_table_ids(&col(&cols.proc, n), cl, set, words, mode),
                    IdSrc::File => scan_table_ids(&col(&cols.file, n), cl, set, words, mode),
                    IdSrc::Flags => scan_ids(
                        &col(&cols.flags, n),
                        cl,
                        |x| u64::from(x & fields::FLAGS_MASK),
                        set,
                        words,
                        mode,
                    ),
                    IdSrc::Dev => {
                        // Few distinct devices per chunk: remember the last answer.
                        let devs = col(&cols.dev, n);
                        let last = std::cell::Cell::new((u32::MAX, set.contains(u64::from(u32::MAX))));
                        let test = |d: u32| {
                            let (ld, lr) = last.get();
                            if ld == d {
                                return lr;
                            }
                            let r = set.contains(u64::from(d));
                            last.set((d, r));
                            r
                        };
                        match cl {
                            Some((c, want)) => scan2(c, &devs, words, mode, |cc, d| is_class(cc, want) && test(d)),
                            None => scan1(&devs, words, mode, test),
                        }
                    }
                    IdSrc::Cause => scan_ids(&col(&cols.cause, n), cl, u64::from, set, words, mode),
                    IdSrc::Reason => scan_ids(&col(&cols.reason, n), cl, u64::from, set, words, mode),
                    IdSrc::WakerProc => scan_table_ids(&col(&cols.waker_proc, n), cl, set, words, mode),
                    IdSrc::Nr => scan_table_ids(&col(&cols.nr, n), cl, set, words, mode),
                    IdSrc::StackUser => scan_table_ids(&col(&cols.stack_user, n), cl, set, words, mode),
                    IdSrc::StackKernel => scan_table_ids(&col(&cols.stack_kernel, n), cl, set, words, mode),
                    IdSrc::Errno => {
                        let rets = col(&cols.ret, n);
                        scan1(&rets, words, mode, |r: i64| r < 0 && set.contains(r.unsigned_abs()))
                    }
                }
            }
            Kernel::Split(by) => {
                let ByClass {
                    nrs,
                    ops,
                    urings,
                    journal,
                } = &**by;
                let (nr, op) = (col(&cols.nr, n), col(&cols.op, n));
                let cls = &classes[..];
                for (((w, c), nr), op) in words
                    .iter_mut()
                    .zip(cls.chunks(64))
                    .zip(nr.chunks(64))
                    .zip(op.chunks(64))
                {
                    if mode == Mode::And && *w == 0 {
                        continue;
                    }
                    let mut bits = 0u64;
                    for (j, ((&c, &nr), &op)) in c.iter().zip(nr).zip(op).enumerate() {
                        let m = match c {
                            BLOCK => ops.contains(u64::from(op)),
                            IO_URING => urings.contains(u64::from(nr)),
                            JOURNAL => *journal,
                            _ => nrs.contains(u64::from(nr)),
                        };
                        bits |= u64::from(m) << j;
                    }
                    combine(w, mode, bits);
                }
            }
        }
    }

    fn needs_class(&self) -> bool {
        match self {
            Kernel::Num { class, .. } | Kernel::Ids { class, .. } => class.is_some(),
            Kernel::Split(_) => true,
        }
    }
}

/// [`scan_ids`] over a column of table ids, comparing with each member where the set has
/// [few](IdSet::few) (a file filter over a joined ring: 6.6 % of its scan looking ids up).
fn scan_table_ids(v: &[u32], class: Option<(&[u8], u8)>, set: &IdSet, out: &mut [u64], mode: Mode) {
    let Some([a, b, c, d]) = set.few else {
        return scan_ids(v, class, u64::from, set, out, mode);
    };
    // `|`, not `||`: no branch, so the compiler can compare 64 ids at once.
    let member = |x: u32| (x == a) | (x == b) | (x == c) | (x == d);
    match class {
        Some((cl, want)) => scan2(cl, v, out, mode, |k, x| is_class(k, want) & member(x)),
        None => scan1(v, out, mode, member),
    }
}

fn scan_ids<T: Copy>(
    v: &[T],
    class: Option<(&[u8], u8)>,
    key: impl Fn(T) -> u64,
    set: &IdSet,
    out: &mut [u64],
    mode: Mode,
) {
    match class {
        Some((c, want)) => scan2(c, v, out, mode, |cl, x| is_class(cl, want) && set.contains(key(x))),
        None => scan1(v, out, mode, |x| set.contains(key(x))),
    }
}

impl CNode {
    fn eval(&self, cols: &Columns, out: &mut Bitmap, mode: Mode) {
        match self {
            CNode::Leaf(k) => k.eval(cols, out, mode),
            CNode::Const(b) => {
                let mut tmp = Bitmap::zeros(out.len());
                if *b {
                    tmp.not();
                }
                apply(out, &tmp, mode);
            }
            CNode::And(v) if mode != Mode::Or => {
                // Evaluate in place: later kernels skip words that are already zero.
                for (i, c) in v.iter().enumerate() {
                    c.eval(cols, out, if i == 0 { mode } else { Mode::And });
                }
            }
            CNode::Or(v) if mode == Mode::Set || mode == Mode::Or => {
                for (i, c) in v.iter().enumerate() {
                    c.eval(cols, out, if i == 0 { mode } else { Mode::Or });
                }
            }
            _ => {
                let mut tmp = Bitmap::zeros(out.len());
                match self {
                    CNode::Not(c) => {
                        c.eval(cols, &mut tmp, Mode::Set);
                        tmp.not();
                    }
                    other => other.eval(cols, &mut tmp, Mode::Set),
                }
                apply(out, &tmp, mode);
            }
        }
    }
}

fn apply(out: &mut Bitmap, tmp: &Bitmap, mode: Mode) {
    match mode {
        Mode::Set => *out = tmp.clone(),
        Mode::And => out.and(tmp),
        Mode::Or => out.or(tmp),
    }
}

impl Compiled {
    /// The columns [`Compiled::eval`] reads: decode at least these.
    pub fn columns(&self) -> ColSet {
        self.columns
    }

    /// False when no event of a chunk with this summary can match: the chunk can be skipped
    /// without decompressing it.
    pub fn may_match(&self, s: &ChunkSummary) -> bool {
        s.events > 0 && self.root.bounds(s).0
    }

    /// True when every event of a chunk with this summary matches (a count needs no decoding).
    pub fn all_match(&self, s: &ChunkSummary) -> bool {
        self.root.bounds(s).1
    }

    /// The filter as it applies to the events of a chunk with summary `s`: the clauses the
    /// summary decides (an `evt.time` window around the chunk, a latency bound past its
    /// largest) replaced by their value, so that it may read fewer columns; the same events
    /// of that chunk match it.
    pub fn given(&self, s: &ChunkSummary) -> Compiled {
        let root = self.root.given(s);
        let mut columns = ColSet::NONE;
        root.columns(&mut columns);
        Compiled { root, columns }
    }

    /// Whether the filter matches every event (the empty filter).
    pub fn is_all(&self) -> bool {
        matches!(self.root, CNode::Const(true))
    }

    /// Set `out` to one bit per event of `cols`: the events that match.
    pub fn eval(&self, cols: &Columns, out: &mut Bitmap) {
        out.reset(cols.len(), false);
        self.root.eval(cols, out, Mode::Set);
        out.mask_tail();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn few(ids: &[(u64, bool)], beyond: Beyond) -> Option<[u32; 4]> {
        IdSet::build(ids.iter().copied(), 64, beyond).few
    }

    #[test]
    fn few_lists_one_to_four_members_repeating_the_last() {
        assert_eq!(few(&[(7, true)], Beyond::Const(false)), Some([7; 4]));
        assert_eq!(
            few(&[(3, true), (9, false), (70, true)], Beyond::Const(false)),
            Some([3, 70, 70, 70])
        );
        // A member past the dense words (a hostile id) counts too.
        assert_eq!(
            few(&[(1, true), (1 << 31, true)], Beyond::Const(false)),
            Some([1, 1 << 31, 1 << 31, 1 << 31])
        );
        let four = [(1, true), (2, true), (3, true), (4, true)];
        assert_eq!(few(&four, Beyond::Const(false)), Some([1, 2, 3, 4]));
    }

    #[test]
    fn few_is_none_where_comparing_would_be_wrong() {
        let five = [(1, true), (2, true), (3, true), (4, true), (5, true)];
        assert_eq!(few(&five, Beyond::Const(false)), None);
        assert_eq!(few(&[(9, false)], Beyond::Const(false)), None, "no member");
        assert_eq!(few(&[(1, true)], Beyond::Const(true)), None, "ids beyond match");
        assert_eq!(few(&[(1 << 40, true)], Beyond::Const(false)), None, "not a u32");
    }

    #[test]
    fn pack_bits_puts_test_j_at_bit_j() {
        for j in 0..64 {
            let mut t = [0u8; 64];
            t[j] = 1;
            assert_eq!(pack_bits(&t), 1 << j);
        }
        assert_eq!(pack_bits(&[1; 64]), u64::MAX);
    }
}
