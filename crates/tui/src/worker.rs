//! The worker thread: answers [`Query`]s off the UI thread.
//!
//! The UI bumps a shared generation counter with every new query; the worker always takes the
//! newest waiting query (older ones are dropped unanswered) and a running scan stops at its
//! next chunk once the counter has moved on, so typing and scrubbing never wait for a scan.
//! Between questions it fills the capture's column cache ([`query::warm`]) with what the last
//! one read, so the next one over the same chunks skips decoding.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread;

use iocap_format::Reader;

use iocap_analysis::ColumnCache;

use crate::query::{self, Answer, Cancel, Query, CACHE_BUDGET};

/// What the worker sends back.
#[derive(Debug)]
pub enum Reply {
    Answer(Box<Answer>),
    /// The query failed (a damaged chunk): shown on the status line.
    Failed {
        gen: u64,
        error: String,
    },
}

/// The UI side of the worker.
pub struct Worker {
    tx: Sender<Query>,
    cancel: Cancel,
}

impl Worker {
    /// Start the worker thread; replies are turned into the UI's events by `wrap`.
    pub fn spawn<E: Send + 'static>(reader: Arc<Reader>, events: Sender<E>, wrap: fn(Reply) -> E) -> Worker {
        let (tx, rx) = channel::<Query>();
        let cancel = Cancel::default();
        let theirs = cancel.clone();
        thread::Builder::new()
            .name("iocap-query".into())
            .spawn(move || serve(&reader, &rx, &theirs, &events, wrap))
            .map(|_| ())
            .unwrap_or_else(|e| eprintln!("iocap: cannot start the query thread: {e}"));
        Worker { tx, cancel }
    }

    /// Ask `q`, superseding every earlier query.
    pub fn ask(&self, q: Query) {
        self.cancel.0.store(q.gen, Ordering::Relaxed);
        let _ = self.tx.send(q);
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
        // Idle until the next question: decode this view's columns into the cache (it stops at
        // the next chunk once a new query is asked), so that question skips decoding.
        let _ = query::warm(reader, &cache, &q, cancel);
    }
}
