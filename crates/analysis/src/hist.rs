//! The log-linear latency histogram ([`LatencyHist`]) and its log2 view.
//!
//! Buckets follow HdrHistogram's layout with 4 sub-bucket bits: values below 16 ns have a
//! bucket each; above, every power of two `[2^m, 2^(m+1))` is split into 16 equal linear
//! sub-buckets. A bucket is therefore never wider than 1/16 (6.25 %) of its lower bound, over
//! the whole `u64` range (1 ns to centuries), in 976 buckets. Because each power of two is
//! made of whole sub-buckets, the log2 view ([`LatencyHist::log2`]) is exact, and uses the
//! same bucket numbering as [`iocap_format::ChunkSummary::log2_hist`].

use iocap_format::{log2_bucket, LOG2_BUCKETS};

// The buckets are defined with the file format: a chunk's rollup is binned by them.
pub use iocap_format::latency::{bucket, bucket_range, BUCKETS, SUB_BITS};

/// A latency distribution: exact count, min, max and sum; counts per log-linear bucket.
///
/// Percentiles ([`LatencyHist::percentile`]) are *not* interpolated: like HdrHistogram's
/// `highestEquivalentValue` and biolatency's bucket bounds, the value reported is the inclusive
/// upper bound of the bucket that holds the requested rank, clamped to the exact `[min, max]`.
/// So a percentile never understates the latency, and overstates it by at most 6.25 %;
/// `percentile(100.0)` is the exact max.
///
/// Histograms are mergeable ([`LatencyHist::merge`]): the histogram of a union of event sets is
/// the merge of theirs, whatever the order, which is what parallel scans rely on.
#[derive(Clone, Debug)]
pub struct LatencyHist {
    /// Counts per bucket.
    counts: Counts,
    count: u64,
    /// `u64::MAX` while empty, so recording a latency is a compare with no special first case.
    min: u64,
    max: u64,
    /// The sum as two words: the low one takes every latency, the high one the rare carry (one
    /// store per event where a `u128` costs two).
    sum_lo: u64,
    sum_hi: u64,
}

/// A histogram's bucket counts: a few `(bucket, count)` pairs while it has events in few
/// buckets, then every bucket up to the highest used. A breakdown keeps a histogram per group,
/// and a breakdown by file has a group per file, most with a few events: a day's recording may
/// have millions. Dense, a group whose latencies reach 100 µs took 2 to 4 KB; its few buckets
/// take 8 bytes each.
#[derive(Clone, Debug)]
enum Counts {
    /// Each non-empty bucket as `bucket << COUNT_BITS | count`, by bucket, at most
    /// [`SPARSE_MAX`] of them.
    Sparse(Vec<u64>),
    /// Every bucket's count up to the highest non-empty one.
    Dense(Vec<u64>),
}

/// Bits of a sparse entry's count; its bucket (below [`BUCKETS`], 976) takes the 10 above.
const COUNT_BITS: u32 = 54;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;
/// Buckets a sparse histogram holds at most: 256 bytes, where a dense one holding buckets up to
/// 100 µs takes 2.1 KB.
const SPARSE_MAX: usize = 32;
/// Events from which a histogram fed one event at a time is dense whatever its buckets: 2 KB
/// is then at most 8 bytes an event.
const DENSE_AT: u64 = 256;

impl Counts {
    /// Add `n` to bucket `b` (below [`BUCKETS`]).
    #[inline]
    fn bump(&mut self, b: usize, n: u64) {
        match self {
            Counts::Dense(v) => {
                if b >= v.len() {
                    v.resize(b + 1, 0);
                }
                v[b] += n;
            }
            Counts::Sparse(_) => self.bump_sparse(b, n),
        }
    }

    #[inline(never)]
    fn bump_sparse(&mut self, b: usize, n: u64) {
        let Counts::Sparse(v) = self else {
            return self.bump(b, n);
        };
        let key = (b as u64) << COUNT_BITS;
        match v.binary_search_by_key(&key, |&e| e & !COUNT_MASK) {
            Ok(i) if (v[i] & COUNT_MASK).checked_add(n).is_some_and(|c| c <= COUNT_MASK) => v[i] += n,
            Err(i) if v.len() < SPARSE_MAX && n <= COUNT_MASK => v.insert(i, key | n),
            _ => {
                self.densify();
                self.bump(b, n);
            }
        }
    }

    /// The same counts, every bucket up to the highest.
    fn densify(&mut self) {
        if let Counts::Sparse(v) = self {
            let mut dense = Vec::new();
            for &e in v.iter() {
                let b = (e >> COUNT_BITS) as usize;
                dense.resize(dense.len().max(b + 1), 0);
                dense[b] = e & COUNT_MASK;
            }
            *self = Counts::Dense(dense);
        }
    }

    /// The non-empty buckets and their counts, by bucket.
    fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let (sparse, dense) = match self {
            Counts::Sparse(v) => (&v[..], &[][..]),
            Counts::Dense(v) => (&[][..], &v[..]),
        };
        let sparse = sparse.iter().map(|&e| ((e >> COUNT_BITS) as usize, e & COUNT_MASK));
        let dense = dense.iter().enumerate().filter(|&(_, &c)| c != 0).map(|(b, &c)| (b, c));
        sparse.chain(dense)
    }
}

/// Equal when they hold the same events' counts and totals, whichever way their counts are kept.
impl PartialEq for LatencyHist {
    fn eq(&self, other: &LatencyHist) -> bool {
        (self.count, self.min, self.max, self.sum_lo, self.sum_hi)
            == (other.count, other.min, other.max, other.sum_lo, other.sum_hi)
            && self.counts.nonzero().eq(other.counts.nonzero())
    }
}

impl Eq for LatencyHist {}

impl Default for LatencyHist {
    fn default() -> LatencyHist {
        LatencyHist {
            counts: Counts::Sparse(Vec::new()),
            count: 0,
            min: u64::MAX,
            max: 0,
            sum_lo: 0,
            sum_hi: 0,
        }
    }
}

impl LatencyHist {
    /// An empty histogram.
    pub fn new() -> LatencyHist {
        LatencyHist::default()
    }

    /// Count `ns` in the totals (everything but its bucket).
    #[inline(always)]
    fn add_total(&mut self, ns: u64) {
        // Branches rather than `min`/`max`: after the first few events they are never taken,
        // so they cost no store.
        if ns < self.min {
            self.min = ns;
        }
        if ns > self.max {
            self.max = ns;
        }
        self.count += 1;
        let (lo, carry) = self.sum_lo.overflowing_add(ns);
        self.sum_lo = lo;
        if carry {
            self.sum_hi += 1;
        }
    }

    fn add_sum(&mut self, v: u128) {
        let sum = self.sum() + v;
        (self.sum_lo, self.sum_hi) = (sum as u64, (sum >> 64) as u64);
    }

    /// Record one latency, in ns.
    #[inline]
    pub fn add(&mut self, ns: u64) {
        // The per-event path of every scan: no call, no multiply, one rarely taken branch once
        // the histogram is dense.
        self.add_in_bucket(bucket(ns), ns);
    }

    /// Record one latency whose bucket ([`bucket`]) the caller computed already (a scan that
    /// also bins it in a spectrogram); a wrong `b` miscounts but never panics.
    #[inline]
    pub fn add_in_bucket(&mut self, b: usize, ns: u64) {
        debug_assert_eq!(b, bucket(ns));
        if let Counts::Dense(v) = &mut self.counts {
            if let Some(c) = v.get_mut(b) {
                *c += 1;
                self.add_total(ns);
                return;
            }
        }
        self.add_new_bucket(b, ns);
    }

    /// [`LatencyHist::add_in_bucket`] past the dense counts' end, or while they are sparse.
    #[inline(never)]
    fn add_new_bucket(&mut self, b: usize, ns: u64) {
        if b < BUCKETS {
            // Past a few hundred events a bucket's slot costs less than a search per event.
            if self.count >= DENSE_AT {
                self.counts.densify();
            }
            self.counts.bump(b, 1);
        }
        self.add_total(ns);
    }

    /// Record `n` events of the same latency.
    pub fn add_n(&mut self, ns: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.counts.bump(bucket(ns), n);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.count += n;
        self.add_sum(u128::from(ns) * u128::from(n));
    }

    /// Add events known only by their buckets and totals (a chunk's rollup, one key of it):
    /// `buckets` gives each bucket's count, and `min`, `max` and `sum` are those of the same
    /// events' latencies. A bucket past the last is ignored.
    pub fn add_buckets(&mut self, buckets: impl IntoIterator<Item = (usize, u64)>, min: u64, max: u64, sum: u128) {
        let mut n = 0u64;
        for (b, k) in buckets.into_iter().filter(|&(b, k)| b < BUCKETS && k > 0) {
            self.counts.bump(b, k);
            n += k;
        }
        if n == 0 {
            return;
        }
        self.min = self.min.min(min);
        self.max = self.max.max(max);
        self.count += n;
        self.add_sum(sum);
    }

    /// Add every event of `other`.
    pub fn merge(&mut self, other: &LatencyHist) {
        if other.count == 0 {
            return;
        }
        match (&mut self.counts, &other.counts) {
            // The scans' threads' histograms, merged into one: bucket by bucket.
            (Counts::Dense(a), Counts::Dense(b)) => {
                if b.len() > a.len() {
                    a.resize(b.len(), 0);
                }
                for (a, b) in a.iter_mut().zip(b) {
                    *a += b;
                }
            }
            (counts, theirs) => {
                for (b, k) in theirs.nonzero() {
                    counts.bump(b, k);
                }
            }
        }
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.add_sum(other.sum());
    }

    /// Number of latencies recorded (exact).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether no latency was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Smallest latency recorded (exact); 0 when empty.
    pub fn min(&self) -> u64 {
        if self.count == 0 {
            0
        } else {
            self.min
        }
    }

    /// Largest latency recorded (exact); 0 when empty.
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Sum of every latency recorded (exact).
    pub fn sum(&self) -> u128 {
        u128::from(self.sum_hi) << 64 | u128::from(self.sum_lo)
    }

    /// Mean latency in ns (exact up to f64 rounding); 0 when empty.
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum() as f64 / self.count as f64
        }
    }

    /// The latency at or below which `pct` percent of the events fall (see the type's doc for
    /// what is reported); 0 when empty. `pct` is clamped to `[0, 100]`.
    pub fn percentile(&self, pct: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let q = if pct.is_nan() {
            0.0
        } else {
            pct.clamp(0.0, 100.0) / 100.0
        };
        // The rank of the value sought, 1-based: the smallest r with r >= q * count.
        self.at_rank((q * self.count as f64).ceil() as u64)
    }

    /// The value reported for the event of 1-based `rank` in increasing order: the inclusive
    /// upper bound of its bucket, clamped to the exact `[min, max]` (what
    /// [`LatencyHist::percentile`] reports for that rank); 0 when empty. `rank` is clamped to
    /// `[1, count]`.
    pub fn at_rank(&self, rank: u64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = rank.clamp(1, self.count);
        let mut seen = 0u64;
        for (b, c) in self.counts.nonzero() {
            seen += c;
            if seen >= rank {
                return bucket_range(b).1.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Non-empty buckets as `(lo, hi, count)`, `lo..=hi` in ns, in increasing order.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.counts.nonzero().map(|(b, c)| {
            let (lo, hi) = bucket_range(b);
            (lo, hi, c)
        })
    }

    /// The same events in log2 buckets: bucket `b` holds `[2^(b-1), 2^b)` ns, bucket 0 holds 0
    /// ([`iocap_format::log2_bucket_range`]). Exact: every log2 bucket is whole sub-buckets.
    pub fn log2(&self) -> [u64; LOG2_BUCKETS] {
        let mut out = [0u64; LOG2_BUCKETS];
        for (b, c) in self.counts.nonzero() {
            out[log2_bucket(bucket_range(b).0)] += c;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_tile_the_u64_range() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(15), 15);
        assert_eq!(bucket(16), 16);
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        let mut next = 0u64;
        for b in 0..BUCKETS {
            let (lo, hi) = bucket_range(b);
            assert_eq!(lo, next, "bucket {b} starts where {} ended", b.saturating_sub(1));
            assert!(hi >= lo);
            assert_eq!(bucket(lo), b);
            assert_eq!(bucket(hi), b);
            // Never wider than 1/16 of the lower bound (bar the exact small buckets).
            assert!(hi - lo <= lo / 16, "bucket {b}: {lo}..={hi}");
            next = hi.wrapping_add(1);
        }
        assert_eq!(next, 0, "the last bucket ends at u64::MAX");
    }

    #[test]
    fn exact_moments_and_percentiles_within_a_bucket() {
        let mut h = LatencyHist::new();
        // 1..=10_000 ns: the true p50 is 5000, p99 is 9900.
        for v in 1..=10_000u64 {
            h.add(v);
        }
        assert_eq!(h.count(), 10_000);
        assert_eq!((h.min(), h.max()), (1, 10_000));
        assert_eq!(h.sum(), 10_000 * 10_001 / 2);
        for (p, truth) in [(50.0, 5000u64), (90.0, 9000), (99.0, 9900), (99.9, 9990)] {
            let got = h.percentile(p);
            assert!(got >= truth, "p{p}: {got} < {truth}");
            assert!(got as f64 <= truth as f64 * 1.0625, "p{p}: {got} vs {truth}");
            assert_eq!(bucket(got), bucket(truth), "p{p} is in the true value's bucket");
        }
        assert_eq!(h.percentile(100.0), 10_000);
        assert_eq!(h.percentile(0.0), 1);
    }

    #[test]
    fn sums_past_u64_are_exact_and_empty_is_zero() {
        let mut h = LatencyHist::new();
        assert_eq!((h.min(), h.max(), h.sum()), (0, 0, 0));
        h.add(u64::MAX);
        h.add(u64::MAX);
        h.add_in_bucket(bucket(7), 7);
        h.add_n(u64::MAX - 1, 3);
        assert_eq!(h.sum(), 5 * u128::from(u64::MAX) - 3 + 7);
        assert_eq!((h.min(), h.max(), h.count()), (7, u64::MAX, 6));
        let mut m = LatencyHist::new();
        m.merge(&h);
        m.merge(&h);
        m.merge(&LatencyHist::new());
        assert_eq!((m.sum(), m.min(), m.count()), (2 * h.sum(), 7, 12));
    }

    #[test]
    fn merge_equals_adding_everything() {
        let (mut a, mut b, mut all) = (LatencyHist::new(), LatencyHist::new(), LatencyHist::new());
        for v in (0..5000u64).map(|i| i * i % 7919 * 1013) {
            if v % 3 == 0 {
                a.add(v);
            } else {
                b.add(v);
            }
            all.add(v);
        }
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        assert_eq!(ab, all);
        assert_eq!(ba, all);
        let mut e = LatencyHist::new();
        e.merge(&all);
        assert_eq!(e, all);
    }

    #[test]
    fn log2_view_matches_the_format_crates_buckets() {
        let mut h = LatencyHist::new();
        let values = [
            0u64,
            1,
            2,
            3,
            15,
            16,
            17,
            1023,
            1024,
            1_000_000,
            10_000_000_000,
            u64::MAX,
        ];
        let mut expect = [0u64; LOG2_BUCKETS];
        for v in values {
            h.add(v);
            expect[log2_bucket(v)] += 1;
        }
        assert_eq!(h.log2(), expect);
        assert_eq!(h.max(), u64::MAX);
        assert_eq!(h.percentile(100.0), u64::MAX);
    }

    /// Few buckets are kept as pairs, more as every bucket; both give the same figures, and
    /// histograms kept either way compare and merge as the same events.
    #[test]
    fn sparse_and_dense_counts_hold_the_same_events() {
        let values: Vec<u64> = (0..3000u64).map(|i| (i * 7919 % 4001) * 977 + i % 13).collect();
        let mut all = LatencyHist::new();
        values.iter().for_each(|&v| all.add(v));
        assert!(matches!(all.counts, Counts::Dense(_)));
        // One histogram per value's bucket: each stays sparse.
        let mut parts: Vec<LatencyHist> = Vec::new();
        for chunk in values.chunks(20) {
            let mut h = LatencyHist::new();
            chunk.iter().for_each(|&v| h.add(v));
            assert!(matches!(h.counts, Counts::Sparse(_)));
            parts.push(h);
        }
        let mut merged = LatencyHist::new();
        for p in &parts {
            merged.merge(p);
        }
        assert_eq!(merged, all);
        assert_eq!(merged.buckets().collect::<Vec<_>>(), all.buckets().collect::<Vec<_>>());
        for p in [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            assert_eq!(merged.percentile(p), all.percentile(p), "p{p}");
        }
        assert_eq!(merged.log2(), all.log2());
        // A sparse histogram merged into a dense one, and the other way round.
        let mut dense_first = all.clone();
        dense_first.merge(&parts[0]);
        let mut sparse_first = parts[0].clone();
        sparse_first.merge(&all);
        assert_eq!(dense_first, sparse_first);
        assert_eq!(dense_first.count(), all.count() + parts[0].count());
        // Many events in one bucket: dense from DENSE_AT on.
        let mut one = LatencyHist::new();
        (0..DENSE_AT + 1).for_each(|_| one.add(1000));
        assert!(matches!(one.counts, Counts::Dense(_)));
        // A count past what a pair holds (a rollup's, or add_n's) makes it dense, exactly.
        let mut big = LatencyHist::new();
        big.add_n(5_000, 1 << 60);
        big.add_n(5_000, 3);
        big.add(7);
        assert_eq!(
            big.buckets().map(|(_, _, c)| c).collect::<Vec<_>>(),
            vec![1, (1 << 60) + 3]
        );
        assert_eq!(big.percentile(50.0), 5_000);
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        let h = LatencyHist::new();
        assert_eq!((h.percentile(50.0), h.min(), h.max(), h.mean()), (0, 0, 0, 0.0));
        assert_eq!(h.buckets().count(), 0);
        assert_eq!(h.log2(), [0; LOG2_BUCKETS]);
    }
}
