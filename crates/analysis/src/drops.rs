//! When the recorder lost events: drops placed in time.
//!
//! The recorder reads the kernel's per-CPU drop counters a few times a second and writes each
//! reading that grew as a stats frame with the time it was read, so drops between two readings
//! happened in between. Older captures have only the cumulative count each chunk summary
//! carries, which places drops only as well as chunk time ranges do (a chunk starts at its
//! earliest syscall, which can be seconds before it was closed): used only when a file has no
//! readings.

use iocap_format::{Reader, Source};

/// Events dropped in `[start, end)` (ns since boot): the growth of the cumulative count from
/// the last reading before `start` to the last reading before `end`.
pub fn between<S: Source>(r: &Reader<S>, start: u64, end: u64) -> u64 {
    let stats = r.drop_stats();
    if stats.is_empty() {
        return between_chunks(r, start, end);
    }
    // Readings are in time order within a file; the totals only grow.
    let upto = |t: u64| {
        let n = stats.partition_point(|s| s.ts < t);
        n.checked_sub(1).map_or(0, |i| stats[i].total())
    };
    upto(end).saturating_sub(upto(start))
}

fn between_chunks<S: Source>(r: &Reader<S>, start: u64, end: u64) -> u64 {
    let mut before = 0;
    let mut last = None;
    for c in r.chunks() {
        if c.summary.max_ts < start {
            before = before.max(c.summary.drops);
        } else if c.summary.min_ts < end {
            last = Some(last.unwrap_or(0).max(c.summary.drops));
        }
    }
    last.map_or(0, |l: u64| l.saturating_sub(before))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iocap_format::{DropStats, Event, Meta, Writer, WriterOptions};

    /// A capture with one chunk spanning 0..10 s and readings every second: 0 drops until
    /// 4 s, then 100 a second until 7 s.
    fn capture() -> Reader<Vec<u8>> {
        let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
        w.push(&Event::syscall(0, 1_000, 1, 1, 39, 0)).unwrap();
        for s in 1..=10u64 {
            let total = (s.saturating_sub(4) * 100).min(300);
            if total > 0 || s == 10 {
                w.record_drops(&DropStats {
                    ts: s * 1_000_000_000,
                    per_cpu: vec![total / 2, total - total / 2],
                })
                .unwrap();
            }
        }
        w.push(&Event::syscall(10_000_000_000, 1_000, 1, 1, 39, 0)).unwrap();
        Reader::from_bytes(w.finish(11_000_000_000).unwrap()).unwrap()
    }

    #[test]
    fn drops_are_placed_by_their_readings() {
        let r = capture();
        let s = 1_000_000_000;
        assert_eq!(between(&r, 0, 11 * s), 300);
        assert_eq!(between(&r, 0, 4 * s + 1), 0, "nothing dropped before 4 s");
        // Read at 5 s: happened in (4 s, 5 s], counted in the interval holding 5 s.
        assert_eq!(between(&r, 4 * s + 1, 5 * s + 1), 100);
        assert_eq!(between(&r, 5 * s + 1, 7 * s + 1), 200);
        assert_eq!(between(&r, 7 * s + 1, 11 * s), 0, "nothing after 7 s");
    }
}
