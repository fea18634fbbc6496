//! iocap's event model and capture file.
//!
//! A capture is a sequence of checksummed frames (see `FORMAT.md` at the project's root):
//! a header with the [`Meta`]data, table frames ([`Tables`]: strings, processes, files,
//! devices), chunks of events stored column by column and zstd-compressed, drop statistics,
//! and, when the recording finished cleanly, an index of every frame with a
//! [`ChunkSummary`] per chunk, so that overviews need no decompression.
//!
//! - [`Writer`] writes a capture; it must be [`Writer::finish`]ed.
//! - [`Reader`] opens one by its index, or recovers every whole frame of a file that was cut
//!   short or damaged ([`Reader::is_clean`] tells which). A file still being written is read
//!   as far as it goes, and [`Reader::refresh`] reads on as it grows ([`Reader::liveness`]:
//!   the recorder holds a lock on it while it writes, [`lock_for_writing`]).
//! - [`Columns`] is a decoded chunk; [`Event`] is one row of it.
//!
//! ```
//! use iocap_format::{Event, Meta, Reader, Writer, WriterOptions};
//! let meta = Meta { host: "db1".into(), ..Meta::default() };
//! let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default())?;
//! for i in 0..10 {
//!     w.push(&Event::syscall(1_000 * i, 300, 7, 7, 0, 1))?;
//! }
//! let r = Reader::from_bytes(w.finish(20_000)?)?;
//! assert_eq!(r.event_count(), 10);
//! assert_eq!(r.meta().host, "db1");
//! # Ok::<(), iocap_format::Error>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

pub mod bits;
mod columns;
pub mod container;
mod error;
pub mod escape;
mod frame;
mod hash;
pub mod latency;
mod live;
mod model;
mod pack;
mod reader;
mod rollup;
mod summary;
pub mod syscalls;
mod tables;
pub mod uring;
pub mod varint;
mod writer;

pub use columns::{
    chunk_holds, Col, ColSet, ColSlice, ColValue, ColVecMut, Columns, Holds, MAX_CHUNK_EVENTS, MAX_EVENTS_PER_BYTE,
};
pub use error::{Error, Limit};
pub use frame::{opening_len, FORMAT_MAJOR, FORMAT_MINOR, OPENING_PEEK};
pub use hash::{IdHasher, IdMap};
pub use live::{lock_for_writing, writer_alive, Liveness};
pub use model::{
    blk_flags, dev_parts, mkdev, BlockOp, Cause, Class, ContainerEntry, Device, DropStats, Event, FdTarget, FdType,
    FileEntry, Meta, ProcDropStats, ProcDrops, ProcEntry, Reason, Stack, StackFrame, StackKind, StrId, WAIT_COLS,
};
pub use reader::{ChunkDecoder, ChunkInfo, Growth, ReadOptions, Reader, Source};
pub use rollup::{cell, cell_parts, cell_range, key_cols, CellTotals, KeyTotals, Rollup};
pub use summary::{log2_bucket, log2_bucket_range, ChunkSummary, LOG2_BUCKETS};
pub use tables::{
    table_budget, Tables, MAX_STACK_FRAMES, MAX_STRING, MAX_TABLE_BYTES, TABLE_BUDGET_FLOOR, TABLE_BYTES_PER_FILE_BYTE,
};
pub use writer::{Writer, WriterOptions};
