//! The two latency scales every analysis of a capture bins by, defined here because a
//! chunk's rollup ([`crate::Rollup`]) is binned by both when it is written:
//!
//! - the log-linear **buckets** of the latency histogram: HdrHistogram's layout with 4
//!   sub-bucket bits (values below 16 ns have a bucket each; above, every power of two
//!   `[2^m, 2^(m+1))` is split into 16 equal linear sub-buckets), [`BUCKETS`] of them over every
//!   `u64`, none wider than 6.25 % of its lower bound;
//! - the spectrogram's decimal **columns**, ten per decade from 1 ns to 10 s ([`COLS`]):
//!   column `c` holds `[10^(c/10), 10^((c+1)/10))` ns rounded to three significant digits (whole
//!   ns below 1 µs; in the first decade column `c` is `c` ns, from 0). Each column is at least
//!   20 % wide, so a bucket straddles at most one column bound: a latency's column is its
//!   bucket's lowest value's column, or the next ([`past_bound`]).

use std::sync::OnceLock;

/// Bits of linear sub-bucketing per power of two.
pub const SUB_BITS: u32 = 4;
const SUB: usize = 1 << SUB_BITS;
/// Number of log-linear buckets covering every `u64`.
pub const BUCKETS: usize = SUB * (64 - SUB_BITS as usize + 1);
/// Number of spectrogram columns: 10 per decade over 1 ns .. 10 s.
pub const COLS: usize = 100;
/// Spectrogram columns per decade.
pub const COLS_PER_DECADE: usize = 10;

/// The log-linear bucket of `ns`.
#[inline]
pub fn bucket(ns: u64) -> usize {
    if ns < SUB as u64 {
        return ns as usize;
    }
    let m = 63 - ns.leading_zeros(); // >= SUB_BITS
    let shift = m - SUB_BITS;
    let sub = ((ns >> shift) as usize) - SUB;
    SUB * (shift as usize + 1) + sub
}

/// The `[lo, hi]` values (both inclusive) that log-linear bucket `b` holds.
pub fn bucket_range(b: usize) -> (u64, u64) {
    if b < SUB {
        return (b as u64, b as u64);
    }
    let shift = (b / SUB - 1) as u32;
    let sub = (b % SUB) as u64;
    let lo = (SUB as u64 + sub) << shift;
    let hi = lo + ((1u64 << shift) - 1);
    (lo, hi)
}

/// Lower bounds of the columns, in ns: `10^(c/10)` rounded to three significant digits (whole
/// ns below 1 µs), exact at every decade, except in the first decade where whole nanoseconds
/// cannot be that fine: column `c < 10` is `c` ns. Within 0.4 % of sysdig's bounds from 100 ns
/// up, and each column still at least 20 % wide.
pub fn column_bounds() -> &'static [u64; COLS + 1] {
    static BOUNDS: OnceLock<[u64; COLS + 1]> = OnceLock::new();
    BOUNDS.get_or_init(|| {
        let mut b = [0u64; COLS + 1];
        for (c, bound) in b.iter_mut().enumerate() {
            let decade = 10u64.pow((c / COLS_PER_DECADE) as u32);
            let frac = 10f64.powf((c % COLS_PER_DECADE) as f64 / COLS_PER_DECADE as f64);
            // The third significant digit's unit (1 ns at least).
            let step = (decade / 100).max(1);
            let v = (decade as f64 * frac / step as f64).round() as u64 * step;
            *bound = if c < COLS_PER_DECADE { c as u64 } else { v };
        }
        b
    })
}

/// The column of each bucket's lowest value.
pub fn bucket_first_columns() -> &'static [u8; BUCKETS] {
    static FIRST: OnceLock<[u8; BUCKETS]> = OnceLock::new();
    FIRST.get_or_init(|| {
        let b = column_bounds();
        let mut t = [0u8; BUCKETS];
        for (bucket, c) in t.iter_mut().enumerate() {
            let lo = bucket_range(bucket).0;
            *c = b.partition_point(|&bound| bound <= lo).saturating_sub(1).min(COLS - 1) as u8;
        }
        t
    })
}

/// Whether `ns`, of bucket `b`, lies in the column after its bucket's lowest value's: the
/// bucket straddles a column bound and `ns` is at or past it. (Past the last column, where
/// everything goes to the last, it may say so all the same: callers clamp to `COLS - 1`.)
#[inline(always)]
pub fn past_bound(first: &[u8; BUCKETS], bounds: &[u64; COLS + 1], b: usize, ns: u64) -> bool {
    let c = usize::from(first.get(b).copied().unwrap_or(COLS as u8 - 1));
    ns >= bounds.get(c + 1).copied().unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column of `ns` by a search of the bounds.
    fn column_by_search(ns: u64) -> usize {
        let b = column_bounds();
        b.partition_point(|&bound| bound <= ns).saturating_sub(1).min(COLS - 1)
    }

    #[test]
    fn a_bucket_straddles_at_most_one_column_bound() {
        let first = bucket_first_columns();
        for b in 0..BUCKETS {
            let (lo, hi) = bucket_range(b);
            let (c_lo, c_hi) = (column_by_search(lo), column_by_search(hi));
            assert!(c_hi == c_lo || c_hi == c_lo + 1, "bucket {b}: {c_lo}..{c_hi}");
            // The table and one comparison give the search's column at both ends.
            for ns in [lo, hi] {
                let c = (usize::from(first[b]) + usize::from(past_bound(first, column_bounds(), b, ns))).min(COLS - 1);
                assert_eq!(c, column_by_search(ns), "{ns}");
            }
        }
    }
}
