//! Latency flame graphs: the matching calls' stacks (`record --stacks`), each weighted by the
//! calls' summed latency (or their count, or their time asleep), folded as flamegraph.pl reads
//! them: `frame;frame;... weight`, root first.
//!
//! The root frame is the process's name (as bcc's `offcputime -f`); then the user stack the
//! call returned to, outermost first, down to the call; then, for `--by kernel` or `both`, the
//! kernel stack of its longest sleep, from the syscall's entry down to `__schedule`. A call
//! with none of the stacks asked for is left out and counted ([`Flame::without`]). A block
//! request issued by a call takes that call's stacks, once found ([`Flame::with_issuers`]).

use std::collections::HashMap;

use iocap_format::{Class, Columns, Tables};

use crate::hist::LatencyHist;

/// Which of a call's stacks its frames come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum By {
    /// The user stack the call returned to: which code path made the slow call.
    #[default]
    User,
    /// The kernel stack of its longest sleep: where in the kernel it waited.
    Kernel,
    /// The user stack, then the kernel stack under it.
    Both,
}

/// What a frame's width counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Weight {
    /// The calls' summed latency, ns.
    #[default]
    Latency,
    /// The calls.
    Count,
    /// The calls' summed time asleep (`wait.time`), ns.
    Wait,
}

impl Weight {
    /// What the unit of a width is called: flamegraph.pl's `--countname`.
    pub fn unit(self) -> &'static str {
        match self {
            Weight::Latency | Weight::Wait => "ns",
            Weight::Count => "calls",
        }
    }
}

/// The sums of the calls that share a process and both stacks.
#[derive(Clone, Copy, Debug, Default)]
struct Sums {
    calls: u64,
    latency: u64,
    wait: u64,
}

/// A block request waiting for its issuing call's stacks: its process, the call's thread and
/// start, and its latency.
#[derive(Clone, Copy, Debug)]
struct Issued {
    proc: u32,
    tid: u32,
    call_ts: u64,
    latency: u64,
}

/// The matching calls by (process, user stack, kernel stack), as a scan's threads gather them.
#[derive(Clone, Debug, Default)]
pub struct Flame {
    by: By,
    stacks: HashMap<(u32, u32, u32), Sums>,
    /// Block requests issued by calls, when their calls' stacks are looked up after the scan.
    issuers: bool,
    issued: Vec<Issued>,
    /// The latency of the calls that have the stacks asked for: the graph's title's figures.
    pub hist: LatencyHist,
    /// Calls (and block requests, commits) that matched with none of the stacks asked for.
    pub without: u64,
}

impl Flame {
    /// An empty graph of the stacks `by` names.
    pub fn new(by: By) -> Flame {
        Flame { by, ..Flame::default() }
    }

    /// Also take the block requests issued by calls, as wide as their latency under their
    /// call's stacks: they wait in the graph until [`Flame::resolve`] finds the calls. Reads
    /// [`Flame::ISSUER_COLUMNS`] too.
    pub fn with_issuers(mut self) -> Flame {
        self.issuers = true;
        self
    }

    /// The columns [`Flame::with_issuers`] reads besides [`Flame::COLUMNS`].
    pub const ISSUER_COLUMNS: [iocap_format::Col; 4] = [
        iocap_format::Col::Tid,
        iocap_format::Col::Ts,
        iocap_format::Col::Cause,
        iocap_format::Col::Link,
    ];

    /// Whether block requests wait for their calls' stacks ([`Flame::resolve`]).
    pub fn has_issued(&self) -> bool {
        !self.issued.is_empty()
    }

    /// Put each waiting block request under its call's stacks, `calls` giving them by the
    /// call's (thread, start): a request whose call has none asked for is counted without.
    pub fn resolve(&mut self, calls: &HashMap<(u32, u64), (u32, u32)>) {
        for r in std::mem::take(&mut self.issued) {
            let (user, kernel) = calls.get(&(r.tid, r.call_ts)).copied().unwrap_or((0, 0));
            self.put(r.proc, user, kernel, r.latency, 0);
        }
    }

    /// The columns [`Flame::add`] reads.
    pub const COLUMNS: [iocap_format::Col; 6] = [
        iocap_format::Col::Class,
        iocap_format::Col::Proc,
        iocap_format::Col::Latency,
        iocap_format::Col::Wait,
        iocap_format::Col::StackUser,
        iocap_format::Col::StackKernel,
    ];

    /// Add row `i` of a chunk's columns.
    pub fn add(&mut self, cols: &Columns, i: usize) {
        let class = cols.class[i];
        if self.issuers
            && class == Class::Block as u8
            && cols.cause[i] == iocap_format::Cause::Syscall as u8
            && cols.link[i] != 0
        {
            self.issued.push(Issued {
                proc: cols.proc[i],
                tid: cols.tid[i],
                call_ts: cols.ts[i].saturating_sub(cols.link[i]),
                latency: cols.latency[i],
            });
            return;
        }
        let (user, kernel) = if class == Class::Syscall as u8 {
            (cols.stack_user[i], cols.stack_kernel[i])
        } else {
            (0, 0)
        };
        self.put(cols.proc[i], user, kernel, cols.latency[i], cols.wait[i]);
    }

    /// One event of process `proc` with these stacks (0: none), latency and wait.
    fn put(&mut self, proc: u32, user: u32, kernel: u32, latency: u64, wait: u64) {
        let has = match self.by {
            By::User => user != 0,
            By::Kernel => kernel != 0,
            By::Both => user != 0 || kernel != 0,
        };
        if !has {
            self.without += 1;
            return;
        }
        let key = match self.by {
            By::User => (proc, user, 0),
            By::Kernel => (proc, 0, kernel),
            By::Both => (proc, user, kernel),
        };
        let s = self.stacks.entry(key).or_default();
        s.calls += 1;
        s.latency = s.latency.saturating_add(latency);
        s.wait = s.wait.saturating_add(wait);
        self.hist.add(latency);
    }

    /// Add what another thread gathered.
    pub fn merge(&mut self, other: Flame) {
        for (k, o) in other.stacks {
            let s = self.stacks.entry(k).or_default();
            s.calls += o.calls;
            s.latency = s.latency.saturating_add(o.latency);
            s.wait = s.wait.saturating_add(o.wait);
        }
        self.hist.merge(&other.hist);
        self.without += other.without;
        self.issued.extend(other.issued);
    }

    /// Calls with the stacks asked for.
    pub fn calls(&self) -> u64 {
        self.hist.count()
    }

    /// The folded lines, `frames weight`, one per distinct path, sorted by path (as
    /// flamegraph.pl sorts them); paths of weight 0 are left out.
    pub fn folded(&self, tables: &Tables, weight: Weight) -> Vec<(String, u64)> {
        let mut by_path: HashMap<String, u64> = HashMap::new();
        let mut path = String::new();
        for (&(proc, user, kernel), s) in &self.stacks {
            let w = match weight {
                Weight::Latency => s.latency,
                Weight::Count => s.calls,
                Weight::Wait => s.wait,
            };
            // A stack the tables lack (a damaged table frame) draws nothing rather than a
            // process with no frames under it.
            if w == 0 || [user, kernel].iter().all(|&id| tables.stack(id).is_none()) {
                continue;
            }
            path.clear();
            let name = tables.proc(proc).map_or("", |p| tables.string(p.name));
            push_frame(&mut path, if name.is_empty() { "[unknown]" } else { name });
            for id in [user, kernel] {
                for name in tables.stack_names(id).into_iter().flatten() {
                    push_frame(&mut path, &name);
                }
            }
            let sum = by_path.entry(path.clone()).or_default();
            *sum = sum.saturating_add(w);
        }
        let mut lines: Vec<(String, u64)> = by_path.into_iter().collect();
        lines.sort_unstable();
        lines
    }
}

/// A frame of a flame graph with the paths through it: its name, its weight (its paths'
/// summed) and the frames called from it, widest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Node {
    /// The frame's name; the root's is the graph's.
    pub name: String,
    /// The summed weight of the paths through it.
    pub weight: u64,
    /// The frames it calls, widest first.
    pub children: Vec<Node>,
}

impl Node {
    /// The tree of folded lines (`frames weight`), under a root named `root`.
    pub fn tree(root: &str, lines: &[(String, u64)]) -> Node {
        let mut top = Node {
            name: root.to_owned(),
            ..Node::default()
        };
        for (path, w) in lines {
            top.weight = top.weight.saturating_add(*w);
            let mut at = &mut top;
            for frame in path.split(';') {
                let i = match at.children.iter().position(|c| c.name == frame) {
                    Some(i) => i,
                    None => {
                        at.children.push(Node {
                            name: frame.to_owned(),
                            ..Node::default()
                        });
                        at.children.len() - 1
                    }
                };
                at = &mut at.children[i];
                at.weight = at.weight.saturating_add(*w);
            }
        }
        top.sort();
        top
    }

    /// Widest first, then by name, all the way down.
    fn sort(&mut self) {
        self.children
            .sort_unstable_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)));
        self.children.iter_mut().for_each(Node::sort);
    }

    /// The frame reached from here by the names of `path`, each a child of the one before.
    pub fn at(&self, path: &[String]) -> Option<&Node> {
        path.iter()
            .try_fold(self, |n, name| n.children.iter().find(|c| &c.name == name))
    }
}

/// Append one frame to a folded path: `;` separates frames, so a name's own becomes `:`;
/// names come escaped from the tables (no control characters, no line breaks).
fn push_frame(path: &mut String, name: &str) {
    if !path.is_empty() {
        path.push(';');
    }
    path.extend(name.chars().map(|c| if c == ';' { ':' } else { c }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_format::{Event, Meta, ProcEntry, Reader, Stack, StackFrame, StackKind, Writer, WriterOptions};

    /// A capture of three calls of one process: two with both stacks, one with none.
    fn capture() -> Reader<Vec<u8>> {
        let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
        let name = w.intern(b"db;x");
        let proc = w.add_proc(ProcEntry {
            pid: 7,
            name,
            ..ProcEntry::default()
        });
        let frame = |w: &mut Writer<Vec<u8>>, sym: &[u8], module: &[u8], addr| StackFrame {
            addr,
            sym: if sym.is_empty() { 0 } else { w.intern(sym) },
            module: w.intern(module),
            build_id: 0,
        };
        let user = Stack {
            kind: StackKind::User,
            frames: vec![
                frame(&mut w, b"fsync", b"/lib/libc.so.6", 1),
                frame(&mut w, b"", b"/opt/db/bin/db", 2),
                frame(&mut w, b"main", b"/opt/db/bin/db", 3),
            ],
        };
        let kernel = Stack {
            kind: StackKind::Kernel,
            frames: vec![
                frame(&mut w, b"__schedule", b"[kernel]", 10),
                frame(&mut w, b"jbd2_log_wait_commit", b"[jbd2]", 11),
            ],
        };
        let (u, k) = (w.add_stack(&user), w.add_stack(&kernel));
        assert_eq!(w.add_stack(&user), u, "a stack is kept once");
        for (lat, su, sk) in [(3_000_000, u, k), (1_000_000, u, k), (5_000, 0, 0)] {
            let mut e = Event::syscall(1_000, lat, 7, 7, 74, 0);
            (e.proc, e.stack_user, e.stack_kernel, e.wait) = (proc, su, sk, lat / 2);
            w.push(&e).unwrap();
        }
        Reader::from_bytes(w.finish(10_000_000).unwrap()).unwrap()
    }

    fn fold(by: By, weight: Weight) -> (Vec<(String, u64)>, u64) {
        let r = capture();
        let mut f = Flame::new(by);
        let (mut dec, mut cols) = (iocap_format::ChunkDecoder::default(), Columns::default());
        for c in 0..r.chunks().len() {
            r.read_chunk(c, iocap_format::ColSet::ALL, &mut dec, &mut cols).unwrap();
            (0..cols.len()).for_each(|i| f.add(&cols, i));
        }
        (f.folded(r.tables(), weight), f.without)
    }

    #[test]
    fn calls_fold_root_first_weighted_by_what_was_asked() {
        assert_eq!(
            fold(By::User, Weight::Latency),
            (vec![("db:x;main;[db];fsync".to_owned(), 4_000_000)], 1)
        );
        assert_eq!(
            fold(By::Kernel, Weight::Count),
            (vec![("db:x;jbd2_log_wait_commit;__schedule".to_owned(), 2)], 1)
        );
        assert_eq!(
            fold(By::Both, Weight::Wait).0,
            vec![(
                "db:x;main;[db];fsync;jbd2_log_wait_commit;__schedule".to_owned(),
                2_000_000
            )]
        );
    }

    #[test]
    fn folded_lines_make_a_tree_widest_first() {
        let lines = [("a;b".to_owned(), 2), ("a;c".to_owned(), 5), ("d".to_owned(), 1)];
        let t = Node::tree("all", &lines);
        assert_eq!(t.weight, 8);
        let names = |n: &Node| {
            n.children
                .iter()
                .map(|c| (c.name.clone(), c.weight))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&t), [("a".to_owned(), 7), ("d".to_owned(), 1)]);
        let a = t.at(&["a".to_owned()]).unwrap();
        assert_eq!(names(a), [("c".to_owned(), 5), ("b".to_owned(), 2)]);
        assert_eq!(t.at(&["a".to_owned(), "x".to_owned()]), None);
    }

    /// A block request issued by a call takes the call's stacks once resolved; one whose call
    /// has none is counted without.
    #[test]
    fn issued_requests_take_their_calls_stacks() {
        use iocap_format::{Cause, Col};
        let mut cols = Columns::default();
        let mut call = Event::syscall(1_000, 500, 7, 7, 74, 0);
        (call.stack_user, call.proc) = (3, 1);
        let req = |link| Event {
            class: Class::Block,
            ts: 1_100,
            latency: 200,
            tid: 7,
            proc: 1,
            cause: Cause::Syscall as u8,
            link,
            ..Event::default()
        };
        for e in [call, req(100), req(50)] {
            cols.push(&e);
        }
        assert!(Flame::ISSUER_COLUMNS.contains(&Col::Link));
        let mut f = Flame::new(By::User).with_issuers();
        (0..cols.len()).for_each(|i| f.add(&cols, i));
        assert!(f.has_issued());
        f.resolve(&HashMap::from([((7, 1_000), (3, 0))]));
        assert_eq!((f.calls(), f.without), (2, 1));
        assert_eq!(f.hist.sum(), 700);
    }
}
