//! Spectrogram binning: event counts per (time interval, latency column), as sysdig's
//! `spectrogram` chisel draws them.
//!
//! Latency columns are log-scale, ten per decade from 1 ns to 10 s ([`COLS`] = 100):
//! column `c` holds `[10^(c/10), 10^((c+1)/10))` ns, rounded to three significant digits
//! (`3.16ms`, so the viewer's region is written in short literals that read back exactly) and
//! to whole ns below 1 µs (in the first decade, where whole nanoseconds are too coarse for
//! that, column `c` is `c` ns, from 0). Latencies of 10 s or
//! more go to the last column, so no event is lost off the edges. Rows are `interval` ns long
//! (500 ms by default, as the chisel), a fixed number of them from an origin: the capture's
//! span for the reports, the view for the viewer.

use iocap_format::{log2_bucket_range, ChunkInfo};

// The columns are defined with the file format: a chunk's rollup is binned by them.
pub use iocap_format::latency::{COLS, COLS_PER_DECADE};

fn lower_bounds() -> &'static [u64; COLS + 1] {
    iocap_format::latency::column_bounds()
}

/// The latency column of `ns`.
#[inline]
pub fn column(ns: u64) -> usize {
    column_in_bucket(crate::hist::bucket(ns), ns)
}

/// The latency column of `ns`, whose log-linear bucket ([`crate::hist::bucket`]) is `b`: for
/// scans that have the bucket already.
#[inline]
pub fn column_in_bucket(b: usize, ns: u64) -> usize {
    ColumnTable::get().column(b, ns)
}

/// The tables [`column_in_bucket`] reads, fetched once so a scan loop does not go through the
/// lazy initialisation per event.
#[derive(Clone, Copy)]
pub struct ColumnTable {
    first: &'static [u8; crate::hist::BUCKETS],
    bounds: &'static [u64; COLS + 1],
}

impl ColumnTable {
    /// The tables, built on first use.
    pub fn get() -> ColumnTable {
        let (first, bounds) = bucket_columns();
        ColumnTable { first, bounds }
    }

    /// The column of `ns`, whose bucket is `b`. A table lookup and one comparison, no search:
    /// a bucket is at most 6.25 % wide and a column at least 20 %, so a bucket straddles at most
    /// one column bound, and the table gives the column of the bucket's lowest value.
    #[inline(always)]
    pub fn column(&self, b: usize, ns: u64) -> usize {
        let c = usize::from(self.first.get(b).copied().unwrap_or(COLS as u8 - 1));
        let past = iocap_format::latency::past_bound(self.first, self.bounds, b, ns);
        (c + usize::from(past)).min(COLS - 1)
    }
}

/// The column of each log-linear bucket's lowest value, and the column bounds.
fn bucket_columns() -> (&'static [u8; crate::hist::BUCKETS], &'static [u64; COLS + 1]) {
    (iocap_format::latency::bucket_first_columns(), lower_bounds())
}

/// The `[lo, hi)` ns range column `c` stands for (the first column also takes 0, the last
/// everything from 10^9.9 ns up).
pub fn column_range(c: usize) -> (u64, u64) {
    let b = lower_bounds();
    let c = c.min(COLS - 1);
    (b[c], b[c + 1])
}

/// Counts per (row, latency column) over a known time range: `rows` rows of `interval` ns
/// from `origin`.
///
/// Rows are indexed directly (one array lookup per event, no tree or hash), but a row's 100
/// counters are only allocated when an event lands in it, so a long capture binned finely
/// (a million rows) costs a pointer per empty row, not 800 bytes. Events outside the range
/// (before `origin`, or at or after [`Spectrogram::end`]) are not binned, only counted
/// ([`Spectrogram::outside`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spectrogram {
    origin: u64,
    interval: u64,
    rows: Vec<Option<Box<[u64; COLS]>>>,
    total: u64,
    outside: u64,
}

impl Spectrogram {
    /// An empty spectrogram of `rows` rows of `interval` ns (at least 1) from `origin`.
    pub fn new(origin: u64, interval: u64, rows: usize) -> Spectrogram {
        Spectrogram {
            origin,
            interval: interval.max(1),
            rows: vec![None; rows],
            total: 0,
            outside: 0,
        }
    }

    /// The spectrogram that covers `start..=end` (ns since boot) in rows of `interval` ns,
    /// as [`crate::capture_span`] gives for a whole capture: every event of the capture has a row.
    pub fn covering(start: u64, end: u64, interval: u64) -> Spectrogram {
        let interval = interval.max(1);
        let rows = end.saturating_sub(start) / interval + 1;
        Spectrogram::new(start, interval, usize::try_from(rows).unwrap_or(usize::MAX))
    }

    /// An approximation from chunk summaries alone, as the viewer draws its first frame
    /// before decoding anything: `rows` rows of `interval` ns from `start`, each chunk's log2
    /// histogram put in the column of each bucket's geometric middle and spread evenly over the
    /// rows its time range covers (a chunk straddling the range's edge adds only its share).
    /// Inside the range the total is exact; where the events are within it is not.
    pub fn from_summaries(chunks: &[ChunkInfo], start: u64, interval: u64, rows: usize) -> Spectrogram {
        let mut sp = Spectrogram::new(start, interval, rows);
        let (end, interval) = (sp.end(), sp.interval);
        if rows == 0 {
            return sp;
        }
        for c in chunks {
            let s = &c.summary;
            if s.events == 0 || s.max_ts < start || s.min_ts >= end {
                continue;
            }
            // Rows the chunk spans, counted from the range's start (negative: before it).
            let row_of = |ts: u64| (i128::from(ts) - i128::from(start)).div_euclid(i128::from(interval));
            let (first, last) = (row_of(s.min_ts), row_of(s.max_ts));
            let span_rows = (last - first + 1) as u64;
            let shown = first.max(0)..=last.min(rows as i128 - 1);
            for (b, &n) in s.log2_hist.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                let (lo, hi) = log2_bucket_range(b);
                let mid = (lo as f64 * hi.min(u64::MAX / 2) as f64).sqrt() as u64;
                let col = column(mid);
                let per_row = n / span_rows;
                let extra = n % span_rows;
                for r in shown.clone() {
                    // Hand the remainder to the first rows so that the total stays exact.
                    let k = (r - first) as u64;
                    sp.add_to_row(r as usize, col, per_row + u64::from(k < extra));
                }
            }
        }
        sp
    }

    /// Count one event that started at `ts` and took `latency` ns.
    #[inline]
    pub fn add(&mut self, ts: u64, latency: u64) {
        // Before the origin wraps to a huge row: one bounds check covers both edges.
        let row = ts.wrapping_sub(self.origin) / self.interval;
        self.add_to_row(usize::try_from(row).unwrap_or(usize::MAX), column(latency), 1);
    }

    /// Add `n` events to cell (`row`, `col`) (counted as outside when the row is not in range;
    /// `col` is clamped to the last column).
    #[inline]
    pub fn add_to_row(&mut self, row: usize, col: usize, n: u64) {
        match self.rows.get_mut(row) {
            Some(r) => {
                r.get_or_insert_with(|| Box::new([0; COLS]))[col.min(COLS - 1)] += n;
                self.total += n;
            }
            None => self.outside += n,
        }
    }

    /// Add the counts of `other`, which must have the same origin, interval and row count
    /// (else nothing is added and `false` is returned).
    pub fn merge(&mut self, other: &Spectrogram) -> bool {
        if (other.origin, other.interval, other.rows.len()) != (self.origin, self.interval, self.rows.len()) {
            return false;
        }
        for (mine, theirs) in self.rows.iter_mut().zip(&other.rows) {
            if let Some(theirs) = theirs {
                let mine = mine.get_or_insert_with(|| Box::new([0; COLS]));
                for (a, b) in mine.iter_mut().zip(theirs.iter()) {
                    *a += b;
                }
            }
        }
        self.total += other.total;
        self.outside += other.outside;
        true
    }

    /// Start of the first row, ns since boot.
    pub fn origin(&self) -> u64 {
        self.origin
    }

    /// Length of a row, ns (at least 1).
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows (not whether nothing was counted).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// End of the last row, ns since boot (at least one past the origin).
    pub fn end(&self) -> u64 {
        self.origin
            .saturating_add(self.interval.saturating_mul(self.rows.len() as u64))
            .max(self.origin.saturating_add(1))
    }

    /// Events binned (outside ones excluded).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Events that fell outside the rows and were not binned.
    pub fn outside(&self) -> u64 {
        self.outside
    }

    /// The highest count in any cell (what colour scales are relative to).
    pub fn max_cell(&self) -> u64 {
        self.rows().flat_map(|(_, r)| r.iter().copied()).max().unwrap_or(0)
    }

    /// Index of the last row that holds an event, if any.
    pub fn last_row(&self) -> Option<u64> {
        self.rows.iter().rposition(Option::is_some).map(|r| r as u64)
    }

    /// Counts of row `r` (all zero for a row without events or out of range).
    pub fn row(&self, r: u64) -> [u64; COLS] {
        usize::try_from(r)
            .ok()
            .and_then(|r| self.rows.get(r))
            .and_then(|c| c.as_deref().copied())
            .unwrap_or([0; COLS])
    }

    /// Non-empty rows, in time order, as (row index, counts).
    pub fn rows(&self) -> impl Iterator<Item = (u64, &[u64; COLS])> + '_ {
        self.rows
            .iter()
            .enumerate()
            .filter_map(|(r, c)| c.as_deref().map(|c| (r as u64, c)))
    }

    /// Sum of the counts in rows `rows` and columns `cols` (both clamped).
    pub fn sum(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> u64 {
        let rows = rows.start.min(self.rows.len())..rows.end.min(self.rows.len());
        let cols = cols.start.min(COLS)..cols.end.min(COLS);
        self.rows[rows]
            .iter()
            .flatten()
            .map(|r| r[cols.clone()].iter().sum::<u64>())
            .sum()
    }

    /// Start of row `r`, ns since boot.
    pub fn row_start(&self, r: u64) -> u64 {
        self.origin.saturating_add(r.saturating_mul(self.interval))
    }
}

/// Map a cell count to one of `levels` shades, log-scaled against the highest count so that a
/// single event is visible next to a million: 0 only for an empty cell, 1 for a single event
/// (what the legends of the viewer and of `iocap spectrogram` say), `levels - 1` for the
/// highest count. The viewer, `iocap spectrogram` and the SVG heatmap all shade through this.
pub fn shade(count: u64, max: u64, levels: usize) -> usize {
    if count == 0 || levels < 2 {
        return 0;
    }
    let max = max.max(count);
    if max == 1 {
        return levels - 1;
    }
    let f = ((count as f64).ln() / (max as f64).ln()).clamp(0.0, 1.0);
    1 + (f * (levels - 2) as f64).round() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_table_agrees_with_a_search() {
        let b = lower_bounds();
        let search = |ns: u64| b.partition_point(|&lo| lo <= ns).saturating_sub(1).min(COLS - 1);
        for ns in (0..200_000).chain((0..64).flat_map(|k| [(1u64 << k) - 1, 1 << k, (1 << k) + 1])) {
            assert_eq!(column(ns), search(ns), "{ns}");
        }
        // Every bound and its neighbours, and a spread of values up to u64::MAX.
        for &lo in b.iter() {
            for ns in [lo.saturating_sub(1), lo, lo + 1] {
                assert_eq!(column(ns), search(ns), "{ns}");
            }
        }
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let ns = x >> (x % 64);
            assert_eq!(column(ns), search(ns), "{ns}");
        }
    }

    #[test]
    fn columns_are_ten_per_decade() {
        assert_eq!(column(0), 0);
        assert_eq!(column(1), 1);
        assert_eq!(column(10), 10);
        assert_eq!(column(9), 9, "the first decade is 1 ns per column");
        assert_eq!(column(12), 10);
        assert_eq!(column(13), 11, "10^1.1 = 12.6 rounds to 13");
        assert_eq!(column(1_000), 30);
        assert_eq!(column(999), 29);
        assert_eq!(column(1_000_000), 60);
        assert_eq!(column(999_999_999), 89);
        assert_eq!(column(1_000_000_000), 90);
        assert_eq!(column(u64::MAX), COLS - 1);
        for c in 0..COLS {
            let (lo, hi) = column_range(c);
            assert!(lo < hi);
            assert_eq!(column(lo), c);
            assert_eq!(column(hi - 1), c);
            assert!(c < COLS_PER_DECADE || hi * 10 >= lo * 12, "column {c} is 20 % wide");
        }
        // Three significant digits: short literals in a filter.
        assert_eq!(column_range(65), (3_160_000, 3_980_000));
        assert_eq!(column_range(72).0, 15_800_000);
        assert_eq!(column_range(95).0, 3_160_000_000);
        for c in 2 * COLS_PER_DECADE..COLS {
            let exact = 10f64.powf(c as f64 / COLS_PER_DECADE as f64);
            let lo = column_range(c).0 as f64;
            assert!((lo - exact).abs() / exact < 0.004, "column {c}: {lo} for {exact}");
            let digits = lo.to_string().trim_end_matches('0').len();
            assert!(digits <= 3, "column {c}: {lo}");
        }
    }

    #[test]
    fn rows_count_by_interval_and_merge() {
        let mut a = Spectrogram::new(1_000, 100, 1_000);
        let mut b = Spectrogram::new(1_000, 100, 1_000);
        a.add(1_000, 5); // row 0
        a.add(1_099, 5_000); // row 0
        b.add(1_100, 5_000); // row 1
        b.add(1_050, 5); // row 0
        b.add(500, 5); // before the origin: outside
        b.add(u64::MAX, 1); // a hostile timestamp: outside, nothing allocated
        b.add(1_000 + 100 * 1_000, 1); // the end is exclusive
        assert!(a.merge(&b));
        assert_eq!((a.total(), a.outside()), (4, 3));
        assert_eq!(a.row(0)[column(5)], 2);
        assert_eq!(a.row(0)[column(5_000)], 1);
        assert_eq!(a.row(1)[column(5_000)], 1);
        assert_eq!(a.rows().count(), 2, "only rows with events are allocated");
        assert_eq!(a.last_row(), Some(1));
        assert_eq!(a.max_cell(), 2);
        assert_eq!(a.sum(0..2, column(5_000)..COLS), 2);
        assert_eq!(a.end(), 1_000 + 100 * 1_000);
        assert!(
            !a.merge(&Spectrogram::new(0, 100, 1_000)),
            "different origins do not merge"
        );
        assert!(
            !a.merge(&Spectrogram::new(1_000, 100, 10)),
            "different row counts do not merge"
        );
        let c = Spectrogram::covering(1_000, 1_250, 100);
        assert_eq!(c.len(), 3, "1000..=1250 in rows of 100: 1000, 1100, 1200");
    }

    fn chunk(min_ts: u64, max_ts: u64, latency: u64, n: u64) -> ChunkInfo {
        let mut summary = iocap_format::ChunkSummary {
            events: n,
            syscalls: n,
            min_ts,
            max_ts,
            ..Default::default()
        };
        summary.log2_hist[iocap_format::log2_bucket(latency)] = n;
        ChunkInfo { offset: 0, summary }
    }

    #[test]
    fn summaries_keep_totals_inside_the_range() {
        // One chunk of 1000 events over 10 rows, all around 1 µs.
        let g = Spectrogram::from_summaries(&[chunk(0, 999, 1_000, 1000)], 0, 100, 10);
        assert_eq!(g.total(), 1000);
        let col = column(1_000);
        assert!((col.saturating_sub(2)..=col + 2).any(|c| g.row(0)[c] == 100));
        // A range over the second half of the chunk sees about half of it.
        let half = Spectrogram::from_summaries(&[chunk(0, 999, 1_000, 1000)], 500, 100, 10);
        assert_eq!(half.total(), 500);
        // A chunk outside the range adds nothing.
        assert_eq!(
            Spectrogram::from_summaries(&[chunk(5_000, 6_000, 10, 7)], 0, 100, 10).total(),
            0
        );
    }

    #[test]
    fn uneven_spread_keeps_the_count() {
        let g = Spectrogram::from_summaries(&[chunk(0, 299, 50, 10)], 0, 100, 3);
        assert_eq!(g.total(), 10);
        assert_eq!(g.sum(0..1, 0..COLS), 4);
    }

    #[test]
    fn shades_are_monotonic_and_keep_single_events_visible() {
        assert_eq!(shade(0, 1000, 10), 0);
        assert_eq!(shade(1, 1_000_000, 10), 1);
        assert_eq!(shade(1000, 1000, 10), 9);
        assert_eq!(shade(1, 1, 10), 9);
        assert_eq!(shade(1, 1000, 10), 1);
        let mut last = 0;
        for c in 0..=1000 {
            let s = shade(c, 1000, 10);
            assert!(s >= last);
            assert!(c == 0 || (1..=9).contains(&s));
            last = s;
        }
        // Any number of levels: one event is the first shade, the highest count the last.
        for levels in 2..12 {
            assert_eq!(shade(1, 151, levels), 1);
            assert_eq!(shade(151, 151, levels), levels - 1);
        }
    }
}
