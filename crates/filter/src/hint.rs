//! What to say when a filter matched nothing: [`Filter::near_miss`] finds a string equality
//! the capture's tables cannot satisfy (`proc.name=FIO` where the process is `fio`) and the
//! value they hold nearest to it.

use std::collections::BTreeSet;
use std::fmt;

use iocap_format::{Class, Meta, Tables};

use crate::check::{Node, StrMatch, Test};
use crate::compile::synthetic;
use crate::error::nearest;
use crate::fields::{self, FieldId, Value};
use crate::{literal, Filter};

/// A value a filter asked for that no table entry of the capture has, and the one it has that
/// is nearest: `proc.name=fio` for `proc.name=FIO`. Displays as the clause to type instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NearMiss {
    /// The field's name: `proc.name`.
    pub field: &'static str,
    /// The value in the filter.
    pub typed: String,
    /// The capture's value nearest to it (already escaped: it comes from the tables).
    pub near: String,
}

impl fmt::Display for NearMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Bare when the clause reads back as this value (`proc.name=fio`), else quoted.
        let bare = format!("{}={}", self.field, self.near);
        let reads_back = Filter::parse(&bare).is_ok_and(|p| match p.checked {
            Node::Pred(pred) => pred.test == eq(&self.near),
            _ => false,
        });
        if reads_back {
            f.write_str(&bare)
        } else {
            write!(f, "{}={}", self.field, literal::string(&self.near))
        }
    }
}

fn eq(v: &str) -> Test {
    Test::Str {
        m: StrMatch::Eq(vec![v.to_owned()]),
        negate: false,
    }
}

/// How far a table value's length may be from the typed one and still be looked at: the most
/// edits [`nearest`] takes for a typo.
const MAX_EDITS: usize = 3;

impl Filter {
    /// For a filter that matched no event of a capture: the first `field=value` (or `in`) that
    /// must hold for an event to match, on a field whose values come from the capture's tables
    /// (process names, executables, command lines, file names, devices), whose value no entry
    /// has, with the entry value nearest to it: the same one in another case, else a value it
    /// begins or a likely typo. `None` when there is no such clause or nothing near.
    ///
    /// ```
    /// use iocap_format::{Event, Meta, ProcEntry, Reader, Writer, WriterOptions};
    /// let meta = Meta { arch: "x86_64".into(), ..Meta::default() };
    /// let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default())?;
    /// let name = w.intern(b"fio");
    /// let proc = w.add_proc(ProcEntry { pid: 7, name, ..Default::default() });
    /// w.push(&Event { proc, ..Event::syscall(0, 1_000, 7, 7, 0, 0) })?;
    /// let r = Reader::from_bytes(w.finish(1_000)?)?;
    /// let f = iocap_filter::Filter::parse("proc.name=FIO and latency>1us").unwrap();
    /// let miss = f.near_miss(r.meta(), r.tables()).unwrap();
    /// assert_eq!(miss.to_string(), "proc.name=fio");
    /// # Ok::<(), iocap_format::Error>(())
    /// ```
    pub fn near_miss(&self, meta: &Meta, tables: &Tables) -> Option<NearMiss> {
        let mut clauses = Vec::new();
        required_equalities(&self.checked, true, &mut clauses);
        clauses.into_iter().find_map(|(field, values)| {
            values.iter().find_map(|typed| {
                near(typed, table_values(field, meta, tables)?).map(|near| NearMiss {
                    field: fields::info(field).name,
                    typed: typed.clone(),
                    near,
                })
            })
        })
    }
}

/// The `field=value` tests that an event must pass for `node` to match it (`positive`), or to
/// fail it, in the order written: under `and` both sides, under `or` neither (an event may
/// match by the other side), under `not` the other polarity.
fn required_equalities<'a>(node: &'a Node, positive: bool, out: &mut Vec<(FieldId, &'a [String])>) {
    match node {
        Node::And(a, b) if positive => {
            required_equalities(a, positive, out);
            required_equalities(b, positive, out);
        }
        Node::Or(a, b) if !positive => {
            required_equalities(a, positive, out);
            required_equalities(b, positive, out);
        }
        Node::Not(a) => required_equalities(a, !positive, out),
        Node::Pred(p) if positive => {
            if let Test::Str {
                m: StrMatch::Eq(vs),
                negate: false,
            } = &p.test
            {
                out.push((p.field, vs));
            }
        }
        _ => {}
    }
}

/// Every value `field` has among the capture's table entries, one for each process entry, file
/// (entries that refer to the same one give it once) or device, so some more than once;
/// `None` for a field whose values do not come from the tables. Made as they are read, not
/// gathered: a day's recording has millions of file entries.
fn table_values<'t>(field: FieldId, meta: &'t Meta, tables: &'t Tables) -> Option<impl Iterator<Item = String> + 't> {
    let info = fields::info(field);
    let ids: Box<dyn Iterator<Item = (Class, u64)> + 't> = match field {
        FieldId::ProcName | FieldId::ProcExe | FieldId::ProcCmdline => {
            Box::new(tables.procs().iter().map(|p| (Class::Syscall, u64::from(p.id))))
        }
        FieldId::FdName | FieldId::FdDirectory | FieldId::FdFilename | FieldId::FdDev => {
            Box::new(tables.one_file_id_each().map(|id| (Class::Syscall, u64::from(id))))
        }
        FieldId::BlkDev => Box::new(tables.devices().iter().map(|d| (Class::Block, u64::from(d.dev)))),
        _ => return None,
    };
    Some(ids.filter_map(
        move |(class, id)| match fields::value(info, &synthetic(field, class, id), meta, tables) {
            Value::Str(s) if !s.is_empty() => Some(s.into_owned()),
            _ => None,
        },
    ))
}

/// The value of `have` nearest to `typed`, `None` when `typed` is one of them or none is near:
/// the same in another case (the first in sorted order), else [`nearest`]'s pick among values
/// of about its length or that it begins. Only those are kept as `have` is read: a recording
/// of a tree walk has a file entry for every file it opened (546,000 of them in a 4 × 10^6-event
/// recording of tar and find, whose report with a file name it lacked took 1.4 s instead of
/// 0.3 s while all of them were gathered and sorted first).
fn near(typed: &str, have: impl Iterator<Item = String>) -> Option<String> {
    let lower = typed.to_lowercase();
    let len = typed.chars().count();
    let mut same_case: Option<String> = None;
    let mut close = BTreeSet::new();
    for h in have {
        if h == typed {
            return None;
        }
        let h_lower = h.to_lowercase();
        if h_lower == lower && same_case.as_ref().is_none_or(|s| h < *s) {
            same_case = Some(h.clone());
        }
        if h.chars().count().abs_diff(len) <= MAX_EDITS || h_lower.starts_with(&lower) {
            close.insert(h);
        }
    }
    same_case.or_else(|| {
        nearest(typed, close.iter().map(String::as_str), 1)
            .first()
            .map(|s| (*s).to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_format::{Device, Event, FdType, FileEntry, ProcEntry, Reader, Writer, WriterOptions};

    fn capture() -> Reader<Vec<u8>> {
        let meta = Meta {
            arch: "x86_64".into(),
            devices: vec![Device {
                dev: 8 << 20,
                name: "sda".into(),
            }],
            ..Meta::default()
        };
        let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default()).unwrap();
        let (fio, postgres, path, odd) = (
            w.intern(b"fio"),
            w.intern(b"postgres"),
            w.intern(b"/data/x.db"),
            w.intern(b"my app"),
        );
        let proc = w.add_proc(ProcEntry {
            pid: 7,
            name: fio,
            ..Default::default()
        });
        for (pid, name) in [(8, postgres), (9, odd)] {
            w.add_proc(ProcEntry {
                pid,
                name,
                ..Default::default()
            });
        }
        w.add_file(FileEntry {
            pid: 7,
            fd: 3,
            kind: FdType::File,
            name: path,
            ..Default::default()
        });
        w.push(&Event {
            proc,
            ..Event::syscall(0, 1_000, 7, 7, 0, 0)
        })
        .unwrap();
        Reader::from_bytes(w.finish(1_000).unwrap()).unwrap()
    }

    fn hint(src: &str) -> Option<String> {
        let r = capture();
        Filter::parse(src)
            .unwrap()
            .near_miss(r.meta(), r.tables())
            .map(|m| m.to_string())
    }

    #[test]
    fn a_value_the_tables_lack_is_answered_by_the_nearest_they_have() {
        assert_eq!(hint("proc.name=FIO").as_deref(), Some("proc.name=fio"));
        assert_eq!(hint("proc.name=postgre").as_deref(), Some("proc.name=postgres"));
        assert_eq!(hint("proc.name=postgress").as_deref(), Some("proc.name=postgres"));
        assert_eq!(hint("fd.name=/data/x.dbb").as_deref(), Some("fd.name=/data/x.db"));
        assert_eq!(hint("fd.filename=X.DB").as_deref(), Some("fd.filename=x.db"));
        assert_eq!(hint("blk.dev=sdA").as_deref(), Some("blk.dev=sda"));
        assert_eq!(
            hint("proc.name='My App'").as_deref(),
            Some("proc.name=\"my app\""),
            "quoted when a bare word would not read back"
        );
        assert_eq!(
            hint("latency>1ms and proc.name in (fio, Postgres)").as_deref(),
            Some("proc.name=postgres")
        );
        assert_eq!(hint("not not proc.name=FIO").as_deref(), Some("proc.name=fio"));
    }

    #[test]
    fn only_required_clauses_on_table_fields_with_something_near() {
        assert_eq!(hint("proc.name=fio and latency>1s"), None, "the value exists");
        assert_eq!(hint("proc.name=FIO or latency>1s"), None, "either side may match");
        assert_eq!(hint("not proc.name=FIO"), None);
        assert_eq!(hint("proc.name!=FIO"), None);
        assert_eq!(hint("proc.name=zzzzzzzz"), None, "nothing near");
        assert_eq!(hint("evt.type=pread64"), None, "not a table field");
    }
}
