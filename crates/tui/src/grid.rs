//! The spectrogram as drawn: an [`iocap_analysis::Spectrogram`] over the rows of the current
//! view, and whether it is exact.
//!
//! A grid comes from one of two places. Right after opening, [`Grid::from_summaries`] builds it
//! from the chunk summaries in the index (no decompression: this is what makes the first frame
//! instant at any file size); it is approximate, since a summary only knows a chunk's time range
//! and a log2 latency histogram. Then the worker's exact scan ([`crate::query`]) replaces it,
//! binned with the same [`iocap_analysis::spectro::column`] as `iocap spectrogram`.

use iocap_analysis::spectro::{self, Spectrogram};
use iocap_format::{log2_bucket_range, ChunkInfo};

/// The view's spectrogram (rows of `interval` ns from the view's start) and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    pub spectro: Spectrogram,
    /// Built from summaries: times and latencies are spread, not exact.
    pub approximate: bool,
}

impl Grid {
    /// An empty grid of `rows` rows.
    pub fn empty(start: u64, interval: u64, rows: usize) -> Grid {
        Grid {
            spectro: Spectrogram::new(start, interval, rows),
            approximate: false,
        }
    }

    /// An approximation from chunk summaries: each chunk's log2 histogram is put in the column
    /// of each bucket's geometric middle and spread evenly over the rows its time range covers.
    pub fn from_summaries(chunks: &[ChunkInfo], start: u64, interval: u64, rows: usize) -> Grid {
        let mut g = Grid::empty(start, interval, rows);
        g.approximate = true;
        let (end, interval) = (g.end(), g.spectro.interval());
        if rows == 0 {
            return g;
        }
        for c in chunks {
            let s = &c.summary;
            if s.events == 0 || s.max_ts < start || s.min_ts >= end {
                continue;
            }
            // Rows the chunk spans, counted from the view's start (negative: before the view),
            // so that a chunk straddling the view's edge contributes only its share.
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
                let col = spectro::column(mid);
                let per_row = n / span_rows;
                let extra = n % span_rows;
                for r in shown.clone() {
                    // Hand the remainder to the first rows so that the total stays exact.
                    let k = (r - first) as u64;
                    g.spectro.add_to_row(r as usize, col, per_row + u64::from(k < extra));
                }
            }
        }
        g
    }

    /// Start of the first row, ns since boot.
    pub fn start(&self) -> u64 {
        self.spectro.origin()
    }

    /// End of the last row, ns since boot.
    pub fn end(&self) -> u64 {
        self.spectro.end()
    }

    pub fn max_cell(&self) -> u64 {
        self.spectro.max_cell()
    }

    pub fn total(&self) -> u64 {
        self.spectro.total()
    }

    /// Sum of the counts in rows `rows` and columns `cols` (both clamped).
    pub fn sum(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> u64 {
        self.spectro.sum(rows, cols)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_analysis::spectro::COLS;
    use iocap_format::{log2_bucket, ChunkSummary};

    fn chunk(min_ts: u64, max_ts: u64, latency: u64, n: u64) -> ChunkInfo {
        let mut summary = ChunkSummary {
            events: n,
            syscalls: n,
            min_ts,
            max_ts,
            ..ChunkSummary::default()
        };
        summary.log2_hist[log2_bucket(latency)] = n;
        ChunkInfo { offset: 0, summary }
    }

    #[test]
    fn summaries_keep_totals_inside_the_view() {
        // One chunk of 1000 events over 10 rows, all around 1 µs.
        let g = Grid::from_summaries(&[chunk(0, 999, 1_000, 1000)], 0, 100, 10);
        assert!(g.approximate);
        assert_eq!(g.total(), 1000);
        let col = spectro::column(1_000);
        assert!((col.saturating_sub(2)..=col + 2).any(|c| g.spectro.row(0)[c] == 100));
        // A view over the second half of the chunk sees about half of it.
        let half = Grid::from_summaries(&[chunk(0, 999, 1_000, 1000)], 500, 100, 10);
        assert_eq!(half.total(), 500);
        // A chunk outside the view adds nothing.
        assert_eq!(
            Grid::from_summaries(&[chunk(5_000, 6_000, 10, 7)], 0, 100, 10).total(),
            0
        );
    }

    #[test]
    fn uneven_spread_keeps_the_count() {
        let g = Grid::from_summaries(&[chunk(0, 299, 50, 10)], 0, 100, 3);
        assert_eq!(g.total(), 10);
        assert_eq!(g.sum(0..1, 0..COLS), 4);
    }
}
