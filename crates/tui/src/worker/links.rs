//! What an event is linked to, looked up in the capture off the UI thread: a syscall's (an
//! io_uring request's) block requests, a block request's syscall (io_uring request), and the
//! event of the thread that woke a call ([`waker`]).
//!
//! The link is the recorder's (see [`iocap_format::Event::link`]): a block request of cause
//! syscall (io_uring) belongs to the event of class syscall (io_uring) of the same `tid` that
//! started at the request's `ts - link`. Nothing in the file points the other way, so a call's
//! requests are searched for: among the block events issued from its start until [`AFTER`]
//! past its end (a request can be issued after the call returns: readahead, a queue that was
//! full). Every search is bounded, whatever the capture says: at most [`MAX_CHUNKS`] chunks,
//! at most [`LISTED`] requests kept, stopping early once as many as the call counted
//! (`disk.requests`) are found.
//!
//! The detail popup asks what the selected event is linked to, and the jump key asks where
//! the linked event is in the list: then the answer also gives its rank among the rows of its
//! chunk that the list shows (the filter's matches in the view), which the list turns into an
//! index.

use std::sync::Arc;

use iocap_filter::Compiled;
use iocap_format::{Cause, ChunkDecoder, Class, Col, ColSet, Columns, Event, Reader};

use super::rows;

/// How long after a call's end its block requests are looked for, ns.
pub const AFTER: u64 = 1_000_000_000;
/// How long before a call's start an event of its waker may have started, ns.
pub const WAKER_BEFORE: u64 = 100_000_000;
/// Chunks searched at most for one lookup.
pub const MAX_CHUNKS: usize = 64;
/// A call's block requests kept at most (the rest are counted).
pub const LISTED: usize = 64;

/// What the lookup is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// The detail popup: the linked events.
    Detail,
    /// The jump key: where the linked event is in the list. For a call, its `k`-th block
    /// request (counted modulo those found), so that pressing again goes on to the next.
    Jump(usize),
}

/// A lookup of what `event` is linked to.
#[derive(Clone)]
pub struct LinksQuery {
    /// Generation: a reply to an older lookup is dropped.
    pub gen: u64,
    /// The capture looked in: the snapshot the answer and the filter are of.
    pub reader: Arc<Reader>,
    /// Generation of the answer whose list a jump lands in.
    pub answer: u64,
    /// The event whose links are wanted (the list's selected one).
    pub event: Event,
    /// What for.
    pub want: Want,
    /// The applied filter, compiled (a jump's target must match it to be in the list).
    pub filter: Option<Arc<Compiled>>,
    /// Start of the list's view, ns since boot.
    pub start: u64,
    /// End of the list's view, ns since boot (exclusive).
    pub end: u64,
}

/// A linked event, and where it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linked {
    /// Index of its chunk.
    pub chunk: usize,
    /// Its row in the chunk.
    pub row: usize,
    /// The event.
    pub event: Event,
}

/// Where a jump's target is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The linked event.
    pub linked: Linked,
    /// Its rank among the rows of its chunk that match the filter in the view; `None` when
    /// the filter or the view leaves it out of the list.
    pub rank: Option<usize>,
    /// Which of the call's requests it is (0-based), for a jump from a call.
    pub nth: usize,
}

/// The answer to a [`LinksQuery`].
#[derive(Clone, Debug)]
pub struct Links {
    /// Generation of the lookup answered.
    pub gen: u64,
    /// Generation of the answer a jump lands in.
    pub answer: u64,
    /// The event looked up from.
    pub of: Event,
    /// What it was for.
    pub want: Want,
    /// A call's block requests in time order, at most [`LISTED`].
    pub requests: Vec<Linked>,
    /// How many requests were found in all (more than `requests.len()` when cut).
    pub found: usize,
    /// Whether the whole window was searched (not cut at [`MAX_CHUNKS`], no chunk unreadable).
    pub complete: bool,
    /// A block request's syscall (io_uring request), when found.
    pub issuer: Option<Linked>,
    /// A call's waker's event during the call ([`waker`]), when it has one.
    pub waker: Option<Linked>,
    /// A jump's target, when there is one.
    pub target: Option<Target>,
    /// A chunk that could not be read (what was found elsewhere is still given).
    pub error: Option<String>,
}

/// The class of event a block request of cause `cause` links to, if any.
pub fn issuer_class(cause: Cause) -> Option<Class> {
    match cause {
        Cause::Syscall => Some(Class::Syscall),
        Cause::IoUring => Some(Class::IoUring),
        Cause::Journal => Some(Class::Journal),
        Cause::None | Cause::Writeback => None,
    }
}

/// The cause a block request issued by an event of class `class` has, if it can have one.
fn cause_of(class: Class) -> Option<Cause> {
    match class {
        Class::Syscall => Some(Cause::Syscall),
        Class::IoUring => Some(Cause::IoUring),
        Class::Journal => Some(Cause::Journal),
        Class::Block => None,
    }
}

/// Whether a lookup on `e` can find anything: a call (or journal commit) that issued block
/// requests or that a thread woke, or a block request of cause syscall, io_uring or journal.
pub fn has_links(e: &Event) -> bool {
    match e.class {
        Class::Syscall | Class::IoUring | Class::Journal => e.disk_reqs > 0 || e.waker != 0,
        Class::Block => issuer_class(Cause::from_code(e.cause)).is_some(),
    }
}

/// Whether block request `b` links to call `c`: the rule in the module's doc.
pub fn links_to(b: &Event, c: &Event) -> bool {
    b.class == Class::Block
        && cause_of(c.class).is_some_and(|cause| cause as u8 == b.cause)
        && b.tid == c.tid
        && b.ts.checked_sub(b.link) == Some(c.ts)
}

/// Whether row `i` of `cols` (with at least [`link_cols`] decoded) is a block request that
/// links to `call`: [`links_to`] without making the row an event.
fn row_links_to(cols: &Columns, i: usize, call: &Event) -> bool {
    let Some(cause) = cause_of(call.class) else {
        return false;
    };
    cols.class.get(i) == Some(&(Class::Block as u8))
        && cols.cause.get(i) == Some(&(cause as u8))
        && cols.tid.get(i) == Some(&call.tid)
        && match (cols.ts.get(i), cols.link.get(i)) {
            (Some(ts), Some(link)) => ts.checked_sub(*link) == Some(call.ts),
            _ => false,
        }
}

/// The columns that tell whether a row is linked.
fn link_cols() -> ColSet {
    [Col::Class, Col::Ts, Col::Tid, Col::Cause, Col::Link].into_iter().collect()
}

/// Look up what `q.event` is linked to.
pub fn find(q: &LinksQuery) -> Links {
    let reader = &*q.reader;
    let mut out = Links {
        gen: q.gen,
        answer: q.answer,
        of: q.event.clone(),
        want: q.want,
        requests: Vec::new(),
        found: 0,
        complete: true,
        issuer: None,
        waker: None,
        target: None,
        error: None,
    };
    let mut dec = ChunkDecoder::new();
    let mut cols = Columns::default();
    let e = &q.event;
    let result = match e.class {
        Class::Syscall | Class::IoUring | Class::Journal => {
            let r = if e.disk_reqs > 0 {
                requests(reader, e, &mut dec, &mut cols, &mut out)
            } else {
                Ok(())
            };
            let w = if e.waker != 0 {
                waker(reader, e, &mut dec, &mut cols, &mut out)
            } else {
                Ok(())
            };
            r.and(w)
        }
        Class::Block => issuer(reader, e, &mut dec, &mut cols, &mut out),
    };
    if let Err(err) = result {
        out.complete = false;
        out.error = Some(err);
    }
    if let Want::Jump(k) = q.want {
        let (nth, linked) = match e.class {
            Class::Block => (0, out.issuer.clone()),
            // A call that issued no request goes to what woke it.
            _ if e.disk_reqs == 0 => (0, out.waker.clone()),
            _ if out.requests.is_empty() => (0, None),
            _ => {
                let nth = k % out.requests.len();
                (nth, out.requests.get(nth).cloned())
            }
        };
        if let Some(linked) = linked {
            match rank(reader, q, &linked, &mut dec, &mut cols) {
                Ok(rank) => out.target = Some(Target { linked, rank, nth }),
                Err(err) => out.error = Some(err),
            }
        }
    }
    out
}

/// Decode chunk `ci`'s columns `want` into `cols`, the error said as the list says it.
fn read(reader: &Reader, ci: usize, want: ColSet, dec: &mut ChunkDecoder, cols: &mut Columns) -> Result<(), String> {
    reader
        .read_chunk(ci, want, dec, cols)
        .map_err(|e| format!("chunk {ci}: {e}"))
}

/// A call's block requests, into `out`.
fn requests(
    reader: &Reader,
    call: &Event,
    dec: &mut ChunkDecoder,
    cols: &mut Columns,
    out: &mut Links,
) -> Result<(), String> {
    let until = call.end().saturating_add(AFTER);
    let chunks: Vec<usize> = reader.chunks_in(call.ts, until).collect();
    out.complete = chunks.len() <= MAX_CHUNKS;
    let wanted = usize::try_from(call.disk_reqs).unwrap_or(usize::MAX);
    let mut first_error = None;
    for &ci in chunks.iter().take(MAX_CHUNKS) {
        if let Err(e) = read(reader, ci, link_cols(), dec, cols) {
            first_error.get_or_insert(e);
            continue;
        }
        let rows: Vec<usize> = (0..cols.len()).filter(|&i| row_links_to(cols, i, call)).collect();
        if rows.is_empty() {
            continue;
        }
        out.found += rows.len();
        if out.requests.len() < LISTED {
            // The few chunks holding requests are decoded whole, for the popup's figures.
            read(reader, ci, ColSet::ALL, dec, cols)?;
            for row in rows.into_iter().take(LISTED - out.requests.len()) {
                out.requests.push(Linked {
                    chunk: ci,
                    row,
                    event: cols.event(row),
                });
            }
        }
        if out.found >= wanted {
            // Every request the call counted is found: the rest of the window holds no more.
            out.complete = true;
            break;
        }
    }
    out.requests
        .sort_by_key(|l| (l.event.ts, l.chunk, l.row));
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A block request's syscall (io_uring request), into `out`.
fn issuer(
    reader: &Reader,
    blk: &Event,
    dec: &mut ChunkDecoder,
    cols: &mut Columns,
    out: &mut Links,
) -> Result<(), String> {
    let Some(class) = issuer_class(Cause::from_code(blk.cause)) else {
        return Ok(());
    };
    // A link longer than the time since boot points nowhere.
    let Some(at) = blk.ts.checked_sub(blk.link) else {
        return Ok(());
    };
    let chunks: Vec<usize> = reader.chunks_in(at, at.saturating_add(1)).collect();
    out.complete = chunks.len() <= MAX_CHUNKS;
    let mut first_error = None;
    for &ci in chunks.iter().take(MAX_CHUNKS) {
        if let Err(e) = read(reader, ci, link_cols(), dec, cols) {
            first_error.get_or_insert(e);
            continue;
        }
        let hit = (0..cols.len()).find(|&i| {
            cols.class.get(i) == Some(&(class as u8)) && cols.tid.get(i) == Some(&blk.tid) && cols.ts.get(i) == Some(&at)
        });
        if let Some(row) = hit {
            read(reader, ci, ColSet::ALL, dec, cols)?;
            let event = cols.event(row);
            if links_to(blk, &event) {
                out.issuer = Some(Linked { chunk: ci, row, event });
                return Ok(());
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The event of the thread that woke `call` (its `waker`), into `out`: what that thread was
/// doing as it woke the call. With the waking's time (`woken`, since 1.20), its event that
/// holds that instant (a call before a block request, which runs on its own; of several, the
/// latest begun), else the last to end before it (a journal commit wakes its waiters as it
/// ends). Without it (older captures), of its events that overlap the call, the last to end
/// inside it, else the first to end after it. Events that started up to [`WAKER_BEFORE`]
/// before the call are looked at; none found is no waker event (a thread iocap did not trace,
/// an interrupt's).
fn waker(reader: &Reader, call: &Event, dec: &mut ChunkDecoder, cols: &mut Columns, out: &mut Links) -> Result<(), String> {
    let (from, end) = (call.ts.saturating_sub(WAKER_BEFORE), call.end());
    let woke = (call.woken > 0).then(|| call.ts.saturating_add(call.woken));
    let chunks: Vec<usize> = reader.chunks_in(from, end.saturating_add(1)).collect();
    out.complete &= chunks.len() <= MAX_CHUNKS;
    let want: ColSet = [Col::Class, Col::Ts, Col::Latency, Col::Tid].into_iter().collect();
    // The smallest key is the one wanted, then (chunk, row).
    let mut best: Option<((u8, u64), usize, usize)> = None;
    let mut first_error = None;
    for &ci in chunks.iter().take(MAX_CHUNKS) {
        if let Err(e) = read(reader, ci, want, dec, cols) {
            first_error.get_or_insert(e);
            continue;
        }
        for i in 0..cols.len() {
            let (Some(&tid), Some(&ts), Some(&lat)) = (cols.tid.get(i), cols.ts.get(i), cols.latency.get(i)) else {
                continue;
            };
            let e_end = ts.saturating_add(lat);
            if tid != call.waker || ts > end || e_end < call.ts || ts < from {
                continue;
            }
            let key = match woke {
                Some(w) if ts <= w && w <= e_end => {
                    let block = cols.class.get(i) == Some(&(Class::Block as u8));
                    (u8::from(block), u64::MAX - ts)
                }
                Some(w) if e_end <= w => (2, w - e_end),
                Some(_) => continue,
                // Inside: the latest end first; after: the earliest.
                None if e_end <= end => (0, u64::MAX - e_end),
                None => (1, e_end),
            };
            if best.is_none_or(|b| (key, ci, i) < b) {
                best = Some((key, ci, i));
            }
        }
    }
    if let Some((_, chunk, row)) = best {
        read(reader, chunk, ColSet::ALL, dec, cols)?;
        out.waker = Some(Linked { chunk, row, event: cols.event(row) });
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `linked`'s rank among the rows of its chunk that the list shows (matching `q.filter` in
/// `q.start..q.end`), as the rows worker counts them; `None` when it is not one of them.
fn rank(
    reader: &Reader,
    q: &LinksQuery,
    linked: &Linked,
    dec: &mut ChunkDecoder,
    cols: &mut Columns,
) -> Result<Option<usize>, String> {
    read(reader, linked.chunk, ColSet::ALL, dec, cols)?;
    let matching = rows::matching(cols, q.filter.as_deref(), q.start, q.end);
    Ok(matching.binary_search(&linked.row).ok())
}
