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
    /// Captures that cannot be read as one recording ([`crate::Reader::join`]): none, files of
    /// different hosts or boots, or files overlapping in time.
    #[error("{0}")]
    NotOneRecording(String),
    /// The bytes are not an iocap capture at all.
    #[error("not an iocap capture: {0}")]
    NotACapture(&'static str),
    /// The capture was written by a newer iocap whose format this one cannot read.
    #[error("capture format {major}.{minor} is newer than this iocap reads (up to {supported}.x): upgrade iocap")]
    Version {
        /// The file's format major version, from its preamble.
        major: u16,
        /// The file's format minor version.
        minor: u16,
        /// The newest major version this iocap reads ([`crate::FORMAT_MAJOR`]).
        supported: u16,
    },
    /// A frame failed its checksum or did not decode.
    #[error("corrupt capture at byte {offset}: {what}")]
    Corrupt {
        /// Where the damaged frame starts in the file, in bytes.
        offset: u64,
        /// What did not hold: `checksum mismatch`, `chunk summary does not decode`, ...
        what: String,
    },
    /// A length or count beyond what the format allows.
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLarge {
        /// What was too large: `frame`.
        what: &'static str,
        /// Its size, in bytes.
        len: u64,
        /// The most the format allows, in bytes.
        max: u64,
    },
    /// A frame (at `offset`) declares more than the reader lets one file use: a string longer
    /// than any path or command line, tables larger than the file could hold, a column larger
    /// than its chunk's events need ([`Limit`] says which). Checked before allocating.
    #[error("capture at byte {offset}: {limit} is {len} bytes, over the limit of {max}")]
    OverLimit {
        /// Where the frame that declared it starts in the file, in bytes.
        offset: u64,
        /// Which limit it passed.
        limit: Limit,
        /// The size the frame declared (or the total it would bring the tables to), in bytes.
        len: u64,
        /// The limit, in bytes.
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
    Column {
        /// The column that declared more bytes than its encoding can take.
        col: Col,
        /// The number of events its chunk declares, which sets the limit.
        events: u64,
    },
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
