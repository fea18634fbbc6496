//! The viewer's one question to a capture: "within this time view and filter, what is the
//! spectrogram, the latency histogram, the top values of a field, and which events match?"
//!
//! [`run`] answers it by streaming chunks: chunks whose summary cannot match are skipped, only
//! the columns the filter and the aggregates read are decoded, the filter yields a bitmap, and
//! the accumulators of `iocap-analysis` (the same ones `iocap report` uses) take the matching
//! rows. Nothing is kept per event except the few hundred slowest (for the latency-sorted event
//! list). `run` checks its [`Cancel`] token between chunks, so a superseded question stops within
//! one chunk's work.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iocap_analysis::{GroupBy, LatencyHist, Spectrogram};
use iocap_filter::fields::{self, FieldId, FieldInfo};
use iocap_filter::{Bitmap, Compiled};
use iocap_format::{ChunkDecoder, Col, ColSet, Columns, Event, Reader};

use crate::grid::Grid;

/// How many of the slowest matching events a scan keeps for the latency-sorted list.
pub const SLOWEST: usize = 1000;
/// How many groups the breakdown pane shows at most.
pub const TOP_GROUPS: usize = 50;

/// What to compute.
#[derive(Clone)]
pub struct Query {
    /// Generation: answers to older generations are dropped unread.
    pub gen: u64,
    /// The applied filter, compiled; `None` matches everything.
    pub filter: Option<Arc<Compiled>>,
    /// Start of the view (first spectrogram row), ns since boot.
    pub start: u64,
    pub interval: u64,
    /// Spectrogram rows in the view; the view ends at `start + rows × interval`.
    pub rows: usize,
    /// Field the breakdown groups by.
    pub group: &'static FieldInfo,
}

impl Query {
    pub fn end(&self) -> u64 {
        self.start
            .saturating_add(self.interval.saturating_mul(self.rows as u64))
    }
}

/// One row of the breakdown: a value of the grouped field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupRow {
    /// The value as the filter language reads it (already escaped: it comes from the tables).
    pub value: String,
    pub count: u64,
    pub p99: u64,
}

/// Where a matching event is: chunk index and row in the chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventRef {
    pub chunk: usize,
    pub row: usize,
}

/// The answer to a [`Query`].
#[derive(Clone, Debug)]
pub struct Answer {
    pub gen: u64,
    pub grid: Grid,
    pub hist: LatencyHist,
    /// Events matching in the view.
    pub matched: u64,
    pub groups: Vec<GroupRow>,
    /// Distinct values of the grouped field among matching events.
    pub group_count: usize,
    /// Matching events per chunk, in chunk (time) order, chunks with none left out.
    pub per_chunk: Vec<(usize, u64)>,
    /// The slowest matching events, slowest first.
    pub slowest: Vec<(u64, EventRef)>,
}

/// Cancellation: a query is stale once the shared generation moved past its own.
#[derive(Clone, Debug, Default)]
pub struct Cancel(pub Arc<AtomicU64>);

impl Cancel {
    pub fn is_stale(&self, gen: u64) -> bool {
        self.0.load(Ordering::Relaxed) != gen
    }
}

/// Columns needed to tell the grouped field's value apart (the key) and to print it.
fn group_cols(field: &FieldInfo) -> ColSet {
    use Col::*;
    let cols: &[Col] = match field.id {
        FieldId::ProcName | FieldId::ProcExe | FieldId::ProcCmdline | FieldId::ProcPpid => &[Proc],
        FieldId::ProcPid => &[Pid],
        FieldId::ThreadTid => &[Tid],
        FieldId::FdName | FieldId::FdType | FieldId::FdDirectory | FieldId::FdFilename | FieldId::FdDev => &[File],
        FieldId::BlkDev => &[Class, Dev],
        FieldId::BlkOp => &[Class, Op],
        _ => &[Class, Nr, Op],
    };
    cols.iter().copied().collect()
}

/// A cheap per-event key for the grouped field: events with equal keys have equal values.
#[inline]
fn group_key(field: &FieldInfo, c: &Columns, i: usize) -> u64 {
    let g = |v: &Vec<u32>| v.get(i).copied().map_or(0, u64::from);
    let class = c.class.get(i).copied().map_or(0, u64::from);
    match field.id {
        FieldId::ProcName | FieldId::ProcExe | FieldId::ProcCmdline | FieldId::ProcPpid => g(&c.proc),
        FieldId::ProcPid => g(&c.pid),
        FieldId::ThreadTid => g(&c.tid),
        FieldId::FdName | FieldId::FdType | FieldId::FdDirectory | FieldId::FdFilename | FieldId::FdDev => g(&c.file),
        FieldId::BlkDev => class << 40 | g(&c.dev),
        FieldId::BlkOp => class << 40 | c.op.get(i).copied().map_or(0, u64::from),
        _ => class << 40 | g(&c.nr) << 8 | c.op.get(i).copied().map_or(0, u64::from),
    }
}

/// Answer `q` over `reader`; `None` when cancelled.
pub fn run(reader: &Reader, q: &Query, cancel: &Cancel) -> Result<Option<Answer>, String> {
    let (start, end) = (q.start, q.end());
    let mut spectro = Spectrogram::new(start, q.interval);
    let mut hist = LatencyHist::new();
    let mut by_key = GroupBy::<u64>::new();
    let mut samples: HashMap<u64, Event> = HashMap::new();
    let mut per_chunk = Vec::new();
    let mut slowest: BinaryHeap<Reverse<(u64, EventRef)>> = BinaryHeap::with_capacity(SLOWEST + 1);
    let mut want = ColSet::NONE
        .with(Col::Ts)
        .with(Col::Latency)
        .with(Col::Bytes)
        .union(group_cols(q.group));
    if let Some(f) = &q.filter {
        want = want.union(f.columns());
    }
    let (mut dec, mut cols, mut bits) = (ChunkDecoder::new(), Columns::default(), Bitmap::zeros(0));
    let chunks: Vec<usize> = reader.chunks_in(start, end).collect();
    for ci in chunks {
        if cancel.is_stale(q.gen) {
            return Ok(None);
        }
        let summary = &reader.chunks()[ci].summary;
        if q.filter.as_ref().is_some_and(|f| !f.may_match(summary)) {
            continue;
        }
        reader
            .read_chunk(ci, want, &mut dec, &mut cols)
            .map_err(|e| format!("chunk {ci}: {e}"))?;
        bits.reset(cols.len(), true);
        if let Some(f) = &q.filter {
            f.eval(&cols, &mut bits);
        }
        let mut n = 0u64;
        for i in bits.iter_ones() {
            let (ts, lat) = (cols.ts[i], cols.latency[i]);
            if ts < start || ts >= end {
                continue;
            }
            n += 1;
            spectro.add(ts, lat);
            hist.add(lat);
            let key = group_key(q.group, &cols, i);
            by_key.add(key, lat, cols.bytes[i]);
            samples.entry(key).or_insert_with(|| cols.event(i));
            let r = EventRef { chunk: ci, row: i };
            if slowest.len() < SLOWEST {
                slowest.push(Reverse((lat, r)));
            } else if slowest.peek().is_some_and(|Reverse((l, _))| lat > *l) {
                slowest.pop();
                slowest.push(Reverse((lat, r)));
            }
        }
        if n > 0 {
            per_chunk.push((ci, n));
        }
    }
    // Keys are finer than values (two proc ids may share a name): merge by printed value.
    let (meta, tables) = (reader.meta(), reader.tables());
    let mut merged: HashMap<String, LatencyHist> = HashMap::new();
    for (key, group) in by_key.top(usize::MAX) {
        let value = samples
            .get(key)
            .map(|e| fields::value(q.group, e, meta, tables).to_string())
            .unwrap_or_default();
        merged.entry(value).or_default().merge(&group.hist);
    }
    let group_count = merged.len();
    let mut groups: Vec<GroupRow> = merged
        .into_iter()
        .map(|(value, h)| GroupRow {
            value,
            count: h.count(),
            p99: h.percentile(99.0),
        })
        .collect();
    groups.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.value.cmp(&b.value)));
    groups.truncate(TOP_GROUPS);
    let mut slowest: Vec<(u64, EventRef)> = slowest.into_iter().map(|Reverse(x)| x).collect();
    slowest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    Ok(Some(Answer {
        gen: q.gen,
        grid: Grid::from_spectrogram(&spectro, q.rows),
        matched: hist.count(),
        hist,
        groups,
        group_count,
        per_chunk,
        slowest,
    }))
}
