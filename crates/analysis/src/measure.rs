//! What a latency axis measures: every event's latency, or one part of it. For block requests:
//! their time queued before issue (`blk.queue`), or queue and device time (`blk.total`). For
//! calls: their time in the run queue (`runq.time`), blocked (`wait.time`) or on a CPU
//! (`cpu.time`), their anatomy's parts. The events a part is not of keep their latency.
//!
//! A scan takes a chunk's values through [`Measure::values`], which for the default measure is
//! the latency column itself (nothing copied), so the histogram, spectrogram and group-by
//! accumulators stay the same computation whatever is measured.

use iocap_format::{Class, Col, ColSet, Columns, Event};

/// What a block request's point on a latency axis is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Measure {
    /// Device time, issue to completion (`latency`, `blk.latency`).
    #[default]
    Latency,
    /// Time before issue, from the request's making (`blk.queue`).
    Queue,
    /// Both, making to completion (`blk.total`): iostat's wait.
    Total,
    /// A call's time runnable and not running (`runq.time`).
    Runq,
    /// A call's time blocked (`wait.time`).
    Wait,
    /// A call's time on a CPU (`cpu.time`: the rest of its latency).
    Cpu,
}

impl Measure {
    /// Every measure, in the order a viewer cycles through them.
    pub const ALL: [Measure; 6] = [
        Measure::Latency,
        Measure::Queue,
        Measure::Total,
        Measure::Runq,
        Measure::Wait,
        Measure::Cpu,
    ];

    /// The measure after this one in [`Measure::ALL`], wrapping.
    pub fn next(self) -> Measure {
        let i = Measure::ALL.iter().position(|&m| m == self).unwrap_or(0);
        Measure::ALL[(i + 1) % Measure::ALL.len()]
    }

    /// Its name: `latency`, `queue`, `queue+device`, `run queue`, `wait`, `cpu`.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Latency => "latency",
            Measure::Queue => "queue",
            Measure::Total => "queue+device",
            Measure::Runq => "run queue",
            Measure::Wait => "wait",
            Measure::Cpu => "cpu",
        }
    }

    /// Whether it measures a part of the calls' latency (else of block requests', or none).
    pub fn of_calls(self) -> bool {
        matches!(self, Measure::Runq | Measure::Wait | Measure::Cpu)
    }

    /// The filter field that holds the value of the events it measures a part of:
    /// `blk.queue`, `blk.total`, `runq.time`, `wait.time`, `cpu.time`; `latency` for
    /// [`Measure::Latency`].
    pub fn field(self) -> &'static str {
        match self {
            Measure::Latency => "latency",
            Measure::Queue => "blk.queue",
            Measure::Total => "blk.total",
            Measure::Runq => "runq.time",
            Measure::Wait => "wait.time",
            Measure::Cpu => "cpu.time",
        }
    }

    /// The columns [`Measure::values`] reads.
    pub fn columns(self) -> ColSet {
        let latency = ColSet::NONE.with(Col::Latency);
        match self {
            Measure::Latency => latency,
            Measure::Queue | Measure::Total => latency.with(Col::Class).with(Col::Queue),
            Measure::Runq => latency.with(Col::Class).with(Col::Runq),
            Measure::Wait => latency.with(Col::Class).with(Col::Wait),
            Measure::Cpu => latency.with(Col::Class).with(Col::Runq).with(Col::Wait),
        }
    }

    /// The value of an event of class `class`, latency `l`, queue `q`, run queue `r` and
    /// wait `w` (ns): [`Measure::of`] and [`Measure::values`] alike.
    #[inline(always)]
    fn value(self, class: u8, l: u64, q: u64, r: u64, w: u64) -> u64 {
        let block = class == Class::Block as u8;
        // Calls: a journal commit has no anatomy either.
        let call = !block && class != Class::Journal as u8;
        match self {
            Measure::Queue if block => q,
            Measure::Total if block => q.saturating_add(l),
            Measure::Runq if call => r,
            Measure::Wait if call => w,
            Measure::Cpu if call => l.saturating_sub(r).saturating_sub(w),
            _ => l,
        }
    }

    /// Event `e`'s value, ns.
    pub fn of(self, e: &Event) -> u64 {
        self.value(e.class as u8, e.latency, e.queue, e.runq, e.wait)
    }

    /// Every row's value of `cols` (with [`Measure::columns`] decoded), ns: the latency column
    /// itself for [`Measure::Latency`], else computed into `buf`. A column shorter than the
    /// chunk (not decoded, or left out as all zeros) reads as zeros.
    pub fn values<'c>(self, cols: &'c Columns, buf: &'c mut Vec<u64>) -> &'c [u64] {
        if self == Measure::Latency {
            return &cols.latency;
        }
        let (class, latency) = (&cols.class, &cols.latency);
        let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
        buf.clear();
        buf.extend(latency.iter().enumerate().map(|(i, &l)| {
            // A missing class column reads as syscalls (class 0), as the decoder fills it.
            let c = class.get(i).copied().unwrap_or(0);
            self.value(c, l, at(&cols.queue, i), at(&cols.runq, i), at(&cols.wait, i))
        }));
        buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls keep their latency; block requests take their queue time, or queue plus device
    /// time (saturating); the column-wise values agree with the per-event ones.
    #[test]
    fn block_requests_are_measured_calls_are_not() {
        let mut cols = Columns::default();
        let events = [
            Event {
                runq: 100,
                wait: 300,
                ..Event::syscall(10, 500, 1, 1, 0, 0)
            },
            Event {
                class: Class::Block,
                ts: 20,
                latency: 3_000,
                queue: 40,
                ..Event::default()
            },
            Event {
                class: Class::IoUring,
                ts: 30,
                latency: 700,
                queue: 99,
                runq: 800,
                ..Event::default()
            },
            Event {
                class: Class::Block,
                ts: 40,
                latency: u64::MAX,
                queue: 5,
                ..Event::default()
            },
        ];
        for e in &events {
            cols.push(e);
        }
        let mut buf = Vec::new();
        for (m, want) in [
            (Measure::Latency, [500, 3_000, 700, u64::MAX]),
            (Measure::Queue, [500, 40, 700, 5]),
            (Measure::Total, [500, 3_040, 700, u64::MAX]),
            // Calls: their parts (the CPU's the rest, never below 0); block requests keep
            // their latency.
            (Measure::Runq, [100, 3_000, 800, u64::MAX]),
            (Measure::Wait, [300, 3_000, 0, u64::MAX]),
            (Measure::Cpu, [100, 3_000, 0, u64::MAX]),
        ] {
            assert_eq!(m.values(&cols, &mut buf), want, "{m:?}");
            let each: Vec<u64> = events.iter().map(|e| m.of(e)).collect();
            assert_eq!(each, want, "{m:?}");
        }
        // Columns not decoded (a damaged chunk's, a caller's mistake): zeros, no panic.
        cols.queue.clear();
        assert_eq!(Measure::Total.values(&cols, &mut buf), [500, 3_000, 700, u64::MAX]);
        cols.class.clear();
        assert_eq!(Measure::Queue.values(&cols, &mut buf), [500, 3_000, 700, u64::MAX]);
        cols.runq.clear();
        assert_eq!(Measure::Cpu.values(&cols, &mut buf), [200, 3_000, 700, u64::MAX]);
        assert_eq!(
            Measure::ALL.map(Measure::next),
            [
                Measure::Queue,
                Measure::Total,
                Measure::Runq,
                Measure::Wait,
                Measure::Cpu,
                Measure::Latency
            ]
        );
    }
}
