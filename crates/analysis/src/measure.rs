//! What a latency axis measures: every event's latency, or any other duration field read from
//! the event table's columns: a block request's time queued before issue (`blk.queue`), queue and
//! device time (`blk.total`); a call's time with its block requests in flight (`disk.time`), in the
//! run queue (`runq.time`), blocked (`wait.time`, or one reason's part of it: `wait.disk` ...), on
//! a CPU (`cpu.time`), its anatomy's parts. The events a field is not of keep their latency on a
//! viewer's axis; a command's `--measure` keeps only the events measured ([`Measure::measured`]).
//!
//! A scan takes a chunk's values through [`Measure::values`], which for the default measure is
//! the latency column itself (nothing copied), so the histogram, spectrogram and group-by
//! accumulators stay the same computation whatever is measured.

use iocap_filter::fields::{self, FieldId, FieldInfo, FieldType, Read};
use iocap_format::{Class, Col, ColSet, Columns, Event, Holds};

/// What a point on a latency axis is: a duration field, read from the columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Measure(FieldId);

impl Default for Measure {
    fn default() -> Self {
        Measure::LATENCY
    }
}

impl Measure {
    /// Every event's latency (`latency`).
    pub const LATENCY: Measure = Measure(FieldId::Latency);
    /// A block request's time before issue, from its making (`blk.queue`).
    pub const QUEUE: Measure = Measure(FieldId::BlkQueue);
    /// A block request's queue and device time, making to completion (`blk.total`): iostat's
    /// wait.
    pub const TOTAL: Measure = Measure(FieldId::BlkTotal);
    /// A call's time runnable and not running (`runq.time`).
    pub const RUNQ: Measure = Measure(FieldId::RunqTime);
    /// A call's time blocked (`wait.time`).
    pub const WAIT: Measure = Measure(FieldId::WaitTime);
    /// A call's time on a CPU (`cpu.time`: the rest of its latency).
    pub const CPU: Measure = Measure(FieldId::CpuTime);
    /// A call's time with one of its block requests in flight (`disk.time`).
    pub const DISK: Measure = Measure(FieldId::DiskTime);

    /// The measures a viewer's `m` cycles through, in order; [`Measure::all`] has the others.
    pub const CYCLE: [Measure; 7] = [
        Measure::LATENCY,
        Measure::QUEUE,
        Measure::TOTAL,
        Measure::DISK,
        Measure::RUNQ,
        Measure::WAIT,
        Measure::CPU,
    ];

    /// Every measure: each duration field read from the columns (not `evt.time`, a time), by
    /// its canonical name, in the order `iocap fields` lists them.
    pub fn all() -> impl Iterator<Item = Measure> {
        fields::canonical().filter_map(Measure::of_field)
    }

    /// The measure of field `f`, if it is one: a duration read from the columns.
    fn of_field(f: &FieldInfo) -> Option<Measure> {
        (f.ty == FieldType::Duration && f.read.of().is_some()).then_some(Measure(f.id))
    }

    /// The measure called `name` (a field's name, or an alias), or why there is none.
    pub fn by_name(name: &str) -> Result<Measure, String> {
        let f = fields::lookup(name).ok_or_else(|| format!("unknown field `{name}`"))?;
        Measure::of_field(f).ok_or_else(|| {
            let names: Vec<&str> = Measure::all().map(Measure::field).collect();
            format!("`{name}` is not a duration to measure; one of: {}", names.join(", "))
        })
    }

    /// The measure after this one in [`Measure::CYCLE`], wrapping (from one outside it, the
    /// first).
    pub fn next(self) -> Measure {
        match Measure::CYCLE.iter().position(|&m| m == self) {
            Some(i) => Measure::CYCLE[(i + 1) % Measure::CYCLE.len()],
            None => Measure::LATENCY,
        }
    }

    /// The field measured, by its canonical name: `latency`, `blk.queue`, `wait.disk`.
    pub fn field(self) -> &'static str {
        fields::info(self.0).name
    }

    /// The field measured.
    pub fn id(self) -> FieldId {
        self.0
    }

    /// Whether it is every event's latency (or a block request's, `blk.latency`, the same
    /// value): the latency column itself.
    pub fn is_latency(self) -> bool {
        matches!(self.0, FieldId::Latency | FieldId::BlkLatency)
    }

    /// How the field is read (always from columns: [`Measure::of_field`]).
    fn read(self) -> Read {
        fields::info(self.0).read
    }

    /// The events it measures, as the field's columns hold them.
    fn holds(self) -> Holds {
        self.read().of().unwrap_or(Holds::All)
    }

    /// Whether it measures a part of the calls' latency (else of block requests', or every
    /// event's).
    pub fn of_calls(self) -> bool {
        self.holds() == Holds::Others
    }

    /// Whether an event of `class` is measured by it; the others keep their latency on a
    /// viewer's axis. A call's part is not a journal commit's, which has no anatomy.
    pub fn measured(self, class: Class) -> bool {
        match self.holds() {
            Holds::All => true,
            Holds::Blocks => class == Class::Block,
            Holds::Others => matches!(class, Class::Syscall | Class::IoUring),
        }
    }

    /// A filter clause that keeps the events it measures (`None` for every event): what a
    /// command's `--measure` adds to its filter.
    pub fn clause(self) -> Option<&'static str> {
        match self.holds() {
            Holds::All => None,
            Holds::Blocks => Some("evt.class=block"),
            Holds::Others => Some("evt.class in (syscall, io_uring)"),
        }
    }

    /// How a pane's title names it when it is not every event's latency: the events measured
    /// (`blk`, `calls`) and the part (the short names of the usual ones, else the field's).
    pub fn label(self) -> Option<(&'static str, &'static str)> {
        if self.is_latency() {
            return None;
        }
        let who = if self.of_calls() { "calls" } else { "blk" };
        let part = match self {
            Measure::QUEUE => "queue",
            Measure::TOTAL => "q+dev",
            Measure::DISK => "disk",
            Measure::RUNQ => "runq",
            Measure::WAIT => "wait",
            Measure::CPU => "cpu",
            m => m.field(),
        };
        Some((who, part))
    }

    /// The columns [`Measure::values`] reads.
    pub fn columns(self) -> ColSet {
        let latency = ColSet::NONE.with(Col::Latency);
        if self.is_latency() {
            return latency;
        }
        let read = self.read().columns().unwrap_or(ColSet::NONE);
        latency.with(Col::Class).union(read)
    }

    /// Event `e`'s value, ns.
    pub fn of(self, e: &Event) -> u64 {
        let mut cols = Columns::default();
        cols.push(e);
        let mut buf = Vec::new();
        self.values(&cols, &mut buf).first().copied().unwrap_or(0)
    }

    /// Every row's value of `cols` (with [`Measure::columns`] decoded), ns: the latency column
    /// itself for [`Measure::LATENCY`], else computed into `buf`; an event not
    /// [`Measure::measured`] keeps its latency. A column shorter than the chunk (not decoded,
    /// or left out as all zeros) reads as zeros.
    pub fn values<'c>(self, cols: &'c Columns, buf: &'c mut Vec<u64>) -> &'c [u64] {
        if self.is_latency() {
            return &cols.latency;
        }
        let (class, latency) = (&cols.class, &cols.latency);
        let clamp = |v: i128| v.clamp(0, i128::from(u64::MAX)) as u64;
        // Which classes are measured, as a bit per class code.
        let measured = [Class::Syscall, Class::Block, Class::IoUring, Class::Journal]
            .into_iter()
            .filter(|&c| self.measured(c))
            .fold(0u32, |m, c| m | 1 << (c as u8));
        let is_measured = |i: usize| {
            // A missing class column reads as syscalls (class 0), as the decoder fills it.
            let c = class.get(i).copied().unwrap_or(0);
            c < 32 && measured & (1 << c) != 0
        };
        buf.clear();
        match self.read() {
            Read::Column { col, .. } => {
                let v = cols.get(col);
                buf.extend(
                    latency
                        .iter()
                        .enumerate()
                        .map(|(i, &l)| if is_measured(i) { clamp(v.wide(i)) } else { l }),
                );
            }
            Read::Sum { cols: (a, b), .. } => {
                let (a, b) = (cols.get(a), cols.get(b));
                buf.extend(latency.iter().enumerate().map(
                    |(i, &l)| {
                        if is_measured(i) {
                            fields::sum_at(a, b, i)
                        } else {
                            l
                        }
                    },
                ));
            }
            Read::Rest {
                from, minus: (a, b), ..
            } => {
                let (from, a, b) = (cols.get(from), cols.get(a), cols.get(b));
                buf.extend(latency.iter().enumerate().map(|(i, &l)| {
                    if is_measured(i) {
                        fields::rest_at(from, a, b, i)
                    } else {
                        l
                    }
                }));
            }
            Read::Other { .. } => buf.extend_from_slice(latency),
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
            (Measure::LATENCY, [500, 3_000, 700, u64::MAX]),
            (Measure::QUEUE, [500, 40, 700, 5]),
            (Measure::TOTAL, [500, 3_040, 700, u64::MAX]),
            // Calls: their parts (the CPU's the rest, never below 0); block requests keep
            // their latency.
            (Measure::RUNQ, [100, 3_000, 800, u64::MAX]),
            (Measure::WAIT, [300, 3_000, 0, u64::MAX]),
            (Measure::CPU, [100, 3_000, 0, u64::MAX]),
        ] {
            assert_eq!(m.values(&cols, &mut buf), want, "{m:?}");
            let each: Vec<u64> = events.iter().map(|e| m.of(e)).collect();
            assert_eq!(each, want, "{m:?}");
        }
        // Columns not decoded (a damaged chunk's, a caller's mistake): zeros, no panic.
        cols.queue.clear();
        assert_eq!(Measure::TOTAL.values(&cols, &mut buf), [500, 3_000, 700, u64::MAX]);
        cols.class.clear();
        assert_eq!(Measure::QUEUE.values(&cols, &mut buf), [500, 3_000, 700, u64::MAX]);
        cols.runq.clear();
        assert_eq!(Measure::CPU.values(&cols, &mut buf), [200, 3_000, 700, u64::MAX]);
        assert_eq!(
            Measure::CYCLE.map(Measure::next),
            [
                Measure::QUEUE,
                Measure::TOTAL,
                Measure::DISK,
                Measure::RUNQ,
                Measure::WAIT,
                Measure::CPU,
                Measure::LATENCY
            ]
        );
    }

    /// Every duration read from the columns is a measure, by any of its names; `evt.time` (a
    /// time), a count and a name are not, and say which are.
    #[test]
    fn measures_are_the_duration_columns() {
        let all: Vec<&str> = Measure::all().map(Measure::field).collect();
        for f in [
            "latency",
            "blk.queue",
            "blk.total",
            "disk.time",
            "cpu.time",
            "wait.disk",
            "waker.after",
        ] {
            assert!(all.contains(&f), "{f} in {all:?}");
        }
        assert!(!all.contains(&"evt.time"));
        assert_eq!(Measure::by_name("evt.latency"), Ok(Measure::LATENCY));
        assert_eq!(Measure::by_name("blk.queue"), Ok(Measure::QUEUE));
        let err = Measure::by_name("wait.count").unwrap_err();
        assert!(err.contains("not a duration") && err.contains("wait.journal"), "{err}");
        assert!(Measure::by_name("evt.time").is_err());
        assert!(Measure::by_name("blk.queu").unwrap_err().contains("unknown field"));
        // Which events each keeps, and the clause a command adds for it.
        assert!(Measure::QUEUE.measured(Class::Block) && !Measure::QUEUE.measured(Class::Syscall));
        assert!(Measure::DISK.measured(Class::IoUring) && !Measure::DISK.measured(Class::Journal));
        assert_eq!(Measure::LATENCY.clause(), None);
        assert_eq!(Measure::QUEUE.clause(), Some("evt.class=block"));
        assert_eq!(
            Measure::by_name("wait.disk").unwrap().label(),
            Some(("calls", "wait.disk"))
        );
    }

    /// A reason's part of the wait is read from its own column, for calls only.
    #[test]
    fn a_wait_reason_is_measured_from_its_column() {
        let m = Measure::by_name("wait.journal").unwrap();
        let mut cols = Columns::default();
        cols.push(&Event {
            wait_journal: 7_000,
            ..Event::syscall(10, 9_000, 1, 1, 0, 0)
        });
        cols.push(&Event {
            class: Class::Block,
            ts: 20,
            latency: 3_000,
            ..Event::default()
        });
        let mut buf = Vec::new();
        assert_eq!(m.values(&cols, &mut buf), [7_000, 3_000]);
        assert!(m.columns().contains(Col::WaitJournal));
    }
}
