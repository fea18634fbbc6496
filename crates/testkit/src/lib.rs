//! What iocap's tests, benchmarks and examples build synthetic captures from: a deterministic
//! generator ([`Rng`]), the header of a test capture ([`meta`], [`bare_meta`]), a writer onto a
//! file ([`create`]), table entries named in one call ([`add_proc`], [`add_file`]) and a block
//! request ([`block`], the counterpart of [`Event::syscall`](iocap_format::Event::syscall)).
//!
//! Each test keeps its own workload (which events, at what latencies): that is what its
//! assertions and snapshots are about. What lives here is the code every workload would
//! otherwise repeat; none of it draws from a generator, so a workload's draws, and the file it
//! writes, stay its own.
//!
//! Not published; a dev-dependency only, of the root package's tests, `iocap-tui`'s tests and
//! benchmark and `iocap-filter`'s tests and example. `iocap-format`'s own tests and example keep
//! their copies. Using this crate there takes a dev-dependency cycle (it builds, and an
//! integration test sees one `iocap-format`, but a unit test would see two copies of its
//! types), for little: what those copies share is a generator of their own (xorshift64*, another
//! sequence), not a capture builder.
//!
//! ```
//! use iocap_format::{BlockOp, Event, Reader, Writer, WriterOptions};
//! use iocap_testkit::{add_proc, bare_meta, block, Rng, VDA};
//!
//! let meta = bare_meta(1_000, VDA);
//! let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default())?;
//! let fio = add_proc(&mut w, 100, 1, b"fio");
//! let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
//! for i in 0..100 {
//!     let latency = 1_000 + rng.below(9_000);
//!     let e = if i % 10 == 9 {
//!         Event { op: BlockOp::Write as u8, ..block(1_000 + i * 10_000, latency, 100, fio, VDA, 4096) }
//!     } else {
//!         Event { proc: fio, ..Event::syscall(1_000 + i * 10_000, latency, 100, 100, 0, 4096) }
//!     };
//!     w.push(&e)?;
//! }
//! let r = Reader::from_bytes(w.finish(1_000_000)?)?;
//! assert_eq!(r.event_count(), 100);
//! # Ok::<(), iocap_format::Error>(())
//! ```

#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

mod capture;
mod modules;
mod rng;

pub use capture::{add_file, add_proc, bare_meta, block, create, meta, two_disks, SDB, VDA};
pub use modules::module_cycles;
pub use rng::Rng;
