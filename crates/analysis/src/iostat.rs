//! Per-device I/O statistics over intervals, from block events, with sysstat's definitions.
//!
//! Each block event is one request: made at `ts - queue`, issued to the
//! device at `ts`, completed at `ts + latency`. As the kernel's `/proc/diskstats`, which counts
//! a request when it completes, and `iostat -x` (sysstat 12), which divides its counters'
//! growth between two samples:
//!
//! - a request is counted (r/s, w/s, rkB/s, wkB/s) in the interval where it *completes*;
//! - its wait (r_await, w_await) is made → complete: queue time plus device time, and the
//!   await of an interval is the mean over the requests completed in it (sysstat: the growth
//!   of `rd_ticks` over the growth of `reads`);
//! - `aqu-sz` is the sum of the waits of every request completed in the interval (flushes
//!   and discards too) over the interval's length: sysstat's growth of `time_in_queue`
//!   (field 11, which the kernel adds to at completion) over the interval. A request that
//!   waits through several intervals adds all its wait to the one it completes in, so under
//!   long stalls this is not the mean queue depth;
//! - `qdepth` is that mean queue depth: the time-weighted number of requests in flight
//!   (inserted, not completed), each request's in-flight time split between the intervals it
//!   spans (Little's law). Over a span with no stall longer than an interval both agree;
//! - `%util` is the share of the interval in which the device had at least one request in
//!   flight: the union of the in-flight spans, clipped to the interval.
//!
//! Flush, discard and other requests are not reads or writes but do keep the device busy, so
//! they count in `aqu-sz`, `qdepth` and `%util` only (iostat shows them in columns of their
//! own). Intervals lie on a grid, by default starting at the capture's start; a grid that starts
//! earlier (whole wall-clock seconds, to line up with `iostat -t`'s samples) makes the first
//! interval partial, and the last may be partial too (the capture ended): their rates use their
//! real length.

use std::collections::BTreeMap;

use iocap_format::BlockOp;

/// The most intervals a capture may be split into (a guard against hostile timestamps and
/// absurd `--interval`s).
pub const MAX_INTERVALS: u64 = 10_000_000;

/// Why statistics cannot be computed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IoStatError {
    /// `[start, end)` split by `interval` gives more than [`MAX_INTERVALS`] intervals.
    TooManyIntervals {
        /// How many intervals that would be.
        intervals: u64,
    },
    /// The interval is zero.
    ZeroInterval,
}

impl std::fmt::Display for IoStatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IoStatError::TooManyIntervals { intervals } => write!(
                f,
                "the capture spans {intervals} intervals (at most {MAX_INTERVALS}): use a longer interval"
            ),
            IoStatError::ZeroInterval => f.write_str("the interval must be longer than 0"),
        }
    }
}

impl std::error::Error for IoStatError {}

/// Running totals of one device in one interval.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Bin {
    reads: u64,
    writes: u64,
    read_bytes: u64,
    write_bytes: u64,
    read_wait_ns: u128,
    write_wait_ns: u128,
    /// Waits of every request completed here, whatever its op (sysstat's `time_in_queue`).
    wait_ns: u128,
    in_flight_ns: u128,
    /// In-flight spans clipped to the interval; merged into a disjoint sorted list lazily.
    busy: Vec<(u64, u64)>,
    /// Length of the prefix of `busy` that is already disjoint and sorted.
    merged: usize,
}

impl Bin {
    fn push_busy(&mut self, a: u64, b: u64) {
        self.busy.push((a, b));
        // Amortized compaction keeps memory proportional to the disjoint busy periods.
        if self.busy.len() > 2 * self.merged + 64 {
            self.compact();
        }
    }

    fn compact(&mut self) {
        self.busy.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.busy.len());
        for &(a, b) in &self.busy {
            match out.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        self.busy = out;
        self.merged = self.busy.len();
    }

    fn busy_ns(&mut self) -> u64 {
        self.compact();
        self.busy.iter().map(|&(a, b)| b - a).sum()
    }

    fn merge(&mut self, o: &Bin) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.read_bytes = self.read_bytes.saturating_add(o.read_bytes);
        self.write_bytes = self.write_bytes.saturating_add(o.write_bytes);
        self.read_wait_ns += o.read_wait_ns;
        self.write_wait_ns += o.write_wait_ns;
        self.wait_ns += o.wait_ns;
        self.in_flight_ns += o.in_flight_ns;
        for &(a, b) in &o.busy {
            self.push_busy(a, b);
        }
    }
}

/// Accumulates block requests into per-device, per-interval bins. Mergeable: a scan may feed
/// several and [`IoStat::merge`] them, in any order, for the same result.
#[derive(Clone, Debug)]
pub struct IoStat {
    /// Where interval 0 starts (at or before `start`).
    grid: u64,
    start: u64,
    end: u64,
    interval: u64,
    bins: BTreeMap<(u32, u64), Bin>,
}

/// One device over one interval (or the whole capture), in iostat's units.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInterval {
    /// Kernel `dev_t` of the disk.
    pub dev: u32,
    /// Start of the interval (of its part inside the capture), ns since boot.
    pub start: u64,
    /// Length of the interval (of its part inside the capture), ns.
    pub duration: u64,
    /// Reads completed in the interval.
    pub reads: u64,
    /// Writes completed in the interval.
    pub writes: u64,
    /// Bytes read by the completed reads.
    pub read_bytes: u64,
    /// Bytes written by the completed writes.
    pub write_bytes: u64,
    /// Reads completed per second.
    pub r_per_s: f64,
    /// Writes completed per second.
    pub w_per_s: f64,
    /// KiB read per second.
    pub rkb_per_s: f64,
    /// KiB written per second.
    pub wkb_per_s: f64,
    /// Mean insert → complete time of the reads, ms (0 when there were none).
    pub r_await_ms: f64,
    /// Mean insert → complete time of the writes, ms (0 when there were none).
    pub w_await_ms: f64,
    /// sysstat's `aqu-sz`: the waits of the requests completed in the interval, summed, over
    /// its length.
    pub aqu_sz: f64,
    /// Mean number of requests in flight over the interval, time-weighted (Little's law).
    pub qdepth: f64,
    /// Percent of the interval with at least one request in flight.
    pub util_pct: f64,
}

impl IoStat {
    /// Statistics over `[start, end)` in intervals of `interval` ns from `start`.
    pub fn new(start: u64, end: u64, interval: u64) -> Result<IoStat, IoStatError> {
        IoStat::on_grid(start, start, end, interval)
    }

    /// Statistics over `[start, end)` in intervals of `interval` ns laid from `grid` (at most
    /// `start`: a later one is taken as `start`): `[grid + i × interval, grid + (i + 1) ×
    /// interval)`, each clipped to `[start, end)`.
    pub fn on_grid(grid: u64, start: u64, end: u64, interval: u64) -> Result<IoStat, IoStatError> {
        if interval == 0 {
            return Err(IoStatError::ZeroInterval);
        }
        let grid = grid.min(start);
        let end = end.max(start);
        let intervals = (end - grid).div_ceil(interval).max(1);
        if intervals > MAX_INTERVALS {
            return Err(IoStatError::TooManyIntervals { intervals });
        }
        Ok(IoStat {
            grid,
            start,
            end,
            interval,
            bins: BTreeMap::new(),
        })
    }

    /// Number of intervals (the first and the last may be partial).
    pub fn intervals(&self) -> u64 {
        (self.end - self.grid).div_ceil(self.interval).max(1)
    }

    fn index(&self, t: u64) -> u64 {
        (t.saturating_sub(self.grid) / self.interval).min(self.intervals() - 1)
    }

    /// Interval `i`, clipped to the capture: `[lo, hi)`.
    fn bounds(&self, i: u64) -> (u64, u64) {
        let lo = self.grid.saturating_add(i.saturating_mul(self.interval));
        let hi = lo.saturating_add(self.interval).min(self.end);
        (lo.max(self.start), hi)
    }

    /// Count one block request on `dev`: issued at `ts`, `queue` ns after it was made,
    /// completed `latency` ns later.
    pub fn add(&mut self, dev: u32, op: BlockOp, bytes: u64, ts: u64, queue: u64, latency: u64) {
        let insert = ts.saturating_sub(queue);
        let done = ts.saturating_add(latency);
        let wait = u128::from(done - insert);
        let idx = self.index(done);
        let bin = self.bins.entry((dev, idx)).or_default();
        bin.wait_ns += wait;
        match op {
            BlockOp::Read => {
                bin.reads += 1;
                bin.read_bytes = bin.read_bytes.saturating_add(bytes);
                bin.read_wait_ns += wait;
            }
            BlockOp::Write => {
                bin.writes += 1;
                bin.write_bytes = bin.write_bytes.saturating_add(bytes);
                bin.write_wait_ns += wait;
            }
            _ => {}
        }
        // In-flight time, clipped to the capture, then to each interval it overlaps.
        let (a, b) = (insert.max(self.start), done.min(self.end));
        if a >= b {
            return;
        }
        for i in self.index(a)..=self.index(b - 1) {
            let (lo, hi) = self.bounds(i);
            let (ca, cb) = (a.max(lo), b.min(hi));
            if ca < cb {
                let bin = self.bins.entry((dev, i)).or_default();
                bin.in_flight_ns += u128::from(cb - ca);
                bin.push_busy(ca, cb);
            }
        }
    }

    /// Add the requests counted by `other` (same grid, start, end and interval).
    pub fn merge(&mut self, other: &IoStat) {
        for (k, b) in &other.bins {
            self.bins.entry(*k).or_default().merge(b);
        }
    }

    /// [`IoStat::merge`], with each of `other`'s devices counted as `rename` says (several
    /// captures' devices numbered on one table, where two hosts' `dev_t`s may clash).
    pub fn merge_renamed(&mut self, other: &IoStat, mut rename: impl FnMut(u32) -> u32) {
        for (&(dev, i), b) in &other.bins {
            self.bins.entry((rename(dev), i)).or_default().merge(b);
        }
    }

    /// Devices that had any request, in `dev_t` order.
    pub fn devices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.bins.keys().map(|&(dev, _)| dev).collect();
        d.dedup();
        d
    }

    fn row(dev: u32, start: u64, duration: u64, bin: &mut Bin) -> DeviceInterval {
        let secs = duration as f64 / 1e9;
        let per_s = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
        let mean_ms = |sum: u128, n: u64| if n > 0 { sum as f64 / n as f64 / 1e6 } else { 0.0 };
        let busy = bin.busy_ns();
        let share = |ns: f64| if duration > 0 { ns / duration as f64 } else { 0.0 };
        DeviceInterval {
            dev,
            start,
            duration,
            reads: bin.reads,
            writes: bin.writes,
            read_bytes: bin.read_bytes,
            write_bytes: bin.write_bytes,
            r_per_s: per_s(bin.reads as f64),
            w_per_s: per_s(bin.writes as f64),
            rkb_per_s: per_s(bin.read_bytes as f64 / 1024.0),
            wkb_per_s: per_s(bin.write_bytes as f64 / 1024.0),
            r_await_ms: mean_ms(bin.read_wait_ns, bin.reads),
            w_await_ms: mean_ms(bin.write_wait_ns, bin.writes),
            aqu_sz: share(bin.wait_ns as f64),
            qdepth: share(bin.in_flight_ns as f64),
            util_pct: (100.0 * share(busy as f64)).min(100.0),
        }
    }

    /// Every interval, and in each every device that had a request anywhere in the capture
    /// (idle ones as zero rows), in time then `dev_t` order.
    pub fn interval_rows(&self) -> Vec<Vec<DeviceInterval>> {
        let devices = self.devices();
        (0..self.intervals()).map(|i| self.interval_row(i, &devices)).collect()
    }

    /// Interval `i` (from 0; the first and the last may be partial), a row for each of `devices` in their
    /// order (idle ones as zero rows): what `iostat -f` prints of one interval once it is over.
    pub fn interval_row(&self, i: u64, devices: &[u32]) -> Vec<DeviceInterval> {
        let (lo, hi) = self.bounds(i);
        devices
            .iter()
            .map(|&dev| {
                let mut bin = self.bins.get(&(dev, i)).cloned().unwrap_or_default();
                IoStat::row(dev, lo, hi - lo, &mut bin)
            })
            .collect()
    }

    /// Where interval `i` starts and ends, clipped to the statistics' span, ns since boot.
    pub fn interval_span(&self, i: u64) -> (u64, u64) {
        self.bounds(i)
    }

    /// Each device over the whole capture.
    pub fn totals(&self) -> Vec<DeviceInterval> {
        self.totals_until(self.end)
    }

    /// Each device over `[start, end)`, `end` at most the statistics' own: the rates of a
    /// range that is still being filled (the view of a capture being recorded, whose
    /// statistics cover the whole view), over the part that holds events so far.
    pub fn totals_until(&self, end: u64) -> Vec<DeviceInterval> {
        let end = end.clamp(self.start, self.end);
        self.devices()
            .into_iter()
            .map(|dev| {
                let mut total = Bin::default();
                let mut busy = 0u64;
                for (_, b) in self.bins.range((dev, 0)..=(dev, u64::MAX)) {
                    let mut b = b.clone();
                    // Busy spans are clipped per interval, so unions add up across intervals.
                    busy += b.busy_ns();
                    b.busy.clear();
                    b.merged = 0;
                    total.merge(&b);
                }
                let mut row = IoStat::row(dev, self.start, end - self.start, &mut total);
                let d = end - self.start;
                row.util_pct = if d > 0 {
                    (100.0 * busy as f64 / d as f64).min(100.0)
                } else {
                    0.0
                };
                row
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000_000_000;

    #[test]
    fn counts_waits_and_rates_by_completion() {
        let mut st = IoStat::new(0, 2 * S, S).unwrap();
        // Read: inserted at 100 ms, issued at 101 ms, done at 105 ms: wait 5 ms.
        st.add(8, BlockOp::Read, 4096, 101 * MS, MS, 4 * MS);
        // Write issued in interval 0, completing in interval 1 (counted there).
        st.add(8, BlockOp::Write, 8192, 990 * MS, 0, 20 * MS);
        st.add(8, BlockOp::Flush, 0, 1500 * MS, 0, MS);
        let rows = st.interval_rows();
        assert_eq!(rows.len(), 2);
        let (a, b) = (&rows[0][0], &rows[1][0]);
        assert_eq!((a.reads, a.writes, b.reads, b.writes), (1, 0, 0, 1));
        assert!((a.r_await_ms - 5.0).abs() < 1e-9);
        assert!((b.w_await_ms - 20.0).abs() < 1e-9);
        assert!((a.rkb_per_s - 4.0).abs() < 1e-9);
        assert!((b.wkb_per_s - 8.0).abs() < 1e-9);
        // Interval 0 in flight: read 5 ms + write 10 ms; interval 1: write 10 ms + flush 1 ms.
        assert!((a.util_pct - 1.5).abs() < 1e-9, "{}", a.util_pct);
        assert!((b.util_pct - 1.1).abs() < 1e-9, "{}", b.util_pct);
        let t = &st.totals()[0];
        assert_eq!((t.reads, t.writes, t.read_bytes, t.write_bytes), (1, 1, 4096, 8192));
        assert!((t.util_pct - 26.0 / 2000.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn overlapping_requests_make_a_queue_but_not_more_than_full_util() {
        let mut st = IoStat::new(0, S, S).unwrap();
        // Four requests each in flight for the whole second: aqu-sz 4, util 100 %.
        for _ in 0..4 {
            st.add(1, BlockOp::Write, 512, 0, 0, S);
        }
        // Two overlapping requests on another device: [0, 300ms) and [200ms, 500ms).
        st.add(2, BlockOp::Read, 512, 0, 0, 300 * MS);
        st.add(2, BlockOp::Read, 512, 200 * MS, 0, 300 * MS);
        let t = st.totals();
        assert_eq!(t.len(), 2);
        assert!((t[0].aqu_sz - 4.0).abs() < 1e-9);
        assert!((t[0].util_pct - 100.0).abs() < 1e-9);
        assert!((t[1].aqu_sz - 0.6).abs() < 1e-9);
        assert!((t[1].util_pct - 50.0).abs() < 1e-9);
        assert_eq!(
            (t[0].qdepth, t[1].qdepth),
            (t[0].aqu_sz, t[1].aqu_sz),
            "no stall: they agree"
        );
    }

    /// Under a stall the two queue figures part: sysstat's aqu-sz puts a request's whole wait in
    /// the interval it completes in, the queue depth spreads it over the intervals it spans.
    #[test]
    fn a_stall_is_aqu_sz_where_it_ends_and_queue_depth_where_it_lasts() {
        let mut st = IoStat::new(0, 3 * S, S).unwrap();
        // Inserted at 0, issued at 0.5 s, completed at 2.5 s.
        st.add(1, BlockOp::Write, 4096, S / 2, S / 2, 2 * S);
        st.add(1, BlockOp::Read, 4096, 2 * S + S / 10, 0, 100 * MS);
        let rows = st.interval_rows();
        let aqu: Vec<f64> = rows.iter().map(|r| r[0].aqu_sz).collect();
        let depth: Vec<f64> = rows.iter().map(|r| r[0].qdepth).collect();
        assert_eq!(aqu, [0.0, 0.0, 2.5 + 0.1]);
        assert_eq!(depth, [1.0, 1.0, 0.5 + 0.1]);
        assert!((rows[2][0].w_await_ms - 2500.0).abs() < 1e-9);
    }

    /// A grid that starts before the capture (whole wall-clock seconds) cuts the first
    /// interval short; rates use the part inside the capture.
    #[test]
    fn intervals_on_an_earlier_grid() {
        let mut st = IoStat::on_grid(0, 300 * MS, 2 * S, S).unwrap();
        st.add(1, BlockOp::Read, 1024, 400 * MS, 0, 10 * MS);
        st.add(1, BlockOp::Read, 1024, S + 400 * MS, 0, 10 * MS);
        let rows = st.interval_rows();
        assert_eq!(rows.len(), 2);
        let (a, b) = (&rows[0][0], &rows[1][0]);
        assert_eq!((a.start, a.duration, b.start, b.duration), (300 * MS, 700 * MS, S, S));
        assert!((a.r_per_s - 1.0 / 0.7).abs() < 1e-9 && (b.r_per_s - 1.0).abs() < 1e-9);
        let late = IoStat::on_grid(5, 3, 11, 2).unwrap();
        assert_eq!(
            (late.intervals(), late.bounds(0)),
            (4, (3, 5)),
            "a grid after the start is the start"
        );
    }

    #[test]
    fn merge_is_order_independent_and_hostile_spans_are_bounded() {
        let reqs: Vec<(u64, u64, u64)> = (0..500)
            .map(|i| (i * 7 * MS, (i % 5) * MS, (i % 13 + 1) * MS))
            .collect();
        let mut whole = IoStat::new(0, 4 * S, 100 * MS).unwrap();
        let (mut x, mut y) = (whole.clone(), whole.clone());
        for (i, &(ts, q, l)) in reqs.iter().enumerate() {
            let op = if i % 2 == 0 { BlockOp::Read } else { BlockOp::Write };
            whole.add(3, op, 4096, ts, q, l);
            if i % 3 == 0 { &mut x } else { &mut y }.add(3, op, 4096, ts, q, l);
        }
        let mut yx = y.clone();
        yx.merge(&x);
        x.merge(&y);
        assert_eq!(x.totals(), whole.totals());
        assert_eq!(yx.interval_rows(), whole.interval_rows());
        // One interval at a time, as `iostat -f` prints them, from statistics whose end is not
        // known yet (as far as they can go): the same rows, but for the last (partial) one.
        let mut open = IoStat::new(0, MAX_INTERVALS * 100 * MS, 100 * MS).unwrap();
        open.merge(&whole);
        let rows = whole.interval_rows();
        for (i, row) in rows.iter().enumerate().take(rows.len() - 1) {
            assert_eq!(&open.interval_row(i as u64, &whole.devices()), row, "interval {i}");
            assert_eq!(
                open.interval_span(i as u64),
                (i as u64 * 100 * MS, (i as u64 + 1) * 100 * MS)
            );
        }
        assert_eq!(whole.interval_span(rows.len() as u64 - 1), (4 * S - 100 * MS, 4 * S));
        assert!(IoStat::new(0, u64::MAX, 1).is_err());
        assert!(IoStat::new(0, 1, 0).is_err());
        // Over the first half only: the same requests, over half the time.
        let half = &whole.totals_until(2 * S)[0];
        let all = &whole.totals()[0];
        assert_eq!((half.reads, half.writes), (all.reads, all.writes));
        assert!((half.r_per_s - 2.0 * all.r_per_s).abs() < 1e-9);
        assert_eq!(whole.totals_until(u64::MAX), whole.totals());
        // A request claiming to last forever is clipped to the capture.
        let mut st = IoStat::new(0, S, S).unwrap();
        st.add(1, BlockOp::Read, 1, 10, u64::MAX, u64::MAX);
        assert!((st.totals()[0].util_pct - 100.0).abs() < 1e-9);
    }
}
