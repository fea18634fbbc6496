//! The K slowest events of a scan, kept in bounded memory (the viewer's latency-sorted event
//! list): 16 bytes an event, candidates below the K-th latency so far turned away with one
//! comparison, and a floor read from the chunk summaries so that most events never are
//! candidates.

use iocap_format::{log2_bucket_range, ChunkInfo, LOG2_BUCKETS};

/// One of the slowest events: where it is (chunk, row) and its latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slow {
    /// The event's latency, ns.
    pub latency: u64,
    /// Index of its chunk in the capture.
    pub chunk: u32,
    /// Its row in the chunk.
    pub row: u32,
}

impl Slow {
    /// Slowest first, then file order: a total order, so which K are kept does not depend
    /// on how the chunks were split between threads.
    fn order(a: &Slow, b: &Slow) -> std::cmp::Ordering {
        b.latency
            .cmp(&a.latency)
            .then(a.chunk.cmp(&b.chunk))
            .then(a.row.cmp(&b.row))
    }
}

/// The K slowest events seen: candidates at or above the K-th latency so far are appended,
/// and the list is cut back to K (a linear-time selection) when it reaches 1.5 K, so an event
/// costs one comparison and the memory stays bounded.
pub struct Slowest {
    k: usize,
    items: Vec<Slow>,
    /// The K-th latency once K were seen (before: a bound known from the summaries, or 0):
    /// anything faster cannot be kept.
    floor: u64,
}

impl Slowest {
    /// The `k` slowest of events of which at least `k` take `floor` ns or more (0 when not
    /// known, see [`floor`]): faster ones are never candidates.
    pub fn new(k: usize, floor: u64) -> Slowest {
        Slowest {
            k,
            items: Vec::new(),
            floor,
        }
    }

    /// Whether anything is kept at all (`k > 0`).
    pub fn keeps(&self) -> bool {
        self.k > 0
    }

    /// Room kept: pruning back to K every K/2 candidates.
    fn room(&self) -> usize {
        self.k + self.k / 2 + 1
    }

    /// Offer an event: kept if it may be among the K slowest.
    #[inline(always)]
    pub fn push(&mut self, s: Slow) {
        if s.latency >= self.floor && self.k > 0 {
            self.keep(s);
        }
    }

    /// The rarer half of [`Slowest::push`], out of the scan loop.
    #[inline(never)]
    fn keep(&mut self, s: Slow) {
        if self.items.capacity() == 0 {
            // Once, exactly: growing by doubling would overshoot the memory bound.
            self.items.reserve_exact(self.room());
        }
        self.items.push(s);
        if self.items.len() >= self.room() {
            self.prune();
        }
    }

    fn prune(&mut self) {
        if self.items.len() > self.k {
            self.items.select_nth_unstable_by(self.k - 1, Slow::order);
            self.items.truncate(self.k);
            self.floor = self.items.iter().map(|s| s.latency).min().unwrap_or(0);
        }
    }

    /// Add what another thread kept.
    pub fn merge(&mut self, o: Slowest) {
        self.floor = self.floor.max(o.floor);
        for s in o.items {
            self.push(s);
        }
    }

    /// Slowest first, ties in file order.
    pub fn into_sorted(mut self) -> Vec<Slow> {
        self.prune();
        self.items.sort_unstable_by(Slow::order);
        self.items
    }
}

/// The `k` slowest of two lists each sorted slowest first (as [`Slowest::into_sorted`] gives
/// them), sorted the same way: the slowest of a view, kept from one scan and of chunks
/// scanned since (a capture that grew), without sorting again.
pub fn merge_sorted(a: &[Slow], b: &[Slow], k: usize) -> Vec<Slow> {
    let mut out = Vec::with_capacity(k.min(a.len() + b.len()));
    let (mut i, mut j) = (0, 0);
    while out.len() < k {
        let next = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if Slow::order(x, y).is_le() => {
                i += 1;
                *x
            }
            (_, Some(y)) => {
                j += 1;
                *y
            }
            (Some(x), None) => {
                i += 1;
                *x
            }
            (None, None) => break,
        };
        out.push(next);
    }
    out
}

/// A latency that at least `k` events of `chunks` lying wholly within `[start, end)` reach,
/// from their summaries alone (0 when they cannot tell): the slowest are then found among
/// those events only, instead of every event being a candidate until a thread has seen `k`.
/// Only for a scan without a filter: a summary counts every event of its chunk.
pub fn floor(chunks: &[ChunkInfo], start: u64, end: u64, k: usize) -> u64 {
    if k == 0 {
        return 0;
    }
    let mut per_bucket = [0u64; LOG2_BUCKETS];
    for c in chunks {
        let s = &c.summary;
        if s.min_ts >= start && s.max_ts < end && s.min_ts <= s.max_ts {
            for (total, n) in per_bucket.iter_mut().zip(&s.log2_hist) {
                *total = total.saturating_add(*n);
            }
        }
    }
    // From the slowest bucket down, the first whose events and all slower ones are enough.
    let mut seen = 0u64;
    for b in (0..per_bucket.len()).rev() {
        seen = seen.saturating_add(per_bucket[b]);
        if seen >= k as u64 {
            return log2_bucket_range(b).0;
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_k_slowest_in_order_whatever_the_split() {
        let events: Vec<Slow> = (0..10_000u32)
            .map(|i| Slow {
                latency: u64::from(i.wrapping_mul(2_654_435_761) % 1000),
                chunk: i / 100,
                row: i % 100,
            })
            .collect();
        let mut want = events.clone();
        want.sort_by(Slow::order);
        want.truncate(37);
        let mut one = Slowest::new(37, 0);
        events.iter().for_each(|&s| one.push(s));
        assert_eq!(one.into_sorted(), want);
        let (mut a, mut b) = (Slowest::new(37, 0), Slowest::new(37, 0));
        for (i, &s) in events.iter().enumerate() {
            if i % 3 == 0 { &mut a } else { &mut b }.push(s);
        }
        a.merge(b);
        assert_eq!(a.into_sorted(), want);
        // Two scans' sorted lists, merged: the same as one scan of both.
        let (mut first, mut later) = (Slowest::new(37, 0), Slowest::new(37, 0));
        for (i, &s) in events.iter().enumerate() {
            if i < 6_000 { &mut first } else { &mut later }.push(s);
        }
        assert_eq!(merge_sorted(&first.into_sorted(), &later.into_sorted(), 37), want);
        assert_eq!(merge_sorted(&want, &[], 10), want[..10]);
        assert!(!Slowest::new(0, 0).keeps());
    }
}
