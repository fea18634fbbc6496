//! What makes a difference between two sides of a comparison (`iocap compare`) worth flagging:
//! an interval for each side's figure that accounts for the histogram's bucket width and the
//! sample size, and a flag when the two sides' intervals do not overlap.
//!
//! - A percentile's interval ([`quantile_interval`]) is distribution-free: the q-quantile of
//!   `n` events is, with the chosen confidence, an order statistic of rank within
//!   `n·q ± z·sqrt(n·q·(1−q))` (the normal approximation of the binomial count of events below
//!   the true quantile). Those two ranks are mapped to the low bound of the bucket holding the
//!   lower rank and the high bound of the bucket holding the higher one, so the interval is never
//!   narrower than the bucket the percentile falls in.
//! - A count's interval ([`poisson_interval`]) is Poisson's, by the score method:
//!   `n + z²/2 ± z·sqrt(n + z²/4)`, which stays sensible down to `n = 0` (`[0, z²]`). A rate is
//!   the count's interval divided by the side's duration.
//!
//! Two identical sides have identical intervals, which overlap: nothing is flagged.

use crate::hist::{bucket, bucket_range, LatencyHist};

/// The normal quantile of a two-sided 99 % interval: each side's interval holds the true value
/// with probability 0.99, so two sides of the same distribution are flagged far less than 1 % of
/// the time (their intervals must both miss).
pub const Z99: f64 = 2.576;

/// The confidence interval of a percentile `pct` (0 to 100) of `h`, as `[lo, hi]` ns (both
/// inclusive, clamped to the exact min and max); `None` when `h` is empty.
pub fn quantile_interval(h: &LatencyHist, pct: f64, z: f64) -> Option<(u64, u64)> {
    let n = h.count();
    if n == 0 {
        return None;
    }
    let q = (pct / 100.0).clamp(0.0, 1.0);
    let nf = n as f64;
    let centre = nf * q;
    let spread = z * (nf * q * (1.0 - q)).sqrt();
    // 1-based ranks: the point estimate's rank is ceil(n·q), so the interval's ends are the
    // ceilings of its ends, widened by one rank below for the floor of a continuous rank.
    let lo_rank = ((centre - spread).floor() as i64).clamp(1, n as i64) as u64;
    let hi_rank = ((centre + spread).ceil() as i64).clamp(1, n as i64) as u64;
    let lo = bucket_range(bucket(h.at_rank(lo_rank))).0.max(h.min());
    let hi = bucket_range(bucket(h.at_rank(hi_rank))).1.min(h.max());
    Some((lo, hi))
}

/// The Poisson score interval of a count `n`, as `[lo, hi]` events.
pub fn poisson_interval(n: u64, z: f64) -> (f64, f64) {
    let n = n as f64;
    let mid = n + z * z / 2.0;
    let half = z * (n + z * z / 4.0).sqrt();
    ((mid - half).max(0.0), mid + half)
}

/// Whether two closed intervals are disjoint: the difference between the two sides is larger
/// than either side's uncertainty allows.
pub fn disjoint<T: PartialOrd>(a: (T, T), b: (T, T)) -> bool {
    a.1 < b.0 || b.1 < a.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(lo: u64, hi: u64) -> LatencyHist {
        let mut h = LatencyHist::new();
        for v in lo..=hi {
            h.add(v);
        }
        h
    }

    #[test]
    fn a_percentile_interval_holds_the_estimate_and_covers_its_bucket() {
        let h = uniform(1, 10_000);
        for pct in [50.0, 90.0, 99.0, 99.9] {
            let (lo, hi) = quantile_interval(&h, pct, Z99).unwrap();
            let p = h.percentile(pct);
            assert!(lo <= p && p <= hi, "p{pct} {p} in [{lo}, {hi}]");
            let (blo, bhi) = bucket_range(bucket(p));
            assert!(
                lo <= blo && bhi.min(h.max()) <= hi,
                "p{pct}: the whole bucket {blo}..={bhi}"
            );
        }
        // The median of 10 000 events: ranks 5000 ± 2.576·50, so about [4871, 5129], widened to
        // buckets (of 256 ns there): [4864, 5375].
        assert_eq!(quantile_interval(&h, 50.0, Z99), Some((4864, 5375)));
        assert_eq!(quantile_interval(&LatencyHist::new(), 50.0, Z99), None);
    }

    #[test]
    fn fewer_events_give_a_wider_interval() {
        let small = uniform(1, 100);
        let big = uniform(1, 100);
        let mut bigger = big.clone();
        for _ in 0..99 {
            bigger.merge(&big);
        }
        let (slo, shi) = quantile_interval(&small, 50.0, Z99).unwrap();
        let (blo, bhi) = quantile_interval(&bigger, 50.0, Z99).unwrap();
        assert!(shi - slo > bhi - blo, "[{slo}, {shi}] vs [{blo}, {bhi}]");
        // A p99.9 of 100 events reaches the max: one event more or less moves it there.
        assert_eq!(quantile_interval(&small, 99.9, Z99).unwrap().1, 100);
    }

    #[test]
    fn a_shift_beyond_the_intervals_is_disjoint_and_the_same_side_is_not() {
        let a = uniform(1_000, 2_000);
        let b = uniform(1_500, 2_500);
        let ia = quantile_interval(&a, 50.0, Z99).unwrap();
        let ib = quantile_interval(&b, 50.0, Z99).unwrap();
        assert!(disjoint(ia, ib), "{ia:?} vs {ib:?}");
        assert!(!disjoint(ia, ia));
        let near = uniform(1_001, 2_001);
        assert!(!disjoint(ia, quantile_interval(&near, 50.0, Z99).unwrap()));
    }

    #[test]
    fn poisson_intervals() {
        let (lo, hi) = poisson_interval(0, Z99);
        assert_eq!(lo, 0.0);
        assert!((hi - Z99 * Z99).abs() < 1e-9);
        let (lo, hi) = poisson_interval(10_000, Z99);
        assert!(
            (lo - 9_745.0).abs() < 2.0 && (hi - 10_261.0).abs() < 2.0,
            "[{lo}, {hi}]"
        );
        assert!(disjoint(poisson_interval(10_000, Z99), poisson_interval(11_000, Z99)));
        assert!(!disjoint(poisson_interval(10_000, Z99), poisson_interval(10_100, Z99)));
    }
}
