//! Questions answered from chunks' rollups ([`iocap_format::Rollup`]) instead of their columns.
//!
//! A rollup holds a chunk's events by key (class, process, call number, op) with each key's
//! latency cells, exact count, min, max, latency sum and bytes. A question whose filter, once
//! the chunk's summary has decided what it can ([`Compiled::given`]: an `evt.time` window
//! around the chunk falls away), reads only the key's columns, and which reads nothing more of
//! each event than its latency (and bytes), is answered exactly from the rollup: a few
//! kilobytes per chunk instead of its columns. The viewer (its spectrogram rows, histogram and
//! groups) and `iocap report` (histogram, bytes, groups) both plan and read them here.

use std::sync::atomic::{AtomicUsize, Ordering};

use iocap_filter::{Bitmap, Compiled};
use iocap_format::{key_cols, ChunkDecoder, ChunkSummary, ColSet, Reader, Rollup, Source};

/// Whether columns `c` are all among a rollup's keys.
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
        if left.is_all() {
            Some(RollupFilter::All)
        } else {
            within_keys(left.columns()).then_some(RollupFilter::Keys(left))
        }
    }

    /// Set `bits` to the keys of `r` this keeps.
    pub fn keys(&self, r: &Rollup, bits: &mut Bitmap) {
        match self {
            RollupFilter::Keys(f) => f.eval(&r.keys, bits),
            RollupFilter::All => bits.reset(r.keys.len(), true),
        }
    }
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

/// Read the rollups of the `planned` chunks on up to `threads` threads, each into its own
/// accumulator made by `init` through `each` (given the chunk, its plan, the rollup and a
/// bitmap to use; it returns false, having added nothing, for a rollup that cannot answer),
/// and merge them; returns the accumulator and the chunks whose rollup could not be used
/// (none, damaged, refused by `each`), for their columns to answer; `None` when `stale` says
/// the question was superseded.
pub fn over<A: Send, T: Sync, S: Source>(
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
            let used = reader
                .rollup(*i, &mut dec)
                .is_some_and(|r| each(&mut acc, *i, plan, &r, &mut bits));
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
