//! Chunk summaries: what a chunk holds, readable without decompressing it.
//!
//! Every chunk frame starts with one, and the footer index repeats them all, so that a reader
//! draws the whole file's overview (event counts over time, a latency histogram, drops)
//! from the index alone.

use crate::columns::{Columns, MAX_CHUNK_EVENTS};
use crate::model::Class;
use crate::varint::{self, Cursor};

/// Number of log2 latency buckets: bucket `b` holds latencies in `[2^(b-1), 2^b)` ns,
/// bucket 0 holds 0.
pub const LOG2_BUCKETS: usize = 65;

/// The log2 bucket of a latency in ns.
#[inline]
pub fn log2_bucket(ns: u64) -> usize {
    (64 - ns.leading_zeros()) as usize
}

/// The `[lo, hi)` range of ns that log2 bucket `b` covers (`hi` saturates at `u64::MAX`).
pub fn log2_bucket_range(b: usize) -> (u64, u64) {
    match b {
        0 => (0, 1),
        64.. => (1 << 63, u64::MAX),
        b => (1 << (b - 1), 1 << b),
    }
}

/// What a chunk holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkSummary {
    /// Events in the chunk (at most [`MAX_CHUNK_EVENTS`]).
    pub events: u64,
    /// Syscall events among them.
    pub syscalls: u64,
    /// Block request events among them; `syscalls + blocks == events`.
    pub blocks: u64,
    /// Smallest event `ts` (start time) in the chunk, ns since boot; 0 for an empty chunk.
    pub min_ts: u64,
    /// Largest event `ts` (start, not end) in the chunk, ns since boot.
    pub max_ts: u64,
    /// Cumulative drops reported by the recorder when the chunk was closed.
    pub drops: u64,
    /// Smallest latency in the chunk, ns.
    pub min_latency: u64,
    /// Largest latency in the chunk, ns.
    pub max_latency: u64,
    /// Sum of latencies, saturating.
    pub sum_latency: u64,
    /// Event counts per log2 latency bucket.
    pub log2_hist: [u64; LOG2_BUCKETS],
}

impl Default for ChunkSummary {
    fn default() -> Self {
        ChunkSummary {
            events: 0,
            syscalls: 0,
            blocks: 0,
            min_ts: 0,
            max_ts: 0,
            drops: 0,
            min_latency: 0,
            max_latency: 0,
            sum_latency: 0,
            log2_hist: [0; LOG2_BUCKETS],
        }
    }
}

impl ChunkSummary {
    /// Summarize the events in `cols` (all columns present).
    pub fn of(cols: &Columns, drops: u64) -> ChunkSummary {
        let mut s = ChunkSummary {
            drops,
            ..ChunkSummary::default()
        };
        s.events = cols.len() as u64;
        s.blocks = cols.class.iter().filter(|&&c| c == Class::Block as u8).count() as u64;
        s.syscalls = s.events - s.blocks;
        let (mut min_ts, mut max_ts) = (u64::MAX, 0);
        for &t in &cols.ts {
            min_ts = min_ts.min(t);
            max_ts = max_ts.max(t);
        }
        if !cols.ts.is_empty() {
            (s.min_ts, s.max_ts) = (min_ts, max_ts);
        }
        // Four histograms added up at the end: one would make each event wait for the
        // previous one's count when both fall in the same bucket, as most do.
        let mut lanes = [[0u64; LOG2_BUCKETS]; 4];
        let (mut min_lat, mut max_lat, mut sum) = (u64::MAX, 0u64, 0u64);
        let mut quads = cols.latency.chunks_exact(4);
        for q in &mut quads {
            for (lane, &l) in lanes.iter_mut().zip(q) {
                lane[log2_bucket(l)] += 1;
                min_lat = min_lat.min(l);
                max_lat = max_lat.max(l);
                sum = sum.saturating_add(l);
            }
        }
        for &l in quads.remainder() {
            lanes[0][log2_bucket(l)] += 1;
            min_lat = min_lat.min(l);
            max_lat = max_lat.max(l);
            sum = sum.saturating_add(l);
        }
        if !cols.latency.is_empty() {
            (s.min_latency, s.max_latency) = (min_lat, max_lat);
        }
        s.sum_latency = sum;
        for (b, count) in s.log2_hist.iter_mut().enumerate() {
            *count = lanes.iter().map(|lane| lane[b]).sum();
        }
        s
    }

    /// Append the summary's encoding (varints, the histogram cut after its last non-zero
    /// bucket) to `out`, as chunk frames and the index hold it.
    pub fn encode(&self, out: &mut Vec<u8>) {
        for v in [
            self.events,
            self.syscalls,
            self.blocks,
            self.min_ts,
            self.max_ts,
            self.drops,
            self.min_latency,
            self.max_latency,
            self.sum_latency,
        ] {
            varint::put(out, v);
        }
        let used = self.log2_hist.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
        varint::put(out, used as u64);
        for &c in &self.log2_hist[..used] {
            varint::put(out, c);
        }
    }

    /// Decode a summary; `None` when the bytes end early, do not add up, or claim more than
    /// [`MAX_CHUNK_EVENTS`] events.
    pub fn decode(cur: &mut Cursor<'_>) -> Option<ChunkSummary> {
        let mut f = [0u64; 9];
        for v in &mut f {
            *v = cur.varint()?;
        }
        let [events, syscalls, blocks, min_ts, max_ts, drops, min_latency, max_latency, sum_latency] = f;
        let used = usize::try_from(cur.varint()?).ok().filter(|&u| u <= LOG2_BUCKETS)?;
        let mut log2_hist = [0u64; LOG2_BUCKETS];
        for c in &mut log2_hist[..used] {
            *c = cur.varint()?;
        }
        let consistent = events <= MAX_CHUNK_EVENTS
            && syscalls.checked_add(blocks) == Some(events)
            && min_ts <= max_ts
            && log2_hist.iter().try_fold(0u64, |a, &c| a.checked_add(c)) == Some(events);
        consistent.then_some(ChunkSummary {
            events,
            syscalls,
            blocks,
            min_ts,
            max_ts,
            drops,
            min_latency,
            max_latency,
            sum_latency,
            log2_hist,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(log2_bucket(0), 0);
        assert_eq!(log2_bucket(1), 1);
        assert_eq!(log2_bucket(2), 2);
        assert_eq!(log2_bucket(3), 2);
        assert_eq!(log2_bucket(1024), 11);
        assert_eq!(log2_bucket(u64::MAX), 64);
        for b in 0..LOG2_BUCKETS {
            let (lo, hi) = log2_bucket_range(b);
            assert_eq!(log2_bucket(lo), b);
            if b < 64 {
                assert_eq!(log2_bucket(hi - 1), b);
            }
        }
    }

    #[test]
    fn a_summary_counts_every_event_once() {
        use crate::model::Event;
        // 0 to 9 events (the four-lane histogram's remainders), then a larger mix.
        for n in (0..10).chain([1000]) {
            let mut cols = Columns::default();
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let mut events = Vec::new();
            for i in 0..n {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let lat = if i % 97 == 5 { u64::MAX - i } else { x >> (x % 64) };
                let mut e = Event::syscall(1_000 + (x % 5_000), lat, 1, 1, 0, 0);
                if i % 3 == 0 {
                    e.class = Class::Block;
                }
                cols.push(&e);
                events.push(e);
            }
            let s = ChunkSummary::of(&cols, 7);
            assert_eq!((s.events, s.drops), (n, 7));
            assert_eq!(
                s.blocks,
                events.iter().filter(|e| e.class == Class::Block).count() as u64
            );
            assert_eq!(s.min_ts, events.iter().map(|e| e.ts).min().unwrap_or(0));
            assert_eq!(s.max_ts, events.iter().map(|e| e.ts).max().unwrap_or(0));
            assert_eq!(s.min_latency, events.iter().map(|e| e.latency).min().unwrap_or(0));
            assert_eq!(s.max_latency, events.iter().map(|e| e.latency).max().unwrap_or(0));
            let sum = events.iter().fold(0u64, |a, e| a.saturating_add(e.latency));
            assert_eq!(s.sum_latency, sum);
            let mut hist = [0u64; LOG2_BUCKETS];
            for e in &events {
                hist[log2_bucket(e.latency)] += 1;
            }
            assert_eq!(s.log2_hist, hist, "{n} events");
        }
    }
}
