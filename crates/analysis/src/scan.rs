//! The scan driver: run a compiled filter over a capture's chunks and feed the matching rows
//! to an accumulator. Every analysis in iocap (the report commands and the viewer) goes
//! through this one loop.
//!
//! For each chunk: skip it when its summary proves no event can match
//! ([`Compiled::may_match`]), else decode only the columns the filter and the accumulator read,
//! evaluate the filter into a [`Bitmap`] and hand both, with the chunk's index, to the
//! accumulator. [`Scan`] takes a chosen set of chunks (all by default), splits them into
//! contiguous runs, one per thread, checks a cancel flag between chunks and merges the
//! accumulators in chunk order, so the result is the same for any thread count. [`scan`] is
//! the common case (every chunk, never cancelled). [`for_each_match`] visits matches one by one
//! in file order (the order events completed) and can stop early, for listings and exports.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use iocap_filter::{Bitmap, Compiled};
use iocap_format::{ChunkDecoder, Col, ColSet, Columns, Error, Reader, Source};

use crate::cache::{ColumnCache, Narrow};

/// A chunk a scan left out because it could not be read ([`Scan::skip_damaged`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// Index of the chunk in the capture.
    pub chunk: usize,
    /// Events the chunk's index entry says it holds (all missing from the answer).
    pub events: u64,
    /// Why it could not be read: the reader's error, as displayed.
    pub error: String,
}

/// What a scan went through.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Events in the capture.
    pub total: u64,
    /// Events that matched the filter (and were fed).
    pub matched: u64,
    /// Chunks decoded.
    pub chunks_read: usize,
    /// Chunks skipped by their summary alone (no event of them could match).
    pub chunks_skipped: usize,
    /// Chunks read whose summary proved every event matches: the filter was not evaluated and
    /// its columns not decoded.
    pub chunks_all: usize,
    /// Chunks left out as unreadable, in chunk order (only with [`Scan::skip_damaged`]).
    pub damaged: Vec<Damage>,
}

impl ScanStats {
    fn merge(&mut self, o: ScanStats) {
        self.matched += o.matched;
        self.chunks_read += o.chunks_read;
        self.chunks_skipped += o.chunks_skipped;
        self.chunks_all += o.chunks_all;
        self.damaged.extend(o.damaged);
        self.damaged.sort_by_key(|d| d.chunk);
    }
}

/// Threads worth using: the machine's parallelism, at most one per chunk.
pub fn default_threads(chunks: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.min(chunks).max(1)
}

/// A scan to run: which chunks, which columns, how many threads, when to give up.
pub struct Scan<'a, S: Source> {
    reader: &'a Reader<S>,
    /// `None` (or the empty filter) matches every event without evaluating anything.
    filter: Option<&'a Compiled>,
    want: ColSet,
    /// Chunk indices in increasing order; `None` is every chunk.
    chunks: Option<&'a [usize]>,
    threads: usize,
    cancel: Option<&'a (dyn Fn() -> bool + Sync)>,
    cache: Option<&'a ColumnCache>,
    /// Whether columns decoded are added to `cache`.
    fill: bool,
    any_order: bool,
    /// Columns wanted for some chunks only (see [`Scan::columns_for`]).
    extra: Option<(ColSet, &'a (dyn Fn(usize) -> ColSet + Sync))>,
    skip_damaged: bool,
}

impl<'a, S: Source> Scan<'a, S> {
    /// A scan of every chunk of `reader` on one thread, decoding only the filter's columns.
    pub fn new(reader: &'a Reader<S>, filter: Option<&'a Compiled>) -> Self {
        Scan {
            reader,
            filter: filter.filter(|f| !f.is_all()),
            want: ColSet::NONE,
            chunks: None,
            threads: 1,
            cancel: None,
            cache: None,
            fill: false,
            any_order: false,
            extra: None,
            skip_damaged: false,
        }
    }

    /// Leave out a chunk that cannot be read (a damaged or truncated capture) and list it in
    /// [`ScanStats::damaged`], instead of failing the scan: a viewer shows the rest. The
    /// answer then lacks those chunks' events, which the caller must say.
    pub fn skip_damaged(mut self) -> Self {
        self.skip_damaged = true;
        self
    }

    /// Also decode `want` (what the accumulator reads).
    pub fn columns(mut self, want: ColSet) -> Self {
        self.want = self.want.union(want);
        self
    }

    /// Also decode, for chunk `i`, the columns `extra(i)` (a subset of `all`): for columns an
    /// accumulator can do without in some chunks (the viewer needs no timestamps for a chunk that
    /// lies within one spectrogram row). `feed` must then cope with them missing (empty).
    pub fn columns_for(mut self, all: ColSet, extra: &'a (dyn Fn(usize) -> ColSet + Sync)) -> Self {
        self.extra = Some((all, extra));
        self
    }

    /// Scan only these chunks (indices in increasing order; out-of-range ones are an error).
    pub fn chunks(mut self, chunks: &'a [usize]) -> Self {
        self.chunks = Some(chunks);
        self
    }

    /// Split the chunks between up to `threads` threads.
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Give up (the scan returns `Ok(None)`) as soon as `cancel` returns true; checked before
    /// every chunk, so a superseded scan stops within one chunk's work.
    pub fn cancel(mut self, cancel: &'a (dyn Fn() -> bool + Sync)) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Take columns from `cache` when it holds them, and when `fill`, keep there what is
    /// decoded (packing costs about a nanosecond per value: a viewer fills its cache while idle,
    /// not while the user waits). The cache must belong to this reader's capture.
    pub fn cache(mut self, cache: &'a ColumnCache, fill: bool) -> Self {
        self.cache = Some(cache);
        self.fill = fill;
        self
    }

    /// Hand chunks to threads as they become free rather than a contiguous run each: better
    /// balanced when a thread is slowed (a loaded machine, chunks skipped unevenly), but each
    /// accumulator then holds chunks in no particular order and they are merged in thread order,
    /// so only for accumulators whose result does not depend on order (counts, histograms,
    /// sorted tops).
    pub fn any_order(mut self) -> Self {
        self.any_order = true;
        self
    }

    /// Feed every matching event to accumulators made by `init` and merge them in chunk
    /// order (unless [`Scan::any_order`]). `feed` gets the chunk's index, its decoded columns and
    /// the bitmap of its matching rows (never empty). `None` when cancelled. On a damaged chunk
    /// the error is the first in chunk order.
    pub fn run<A: Send>(
        self,
        init: impl Fn() -> A + Sync,
        feed: impl Fn(&mut A, usize, &Columns, &Bitmap) + Sync,
        merge: impl Fn(&mut A, A),
    ) -> Result<Option<(A, ScanStats)>, Error> {
        let all: Vec<usize>;
        let chunks = match self.chunks {
            Some(c) => c,
            None => {
                all = (0..self.reader.chunks().len()).collect();
                &all
            }
        };
        let base = self.want;
        let want = match self.filter {
            Some(f) => self.want.union(f.columns()),
            None => self.want,
        };
        let n = chunks.len();
        let threads = self.threads.clamp(1, n.max(1));
        if let Some(c) = self.cache {
            c.begin(chunks, want.union(self.extra.map_or(ColSet::NONE, |e| e.0)));
        }
        // Positions (in `chunks`) are handed out by `take`: a contiguous run per thread, or, in
        // any order, the next position to whichever thread is free. `fail_at` is the lowest
        // position that failed: threads stop past it, so the error reported is always the first
        // in chunk order, whatever the timing.
        let fail_at = AtomicUsize::new(usize::MAX);
        let shared = AtomicUsize::new(0);
        let this = &self;
        let run_part = |k: usize| {
            let (mut pos, end) = (k * n / threads, (k + 1) * n / threads);
            let take = || -> Option<usize> {
                let p = if this.any_order {
                    shared.fetch_add(1, Ordering::Relaxed)
                } else {
                    if pos >= end {
                        return None;
                    }
                    pos += 1;
                    pos - 1
                };
                (p < n && p <= fail_at.load(Ordering::Relaxed)).then_some(p)
            };
            let mut acc = init();
            match this.scan_part(base, want, chunks, take, &mut acc, &feed) {
                Ok(st) => Ok(st.map(|st| (acc, st))),
                Err((p, e)) => {
                    fail_at.fetch_min(p, Ordering::Relaxed);
                    Err((p, e))
                }
            }
        };
        type Part<A> = Result<Option<(A, ScanStats)>, (usize, Error)>;
        let parts: Vec<Part<A>> = if threads == 1 {
            vec![run_part(0)]
        } else {
            let run_part = &run_part;
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads).map(|k| s.spawn(move || run_part(k))).collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err((0, Error::Io(std::io::Error::other("a scan thread panicked")))))
                    })
                    .collect()
            })
        };
        let mut stats = ScanStats {
            total: self.reader.event_count(),
            ..ScanStats::default()
        };
        let first_err = parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().err().map(|(pos, _)| (*pos, i)))
            .min();
        let mut parts: Vec<Option<Part<A>>> = parts.into_iter().map(Some).collect();
        if let Some((_, i)) = first_err {
            if let Some(Err((_, e))) = parts[i].take() {
                return Err(e);
            }
        }
        let mut out: Option<A> = None;
        for part in parts.into_iter().flatten() {
            let Ok(Some((acc, st))) = part else { return Ok(None) };
            stats.merge(st);
            match &mut out {
                None => out = Some(acc),
                Some(o) => merge(o, acc),
            }
        }
        Ok(Some((out.unwrap_or_else(init), stats)))
    }

    /// Scan the chunks at the positions `take` hands out (in `chunks`) sequentially into `acc`;
    /// `None` when cancelled. An error comes with its position.
    fn scan_part<A>(
        &self,
        base: ColSet,
        want: ColSet,
        chunks: &[usize],
        mut take: impl FnMut() -> Option<usize>,
        acc: &mut A,
        feed: &(impl Fn(&mut A, usize, &Columns, &Bitmap) + Sync),
    ) -> Result<Option<ScanStats>, (usize, Error)> {
        let r = self.reader;
        let mut dec = ChunkDecoder::new();
        let mut cols = Columns::default();
        let mut bits = Bitmap::default();
        let mut st = ScanStats::default();
        let mut got = Vec::new();
        while let Some(pos) = take() {
            let i = chunks[pos];
            if self.cancel.is_some_and(|c| c()) {
                return Ok(None);
            }
            // An index past the end is left to read_chunk, which reports it.
            let (skip, all) = match (self.filter, r.chunks().get(i)) {
                (Some(f), Some(info)) => (!f.may_match(&info.summary), f.all_match(&info.summary)),
                _ => (false, false),
            };
            if skip {
                st.chunks_skipped += 1;
                continue;
            }
            // When the summary proves every event matches, the filter's columns are not needed.
            let want = if all { base } else { want };
            let want = match self.extra {
                Some((every, f)) => want.union(ColSet(f(i).0 & every.0)),
                None => want,
            };
            // A filter's own columns first, where it reads fewer than the scan: a chunk where
            // nothing matches is then decoded no further.
            let steps = match self.filter {
                Some(f) if !all && f.columns().0 & !want.0 == 0 && f.columns() != want => Some((f, f.columns())),
                _ => None,
            };
            let read = match (steps, self.cache) {
                (Some((f, first)), _) => {
                    self.read_in_steps(f, i, (first, want), &mut dec, &mut cols, &mut bits, &mut got)
                }
                (None, None) => r.read_chunk(i, want, &mut dec, &mut cols).map(|()| false),
                (None, Some(cache)) => {
                    cache.get(i, want, &mut got);
                    self.read_held(cache, i, want, &mut dec, &mut cols, &got)
                        .map(|()| false)
                }
            };
            let evaluated = match read {
                Ok(evaluated) => evaluated,
                Err(e) if self.skip_damaged => {
                    st.damaged.push(Damage {
                        chunk: i,
                        events: r.chunks().get(i).map_or(0, |c| c.summary.events),
                        error: e.to_string(),
                    });
                    continue;
                }
                Err(e) => return Err((pos, e)),
            };
            match self.filter {
                _ if evaluated => {}
                Some(f) if !all => f.eval(&cols, &mut bits),
                _ => bits.reset(cols.len(), true),
            }
            st.chunks_read += 1;
            st.chunks_all += usize::from(all);
            let n = bits.count_ones() as u64;
            if n > 0 {
                st.matched += n;
                feed(acc, i, &cols, &bits);
            }
        }
        Ok(Some(st))
    }

    /// Columns `want` of chunk `i` into `cols` and `f`'s answer into `bits`, in two steps
    /// ([`Reader::read_chunk_then`]): the filter's columns `first`, then the others only if
    /// something matched (`cols` then lacks them). Where `cache` holds some of the chunk's
    /// columns, as [`Scan::read_held`] in one. Returns true: `bits` holds the filter's answer.
    #[allow(clippy::too_many_arguments)]
    fn read_in_steps(
        &self,
        f: &Compiled,
        i: usize,
        (first, want): (ColSet, ColSet),
        dec: &mut ChunkDecoder,
        cols: &mut Columns,
        bits: &mut Bitmap,
        got: &mut Vec<(Col, Arc<Narrow>)>,
    ) -> Result<bool, Error> {
        if let Some(cache) = self.cache {
            cache.get(i, want, got);
            if !got.is_empty() {
                self.read_held(cache, i, want, dec, cols, got)?;
                f.eval(cols, bits);
                return Ok(true);
            }
        }
        let go_on = |c: &Columns| {
            f.eval(c, bits);
            bits.any()
        };
        let rest = ColSet(want.0 & !first.0);
        let more = self.reader.read_chunk_then(i, (first, rest), dec, cols, go_on)?;
        if let (Some(cache), true) = (self.cache, self.fill) {
            cache.put(i, if more { want } else { first }, cols);
        }
        Ok(true)
    }

    /// Columns `want` of chunk `i` into `cols`: `got`, those `cache` holds from it
    /// ([`ColumnCache::get`]), the others decoded (and added to it when filling).
    fn read_held(
        &self,
        cache: &ColumnCache,
        i: usize,
        want: ColSet,
        dec: &mut ChunkDecoder,
        cols: &mut Columns,
        got: &[(Col, Arc<Narrow>)],
    ) -> Result<(), Error> {
        let held = want.cols().filter(|c| got.iter().any(|(g, _)| g == c));
        let missing = ColSet(want.0 & !held.collect::<ColSet>().0);
        match ColumnCache::events(got) {
            // Every column held: the chunk is not read at all. An empty body (no column) sets
            // the event count.
            Some(n) if missing == ColSet::NONE => cols
                .decode(&[0], n, ColSet::NONE)
                .map_err(|e| Error::Io(std::io::Error::other(e.0)))?,
            _ => {
                self.reader.read_chunk(i, missing, dec, cols)?;
                if self.fill {
                    cache.put(i, missing, cols);
                }
            }
        }
        ColumnCache::fill(cols, got);
        Ok(())
    }
}

/// Feed every event of `r` that matches `filter` to accumulators made by `init`, using up to
/// `threads` threads, and merge them (in chunk order) into one: [`Scan`] over every chunk,
/// never cancelled.
///
/// `want` names the columns `feed` reads; the filter's own are added. `feed` gets a decoded
/// chunk and the bitmap of its matching rows (never empty).
pub fn scan<S: Source, A: Send>(
    r: &Reader<S>,
    filter: &Compiled,
    want: ColSet,
    threads: usize,
    init: impl Fn() -> A + Sync,
    feed: impl Fn(&mut A, &Columns, &Bitmap) + Sync,
    merge: impl Fn(&mut A, A),
) -> Result<(A, ScanStats), Error> {
    let done =
        Scan::new(r, Some(filter))
            .columns(want)
            .threads(threads)
            .run(init, |a, _, c, b| feed(a, c, b), merge)?;
    // Without a cancel check the scan always finishes; were it not to, say so rather than panic.
    done.ok_or_else(|| Error::Io(std::io::Error::other("the scan was cancelled")))
}

/// Call `visit` with each matching row (chunk columns and row index), in file order, until it
/// returns `Break`. Returns the scan's statistics so far (`matched` counts the rows visited).
pub fn for_each_match<S: Source>(
    r: &Reader<S>,
    filter: &Compiled,
    want: ColSet,
    visit: impl FnMut(&Columns, usize) -> ControlFlow<()>,
) -> Result<ScanStats, Error> {
    for_each_match_in(r, filter, want, 0..r.chunks().len(), visit)
}

/// [`for_each_match`] over the chunks of `chunks` only (those a growing capture added since
/// the last look: [`Reader::refresh`] appends them), in file order. `total` counts the events
/// of those chunks.
pub fn for_each_match_in<S: Source>(
    r: &Reader<S>,
    filter: &Compiled,
    want: ColSet,
    chunks: std::ops::Range<usize>,
    mut visit: impl FnMut(&Columns, usize) -> ControlFlow<()>,
) -> Result<ScanStats, Error> {
    let mut matched = 0;
    let mut st = for_each_matching_chunk_in(r, filter, want, chunks, |cols, bits| {
        for row in bits.iter_ones() {
            matched += 1;
            if visit(cols, row).is_break() {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    st.matched = matched;
    Ok(st)
}

/// Call `visit` with each chunk that may match (its columns and the bitmap of its matching
/// rows), in file order, until it returns `Break`: for a caller that goes column by column
/// (`export --format parquet`) or wants a chunk's rows at once. `matched` counts the rows of
/// the chunks visited.
pub fn for_each_matching_chunk_in<S: Source>(
    r: &Reader<S>,
    filter: &Compiled,
    want: ColSet,
    chunks: std::ops::Range<usize>,
    mut visit: impl FnMut(&Columns, &Bitmap) -> ControlFlow<()>,
) -> Result<ScanStats, Error> {
    let chunks = chunks.start.min(r.chunks().len())..chunks.end.min(r.chunks().len());
    let want = want.union(filter.columns());
    let mut dec = ChunkDecoder::new();
    let mut cols = Columns::default();
    let mut bits = Bitmap::default();
    let mut st = ScanStats {
        total: r.chunks()[chunks.clone()].iter().map(|c| c.summary.events).sum(),
        ..ScanStats::default()
    };
    for (i, chunk) in r.chunks().iter().enumerate().take(chunks.end).skip(chunks.start) {
        if !filter.may_match(&chunk.summary) {
            st.chunks_skipped += 1;
            continue;
        }
        r.read_chunk(i, want, &mut dec, &mut cols)?;
        filter.eval(&cols, &mut bits);
        st.chunks_read += 1;
        st.matched += bits.count_ones() as u64;
        if visit(&cols, &bits).is_break() {
            return Ok(st);
        }
    }
    Ok(st)
}

/// The time span analyses are laid over, ns since boot: from the recording's start, the one
/// origin every time in the capture counts from (`evt.time`, the iostat intervals, the
/// spectrogram's rows, the viewer's), to its stop (or the last event's start, if later).
///
/// The start is the header's `start_ts`, which the reader sets to the first event's when the
/// header has none. An event that began before it does not move it: it has `evt.time` 0 and
/// lies before the first row, outside every spectrogram. (iocap's recorder takes the start
/// before it attaches, so its events never begin earlier; earlier recorders took it after,
/// and calls that entered in between, up to tens of ms of them, are such events.)
pub fn capture_span<S: Source>(r: &Reader<S>) -> (u64, u64) {
    let last = r.chunks().iter().map(|c| c.summary.max_ts).max().unwrap_or(0);
    let start = r.meta().start_ts;
    (start, r.stop_ts().max(last).max(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LatencyHist;
    use iocap_filter::Filter;
    use iocap_format::{Col, Event, Meta, Writer, WriterOptions};

    fn capture() -> Reader<Vec<u8>> {
        Reader::from_bytes(capture_bytes()).unwrap()
    }

    fn capture_bytes() -> Vec<u8> {
        let meta = Meta {
            arch: "x86_64".into(),
            start_ts: 1_000,
            ..Meta::default()
        };
        let opts = WriterOptions {
            chunk_events: 100,
            ..WriterOptions::default()
        };
        let mut w = Writer::new(Vec::new(), &meta, opts).unwrap();
        for i in 0..1_000u64 {
            // Chunks 0..4 are fast (< 1 us), chunks 5..9 slow, so a latency filter skips half.
            let latency = if i < 500 { 100 + i } else { 2_000_000 + i * 7 };
            w.push(&Event::syscall(1_000 + i * 10, latency, 1, 1, (i % 3) as u32, 0))
                .unwrap();
        }
        w.finish(20_000).unwrap()
    }

    fn hist(r: &Reader<Vec<u8>>, src: &str, threads: usize) -> (LatencyHist, ScanStats) {
        let f = Filter::parse(src).unwrap().compile(r.meta(), r.tables());
        scan(
            r,
            &f,
            ColSet::NONE.with(Col::Latency),
            threads,
            LatencyHist::new,
            |h, cols, bits| bits.iter_ones().for_each(|i| h.add(cols.latency[i])),
            |a, b| a.merge(&b),
        )
        .unwrap()
    }

    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let r = capture();
        let (one, st1) = hist(&r, "evt.type=read or latency>1ms", 1);
        for threads in [2, 3, 16] {
            let (many, st) = hist(&r, "evt.type=read or latency>1ms", threads);
            assert_eq!(many, one, "{threads} threads");
            assert_eq!(st, st1);
        }
        // nr 0 is read: a third of the fast half, and all of the slow half.
        assert_eq!(st1.matched, 167 + 500);
        assert_eq!(st1.total, 1_000);
    }

    #[test]
    fn any_order_gives_the_same_answer_and_errors_are_the_first_in_chunk_order() {
        let r = capture();
        let f = Filter::parse("evt.type=read or latency>1ms")
            .unwrap()
            .compile(r.meta(), r.tables());
        // The latency histogram of the matching events, by scan `s`.
        fn hist(s: Scan<'_, Vec<u8>>) -> Result<Option<(LatencyHist, ScanStats)>, Error> {
            s.columns(ColSet::NONE.with(Col::Latency)).run(
                LatencyHist::new,
                |h, _, c, b| b.iter_ones().for_each(|i| h.add(c.latency[i])),
                |a, b| a.merge(&b),
            )
        }
        fn scan<'a>(r: &'a Reader<Vec<u8>>, f: &'a Compiled, threads: usize, any: bool) -> Scan<'a, Vec<u8>> {
            let s = Scan::new(r, Some(f)).threads(threads);
            if any {
                s.any_order()
            } else {
                s
            }
        }
        let run = |r: &Reader<Vec<u8>>, threads: usize, any: bool| hist(scan(r, &f, threads, any));
        let (one, st1) = run(&r, 1, false).unwrap().unwrap();
        for threads in [2, 3, 16] {
            let (h, st) = run(&r, threads, true).unwrap().unwrap();
            assert_eq!((h, st), (one.clone(), st1.clone()), "{threads} threads");
        }
        // Damage chunks 3 and 7: every way of scanning reports chunk 3.
        let mut bytes = capture_bytes();
        for c in [3, 7] {
            let at = r.chunks()[c].offset as usize + 40;
            bytes[at] ^= 0xff;
        }
        let bad = Reader::from_bytes(bytes).unwrap();
        let first = run(&bad, 1, false).expect_err("an error").to_string();
        for (threads, any) in [(2, false), (3, false), (2, true), (16, true)] {
            let e = run(&bad, threads, any).expect_err("an error").to_string();
            assert_eq!(e, first, "{threads} threads, any order {any}");
        }
        let (at3, at7) = (bad.chunks()[3].offset.to_string(), bad.chunks()[7].offset.to_string());
        assert!(first.contains(&at3) && !first.contains(&at7), "{first}");
        // Skipping damage: the answer is the other chunks', and both are listed, in order.
        let good: Vec<usize> = (0..r.chunks().len()).filter(|c| ![3, 7].contains(c)).collect();
        let want = hist(Scan::new(&r, Some(&f)).chunks(&good)).unwrap().unwrap().0;
        for (threads, any) in [(1, false), (2, false), (2, true), (16, true)] {
            let (h, st) = hist(scan(&bad, &f, threads, any).skip_damaged()).unwrap().unwrap();
            assert_eq!(h, want, "{threads} threads, any order {any}");
            let damaged: Vec<(usize, u64)> = st.damaged.iter().map(|d| (d.chunk, d.events)).collect();
            let events = |c: usize| r.chunks()[c].summary.events;
            assert_eq!(damaged, [(3, events(3)), (7, events(7))]);
            assert!(st.damaged[0].error.contains(&at3), "{:?}", st.damaged);
        }
    }

    #[test]
    fn a_column_cache_does_not_change_results() {
        let r = capture();
        let want = ColSet::NONE.with(Col::Latency).with(Col::Ts);
        let run = |src: &str, cache: Option<&ColumnCache>| {
            let f = Filter::parse(src).unwrap().compile(r.meta(), r.tables());
            let mut s = Scan::new(&r, Some(&f)).columns(want).threads(2);
            if let Some(c) = cache {
                s = s.cache(c, true);
            }
            s.run(
                Vec::new,
                |v: &mut Vec<(u64, u64)>, _, c, b| v.extend(b.iter_ones().map(|i| (c.ts[i], c.latency[i]))),
                |a, b| a.extend(b),
            )
            .unwrap()
            .unwrap()
        };
        // Room for every column of every chunk, and room for a few chunks only.
        for budget in [1 << 20, 2_000] {
            let cache = ColumnCache::new(budget);
            for src in ["", "evt.type=read or latency>1ms", "latency>1ms", "proc.pid=1", ""] {
                assert_eq!(run(src, Some(&cache)), run(src, None), "{src} at {budget}");
            }
            let st = cache.stats();
            assert!(st.hits > 0 && st.bytes <= budget, "{st:?}");
        }
        // Without filling, a cache is only read.
        let cache = ColumnCache::new(1 << 20);
        let f = Filter::parse("").unwrap().compile(r.meta(), r.tables());
        Scan::new(&r, Some(&f))
            .columns(want)
            .cache(&cache, false)
            .run(|| (), |_, _, _, _| (), |_, _| ())
            .unwrap();
        assert_eq!(cache.stats().entries, 0);
    }

    #[test]
    fn chunk_summaries_skip_chunks_and_for_each_match_stops() {
        let r = capture();
        let (h, st) = hist(&r, "latency>1ms", 2);
        assert_eq!((st.matched, st.chunks_skipped, st.chunks_read), (500, 5, 5));
        // Every slow chunk is wholly above 1 ms: counted without evaluating the filter.
        assert_eq!(st.chunks_all, 5);
        let (h2, st) = hist(&r, "latency>2001ms or evt.type=read", 2);
        assert_eq!((st.chunks_all, st.chunks_skipped), (0, 0));
        assert!(h2.count() > 0);
        assert_eq!(h.min(), 2_000_000 + 500 * 7);
        let f = Filter::parse("").unwrap().compile(r.meta(), r.tables());
        let mut seen = Vec::new();
        let st = for_each_match(&r, &f, ColSet::NONE.with(Col::Ts), |cols, i| {
            seen.push(cols.ts[i]);
            if seen.len() == 150 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
        assert_eq!(st.matched, 150);
        assert!(seen.windows(2).all(|w| w[0] < w[1]), "file order");
        assert_eq!(capture_span(&r), (1_000, 20_000));
        // Chunks 3 and 4 only (a capture grown by two chunks): their events, in order.
        let mut all = Vec::new();
        for_each_match(&r, &f, ColSet::NONE.with(Col::Ts), |cols, i| {
            all.push(cols.ts[i]);
            ControlFlow::Continue(())
        })
        .unwrap();
        let before: u64 = r.chunks()[..3].iter().map(|c| c.summary.events).sum();
        let mut part = Vec::new();
        let st = for_each_match_in(&r, &f, ColSet::NONE.with(Col::Ts), 3..5, |cols, i| {
            part.push(cols.ts[i]);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(st.total, 200);
        assert_eq!(part, all[before as usize..before as usize + 200]);
        let st = for_each_match_in(&r, &f, ColSet::NONE, 9..99, |_, _| ControlFlow::Continue(())).unwrap();
        assert_eq!((st.total, st.matched), (100, 100), "a range past the end stops at it");
    }

    /// The span starts at the recording's start, whatever began before it; a header without a
    /// start starts at the first event.
    #[test]
    fn the_span_starts_at_the_recording_start() {
        let at = |start_ts: u64| {
            let meta = Meta {
                arch: "x86_64".into(),
                start_ts,
                ..Meta::default()
            };
            let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default()).unwrap();
            // In flight when the recording started: began 14.4 ms before it.
            w.push(&Event::syscall(100_000_000 - 14_400_000, 20_000_000, 1, 1, 0, 0))
                .unwrap();
            w.push(&Event::syscall(100_500_000, 1_000, 1, 1, 0, 0)).unwrap();
            capture_span(&Reader::from_bytes(w.finish(200_000_000).unwrap()).unwrap())
        };
        assert_eq!(at(100_000_000), (100_000_000, 200_000_000));
        assert_eq!(at(0), (100_000_000 - 14_400_000, 200_000_000));
    }
}
