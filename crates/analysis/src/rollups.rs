//! Questions answered from chunks' rollups ([`iocap_format::Rollup`]) instead of their columns.
//!
//! A rollup holds a chunk's events by key (class, process, pid, call number, op; in a file
//! rollup, since 1.17, the file too) with each key's
//! latency cells, exact count, min, max, latency sum and bytes (since 1.14, each cell's own).
//! A question whose filter, once the chunk's summary has decided what it can
//! ([`Compiled::given`]: an `evt.time` window around the chunk falls away), reads only the
//! key's columns, and which reads nothing more of each event than its latency (and bytes), is
//! answered exactly from the rollup: a few kilobytes per chunk instead of its columns. So is
//! one that also reads the latency, from the cells' totals, when no key has events on both
//! sides of one of its latency bounds inside one cell (`latency>1ms`: 1 ms is a cell bound,
//! and only an event of exactly 1 ms lies on both sides of `>`). The viewer (its
//! spectrogram rows, histogram and groups) and `iocap report` (histogram, bytes, groups) both
//! plan and read them here.

use std::borrow::Cow;
use std::sync::atomic::{AtomicUsize, Ordering};

use iocap_filter::{Bitmap, Compiled};
use iocap_format::{
    cell_range, key_cols, latency::BUCKETS, ChunkDecoder, ChunkSummary, Col, ColSet, Columns, KeyTotals, Reader,
    Rollup, Source,
};

/// Whether columns `c` are all among a rollup's keys (of a file rollup since 1.17: one without
/// files says no to `file`, from its listing, [`Reader::rollup_may_hold`]; one before 1.16
/// without pids to `pid`, when read, [`Rollup::holds`]).
pub fn within_keys(c: ColSet) -> bool {
    c.0 & !key_cols().0 == 0
}

/// How a filter applies to one chunk's rollup, once the chunk's summary has decided what it
/// can of it ([`RollupFilter::of`]).
pub enum RollupFilter {
    /// It keeps every event of the chunk (no filter, or the summary proves it).
    All,
    /// What is left reads only the keys' columns: it is evaluated on the keys.
    Keys(Compiled),
    /// What is left reads the keys' columns and the latency: it is decided cell by cell, on a
    /// rollup with its cells' totals ([`RollupFilter::apply`]).
    Cells(Compiled),
}

impl RollupFilter {
    /// How `filter` (`None`: every event) applies to the rollup of the chunk summed by `s`;
    /// `None` when what the summary leaves of it reads more than the keys' columns, and the
    /// chunk's columns are needed.
    pub fn of(filter: Option<&Compiled>, s: &ChunkSummary) -> Option<RollupFilter> {
        let Some(f) = filter else {
            return Some(RollupFilter::All);
        };
        let left = f.given(s);
        let cols = left.columns();
        if left.is_all() {
            Some(RollupFilter::All)
        } else if within_keys(cols) {
            Some(RollupFilter::Keys(left))
        } else if within_keys(without_latency(cols)) {
            Some(RollupFilter::Cells(left))
        } else {
            None
        }
    }

    /// [`RollupFilter::of`] for chunk `i` of `reader`, when its rollup is there to answer:
    /// `None` when the chunk has no rollup listed, the filter wants the cells' totals and
    /// the chunk has none (a file before 1.14), or the listing says its keys lack a column the
    /// filter reads (the file, in a chunk without a file rollup: [`Reader::rollup_may_hold`]).
    pub fn of_chunk<S: Source>(filter: Option<&Compiled>, reader: &Reader<S>, i: usize) -> Option<RollupFilter> {
        let s = &reader.chunks().get(i)?.summary;
        let f = reader.has_rollup(i).then(|| RollupFilter::of(filter, s))??;
        let may = reader.rollup_may_hold(i, f.key_columns());
        (may && (!f.wants_cells() || reader.has_cell_totals(i))).then_some(f)
    }

    /// The key columns this reads of a rollup.
    fn key_columns(&self) -> ColSet {
        match self {
            RollupFilter::All => ColSet::NONE,
            RollupFilter::Keys(f) | RollupFilter::Cells(f) => without_latency(f.columns()),
        }
    }

    /// Whether some event of a chunk with summary `s` may match (see
    /// [`Compiled::may_match`]).
    pub fn may_match(&self, s: &ChunkSummary) -> bool {
        match self {
            RollupFilter::All => s.events > 0,
            RollupFilter::Keys(f) | RollupFilter::Cells(f) => f.may_match(s),
        }
    }

    /// Whether [`RollupFilter::apply`] needs the rollup's cells' totals
    /// ([`Reader::rollup_with_cells`]).
    pub fn wants_cells(&self) -> bool {
        matches!(self, RollupFilter::Cells(_))
    }

    /// The part of `r` this keeps, with `bits` set to the keys it keeps events of: `r` itself
    /// when it keeps keys whole; else a rollup of the same keys, each with only the cells it
    /// keeps and their totals. `None` when the rollup cannot tell: it lacks its cells' totals
    /// (or they do not hold), or a key's events in one cell lie on both sides of a bound of
    /// the filter's latency.
    pub fn apply<'r>(&self, r: &'r Rollup, bits: &mut Bitmap) -> Option<Cow<'r, Rollup>> {
        match self {
            RollupFilter::All => bits.reset(r.keys.len(), true),
            // A rollup before 1.16 has no pids.
            RollupFilter::Keys(f) if !r.holds(f.columns()) => return None,
            RollupFilter::Keys(f) => f.eval(&r.keys, bits),
            RollupFilter::Cells(f) => return by_cells(f, r, bits).map(Cow::Owned),
        }
        Some(Cow::Borrowed(r))
    }
}

/// Columns `c` but the latency.
fn without_latency(c: ColSet) -> ColSet {
    ColSet(c.0 & !ColSet::NONE.with(Col::Latency).0)
}

/// What filter `f`, which reads the keys' columns and the latency, keeps of a cell.
enum Verdict {
    No,
    Every,
    /// The keys it keeps (a bitmap over the rollup's keys).
    Keys(Bitmap),
    /// The cell straddles a bound of the filter's latency: each key's events in it decide.
    Straddles,
}

/// The verdict of `f` on the events whose latencies lie in `[lo, hi]`, of the keys `keys`.
fn verdict(f: &Compiled, lo: u64, hi: u64, keys: &Columns) -> Verdict {
    // A summary of events of both classes whose latencies span the range: it decides the
    // filter's latency bounds, and nothing else ([`by_cells`]).
    let s = ChunkSummary {
        events: 2,
        syscalls: 1,
        blocks: 1,
        min_latency: lo,
        max_latency: hi,
        ..ChunkSummary::default()
    };
    if !f.may_match(&s) {
        return Verdict::No;
    }
    if f.all_match(&s) {
        return Verdict::Every;
    }
    let left = f.given(&s);
    if !within_keys(left.columns()) {
        return Verdict::Straddles;
    }
    let mut kept = Bitmap::default();
    left.eval(keys, &mut kept);
    Verdict::Keys(kept)
}

/// [`RollupFilter::apply`] for [`RollupFilter::Cells`].
fn by_cells(f: &Compiled, r: &Rollup, bits: &mut Bitmap) -> Option<Rollup> {
    // The summaries [`verdict`] makes decide the latency only: `f` must read nothing else a
    // summary decides (`evt.time`), as a filter [`RollupFilter::of`] leaves does not.
    if !r.has_cell_totals() || !r.holds(without_latency(f.columns())) {
        return None;
    }
    // The verdict on each distinct cell, over every latency it may hold: each is made when
    // the cell is first met (`slot[c]` is 1 + its index in `verdicts`).
    let mut slot = vec![0u16; 2 * BUCKETS];
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut cell_verdicts: Vec<u16> = Vec::with_capacity(r.cells.len());
    for &(c, _) in &r.cells {
        let at = slot.get_mut(usize::from(c))?;
        if *at == 0 {
            let (lo, hi) = cell_range(c);
            verdicts.push(verdict(f, lo, hi, &r.keys));
            *at = verdicts.len() as u16;
        }
        cell_verdicts.push(*at - 1);
    }
    // Only the keys with a cell the filter may keep need their cells' totals decoded.
    let may_keep = |k: usize| {
        cell_verdicts[r.span(k)]
            .iter()
            .any(|&v| match &verdicts[usize::from(v)] {
                Verdict::No => false,
                Verdict::Keys(keys) => keys.get(k),
                Verdict::Every | Verdict::Straddles => true,
            })
    };
    let totals = r.cell_totals_where(may_keep)?;
    let mut out = Rollup {
        chunk: r.chunk,
        keys: r.keys.clone(),
        with_bytes: r.with_bytes,
        with_pid: r.with_pid,
        with_file: r.with_file,
        ..Rollup::default()
    };
    bits.reset(r.keys.len(), false);
    for k in 0..r.ends.len() {
        let mut t = KeyTotals {
            count: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            bytes: 0,
        };
        for j in r.span(k) {
            let ((c, n), ct) = (r.cells[j], &totals[j]);
            // Where the cell straddles a bound, the key's own events in it decide, by their
            // smallest and largest (`latency>1ms` straddles the cell from 1 ms, but only an
            // event of exactly 1 ms makes it matter).
            let kept = match &verdicts[usize::from(cell_verdicts[j])] {
                Verdict::No => false,
                Verdict::Every => true,
                Verdict::Keys(keys) => keys.get(k),
                Verdict::Straddles => match verdict(f, ct.min, ct.max, &r.keys) {
                    Verdict::No => false,
                    Verdict::Every => true,
                    Verdict::Keys(keys) => keys.get(k),
                    Verdict::Straddles => return None,
                },
            };
            if kept {
                out.cells.push((c, n));
                out.cell_totals.push(*ct);
                t.count += u64::from(n);
                t.min = t.min.min(ct.min);
                t.max = t.max.max(ct.max);
                t.sum += ct.sum;
                t.bytes = t.bytes.saturating_add(ct.bytes);
            }
        }
        if t.count > 0 {
            bits.set(k, true);
        } else {
            t.min = 0;
        }
        out.totals.push(t);
        out.ends.push(out.cells.len() as u32);
    }
    Some(out)
}

/// `chunks` split by `plan`: those it has a plan for, with it, and the others.
pub fn plan<T>(chunks: &[usize], plan: impl Fn(usize) -> Option<T>) -> (Vec<(usize, T)>, Vec<usize>) {
    let (mut planned, mut rest) = (Vec::new(), Vec::new());
    for &i in chunks {
        match plan(i) {
            Some(p) => planned.push((i, p)),
            None => rest.push(i),
        }
    }
    (planned, rest)
}

/// What a chunk's plan says of the rollup it reads.
pub trait Plan {
    /// Whether it wants the rollup's cells' totals ([`Reader::rollup_with_cells`]).
    fn wants_cells(&self) -> bool;
}

impl Plan for RollupFilter {
    fn wants_cells(&self) -> bool {
        RollupFilter::wants_cells(self)
    }
}

/// A plan with something of the caller's (the viewer's spectrogram row).
impl<X> Plan for (X, RollupFilter) {
    fn wants_cells(&self) -> bool {
        self.1.wants_cells()
    }
}

/// Read the rollups of the `planned` chunks on up to `threads` threads (with their cells'
/// totals where their plan wants them), each into its own accumulator made by
/// `init` through `each` (given the chunk, its plan, the rollup and a bitmap to use; it returns
/// false, having added nothing, for a rollup that cannot answer: one whose keys lack a column
/// it reads besides its plan's filter's, as a grouped field's, [`Rollup::holds`]),
/// and merge them; returns the accumulator and the chunks whose rollup could not be used
/// (none, damaged, refused by `each`), for their columns to answer; `None` when `stale` says
/// the question was superseded.
pub fn over<A: Send, T: Plan + Sync, S: Source>(
    reader: &Reader<S>,
    planned: &[(usize, T)],
    threads: usize,
    stale: &(dyn Fn() -> bool + Sync),
    init: &(dyn Fn() -> A + Sync),
    each: impl Fn(&mut A, usize, &T, &Rollup, &mut Bitmap) -> bool + Sync,
    merge: impl Fn(&mut A, A),
) -> Option<(A, Vec<usize>)> {
    let next = AtomicUsize::new(0);
    let part = || {
        let (mut acc, mut dec, mut bits, mut failed) = (init(), ChunkDecoder::new(), Bitmap::default(), Vec::new());
        while let Some((i, plan)) = planned.get(next.fetch_add(1, Ordering::Relaxed)) {
            if stale() {
                return None;
            }
            // Without cells' totals where it wants them, its filter's `apply` says no.
            let rollup = match plan.wants_cells() {
                true => reader.rollup_with_cells(*i, &mut dec),
                false => reader.rollup(*i, &mut dec),
            };
            let used = rollup.is_some_and(|r| each(&mut acc, *i, plan, &r, &mut bits));
            if !used {
                failed.push(*i);
            }
        }
        Some((acc, failed))
    };
    let threads = threads.clamp(1, planned.len().max(1));
    let parts: Vec<Option<(A, Vec<usize>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads).map(|_| s.spawn(part)).collect();
        handles.into_iter().map(|h| h.join().ok().flatten()).collect()
    });
    let mut out: Option<(A, Vec<usize>)> = None;
    for p in parts {
        let (acc, mut failed) = p?;
        match &mut out {
            None => out = Some((acc, failed)),
            Some((o, f)) => {
                merge(o, acc);
                f.append(&mut failed);
            }
        }
    }
    let (acc, mut failed) = out.unwrap_or_else(|| (init(), Vec::new()));
    failed.sort_unstable();
    Some((acc, failed))
}

/// The rollups-then-scan sequence every reader of a capture runs: the chunks of `chunks` that
/// `plan` finds a rollup can answer are folded from their rollups ([`over`], on up to
/// `threads` threads); returns what they added up to (`None` when no chunk was planned) and
/// the chunks left for a scan of their columns (the unplanned, and those whose rollup could not
/// be used), in order; `None` when `stale` says the question was superseded.
#[allow(clippy::too_many_arguments)]
pub fn fold_then_rest<A: Send, T: Plan + Sync, S: Source>(
    reader: &Reader<S>,
    chunks: &[usize],
    plan: impl Fn(usize) -> Option<T>,
    threads: usize,
    stale: &(dyn Fn() -> bool + Sync),
    init: &(dyn Fn() -> A + Sync),
    each: impl Fn(&mut A, usize, &T, &Rollup, &mut Bitmap) -> bool + Sync,
    merge: impl Fn(&mut A, A),
) -> Option<(Option<A>, Vec<usize>)> {
    let (planned, mut rest) = self::plan(chunks, plan);
    if planned.is_empty() {
        return Some((None, rest));
    }
    let (acc, failed) = over(reader, &planned, threads, stale, init, each, merge)?;
    rest.extend(failed);
    rest.sort_unstable();
    Some((Some(acc), rest))
}

#[cfg(test)]
mod tests {
    use iocap_filter::Filter;
    use iocap_format::{Class, Event, Meta, Tables};

    use super::*;

    /// Events of (proc, latency), each of `latency % 97` bytes, of pid `100 + proc`.
    fn chunk(events: &[(u32, u64)]) -> (Columns, ChunkSummary) {
        let mut cols = Columns::default();
        for &(proc, latency) in events {
            cols.push(&Event {
                class: Class::Syscall,
                proc,
                pid: 100 + proc,
                latency,
                bytes: latency % 97,
                ..Event::default()
            });
        }
        let s = ChunkSummary {
            events: cols.len() as u64,
            syscalls: cols.len() as u64,
            min_latency: cols.latency.iter().copied().min().unwrap_or(0),
            max_latency: cols.latency.iter().copied().max().unwrap_or(0),
            ..ChunkSummary::default()
        };
        (cols, s)
    }

    /// What `filter` keeps of `cols`, by key (proc): count, min, max, sum, bytes.
    fn scanned(f: &Compiled, cols: &Columns) -> Vec<(u32, KeyTotals)> {
        let mut bits = Bitmap::default();
        f.eval(cols, &mut bits);
        let mut by: std::collections::BTreeMap<u32, KeyTotals> = Default::default();
        for i in bits.iter_ones() {
            let t = by.entry(cols.proc[i]).or_insert(KeyTotals {
                count: 0,
                min: u64::MAX,
                max: 0,
                sum: 0,
                bytes: 0,
            });
            t.count += 1;
            t.min = t.min.min(cols.latency[i]);
            t.max = t.max.max(cols.latency[i]);
            t.sum += u128::from(cols.latency[i]);
            t.bytes += cols.bytes[i];
        }
        by.into_iter().collect()
    }

    /// What `filter` keeps of `cols` through their rollup: `None` when it cannot tell.
    fn rolled(f: &RollupFilter, cols: &Columns) -> Option<Vec<(u32, KeyTotals)>> {
        let r = Rollup::of(cols, 0);
        let mut bits = Bitmap::default();
        let kept = f.apply(&r, &mut bits)?;
        let mut out: Vec<(u32, KeyTotals)> = bits.iter_ones().map(|k| (kept.keys.proc[k], kept.totals[k])).collect();
        out.sort_by_key(|&(p, _)| p);
        Some(out)
    }

    #[test]
    fn a_latency_bound_keeps_whole_cells_with_their_own_totals() {
        let compile = |src: &str| {
            Filter::parse(src)
                .unwrap()
                .compile(&Meta::default(), &Tables::default())
        };
        // Process 1 around 1 ms and 10 µs, process 2 far from both; process 3 has a call of
        // exactly 1 ms in the cell from 1 ms, which `latency>1ms` cuts.
        let (cols, s) = chunk(&[
            (1, 999_000),
            (1, 1_000_001),
            (1, 1_004_000),
            (1, 9_990),
            (1, 10_000),
            (2, 40),
            (2, 7_010_000),
            (2, 7_060_000),
            (3, 1_000_000),
            (3, 1_000_002),
        ]);
        let cases = [
            ("latency>1ms", false),
            ("latency>=1ms", true),
            ("latency>1ms and not proc.pid=103", false),
            // The pid is a key's (since 1.16): process 1's keys are answered.
            ("latency>=1ms and proc.pid=101", true),
            ("latency>1ms and not fd.num=3", false),
            ("latency<10us or latency>=1ms", true),
            ("latency>=10us and latency<7ms", true),
            ("not latency>=1ms and proc.name=x or latency>5ms", true),
            // 7.05 ms lies between process 2's two calls in one cell.
            ("latency>7.05ms", false),
        ];
        for (src, whole) in cases {
            let f = compile(src);
            let Some(rf) = RollupFilter::of(Some(&f), &s) else {
                // Reads a column past the keys (the fd): the chunk is read.
                assert!(src.contains("fd.num"), "{src}");
                continue;
            };
            assert!(matches!(rf, RollupFilter::Cells(_)), "{src}: decided cell by cell");
            match rolled(&rf, &cols) {
                Some(got) => assert_eq!(got, scanned(&f, &cols), "{src}"),
                None => assert!(!whole, "{src}: the rollup answers"),
            }
            assert_eq!(rolled(&rf, &cols).is_some(), whole, "{src}");
        }
        // Without process 3's call of exactly 1 ms, `latency>1ms` is answered.
        let (cols, s) = chunk(&[(1, 999_000), (1, 1_000_001), (3, 1_000_002), (3, 20)]);
        let f = compile("latency>1ms");
        let rf = RollupFilter::of(Some(&f), &s).unwrap();
        assert_eq!(rolled(&rf, &cols), Some(scanned(&f, &cols)));
        let made = Rollup::of(&cols, 0);
        let kept = rf.apply(&made, &mut Bitmap::default()).unwrap();
        assert!(kept.with_pid, "the part a cell bound keeps still holds its keys' pids");
        // A rollup without its cells' totals (before 1.14) cannot answer.
        let mut r = Rollup::of(&cols, 0);
        r.cell_totals.clear();
        assert!(rf.apply(&r, &mut Bitmap::default()).is_none());
        // Nor can one without pids (before 1.16) answer a filter on the pid, on its keys or
        // cell by cell; it still answers one that reads no pid.
        let mut r = Rollup::of(&cols, 0);
        r.with_pid = false;
        r.keys.pid.fill(0);
        for src in ["proc.pid=101", "latency>=1ms and proc.pid=101"] {
            let f = compile(src);
            let rf = RollupFilter::of(Some(&f), &s).unwrap();
            assert!(rf.apply(&r, &mut Bitmap::default()).is_none(), "{src}");
        }
        let f = compile("latency>1ms");
        let rf = RollupFilter::of(Some(&f), &s).unwrap();
        assert!(rf.apply(&r, &mut Bitmap::default()).is_some());
    }
}
