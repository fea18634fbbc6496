//! The viewer's one question to a capture: "within this time view and filter, what is the
//! spectrogram, the latency histogram, the top values of a field, and which events match?"
//!
//! [`run`] answers it with `iocap-analysis`'s [`Scan`] over the view's chunks (the same scan
//! driver, histogram and spectrogram `iocap report` uses): chunks whose summary cannot match
//! are skipped, only the columns the filter and the aggregates read are decoded, the filter
//! yields a bitmap, and the accumulators take the matching rows. Nothing is kept per event
//! except the [`SLOWEST`] slowest (for the latency-sorted event list). The scan checks the
//! [`Cancel`] token between chunks, so a superseded question stops within one chunk's work.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iocap_analysis::{LatencyHist, Scan, Spectrogram};
use iocap_filter::fields::{self, FieldId, FieldInfo};
use iocap_filter::{Bitmap, Compiled};
use iocap_format::{Col, ColSet, Columns, Event, Reader};

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
        _ => {
            let (nr, op) = (g(&c.nr), c.op.get(i).copied().map_or(0, u64::from));
            // Small keys are counted in a table rather than hashed ([`Groups`]): syscall numbers
            // and ops fit in 15 bits; anything larger (a hostile number) keeps a wide key.
            if class < 4 && nr < 512 && op < 16 {
                class << 13 | nr << 4 | op
            } else {
                1 << 63 | class << 40 | nr << 8 | op
            }
        }
    }
}

/// Group keys below this are looked up in a table, not a hash map: table ids (processes,
/// files, threads) and the event-type keys are small.
const DENSE_KEYS: u64 = 1 << 16;
const NO_SLOT: u32 = u32::MAX;

/// The groups of one scan thread: a histogram and one event (to print the value from) per key.
#[derive(Default)]
struct Groups {
    /// Slot of each small key (`NO_SLOT`: none yet), grown on demand up to [`DENSE_KEYS`].
    dense: Vec<u32>,
    /// Slot of each larger key.
    sparse: IdMap<u32>,
    slots: Vec<(u64, LatencyHist, Event)>,
}

impl Groups {
    /// The histogram of `key`'s group; `event` makes the group's sample event when it is new.
    #[inline]
    fn hist(&mut self, key: u64, event: impl FnOnce() -> Event) -> &mut LatencyHist {
        let slot = if key < DENSE_KEYS {
            let k = key as usize;
            if k >= self.dense.len() {
                self.dense.resize(k + 1, NO_SLOT);
            }
            if self.dense[k] == NO_SLOT {
                self.dense[k] = self.slots.len() as u32;
                self.slots.push((key, LatencyHist::new(), event()));
            }
            self.dense[k] as usize
        } else {
            let next = self.slots.len() as u32;
            let slot = *self.sparse.entry(key).or_insert(next);
            if slot == next {
                self.slots.push((key, LatencyHist::new(), event()));
            }
            slot as usize
        };
        &mut self.slots[slot].1
    }

    fn merge(&mut self, o: Groups) {
        for (k, h, e) in o.slots {
            self.hist(k, || e).merge(&h);
        }
    }
}

/// A hasher for small integer keys (a multiply and a rotate): group keys are ids, not
/// attacker-chosen strings, and SipHash per event would cost more than the rest of the scan.
#[derive(Default, Clone, Copy)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
    }
}

type IdMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<IdHasher>>;

/// What one scan thread accumulates over its share of the chunks.
struct Acc {
    spectro: Spectrogram,
    /// Every matching event is in exactly one group: the view's histogram is their merge.
    groups: Groups,
    per_chunk: Vec<(usize, u64)>,
    slowest: BinaryHeap<Reverse<(u64, EventRef)>>,
}

impl Acc {
    fn new(q: &Query) -> Acc {
        Acc {
            spectro: Spectrogram::new(q.start, q.interval, q.rows),
            groups: Groups::default(),
            per_chunk: Vec::new(),
            slowest: BinaryHeap::new(),
        }
    }

    fn merge(&mut self, o: Acc) {
        self.spectro.merge(&o.spectro);
        self.groups.merge(o.groups);
        self.per_chunk.extend(o.per_chunk);
        for s in o.slowest {
            push_slow(&mut self.slowest, s.0);
        }
    }

    /// Take the matching rows of chunk `ci` that fall inside the view.
    fn feed(&mut self, q: &Query, ci: usize, cols: &Columns, bits: &Bitmap) {
        let (start, end) = (q.start, q.end());
        let mut n = 0u64;
        for i in bits.iter_ones() {
            let (ts, lat) = (cols.ts[i], cols.latency[i]);
            if ts < start || ts >= end {
                continue;
            }
            n += 1;
            self.spectro.add(ts, lat);
            self.groups.hist(group_key(q.group, cols, i), || cols.event(i)).add(lat);
            push_slow(&mut self.slowest, (lat, EventRef { chunk: ci, row: i }));
        }
        if n > 0 {
            self.per_chunk.push((ci, n));
        }
    }
}

fn push_slow(heap: &mut BinaryHeap<Reverse<(u64, EventRef)>>, x: (u64, EventRef)) {
    if heap.len() < SLOWEST {
        heap.push(Reverse(x));
    } else if heap.peek().is_some_and(|Reverse(min)| x > *min) {
        heap.pop();
        heap.push(Reverse(x));
    }
}

/// Answer `q` over `reader`; `None` when cancelled. The view's chunks are split between up
/// to two threads (the machine this was built for has two cores) and merged in chunk order.
pub fn run(reader: &Reader, q: &Query, cancel: &Cancel) -> Result<Option<Answer>, String> {
    let want = ColSet::NONE.with(Col::Ts).with(Col::Latency).union(group_cols(q.group));
    let chunks: Vec<usize> = reader.chunks_in(q.start, q.end()).collect();
    let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 2);
    // Below a few chunks a second thread costs more than it saves.
    let threads = if chunks.len() < 4 { 1 } else { threads };
    let stale = || cancel.is_stale(q.gen);
    let acc = Scan::new(reader, q.filter.as_deref())
        .columns(want)
        .chunks(&chunks)
        .threads(threads)
        .cancel(&stale)
        .run(
            || Acc::new(q),
            |acc, ci, cols, bits| acc.feed(q, ci, cols, bits),
            Acc::merge,
        )
        .map_err(|e| e.to_string())?;
    let Some((acc, _)) = acc else { return Ok(None) };
    // Keys are finer than values (two proc ids may share a name): merge by printed value.
    let (meta, tables) = (reader.meta(), reader.tables());
    let mut merged: HashMap<String, LatencyHist> = HashMap::new();
    let mut hist = LatencyHist::new();
    for (_, h, e) in &acc.groups.slots {
        let value = fields::value(q.group, e, meta, tables).to_string();
        merged.entry(value).or_default().merge(h);
        hist.merge(h);
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
    let mut slowest: Vec<(u64, EventRef)> = acc.slowest.into_iter().map(|Reverse(x)| x).collect();
    slowest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut per_chunk = acc.per_chunk;
    per_chunk.sort_unstable();
    Ok(Some(Answer {
        gen: q.gen,
        grid: Grid {
            spectro: acc.spectro,
            approximate: false,
        },
        matched: hist.count(),
        hist,
        groups,
        group_count,
        per_chunk,
        slowest,
    }))
}
