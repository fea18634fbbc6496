//! The format crate's error type.

use std::fmt;
use std::io;

use crate::columns::Col;

/// Why a capture could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused a read or a write (a full disk shows up here).
    /// Transparent: the io::Error is the message and not also its source, or a report of
    /// the chain says it twice ("Permission denied: Permission denied").
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The bytes are not an iocap capture at all.
    #[error("not an iocap capture: {0}")]
    NotACapture(&'static str),
    /// The capture was written by a newer iocap whose format this one cannot read.
    #[error("capture format {major}.{minor} is newer than this iocap reads (up to {supported}.x): upgrade iocap")]
    Version { major: u16, minor: u16, supported: u16 },
    /// A frame failed its checksum or did not decode.
    #[error("corrupt capture at byte {offset}: {what}")]
    Corrupt { offset: u64, what: String },
    /// A length or count beyond what the format allows.
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLarge { what: &'static str, len: u64, max: u64 },
    /// A frame (at `offset`) declares more than the reader lets one file use: a string longer
    /// than any path or command line, tables larger than the file could hold, a column larger
    /// than its chunk's events need ([`Limit`] says which). Checked before allocating.
    #[error("capture at byte {offset}: {limit} is {len} bytes, over the limit of {max}")]
    OverLimit {
        offset: u64,
        limit: Limit,
        len: u64,
        max: u64,
    },
    /// `finish()` was already called, or an earlier write failed and left the writer unusable.
    #[error("the capture writer is closed")]
    Closed,
}

/// Which of the reader's memory limits a capture passed ([`Error::OverLimit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limit {
    /// One string of a table (a path, process name, command line, socket or device name):
    /// at most [`crate::MAX_STRING`] bytes before escaping.
    String,
    /// Every table of the capture together, decoded, strings counted escaped: at most
    /// [`crate::table_budget`] of the file's size.
    Tables,
    /// One column of a chunk of `events` events, decompressed: at most what the column's
    /// encoding can take for that many values of the column's type.
    Column { col: Col, events: u64 },
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::String => f.write_str("a table string"),
            Limit::Tables => f.write_str("decoded table data"),
            Limit::Column { col, events } => {
                write!(
                    f,
                    "the decompressed {} column of a {events}-event chunk",
                    format!("{col:?}").to_lowercase()
                )
            }
        }
    }
}

impl Error {
    pub(crate) fn corrupt(offset: u64, what: impl Into<String>) -> Error {
        Error::Corrupt {
            offset,
            what: what.into(),
        }
    }
}
