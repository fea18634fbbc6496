//! Which classes of event a filter can match at all, from the filter alone ([`Filter::reach`]):
//! what lets the recorder refuse, before anything is loaded, a filter that would record nothing
//! (`latency>1ms and latency<1us`, `blk.dev=vda and fd.num=3`, `--no-block 'blk.dev=vda'`).
//!
//! Each conjunct at the top of the filter's `and` chain is compiled as a capture's filter is
//! ([`crate::compile`]), with empty tables, and its kernels say which classes they can hold
//! for: a field of block requests only (`blk.*`) rules out syscalls and io_uring requests, one
//! of calls only (`fd.num`, `disk.*`) rules out block requests, `evt.class` and `evt.type`
//! decide per class. Per class, the ranges the conjuncts allow on one column are intersected:
//! an empty intersection rules the class out. Nothing else is tried: a filter this says can
//! match may still match nothing in a given recording.

use std::fmt;

use iocap_format::{Class, Meta, Tables};

use crate::ast::Expr;
use crate::check::Node;
use crate::compile::{compile_node, CNode, IdSrc, Kernel, NumSrc, BLOCK};
use crate::live::pred_classes;
use crate::Filter;

/// The classes of event, in the order [`Reach`] keeps them.
pub const CLASSES: [Class; 4] = [Class::Syscall, Class::Block, Class::IoUring, Class::Journal];

/// Which classes of event a filter can match ([`Filter::reach`]), and why not the others.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reach {
    /// Per class of [`CLASSES`]: `None` when the filter may match events of it.
    why_not: [Option<Why>; 4],
}

/// Why a class is ruled out, in the filter's own words.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Why {
    /// This conjunct holds for no event of the class.
    RulesOut(String),
    /// These conjuncts bound one value (a column) to ranges that do not meet.
    Disjoint(Vec<String>),
}

/// A class's events, as a message names them: `syscalls`, `block requests`, `io_uring requests`.
pub fn class_noun(class: Class) -> &'static str {
    match class {
        Class::Syscall => "syscalls",
        Class::Block => "block requests",
        Class::IoUring => "io_uring requests",
        Class::Journal => "journal commits",
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join(words: &[impl AsRef<str>]) -> String {
    match words {
        [] => String::new(),
        [one] => one.as_ref().to_owned(),
        [rest @ .., last] => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} and {}", rest.join(", "), last.as_ref())
        }
    }
}

impl Reach {
    /// Whether the filter may match events of `class`.
    pub fn may(&self, class: Class) -> bool {
        self.why_not[class_index(class)].is_none()
    }

    /// Whether the filter can match no event at all.
    pub fn none(&self) -> bool {
        self.why_not.iter().all(Option::is_some)
    }

    /// The classes the filter may match, in [`CLASSES`] order.
    pub fn classes(&self) -> Vec<Class> {
        CLASSES.into_iter().filter(|&c| self.may(c)).collect()
    }
}

/// Why the ruled-out classes are: ``` `blk.dev=vda` rules out syscalls and io_uring requests;
/// `fd.num=3` rules out block requests ```, or ``` `latency>1ms` and `latency<1us` cannot both
/// hold ```. Empty when every class may match.
impl fmt::Display for Reach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One sentence per reason, naming every class it rules out, in the order found.
        let mut reasons: Vec<(&Why, Vec<&str>)> = Vec::new();
        for (class, why) in CLASSES.into_iter().zip(&self.why_not) {
            let Some(why) = why else { continue };
            match reasons.iter_mut().find(|(w, _)| *w == why) {
                Some((_, classes)) => classes.push(class_noun(class)),
                None => reasons.push((why, vec![class_noun(class)])),
            }
        }
        let sentences: Vec<String> = reasons
            .into_iter()
            .map(|(why, classes)| match why {
                Why::RulesOut(c) => format!("`{c}` rules out {}", join(&classes)),
                Why::Disjoint(cs) => {
                    let quoted: Vec<String> = cs.iter().map(|c| format!("`{c}`")).collect();
                    let all = if cs.len() == 2 { "both" } else { "all" };
                    format!("{} cannot {all} hold", join(&quoted))
                }
            })
            .collect();
        f.write_str(&sentences.join("; "))
    }
}

fn class_index(class: Class) -> usize {
    match class {
        Class::Syscall => 0,
        Class::Block => 1,
        Class::IoUring => 2,
        Class::Journal => 3,
    }
}

impl Filter {
    /// Which classes of event this filter can match, decided without a capture (see the
    /// module's documentation for how far it looks); syscall names are read for `arch`.
    ///
    /// ```
    /// use iocap_filter::Filter;
    /// use iocap_format::Class;
    /// let reach = |src: &str| Filter::parse(src).unwrap().reach("x86_64");
    /// assert!(reach("latency>1ms").classes().len() == 4);
    /// assert_eq!(reach("blk.dev=vda").classes(), [Class::Block]);
    /// let none = reach("latency>1ms and latency<1us");
    /// assert!(none.none());
    /// assert_eq!(none.to_string(), "`latency>1ms` and `latency<1us` cannot both hold");
    /// ```
    pub fn reach(&self, arch: &str) -> Reach {
        let meta = Meta {
            arch: arch.to_owned(),
            ..Meta::default()
        };
        let tables = Tables::default();
        // Each conjunct: its text, its kernels, and what the kernel's own class and syscall
        // tests say of it (exact for `evt.type`, where a kernel's set leaves unknown numbers open).
        let exprs = conjuncts(&self.expr, |e| match e {
            Expr::And(a, b) => Some((&**a, &**b)),
            _ => None,
        });
        let nodes = conjuncts(&self.checked, |n| match n {
            Node::And(a, b) => Some((&**a, &**b)),
            _ => None,
        });
        let parts: Vec<(String, CNode, [bool; 4])> = exprs
            .into_iter()
            .zip(nodes)
            .map(|(e, n)| {
                let pushed = match n {
                    Node::Pred(p) => pred_classes(p, arch),
                    _ => [true; 4],
                };
                (e.to_string(), compile_node(n, &meta, &tables, meta.start_ts), pushed)
            })
            .collect();
        let mut why_not: [Option<Why>; 4] = Default::default();
        for (class, why) in CLASSES.into_iter().zip(&mut why_not) {
            *why = parts
                .iter()
                .find(|(_, c, pushed)| !pushed[class_index(class)] || !may(c, class))
                .map(|(text, ..)| Why::RulesOut(text.clone()))
                .or_else(|| {
                    let leaves = parts.iter().flat_map(|(text, c, _)| leaves(c).map(move |k| (text, k)));
                    disjoint(leaves, class).map(|texts| Why::Disjoint(texts.into_iter().cloned().collect()))
                });
        }
        Reach { why_not }
    }
}

/// The operands of the `and`s at the top of a tree, however grouped (`a and (b and c)`: a, b,
/// c), by a loop (no recursion down a long chain); `and` splits a node into its two sides.
/// The filter's tree and its checked tree have the same shape, so they give matching lists.
fn conjuncts<'a, T>(root: &'a T, and: impl Fn(&'a T) -> Option<(&'a T, &'a T)>) -> Vec<&'a T> {
    let (mut stack, mut out) = (vec![root], Vec::new());
    while let Some(n) = stack.pop() {
        match and(n) {
            Some((a, b)) => {
                stack.push(b);
                stack.push(a);
            }
            None => out.push(n),
        }
    }
    out
}

/// The kernels of a compiled conjunct that all must hold: itself, or those of its `and`.
fn leaves(c: &CNode) -> impl Iterator<Item = &Kernel> {
    let all: &[CNode] = match c {
        CNode::And(v) => v,
        other => std::slice::from_ref(other),
    };
    all.iter().filter_map(|c| match c {
        CNode::Leaf(k) => Some(k),
        _ => None,
    })
}

/// Whether a kernel restricted to `class` code (`None`: any) can hold for an event of `class`.
fn class_fits(code: Option<u8>, class: Class) -> bool {
    match code {
        None => true,
        Some(BLOCK) => class == Class::Block,
        // SYSCALL marks the fields of calls, which io_uring requests have too (as `compile`
        // reads it, any other code is not block).
        Some(_) => class != Class::Block,
    }
}

/// Whether compiled `c` may hold for some event of `class` (`not` is assumed to).
fn may(c: &CNode, class: Class) -> bool {
    match c {
        CNode::Const(b) => *b,
        CNode::Leaf(k) => kernel_may(k, class),
        CNode::And(v) => {
            v.iter().all(|c| may(c, class)) && disjoint(v.iter().flat_map(leaves).map(|k| (&(), k)), class).is_none()
        }
        CNode::Or(v) => v.iter().any(|c| may(c, class)),
        CNode::Not(_) => true,
    }
}

fn kernel_may(k: &Kernel, class: Class) -> bool {
    match k {
        // An fd is a call's: a journal commit has none (-1, absent).
        Kernel::Num { src: NumSrc::Fd, .. } if class == Class::Journal => false,
        Kernel::Num {
            class: code,
            ranges,
            negate,
            ..
        } => class_fits(*code, class) && (*negate || !ranges.is_empty()),
        // Process, file and device ids are only known once a capture's tables are: any may.
        Kernel::Ids { src, class: code, set } => {
            class_fits(*code, class) && (matches!(src, IdSrc::Proc | IdSrc::File | IdSrc::Dev) || set.maybe_any())
        }
        Kernel::Split(by) => match class {
            Class::Syscall => by.nrs.maybe_any(),
            Class::Block => by.ops.maybe_any(),
            Class::IoUring => by.urings.maybe_any(),
            Class::Journal => by.journal,
        },
    }
}

/// The first column whose ranges, as the kernels that hold for `class` bound it, do not meet:
/// the tags of two kernels whose ranges alone do not meet when there are such, else of every
/// kernel up to the one that emptied the intersection, in order.
fn disjoint<'a, T: PartialEq + 'a>(
    kernels: impl Iterator<Item = (&'a T, &'a Kernel)>,
    class: Class,
) -> Option<Vec<&'a T>> {
    /// A column, the ranges still allowed on it, and each bound put on it so far.
    type Column<'a, T> = (NumSrc, Vec<(u64, u64)>, Vec<(&'a T, &'a [(u64, u64)])>);
    let mut columns: Vec<Column<T>> = Vec::new();
    for (tag, k) in kernels {
        let Kernel::Num {
            src,
            class: code,
            ranges,
            negate: false,
        } = k
        else {
            continue;
        };
        if !class_fits(*code, class) {
            continue;
        }
        let i = match columns.iter().position(|(s, ..)| s == src) {
            Some(i) => i,
            None => {
                columns.push((*src, vec![(0, u64::MAX)], Vec::new()));
                columns.len() - 1
            }
        };
        let (_, allowed, bounds) = &mut columns[i];
        *allowed = intersect(allowed, ranges);
        bounds.push((tag, ranges));
        if allowed.is_empty() {
            let pair = bounds.iter().find(|(_, r)| intersect(r, ranges).is_empty());
            let mut tags: Vec<&T> = match pair {
                Some(&(other, _)) => vec![other, tag],
                None => bounds.iter().map(|&(t, _)| t).collect(),
            };
            tags.dedup();
            return Some(tags);
        }
    }
    None
}

/// The values in both lists of inclusive ranges.
fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    a.iter()
        .flat_map(|&(alo, ahi)| {
            b.iter()
                .map(move |&(blo, bhi)| (alo.max(blo), ahi.min(bhi)))
                .filter(|(lo, hi)| lo <= hi)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reach(src: &str) -> Reach {
        Filter::parse(src).unwrap().reach("x86_64")
    }

    fn why(src: &str) -> String {
        let r = reach(src);
        assert!(r.none(), "{src} may match {:?}", r.classes());
        r.to_string()
    }

    #[test]
    fn fields_of_one_class_rule_out_the_others() {
        use Class::*;
        assert_eq!(reach("blk.dev=vda").classes(), [Block]);
        assert_eq!(
            reach("blk.dev!=vda and latency>1ms").classes(),
            [Block],
            "absent is not unequal"
        );
        assert_eq!(
            reach("fd.num=3").classes(),
            [Syscall, IoUring],
            "a journal commit has no fd"
        );
        assert_eq!(reach("disk.time>1ms").classes(), [Syscall, IoUring, Journal]);
        assert_eq!(reach("evt.class=journal").classes(), [Journal]);
        assert_eq!(reach("evt.type=commit").classes(), [Journal]);
        assert_eq!(reach("evt.class=io_uring").classes(), [IoUring]);
        assert_eq!(reach("evt.type=pread64").classes(), [Syscall]);
        assert_eq!(reach("blk.syscall=pread64").classes(), [Block]);
        assert_eq!(
            reach("fd.type=file and blk.dev=vda").classes(),
            [Block],
            "block requests have files"
        );
        assert_eq!(reach("not blk.dev=vda").classes(), [Syscall, Block, IoUring, Journal]);
        assert_eq!(reach("blk.dev=vda or fd.num=3").classes(), [Syscall, Block, IoUring]);
        assert_eq!(
            reach("proc.name=nothing_like_it").classes().len(),
            4,
            "tables are not known"
        );
        assert_eq!(reach("").classes().len(), 4);
        assert_eq!(
            why("blk.dev=loop2 and fd.num=3"),
            "`blk.dev=loop2` rules out syscalls, io_uring requests and journal commits; `fd.num=3` rules out block requests"
        );
        assert_eq!(
            why("evt.class=block and evt.type=read"),
            "`evt.class=block` rules out syscalls, io_uring requests and journal commits; `evt.type=read` rules out block requests"
        );
    }

    #[test]
    fn ranges_of_one_value_that_do_not_meet() {
        assert_eq!(
            why("latency>1ms and latency<1us"),
            "`latency>1ms` and `latency<1us` cannot both hold"
        );
        assert_eq!(
            why("latency>=2ms and proc.name=fio and evt.latency in (1ms, 1.5ms) and latency<1s"),
            "`latency>=2ms` and `evt.latency in (1ms, 1.5ms)` cannot both hold"
        );
        assert_eq!(
            why("evt.res>0 and evt.res<0"),
            "`evt.res>0` and `evt.res<0` cannot both hold",
            "signed values"
        );
        assert_eq!(
            why("latency<0"),
            "`latency<0` rules out syscalls, block requests, io_uring requests and journal commits"
        );
        // Block requests: blk.latency is their latency; calls: it is absent.
        assert_eq!(
            why("blk.latency>1ms and latency<1ms"),
            "`blk.latency>1ms` rules out syscalls, io_uring requests and journal commits; `blk.latency>1ms` and `latency<1ms` cannot both hold"
        );
        assert_eq!(
            why("proc.pid=1 and (latency>1ms and latency<1us)"),
            "`latency>1ms` and `latency<1us` cannot both hold"
        );
        assert_eq!(
            why("proc.pid=1 and (latency>1ms and latency<1us or latency<0)"),
            "`latency>1ms and latency<1us or latency<0` rules out syscalls, block requests, io_uring requests and journal commits",
            "within a conjunct too"
        );
        // What may match: ranges that meet, a negated range, different values.
        for src in [
            "latency>1ms and latency<2ms",
            "latency>1ms and latency!=2ms",
            "latency>1ms and blk.queue<1us",
            "latency in (1us, 5ms) and latency>1ms",
            "latency>1ms or latency<1us",
        ] {
            assert!(!reach(src).none(), "{src}");
        }
    }
}
