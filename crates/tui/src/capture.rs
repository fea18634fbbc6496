//! The capture being viewed: the shared reader, and what the viewer needs to know of the file
//! from its index (its name as shown, its span, its event count, whether it is being recorded).

use std::path::Path;
use std::sync::Arc;

use iocap_format::{Liveness, Reader};

/// A capture opened for viewing. One being recorded is replaced by each snapshot of it
/// ([`Capture::grown`]).
#[derive(Clone)]
pub struct Capture {
    /// The capture's reader, shared with the workers.
    pub reader: Arc<Reader>,
    /// File name as shown (escaped).
    pub name: String,
    /// Start of the span every view lies in, ns since boot.
    pub start: u64,
    /// End of that span, ns since boot (at least one past `start`): the recording's stop, or
    /// the last event's start when later.
    pub end: u64,
    /// The last event's start, ns since boot (`start` when there is none): a view's rows hold
    /// it, where they may stop short of a later `end`.
    pub last: u64,
    /// Events in the capture, by its index.
    pub total: u64,
    /// Events the kernel dropped while recording it ([`Reader::drops`]): when none, no view
    /// needs its drops counted (a count that walks every chunk summary of a day's recording
    /// at each frame).
    pub drops: u64,
    /// Block requests issued whose completion never reached the recorder, in the whole
    /// capture ([`Reader::unseen`]): not in it, and not drops either.
    pub unseen: u64,
    /// Whether a recorder is still writing it, had finished it, or died ([`Reader::liveness`]).
    pub liveness: Liveness,
}

impl Capture {
    /// The capture `reader` reads, opened from `path` (for its name only).
    pub fn new(reader: Arc<Reader>, path: &Path) -> Capture {
        let name = iocap_format::escape::escape(path.as_os_str().as_encoded_bytes());
        Capture::named(reader, name)
    }

    /// The same capture grown: a newer snapshot of it, being recorded.
    pub fn grown(&self, reader: Arc<Reader>) -> Capture {
        Capture::named(reader, self.name.clone())
    }

    fn named(reader: Arc<Reader>, name: String) -> Capture {
        // The span every report is laid over; a view needs at least one ns of it.
        let (start, end) = iocap_analysis::capture_span(&reader);
        let end = end.max(start + 1);
        let last = reader.chunks().iter().map(|c| c.summary.max_ts).max().unwrap_or(start);
        let total = reader.event_count();
        Capture {
            drops: reader.drops(),
            unseen: reader.unseen(),
            liveness: reader.liveness(),
            reader,
            name,
            start,
            end,
            last: last.clamp(start, end),
            total,
        }
    }

    /// Whether a recorder is still writing it.
    pub fn is_live(&self) -> bool {
        self.liveness == Liveness::Live
    }
}
