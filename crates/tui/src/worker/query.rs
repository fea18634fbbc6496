//! The viewer's one question to a capture: "within this time view and filter, what is the
//! spectrogram, the latency histogram, the top values of a field, and which events match?"
//! (and, while shown, iostat's figures for the block requests among them).
//!
//! [`answer`] answers it with `iocap-analysis`'s [`Scan`] over the view's chunks (the same scan
//! driver, histogram and spectrogram `iocap report` uses): chunks whose summary cannot match
//! are skipped, only the columns the filter and the aggregates read are decoded, the filter
//! yields a bitmap, and the accumulators take the matching rows, block requests by the view's
//! [`Measure`] (their device time, queue time or both; calls always by their latency). Chunks that lie within one
//! spectrogram row need no timestamps (their row comes from the summary), and chunks whose
//! summary proves every event matches need neither the filter nor its columns. Nothing is kept
//! per event except, when the list is sorted by latency, the [`SLOWEST`] slowest (16 bytes
//! each). The scan checks the [`Cancel`] token between chunks, so a superseded question stops
//! within one chunk's work.
//!
//! A [`ColumnCache`] (the worker keeps one per capture, [`CACHE_BUDGET`] bytes) is read by
//! [`answer`] and filled by [`warm`], which the worker calls while idle after each answer: the
//! first question costs no more than without a cache, the next one over the same chunks skips
//! decoding.
//!
//! An answer is folded from chunks into [`Totals`] (every accumulator mergeable, the groups by
//! printed value), so it can be extended: a capture being recorded grows by chunks at its end,
//! and a question asked again of the grown capture ([`Query::extends`] the last one) scans only
//! the new chunks and adds them to what the worker kept ([`Kept`], [`answer`]), instead of
//! scanning the view again.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iocap_analysis::group::{Feed, Slots};
use iocap_analysis::rollups::{self, within_keys, RollupFilter};
use iocap_analysis::slowest::{self, Slowest};
use iocap_analysis::flame::{By, Flame, Weight};
use iocap_analysis::iostat::DeviceInterval;
use iocap_analysis::{
    hist, spectro, ColumnCache, Damage, DiskSplit, FieldGroups, GroupBy, IoStat, LatencyHist, Measure, Scan,
    Spectrogram,
};
use iocap_analysis::units;
use iocap_filter::fields::{self, FieldId, FieldInfo, Value};
use iocap_filter::{Bitmap, Compiled};
use iocap_format::{
    cell_parts, BlockOp, ChunkInfo, ChunkSummary, Class, Col, ColSet, Columns, Event, Liveness,
    Meta, Reader, Rollup, Tables, WAIT_COLS,
};

pub use iocap_analysis::slowest::Slow;


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
    /// The capture as the question sees it: the snapshot the filter was compiled against (a
    /// capture being recorded grows, and its tables with it).
    pub reader: Arc<Reader>,
    /// The same question as generation `extends`, of a capture that has grown since: only
    /// the chunks it did not have need a scan, when the worker kept that answer ([`Kept`]).
    pub extends: Option<u64>,
    /// The applied filter, compiled; `None` matches everything.
    pub filter: Option<Arc<Compiled>>,
    /// The applied filter's text (empty for none): what [`near_miss`] reads again when
    /// nothing matched.
    pub filter_text: String,
    /// Start of the view (first spectrogram row), ns since boot.
    pub start: u64,
    /// Length of a row, ns.
    pub interval: u64,
    /// Spectrogram rows in the view; the view ends at `start + rows × interval`.
    pub rows: usize,
    /// What block requests are measured by in the spectrogram, the histogram and the
    /// breakdown's percentiles (calls always by their latency).
    pub measure: Measure,
    /// Field the breakdown groups by.
    pub group: &'static FieldInfo,
    /// Whether each group's calls' latency is split into disk time and the rest (it costs
    /// two more columns, read only while the breakdown shows it).
    pub split: bool,
    /// How many of the slowest matching events to keep ([`SLOWEST`] when the list is sorted
    /// by latency, 0 when not: keeping them costs a scan time).
    pub slowest: usize,
    /// Also count the filter's matches in the whole capture ([`count_whole`]), after the
    /// answer: the view holds part of it, and the side panes say of how many theirs are.
    pub whole: bool,
    /// Also compute iostat's figures for the matching block requests in view
    /// ([`Answer::iostat`]; they cost seven more columns, read only while shown).
    pub iostat: bool,
    /// Also fold the matching calls' stacks of this kind, weighted by latency
    /// ([`Answer::flame`]; while the flame graph is shown).
    pub flame: Option<By>,
}

impl Query {
    /// End of the view, ns since boot: `start + rows × interval` (saturating).
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
    /// The value as the pane shows it ([`label`]): a pid with its process's name, a size in
    /// K and M; empty for the absent value.
    pub label: String,
    /// Matching events in the view with this value.
    pub count: u64,
    /// Their 99th percentile latency, ns.
    pub p99: u64,
    /// Their calls' latency as disk time and the rest, when the query asked ([`Query::split`]).
    pub disk: DiskSplit,
}

/// Where a matching event is: chunk index and row in the chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventRef {
    /// Index of the chunk in the capture.
    pub chunk: usize,
    /// Row in the chunk (counted as a [`super::rows::RowsQuery`] says, where it is one).
    pub row: usize,
}

impl EventRef {
    /// Where one of the slowest events is.
    pub fn of(s: &Slow) -> EventRef {
        EventRef {
            chunk: s.chunk as usize,
            row: s.row as usize,
        }
    }
}

/// The answer to a [`Query`].
#[derive(Clone, Debug)]
pub struct Answer {
    /// Generation of the query answered.
    pub gen: u64,
    /// The view's spectrogram, exact.
    pub spectro: Spectrogram,
    /// Latencies of the events matching in the view, ns.
    pub hist: LatencyHist,
    /// Events matching in the view.
    pub matched: u64,
    /// The breakdown: at most [`TOP_GROUPS`] values, most events first.
    pub groups: Vec<GroupRow>,
    /// Distinct values of the grouped field among matching events.
    pub group_count: usize,
    /// Matching events per chunk, in chunk (time) order, chunks with none left out.
    pub per_chunk: Vec<(usize, u64)>,
    /// The slowest matching events (at most [`Query::slowest`]), slowest first.
    pub slowest: Vec<Slow>,
    /// Chunks of the view that could not be read: the answer is the rest's.
    pub damaged: Vec<Damage>,
    /// Chunks answered from their rollups rather than their columns (read by the tests and
    /// the ring bench).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub rolled: usize,
    /// iostat's figures for each disk over the view (up to the capture's end), from the
    /// matching block requests issued in it, when the query asked ([`Query::iostat`]).
    pub iostat: Option<Vec<DeviceInterval>>,
    /// The matching calls in view by stack, folded and weighted by latency, when the query
    /// asked ([`Query::flame`]), and how many calls had such a stack.
    pub flame: Option<(Vec<(String, u64)>, u64)>,
}

/// Cancellation: a query is stale once the shared generation moved past its own.
#[derive(Clone, Debug, Default)]
pub struct Cancel(pub Arc<AtomicU64>);

impl Cancel {
    /// Whether a newer query than generation `gen` was asked: its scan can stop.
    pub fn is_stale(&self, gen: u64) -> bool {
        self.0.load(Ordering::Relaxed) != gen
    }
}

/// What one scan thread accumulates over its share of the chunks.
struct Acc<'r> {
    spectro: Spectrogram,
    /// Every matching event is in exactly one group: the view's histogram is their merge.
    groups: FieldGroups<'r>,
    per_chunk: Vec<(usize, u64)>,
    slowest: Slowest,
    /// A chunk's measured values, when they are not its latency column.
    measured: Vec<u64>,
    /// The view's block requests by disk, when asked.
    iostat: Option<IoStat>,
    /// The view's calls by stack, when asked.
    flame: Option<Flame>,
}

/// iostat's statistics for `q`'s view, when it asks: one interval, the whole view (its rates
/// are then taken over the part of it the capture covers, [`IoStat::totals_until`]).
fn view_iostat(q: &Query) -> Option<IoStat> {
    // `new` only fails on an empty or absurd interval.
    let window = q.end().saturating_sub(q.start).max(1);
    q.iostat
        .then(|| IoStat::new(q.start, q.start.saturating_add(window), window).ok())
        .flatten()
}

impl<'r> Acc<'r> {
    /// Accumulators for `q`.
    fn new(q: &Query, slow_floor: u64, meta: &'r Meta, tables: &'r Tables) -> Acc<'r> {
        Acc {
            spectro: Spectrogram::new(q.start, q.interval, q.rows),
            groups: FieldGroups::new(q.group, meta, tables),
            per_chunk: Vec::new(),
            slowest: Slowest::new(q.slowest, slow_floor),
            measured: Vec::new(),
            iostat: view_iostat(q),
            flame: q.flame.map(Flame::new),
        }
    }

    fn merge(&mut self, o: Acc<'r>) {
        self.spectro.merge(&o.spectro);
        self.groups.merge(o.groups);
        self.per_chunk.extend(o.per_chunk);
        self.slowest.merge(o.slowest);
        if let (Some(a), Some(b)) = (&mut self.iostat, &o.iostat) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (&mut self.flame, o.flame) {
            a.merge(b);
        }
    }

    /// The matching calls of a chunk that begin in the view into the flame graph's
    /// stacks. `one_row`: the chunk lies in the view, its times not decoded.
    fn flame(&mut self, q: &Query, one_row: bool, cols: &Columns, bits: &Bitmap) {
        let Some(fl) = &mut self.flame else { return };
        for i in bits.iter_ones() {
            if one_row || cols.ts.get(i).is_some_and(|&ts| ts >= q.start && ts < q.end()) {
                fl.add(cols, i);
            }
        }
    }

    /// The matching block requests of a chunk issued in the view into iostat's figures (a loop
    /// of its own: the per-event loop stays as it is when they are not shown).
    fn iostat(&mut self, q: &Query, cols: &Columns, bits: &Bitmap) {
        let Some(st) = &mut self.iostat else { return };
        for i in bits.iter_ones() {
            let (Some(&class), Some(&ts)) = (cols.class.get(i), cols.ts.get(i)) else {
                continue;
            };
            if class != Class::Block as u8 || ts < q.start || ts >= q.end() {
                continue;
            }
            let at = |v: &[u64]| v.get(i).copied().unwrap_or(0);
            let op = BlockOp::from_code(cols.op.get(i).copied().unwrap_or(0));
            let dev = cols.dev.get(i).copied().unwrap_or(0);
            st.add(dev, op, at(&cols.bytes), ts, at(&cols.queue), at(&cols.latency));
        }
    }

    /// Take the matching rows of chunk `ci` that fall inside the view. `one_row` is the
    /// spectrogram row of a chunk that lies within one row of the view (its timestamps were not
    /// decoded: they would say nothing more).
    fn feed(&mut self, q: &Query, ci: usize, one_row: Option<usize>, cols: &Columns, bits: &Bitmap) {
        self.iostat(q, cols, bits);
        self.flame(q, one_row.is_some(), cols, bits);
        let Acc {
            spectro,
            groups,
            per_chunk,
            slowest,
            measured,
            iostat: _,
            flame: _,
        } = self;
        let rows = ViewRows {
            q,
            ci,
            one_row,
            cols,
            bits,
            spectro,
            slowest,
            measured,
        };
        let n = groups.feed(cols, bits, rows);
        if n > 0 {
            per_chunk.push((ci, n));
        }
    }
}

impl Acc<'_> {
    /// Take chunk `ci`, which lies within spectrogram row `row`, from its rollup: the keys
    /// `bits` keeps, each with its latency cells.
    fn feed_rollup(&mut self, ci: usize, row: usize, rollup: &Rollup, bits: &Bitmap) {
        let Acc {
            spectro,
            groups,
            per_chunk,
            ..
        } = self;
        let n = groups.feed(&rollup.keys, bits, RollupRows { row, rollup, bits, spectro });
        if n > 0 {
            per_chunk.push((ci, n));
        }
    }
}

/// The keys of a chunk's rollup into the spectrogram row the chunk lies in and their groups
/// ([`Acc::feed_rollup`]); returns the events taken.
struct RollupRows<'a> {
    row: usize,
    rollup: &'a Rollup,
    bits: &'a Bitmap,
    spectro: &'a mut Spectrogram,
}

impl Feed for RollupRows<'_> {
    type Out = u64;

    fn feed<K: Fn(usize) -> u64>(self, key: K, groups: &mut Slots) -> u64 {
        let RollupRows { row, rollup, bits, spectro } = self;
        let mut cells = [0u64; spectro::COLS];
        let mut n = 0u64;
        for k in bits.iter_ones() {
            let Some(t) = rollup.totals.get(k) else { continue };
            let g = groups.get(key(k), || rollup.keys.event(k));
            let buckets = rollup.cells_of(k).iter().map(|&(c, m)| {
                let (b, col) = cell_parts(c);
                cells[col] += u64::from(m);
                (b, u64::from(m))
            });
            g.hist.add_buckets(buckets, t.min, t.max, t.sum);
            n += t.count;
        }
        for (col, &k) in cells.iter().enumerate().filter(|(_, &k)| k > 0) {
            spectro.add_to_row(row, col, k);
        }
        n
    }
}

/// Whether `q` can be answered, for a chunk inside one spectrogram row, from the chunk's
/// rollup, besides its filter ([`RollupFilter`]): what it reads of each event is the rollup's
/// key (the grouped field's columns) and its latency (the measure is latency; no disk split,
/// iostat or slowest, which need more of each event).
fn rollup_answers(q: &Query) -> bool {
    q.measure.is_latency()
        && !q.split
        && !q.iostat
        && q.flame.is_none()
        && q.slowest == 0
        && within_keys(FieldGroups::columns(q.group))
}

/// Threads reading rollups: each is a few kilobytes, so two keep up with the disk.
const ROLLUP_THREADS: usize = 2;

/// Fold the chunks of `chunks` that lie within one spectrogram row and have a rollup into
/// `acc` from their rollups, on up to two threads; returns the chunks left for a scan (the
/// others, and those whose rollup could not be used), or `None` when `q` was superseded.
fn fold_rollups<'r>(
    q: &Query,
    reader: &'r Reader,
    chunks: &[usize],
    make: &(dyn Fn() -> Acc<'r> + Sync),
    stale: &(dyn Fn() -> bool + Sync),
) -> Option<(Vec<usize>, Option<Acc<'r>>)> {
    let infos = reader.chunks();
    // Each chunk the rollup can answer, with its row and the filter its summary leaves (none:
    // every event). Cheapest test first: a file before 1.12 has no rollup, and a chunk
    // straddling rows needs no look at the filter.
    let plan = |i: usize| {
        let s = &infos.get(i)?.summary;
        let row = reader.has_rollup(i).then(|| one_row(q, s)).flatten()?;
        // The listing says the rollup's keys lack the grouped field (the file, without a file
        // rollup): the columns answer.
        if !reader.rollup_may_hold(i, FieldGroups::columns(q.group)) {
            return None;
        }
        RollupFilter::of_chunk(q.filter.as_deref(), reader, i).map(|f| (row, f))
    };
    let (acc, rest) = rollups::fold_then_rest(
        reader,
        chunks,
        plan,
        ROLLUP_THREADS,
        stale,
        make,
        |acc, i, (row, f), r, bits| {
            // A breakdown by pid needs a rollup since 1.16.
            if !r.holds(FieldGroups::columns(q.group)) {
                return false;
            }
            let Some(kept) = f.apply(r, bits) else {
                return false;
            };
            acc.feed_rollup(i, *row, &kept, bits);
            true
        },
        Acc::merge,
    )?;
    Some((rest, acc))
}

/// The per-event loop of [`Acc::feed`] over one chunk: each matching row in the view into the
/// spectrogram, its group and the slowest. [`FieldGroups::feed`] runs it with the group key
/// that suits the grouped field; it returns the rows taken.
struct ViewRows<'a> {
    q: &'a Query,
    ci: usize,
    one_row: Option<usize>,
    cols: &'a Columns,
    bits: &'a Bitmap,
    spectro: &'a mut Spectrogram,
    slowest: &'a mut Slowest,
    measured: &'a mut Vec<u64>,
}

impl Feed for ViewRows<'_> {
    type Out = u64;

    #[inline(always)]
    fn feed<K: Fn(usize) -> u64>(self, key: K, groups: &mut Slots) -> u64 {
        let ViewRows {
            q,
            ci,
            one_row,
            cols,
            bits,
            spectro,
            slowest,
            measured,
        } = self;
        let (start, end, interval) = (q.start, q.end(), q.interval.max(1));
        // What is plotted (`lat` below) is the measure; the slowest are by latency, as the
        // list shows them.
        let (ts_col, lat_col, raw_col) = (&cols.ts[..], q.measure.values(cols, measured), &cols.latency[..]);
        let (split, class_col, disk_col) = (q.split, &cols.class[..], &cols.disk_time[..]);
        let columns = spectro::ColumnTable::get();
        let keep_slowest = slowest.keeps();
        // Takes row `i` into the accumulators (a macro, so it is inlined in both loops).
        // `$bin` counts the event in spectrogram column `$col`.
        macro_rules! take {
            ($i:expr, $lat:expr, |$col:ident| $bin:expr) => {{
                let (i, lat) = ($i, $lat);
                // One bucket computation serves the spectrogram column and the histogram.
                let b = hist::bucket(lat);
                let $col = columns.column(b, lat);
                $bin;
                let g = groups.get(key(i), || cols.event(i));
                g.hist.add_in_bucket(b, lat);
                if split && class_col.get(i).is_some_and(|&c| c != Class::Block as u8) {
                    g.disk.add(lat, disk_col.get(i).copied().unwrap_or(0));
                    let runq = cols.runq.get(i).copied().unwrap_or(0);
                    g.disk.add_anatomy(runq, WAIT_COLS.map(|c| cols.get(c).wide(i) as u64));
                }
                if keep_slowest {
                    slowest.push(Slow {
                        latency: raw_col.get(i).copied().unwrap_or(lat),
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

/// The names of the processes by pid, for a field whose values are pids (empty for the others):
/// the last table entry of each pid, the name it had last.
pub struct PidNames<'t>(HashMap<u32, &'t str>);

impl<'t> PidNames<'t> {
    /// The names `field`'s labels need from `tables`.
    pub fn for_field(field: &FieldInfo, tables: &'t Tables) -> PidNames<'t> {
        let pids = matches!(field.id, FieldId::ProcPid | FieldId::ProcPpid | FieldId::ThreadTid);
        PidNames(match pids {
            true => tables.procs().iter().map(|p| (p.pid, tables.string(p.name))).collect(),
            false => HashMap::new(),
        })
    }
}

/// How the breakdown shows value `v` of `field`, `e` being an event that has it: a pid (a
/// parent's, a thread's process's) with its process's name (`1234 fio`), a uid with its user's
/// (`1000 alice`), a container's id with its name (`2b577d8fa9ac db`; `host` alone), a size in K and M where that is exact (`64.0K`, else `4100B`), anything else
/// as the filter reads it; empty for the absent value. Names are escaped already: they come
/// from the tables.
pub fn label(field: &FieldInfo, v: &Value, e: &Event, meta: &Meta, tables: &Tables, names: &PidNames) -> String {
    let pid = match (field.id, v) {
        (_, Value::Absent) => return String::new(),
        (FieldId::ProcPid | FieldId::ProcPpid, &Value::UInt(p)) => u32::try_from(p).ok(),
        (FieldId::ThreadTid, _) => Some(e.pid),
        // A uid with its user's name, a container's id with its name.
        (FieldId::UserUid | FieldId::ContainerId, _) => {
            let named = match field.id {
                FieldId::UserUid => FieldId::UserName,
                _ => FieldId::ContainerName,
            };
            return match fields::value(fields::info(named), e, meta, tables) {
                Value::Str(name) if name != v.to_string() => format!("{v} {name}"),
                _ => v.to_string(),
            };
        }
        (_, &Value::Bytes(b)) => return size(b),
        _ => None,
    };
    match pid.and_then(|p| names.0.get(&p)) {
        Some(name) => format!("{v} {name}"),
        None => v.to_string(),
    }
}

/// A size as the viewer writes it (`4.0K`) when that reads back exactly, else in bytes.
fn size(b: u64) -> String {
    let unit = (0..5).take_while(|&u| b >> (10 * (u + 1)) > 0).count() as u32;
    // One decimal of the unit: exact when ten times the size is a whole number of units.
    match u128::from(b) * 10 % (1u128 << (10 * unit)) {
        0 => units::bytes(b, units::Style::Terminal),
        _ => format!("{b}B"),
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
    let want = columns(q);
    // One per core; below a few chunks a second thread costs more than it saves.
    let threads = if chunks.len() < 4 { 1 } else { iocap_analysis::scan::default_threads(chunks.len()) };
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


/// The columns every chunk of `q`'s scan needs besides the filter's: latency (and the
/// measure's), the grouped field's key, the class and disk time when the breakdown splits
/// calls' latency, and what iostat reads of a block request when it is shown.
fn columns(q: &Query) -> ColSet {
    let mut want = q.measure.columns().union(FieldGroups::columns(q.group));
    if q.split {
        want = WAIT_COLS
            .into_iter()
            .fold(want.with(Col::Class).with(Col::DiskTime).with(Col::Runq), ColSet::with);
    }
    if q.iostat {
        let block = [Col::Class, Col::Ts, Col::Dev, Col::Op, Col::Bytes, Col::Queue, Col::Latency];
        want = want.union(block.into_iter().collect());
    }
    if q.flame.is_some() {
        want = want.union(Flame::COLUMNS.into_iter().collect());
    }
    want
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
pub fn warm(q: &Query, cache: &ColumnCache, cancel: &Cancel) -> Result<bool, String> {
    let reader = &*q.reader;
    let chunks: Vec<usize> = reader.chunks_in(q.start, q.end()).collect();
    let ts = |i: usize| ts_for(reader, q, i);
    // Nothing to do when every chunk's columns are held already.
    let mut want = columns(q);
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

/// Where the slowest events of `chunks` can start: known from the chunk summaries only
/// without a filter (a summary counts every event of its chunk).
fn slow_floor(q: &Query, infos: &[ChunkInfo], chunks: &[usize]) -> u64 {
    if q.filter.is_some() || q.slowest == 0 {
        return 0;
    }
    let scanned: Vec<ChunkInfo> = chunks.iter().filter_map(|&i| infos.get(i).cloned()).collect();
    slowest::floor(&scanned, q.start, q.end(), q.slowest)
}

/// Events matching `q`'s filter in `chunks` of its capture, whatever the view: the filter
/// alone (chunks whose summary rules them out or in cost no filter), taking columns from
/// `cache` when given, leaving unreadable chunks out as the answer does; `None` when
/// superseded.
fn count(q: &Query, chunks: &[usize], cache: Option<&ColumnCache>, cancel: &Cancel) -> Option<u64> {
    let stale = || cancel.is_stale(q.gen);
    // Chunks whose rollup the filter can be judged on are counted from it.
    let (from_rollups, rest) = count_rollups(q, chunks, &stale)?;
    let chunks = &rest[..];
    let threads = iocap_analysis::scan::default_threads(chunks.len());
    let mut scan = Scan::new(&q.reader, q.filter.as_deref())
        .chunks(chunks)
        .threads(threads)
        .any_order()
        .cancel(&stale)
        .skip_damaged();
    if let Some(c) = cache {
        scan = scan.cache(c, false);
    }
    // Damage never fails a scan that skips it.
    let done = scan.run(|| (), |_, _, _, _| (), |_, _| ()).ok()??;
    Some(from_rollups + done.1.matched)
}

/// Events matching `q`'s filter in those of `chunks` whose rollup it can be judged on (what
/// the chunk's summary leaves of it reads only the keys' columns; any time view), and the
/// chunks left for a scan; `None` when superseded.
fn count_rollups(q: &Query, chunks: &[usize], stale: &(dyn Fn() -> bool + Sync)) -> Option<(u64, Vec<usize>)> {
    let (reader, infos) = (&*q.reader, q.reader.chunks());
    if q.filter.is_none() {
        return Some((0, chunks.to_vec()));
    }
    // Chunks the summary rules in or out whole are left to the scan, which counts them from
    // their summary.
    let plan = |i: usize| {
        let s = &infos.get(i)?.summary;
        match RollupFilter::of_chunk(q.filter.as_deref(), reader, i)? {
            f @ (RollupFilter::Keys(_) | RollupFilter::Cells(_)) if f.may_match(s) => Some(f),
            _ => None,
        }
    };
    let (total, rest) = rollups::fold_then_rest(
        reader,
        chunks,
        plan,
        ROLLUP_THREADS,
        stale,
        &|| 0u64,
        |n, _, f, r, bits| {
            let Some(kept) = f.apply(r, bits) else {
                return false;
            };
            *n += bits.iter_ones().filter_map(|k| kept.totals.get(k)).map(|t| t.count).sum::<u64>();
            true
        },
        |a, b| *a += b,
    )?;
    Some((total.unwrap_or(0), rest))
}

/// (Tests and the bench: the worker counts through [`count_whole`].) Events matching `q`'s
/// filter in the whole capture, whatever the view (every chunk counted); `None` when
/// superseded.
#[cfg(feature = "testing")]
pub fn count_all(q: &Query, cache: Option<&ColumnCache>, cancel: &Cancel) -> Option<u64> {
    let chunks: Vec<usize> = (0..q.reader.chunks().len()).collect();
    count(q, &chunks, cache, cancel)
}

/// What the scans of a question added up so far, in a form more chunks can be added to
/// ([`Totals::fold`]): every accumulator is mergeable, and the groups are kept by printed
/// value, which a later scan's groups merge into.
#[derive(Clone)]
pub struct Totals {
    spectro: Spectrogram,
    /// The groups by value as the filter reads it.
    groups: GroupBy<String>,
    /// How each value is shown ([`label`]), as the newest tables name it.
    labels: HashMap<String, String>,
    /// Every group's latencies together.
    hist: LatencyHist,
    per_chunk: Vec<(usize, u64)>,
    /// The slowest, sorted slowest first.
    slowest: Vec<Slow>,
    damaged: Vec<Damage>,
    /// Chunks taken from their rollups.
    rolled: usize,
    iostat: Option<IoStat>,
    flame: Option<Flame>,
}

impl Totals {
    /// Nothing yet, for `q`.
    pub fn new(q: &Query) -> Totals {
        Totals {
            spectro: Spectrogram::new(q.start, q.interval, q.rows),
            groups: GroupBy::new(),
            labels: HashMap::new(),
            hist: LatencyHist::new(),
            per_chunk: Vec::new(),
            slowest: Vec::new(),
            damaged: Vec::new(),
            rolled: 0,
            iostat: view_iostat(q),
            flame: q.flame.map(Flame::new),
        }
    }

    /// Scan `chunks` of `q`'s capture for `q` (chunks after those already added) and add what
    /// they hold, taking decoded columns from `cache` when given (it must be this capture's),
    /// and keeping there what is decoded when `fill` (a few new chunks: otherwise [`warm`]
    /// fills it while the viewer is idle). `false` when cancelled: then the totals are as they
    /// were.
    pub fn fold(
        &mut self,
        q: &Query,
        chunks: &[usize],
        cache: Option<&ColumnCache>,
        fill: bool,
        cancel: &Cancel,
    ) -> Result<bool, String> {
        let reader = &*q.reader;
        let ts = |i: usize| ts_for(reader, q, i);
        let stale = || cancel.is_stale(q.gen);
        // A damaged chunk is left out (and said) rather than losing the whole view.
        let mut scan = scan_for(reader, q, chunks, &ts, &stale).skip_damaged();
        if let Some(c) = cache {
            scan = scan.cache(c, fill);
        }
        let infos = reader.chunks();
        let floor = slow_floor(q, infos, chunks);
        let make = || Acc::new(q, floor, reader.meta(), reader.tables());
        // Chunks inside one row answered by their rollups, when the question reads no more
        // than they hold; the rest scanned.
        let (rest, rolled) = match rollup_answers(q) {
            true => match fold_rollups(q, reader, chunks, &make, &stale) {
                Some(r) => r,
                None => return Ok(false),
            },
            false => (chunks.to_vec(), None),
        };
        let acc = scan
            .chunks(&rest)
            .run(
                make,
                |acc, ci, cols, bits| {
                    let row = infos.get(ci).and_then(|c| one_row(q, &c.summary));
                    acc.feed(q, ci, row, cols, bits)
                },
                Acc::merge,
            )
            .map_err(|e| e.to_string())?;
        let Some((mut acc, stats)) = acc else { return Ok(false) };
        if let Some(r) = rolled {
            acc.merge(r);
            self.rolled += chunks.len() - rest.len();
        }
        self.spectro.merge(&acc.spectro);
        // Keys are finer than values (two proc ids may share a name): merged by printed value.
        let names = PidNames::for_field(q.group, reader.tables());
        let by = acc
            .groups
            .finish_by(|v, e| (v.to_string(), label(q.group, v, e, reader.meta(), reader.tables(), &names)));
        for ((value, label), g) in by.into_groups() {
            self.hist.merge(&g.hist);
            self.groups.add_group(value.clone(), g);
            self.labels.insert(value, label);
        }
        let mut per_chunk = acc.per_chunk;
        per_chunk.sort_unstable();
        self.per_chunk.extend(per_chunk);
        if !self.per_chunk.is_sorted() {
            self.per_chunk.sort_unstable();
        }
        self.slowest = slowest::merge_sorted(&self.slowest, &acc.slowest.into_sorted(), q.slowest);
        self.damaged.extend(stats.damaged);
        if let (Some(a), Some(b)) = (&mut self.iostat, &acc.iostat) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (&mut self.flame, acc.flame) {
            a.merge(b);
        }
        Ok(true)
    }

    /// The answer to `q` from what was added so far.
    pub fn answer(&self, q: &Query) -> Answer {
        let groups: Vec<GroupRow> = self
            .groups
            .top(TOP_GROUPS)
            .into_iter()
            .map(|(value, g)| GroupRow {
                value: value.clone(),
                label: self.labels.get(value).cloned().unwrap_or_default(),
                count: g.count(),
                p99: g.hist.percentile(99.0),
                disk: g.disk,
            })
            .collect();
        // iostat's rates are over the part of the view the capture covers.
        let iostat_end = q.end().min(iocap_analysis::capture_span(&q.reader).1.saturating_add(1));
        Answer {
            gen: q.gen,
            spectro: self.spectro.clone(),
            matched: self.hist.count(),
            hist: self.hist.clone(),
            groups,
            group_count: self.groups.len(),
            per_chunk: self.per_chunk.clone(),
            slowest: self.slowest.clone(),
            damaged: self.damaged.clone(),
            rolled: self.rolled,
            iostat: self.iostat.as_ref().map(|st| st.totals_until(iostat_end)),
            flame: (self.flame.as_ref()).map(|fl| (fl.folded(q.reader.tables(), Weight::Latency), fl.calls())),
        }
    }
}

/// What decides a question's answer besides its capture and filter: the view and what the
/// panes want of it.
#[derive(Clone, PartialEq, Eq)]
struct Shape {
    start: u64,
    interval: u64,
    rows: usize,
    measure: Measure,
    group: &'static str,
    split: bool,
    slowest: usize,
    iostat: bool,
    flame: Option<By>,
}

impl Shape {
    fn of(q: &Query) -> Shape {
        Shape {
            start: q.start,
            interval: q.interval,
            rows: q.rows,
            measure: q.measure,
            group: q.group.name,
            split: q.split,
            slowest: q.slowest,
            iostat: q.iostat,
            flame: q.flame,
        }
    }
}

/// The last answer the worker gave, kept so that the same question of a grown capture
/// ([`Query::extends`]) scans only the chunks added since.
pub struct Kept {
    gen: u64,
    shape: Shape,
    /// Chunks of the capture the totals looked at (those of them in the view): the first ones.
    chunks: usize,
    totals: Totals,
    /// Events matching in the whole capture, and over how many of its first chunks.
    whole: Option<(u64, usize)>,
}

/// Answer `q`, extending `kept` when `q` is the same question of a grown capture, else from
/// scratch; the answer's totals are kept in its place while the capture is being recorded.
/// `None` when cancelled (and nothing is kept).
pub fn answer(
    q: &Query,
    cache: Option<&ColumnCache>,
    cancel: &Cancel,
    kept: &mut Option<Kept>,
) -> Result<Option<Answer>, String> {
    let n = q.reader.chunks().len();
    let shape = Shape::of(q);
    let base = kept
        .take()
        .filter(|k| q.extends == Some(k.gen) && k.shape == shape && k.chunks <= n);
    let (mut totals, from, whole) = match base {
        Some(k) => (k.totals, k.chunks, k.whole),
        None => (Totals::new(q), 0, None),
    };
    let chunks: Vec<usize> = q.reader.chunks_in(q.start, q.end()).filter(|&i| i >= from).collect();
    // The few chunks of an extension go into the cache as they are read: the viewer is not
    // waiting on them, and the idle fill would decode them again.
    if !totals.fold(q, &chunks, cache, from > 0, cancel)? {
        return Ok(None);
    }
    let a = totals.answer(q);
    // Only a capture being recorded grows: the totals of another (every group's histogram,
    // the slowest) are not worth their memory.
    *kept = (q.reader.liveness() == Liveness::Live).then_some(Kept {
        gen: q.gen,
        shape,
        chunks: n,
        totals,
        whole,
    });
    Ok(Some(a))
}

/// Events matching `q`'s filter in the whole capture, after [`answer`] has kept `q`'s
/// totals: counted only in the chunks added since when it extends a question whose count is
/// kept; `None` when superseded.
pub fn count_whole(q: &Query, cache: Option<&ColumnCache>, cancel: &Cancel, kept: &mut Option<Kept>) -> Option<u64> {
    let n = q.reader.chunks().len();
    // Counted so far, and over how many chunks: none for a question not extended.
    let (before, from) = kept
        .as_ref()
        .filter(|k| k.gen == q.gen)
        .and_then(|k| k.whole)
        .unwrap_or_default();
    let chunks: Vec<usize> = (from..n).collect();
    let matched = before + count(q, &chunks, cache, cancel)?;
    if let Some(k) = kept.as_mut().filter(|k| k.gen == q.gen) {
        k.whole = Some((matched, n));
    }
    Some(matched)
}

/// For a question whose answer matched nothing: the clause to type instead, when the filter
/// asks for a string the capture's tables hold nowhere and they hold one near it
/// (`proc.name=fio` for `proc.name=FIO`), as `iocap report` says it. It reads the tables,
/// which takes a while on a large capture (0.5 s for 10^7 file entries), so the worker asks
/// it after sending the answer, once per filter.
pub fn near_miss(q: &Query) -> Option<String> {
    let f = iocap_filter::Filter::parse(&q.filter_text).ok()?;
    let near = f.near_miss(q.reader.meta(), q.reader.tables())?;
    Some(near.to_string())
}

/// (Tests and the bench: the worker answers through [`answer`].) Answer `q` from scratch,
/// taking decoded columns from `cache` when given (it must be this capture's; it is only
/// read: [`warm`] fills it); `None` when cancelled.
#[cfg(feature = "testing")]
pub fn run(q: &Query, cache: Option<&ColumnCache>, cancel: &Cancel) -> Result<Option<Answer>, String> {
    answer(q, cache, cancel, &mut None)
}
