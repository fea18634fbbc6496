//! What a latency axis measures for block requests: their device time (`latency`, issue to
//! completion, as biolatency), their time queued before issue (`blk.queue`), or both
//! (`blk.total`). Syscalls and io_uring requests are always measured by their latency.
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
}

impl Measure {
    /// Every measure, in the order a viewer cycles through them.
    pub const ALL: [Measure; 3] = [Measure::Latency, Measure::Queue, Measure::Total];

    /// The measure after this one in [`Measure::ALL`], wrapping.
    pub fn next(self) -> Measure {
        match self {
            Measure::Latency => Measure::Queue,
            Measure::Queue => Measure::Total,
            Measure::Total => Measure::Latency,
        }
    }

    /// Its name: `latency`, `queue`, `queue+device`.
    pub fn name(self) -> &'static str {
        match self {
            Measure::Latency => "latency",
            Measure::Queue => "queue",
            Measure::Total => "queue+device",
        }
    }

    /// The filter field that holds a block request's value: `blk.latency`, `blk.queue`,
    /// `blk.total`.
    pub fn block_field(self) -> &'static str {
        match self {
            Measure::Latency => "blk.latency",
            Measure::Queue => "blk.queue",
            Measure::Total => "blk.total",
        }
    }

    /// The columns [`Measure::values`] reads.
    pub fn columns(self) -> ColSet {
        let latency = ColSet::NONE.with(Col::Latency);
        match self {
            Measure::Latency => latency,
            Measure::Queue | Measure::Total => latency.with(Col::Class).with(Col::Queue),
        }
    }

    /// Event `e`'s value, ns.
    pub fn of(self, e: &Event) -> u64 {
        match (self, e.class) {
            (Measure::Latency, _) | (_, Class::Syscall | Class::IoUring) => e.latency,
            (Measure::Queue, Class::Block) => e.queue,
            (Measure::Total, Class::Block) => e.queue.saturating_add(e.latency),
        }
    }

    /// Every row's value of `cols` (with [`Measure::columns`] decoded), ns: the latency column
    /// itself for [`Measure::Latency`], else computed into `buf`. A column shorter than the
    /// chunk (not decoded) reads as zeros.
    pub fn values<'c>(self, cols: &'c Columns, buf: &'c mut Vec<u64>) -> &'c [u64] {
        if self == Measure::Latency {
            return &cols.latency;
        }
        let (class, queue, latency) = (&cols.class, &cols.queue, &cols.latency);
        let block = Class::Block as u8;
        buf.clear();
        let n = latency.len();
        if class.len() == n && queue.len() == n {
            let rows = class.iter().zip(queue).zip(latency);
            match self {
                Measure::Queue => buf.extend(rows.map(|((&c, &q), &l)| if c == block { q } else { l })),
                _ => buf.extend(rows.map(|((&c, &q), &l)| if c == block { q.saturating_add(l) } else { l })),
            }
        } else {
            let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
            buf.extend((0..n).map(|i| match class.get(i) {
                Some(&c) if c == block && self == Measure::Queue => at(queue, i),
                Some(&c) if c == block => at(queue, i).saturating_add(latency[i]),
                _ => latency[i],
            }));
        }
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
            Event::syscall(10, 500, 1, 1, 0, 0),
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
        assert_eq!(
            Measure::ALL.map(Measure::next),
            [Measure::Queue, Measure::Total, Measure::Latency]
        );
    }
}
