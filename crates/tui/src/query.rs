//! The viewer's one question to a capture: "within this time view and filter, what is the
//! spectrogram, the latency histogram, the top values of a field, and which events match?"
//!
//! [`run`] answers it with `iocap-analysis`'s [`Scan`] over the view's chunks (the same scan
//! driver, histogram and spectrogram `iocap report` uses): chunks whose summary cannot match
//! are skipped, only the columns the filter and the aggregates read are decoded, the filter
//! yields a bitmap, and the accumulators take the matching rows. Chunks that lie within one
//! spectrogram row need no timestamps (their row comes from the summary), and chunks whose
//! summary proves every event matches need neither the filter nor its columns. Nothing is kept
//! per event except, when the list is sorted by latency, the [`SLOWEST`] slowest (16 bytes
//! each). The scan checks the [`Cancel`] token between chunks, so a superseded question stops
//! within one chunk's work.
//!
//! A [`ColumnCache`] (the worker keeps one per capture, [`CACHE_BUDGET`] bytes) is read by
//! [`run`] and filled by [`warm`], which the worker calls while idle after each answer: the
//! first question costs no more than without a cache, the next one over the same chunks skips
//! decoding.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iocap_analysis::{hist, spectro, ColumnCache, Damage, LatencyHist, Scan, Spectrogram};
use iocap_filter::fields::{self, FieldId, FieldInfo};
use iocap_filter::{Bitmap, Compiled};
use iocap_format::{ChunkSummary, Col, ColSet, Columns, Event, Reader};

use crate::grid::Grid;

/// How many of the slowest matching events a scan keeps for the latency-sorted list: far more
/// than anyone scrolls through (262,144), at 16 bytes each (4 MiB, and up to 1.5 times that per
/// scan thread while scanning). Beyond it the list says "slowest of N". 2^20 cost 0.2 s more
/// per 10^8 events (pruning and the final sort) for rows nobody reaches.
pub const SLOWEST: usize = 1 << 18;
/// Bytes of decoded columns the viewer keeps across queries ([`ColumnCache`]): at 3 to 5 bytes
/// per event for the usual columns (latency, the grouped field, the filter's; timestamps only
/// where a chunk straddles a row), 10^8 events' worth (363 MB in the viewer bench), leaving over
/// 100 MB under the 512 MB goal for everything else.
pub const CACHE_BUDGET: usize = 384 << 20;
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
    /// How many of the slowest matching events to keep ([`SLOWEST`] when the list is sorted
    /// by latency, 0 when not: keeping them costs a scan time).
    pub slowest: usize,
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

/// One of the slowest events: 16 bytes, as a million of them are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slow {
    pub latency: u64,
    pub chunk: u32,
    pub row: u32,
}

impl Slow {
    pub fn at(&self) -> EventRef {
        EventRef {
            chunk: self.chunk as usize,
            row: self.row as usize,
        }
    }

    /// Slowest first, then file order: a total order, so which K are kept does not depend
    /// on how the chunks were split between threads.
    fn order(a: &Slow, b: &Slow) -> std::cmp::Ordering {
        b.latency
            .cmp(&a.latency)
            .then(a.chunk.cmp(&b.chunk))
            .then(a.row.cmp(&b.row))
    }
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
    /// The slowest matching events (at most [`Query::slowest`]), slowest first.
    pub slowest: Vec<Slow>,
    /// Chunks of the view that could not be read: the answer is the rest's.
    pub damaged: Vec<Damage>,
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

/// [`group_key`] of every row of `c` into `out`, when the field is the event type (its last
/// arm) and every row's key is a small one (class, syscall number and op in 15 bits): then
/// they are built in loops that vectorise, 2 bytes a row. Whether it did.
fn small_type_keys(field: &FieldInfo, c: &Columns, out: &mut Vec<u16>) -> bool {
    let event_type = group_cols(field) == [Col::Class, Col::Nr, Col::Op].into_iter().collect();
    let n = c.len();
    if !event_type || [c.class.len(), c.nr.len(), c.op.len()] != [n; 3] {
        return false;
    }
    let max = |v: &[u8]| v.iter().fold(0, |m, &x| m.max(x));
    if max(&c.class) >= 4 || max(&c.op) >= 16 || c.nr.iter().fold(0, |m, &x| m.max(x)) >= 512 {
        return false;
    }
    out.clear();
    out.extend(
        c.class
            .iter()
            .zip(&c.nr)
            .zip(&c.op)
            .map(|((&class, &nr), &op)| u16::from(class) << 13 | (nr as u16) << 4 | u16::from(op)),
    );
    true
}

/// The group key of a field that is a table id read from column `v`.
#[inline(always)]
fn id(v: &[u32]) -> impl Fn(usize) -> u64 + '_ {
    move |i| v.get(i).map_or(0, |&x| u64::from(x))
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
    slowest: TopK,
    /// The group keys of a chunk's rows, for the event type ([`small_type_keys`]).
    keys: Vec<u16>,
}

/// The K slowest events seen: candidates at or above the K-th latency so far are appended,
/// and the list is cut back to K (a linear-time selection) when it reaches 1.5 K, so an event
/// costs one comparison and the memory stays bounded.
struct TopK {
    k: usize,
    items: Vec<Slow>,
    /// The K-th latency once K were seen (before: a bound known from the summaries, or 0):
    /// anything faster cannot be kept.
    floor: u64,
}

impl TopK {
    /// The `k` slowest of events of which at least `k` take `floor` ns or more (0 when not
    /// known): faster ones are never candidates.
    fn new(k: usize, floor: u64) -> TopK {
        TopK {
            k,
            items: Vec::new(),
            floor,
        }
    }

    /// Room kept: pruning back to K every K/2 candidates.
    fn room(&self) -> usize {
        self.k + self.k / 2 + 1
    }

    #[inline(always)]
    fn push(&mut self, s: Slow) {
        if s.latency >= self.floor && self.k > 0 {
            self.keep(s);
        }
    }

    /// The rarer half of [`TopK::push`], out of the scan loop.
    #[inline(never)]
    fn keep(&mut self, s: Slow) {
        if self.items.capacity() == 0 {
            // Once, exactly: growing by doubling would overshoot the memory bound.
            self.items.reserve_exact(self.room());
        }
        self.items.push(s);
        if self.items.len() >= self.room() {
            self.prune();
        }
    }

    fn prune(&mut self) {
        if self.items.len() > self.k {
            self.items.select_nth_unstable_by(self.k - 1, Slow::order);
            self.items.truncate(self.k);
            self.floor = self.items.iter().map(|s| s.latency).min().unwrap_or(0);
        }
    }

    fn merge(&mut self, o: TopK) {
        self.floor = self.floor.max(o.floor);
        for s in o.items {
            self.push(s);
        }
    }

    /// Slowest first.
    fn into_sorted(mut self) -> Vec<Slow> {
        self.prune();
        self.items.sort_unstable_by(Slow::order);
        self.items
    }
}

impl Acc {
    fn new(q: &Query, slow_floor: u64) -> Acc {
        Acc {
            spectro: Spectrogram::new(q.start, q.interval, q.rows),
            groups: Groups::default(),
            per_chunk: Vec::new(),
            slowest: TopK::new(q.slowest, slow_floor),
            keys: Vec::new(),
        }
    }

    fn merge(&mut self, o: Acc) {
        self.spectro.merge(&o.spectro);
        self.groups.merge(o.groups);
        self.per_chunk.extend(o.per_chunk);
        self.slowest.merge(o.slowest);
    }

    /// Take the matching rows of chunk `ci` that fall inside the view. `one_row` is the
    /// spectrogram row of a chunk that lies within one row of the view (its timestamps were not
    /// decoded: they would say nothing more).
    fn feed(&mut self, q: &Query, ci: usize, one_row: Option<usize>, cols: &Columns, bits: &Bitmap) {
        // The grouped field is chosen once per chunk, not per event: the common keys (a table
        // id read from one column) get a loop of their own.
        let n = match q.group.id {
            FieldId::ProcName | FieldId::ProcExe | FieldId::ProcCmdline | FieldId::ProcPpid => {
                self.feed_by(q, ci, one_row, cols, bits, id(&cols.proc))
            }
            FieldId::ProcPid => self.feed_by(q, ci, one_row, cols, bits, id(&cols.pid)),
            FieldId::ThreadTid => self.feed_by(q, ci, one_row, cols, bits, id(&cols.tid)),
            FieldId::FdName | FieldId::FdType | FieldId::FdDirectory | FieldId::FdFilename | FieldId::FdDev => {
                self.feed_by(q, ci, one_row, cols, bits, id(&cols.file))
            }
            // When most rows match, the keys are built for every row in loops of their own
            // ahead of the per-event work; for a few, only theirs are.
            _ if bits.count_ones() >= cols.len() / 2 && small_type_keys(q.group, cols, &mut self.keys) => {
                let keys = std::mem::take(&mut self.keys);
                let n = self.feed_by(q, ci, one_row, cols, bits, |i| keys.get(i).map_or(0, |&k| u64::from(k)));
                self.keys = keys;
                n
            }
            _ => self.feed_by(q, ci, one_row, cols, bits, |i| group_key(q.group, cols, i)),
        };
        if n > 0 {
            self.per_chunk.push((ci, n));
        }
    }

    /// [`Acc::feed`] with the group key of row `i` given by `key`; returns the rows taken.
    #[inline(always)]
    fn feed_by(
        &mut self,
        q: &Query,
        ci: usize,
        one_row: Option<usize>,
        cols: &Columns,
        bits: &Bitmap,
        key: impl Fn(usize) -> u64,
    ) -> u64 {
        let (start, end, interval) = (q.start, q.end(), q.interval.max(1));
        let (ts_col, lat_col) = (&cols.ts[..], &cols.latency[..]);
        let columns = spectro::ColumnTable::get();
        let Acc {
            spectro,
            groups,
            slowest,
            ..
        } = self;
        let keep_slowest = slowest.k > 0;
        // Takes row `i` into the accumulators (a macro, so it is inlined in both loops).
        // `$bin` counts the event in spectrogram column `$col`.
        macro_rules! take {
            ($i:expr, $lat:expr, |$col:ident| $bin:expr) => {{
                let (i, lat) = ($i, $lat);
                // One bucket computation serves the spectrogram column and the histogram.
                let b = hist::bucket(lat);
                let $col = columns.column(b, lat);
                $bin;
                groups.hist(key(i), || cols.event(i)).add_in_bucket(b, lat);
                if keep_slowest {
                    slowest.push(Slow {
                        latency: lat,
                        chunk: ci as u32,
                        row: i as u32,
                    });
                }
            }};
        }
        let mut n = 0u64;
        if let Some(row) = one_row.filter(|_| ts_col.len() != cols.len()) {
            // One row for the whole chunk: count its cells here, add them to the row once.
            let mut cells = [0u64; spectro::COLS];
            if bits.len() == lat_col.len() && bits.count_ones() == lat_col.len() {
                // Every row matches (no filter, or one every row passes): no bitmap to walk.
                for (i, &lat) in lat_col.iter().enumerate() {
                    take!(i, lat, |col| cells[col] += 1);
                }
                n = lat_col.len() as u64;
            } else {
                for i in bits.iter_ones() {
                    if let Some(&lat) = lat_col.get(i) {
                        n += 1;
                        take!(i, lat, |col| cells[col] += 1);
                    }
                }
            }
            for (col, &k) in cells.iter().enumerate().filter(|(_, &k)| k > 0) {
                spectro.add_to_row(row, col, k);
            }
            return n;
        }
        // The spectrogram row of the last event: a chunk's events are nearly in time order, so
        // most share their neighbour's row and need no division.
        let (mut row_lo, mut row_hi, mut row) = (u64::MAX, 0u64, 0usize);
        for i in bits.iter_ones() {
            let (Some(&ts), Some(&lat)) = (ts_col.get(i), lat_col.get(i)) else {
                continue;
            };
            if ts < start || ts >= end {
                continue;
            }
            n += 1;
            if ts < row_lo || ts >= row_hi {
                let r = (ts - start) / interval;
                row_lo = start + r * interval;
                row_hi = row_lo.saturating_add(interval);
                row = usize::try_from(r).unwrap_or(usize::MAX);
            }
            take!(i, lat, |col| spectro.add_to_row(row, col, 1));
        }
        n
    }
}

/// The spectrogram row every event of a chunk falls in, when its summary puts the whole chunk
/// inside one row of the view (so its timestamps need not be decoded).
fn one_row(q: &Query, s: &ChunkSummary) -> Option<usize> {
    let (start, end, interval) = (q.start, q.end(), q.interval.max(1));
    let inside = s.min_ts >= start && s.max_ts < end && s.min_ts <= s.max_ts;
    let row = |t: u64| (t - start) / interval;
    (inside && row(s.min_ts) == row(s.max_ts)).then(|| usize::try_from(row(s.min_ts)).ok())?
}

/// The scan that answers `q`, before its accumulators: the view's chunks, the columns the
/// filter and the aggregates read (timestamps only for chunks that straddle a row or the view's
/// edges: a whole-capture view has few, the others' rows come from their summaries), split
/// between up to two threads (the machine this was built for has two cores), stopped when `q`
/// is superseded.
fn scan_for<'a, F>(
    reader: &'a Reader,
    q: &'a Query,
    chunks: &'a [usize],
    ts_for: &'a F,
    stale: &'a (dyn Fn() -> bool + Sync),
) -> Scan<'a, std::fs::File>
where
    F: Fn(usize) -> ColSet + Sync,
{
    let want = ColSet::NONE.with(Col::Latency).union(group_cols(q.group));
    let threads = std::thread::available_parallelism().map_or(1, usize::from).clamp(1, 2);
    // Below a few chunks a second thread costs more than it saves.
    let threads = if chunks.len() < 4 { 1 } else { threads };
    Scan::new(reader, q.filter.as_deref())
        .columns(want)
        .columns_for(ColSet::NONE.with(Col::Ts), ts_for)
        .chunks(chunks)
        .threads(threads)
        // Every accumulator here is order-free (counts, histograms, a sorted top, per-chunk
        // counts sorted below): a thread slowed by the rest of the machine takes fewer chunks.
        .any_order()
        .cancel(stale)
}

/// Which extra columns chunk `i` needs for `q`: timestamps unless it lies within one row.
fn ts_for(reader: &Reader, q: &Query, i: usize) -> ColSet {
    match reader.chunks().get(i).map(|c| one_row(q, &c.summary)) {
        Some(Some(_)) => ColSet::NONE,
        _ => ColSet::NONE.with(Col::Ts),
    }
}

/// Decode, while the viewer is idle, the columns `q` read into `cache` (what fits), so the
/// next question over the same chunks skips decoding; stops as soon as `q` is superseded.
/// Returns whether it finished.
pub fn warm(reader: &Reader, cache: &ColumnCache, q: &Query, cancel: &Cancel) -> Result<bool, String> {
    let chunks: Vec<usize> = reader.chunks_in(q.start, q.end()).collect();
    let ts = |i: usize| ts_for(reader, q, i);
    // Nothing to do when every chunk's columns are held already.
    let mut want = ColSet::NONE.with(Col::Latency).union(group_cols(q.group));
    if let Some(f) = &q.filter {
        want = want.union(f.columns());
    }
    if chunks.iter().all(|&i| cache.holds(i, want.union(ts(i)))) {
        return Ok(true);
    }
    // Stop when superseded, or once the cache is full of what this view reads: the rest
    // would be decoded for nothing.
    let stale = || cancel.is_stale(q.gen) || cache.full();
    let done = scan_for(reader, q, &chunks, &ts, &stale)
        .skip_damaged()
        .cache(cache, true)
        .run(|| (), |_, _, _, _| (), |_, _| ())
        .map_err(|e| e.to_string())?;
    Ok(done.is_some())
}

/// A latency that at least [`Query::slowest`] events of the view reach, from the chunk
/// summaries (0 when they cannot tell): the slowest are found among those events only, instead
/// of every event being a candidate until a thread has seen that many. Only without a filter
/// (a summary counts every event of its chunk), and only from chunks wholly in the view.
fn slow_floor(q: &Query, chunks: &[iocap_format::ChunkInfo]) -> u64 {
    if q.slowest == 0 || q.filter.is_some() {
        return 0;
    }
    let mut per_bucket = [0u64; iocap_format::LOG2_BUCKETS];
    for c in chunks {
        let s = &c.summary;
        if s.min_ts >= q.start && s.max_ts < q.end() && s.min_ts <= s.max_ts {
            for (total, n) in per_bucket.iter_mut().zip(&s.log2_hist) {
                *total = total.saturating_add(*n);
            }
        }
    }
    // From the slowest bucket down, the first whose events and all slower ones are enough.
    let mut seen = 0u64;
    for b in (0..per_bucket.len()).rev() {
        seen = seen.saturating_add(per_bucket[b]);
        if seen >= q.slowest as u64 {
            return iocap_format::log2_bucket_range(b).0;
        }
    }
    0
}

/// Answer `q` over `reader`, taking decoded columns from `cache` when given (it must be this
/// capture's; it is only read: [`warm`] fills it); `None` when cancelled.
pub fn run(reader: &Reader, cache: Option<&ColumnCache>, q: &Query, cancel: &Cancel) -> Result<Option<Answer>, String> {
    let chunks: Vec<usize> = reader.chunks_in(q.start, q.end()).collect();
    let ts = |i: usize| ts_for(reader, q, i);
    let stale = || cancel.is_stale(q.gen);
    // A damaged chunk is left out (and said) rather than losing the whole view.
    let mut scan = scan_for(reader, q, &chunks, &ts, &stale).skip_damaged();
    if let Some(c) = cache {
        scan = scan.cache(c, false);
    }
    let infos = reader.chunks();
    let floor = slow_floor(q, infos);
    let acc = scan
        .run(
            || Acc::new(q, floor),
            |acc, ci, cols, bits| {
                let row = infos.get(ci).and_then(|c| one_row(q, &c.summary));
                acc.feed(q, ci, row, cols, bits)
            },
            Acc::merge,
        )
        .map_err(|e| e.to_string())?;
    let Some((acc, stats)) = acc else { return Ok(None) };
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
    let slowest = acc.slowest.into_sorted();
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
        damaged: stats.damaged,
    }))
}
