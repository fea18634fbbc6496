//! The scan driver: run a compiled filter over a capture's chunks and feed the matching rows
//! to an accumulator.
//!
//! For each chunk: skip it when its summary proves no event can match
//! ([`Compiled::may_match`]), else decode only the columns the filter and the accumulator read,
//! evaluate the filter into a [`Bitmap`] and hand both to the accumulator. [`scan`] splits the
//! chunks into contiguous runs, one per thread, and merges the accumulators in chunk order, so
//! the result is the same for any thread count. [`for_each_match`] visits matches one by one in
//! file order (the order events completed) and can stop early, for listings and exports.

use std::ops::ControlFlow;

use iocap_filter::{Bitmap, Compiled};
use iocap_format::{ChunkDecoder, ColSet, Columns, Error, Reader, Source};

/// What a scan went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Events in the capture.
    pub total: u64,
    /// Events that matched the filter (and were fed).
    pub matched: u64,
    /// Chunks decoded, and chunks skipped by their summary alone.
    pub chunks_read: usize,
    pub chunks_skipped: usize,
}

impl ScanStats {
    fn merge(&mut self, o: &ScanStats) {
        self.matched += o.matched;
        self.chunks_read += o.chunks_read;
        self.chunks_skipped += o.chunks_skipped;
    }
}

/// Threads worth using: the machine's parallelism, at most one per chunk.
pub fn default_threads(chunks: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.min(chunks).max(1)
}

/// Scan chunks `range` of `r` sequentially into `acc`.
fn scan_range<S: Source, A>(
    r: &Reader<S>,
    filter: &Compiled,
    want: ColSet,
    range: std::ops::Range<usize>,
    acc: &mut A,
    feed: &(impl Fn(&mut A, &Columns, &Bitmap) + Sync),
) -> Result<ScanStats, Error> {
    let mut dec = ChunkDecoder::new();
    let mut cols = Columns::default();
    let mut bits = Bitmap::default();
    let mut st = ScanStats::default();
    for i in range {
        if !filter.may_match(&r.chunks()[i].summary) {
            st.chunks_skipped += 1;
            continue;
        }
        r.read_chunk(i, want, &mut dec, &mut cols)?;
        filter.eval(&cols, &mut bits);
        st.chunks_read += 1;
        let n = bits.count_ones() as u64;
        if n > 0 {
            st.matched += n;
            feed(acc, &cols, &bits);
        }
    }
    Ok(st)
}

/// Feed every event of `r` that matches `filter` to accumulators made by `init`, using up to
/// `threads` threads, and merge them (in chunk order) into one.
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
    let want = want.union(filter.columns());
    let n = r.chunks().len();
    let threads = threads.clamp(1, n.max(1));
    let mut parts: Vec<Result<(A, ScanStats), Error>> = if threads == 1 {
        let mut acc = init();
        vec![scan_range(r, filter, want, 0..n, &mut acc, &feed).map(|st| (acc, st))]
    } else {
        let (init, feed) = (&init, &feed);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|k| {
                    let range = k * n / threads..(k + 1) * n / threads;
                    s.spawn(move || {
                        let mut acc = init();
                        scan_range(r, filter, want, range, &mut acc, feed).map(|st| (acc, st))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::Io(std::io::Error::other("a scan thread panicked"))))
                })
                .collect()
        })
    };
    let mut stats = ScanStats {
        total: r.event_count(),
        ..ScanStats::default()
    };
    let mut out: Option<A> = None;
    // The first error in chunk order wins, whatever thread finished first.
    for part in parts.drain(..) {
        let (acc, st) = part?;
        stats.merge(&st);
        match &mut out {
            None => out = Some(acc),
            Some(o) => merge(o, acc),
        }
    }
    Ok((out.unwrap_or_else(init), stats))
}

/// Call `visit` with each matching row (chunk columns and row index), in file order, until it
/// returns `Break`. Returns the scan's statistics so far (`matched` counts the rows visited).
pub fn for_each_match<S: Source>(
    r: &Reader<S>,
    filter: &Compiled,
    want: ColSet,
    mut visit: impl FnMut(&Columns, usize) -> ControlFlow<()>,
) -> Result<ScanStats, Error> {
    let want = want.union(filter.columns());
    let mut dec = ChunkDecoder::new();
    let mut cols = Columns::default();
    let mut bits = Bitmap::default();
    let mut st = ScanStats {
        total: r.event_count(),
        ..ScanStats::default()
    };
    for (i, chunk) in r.chunks().iter().enumerate() {
        if !filter.may_match(&chunk.summary) {
            st.chunks_skipped += 1;
            continue;
        }
        r.read_chunk(i, want, &mut dec, &mut cols)?;
        filter.eval(&cols, &mut bits);
        st.chunks_read += 1;
        for row in bits.iter_ones() {
            st.matched += 1;
            if visit(&cols, row).is_break() {
                return Ok(st);
            }
        }
    }
    Ok(st)
}

/// The time span analyses are laid over, ns since boot: from the recording's start (or the
/// first event, if earlier or the start is unknown) to its stop (or the last event start, if
/// later).
pub fn capture_span<S: Source>(r: &Reader<S>) -> (u64, u64) {
    let first = r.chunks().iter().map(|c| c.summary.min_ts).min();
    let last = r.chunks().iter().map(|c| c.summary.max_ts).max().unwrap_or(0);
    let start = match (r.meta().start_ts, first) {
        (0, Some(f)) => f,
        (s, Some(f)) => s.min(f),
        (s, None) => s,
    };
    (start, r.stop_ts().max(last).max(start))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LatencyHist;
    use iocap_filter::Filter;
    use iocap_format::{Col, Event, Meta, Writer, WriterOptions};

    fn capture() -> Reader<Vec<u8>> {
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
        Reader::from_bytes(w.finish(20_000).unwrap()).unwrap()
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
    fn chunk_summaries_skip_chunks_and_for_each_match_stops() {
        let r = capture();
        let (h, st) = hist(&r, "latency>1ms", 2);
        assert_eq!((st.matched, st.chunks_skipped, st.chunks_read), (500, 5, 5));
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
    }
}
