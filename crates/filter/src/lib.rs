//! iocap's filter language: `proc.name=fio and fd.type=file and latency>1ms`.
//!
//! sysdig's field names, with units (`1.5ms`, `4KiB`), `and`/`or`/`not`/parentheses and
//! string operators (`contains`, `icontains`, `startswith`, `endswith`, `glob`, `in (a, b)`,
//! `exists`). A filter goes through four stages:
//!
//! 1. lex and parse into an [`Expr`] with byte spans (`lex.rs`, `parse.rs`, `ast.rs`);
//! 2. check against the schema in [`fields`]: names, operators, literal types and units
//!    (`check.rs`). [`Filter::parse`] does 1 and 2 and returns a [`FilterError`] whose span
//!    and help the CLI renders ([`FilterError::render`]) and the viewer highlights;
//! 3. [`Filter::compile`] against one capture's [`Meta`] and [`Tables`]: every string test is
//!    decided once per table id, so that
//! 4. [`Compiled::eval`] over a decoded chunk is integer column scans into a [`Bitmap`], and
//!    [`Compiled::may_match`] skips chunks by their [`ChunkSummary`] alone.
//!
//! While recording, tables grow as processes start and files open: [`Filter::matches`] tests one
//! event against any [`Lookup`], and [`Filter::pushdown`] says what the kernel can decide.
//!
//! For a filter that matched nothing, [`Filter::near_miss`] names the value the capture holds
//! nearest to one the filter asked for (`proc.name=FIO` → `proc.name=fio`).
//!
//! [`literal`] reads numbers with units (`1.5ms`, `4KiB`) for the checker and for every
//! command-line duration, and writes durations and strings back as literals.
//!
//! A field that does not apply to an event (`fd.name` of a block request) makes a comparison
//! false, and `not` inverts that; `exists` tests presence. [`fields::value`] gives the value
//! each field has for an event, which is what `iocap events --json` prints.
//!
//! ```
//! use iocap_filter::{Bitmap, Filter};
//! use iocap_format::{ColSet, Columns, Event, Meta, Reader, Writer, WriterOptions};
//!
//! // A capture with 100 reads by one process, one in ten slow.
//! let meta = Meta { arch: "x86_64".into(), ..Meta::default() };
//! let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default())?;
//! let name = w.intern(b"postgres");
//! let proc = w.add_proc(iocap_format::ProcEntry { pid: 7, name, ..Default::default() });
//! for i in 0..100u64 {
//!     let latency = if i % 10 == 0 { 5_000_000 } else { 20_000 };
//!     w.push(&Event { proc, ..Event::syscall(i * 1000, latency, 7, 7, 0, 4096) })?;
//! }
//! let r = Reader::from_bytes(w.finish(1_000_000)?)?;
//!
//! let filter = Filter::parse("proc.name=postgres and evt.type=read and latency>1ms").unwrap();
//! assert_eq!(filter.to_string(), "proc.name=postgres and evt.type=read and latency>1ms");
//! let compiled = filter.compile(r.meta(), r.tables());
//! let (mut dec, mut cols, mut bits) = (Default::default(), Columns::default(), Bitmap::default());
//! let mut matched = 0;
//! for (i, chunk) in r.chunks().iter().enumerate() {
//!     if !compiled.may_match(&chunk.summary) {
//!         continue;
//!     }
//!     r.read_chunk(i, compiled.columns(), &mut dec, &mut cols)?;
//!     compiled.eval(&cols, &mut bits);
//!     matched += bits.count_ones();
//! }
//! assert_eq!(matched, 10);
//!
//! let err = Filter::parse("proc.nme=postgres").unwrap_err();
//! assert_eq!(err.render("proc.nme=postgres"),
//!            "unknown field `proc.nme`\n  proc.nme=postgres\n  ^^^^^^^^\n  help: did you mean `proc.name`?");
//! # Ok::<(), iocap_format::Error>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod ast;
mod bitmap;
mod check;
mod compile;
mod error;
pub mod fields;
mod hint;
mod lex;
pub mod literal;
mod live;
mod lookup;
mod parse;
mod procs;
mod reach;

use std::fmt;

pub use ast::{Cmp, Expr, Lit, Op};
pub use bitmap::Bitmap;
pub use compile::Compiled;
pub use error::FilterError;
pub use hint::NearMiss;
pub use iocap_format::{ChunkSummary, ColSet, Columns, Meta, Tables};
pub use live::{ContainerView, FileView, Lookup, ProcView, Pushdown};
pub use reach::{class_noun, Reach, CLASSES};

/// A parsed and checked filter. `Display` prints it back in a form that parses to the same tree.
#[derive(Clone, Debug)]
pub struct Filter {
    expr: Expr,
    checked: check::Node,
}

impl Filter {
    /// Parse and check `src`. Empty or blank text matches every event.
    pub fn parse(src: &str) -> Result<Filter, FilterError> {
        let expr = parse::parse(src)?;
        let checked = check::check(&expr)?;
        Ok(Filter { expr, checked })
    }

    /// The events both filters match: `self and other` (either alone when the other is the
    /// empty filter). Each tree keeps the spans into its own source.
    pub fn and(&self, other: &Filter) -> Result<Filter, FilterError> {
        let expr = match (&self.expr, &other.expr) {
            (Expr::All, e) | (e, Expr::All) => e.clone(),
            (a, b) => Expr::And(Box::new(a.clone()), Box::new(b.clone())),
        };
        let checked = check::check(&expr)?;
        Ok(Filter { expr, checked })
    }

    /// The syntax tree, with spans into the source.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The tree as an S-expression: `(and (= proc.name fio) (> latency 1ms))`.
    pub fn sexpr(&self) -> String {
        self.expr.sexpr()
    }

    /// Whether this is the empty filter, which matches everything.
    pub fn is_all(&self) -> bool {
        self.expr == Expr::All
    }

    /// Prepare the filter for the chunks of one capture.
    pub fn compile(&self, meta: &Meta, tables: &Tables) -> Compiled {
        compile::compile(&self.checked, meta, tables, meta.start_ts)
    }

    /// [`Filter::compile`], with `evt.time` counted from `origin` (ns on the capture's boot
    /// clock) rather than the capture's start: where several captures are read on one
    /// timeline, the instant of this one aligned with the timeline's start, so `evt.time`
    /// means the same instant in every capture. The fields of the header (`host`,
    /// `capture.id`) stay this capture's own.
    pub fn compile_from(&self, meta: &Meta, tables: &Tables, origin: u64) -> Compiled {
        compile::compile(&self.checked, meta, tables, origin)
    }

    /// The fields of the filter with one value per capture ([`fields::FieldId::is_per_capture`]:
    /// `host`, `capture.id`), by name, each once: what a filter of events being recorded has no
    /// use for.
    pub fn per_capture_fields(&self) -> Vec<&'static str> {
        self.fields_where(fields::FieldId::is_per_capture)
    }

    /// The fields of the filter known only once a recording is written
    /// ([`fields::FieldId::is_named_after_recording`]: `stack.*`), by name, each once.
    pub fn after_recording_fields(&self) -> Vec<&'static str> {
        self.fields_where(fields::FieldId::is_named_after_recording)
    }

    /// The fields of the filter `which` picks, by name, each once.
    fn fields_where(&self, which: fn(fields::FieldId) -> bool) -> Vec<&'static str> {
        let mut out = Vec::new();
        self.checked.visit_preds(&mut |p| {
            let name = fields::info(p.field).name;
            if which(p.field) && !out.contains(&name) {
                out.push(name);
            }
        });
        out
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.expr.fmt(f)
    }
}

impl std::str::FromStr for Filter {
    type Err = FilterError;

    fn from_str(s: &str) -> Result<Filter, FilterError> {
        Filter::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    /// `and` of two filters is their conjunction; the empty filter leaves the other as it was.
    #[test]
    fn and_is_the_conjunction() {
        let f = |s: &str| Filter::parse(s).unwrap();
        let both = f("proc.name=a or latency>1ms").and(&f("evt.class=block")).unwrap();
        assert_eq!(
            both.sexpr(),
            "(and (or (= proc.name a) (> latency 1ms)) (= evt.class block))"
        );
        assert_eq!(f("").and(&f("latency>1ms")).unwrap().sexpr(), "(> latency 1ms)");
        assert_eq!(f("latency>1ms").and(&f("")).unwrap().sexpr(), "(> latency 1ms)");
        assert!(f("").and(&f("")).unwrap().is_all());
    }

    #[test]
    fn per_capture_fields_are_constants_and_evt_time_counts_from_the_origin() {
        use iocap_format::{Event, Reader, Writer, WriterOptions};
        let meta = Meta {
            arch: "x86_64".into(),
            host: "db1".into(),
            start_ts: 1_000,
            ..Meta::default()
        };
        let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default()).unwrap();
        for i in 0..10u64 {
            w.push(&Event::syscall(1_000 + i * 1_000, 10, 7, 7, 0, 0)).unwrap();
        }
        let r = Reader::from_bytes(w.finish(20_000).unwrap()).unwrap();
        let summary = &r.chunks()[0].summary;
        let compile = |src: &str| Filter::parse(src).unwrap().compile(r.meta(), r.tables());
        assert!(compile("host=db1").is_all());
        assert!(
            !compile("host=db2").may_match(summary),
            "a chunk of another host is skipped"
        );
        assert!(compile("not host=db2 and capture.id exists").is_all());
        let id = r.meta().capture_id();
        assert!(compile(&format!("capture.id={id}")).is_all());
        assert!(!compile("capture.id=0000000000000000").may_match(summary));
        assert_eq!(
            Filter::parse("latency>1ms or host=x").unwrap().per_capture_fields(),
            ["host"]
        );
        // evt.time>=5us: from the start (1000), events at 6000 on; from 4000, at 9000 on.
        let matched = |c: Compiled| {
            let (mut dec, mut cols, mut bits) = (Default::default(), Columns::default(), Bitmap::default());
            r.read_chunk(0, c.columns(), &mut dec, &mut cols).unwrap();
            c.eval(&cols, &mut bits);
            bits.count_ones()
        };
        let f = Filter::parse("evt.time>=5us and host=db1").unwrap();
        assert_eq!(matched(f.compile(r.meta(), r.tables())), 5);
        assert_eq!(matched(f.compile_from(r.meta(), r.tables(), 4_000)), 2);
    }

    #[test]
    fn compiled_is_shareable() {
        assert_send_sync::<Compiled>();
        assert_send_sync::<Filter>();
    }
}
