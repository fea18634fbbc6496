//! iocap's terminal viewer: `iocap view trace.cap [FILTER]`.
//!
//! Its API is what `iocap view` needs: [`check_filter`] (a bad filter is a usage error before
//! the screen is taken over) and [`run`] (or [`run_until`], for a caller that may have to
//! close the viewer itself; [`run_compare`] for two captures side by side). Inside:
//!
//! - `app`: the state, `App`, and `App::update`, the only thing that changes it, taking an
//!   `Action` (`action`: a key's meaning, a mouse gesture, a tick, a worker reply) and
//!   returning what the workers are to do. The state is the panes' states side by side
//!   (`panes`: the spectrogram's view, the filter bar, the breakdown, the event list) with
//!   the replay (`replay`), the capture (`capture`) and the layout (`layout`, a pure function
//!   of the terminal size).
//! - `compare`: side A of a comparison (two captures, or two filters of one), asked every
//!   question side B (the rest of the app) is asked, and what the panes draw from the pair.
//! - `ui`: a frame drawn from `&App`, each pane by its own `render`; `theme` has the colours.
//! - `keys`: one table of key bindings, read for every key press and printed by `?`.
//! - `worker`: the threads that answer the view's question (`worker/query.rs`, through
//!   `iocap-analysis`) and decode the list's rows (`worker/rows.rs`); a newer question
//!   cancels the running one. The first frame comes from the capture's index alone. A
//!   capture still being recorded is followed by one more thread, which reads what the
//!   recorder appends and hands the app snapshots of the grown capture.
//! - [`run`] starts the event loop (`event_loop`): an input thread and the workers feed one
//!   channel, as in ratatui's event-driven template; `terminal` restores the terminal on exit
//!   and on panic; `history` keeps applied filters across runs.
//!
//! The crate's tests and benchmark drive the app without a terminal through the same modules,
//! made public by the `testing` feature (which only they turn on).
//!
//! ```no_run
//! let reader = iocap_format::Reader::open("trace.cap")?;
//! let filter = iocap_tui::check_filter("latency>1ms", &reader)?;
//! iocap_tui::run(std::path::Path::new("trace.cap"), reader, filter)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

/// Declares the modules: private, or public with the `testing` feature, so that the tests and
/// the benchmark reach the app's insides while `iocap view` sees only [`run`] and
/// [`check_filter`].
macro_rules! modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "testing")]
        pub mod $name;
        #[cfg(not(feature = "testing"))]
        mod $name;
    )*};
}

modules!(action, app, capture, compare, event_loop, history, keys, layout, panes, replay, terminal, theme, ui, worker);

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::channel;
use std::sync::Arc;

use iocap_format::Reader;
use ratatui::layout::Rect;

use app::App;
use capture::Capture;
use event_loop::Msg;
use theme::Palette;

/// A filter checked and compiled against one capture, to start the viewer with ([`run`]).
pub struct CheckedFilter {
    text: String,
    compiled: Option<Arc<iocap_filter::Compiled>>,
}

/// Check `filter` against this capture, compiling it once for [`run`]: the error, rendered with
/// a caret, for the CLI to report before the screen is taken over.
pub fn check_filter(filter: &str, reader: &Reader) -> Result<CheckedFilter, String> {
    panes::filter_bar::compile(filter, reader)
        .map(|compiled| CheckedFilter {
            text: filter.to_owned(),
            compiled,
        })
        .map_err(|e| e.render(filter))
}

/// Run the viewer on an open capture until the user quits, starting with `filter` (checked
/// against this capture by [`check_filter`]).
pub fn run(path: &Path, reader: Reader, filter: CheckedFilter) -> io::Result<()> {
    run_until(path, reader, filter, &AtomicBool::new(false))
}

/// [`run`], until the user quits or `quit` is set, which is looked at before every frame (at
/// least every 50 ms while the terminal is there): for a caller that must close the viewer
/// itself (`iocap record --view` stopped by a signal). The terminal is restored either way.
pub fn run_until(path: &Path, reader: Reader, filter: CheckedFilter, quit: &AtomicBool) -> io::Result<()> {
    run_app(path, reader, None, filter, quit, None)
}

/// [`run`] on a capture that arrives through a copy (`iocap view -`), which says why it
/// stopped when it stops before the capture's end (`why_cut`: a full disk, a read error).
pub fn run_copied(
    path: &Path,
    reader: Reader,
    filter: CheckedFilter,
    why_cut: Box<dyn Fn() -> Option<String>>,
    quit: &AtomicBool,
) -> io::Result<()> {
    run_app(path, reader, None, filter, quit, Some(why_cut))
}

/// The viewer comparing capture `a` (side A, opened from `a_path`) with the capture at `path`
/// (side B), both under `filter` (checked against B's capture) until the user pins A's own:
/// `iocap view a.cap b.cap`.
pub fn run_compare(a_path: &Path, a: Reader, path: &Path, reader: Reader, filter: CheckedFilter) -> io::Result<()> {
    run_compare_until(a_path, a, path, reader, filter, &AtomicBool::new(false))
}

/// [`run_compare`], until the user quits or `quit` is set (as [`run_until`]).
pub fn run_compare_until(
    a_path: &Path,
    a: Reader,
    path: &Path,
    reader: Reader,
    filter: CheckedFilter,
    quit: &AtomicBool,
) -> io::Result<()> {
    run_app(path, reader, Some((a_path, a)), filter, quit, None)
}

fn run_app(
    path: &Path,
    reader: Reader,
    side_a: Option<(&Path, Reader)>,
    filter: CheckedFilter,
    quit: &AtomicBool,
    why_cut: Option<Box<dyn Fn() -> Option<String>>>,
) -> io::Result<()> {
    let told = || quit.load(Ordering::Relaxed);
    let reader = Arc::new(reader);
    let cap = Capture::new(Arc::clone(&reader), path);
    let mut guard = terminal::TerminalGuard::enter()?;
    let size = guard.terminal.size()?;
    let area = Rect::new(0, 0, size.width, size.height);
    let bar =
        panes::filter_bar::FilterBar::compiled_already(&filter.text, filter.compiled, history::History::load_default());
    let palette = Palette::from_env();
    let (mut app, first) = match side_a {
        Some((a_path, a)) => App::comparing(Capture::new(Arc::new(a), a_path), cap, bar, area, palette),
        None => App::with_filter_bar(cap, bar, area, palette),
    };
    app.why_cut = why_cut;
    // A copy already cut when the viewer opened it: said at once.
    if app.why_cut.is_some() && app.cap.liveness == iocap_format::Liveness::Recovered {
        app.say_why_cut();
    }

    let (tx, rx) = channel::<Msg>();
    let worker = worker::Worker::spawn(tx.clone(), Msg::Reply, Msg::OtherReply)?;
    worker::follow(&reader, path, tx.clone(), Msg::Reply)?;
    event_loop::spawn_input(tx)?;
    let ran = event_loop::run(&mut app, &rx, &worker, first, |app| {
        if told() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "told to quit"));
        }
        guard.terminal.draw(|f| ui::render(app, f)).map(|_| ())
    });
    match ran {
        Err(e) if e.kind() == io::ErrorKind::Interrupted && told() => Ok(()),
        ran => ran,
    }
}
