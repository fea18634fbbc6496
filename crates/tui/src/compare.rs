//! A comparison: side A beside what the viewer shows (side B: the app's capture, under the
//! filter bar's filter).
//!
//! Two ways in. `iocap view a.cap b.cap` opens one: A is the first capture, under the filter bar's
//! filter as B is (until `p` pins A's own). On one capture, `p` pins the filter in force as A's,
//! and the bar, edited on, is B's. `p` again lets A follow the bar once more (on one capture: the
//! comparison ends).
//!
//! The two sides share the view: its rows are B's time, and A's are the same rows moved by the
//! alignment's offset ([`Align`]): by wall clock when the two captures overlap in time, else from
//! each one's start. A's filter is compiled with its `evt.time` counted from the instant aligned
//! with B's start, so a clause of B's time (a brushed region) means the same rows on both sides.
//! Every question the app asks of B is asked of A too ([`Compare::query`], the same generation,
//! answered by a worker of A's own); what the panes draw from the pair: a difference map in the
//! spectrogram (or the two side by side), the two histograms overlaid, and the breakdown's
//! counts side by side ([`Compare::merge`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use iocap_analysis::DiskSplit;
use iocap_filter::{Compiled, FilterError};
use iocap_format::Reader;

use crate::capture::Capture;
use crate::panes::filter_bar::{self, joined};
use crate::panes::spectrogram::grid::Grid;
use crate::worker::query::{Answer, GroupRow, Query};

/// How A's time is laid against B's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// One capture under two filters: the same time.
    Same,
    /// Two captures that overlap in wall-clock time: the same instants side by side.
    Wall,
    /// Two captures apart in time: each from its own start.
    Start,
}

impl Align {
    /// How the comparison line says it.
    pub fn describe(self) -> &'static str {
        match self {
            Align::Same => "one capture",
            Align::Wall => "aligned by wall clock",
            Align::Start => "aligned from each start",
        }
    }
}

/// Side A of a comparison, and its latest answer.
pub struct Compare {
    /// A's capture (B's own, shared, when comparing two filters of one).
    pub cap: Capture,
    /// How A's time is laid against B's.
    pub align: Align,
    /// Nanoseconds to add to one of B's times for the same time of A.
    pub offset: i64,
    /// A's own filter; `None`: the filter bar's, as B's.
    pub pinned: Option<String>,
    /// What A's own filter was before each region or row narrowed both sides, with the depth of
    /// the filter bar's undo stack then: undoing the bar's narrowing undoes A's.
    undo: Vec<(usize, String)>,
    /// The filter text A's compiled filter is of.
    compiled_for: Option<String>,
    /// A's filter, compiled against A's capture with `evt.time` aligned to B's.
    compiled: Option<Arc<Compiled>>,
    /// A's picture of the view: from the index at first, then the worker's answer.
    pub grid: Grid,
    /// A's answer to the current question, once in.
    pub answer: Option<Answer>,
    /// The spectrogram shows the two sides side by side rather than their difference.
    pub side_by_side: bool,
    /// The breakdown's rows: B's groups, then the values only A has (0 events in B).
    pub rows: Vec<GroupRow>,
    /// A's count and p99 for each of [`Compare::rows`] (0 where A has none), once A's answer
    /// is in.
    pub a_groups: Vec<(u64, u64)>,
}

impl Compare {
    /// A comparison of capture `a` with the app's capture `b`, under the same filter until one
    /// is pinned.
    pub fn of_two(a: Capture, b: &Capture) -> Compare {
        let (ma, mb) = (a.reader.meta(), b.reader.meta());
        // The wall-clock span of each, and whether they overlap.
        let wall = |c: &Capture, b2w: i64| (wall_of(c.start, b2w), wall_of(c.end, b2w));
        let (wa, wb) = (wall(&a, ma.boot_to_wall_ns), wall(b, mb.boot_to_wall_ns));
        let (align, offset) = if wa.0 < wb.1 && wb.0 < wa.1 {
            // The same wall instant: a_ts + a_b2w = b_ts + b_b2w.
            (Align::Wall, mb.boot_to_wall_ns.saturating_sub(ma.boot_to_wall_ns))
        } else {
            (Align::Start, signed_diff(a.start, b.start))
        };
        Compare::new(a, align, offset, None)
    }

    /// A comparison of `b`'s capture with itself, A under `filter` (pinned).
    pub fn pinned(b: &Capture, filter: &str) -> Compare {
        Compare::new(b.clone(), Align::Same, 0, Some(filter.to_owned()))
    }

    fn new(cap: Capture, align: Align, offset: i64, pinned: Option<String>) -> Compare {
        Compare {
            grid: Grid::empty(cap.start, 1, 0),
            cap,
            align,
            offset,
            pinned,
            undo: Vec::new(),
            compiled_for: None,
            compiled: None,
            answer: None,
            side_by_side: false,
            rows: Vec::new(),
            a_groups: Vec::new(),
        }
    }

    /// Whether A is another capture than B (not two filters of one).
    pub fn two_captures(&self) -> bool {
        self.align != Align::Same
    }

    /// Whether A's answer to question `gen` is still to come.
    pub fn pending(&self, gen: u64) -> bool {
        self.answer.as_ref().is_none_or(|a| a.gen != gen)
    }

    /// A's time for B's time `ts` (clamped to the clock's range).
    pub fn a_time(&self, ts: u64) -> u64 {
        u64::try_from((i128::from(ts) + i128::from(self.offset)).max(0)).unwrap_or(u64::MAX)
    }

    /// B's time for A's time `ts`.
    fn b_time(&self, ts: u64) -> u64 {
        u64::try_from((i128::from(ts) - i128::from(self.offset)).max(0)).unwrap_or(u64::MAX)
    }

    /// Give A its own filter, or (`None`) let it follow the filter bar's.
    pub fn pin(&mut self, filter: Option<String>) {
        self.pinned = filter;
        self.undo.clear();
    }

    /// A region or a breakdown row narrowed the filter bar's filter by `clause`, its undo stack
    /// `depth` deep before: A's own filter, when it has one, is narrowed alike.
    pub fn narrow(&mut self, clause: &str, depth: usize) {
        if let Some(pinned) = &mut self.pinned {
            let narrowed = joined(pinned, clause);
            self.undo.push((depth, std::mem::replace(pinned, narrowed)));
        }
    }

    /// The filter bar undid a change, its undo stack `depth` deep now: when that change was a
    /// narrowing of both sides, A's filter is what it was before it too.
    pub fn undone(&mut self, depth: usize) {
        if self.undo.last().is_some_and(|&(d, _)| d == depth) {
            self.pinned = self.undo.pop().map(|(_, f)| f);
        }
    }

    /// A's filter text, the bar's being `bar`.
    pub fn filter<'a>(&'a self, bar: &'a str) -> &'a str {
        self.pinned.as_deref().unwrap_or(bar)
    }

    /// Widen B's span to hold A's, laid on B's time: the view's rows reach the end of the
    /// longer side. (A's time before B's start stays out of the view: B's start is where the
    /// rows and `evt.time` begin.)
    pub fn widen(&self, b: &mut Capture) {
        b.end = b.end.max(self.b_time(self.cap.end));
        b.last = b.last.max(self.b_time(self.cap.last).min(b.end));
    }

    /// The question `q` (B's) asked of A: A's capture and filter, the same rows at A's time.
    /// Only what the panes compare is asked (no slowest events, whole count or iostat).
    pub fn query(&mut self, q: &Query, bar: &str, b: &Reader) -> Result<Query, FilterError> {
        let text = self.filter(bar).to_owned();
        if self.compiled_for.as_deref() != Some(text.as_str()) {
            self.compiled = self.compile(&text, b)?;
            self.compiled_for = Some(text);
        }
        Ok(Query {
            gen: q.gen,
            reader: Arc::clone(&self.cap.reader),
            extends: None,
            filter: self.compiled.clone(),
            // Side A's hint is not shown: no text, nothing looked for.
            filter_text: String::new(),
            start: self.a_time(q.start),
            slowest: 0,
            whole: false,
            iostat: false,
            ..q.clone()
        })
    }

    /// `text` compiled against A's capture, `evt.time` counted from the instant of A aligned
    /// with B's start (the start of B's own `evt.time`).
    fn compile(&self, text: &str, b: &Reader) -> Result<Option<Arc<Compiled>>, FilterError> {
        filter_bar::compile_from(text, &self.cap.reader, self.a_time(b.meta().start_ts))
    }

    /// A's capture grew (the same capture as B's, being recorded): its filter is compiled
    /// again against the grown tables with the next question.
    pub fn grown(&mut self, reader: Arc<Reader>) {
        self.cap = self.cap.grown(reader);
        self.compiled_for = None;
    }

    /// Lay B's groups `b` beside A's answer, as the breakdown's rows ([`Compare::rows`],
    /// [`Compare::a_groups`]): after every answer, of either side.
    pub fn merge(&mut self, b: &[GroupRow]) {
        let a = self.answer.as_ref().map_or(&[][..], |a| &a.groups);
        let by_value: HashMap<&str, &GroupRow> = a.iter().map(|g| (g.value.as_str(), g)).collect();
        let in_b: HashSet<&str> = b.iter().map(|g| g.value.as_str()).collect();
        let mut rows = b.to_vec();
        rows.extend(a.iter().filter(|g| !in_b.contains(g.value.as_str())).map(|g| GroupRow {
            count: 0,
            p99: 0,
            disk: DiskSplit::default(),
            ..g.clone()
        }));
        self.a_groups = rows
            .iter()
            .map(|r| by_value.get(r.value.as_str()).map_or((0, 0), |g| (g.count, g.p99)))
            .collect();
        self.rows = rows;
    }
}

/// Wall-clock time of boot time `ts`, given the capture's boot-to-wall offset.
fn wall_of(ts: u64, boot_to_wall: i64) -> i128 {
    i128::from(ts) + i128::from(boot_to_wall)
}

/// `a - b` as a signed offset (saturating).
fn signed_diff(a: u64, b: u64) -> i64 {
    i64::try_from(i128::from(a) - i128::from(b)).unwrap_or(if a > b { i64::MAX } else { i64::MIN })
}
