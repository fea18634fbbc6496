//! The event list's rows on screen, decoded off the UI thread.
//!
//! The list is virtual: an [`Answer`](crate::worker::query::Answer) says how many events match per
//! chunk (time order) or which are the slowest (latency order), and only the rows on screen
//! are ever decoded. Those rows can come from chunks all over the capture (the slowest events
//! of a view are anywhere), so decoding them is heavy work: an update of the UI returns a
//! [`RowsQuery`] ([`crate::app::Effects`]), a [`RowLoader`] on the worker's rows thread
//! answers it with [`Rows`], and the list shows the rows it has meanwhile. The loader keeps
//! the last few chunks decoded, so scrolling within them costs no decoding.

use std::sync::Arc;

use iocap_filter::{Bitmap, Compiled};
use iocap_format::{ChunkDecoder, ColSet, Columns, Event, Reader};

use super::query::EventRef;

/// Chunks the loader keeps decoded (each holds every column of up to 64 Ki events).
const KEPT: usize = 4;

/// How the refs of a [`RowsQuery`] name their rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counting {
    /// `row` is the k-th event of the chunk that matches the filter in the view: the list in
    /// time order knows only how many match per chunk.
    Matching,
    /// `row` is the chunk's row itself: the slowest events, which the scan located.
    Rows,
}

/// The rows the list shows, to be decoded.
#[derive(Clone)]
pub struct RowsQuery {
    /// Generation: a reply to an older request is dropped.
    pub gen: u64,
    /// The capture read: the snapshot the answer and the filter are of.
    pub reader: Arc<Reader>,
    /// Generation of the answer the rows belong to: decoded chunks of another answer's view
    /// and filter are not reused.
    pub answer: u64,
    /// How `refs` count their rows.
    pub counting: Counting,
    /// `(index in the list, where)`, `where.row` counted as `counting` says.
    pub refs: Vec<(usize, EventRef)>,
    /// The applied filter, compiled; `None` matches everything.
    pub filter: Option<Arc<Compiled>>,
    /// Start of the view, ns since boot: earlier events are not in the list.
    pub start: u64,
    /// End of the view, ns since boot (exclusive).
    pub end: u64,
}

/// The answer to a [`RowsQuery`].
#[derive(Clone, Debug)]
pub struct Rows {
    /// Generation of the request answered.
    pub gen: u64,
    /// `(index in the list, event)`, by index.
    pub rows: Vec<(usize, Event)>,
    /// A chunk that could not be read (the rows before it are still given).
    pub error: Option<String>,
}

/// One decoded chunk, with its rows that match the filter in the view, in row order.
struct Decoded {
    chunk: usize,
    cols: Columns,
    matching: Vec<usize>,
}

/// Decodes rows for [`RowsQuery`]s, keeping the last `KEPT` chunks decoded.
#[derive(Default)]
pub struct RowLoader {
    answer: u64,
    kept: Vec<Decoded>,
    decoder: ChunkDecoder,
}

impl RowLoader {
    /// A loader with nothing decoded yet.
    pub fn new() -> RowLoader {
        RowLoader::default()
    }

    /// Decode the rows `q` asks for.
    pub fn load(&mut self, q: &RowsQuery) -> Rows {
        let reader = &*q.reader;
        if q.answer != self.answer {
            self.kept.clear();
            self.answer = q.answer;
        }
        let mut refs = q.refs.clone();
        // Chunk by chunk, so each is decoded once per request.
        refs.sort_by_key(|&(i, r)| (r.chunk, i));
        let (mut rows, mut error) = (Vec::with_capacity(refs.len()), None);
        for (i, r) in refs {
            let c = match self.chunk(reader, q, r.chunk) {
                Ok(c) => c,
                Err(e) => {
                    error = Some(format!("chunk {}: {e}", r.chunk));
                    break;
                }
            };
            let row = match q.counting {
                Counting::Matching => c.matching.get(r.row).copied(),
                Counting::Rows => Some(r.row),
            };
            if let Some(row) = row.filter(|&row| row < c.cols.len()) {
                rows.push((i, c.cols.event(row)));
            }
        }
        rows.sort_by_key(|&(i, _)| i);
        Rows {
            gen: q.gen,
            rows,
            error,
        }
    }

    /// Chunk `i` decoded whole, with its matching rows.
    fn chunk(&mut self, reader: &Reader, q: &RowsQuery, i: usize) -> Result<&Decoded, iocap_format::Error> {
        if let Some(p) = self.kept.iter().position(|c| c.chunk == i) {
            return Ok(&self.kept[p]);
        }
        let mut cols = Columns::default();
        reader.read_chunk(i, ColSet::ALL, &mut self.decoder, &mut cols)?;
        let matching = matching(&cols, q.filter.as_deref(), q.start, q.end);
        if self.kept.len() >= KEPT {
            self.kept.remove(0);
        }
        self.kept.push(Decoded {
            chunk: i,
            cols,
            matching,
        });
        Ok(&self.kept[self.kept.len() - 1])
    }
}

/// The rows of `cols` (decoded whole) that the list shows: those matching `filter` that
/// start in `start..end`, in row order: how the list in time order counts its rows, and so
/// where a jump's target is in it.
pub fn matching(cols: &Columns, filter: Option<&Compiled>, start: u64, end: u64) -> Vec<usize> {
    let mut bits = Bitmap::ones(cols.len());
    if let Some(f) = filter {
        f.eval(cols, &mut bits);
    }
    bits.iter_ones()
        .filter(|&r| cols.ts.get(r).is_some_and(|t| (start..end).contains(t)))
        .collect()
}
