//! The event loop, as ratatui's event-driven template has it: an input thread (keys, mouse,
//! resizes and ticks), the workers and the follower of a capture being recorded feed one
//! channel of [`Msg`]; [`run`] draws a frame, then takes every message waiting, turns each into
//! an [`Action`] for [`App::update`] and hands what the update asks to the workers
//! ([`hand_over`]). [`crate::run`] drives it on the terminal; the live benchmark on a test
//! backend.

use std::io;
use std::sync::mpsc::{Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant};

use crossterm::event::{self as ct, Event as CtEvent};

use crate::action::{Action, Edit};
use crate::app::{App, Effects};
use crate::keys;
use crate::worker::{Reply, Worker};

/// How often the input thread wakes up without input (drives replay).
const TICK: Duration = Duration::from_millis(50);

/// What the event loop waits for.
pub enum Msg {
    /// A terminal event: a key, the mouse, a resize.
    Input(CtEvent),
    /// Time passed without input.
    Tick,
    /// The terminal can no longer be read (out of descriptors, the terminal gone): the viewer
    /// ends, saying why, rather than going on deaf to every key.
    InputFailed(String),
    /// A worker's reply (or the follower's snapshot).
    Reply(Reply),
    /// The reply of the worker answering side A of a comparison.
    OtherReply(Reply),
}

/// The shortest time between two frames while messages keep coming (60 a second).
const FRAME: Duration = Duration::from_millis(16);

/// Draw with `draw`, then hand the workers `first` (what the app asked when made), then wait
/// for messages and hand them to `app`, until it quits or every sender is gone. The first
/// frame is drawn before any scan begins: it comes from the index alone, and a scan of a day's
/// recording would take every core from it.
pub fn run(
    app: &mut App,
    rx: &Receiver<Msg>,
    worker: &Worker,
    first: Effects,
    mut draw: impl FnMut(&App) -> io::Result<()>,
) -> io::Result<()> {
    let mut last_tick = Instant::now();
    draw(app)?;
    let mut drawn = Instant::now();
    hand_over(first, worker);
    while !app.quit {
        // Block for one message, then take everything that comes before the next frame is
        // due, so a burst of keys or a fast worker costs one frame. A key after a quiet spell
        // is drawn at once; a stream of them at most [`FRAME`] apart: a paste typed a
        // keystroke a character (a terminal without bracketed paste) drew a frame for each,
        // as slowly as the terminal took them, with q and Ctrl-C queued behind.
        let Ok(msg) = rx.recv() else { break };
        let mut batch = vec![msg];
        loop {
            batch.extend(rx.try_iter());
            let left = FRAME.saturating_sub(drawn.elapsed());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(m) => batch.push(m),
                Err(_) => break,
            }
        }
        // Characters typed into the filter bar in this batch, put in as one edit (one check
        // of the text, not one per character).
        let mut typed = String::new();
        for msg in batch {
            let action = match msg {
                Msg::Input(CtEvent::Key(k)) => keys::key(app, k),
                Msg::Input(CtEvent::Mouse(m)) => keys::mouse(m),
                Msg::Input(CtEvent::Resize(w, h)) => Some(Action::Resize(w, h)),
                Msg::Input(CtEvent::Paste(text)) => Some(Action::FilterPaste(text)),
                Msg::Input(_) => None,
                Msg::Tick => {
                    let now = Instant::now();
                    let dt = now - last_tick;
                    last_tick = now;
                    Some(Action::Tick(dt))
                }
                Msg::InputFailed(why) => {
                    return Err(io::Error::other(format!("reading the terminal failed: {why}")));
                }
                Msg::Reply(r) => Some(Action::Reply(r)),
                Msg::OtherReply(r) => Some(Action::OtherReply(r)),
            };
            if let Some(Action::FilterEdit(Edit::Insert(c))) = action {
                typed.push(c);
                continue;
            }
            if !typed.is_empty() {
                hand_over(app.update(Action::FilterPaste(std::mem::take(&mut typed))), worker);
            }
            if let Some(a) = action {
                hand_over(app.update(a), worker);
            }
        }
        if !typed.is_empty() {
            hand_over(app.update(Action::FilterPaste(typed)), worker);
        }
        if !app.quit {
            draw(app)?;
            drawn = Instant::now();
        }
    }
    Ok(())
}

/// Give the workers what an update asked for: a query (and its side A's, comparing), rows to
/// decode, a lookup of links.
pub fn hand_over(fx: Effects, worker: &Worker) {
    if let Some(q) = fx.query {
        worker.ask(q);
    }
    if let Some(q) = fx.other {
        worker.ask_other(q);
    }
    if let Some(r) = fx.rows {
        worker.rows(r);
    }
    if let Some(l) = fx.links {
        worker.links(l);
    }
}

/// The input thread: terminal events and ticks into the loop's channel. It ends when the loop
/// has gone (the send fails).
pub fn spawn_input(tx: Sender<Msg>) -> io::Result<()> {
    thread::Builder::new().name("iocap-input".into()).spawn(move || loop {
        let msg = match ct::poll(TICK).and_then(|ready| if ready { ct::read().map(Some) } else { Ok(None) }) {
            Ok(Some(e)) => Msg::Input(e),
            Ok(None) => Msg::Tick,
            Err(e) => {
                let _ = tx.send(Msg::InputFailed(e.to_string()));
                return;
            }
        };
        if tx.send(msg).is_err() {
            return;
        }
    })?;
    Ok(())
}
