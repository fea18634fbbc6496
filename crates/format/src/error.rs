//! The format crate's error type.

use std::io;

/// Why a capture could not be written or read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system refused a read or a write (a full disk shows up here).
    #[error("{0}")]
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
    /// `finish()` was already called, or an earlier write failed and left the writer unusable.
    #[error("the capture writer is closed")]
    Closed,
}

impl Error {
    pub(crate) fn corrupt(offset: u64, what: impl Into<String>) -> Error {
        Error::Corrupt {
            offset,
            what: what.into(),
        }
    }
}
