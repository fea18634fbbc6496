//! The worker threads: answer [`Query`]s and decode the event list's rows ([`RowsQuery`]) off
//! the UI thread, and follow a capture that is being recorded ([`follow`]).
//!
//! The UI bumps a shared generation counter with every new query; the worker always takes the
//! newest waiting query (older ones are dropped unanswered) and a running scan stops at its
//! next chunk once the counter has moved on, so typing and scrubbing never wait for a scan.
//! After an answer it counts the filter's matches in the whole capture when the view holds
//! only part of it ([`query::count_whole`]); between questions it fills the capture's column
//! cache ([`query::warm`]) with what the last one read, so the next one over the same chunks
//! skips decoding. It keeps its last answer's totals ([`query::Kept`]): the same question of a
//! capture that has grown since scans only the new chunks.
//!
//! Side A of a comparison has a query thread of its own ([`Worker::ask_other`]): its own
//! capture, column cache and kept totals, and its own cancel token, so neither side's question
//! cancels the other's.
//!
//! Rows have a thread of their own, so a page of the list never waits behind a scan: it too
//! takes only the newest request waiting. So do the lookups of what an event is linked to
//! (`links.rs`: a syscall's block requests, a block request's syscall), which may read several
//! chunks. Every request carries the snapshot of the capture it is about (a reader the filter
//! was compiled against), so a capture that grows meanwhile changes no answer under way.
//!
//! A capture being recorded has a thread more: [`follow`] reads what the recorder appends, every
//! [`POLL`], and hands the app a snapshot of the grown capture; with rotation, it moves on to the
//! next file once the recorder has finished one.

pub mod links;
pub mod query;
pub mod rows;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use iocap_format::{Liveness, Reader};

use iocap_analysis::ColumnCache;

use links::{Links, LinksQuery};
use query::{Answer, Cancel, Query, CACHE_BUDGET};
use rows::{RowLoader, Rows, RowsQuery};

/// How often a capture being recorded is looked at for what the recorder appended: with its
/// flushes (at least every 500 ms), an event is on screen within about 0.7 s.
pub const POLL: Duration = Duration::from_millis(200);

/// What the worker sends back.
#[derive(Clone, Debug)]
pub enum Reply {
    /// The answer to a query.
    Answer(Box<Answer>),
    /// The query failed (a damaged chunk): shown on the status line.
    Failed {
        /// Generation of the query that failed.
        gen: u64,
        /// Why, as the reader's error displays.
        error: String,
    },
    /// Events matching a query's filter in the whole capture ([`query::count_whole`]).
    Whole {
        /// Generation of the query whose filter was counted.
        gen: u64,
        /// How many match.
        matched: u64,
    },
    /// A query's filter matched nothing and the capture holds a value near one it asked for
    /// ([`query::near_miss`]).
    NearMiss {
        /// Generation of the query whose filter matched nothing.
        gen: u64,
        /// The clause to type instead (`proc.name=fio`), its value escaped.
        clause: String,
    },
    /// The event list's rows on screen.
    Rows(Rows),
    /// What the selected event is linked to.
    Links(Box<Links>),
    /// The capture being recorded grew, or its recorder finished or died ([`follow`]).
    Grown(Grown),
    /// The capture being recorded could not be read on: following it stopped.
    Unfollowed(String),
    /// The recording went on in the next file of its rotation (`record -C`): the capture to
    /// show from now on.
    NextFile(NextFile),
}

/// The next file of a rotation, being recorded.
#[derive(Clone)]
pub struct NextFile {
    /// The file, opened.
    pub reader: Arc<Reader>,
    /// Where it is.
    pub path: PathBuf,
}

impl std::fmt::Debug for NextFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NextFile").field("path", &self.path).finish()
    }
}

/// A capture being recorded, as it is now.
#[derive(Clone)]
pub struct Grown {
    /// A snapshot of the capture: its chunks, tables and liveness at the last look.
    pub reader: Arc<Reader>,
    /// Its tables changed since the last snapshot: a filter compiled against them is compiled
    /// again (new processes and files must be judged).
    pub tables: bool,
}

impl std::fmt::Debug for Grown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grown")
            .field("chunks", &self.reader.chunks().len())
            .field("liveness", &self.reader.liveness())
            .field("tables", &self.tables)
            .finish()
    }
}

/// The UI side of the worker.
pub struct Worker {
    tx: Sender<Query>,
    rows: Sender<RowsQuery>,
    links: Sender<LinksQuery>,
    cancel: Cancel,
    /// Side A of a comparison has a query thread of its own (its own capture, column cache and
    /// kept totals), idle until a comparison asks.
    other: Sender<Query>,
    other_cancel: Cancel,
}

impl Worker {
    /// Start the worker threads; replies are turned into the UI's events by `wrap`, and those
    /// about side A of a comparison by `wrap_other`. A thread that cannot start is an error for
    /// the caller to report once the terminal is restored (printed here, it would land on the
    /// raw screen).
    pub fn spawn<E: Send + 'static>(
        events: Sender<E>,
        wrap: fn(Reply) -> E,
        wrap_other: fn(Reply) -> E,
    ) -> std::io::Result<Worker> {
        let (other, other_rx) = channel::<Query>();
        let other_cancel = Cancel::default();
        let (theirs, their_events) = (other_cancel.clone(), events.clone());
        spawn("iocap-query-a", move || serve(&other_rx, &theirs, &their_events, wrap_other))?;
        let (tx, rx) = channel::<Query>();
        let (rows, rows_rx) = channel::<RowsQuery>();
        let (links, links_rx) = channel::<LinksQuery>();
        let cancel = Cancel::default();
        let theirs = cancel.clone();
        let their_events = events.clone();
        spawn("iocap-query", move || serve(&rx, &theirs, &their_events, wrap))?;
        let rows_events = events.clone();
        spawn("iocap-rows", move || serve_rows(&rows_rx, &rows_events, wrap))?;
        spawn("iocap-links", move || serve_links(&links_rx, &events, wrap))?;
        Ok(Worker {
            tx,
            rows,
            links,
            cancel,
            other,
            other_cancel,
        })
    }

    /// Ask `q`, superseding every earlier query.
    pub fn ask(&self, q: Query) {
        self.cancel.0.store(q.gen, Ordering::Relaxed);
        let _ = self.tx.send(q);
    }

    /// Ask `q` of side A of a comparison, superseding every earlier query of A.
    pub fn ask_other(&self, q: Query) {
        self.other_cancel.0.store(q.gen, Ordering::Relaxed);
        let _ = self.other.send(q);
    }

    /// Decode the rows `q` asks for, superseding earlier requests not yet started.
    pub fn rows(&self, q: RowsQuery) {
        let _ = self.rows.send(q);
    }

    /// Look up what an event is linked to, superseding earlier lookups not yet started.
    pub fn links(&self, q: LinksQuery) {
        let _ = self.links.send(q);
    }
}

/// Start a thread named `name`, or say which could not start.
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map(|_| ())
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start the {name} thread: {e}")))
}

/// Follow a capture that is being recorded ([`Liveness::Live`]), opened from `path`: every
/// [`POLL`], read what the recorder appended ([`Reader::refresh`], on a copy of `reader` of the
/// thread's own) and, when it appended anything or finished or died, send a snapshot as
/// [`Reply::Grown`]. When it is finished and its header names the next file of a rotation, go on
/// there ([`next_capture`], [`Reply::NextFile`]). Ends once the recording is over (a file
/// finished without a successor, or a recorder that died), or the app has gone. Nothing is
/// started for a capture that is not live.
pub fn follow<E: Send + 'static>(
    reader: &Reader,
    path: &Path,
    events: Sender<E>,
    wrap: fn(Reply) -> E,
) -> std::io::Result<()> {
    if reader.liveness() != Liveness::Live {
        return Ok(());
    }
    let (mut r, mut path) = (reader.clone(), path.to_path_buf());
    spawn("iocap-follow", move || loop {
        // Whether table frames came since the last snapshot sent.
        let mut tables = false;
        while r.liveness() == Liveness::Live {
            thread::sleep(POLL);
            let grown = match r.refresh() {
                Ok(g) => g,
                Err(e) => {
                    let _ = events.send(wrap(Reply::Unfollowed(e.to_string())));
                    return;
                }
            };
            tables |= grown.tables > 0;
            if grown.is_empty() && r.liveness() == Liveness::Live {
                continue;
            }
            let snapshot = Grown {
                reader: Arc::new(r.clone()),
                tables: std::mem::take(&mut tables),
            };
            if events.send(wrap(Reply::Grown(snapshot))).is_err() {
                return;
            }
        }
        let Some((next, at)) = next_capture(&r, &path) else { return };
        (r, path) = (next, at);
        let moved = NextFile {
            reader: Arc::new(r.clone()),
            path: path.clone(),
        };
        if events.send(wrap(Reply::NextFile(moved))).is_err() {
            return;
        }
    })
}

/// How long a finished file's successor may take to appear: the recorder names it before it
/// finishes the file, so it is there at once unless the recording stopped with this file.
const NEXT_FILE_WAIT: Duration = Duration::from_secs(1);

/// The file a finished capture's recording went on in, opened, and its path: the next file of
/// a rotation, which its header names ([`iocap_format::Meta::next_path`]). `None` when the
/// capture is not finished, names none, or it does not appear within a second (the
/// recording stopped with this file, or a ring removed it already).
pub fn next_capture(reader: &Reader, path: &Path) -> Option<(Reader, PathBuf)> {
    if reader.liveness() != Liveness::Finished {
        return None;
    }
    let next = reader.meta().next_path(path)?;
    let waited = Instant::now();
    loop {
        match Reader::open_next(&next) {
            Ok(r) => return Some((r, next)),
            Err(_) if waited.elapsed() < NEXT_FILE_WAIT => thread::sleep(POLL),
            Err(_) => return None,
        }
    }
}

fn serve_links<E>(rx: &Receiver<LinksQuery>, out: &Sender<E>, wrap: fn(Reply) -> E) {
    while let Ok(mut q) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        if out.send(wrap(Reply::Links(Box::new(links::find(&q))))).is_err() {
            return;
        }
    }
}

fn serve_rows<E>(rx: &Receiver<RowsQuery>, out: &Sender<E>, wrap: fn(Reply) -> E) {
    let mut loader = RowLoader::new();
    while let Ok(mut q) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        if out.send(wrap(Reply::Rows(loader.load(&q)))).is_err() {
            return;
        }
    }
}

fn serve<E>(rx: &Receiver<Query>, cancel: &Cancel, out: &Sender<E>, wrap: fn(Reply) -> E) {
    // Decoded columns kept for the next query over the same chunks (chunks keep their index
    // as a capture being recorded grows, so the cache holds across its snapshots, but not
    // across the files of a rotation).
    let mut cache = ColumnCache::new(CACHE_BUDGET);
    // The last answer's totals, for the same question of the capture grown.
    let mut kept = None;
    // The capture the cache holds columns of.
    let mut of: Option<Arc<Reader>> = None;
    // The filter last looked at for a value near its own, and how many table entries the
    // capture had then: asked once, not again with every view of it that matches nothing,
    // until a capture being recorded brings more entries. Forgotten once another filter is
    // asked of (the app forgets the hint with its filter).
    let mut hinted: Option<(String, usize)> = None;
    while let Ok(mut q) = rx.recv() {
        // Skip to the newest query waiting.
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        if !of.as_ref().is_some_and(|r| r.same_source(&q.reader)) {
            cache = ColumnCache::new(CACHE_BUDGET);
            kept = None;
            hinted = None;
        }
        of = Some(Arc::clone(&q.reader));
        if hinted.as_ref().is_some_and(|(text, _)| *text != q.filter_text) {
            hinted = None;
        }
        let mut nothing = false;
        let reply = match query::answer(&q, Some(&cache), cancel, &mut kept) {
            Ok(Some(a)) => {
                nothing = a.matched == 0;
                Reply::Answer(Box::new(a))
            }
            Ok(None) => continue,
            Err(error) => Reply::Failed { gen: q.gen, error },
        };
        if out.send(wrap(reply)).is_err() {
            return;
        }
        if nothing && !cancel.is_stale(q.gen) {
            let t = q.reader.tables();
            let asked = (q.filter_text.clone(), t.string_count() + t.procs().len() + t.file_count());
            if hinted.as_ref() != Some(&asked) {
                hinted = Some(asked);
                if let Some(clause) = query::near_miss(&q) {
                    if out.send(wrap(Reply::NearMiss { gen: q.gen, clause })).is_err() {
                        return;
                    }
                }
            }
        }
        if q.whole {
            if let Some(matched) = query::count_whole(&q, Some(&cache), cancel, &mut kept) {
                if out.send(wrap(Reply::Whole { gen: q.gen, matched })).is_err() {
                    return;
                }
            }
        }
        // Idle until the next question: decode this view's columns into the cache (it stops at
        // the next chunk once a new query is asked), so that question skips decoding.
        let _ = query::warm(&q, &cache, cancel);
    }
}
