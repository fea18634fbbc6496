//! iocap's analyses: the numbers the report commands print and the viewer draws.
//!
//! Both front ends compute through this crate, so a percentile on screen and the same
//! percentile in `iocap report` are one computation:
//!
//! - [`LatencyHist`]: a log-linear (HdrHistogram-style) latency histogram with exact
//!   count/min/max/sum, percentiles accurate to a 1/16-octave bucket, and an exact log2 view
//!   for biolatency-style output.
//! - [`Spectrogram`]: counts per (time row, log-scale latency column), as sysdig's
//!   spectrogram chisel, over a fixed number of rows (directly indexed: one lookup per event).
//! - [`FieldGroups`] and [`GroupBy`]: events split by a field's value (told apart per event by
//!   a table id or a syscall number, printed once per key), top groups by count; a group can
//!   also split its calls' latency into disk time and the rest ([`DiskSplit`]).
//! - [`Measure`]: what a latency axis plots (every event's latency; block requests' queue time or
//!   both; calls' run queue, wait or CPU time); the events a part is not of plot their latency.
//! - [`slowest`]: the K slowest events of a scan, in bounded memory.
//! - [`IoStat`]: per-device, per-interval iostat figures from block events.
//! - [`Scan`] (and its common case [`scan()`]): runs a compiled filter over a capture's chunks
//!   (a chosen set of them, skipping those whose summary rules them out, decoding only the
//!   needed columns, on several threads, cancellable) and feeds the matching rows to any of the
//!   above.
//! - [`rollups`]: the chunks a question can take from their rollups (each key's latency cells,
//!   count, min, max, sum and bytes) rather than their columns, and the reading of them.
//! - [`ColumnCache`]: decoded columns kept narrow across scans, up to a byte budget, so a
//!   second scan of the same chunks skips decoding.
//! - [`drops::between`]: events the recorder lost in a time range, placed by its readings.
//! - [`drops::of_processes`]: the events of some processes (those a filter names) lost in a
//!   time range, and all lost then: "N of this process's events (M in all)".
//! - [`compare`]: confidence intervals of a percentile (distribution-free, from the
//!   histogram's buckets) and of a count (Poisson), to flag a change only when it is larger
//!   than bucket width and sample size allow.
//! - [`units`]: durations and sizes formatted (and intervals parsed) the same way everywhere.
//!
//! Every accumulator is mergeable, so a scan can split a capture's chunks between threads and
//! merge the results in chunk order: the answer does not depend on the thread count.
//!
//! ```
//! use iocap_analysis::{GroupBy, LatencyHist, Spectrogram};
//! let mut hist = LatencyHist::new();
//! let mut spectro = Spectrogram::new(0, 500_000_000, 4);
//! let mut by_proc = GroupBy::<String>::new();
//! for (i, latency_ns) in [900u64, 1_100, 1_200, 40_000, 2_000_000].into_iter().enumerate() {
//!     let ts = i as u64 * 300_000_000;
//!     hist.add(latency_ns);
//!     spectro.add(ts, latency_ns);
//!     by_proc.add_ref(if latency_ns > 10_000 { "dd" } else { "cat" }, latency_ns, 4096);
//! }
//! assert_eq!(hist.count(), 5);
//! assert_eq!(hist.max(), 2_000_000);
//! // p50 is the third smallest (1_200 ns), reported as its bucket's upper bound.
//! assert!((1_200..=1_279).contains(&hist.percentile(50.0)));
//! assert_eq!(spectro.rows().count(), 3, "events at 0, 0.3, 0.6, 0.9 and 1.2 s");
//! assert_eq!(spectro.row(1)[iocap_analysis::spectro::column(1_200)], 1, "1.2 us at 0.6 s");
//! assert_eq!(by_proc.top(1)[0].0, "cat");
//! ```

#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod cache;
pub mod compare;
pub mod drops;
pub mod flame;
pub mod group;
pub mod hist;
pub mod iostat;
pub mod measure;
pub mod rollups;
pub mod scan;
pub mod slowest;
pub mod spectro;
pub mod units;

pub use cache::{CacheStats, ColumnCache};
pub use flame::Flame;
pub use group::{DiskSplit, FieldGroups, Group, GroupBy};
pub use hist::LatencyHist;
pub use iostat::{DeviceInterval, IoStat, IoStatError};
pub use measure::Measure;
pub use scan::{capture_span, for_each_match, scan, Damage, Scan, ScanStats};
pub use spectro::Spectrogram;
