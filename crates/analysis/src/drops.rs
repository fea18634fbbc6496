//! When the recorder lost events: drops placed in time.
//!
//! The recorder reads the kernel's per-CPU drop counters a few times a second and writes each
//! reading that grew as a stats frame with the time it was read, so drops between two readings
//! happened in between. Older captures have only the cumulative count each chunk summary
//! carries, which places drops only as well as chunk time ranges do (a chunk starts at its
//! earliest syscall, which can be seconds before it was closed): used only when a file has no
//! readings.

use iocap_format::{Reader, Source};

/// What [`of_processes`] found: the drops of some processes, and of every process, in a range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessDrops {
    /// Events of those processes dropped; `None` when the capture does not say whose events
    /// were dropped (a recorder before format 1.22 that dropped some).
    pub of_processes: Option<u64>,
    /// Events dropped in all ([`between`]).
    pub all: u64,
}

/// Events of the process entries `procs` (ids, as `iocap_filter::Filter::processes` gives for
/// a filter naming processes) dropped in `[start, end)` (ns since boot), with every drop of
/// that range: "N of this process's events (M in all)". Placed by the same readings as
/// [`between`], so the first is at most the second.
pub fn of_processes<S: Source>(r: &Reader<S>, procs: &[u32], start: u64, end: u64) -> ProcessDrops {
    let all = between(r, start, end);
    let of_processes = r.drops_by_process(start, end).map(|by| {
        (by.iter())
            .filter(|d| procs.contains(&d.proc))
            .fold(0u64, |a, d| a.saturating_add(d.count))
            .min(all)
    });
    ProcessDrops { of_processes, all }
}

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
    use iocap_format::{DropStats, Event, Meta, ProcDropStats, ProcDrops, ProcEntry, Writer, WriterOptions};

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

    /// dd (entry 1) loses 90 events by 1 s and 100 more by 2 s, postgres (entry 2) 50 by 2 s,
    /// and 10 are of no known process.
    fn placed() -> Reader<Vec<u8>> {
        let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
        for (pid, name) in [(100, "dd"), (200, "postgres")] {
            let name = w.intern(name.as_bytes());
            w.add_proc(ProcEntry {
                pid,
                name,
                ..ProcEntry::default()
            });
        }
        w.push(&Event::syscall(0, 1_000, 100, 100, 0, 1)).unwrap();
        let s = 1_000_000_000;
        for (ts, total, procs) in [
            (s, 100, vec![(100, 1, 90)]),
            (2 * s, 250, vec![(100, 1, 100), (200, 2, 50)]),
        ] {
            w.record_drops(&DropStats {
                ts,
                per_cpu: vec![total],
            })
            .unwrap();
            let procs = procs
                .into_iter()
                .map(|(pid, proc, count)| ProcDrops { pid, proc, count })
                .collect();
            w.record_drops_by_process(&ProcDropStats { ts, procs }).unwrap();
        }
        Reader::from_bytes(w.finish(3 * s).unwrap()).unwrap()
    }

    #[test]
    fn a_process_drops_are_placed_by_the_same_readings_as_the_total() {
        let r = placed();
        let s = 1_000_000_000;
        let got = |procs: &[u32], a, b| of_processes(&r, procs, a, b);
        let pd = |of: u64, all| ProcessDrops {
            of_processes: Some(of),
            all,
        };
        assert_eq!(got(&[1], 0, 3 * s), pd(190, 250));
        assert_eq!(got(&[2], 0, 3 * s), pd(50, 250));
        assert_eq!(got(&[1, 2], 0, 3 * s), pd(240, 250), "10 of no known process");
        assert_eq!(got(&[1], 0, s + 1), pd(90, 100));
        assert_eq!(got(&[2], 0, s + 1), pd(0, 100));
        assert_eq!(got(&[1], s + 1, 3 * s), pd(100, 150));
        assert_eq!(got(&[], 0, 3 * s), pd(0, 250));
        // The older capture: drops, none placed.
        let old = capture();
        let d = of_processes(&old, &[1], 0, u64::MAX);
        assert_eq!((d.of_processes, d.all), (None, 300));
    }
}
