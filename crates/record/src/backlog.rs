//! How much the kernel may hold in the ring before it sheds syscall and block records
//! (`backlog_max` in the BPF programs).
//!
//! What waits in the ring is what a killed recorder loses, and it drains only as fast as the
//! slowest stage (the writer, or the poller itself when it gets little CPU). So the limit is a
//! time: while the pipeline keeps up, a generous one, so that a burst or a writer's pause (a
//! chunk compressed, a disk write) is absorbed; once it does not (the ring has not been found
//! empty for a while), `LAG` of what the pipeline has been draining lately, in wall time, so a
//! recorder starved of CPU still ends its file within a fraction of a second of the present.

use std::time::{Duration, Instant};

/// The backlog allowed, as time of the recent drain rate, once the pipeline falls behind.
const LAG: Duration = Duration::from_millis(150);
/// The least allowed however slow the drain: ~7,000 records.
const MIN: u64 = 256 << 10;
/// The least allowed while the pipeline keeps up, as a share of the ring: a quarter of the
/// default 64 MiB is a burst of ~460,000 events, or a writer's pause of ~100 ms at the fastest
/// rate one ring sees (~150 MB/s).
const KEEPING_UP_SHARE: u64 = 4;
/// The pipeline falls behind when the poller has not found the ring empty for this long: a
/// burst faster than the writer, shorter than this, is absorbed whole (if the ring holds it).
const BEHIND_AFTER: Duration = Duration::from_millis(500);
/// It keeps up again once it has found the ring empty at every poll for this long (an
/// overload held at the tight limit empties it now and then: that is not keeping up).
const RECOVERED_AFTER: Duration = Duration::from_millis(500);
/// The oldest an event may be when the poller takes it, once behind for `DISCARD_AFTER`.
const MAX_AGE: Duration = Duration::from_millis(400);
const DISCARD_AFTER: Duration = Duration::from_millis(300);
/// Length of one measure of the drain rate.
const WINDOW: Duration = Duration::from_millis(250);
/// Windows remembered for the best recent rate.
const WINDOWS: usize = 8;

/// The limit before anything is known (the writer reads /proc at the start, draining nothing).
pub(crate) const INITIAL: u64 = 1 << 20;

/// The drain rate, measured by the poller, and the limit it implies.
pub(crate) struct Backlog {
    ring: u64,
    window_start: Instant,
    window_bytes: u64,
    /// Rates of the last windows, bytes per wall second, newest last.
    rates: Vec<f64>,
    /// The last poll that found the ring empty, and the last that did not.
    last_empty: Instant,
    last_not_empty: Instant,
    /// Since when the pipeline is behind.
    behind: Option<Instant>,
}

impl Backlog {
    pub(crate) fn new(ring_bytes: u64) -> Backlog {
        Backlog {
            ring: ring_bytes,
            window_start: Instant::now(),
            window_bytes: 0,
            rates: Vec::with_capacity(WINDOWS),
            last_empty: Instant::now(),
            last_not_empty: Instant::now(),
            behind: None,
        }
    }

    /// `bytes` were taken from the ring; `emptied` when it was found empty afterwards.
    pub(crate) fn drained(&mut self, bytes: u64, emptied: bool, now: Instant) {
        self.window_bytes += bytes;
        if emptied {
            self.last_empty = now;
        } else {
            self.last_not_empty = now;
        }
        self.behind = match self.behind {
            None if now.duration_since(self.last_empty) >= BEHIND_AFTER => Some(now),
            Some(_) if now.duration_since(self.last_not_empty) >= RECOVERED_AFTER => None,
            b => b,
        };
        let dt = now.duration_since(self.window_start);
        if dt >= WINDOW {
            if self.rates.len() == WINDOWS {
                self.rates.remove(0);
            }
            self.rates.push(self.window_bytes as f64 / dt.as_secs_f64());
            (self.window_start, self.window_bytes) = (now, 0);
        }
    }

    /// Whether the pipeline has fallen behind (and not caught up since).
    pub(crate) fn is_behind(&self) -> bool {
        self.behind.is_some()
    }

    /// How old an event may be when the poller takes it from the ring, once the pipeline has
    /// been behind for a while (`None` until then: a pause shorter than that loses nothing, its
    /// events are only written late).
    pub(crate) fn max_age(&self, now: Instant) -> Option<Duration> {
        let since = self.behind?;
        (now.duration_since(since) >= DISCARD_AFTER).then_some(MAX_AGE)
    }

    /// The limit now.
    pub(crate) fn limit(&self) -> u64 {
        let half = self.ring / 2;
        let of = |rate: f64| (rate * LAG.as_secs_f64()) as u64;
        if self.behind.is_none() {
            let best = self.rates.iter().copied().fold(0.0, f64::max);
            of(best).max(self.ring / KEEPING_UP_SHARE).min(half)
        } else {
            // Behind: what it drains now, not what it drained before it fell behind.
            let latest = self.rates.last().copied().unwrap_or(0.0);
            of(latest).clamp(MIN.min(half), half)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    /// Feed `secs` of draining `rate` bytes a second in 1 ms steps, the ring emptied or not.
    fn run(b: &mut Backlog, t: &mut Instant, secs: f64, rate: u64, emptied: bool) {
        for _ in 0..(secs * 1000.0) as u32 {
            *t += Duration::from_millis(1);
            b.drained(rate / 1000, emptied, *t);
        }
    }

    #[test]
    fn generous_while_keeping_up_tight_once_behind() {
        let mut t = Instant::now();
        let mut b = Backlog::new(64 << 20);
        assert_eq!(b.max_age(t), None);
        // Quiet and keeping up: the generous floor, not 150 ms of a trickle.
        run(&mut b, &mut t, 1.0, MB / 10, true);
        assert_eq!(b.limit(), 16 << 20);
        // A burst drained at 200 MB/s: 150 ms of it.
        run(&mut b, &mut t, 0.5, 200 * MB, true);
        assert_eq!(b.limit(), 30 * MB);
        // Then starved: 0.5 MB/s and the ring never empty. Within 500 ms the limit is 150 ms
        // of that (held at the floor), not of the burst's rate before.
        run(&mut b, &mut t, 0.9, MB / 2, false);
        assert_eq!(b.limit(), MIN);
        assert_eq!(b.max_age(t), Some(MAX_AGE), "and what the ring held is not waited for");
        run(&mut b, &mut t, 1.0, 4 * MB, false);
        assert_eq!(b.limit(), 600_000);
        // Behind, an empty ring now and then is not keeping up; 500 ms of it is.
        run(&mut b, &mut t, 0.001, 4 * MB, true);
        run(&mut b, &mut t, 0.1, 4 * MB, false);
        assert_eq!(b.limit(), 600_000);
        run(&mut b, &mut t, 0.6, 4 * MB, true);
        assert_eq!(
            b.limit(),
            16 << 20,
            "generous again (the burst is out of the recent windows)"
        );
        assert_eq!(b.max_age(t), None);
        // A pause shorter than the discard delay discards nothing.
        let mut brief = Backlog::new(64 << 20);
        run(&mut brief, &mut t, 0.5, MB, true);
        run(&mut brief, &mut t, 0.75, MB, false);
        assert_eq!(brief.max_age(t), None, "a pause of 750 ms discards nothing");
        // Never more than half the ring.
        let mut small = Backlog::new(1 << 20);
        run(&mut small, &mut t, 0.3, 100 * MB, true);
        assert_eq!(small.limit(), 1 << 19);
    }
}
