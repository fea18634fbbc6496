//! iocap's terminal viewer: `iocap view trace.cap [FILTER]`.
//!
//! - [`App`] holds the state; [`App::update`] is the only thing that changes it, taking an
//!   [`Action`] (a key's meaning, a mouse gesture, a tick, a worker reply).
//! - [`ui::render`] draws a frame from `&App`: the spectrogram, histogram, breakdown and event
//!   panes ([`panes`]), the filter bar and the status line.
//! - Scans run on a [`worker::Worker`] thread and are cancelled when superseded; the event
//!   list's rows are decoded on a second one ([`rows`]); the first frame is drawn from the
//!   capture's index alone, before any chunk is decoded.
//! - [`run`] is the event loop: an input thread and the worker feed one channel, as in
//!   ratatui's event-driven template; a [`terminal::TerminalGuard`] restores the terminal on
//!   exit and on panic.
//!
//! ```no_run
//! let reader = iocap_format::Reader::open("trace.cap")?;
//! iocap_tui::run(std::path::Path::new("trace.cap"), reader, "latency>1ms")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod action;
pub mod app;
pub mod capture;
pub mod grid;
pub mod history;
pub mod keys;
pub mod layout;
pub mod panes;
pub mod query;
pub mod replay;
pub mod rows;
pub mod terminal;
pub mod theme;
pub mod ui;
pub mod worker;

use std::io;
use std::path::Path;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crossterm::event::{self as ct, Event as CtEvent};
use iocap_format::Reader;
use ratatui::layout::Rect;

pub use action::Action;
pub use app::App;
pub use capture::Capture;
pub use theme::Palette;

/// How often the input thread wakes up without input (drives replay).
const TICK: Duration = Duration::from_millis(50);

/// What the event loop waits for.
enum Msg {
    Input(CtEvent),
    Tick,
    Reply(worker::Reply),
}

/// Check `filter` against this capture: the error, rendered with a caret, for the CLI.
pub fn check_filter(filter: &str, reader: &Reader) -> Result<(), String> {
    panes::filter_bar::compile(filter, reader)
        .map(|_| ())
        .map_err(|e| e.render(filter))
}

/// Run the viewer on an open capture until the user quits.
pub fn run(path: &Path, reader: Reader, filter: &str) -> io::Result<()> {
    let reader = Arc::new(reader);
    let cap = Capture::new(Arc::clone(&reader), path);
    let mut guard = terminal::TerminalGuard::enter()?;
    let size = guard.terminal.size()?;
    let area = Rect::new(0, 0, size.width, size.height);
    let (mut app, first) = App::new(cap, filter, area, Palette::from_env(), history::History::load_default())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.render(filter)))?;

    let (tx, rx) = channel::<Msg>();
    let worker = worker::Worker::spawn(reader, tx.clone(), Msg::Reply);
    spawn_input(tx);
    hand_over(first, &worker);

    let mut last_tick = Instant::now();
    while !app.quit {
        guard.terminal.draw(|f| ui::render(&app, f))?;
        // Block for one message, then take everything already waiting before drawing again,
        // so a burst of keys or a fast worker costs one frame.
        let Ok(first) = rx.recv() else { break };
        for msg in std::iter::once(first).chain(rx.try_iter()) {
            let action = match msg {
                Msg::Input(CtEvent::Key(k)) => keys::key(&app, k),
                Msg::Input(CtEvent::Mouse(m)) => keys::mouse(m),
                Msg::Input(CtEvent::Resize(w, h)) => Some(Action::Resize(w, h)),
                Msg::Input(_) => None,
                Msg::Tick => {
                    let now = Instant::now();
                    let dt = now - last_tick;
                    last_tick = now;
                    Some(Action::Tick(dt))
                }
                Msg::Reply(r) => Some(Action::Reply(r)),
            };
            if let Some(a) = action {
                hand_over(app.update(a), &worker);
            }
        }
    }
    Ok(())
}

/// Give the workers what an update asked for: a query, rows to decode.
fn hand_over(fx: app::Effects, worker: &worker::Worker) {
    if let Some(q) = fx.query {
        worker.ask(q);
    }
    if let Some(r) = fx.rows {
        worker.rows(r);
    }
}

/// The input thread: terminal events and ticks into the loop's channel. It ends when the loop
/// has gone (the send fails).
fn spawn_input(tx: Sender<Msg>) {
    let _ = thread::Builder::new().name("iocap-input".into()).spawn(move || loop {
        let msg = match ct::poll(TICK) {
            Ok(true) => match ct::read() {
                Ok(e) => Msg::Input(e),
                Err(_) => return,
            },
            Ok(false) => Msg::Tick,
            Err(_) => return,
        };
        if tx.send(msg).is_err() {
            return;
        }
    });
}
