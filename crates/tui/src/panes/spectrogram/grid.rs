//! The spectrogram as drawn: an [`iocap_analysis::Spectrogram`] over the rows of the current
//! view, and whether it is exact.
//!
//! Right after the view changes, the picture comes from the chunk summaries in the index
//! ([`Spectrogram::from_summaries`]: no decompression, which is what makes the first frame
//! instant at any file size); it is approximate, since a summary only knows a chunk's time
//! range and a log2 latency histogram. Then the worker's exact answer replaces it, binned
//! with the same columns as `iocap spectrogram`.

use iocap_analysis::spectro::Spectrogram;
use iocap_format::ChunkInfo;

/// The view's spectrogram (rows of `interval` ns from the view's start) and where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    /// Counts per (row, latency column).
    pub spectro: Spectrogram,
    /// Built from summaries: times and latencies are spread, not exact.
    pub approximate: bool,
}

impl Grid {
    /// An empty grid of `rows` rows: the answer is not in yet and the summaries cannot tell
    /// (they know nothing of a filter).
    pub fn empty(start: u64, interval: u64, rows: usize) -> Grid {
        Grid {
            spectro: Spectrogram::new(start, interval, rows),
            approximate: false,
        }
    }

    /// The index's approximation of `rows` rows from `start`.
    pub fn from_summaries(chunks: &[ChunkInfo], start: u64, interval: u64, rows: usize) -> Grid {
        Grid {
            spectro: Spectrogram::from_summaries(chunks, start, interval, rows),
            approximate: true,
        }
    }

    /// The worker's exact picture.
    pub fn exact(spectro: Spectrogram) -> Grid {
        Grid {
            spectro,
            approximate: false,
        }
    }

    /// Sum of the counts in rows `rows` and columns `cols` (both clamped).
    pub fn sum(&self, rows: std::ops::Range<usize>, cols: std::ops::Range<usize>) -> u64 {
        self.spectro.sum(rows, cols)
    }
}
