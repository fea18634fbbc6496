//! Filtering one event at a time, for the recorder: [`Filter::matches`] against any [`Lookup`]
//! (a capture's [`Tables`](iocap_format::Tables), or tables still being built while recording), and
//! [`Filter::pushdown`], the part of a filter simple enough for the kernel to decide.
//!
//! [`Filter::compile`] decides string tests once per table id, which needs every table entry
//! up front; while recording, entries appear as processes start and files open, so the
//! recorder asks each event's values instead ([`crate::fields::value_in`]). Both paths share
//! the checked tree and [`crate::compile`]'s test of a value, so they cannot disagree.

use iocap_format::{syscalls, uring, Class, Event, Meta};

pub use crate::lookup::{ContainerView, FileView, Lookup, ProcView};

use crate::check::{Node, Pred, StrMatch, Test};
use crate::compile::test_value;
use crate::fields::{self, FieldId};
use crate::Filter;

/// What the kernel can decide of a filter without ever dropping an event the whole filter
/// would keep: taken from the conjuncts at the top of an `and` chain only (anything under
/// `or` or `not` is left to [`Filter::matches`]). Every field is a necessary condition, not a
/// sufficient one: events passing them must still go through [`Filter::matches`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushdown {
    /// Only these pids (`proc.pid=N`, `proc.pid in (...)`), sorted; `None`: any pid.
    pub pids: Option<Vec<u32>>,
    /// Whether syscall events can match (not when `evt.class=block`, `evt.type=block`).
    pub syscalls: bool,
    /// Whether block events can match (not when `evt.class=syscall`, `evt.type=read`).
    pub block: bool,
    /// Whether io_uring requests can match (not when `evt.class=block`, `evt.type=pread64`).
    pub io_uring: bool,
    /// Whether journal commits can match (not when `evt.class=block`, `evt.type=fsync`). The
    /// recorder times them with the block programs.
    pub journal: bool,
    /// Only these syscall numbers (from `evt.type=...`), sorted; `None`: any.
    pub syscall_nrs: Option<Vec<u32>>,
    /// Every matching event is at least this slow (`latency>=X`, `latency>X`), ns.
    pub min_latency: u64,
    /// Only processes with one of these names (`proc.name=X`, `proc.name in (...)`), sorted;
    /// `None`: any. Given only when every name is what the kernel's 16-byte comm can hold
    /// as is: at most 15 bytes of printable ASCII without `\` (so its escaped
    /// form, which the filter compares, is the name itself).
    pub names: Option<Vec<String>>,
}

impl Pushdown {
    /// What decides nothing: every event passes.
    fn anything() -> Pushdown {
        Pushdown {
            pids: None,
            syscalls: true,
            block: true,
            io_uring: true,
            journal: true,
            syscall_nrs: None,
            min_latency: 0,
            names: None,
        }
    }
}

/// Whether `pred` may hold for syscalls, block requests, io_uring requests and journal commits
/// (in [`crate::reach::CLASSES`] order), as far as the kernel's class and syscall tests tell
/// (`evt.type=pread64` names a syscall only).
pub(crate) fn pred_classes(pred: &Pred, arch: &str) -> [bool; 4] {
    let mut p = Pushdown::anything();
    push_pred(&mut p, pred, arch);
    [p.syscalls, p.block, p.io_uring, p.journal]
}

/// The longest process name the kernel keeps (`TASK_COMM_LEN` - 1).
const MAX_COMM: usize = 15;

/// A `proc.pid` set larger than this is not worth a kernel map (and `proc.pid>1` is not a set).
const MAX_PIDS: i128 = 4096;

impl Filter {
    /// Whether event `e` passes, with its process, file and device looked up in `tables`.
    /// Agrees with [`crate::Compiled::eval`] on a capture's events.
    ///
    /// ```
    /// use iocap_filter::{Filter, Lookup, ProcView, FileView};
    /// use iocap_format::{Event, Meta};
    ///
    /// struct One;
    /// impl Lookup for One {
    ///     fn lookup_proc(&self, _: u32) -> Option<ProcView<'_>> {
    ///         Some(ProcView { name: "fio", ..ProcView::default() })
    ///     }
    ///     fn lookup_file(&self, _: u32) -> Option<FileView<'_>> { None }
    ///     fn lookup_device(&self, _: u32) -> Option<&str> { None }
    /// }
    /// let meta = Meta { arch: "x86_64".into(), ..Meta::default() };
    /// let f = Filter::parse("proc.name=fio and latency>1ms").unwrap();
    /// let slow = Event { proc: 1, ..Event::syscall(0, 2_000_000, 7, 7, 0, 1) };
    /// let fast = Event { latency: 1_000, ..slow };
    /// assert!(f.matches(&slow, &meta, &One));
    /// assert!(!f.matches(&fast, &meta, &One));
    /// ```
    pub fn matches<L: Lookup + ?Sized>(&self, e: &Event, meta: &Meta, tables: &L) -> bool {
        eval(&self.checked, e, meta, tables)
    }

    /// The conjuncts the kernel can decide (see [`Pushdown`]); syscall names are resolved for `arch`.
    ///
    /// ```
    /// let f = iocap_filter::Filter::parse("proc.pid in (7, 9) and evt.type=read and latency>1ms").unwrap();
    /// let p = f.pushdown("x86_64");
    /// assert_eq!(p.pids, Some(vec![7, 9]));
    /// assert_eq!(p.syscall_nrs, Some(vec![0]));
    /// assert!(p.syscalls && !p.block);
    /// assert_eq!(p.min_latency, 1_000_001);
    /// ```
    pub fn pushdown(&self, arch: &str) -> Pushdown {
        let mut p = Pushdown::anything();
        let mut stack = vec![&self.checked];
        while let Some(n) = stack.pop() {
            match n {
                Node::And(a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Node::Pred(pred) => push_pred(&mut p, pred, arch),
                _ => {}
            }
        }
        p
    }
}

fn eval<L: Lookup + ?Sized>(n: &Node, e: &Event, meta: &Meta, tables: &L) -> bool {
    match n {
        Node::All => true,
        Node::And(a, b) => eval(a, e, meta, tables) && eval(b, e, meta, tables),
        Node::Or(a, b) => eval(a, e, meta, tables) || eval(b, e, meta, tables),
        Node::Not(a) => !eval(a, e, meta, tables),
        Node::Pred(p) => test_value(&p.test, &fields::value_in(fields::info(p.field), e, meta, tables)),
    }
}

fn intersect<T: Ord>(old: Option<Vec<T>>, mut new: Vec<T>) -> Option<Vec<T>> {
    new.sort_unstable();
    new.dedup();
    Some(match old {
        None => new,
        Some(o) => o.into_iter().filter(|x| new.binary_search(x).is_ok()).collect(),
    })
}

fn push_pred(p: &mut Pushdown, pred: &Pred, arch: &str) {
    match (&pred.field, &pred.test) {
        (FieldId::ProcPid, Test::Num { ranges, negate: false }) => {
            // A pid is a u32: clamp first, so that `proc.pid<3` is the set {0, 1, 2}.
            let clamp = |&(lo, hi): &(i128, i128)| (lo.max(0), hi.min(i128::from(u32::MAX)));
            let size = ranges
                .iter()
                .map(clamp)
                .fold(0i128, |n, (lo, hi)| n.saturating_add((hi - lo + 1).max(0)));
            if size > MAX_PIDS {
                return;
            }
            let pids = ranges
                .iter()
                .map(clamp)
                .flat_map(|(lo, hi)| lo..=hi)
                .map(|x| x as u32)
                .collect();
            p.pids = intersect(p.pids.take(), pids);
        }
        (FieldId::Latency, Test::Num { ranges, negate: false }) => {
            let lo = ranges.iter().map(|&(lo, _)| lo).min().unwrap_or(0);
            let lo = u64::try_from(lo.max(0)).unwrap_or(u64::MAX);
            p.min_latency = p.min_latency.max(lo);
        }
        (
            FieldId::EvtClass,
            Test::Str {
                m: StrMatch::Eq(vs),
                negate: false,
            },
        ) => {
            p.syscalls &= vs.iter().any(|v| v == "syscall");
            p.block &= vs.iter().any(|v| v == "block");
            p.io_uring &= vs.iter().any(|v| v == "io_uring");
            p.journal &= vs.iter().any(|v| v == "journal");
        }
        (
            FieldId::EvtType,
            Test::Str {
                m: StrMatch::Eq(vs),
                negate: false,
            },
        ) => {
            p.block &= vs.iter().any(|v| v == "block");
            p.journal &= vs.iter().any(|v| v == "commit");
            p.io_uring &= vs.iter().any(|v| {
                uring::op_number(v)
                    .or_else(|| v.strip_prefix("uring_")?.parse().ok())
                    .is_some_and(|op| fields::evt_type(arch, Class::IoUring, op) == v.as_str())
            });
            // A name this arch does not know, like `sys_NNN` for a number it has no name
            // for, names no event: leaving it out of the set is exact.
            let nrs = vs
                .iter()
                .filter_map(|v| {
                    syscalls::number(arch, v)
                        .or_else(|| v.strip_prefix("sys_")?.parse().ok())
                        .filter(|&nr| fields::evt_type(arch, Class::Syscall, nr) == v.as_str())
                })
                .collect::<Vec<u32>>();
            p.syscalls &= !nrs.is_empty();
            p.syscall_nrs = intersect(p.syscall_nrs.take(), nrs);
        }
        (
            FieldId::ProcName,
            Test::Str {
                m: StrMatch::Eq(vs),
                negate: false,
            },
        ) => {
            let plain = |v: &String| {
                v.len() <= MAX_COMM && v.bytes().all(|b| (b.is_ascii_graphic() && b != b'\\') || b == b' ')
            };
            // A name the kernel cannot hold as is (longer, or escaped) is left to userspace.
            if vs.iter().all(plain) {
                p.names = intersect(p.names.take(), vs.clone());
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_format::FdType;

    fn push(src: &str) -> Pushdown {
        Filter::parse(src).unwrap().pushdown("x86_64")
    }

    #[test]
    fn pushdown_takes_only_top_level_conjuncts() {
        let p = push("proc.pid=42 and (evt.type=read or latency>1s) and not proc.pid=7");
        assert_eq!(p.pids, Some(vec![42]));
        assert_eq!(
            (p.syscall_nrs, p.min_latency, p.syscalls, p.block),
            (None, 0, true, true)
        );
        let p = push("latency>=2ms and evt.latency>1ms and proc.pid in (3, 1, 3) and proc.pid in (3, 4)");
        assert_eq!(p.min_latency, 2_000_000);
        assert_eq!(p.pids, Some(vec![3]));
        assert_eq!(push("latency in (5ms, 2ms)").min_latency, 2_000_000);
        assert_eq!(push("latency<1ms").min_latency, 0);
        assert_eq!(push("latency!=1ms").min_latency, 0);
        assert_eq!(push("proc.pid>1").pids, None, "not a small set");
        assert_eq!(push("proc.pid!=1").pids, None);
        assert_eq!(push("proc.pid<3").pids, Some(vec![0, 1, 2]));
    }

    #[test]
    fn pushdown_of_syscalls_and_classes() {
        let p = push("evt.type in (pread64, read, block)");
        assert_eq!(p.syscall_nrs, Some(vec![0, 17]));
        assert!(p.syscalls && p.block);
        let p = push("evt.type=block");
        assert!(!p.syscalls && p.block);
        let p = push("evt.class=syscall and evt.type in (read, write) and evt.type=write");
        assert!(p.syscalls && !p.block);
        assert_eq!(p.syscall_nrs, Some(vec![1]));
        assert_eq!(push("evt.type=sys_999").syscall_nrs, Some(vec![999]));
        assert_eq!(push("evt.type=sys_0").syscall_nrs, Some(vec![]), "sys_0 is `read`");
        assert!(!push("evt.class=block and evt.class=syscall").syscalls);
        assert_eq!(push("evt.type!=read").syscall_nrs, None);
        assert_eq!(push("").pids, None);
        // io_uring requests: by class, and by opcode names (`read` names both a syscall and
        // an opcode; `pread64` only a syscall).
        let p = push("evt.class=io_uring");
        assert!(p.io_uring && !p.syscalls && !p.block);
        assert!(push("evt.type=read").io_uring && !push("evt.type=pread64").io_uring);
        let p = push("evt.type=read_fixed");
        assert!(p.io_uring && !p.syscalls && !p.block);
        assert!(
            push("evt.type=uring_200").io_uring && !push("evt.type=uring_22").io_uring,
            "uring_22 is `read`"
        );
        assert!(!push("evt.class=syscall").io_uring);
    }

    #[test]
    fn pushdown_of_process_names() {
        let names = |src: &str| push(src).names;
        assert_eq!(
            names("proc.name in (fio, dd) and latency>1ms"),
            Some(vec!["dd".into(), "fio".into()])
        );
        assert_eq!(
            names("proc.name in (fio, dd) and proc.name=dd"),
            Some(vec!["dd".into()])
        );
        assert_eq!(names("proc.name=fio and proc.name=dd"), Some(vec![]));
        assert_eq!(names("proc.name='kworker/0:1 x'"), Some(vec!["kworker/0:1 x".into()]));
        assert_eq!(names("proc.name!=fio"), None);
        assert_eq!(names("proc.name contains fio"), None);
        assert_eq!(names("proc.name=fio or latency>1ms"), None);
        assert_eq!(names("proc.name=a_name_of_16_byte"), None, "longer than a comm");
        assert_eq!(
            names(r#"proc.name="a\\x1b""#),
            None,
            "escaped: compared as shown, not as in the kernel"
        );
    }

    #[test]
    fn matches_agrees_with_compiled_eval_on_tables() {
        use iocap_format::{Class, Columns, FileEntry, ProcEntry, Reader, Writer, WriterOptions};
        let meta = Meta {
            arch: "x86_64".into(),
            ..Meta::default()
        };
        let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default()).unwrap();
        let (a, b, path) = (w.intern(b"fio"), w.intern(b"cat"), w.intern(b"/tmp/x.dat"));
        let pa = w.add_proc(ProcEntry {
            pid: 1,
            name: a,
            ..Default::default()
        });
        let pb = w.add_proc(ProcEntry {
            pid: 2,
            name: b,
            ..Default::default()
        });
        let file = w.add_file(FileEntry {
            pid: 1,
            fd: 3,
            kind: FdType::File,
            name: path,
            ..Default::default()
        });
        let mut evs = Vec::new();
        for i in 0..200u64 {
            let (pid, proc) = if i % 3 == 0 { (2, pb) } else { (1, pa) };
            let mut e = Event::syscall(i, i * 10_000, pid, pid, (i % 5) as u32, i as i64 - 20);
            e.proc = proc;
            if i % 2 == 0 {
                e.fd = 3;
                e.file = file;
            }
            if i % 7 == 0 {
                e.class = Class::Block;
                e.dev = 5;
            }
            w.push(&e).unwrap();
            evs.push(e);
        }
        let r = Reader::from_bytes(w.finish(1000).unwrap()).unwrap();
        for src in [
            "proc.name=fio and latency>1ms",
            "not proc.name=cat or fd.name endswith .dat",
            "evt.type in (read, block) and not evt.failed",
            "fd.type=file and proc.pid=1",
            "blk.dev=0:5 or evt.errno=ENOENT",
            "",
        ] {
            let f = Filter::parse(src).unwrap();
            let c = f.compile(r.meta(), r.tables());
            let (mut dec, mut cols, mut bits) = (Default::default(), Columns::default(), crate::Bitmap::default());
            r.read_chunk(0, c.columns(), &mut dec, &mut cols).unwrap();
            c.eval(&cols, &mut bits);
            let want: Vec<bool> = (0..evs.len()).map(|i| bits.get(i)).collect();
            let got: Vec<bool> = evs.iter().map(|e| f.matches(e, r.meta(), r.tables())).collect();
            assert_eq!(got, want, "{src}");
            assert!(
                src.is_empty() || got.iter().any(|&m| m) && got.iter().any(|&m| !m),
                "{src}"
            );
        }
    }
}
