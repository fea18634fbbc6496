//! Which processes a filter can match ([`Filter::processes`]), from its process fields alone:
//! what a reader needs to say how many of those processes' events were dropped while
//! recording, which no recorded event can tell (the dropped ones are not in the capture).
//!
//! Each process entry is asked the filter's tests of process fields (`proc.name`, `proc.pid`,
//! `proc.exe`, `user.name` ...) as an event of it would be; every other test (`latency>1ms`,
//! `fd.name=x`, `thread.tid=5`) may go either way, and the tree is judged in three values:
//! `proc.name=dd and latency>1ms` may match dd's events and no other process's;
//! `proc.name=dd or latency>1ms` may match any process's.

use iocap_format::{Event, Meta, ProcEntry, Tables};

use crate::check::Node;
use crate::compile::test_value;
use crate::fields::{self, FieldId};
use crate::Filter;

/// A test's outcome when only some of the event's values are known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Maybe {
    Yes,
    No,
    Either,
}

/// Whether `field` is one of the process's own, the same for every event of a process entry.
fn of_process(field: FieldId) -> bool {
    matches!(
        field,
        FieldId::ProcName
            | FieldId::ProcPid
            | FieldId::ProcPpid
            | FieldId::ProcExe
            | FieldId::ProcCmdline
            | FieldId::ProcCgroup
            | crate::fields::container_fields!()
            | FieldId::UserUid
            | FieldId::UserName
    )
}

impl Filter {
    /// The process entries of `tables` (their ids, increasing) whose events this filter may
    /// match, judged by its process fields alone (see the module's doc); `None` when that
    /// narrows nothing: the filter tests no process field, or every entry may match.
    ///
    /// ```
    /// use iocap_format::{Meta, ProcEntry, Writer, WriterOptions, Reader};
    ///
    /// let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
    /// for (pid, name) in [(10, "dd"), (20, "postgres")] {
    ///     let name = w.intern(name.as_bytes());
    ///     w.add_proc(ProcEntry { pid, name, ..ProcEntry::default() });
    /// }
    /// let r = Reader::from_bytes(w.finish(0).unwrap()).unwrap();
    /// let procs = |f: &str| iocap_filter::Filter::parse(f).unwrap().processes(r.meta(), r.tables());
    /// assert_eq!(procs("proc.name=dd and latency>1ms"), Some(vec![1]));
    /// assert_eq!(procs("proc.pid=20"), Some(vec![2]));
    /// assert_eq!(procs("proc.name=dd or latency>1ms"), None, "any process's slow calls");
    /// assert_eq!(procs("latency>1ms"), None);
    /// assert_eq!(procs("proc.name=vim"), Some(vec![]));
    /// ```
    pub fn processes(&self, meta: &Meta, tables: &Tables) -> Option<Vec<u32>> {
        let mut names_one = false;
        self.checked.visit_preds(&mut |p| names_one |= of_process(p.field));
        if !names_one {
            return None;
        }
        let all = tables.procs();
        let may: Vec<u32> = all
            .iter()
            .filter(|p| judge(&self.checked, p, meta, tables) != Maybe::No)
            .map(|p| p.id)
            .collect();
        (may.len() < all.len()).then_some(may)
    }
}

/// What `n` makes of any event of process entry `p`.
fn judge(n: &Node, p: &ProcEntry, meta: &Meta, tables: &Tables) -> Maybe {
    match n {
        Node::All => Maybe::Yes,
        Node::And(a, b) => match (judge(a, p, meta, tables), judge(b, p, meta, tables)) {
            (Maybe::No, _) | (_, Maybe::No) => Maybe::No,
            (Maybe::Yes, Maybe::Yes) => Maybe::Yes,
            _ => Maybe::Either,
        },
        Node::Or(a, b) => match (judge(a, p, meta, tables), judge(b, p, meta, tables)) {
            (Maybe::Yes, _) | (_, Maybe::Yes) => Maybe::Yes,
            (Maybe::No, Maybe::No) => Maybe::No,
            _ => Maybe::Either,
        },
        Node::Not(a) => match judge(a, p, meta, tables) {
            Maybe::Yes => Maybe::No,
            Maybe::No => Maybe::Yes,
            Maybe::Either => Maybe::Either,
        },
        Node::Pred(pred) if of_process(pred.field) => {
            let e = Event {
                proc: p.id,
                pid: p.pid,
                tid: p.pid,
                ..Event::default()
            };
            if test_value(&pred.test, &fields::value(fields::info(pred.field), &e, meta, tables)) {
                Maybe::Yes
            } else {
                Maybe::No
            }
        }
        Node::Pred(_) => Maybe::Either,
    }
}
