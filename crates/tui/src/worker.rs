//! The worker threads: answer [`Query`]s and decode the event list's rows ([`RowsQuery`]) off
//! the UI thread.
//!
//! The UI bumps a shared generation counter with every new query; the worker always takes the
//! newest waiting query (older ones are dropped unanswered) and a running scan stops at its
//! next chunk once the counter has moved on, so typing and scrubbing never wait for a scan.
//! After an answer it counts the filter's matches in the whole capture when the view holds
//! only part of it ([`query::count_all`]); between questions it fills the capture's column
//! cache ([`query::warm`]) with what the last one read, so the next one over the same chunks
//! skips decoding.
//!
//! Rows have a thread of their own, so a page of the list never waits behind a scan: it too
//! takes only the newest request waiting. So do the lookups of what an event is linked to
//! (`links.rs`: a syscall's block requests, a block request's syscall), which may read several
//! chunks.

pub mod links;
pub mod query;
pub mod rows;

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread;

use iocap_format::Reader;

use iocap_analysis::ColumnCache;

use links::{Links, LinksQuery};
use query::{Answer, Cancel, Query, CACHE_BUDGET};
use rows::{RowLoader, Rows, RowsQuery};

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
    /// Events matching a query's filter in the whole capture ([`query::count_all`]).
    Whole {
        /// Generation of the query whose filter was counted.
        gen: u64,
        /// How many match.
        matched: u64,
    },
    /// The event list's rows on screen.
    Rows(Rows),
    /// What the selected event is linked to.
    Links(Box<Links>),
}

/// The UI side of the worker.
pub struct Worker {
    tx: Sender<Query>,
    rows: Sender<RowsQuery>,
    links: Sender<LinksQuery>,
    cancel: Cancel,
}

impl Worker {
    /// Start the worker threads; replies are turned into the UI's events by `wrap`. A thread
    /// that cannot start is an error for the caller to report once the terminal is restored
    /// (printed here, it would land on the raw screen).
    pub fn spawn<E: Send + 'static>(
        reader: Arc<Reader>,
        events: Sender<E>,
        wrap: fn(Reply) -> E,
    ) -> std::io::Result<Worker> {
        let (tx, rx) = channel::<Query>();
        let (rows, rows_rx) = channel::<RowsQuery>();
        let (links, links_rx) = channel::<LinksQuery>();
        let cancel = Cancel::default();
        let theirs = cancel.clone();
        let (their_reader, their_events) = (Arc::clone(&reader), events.clone());
        thread::Builder::new()
            .name("iocap-query".into())
            .spawn(move || serve(&their_reader, &rx, &theirs, &their_events, wrap))
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start the query thread: {e}")))?;
        let (rows_reader, rows_events) = (Arc::clone(&reader), events.clone());
        thread::Builder::new()
            .name("iocap-rows".into())
            .spawn(move || serve_rows(&rows_reader, &rows_rx, &rows_events, wrap))
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start the rows thread: {e}")))?;
        thread::Builder::new()
            .name("iocap-links".into())
            .spawn(move || serve_links(&reader, &links_rx, &events, wrap))
            .map_err(|e| std::io::Error::new(e.kind(), format!("cannot start the links thread: {e}")))?;
        Ok(Worker {
            tx,
            rows,
            links,
            cancel,
        })
    }

    /// Ask `q`, superseding every earlier query.
    pub fn ask(&self, q: Query) {
        self.cancel.0.store(q.gen, Ordering::Relaxed);
        let _ = self.tx.send(q);
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

fn serve_links<E>(reader: &Reader, rx: &Receiver<LinksQuery>, out: &Sender<E>, wrap: fn(Reply) -> E) {
    while let Ok(mut q) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        if out.send(wrap(Reply::Links(Box::new(links::find(reader, &q))))).is_err() {
            return;
        }
    }
}

fn serve_rows<E>(reader: &Reader, rx: &Receiver<RowsQuery>, out: &Sender<E>, wrap: fn(Reply) -> E) {
    let mut loader = RowLoader::new();
    while let Ok(mut q) = rx.recv() {
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        if out.send(wrap(Reply::Rows(loader.load(reader, &q)))).is_err() {
            return;
        }
    }
}

fn serve<E>(reader: &Reader, rx: &Receiver<Query>, cancel: &Cancel, out: &Sender<E>, wrap: fn(Reply) -> E) {
    // Decoded columns kept for the next query over the same chunks.
    let cache = ColumnCache::new(CACHE_BUDGET);
    while let Ok(mut q) = rx.recv() {
        // Skip to the newest query waiting.
        while let Ok(newer) = rx.try_recv() {
            q = newer;
        }
        let reply = match query::run(reader, Some(&cache), &q, cancel) {
            Ok(Some(a)) => Reply::Answer(Box::new(a)),
            Ok(None) => continue,
            Err(error) => Reply::Failed { gen: q.gen, error },
        };
        if out.send(wrap(reply)).is_err() {
            return;
        }
        if q.whole {
            if let Some(matched) = query::count_all(reader, Some(&cache), &q, cancel) {
                if out.send(wrap(Reply::Whole { gen: q.gen, matched })).is_err() {
                    return;
                }
            }
        }
        // Idle until the next question: decode this view's columns into the cache (it stops at
        // the next chunk once a new query is asked), so that question skips decoding.
        let _ = query::warm(reader, &cache, &q, cancel);
    }
}
