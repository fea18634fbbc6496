//! Snapshot tests of the viewer: every pane at standard sizes (text and styles), and the whole
//! app driven by key events against ratatui's `TestBackend` with the worker run synchronously.
//!
//! Captures are generated here with `iocap_format::Writer` and `iocap_testkit`: a known,
//! deterministic workload (two processes with a bimodal read latency, periodic slow block
//! writes, a drop period and a process name full of escape sequences).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use iocap_format::{DropStats, Event, FdType, Meta, Reader};
use iocap_testkit::{add_file, add_proc, block, VDA};
use iocap_tui::action::Action;
use iocap_tui::app::App;
use iocap_tui::app::Effects;
use iocap_tui::capture::Capture;
use iocap_tui::history::History;
use iocap_tui::layout::{Orientation, Pane};
use iocap_tui::panes::breakdown::Split;
use iocap_tui::panes::events::Sort;
use iocap_tui::theme::Palette;
use iocap_tui::worker::links;
use iocap_tui::worker::query::{self, Cancel};
use iocap_tui::worker::rows::RowLoader;
use iocap_tui::worker::Reply;
use iocap_tui::{keys, ui};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::Terminal;

/// The panes on a capture with long names, errors, addresses and block requests of several
/// sizes, at 80×24 and 200×60.
#[path = "ui/panes.rs"]
mod panes;

/// A capture being recorded, followed as it grows.
#[path = "ui/live.rs"]
mod live;

/// Comparisons: two captures, two filters of one.
#[path = "ui/compare.rs"]
mod compare;

/// A recording of several files viewed as one.
#[path = "ui/ring.rs"]
mod ring;

const START: u64 = 1_000_000_000;
/// 2 s of events, one every 100 µs.
const N: u64 = 20_000;

/// Write the test capture into `dir`.
fn capture(dir: &Path) -> PathBuf {
    let path = dir.join("view.cap");
    // Without a command line: this capture never had one, and stays byte for byte what it was.
    let meta = Meta {
        command_line: Vec::new(),
        ..iocap_testkit::meta(START)
    };
    let mut w = iocap_testkit::create(&path, &meta, 1000, 1);
    let pg = add_proc(&mut w, 200, 1, b"postgres");
    let fio = add_proc(&mut w, 100, 1, b"fio");
    let evil = add_proc(&mut w, 666, 1, b"ev\x1b[31mil\xe2\x80\xae");
    let db = add_file(&mut w, 200, 5, FdType::File, b"/var/lib/pg/base/16384", 0);
    let dat = add_file(&mut w, 100, 3, FdType::File, b"/data/fio.dat", 0);
    for i in 0..N {
        let ts = START + i * 100_000;
        let e = match i % 10 {
            // Block writes: 200 µs, but 20 ms during a stall every 500 ms.
            9 => {
                let latency = if (i / 1000) % 5 == 4 { 20_000_000 } else { 200_000 };
                Event {
                    sector: i * 128,
                    op: 1,
                    ..block(ts, latency, 100, fio, VDA, 65536)
                }
            }
            // postgres reads: cache hits at 2 µs, one in four a miss at 5 ms.
            0 | 2 | 4 | 6 => {
                let latency = if (i / 2) % 4 == 0 { 5_000_000 } else { 2_000 + i % 7 };
                Event {
                    fd: 5,
                    file: db,
                    bytes: 8192,
                    proc: pg,
                    ..Event::syscall(ts, latency, 200, 201, 17, 8192)
                }
            }
            // A hostile process name, getpid at 100 ns.
            7 => Event {
                proc: evil,
                ..Event::syscall(ts, 100, 666, 666, 39, 666)
            },
            _ => Event {
                fd: 3,
                file: dat,
                bytes: 4096,
                proc: fio,
                ..Event::syscall(ts, 40_000, 100, 100, 1, 4096)
            },
        };
        w.push(&e).unwrap();
        if i == 12_500 {
            w.record_drops(&DropStats {
                ts,
                per_cpu: vec![3, 4],
            })
            .unwrap();
            w.flush().unwrap();
        }
    }
    w.finish(START + N * 100_000).unwrap();
    path
}

/// An app on a fresh capture in a `w`×`h` terminal, and what it asks the workers first.
fn app(w: u16, h: u16, filter: &str) -> (tempfile::TempDir, App, Effects) {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(dir.path());
    let (app, fx) = app_on(&path, w, h, filter);
    (dir, app, fx)
}

/// An app on the capture at `path` in a `w`×`h` terminal, and what it asks the workers first.
fn app_on(path: &Path, w: u16, h: u16, filter: &str) -> (App, Effects) {
    let reader = Arc::new(Reader::open(path).unwrap());
    // Show the file name without the temp dir, so snapshots do not depend on it.
    let cap = Capture::new(reader, Path::new("view.cap"));
    App::new(
        cap,
        filter,
        Rect::new(0, 0, w, h),
        Palette::Classic,
        History::in_memory(Vec::new()),
    )
    .unwrap()
}

/// Answer the query and rows request `fx` asks, and those their answers ask, synchronously,
/// as the worker threads would.
fn settle(app: &mut App, fx: Effects) {
    settle_keeping(app, fx, &mut None);
}

/// [`settle`], the query worker's last totals in `kept` (a question of a grown capture
/// extends them, as in the worker).
fn settle_keeping(app: &mut App, mut fx: Effects, kept: &mut Option<query::Kept>) {
    loop {
        let more = if let Some(q) = fx.other.take() {
            // Side A of a comparison, by a worker of its own.
            let cancel = Cancel::default();
            cancel.0.store(q.gen, Ordering::Relaxed);
            let reply = match query::answer(&q, None, &cancel, &mut None) {
                Ok(Some(a)) => Reply::Answer(Box::new(a)),
                Ok(None) => unreachable!("not cancelled"),
                Err(error) => Reply::Failed { gen: q.gen, error },
            };
            app.update(Action::OtherReply(reply))
        } else if let Some(q) = fx.query.take() {
            let cancel = Cancel::default();
            cancel.0.store(q.gen, Ordering::Relaxed);
            let reply = match query::answer(&q, None, &cancel, kept) {
                Ok(Some(a)) => Reply::Answer(Box::new(a)),
                Ok(None) => unreachable!("not cancelled"),
                Err(error) => Reply::Failed { gen: q.gen, error },
            };
            let nothing = matches!(&reply, Reply::Answer(a) if a.matched == 0);
            let mut more = app.update(Action::Reply(reply));
            // As the worker does, a value near the filter's when it matched nothing.
            if let Some(clause) = query::near_miss(&q).filter(|_| nothing) {
                let _asks_nothing = app.update(Action::Reply(Reply::NearMiss { gen: q.gen, clause }));
            }
            // Then, as the worker does, the filter's matches in the whole capture.
            if q.whole {
                let matched = query::count_whole(&q, None, &cancel, kept).expect("not cancelled");
                let after = app.update(Action::Reply(Reply::Whole { gen: q.gen, matched }));
                more = Effects {
                    query: after.query.or(more.query),
                    other: after.other.or(more.other),
                    rows: after.rows.or(more.rows),
                    links: after.links.or(more.links),
                };
            }
            more
        } else if let Some(r) = fx.rows.take() {
            let rows = RowLoader::new().load(&r);
            app.update(Action::Reply(Reply::Rows(rows)))
        } else if let Some(l) = fx.links.take() {
            let found = links::find(&l);
            app.update(Action::Reply(Reply::Links(Box::new(found))))
        } else {
            return;
        };
        // A newer request supersedes an older one.
        fx = Effects {
            query: more.query.or(fx.query),
            other: more.other.or(fx.other),
            rows: more.rows.or(fx.rows),
            links: more.links.or(fx.links),
        };
    }
}

/// Do `action` and let the workers answer.
fn act(app: &mut App, action: Action) {
    let fx = app.update(action);
    settle(app, fx);
}

fn press(app: &mut App, code: KeyCode) {
    press_mod(app, code, KeyModifiers::NONE);
}

fn press_mod(app: &mut App, code: KeyCode, m: KeyModifiers) {
    if let Some(a) = keys::key(app, KeyEvent::new(code, m)) {
        act(app, a);
    }
}

fn type_text(app: &mut App, s: &str) {
    for c in s.chars() {
        press(app, KeyCode::Char(c));
    }
}

/// Open the filter bar, clear it (Ctrl-U) and type `text`, not applied yet.
fn edit_filter(app: &mut App, text: &str) {
    press(app, KeyCode::Char('/'));
    press_mod(app, KeyCode::Char('u'), KeyModifiers::CONTROL);
    type_text(app, text);
}

fn draw(app: &App) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(app.layout.area.width, app.layout.area.height)).unwrap();
    t.draw(|f| ui::render(app, f)).unwrap();
    t.backend().buffer().clone()
}

/// `area` of `buf` as text, then its style runs (`row col..col style`), skipping unstyled ones.
fn render_area(buf: &Buffer, area: Rect) -> String {
    let mut text = String::new();
    let mut styles = String::new();
    for y in area.top()..area.bottom() {
        let mut run: Option<(u16, Style)> = None;
        for x in area.left()..area.right() {
            let cell = &buf[(x, y)];
            text.push_str(cell.symbol());
            let s = cell.style();
            if run.map(|r| r.1) != Some(s) {
                if let Some((from, st)) = run.take() {
                    if st != Style::default() {
                        styles.push_str(&format!("{y:>3} {from:>3}..{x:<3} {st:?}\n"));
                    }
                }
                run = Some((x, s));
            }
        }
        if let Some((from, st)) = run {
            if st != Style::default() {
                styles.push_str(&format!("{y:>3} {from:>3}..{:<3} {st:?}\n", area.right()));
            }
        }
        text.push('\n');
    }
    format!("{text}--- styles ---\n{styles}")
}

fn snap_pane(app: &App, area: Rect) -> String {
    render_area(&draw(app), area)
}

fn full(app: &App) -> String {
    snap_pane(app, app.layout.area)
}

#[test]
fn first_frame_comes_from_the_index() {
    let (_dir, app, _) = app(80, 24, "");
    // Nothing has been scanned yet: the spectrogram is the summaries' approximation, and it
    // already accounts for every event in view.
    assert!(app.view.grid.approximate);
    assert!(app.answer.is_none());
    let in_view: u64 = app.view.grid.spectro.total();
    assert_eq!(in_view, N);
    insta::assert_snapshot!("first_frame_80x24", full(&app));
}

#[test]
fn panes_at_standard_sizes() {
    for (w, h) in [(80, 24), (120, 40)] {
        let (_dir, mut app, fx) = app(w, h, "");
        settle(&mut app, fx);
        assert!(!app.view.grid.approximate);
        assert_eq!(app.answer.as_ref().unwrap().matched, N);
        let a = app.layout;
        insta::assert_snapshot!(format!("spectrogram_{w}x{h}"), snap_pane(&app, a.spectro));
        insta::assert_snapshot!(format!("histogram_{w}x{h}"), snap_pane(&app, a.hist));
        insta::assert_snapshot!(format!("breakdown_{w}x{h}"), snap_pane(&app, a.breakdown));
        act(&mut app, Action::FocusPrev);
        insta::assert_snapshot!(format!("events_{w}x{h}"), snap_pane(&app, a.events));
        insta::assert_snapshot!(format!("status_{w}x{h}"), snap_pane(&app, a.status));
        act(&mut app, Action::ToggleOrientation);
        assert_eq!(app.view.orientation, Orientation::Heatmap);
        insta::assert_snapshot!(format!("heatmap_{w}x{h}"), snap_pane(&app, app.layout.spectro));
    }
}

#[test]
fn hostile_names_are_shown_escaped() {
    let (_dir, mut app, fx) = app(120, 40, "");
    settle(&mut app, fx);
    let screen = full(&app);
    assert!(screen.contains("ev\\x1b[31mil\\u{202e}"), "{screen}");
    assert!(!screen.contains('\x1b'));
}

#[test]
fn filter_bar_shows_the_error_span_and_help() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "proc.nme=fio");
    let err = app
        .filter
        .input
        .as_ref()
        .and_then(|i| i.error.clone())
        .expect("live validation");
    assert_eq!(err.span, 0..8);
    assert!(err.help.as_deref().unwrap_or("").contains("proc.name"));
    insta::assert_snapshot!("filter_bar_error", snap_pane(&app, app.layout.filter));
    // Enter on a bad filter keeps the bar open; Esc cancels and keeps the old filter.
    press(&mut app, KeyCode::Enter);
    assert!(app.filter.input.is_some());
    press(&mut app, KeyCode::Esc);
    assert!(app.filter.input.is_none());
    assert_eq!(app.filter.applied, "");
}

#[test]
fn no_color_and_colour_blind_palettes() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    app.theme.palette = Palette::Mono;
    let mono = snap_pane(&app, app.layout.spectro);
    assert!(!mono.contains("fg: Some"), "{mono}");
    insta::assert_snapshot!("spectrogram_mono", mono);
    app.theme.palette = Palette::ColorBlind;
    insta::assert_snapshot!("spectrogram_colour_blind", snap_pane(&app, app.layout.spectro));
}

#[test]
fn help_lists_every_key() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('?'));
    let screen = full(&app);
    // Every key and what it does, whole and on one line, inside the popup.
    let text = screen.split("--- styles ---").next().unwrap();
    for b in keys::BINDINGS {
        let line = format!("{:>17} {}", b.keys, b.help);
        assert!(text.lines().any(|l| l.contains(&line)), "{line:?} missing:\n{text}");
    }
    insta::assert_snapshot!("help_80x24", screen);
}

/// A filter that matches nothing because of a typo'd value says the value the capture holds,
/// as `iocap report` does; one that matches nothing for another reason says nothing more.
#[test]
fn a_filter_matching_nothing_names_the_value_nearest_its_own() {
    let (_dir, mut app, fx) = app(100, 30, "");
    settle(&mut app, fx);
    edit_filter(&mut app, "proc.name=Postgress and latency>1us");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.answer.as_ref().unwrap().matched, 0);
    assert_eq!(app.near_miss(), Some("proc.name=postgres"));
    let pane = snap_pane(&app, app.layout.hist);
    assert!(pane.contains("did you mean proc.name=postgres?"), "{pane}");
    // Also beside the count of none, which a terminal too small for the pane's line shows.
    act(&mut app, Action::Resize(60, 14));
    let status = status_text(&app);
    assert!(
        status.contains("0/20,000 did you mean proc.name=postgres? │"),
        "{status}"
    );
    act(&mut app, Action::Resize(100, 30));

    edit_filter(&mut app, "proc.name=postgres and latency>10s");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.answer.as_ref().unwrap().matched, 0);
    assert_eq!(app.near_miss(), None);
    assert!(!status_text(&app).contains("did you mean"), "{}", status_text(&app));
    let pane = snap_pane(&app, app.layout.hist);
    assert!(
        pane.contains("no matching events in view") && !pane.contains("did you mean"),
        "{pane}"
    );
}

/// The worker thread itself: the hint comes right after an answer with no match, once for a
/// filter (not again for another view of it), and again when the filter is applied anew
/// after another one.
#[test]
fn the_worker_names_the_nearest_value_once_per_filter() {
    let (_dir, mut app, fx) = app(100, 30, "");
    settle(&mut app, fx);
    let (tx, replies) = std::sync::mpsc::channel();
    let worker = iocap_tui::worker::Worker::spawn(tx, |r| r, |r| r).unwrap();
    // Apply `text` in the filter bar and give its question to the worker; then the replies
    // up to its answer (so the hint for the question before, if any, comes first).
    let apply = |app: &mut App, text: &str| -> Vec<Reply> {
        edit_filter(app, text);
        let enter = keys::key(app, KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)).unwrap();
        let q = app.update(enter).query.expect("a new filter is asked");
        let gen = q.gen;
        worker.ask(q);
        let mut got = Vec::new();
        loop {
            let r = replies
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("a reply");
            let done = matches!(&r, Reply::Answer(a) if a.gen == gen);
            got.push(r);
            if done {
                return got;
            }
        }
    };
    let hints = |got: &[Reply]| -> Vec<String> {
        got.iter()
            .filter_map(|r| match r {
                Reply::NearMiss { clause, .. } => Some(clause.clone()),
                _ => None,
            })
            .collect()
    };
    let typo = "proc.name=Postgress";
    let near = vec!["proc.name=postgres".to_owned()];
    assert!(hints(&apply(&mut app, typo)).is_empty());
    // Each list holds the hint for the question before it, sent right after that one's answer.
    assert_eq!(hints(&apply(&mut app, "proc.name=fio")), near, "the typo's");
    assert!(hints(&apply(&mut app, typo)).is_empty(), "fio matched");
    assert_eq!(hints(&apply(&mut app, typo)), near, "the typo's");
    assert!(
        hints(&apply(&mut app, "proc.name=fio")).is_empty(),
        "the same filter again: not looked up again"
    );
    assert!(hints(&apply(&mut app, typo)).is_empty(), "fio matched");
    assert_eq!(
        hints(&apply(&mut app, "proc.name=fio")),
        near,
        "the typo again after another filter: looked up anew"
    );
}

/// Open → filter → select a region → drill down → event details → undo → quit.
#[test]
fn whole_app_driven_by_keys() {
    let (_dir, mut app, fx) = app(100, 30, "");
    settle(&mut app, fx);
    insta::assert_snapshot!("app_1_open", full(&app));

    // Filter to postgres: the slow misses and the fast hits.
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "proc.name=postgres");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "proc.name=postgres");
    let pg = app.answer.as_ref().unwrap().matched;
    assert_eq!(pg, N * 4 / 10);
    insta::assert_snapshot!("app_2_filtered", full(&app));

    // Select the slow mode: move the cursor to the 5 ms column on the first row, mark, extend
    // two rows down, apply.
    let col_5ms = (0..app.layout.lat_cells)
        .find(|&c| app.layout.cell_cols(c).contains(&67))
        .unwrap();
    // The cursor starts on the busiest cell: Home and all the way left first.
    press(&mut app, KeyCode::Home);
    for _ in 0..app.layout.lat_cells {
        press(&mut app, KeyCode::Left);
    }
    assert_eq!((app.view.cursor_t, app.view.cursor_l), (0, 0));
    for _ in 0..col_5ms {
        press(&mut app, KeyCode::Right);
    }
    press(&mut app, KeyCode::Char('v'));
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Down);
    insta::assert_snapshot!("app_3_selecting", snap_pane(&app, app.layout.spectro));
    press(&mut app, KeyCode::Enter);
    assert!(
        app.filter.applied.starts_with("proc.name=postgres and evt.time<"),
        "{}",
        app.filter.applied
    );
    assert!(app.filter.applied.contains("latency>="), "{}", app.filter.applied);
    let a = app.answer.as_ref().unwrap();
    assert!(a.matched > 0 && a.matched < pg);
    // Only misses are in the region.
    assert!(a.hist.min() >= 4_000_000, "min {}", a.hist.min());
    insta::assert_snapshot!("app_4_region", full(&app));

    // Drill down: breakdown by evt.type, Enter adds it.
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Breakdown);
    press(&mut app, KeyCode::Char('F'));
    assert_eq!(app.breakdown.field().name, "evt.type");
    assert_eq!(app.groups()[0].value, "pread64");
    press(&mut app, KeyCode::Enter);
    assert!(
        app.filter.applied.ends_with(" and evt.type=\"pread64\""),
        "{}",
        app.filter.applied
    );
    insta::assert_snapshot!("app_5_drilled", full(&app));

    // The event list, slowest first, and one event's details.
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Pane::Events);
    press(&mut app, KeyCode::Char('s'));
    assert_eq!(app.list.sort, Sort::Latency);
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert!(app.list.detail);
    insta::assert_snapshot!("app_6_detail", full(&app));
    press(&mut app, KeyCode::Esc);
    assert!(!app.list.detail);

    // Undo twice: back to the postgres filter.
    press(&mut app, KeyCode::Char('u'));
    press(&mut app, KeyCode::Char('u'));
    assert_eq!(app.filter.applied, "proc.name=postgres");
    assert_eq!(app.answer.as_ref().unwrap().matched, pg);

    press(&mut app, KeyCode::Char('q'));
    assert!(app.quit);
}

#[test]
fn scrub_zoom_and_resize() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    let (start, interval) = (app.view.start, app.view.interval);
    press(&mut app, KeyCode::Char('+'));
    assert!(app.view.interval < interval);
    press(&mut app, KeyCode::PageDown);
    assert!(app.view.start > start);
    // Every event in view is counted by the exact grid too.
    let a = app.answer.as_ref().unwrap();
    assert_eq!(a.spectro.total(), a.matched);
    press(&mut app, KeyCode::Home);
    assert_eq!(app.view.start, start);
    act(&mut app, Action::Resize(120, 40));
    assert!(app.layout.time_cells > 9);
    act(&mut app, Action::Resize(20, 5));
    let _ = full(&app); // Tiny terminals draw without panicking.
    let _ = press_mod;
}

#[test]
fn replay_advances_the_view() {
    // The first query is superseded by the zoom before anyone answers it.
    let (_dir, mut app, _) = app(80, 24, "");
    press(&mut app, KeyCode::Char('+'));
    press(&mut app, KeyCode::Char('+'));
    let (before, interval, rows) = (app.view.start, app.view.interval, app.layout.time_cells as u64);
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Char('x'));
    assert!(app.replay.playing);
    // The replay clock starts at the view's start and the view follows once the clock passes
    // its last row: at 10×, capture time for the clock to sit half-way into the 6th row past
    // the view's end is the view moved by 5 rows.
    let to = |rows_past: u64| interval * (rows - 1 + rows_past) + interval / 2;
    act(&mut app, Action::Tick(std::time::Duration::from_nanos(to(5) / 10)));
    assert_eq!(
        app.view.start - before,
        5 * interval,
        "interval {interval}, {rows} rows"
    );
    assert_eq!(
        app.answer.as_ref().unwrap().spectro.origin(),
        app.view.start,
        "the scan followed"
    );
    act(
        &mut app,
        Action::Tick(std::time::Duration::from_nanos(3 * interval / 10)),
    );
    assert_eq!(app.view.start - before, 8 * interval);
    // Pausing stops it.
    press(&mut app, KeyCode::Char(' '));
    act(&mut app, Action::Tick(std::time::Duration::from_millis(50)));
    assert_eq!(app.view.start - before, 8 * interval);
}

/// A left-button mouse event at (`x`, `y`), through the viewer's own mapping.
fn mouse(app: &mut App, kind: MouseEventKind, x: u16, y: u16) {
    let m = MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    };
    if let Some(a) = keys::mouse(m) {
        act(app, a);
    }
}

/// The spectrogram cell whose columns hold latency column `col`.
fn lat_cell(app: &App, col: usize) -> usize {
    (0..app.layout.lat_cells)
        .find(|&c| app.layout.cell_cols(c).contains(&col))
        .unwrap()
}

/// The terminal cell of spectrogram cell (`t`, `l`), drawn as sysdig does.
fn screen_cell(app: &App, t: usize, l: usize) -> (u16, u16) {
    assert_eq!(app.view.orientation, Orientation::Sysdig);
    (app.layout.plot.x + l as u16, app.layout.plot.y + t as u16)
}

/// The status line's text.
fn status_text(app: &App) -> String {
    let buf = draw(app);
    let y = app.layout.status.y;
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// Block requests the recorder never saw complete are said on the status line (they are in no
/// pane), and nothing is said of them when there are none.
#[test]
fn the_status_line_says_the_block_requests_never_seen_complete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unseen.cap");
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(START), 100, 1);
    for i in 0..50 {
        w.push(&Event::syscall(START + i * 1_000, 500, 1, 1, 0, 0)).unwrap();
    }
    w.record_unseen(START + 60_000, &std::collections::BTreeMap::from([(7 << 20, 1_234)]))
        .unwrap();
    w.finish(START + 100_000).unwrap();
    let (mut with, fx) = app_on(&path, 120, 30, "");
    settle(&mut with, fx);
    let status = status_text(&with);
    assert!(status.contains("│ drops 0 │ 1,234 blk unseen │"), "{status}");
    let (_dir, mut without, fx) = app(120, 30, "");
    settle(&mut without, fx);
    assert!(!status_text(&without).contains("unseen"));
}

/// The iostat pane says, under its table, how many of each shown disk's requests the recorder
/// never saw complete; a disk with none, or with no row, says nothing.
#[test]
fn the_iostat_pane_says_each_disks_requests_never_seen_complete() {
    use iocap_testkit::SDB;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("unseen.cap");
    let mut w = iocap_testkit::two_disks(&path, START, 50);
    let unseen = [(VDA, 1_234), (SDB, 0), ((8 << 20) | 32, 9)];
    w.record_unseen(START + 60_000_000, &unseen.into_iter().collect())
        .unwrap();
    w.finish(START + 100_000_000).unwrap();
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('i'));
    let buf = draw(&app);
    let pane = render_area(&buf, app.layout.events);
    let said: Vec<&str> = (pane.lines())
        .filter(|l| l.contains("never seen"))
        .map(|l| l.trim_matches(|c: char| c == '│' || c == ' '))
        .collect();
    assert_eq!(
        said,
        ["vda: 1,234 requests never seen complete (whole capture), in no figure"],
        "{pane}"
    );
    assert!(pane.lines().any(|l| l.starts_with("│sdb ")), "{pane}");
}

/// A drag selects a region and leaves it selected and shown, with the status line saying what
/// the keys do, as the help does; Enter filters to that region (not to the cursor's cell),
/// Esc drops it. Releasing the button applies nothing.
#[test]
fn mouse_drag_selects_enter_applies_esc_drops() {
    let (_dir, mut app, fx) = app(100, 30, "proc.name=postgres");
    settle(&mut app, fx);
    // From the 1 ms cell on the first row to the 10 ms cell three rows down.
    let (c0, c1) = (lat_cell(&app, 60), lat_cell(&app, 70));
    let expect = app
        .view
        .grid
        .sum(0..4, app.layout.cell_cols(c0).start..app.layout.cell_cols(c1).end);
    let cursor_cell = app.view.grid.sum(3..4, app.layout.cell_cols(c1));
    assert!(expect > cursor_cell, "the region holds more than its last cell");
    let ((x0, y0), (x1, y1)) = (screen_cell(&app, 0, c0), screen_cell(&app, 3, c1));
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), x0, y0);
    mouse(&mut app, MouseEventKind::Drag(MouseButton::Left), x0 + 1, y0 + 1);
    mouse(&mut app, MouseEventKind::Drag(MouseButton::Left), x1, y1);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), x1, y1);
    assert_eq!(app.filter.applied, "proc.name=postgres", "releasing applies nothing");
    assert!(app.view.anchor.is_some(), "the region stays selected");
    let status = status_text(&app);
    assert!(status.contains(&format!("region: {}", keys::REGION_KEYS)), "{status}");
    // Another pane's Enter is not the region's: no reminder there.
    press(&mut app, KeyCode::Tab);
    assert!(!status_text(&app).contains("region:"));
    press(&mut app, KeyCode::BackTab);
    let help = keys::BINDINGS.iter().find(|b| b.keys.contains("mouse drag")).unwrap();
    assert!(help.help.ends_with(keys::REGION_KEYS), "{}", help.help);
    insta::assert_snapshot!("mouse_region_selected", full(&app));

    press(&mut app, KeyCode::Enter);
    let f = app.filter.applied.clone();
    assert_eq!(
        f,
        "proc.name=postgres and evt.time<680ms and latency>=1ms and latency<15.8ms"
    );
    assert_eq!(app.answer.as_ref().unwrap().matched, expect, "{f}");
    assert!(app.view.anchor.is_none());
    assert!(!status_text(&app).contains("region:"));
    // Undo gives the previous filter back.
    press(&mut app, KeyCode::Char('u'));
    assert_eq!(app.filter.applied, "proc.name=postgres");

    // Esc drops a dragged region: Enter then filters to the cursor's cell alone, which here is
    // empty: the filter stays and a note says where events are to be found.
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), x0, y0);
    mouse(&mut app, MouseEventKind::Drag(MouseButton::Left), x1, y1);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), x1, y1);
    press(&mut app, KeyCode::Esc);
    assert!(app.view.anchor.is_none());
    assert_eq!(app.filter.applied, "proc.name=postgres");
    assert_eq!(cursor_cell, 0);
    let before = app.answer.as_ref().unwrap().matched;
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "proc.name=postgres");
    assert_eq!(app.answer.as_ref().unwrap().matched, before);
    assert!(app.note.as_deref().unwrap_or("").contains("no event under the cursor"));
}

/// A click (no drag) puts the cursor on the cell and selects nothing: keys then move the
/// cursor, not a region's corner, and Enter filters to the cursor's cell.
#[test]
fn a_click_moves_the_cursor_and_selects_nothing() {
    let (_dir, mut app, fx) = app(100, 30, "proc.name=postgres");
    settle(&mut app, fx);
    let c = lat_cell(&app, 66); // the 5 ms misses, in every row
    let (x, y) = screen_cell(&app, 0, c);
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), x, y);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), x, y);
    assert_eq!((app.view.cursor_t, app.view.cursor_l), (0, c));
    assert!(app.view.anchor.is_none(), "a click selects nothing");
    assert!(!status_text(&app).contains("region:"));
    press(&mut app, KeyCode::Down);
    let one_cell = app.view.grid.sum(1..2, app.layout.cell_cols(c));
    assert!(one_cell > 0 && app.view.grid.sum(0..1, app.layout.cell_cols(c)) > 0);
    press(&mut app, KeyCode::Enter);
    assert_eq!(
        app.filter.applied,
        "proc.name=postgres and evt.time>=170ms and evt.time<340ms and latency>=3.98ms and latency<6.31ms"
    );
    assert_eq!(app.answer.as_ref().unwrap().matched, one_cell);
    // Nothing under a popup is pressed.
    press(&mut app, KeyCode::Char('?'));
    let (x, y) = screen_cell(&app, 3, 0);
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), x, y);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), x, y);
    assert_eq!((app.view.cursor_t, app.view.cursor_l), (1, c));
}

/// A drag that leaves the plot keeps stretching the region to the plot's edge, in the
/// spectrogram: it does not hand the focus to the pane it crosses. A drag that starts in
/// another pane selects nothing and moves no cursor.
#[test]
fn drags_across_panes_stay_where_they_started() {
    let (_dir, mut app, fx) = app(100, 30, "proc.name=postgres");
    settle(&mut app, fx);
    let geo = app.layout;
    let c0 = lat_cell(&app, 60);
    let (x0, y0) = screen_cell(&app, 0, c0);
    let (bx, by) = (geo.breakdown.x + 5, geo.breakdown.y + 2);
    assert!(by < geo.plot.bottom(), "the breakdown is beside the plot's rows");
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), x0, y0);
    mouse(&mut app, MouseEventKind::Drag(MouseButton::Left), bx, by);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), bx, by);
    assert_eq!(app.focus, Pane::Spectrogram);
    assert_eq!(
        (app.view.cursor_t, app.view.cursor_l),
        (usize::from(by - geo.plot.y), geo.lat_cells - 1),
        "the region reaches the plot's right edge"
    );
    press(&mut app, KeyCode::Enter);
    let f = app.filter.applied.clone();
    assert!(f.ends_with(" and latency>=1ms"), "the region, to the right edge: {f}");

    // From the event list across the plot: the list keeps the focus, the view its cursor.
    let before = (app.view.cursor_t, app.view.cursor_l);
    let (ex, ey) = (geo.events.x + 3, geo.events.y + 3);
    mouse(&mut app, MouseEventKind::Down(MouseButton::Left), ex, ey);
    assert_eq!(app.focus, Pane::Events);
    mouse(&mut app, MouseEventKind::Drag(MouseButton::Left), x0, y0);
    mouse(&mut app, MouseEventKind::Up(MouseButton::Left), x0 + 2, y0 + 2);
    assert_eq!(app.focus, Pane::Events);
    assert_eq!((app.view.cursor_t, app.view.cursor_l), before);
    assert!(app.view.anchor.is_none());
    assert_eq!(app.filter.applied, f);
}

#[test]
fn latency_axis_keeps_the_unit_decades() {
    for (w, h) in [(80, 24), (110, 30), (120, 40), (200, 50)] {
        let (_dir, mut app, fx) = app(w, h, "");
        settle(&mut app, fx);
        let geo = app.layout;
        let buf = draw(&app);
        let line: String = (geo.plot.x..geo.plot.right() + 1)
            .map(|x| buf[(x, geo.plot.y - 1)].symbol().to_string())
            .collect();
        for unit in ["1ns ", "1µs ", "1ms ", "1s "] {
            assert!(line.contains(unit), "{w}x{h}: no {unit:?} in {line:?}");
        }
        // Every label stands alone: at least one blank between neighbours.
        let labels: Vec<&str> = line.split_whitespace().collect();
        assert!(labels.len() >= 4, "{w}x{h}: {line:?}");
        if geo.lat_cells >= 100 {
            assert_eq!(labels.len(), 11, "{w}x{h}: every decade fits: {line:?}");
        }
    }
}

/// The latency-sorted list keeps the K slowest matching events of the view, exactly those a
/// full sort gives (ties in file order), and says "slowest of N" when it holds fewer than N.
#[test]
fn latency_sort_keeps_the_slowest_k_of_a_full_sort() {
    for (k, filter) in [
        (37, ""),
        (3_000, ""),
        (5_000, "proc.name=postgres"),
        (1_000_000, "proc.name=postgres"),
    ] {
        let (_dir, mut app, fx) = app(100, 30, filter);
        app.list.slowest = k;
        settle(&mut app, fx);
        app.focus = Pane::Events;
        press(&mut app, KeyCode::Char('s'));
        assert_eq!(app.list.sort, Sort::Latency);
        let a = app.answer.as_ref().unwrap();
        let (start, end) = (a.spectro.origin(), a.spectro.end());
        // Every event of the view that matches, by a full sort.
        let compiled = iocap_tui::panes::filter_bar::compile(filter, &app.cap.reader).unwrap();
        let mut all = Vec::new();
        let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
        let mut bits = iocap_filter::Bitmap::default();
        for ci in 0..app.cap.reader.chunks().len() {
            app.cap
                .reader
                .read_chunk(ci, iocap_format::ColSet::ALL, &mut dec, &mut cols)
                .unwrap();
            match &compiled {
                Some(f) => f.eval(&cols, &mut bits),
                None => bits.reset(cols.len(), true),
            }
            for row in bits.iter_ones() {
                if (start..end).contains(&cols.ts[row]) {
                    all.push((std::cmp::Reverse(cols.latency[row]), ci, row));
                }
            }
        }
        all.sort();
        assert_eq!(a.matched, all.len() as u64);
        let want: Vec<(u64, usize, usize)> = all.iter().take(k).map(|&(l, c, r)| (l.0, c, r)).collect();
        let got: Vec<(u64, usize, usize)> = a
            .slowest
            .iter()
            .map(|s| (s.latency, s.chunk as usize, s.row as usize))
            .collect();
        assert_eq!(got, want, "k {k} filter {filter:?}");
        assert_eq!(app.list.len(app.answer.as_ref()), k.min(all.len()));
        let events = snap_pane(&app, app.layout.events);
        let title = events.lines().next().unwrap();
        if k < all.len() {
            assert!(
                title.contains(&format!("slowest of {}", iocap_analysis::units::count(a.matched))),
                "{title}"
            );
        } else {
            assert!(title.contains("slowest first"), "{title}");
        }
        // The first row shown is the slowest event.
        assert_eq!(app.list.rows[0].1.latency, want[0].0);
    }
}

/// The detail popup fits 80×24 whole, for a syscall and a block request: every field that
/// applies to the event is on screen, with the popup's bottom border.
#[test]
fn detail_popup_fits_80x24() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    for (name, sort) in [
        ("detail_syscall_80x24", Sort::Time),
        ("detail_block_80x24", Sort::Latency),
    ] {
        if app.list.sort != sort {
            press(&mut app, KeyCode::Char('s'));
        }
        press(&mut app, KeyCode::Enter);
        assert!(app.list.detail);
        let screen = full(&app);
        let text = screen.split("--- styles ---").next().unwrap();
        // The popup: from its title to its bottom border, both on screen.
        let lines: Vec<&str> = text.lines().collect();
        let top = lines.iter().position(|l| l.contains("┌ Event")).expect("popup title");
        let left = lines[top][..lines[top].find("┌ Event").unwrap()].chars().count();
        let corner = |l: &&str| l.chars().nth(left) == Some('└');
        let bottom = top + lines[top..].iter().position(corner).expect("popup bottom");
        let popup = lines[top..=bottom].join("\n");
        let e = app
            .list
            .rows
            .iter()
            .find(|(i, _)| *i == app.list.sel)
            .unwrap()
            .1
            .clone();
        let (meta, tables) = (app.cap.reader.meta(), app.cap.reader.tables());
        let mut seen = Vec::new();
        for fi in iocap_filter::fields::all() {
            let v = iocap_filter::fields::value(fi, &e, meta, tables);
            // The popup's rule: a call that issued no block request has no disk figures.
            let no_disk = e.disk_reqs == 0 && fi.name.starts_with("disk.");
            // Nor one that never left the CPU any anatomy.
            let anatomy = [
                "cpu.time",
                "runq.time",
                "wait.time",
                "wait.count",
                "waker.tid",
                "wait.reason",
            ];
            let no_anatomy = e.runq == 0 && e.wait == 0 && anatomy.contains(&fi.name);
            // Nor when its waker woke it, unless one did and the recorder said when.
            let no_woken = e.woken == 0 && fi.name == "waker.after";
            // Nor the parts of its wait it did not have.
            let no_part = fi
                .name
                .strip_prefix("wait.")
                .is_some_and(|p| iocap_format::Reason::ALL[1..].iter().any(|r| r.name() == p))
                && v == iocap_filter::fields::Value::Duration(0);
            // Nor the header's fields, one value for the whole capture.
            let shown = !(no_disk
                || no_woken
                || no_anatomy
                || no_part
                || fi.id.is_per_capture()
                || v.is_absent()
                || v == iocap_filter::fields::Value::Bool(false)
                || v == iocap_filter::fields::Value::Str("".into()));
            // Aliases are shown once, under their first name.
            if shown && !seen.contains(&fi.id) {
                assert!(
                    popup.contains(&format!("{} ", fi.name)),
                    "{} missing in {name}:\n{text}",
                    fi.name
                );
            }
            seen.push(fi.id);
        }
        assert!(!popup.contains("more lines"), "{text}");
        insta::assert_snapshot!(name, screen);
        press(&mut app, KeyCode::Esc);
        assert!(!app.list.detail);
    }
}

/// The worker's idle fill: after `query::warm` the same question is answered from the cache,
/// identically; a superseded warm-up stops without filling.
#[test]
fn warm_cache_answers_the_same() {
    for filter in ["", "proc.name=postgres", "latency>1ms and evt.time<1s"] {
        let (_dir, _app, fx) = app(100, 30, filter);
        let q = fx.query.unwrap();
        let cancel = Cancel::default();
        cancel.0.store(q.gen, Ordering::Relaxed);
        let cold = query::run(&q, None, &cancel).unwrap().unwrap();
        let cache = iocap_analysis::ColumnCache::new(query::CACHE_BUDGET);
        // Superseded before it starts: nothing is filled.
        let stale = Cancel::default();
        stale.0.store(q.gen + 1, Ordering::Relaxed);
        assert!(!query::warm(&q, &cache, &stale).unwrap());
        assert_eq!(cache.stats().entries, 0);
        assert!(query::warm(&q, &cache, &cancel).unwrap());
        let filled = cache.stats();
        assert!(filled.entries > 0, "{filter}");
        let warm = query::run(&q, Some(&cache), &cancel).unwrap().unwrap();
        let st = cache.stats();
        assert_eq!(st.misses - filled.misses, 0, "{filter}: every column from the cache");
        assert_eq!(
            (warm.matched, &warm.hist, &warm.groups, &warm.per_chunk, &warm.spectro),
            (cold.matched, &cold.hist, &cold.groups, &cold.per_chunk, &cold.spectro),
            "{filter}"
        );
    }
}

/// The breakdown, for every field it can group by, against a plain count: every matching event
/// of the view decoded whole, its value printed as the filter language reads it.
#[test]
fn breakdown_matches_a_plain_count_for_every_field() {
    // All rows, about half, a few: the group keys are built both ways.
    for filter in ["", "latency>1ms or proc.name=postgres", "latency>1ms"] {
        let (_dir, mut app, fx) = app(100, 30, filter);
        let mut first = fx.query;
        for (k, field) in iocap_tui::panes::breakdown::group_fields().iter().enumerate() {
            let name = &field.name;
            app.breakdown.field = k;
            let mut q = first
                .take()
                .unwrap_or_else(|| app.update(Action::NextField).query.unwrap());
            q.group = iocap_filter::fields::lookup(name).unwrap();
            let cancel = Cancel::default();
            cancel.0.store(q.gen, Ordering::Relaxed);
            let reader = &app.cap.reader;
            let a = query::run(&q, None, &cancel).unwrap().unwrap();
            let compiled = iocap_tui::panes::filter_bar::compile(filter, reader).unwrap();
            let mut want: std::collections::HashMap<String, u64> = Default::default();
            let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
            let mut bits = iocap_filter::Bitmap::default();
            for ci in 0..reader.chunks().len() {
                reader
                    .read_chunk(ci, iocap_format::ColSet::ALL, &mut dec, &mut cols)
                    .unwrap();
                match &compiled {
                    Some(f) => f.eval(&cols, &mut bits),
                    None => bits.reset(cols.len(), true),
                }
                for row in bits.iter_ones().filter(|&r| (q.start..q.end()).contains(&cols.ts[r])) {
                    let v = iocap_filter::fields::value(q.group, &cols.event(row), reader.meta(), reader.tables());
                    *want.entry(v.to_string()).or_default() += 1;
                }
            }
            let mut want: Vec<(String, u64)> = want.into_iter().collect();
            want.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            want.truncate(query::TOP_GROUPS);
            let got: Vec<(String, u64)> = a.groups.iter().map(|g| (g.value.clone(), g.count)).collect();
            // The capture has several processes, syscalls and block ops, so these split.
            let splits = ["proc.name", "evt.type", "proc.pid"].contains(name);
            assert!(!got.is_empty() && (got.len() > 1 || !splits), "{name}: {got:?}");
            assert_eq!(got, want, "{name} with filter {filter:?}");
        }
    }
}

/// Scrolling the list asks for its rows rather than decoding them on the UI thread: until they
/// arrive the rows show as `…`, a reply to a superseded request is dropped, and the newest one
/// fills the screen.
#[test]
fn list_rows_arrive_from_the_rows_thread() {
    let (_dir, mut app, fx) = app(100, 30, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    assert!(
        app.list.row(0).is_some(),
        "the first screen is decoded after the answer"
    );
    let page = app.layout.list_rows;
    // Two pages down, one request each; neither answered yet.
    let step = |app: &mut App| {
        let fx = app.update(keys::key(app, KeyEvent::new(KeyCode::PageDown, KeyModifiers::NONE)).unwrap());
        fx.rows.expect("rows asked for")
    };
    let first = step(&mut app);
    let second = step(&mut app);
    assert!(app.list.row(app.list.sel).is_none());
    let events = snap_pane(&app, app.layout.events);
    assert!(events.lines().filter(|l| l.contains('…')).count() >= page, "{events}");
    let mut loader = RowLoader::new();
    let stale = loader.load(&first);
    assert!(!stale.rows.is_empty());
    let _ = app.update(Action::Reply(Reply::Rows(stale)));
    assert!(app.list.row(app.list.sel).is_none(), "a superseded reply is dropped");
    let _ = app.update(Action::Reply(Reply::Rows(loader.load(&second))));
    let shown: Vec<usize> = (app.list.top..app.list.top + page)
        .filter(|&i| app.list.row(i).is_some())
        .collect();
    assert_eq!(shown.len(), page);
    assert_eq!(app.list.sel, 2 * page);
    // The rows are the events at those places in time order.
    let ts: Vec<u64> = shown.iter().map(|&i| app.list.row(i).unwrap().ts).collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    // Scrolling back within what is decoded asks for nothing.
    let fx = app.update(Action::Move(iocap_tui::action::Move::Up));
    assert!(fx.rows.is_none());
    // Rows asked for in time order and answered after the list was re-sorted by latency are
    // not shown as the slowest.
    let by_time = step(&mut app);
    let sorted = app.update(Action::Sort);
    assert_eq!(app.list.sort, Sort::Latency);
    // The reply comes before the latency-sorted answer.
    let _ = app.update(Action::Reply(Reply::Rows(loader.load(&by_time))));
    assert!(app.list.rows.is_empty(), "rows of the time order dropped");
    settle(&mut app, sorted);
    let shown: Vec<u64> = (0..page).map(|i| app.list.row(i).unwrap().latency).collect();
    assert!(shown.windows(2).all(|w| w[0] >= w[1]), "{shown:?}");
}

/// A capture with a damaged chunk: the view is answered from the other chunks and the status
/// line says what was left out; the list's rows from it say so too; nothing panics.
/// A capture cut short (a killed recorder) says so on the status line; a whole one does not.
#[test]
fn an_unfinished_capture_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(dir.path());
    let whole = full(&app_on(&path, 160, 30, "").0);
    assert!(!whole.contains("recovered"), "{whole}");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() * 2 / 3]).unwrap();
    let (mut app, fx) = app_on(&path, 160, 30, "");
    settle(&mut app, fx);
    let screen = full(&app);
    assert!(
        screen.contains("unfinished file, recovered: no footer index"),
        "{screen}"
    );
}

/// Flip a byte in the rollup frame (kind 13, or 16 for a file rollup) of the chunk at `chunk`,
/// the next chunk being at `next`: its checksum fails.
fn damage_rollup_of(path: &Path, chunk: u64, next: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut between = vec![0u8; (next - chunk) as usize];
    f.read_exact_at(&mut between, chunk).unwrap();
    let at = (1..between.len() - 24)
        .find(|&i| &between[i..i + 4] == b"IOFR" && [[13, 0], [16, 0]].contains(&[between[i + 4], between[i + 5]]))
        .expect("a rollup frame after the chunk") as u64;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, chunk + at + 20).unwrap();
    f.write_all_at(&[b[0] ^ 0xff], chunk + at + 20).unwrap();
}

#[test]
fn a_damaged_chunk_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(dir.path());
    let (bad, next) = {
        let r = Reader::open(&path).unwrap();
        let c = r.chunks();
        assert!(c.len() > 3);
        (c[2].offset, c[3].offset)
    };
    // Flip bytes in the middle of chunk 2's frame: its checksum no longer matches.
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = ((bad + next) / 2) as usize;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    // Its rollup, whole, still gives its events to a view that lies in one row: nothing is
    // left out.
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    let a = app.answer.as_ref().unwrap();
    assert!(
        a.rolled > 0 && a.damaged.is_empty() && a.matched == N,
        "{} {:?}",
        a.rolled,
        a.damaged
    );
    // With its rollup damaged too, its events are lost, and said to be.
    damage_rollup_of(&path, bad, next);
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    let lost = app.cap.reader.chunks()[2].summary.events;
    let a = app.answer.as_ref().expect("answered from the other chunks");
    assert_eq!(a.matched, N - lost);
    assert_eq!(a.damaged.len(), 1);
    let note = app.note.clone().unwrap_or_default();
    let lost_text = iocap_analysis::units::count(lost);
    assert!(
        note.starts_with(&format!("1 unreadable chunk left out ({lost_text} events); chunk 2: ")),
        "{note}"
    );
    assert!(note.contains("checksum"), "{note}");
    let screen = full(&app);
    assert!(screen.contains("1 unreadable chunk left out"), "{screen}");
    // The list's rows: a request touching chunk 2 stops there, with the error.
    let refs = (0..4)
        .map(|c| (c, iocap_tui::worker::query::EventRef { chunk: c, row: 0 }))
        .collect();
    let q = iocap_tui::worker::rows::RowsQuery {
        gen: 1,
        reader: Arc::clone(&app.cap.reader),
        answer: 1,
        counting: iocap_tui::worker::rows::Counting::Rows,
        refs,
        filter: None,
        start: 0,
        end: u64::MAX,
    };
    let rows = RowLoader::new().load(&q);
    assert_eq!(rows.rows.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1]);
    assert!(rows.error.is_some_and(|e| e.contains("chunk 2")));
}

/// The calls and block requests of [`linked_capture`], by what the tests look for.
mod linked {
    /// The capture's first event (ns since boot).
    pub const T0: u64 = super::START + 1_000_000;
    /// Thread 301's pread64 of `/var/lib/x.db`: 5 ms, two block requests.
    pub const READ_TS: u64 = T0;
    /// Thread 302's fsync, started at the same ns as the pread64: one block request.
    pub const FSYNC_TS: u64 = T0;
    /// The pread64's requests: one while it runs, one issued after it returned (readahead).
    pub const REQ_TS: [u64; 2] = [T0 + 100_000, T0 + 6_000_000];
    /// The fsync's request, between the pread64's two.
    pub const FSYNC_REQ_TS: u64 = T0 + 200_000;
    /// A flusher's writeback of `/var/lib/x.db`.
    pub const WRITEBACK_TS: u64 = T0 + 300_000;
    /// Thread 301's request whose link points 1 ns after the pread64's start: not its own. Its
    /// file's name holds an escape sequence and a bidi override.
    pub const NEAR_MISS_TS: u64 = T0 + 400_000;
    /// A request whose link is longer than the time since boot.
    pub const HOSTILE_TS: u64 = T0 + 500_000;
}

/// A capture of calls and the block requests they issued, in chunks of 3 events so that a
/// lookup crosses chunks: thread 301's pread64 and its two requests (one issued after it
/// returned), thread 302's fsync started at the same ns with one request of its own, a
/// flusher's writeback, a near miss (thread 301, a link 1 ns off) and a link before boot;
/// then fillers (getpid) every 100 µs for 20 ms.
fn linked_capture(dir: &Path) -> PathBuf {
    use iocap_format::Cause;
    use linked::*;
    let path = dir.join("linked.cap");
    let meta = Meta {
        command_line: Vec::new(),
        ..iocap_testkit::meta(START)
    };
    let mut w = iocap_testkit::create(&path, &meta, 3, 1);
    let pg = add_proc(&mut w, 300, 1, b"postgres");
    let flush = add_proc(&mut w, 50, 2, b"kworker/u8:1-flush-254:0");
    let db = add_file(&mut w, 300, 7, FdType::File, b"/var/lib/x.db", VDA);
    let wal = add_file(&mut w, 300, 8, FdType::File, b"/var/lib/x.wal", VDA);
    let evil = add_file(&mut w, 300, 9, FdType::File, b"/tmp/\x1b[2J\xe2\x80\xaeevil.db", VDA);
    let req = |ts: u64, tid: u32, cause: Cause, link: u64, file: u32, sector: u64, bytes: u64| Event {
        tid,
        cause: cause as u8,
        link,
        file,
        sector,
        queue: 50_000,
        nr: 17,
        ..block(ts, 3_000_000, 300, pg, VDA, bytes)
    };
    let mut events = vec![
        Event {
            fd: 7,
            file: db,
            bytes: 8192,
            proc: pg,
            disk_reqs: 2,
            disk_bytes: 12_288,
            disk_time: 4_000_000,
            ..Event::syscall(READ_TS, 5_000_000, 300, 301, 17, 8192)
        },
        Event {
            fd: 8,
            file: wal,
            proc: pg,
            disk_reqs: 1,
            disk_bytes: 4096,
            disk_time: 3_000_000,
            ..Event::syscall(FSYNC_TS, 4_000_000, 300, 302, 74, 0)
        },
        req(REQ_TS[0], 301, Cause::Syscall, REQ_TS[0] - READ_TS, db, 2048, 8192),
        req(REQ_TS[1], 301, Cause::Syscall, REQ_TS[1] - READ_TS, db, 4096, 4096),
        Event {
            nr: 74,
            ..req(
                FSYNC_REQ_TS,
                302,
                Cause::Syscall,
                FSYNC_REQ_TS - FSYNC_TS,
                wal,
                8192,
                4096,
            )
        },
        Event {
            pid: 50,
            proc: flush,
            nr: 0,
            ..req(WRITEBACK_TS, 50, Cause::Writeback, 0, db, 16_384, 65_536)
        },
        req(
            NEAR_MISS_TS,
            301,
            Cause::Syscall,
            NEAR_MISS_TS - READ_TS - 1,
            evil,
            32_768,
            4096,
        ),
        req(HOSTILE_TS, 301, Cause::Syscall, u64::MAX, db, 65_536, 4096),
    ];
    for i in 0..200 {
        events.push(Event {
            proc: pg,
            ..Event::syscall(T0 + 50_000 + i * 100_000, 300, 300, 303, 39, 300)
        });
    }
    // Emitted at completion, as the recorder does.
    events.sort_by_key(|e| (e.end(), e.ts));
    for e in &events {
        w.push(e).unwrap();
    }
    w.finish(T0 + 30_000_000).unwrap();
    path
}

/// The event of the capture at `path` starting at `ts` in thread `tid`.
fn event_at(reader: &Reader, ts: u64, tid: u32) -> Event {
    let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
    for ci in 0..reader.chunks().len() {
        reader
            .read_chunk(ci, iocap_format::ColSet::ALL, &mut dec, &mut cols)
            .unwrap();
        if let Some(i) = (0..cols.len()).find(|&i| cols.ts[i] == ts && cols.tid[i] == tid) {
            return cols.event(i);
        }
    }
    panic!("no event at {ts} in thread {tid}");
}

/// The lookup finds exactly a call's own block requests (not another thread's at the same
/// time, not a near miss, not a writeback), a request's own call, and nothing, without
/// panicking, for a link before boot, a writeback or a call claiming 4 billion requests.
#[test]
fn links_lookup_finds_exactly_a_calls_requests() {
    use iocap_tui::worker::links::{find, LinksQuery, Want};
    use linked::*;
    let dir = tempfile::tempdir().unwrap();
    let reader = Arc::new(Reader::open(linked_capture(dir.path())).unwrap());
    assert!(reader.chunks().len() > 10);
    let look = |event: Event| {
        let q = LinksQuery {
            gen: 1,
            reader: Arc::clone(&reader),
            answer: 1,
            event,
            want: Want::Detail,
            filter: None,
            start: 0,
            end: u64::MAX,
        };
        find(&q)
    };
    let read = event_at(&reader, READ_TS, 301);
    let l = look(read.clone());
    let ts: Vec<u64> = l.requests.iter().map(|r| r.event.ts).collect();
    assert_eq!(ts, REQ_TS);
    assert_eq!((l.found, l.complete, l.error.as_deref()), (2, true, None));
    assert!(l.requests.iter().all(|r| r.event.tid == 301 && r.event.cause == 1));
    let fsync = look(event_at(&reader, FSYNC_TS, 302));
    let ts: Vec<u64> = fsync.requests.iter().map(|r| r.event.ts).collect();
    assert_eq!(ts, [FSYNC_REQ_TS]);
    // Each request leads back to its own call, though both calls started at the same ns.
    for (ts, tid, call) in [(REQ_TS[0], 301, 17), (REQ_TS[1], 301, 17), (FSYNC_REQ_TS, 302, 74)] {
        let l = look(event_at(&reader, ts, tid));
        let issuer = l.issuer.expect("the request's call");
        assert_eq!(
            (issuer.event.tid, issuer.event.nr, issuer.event.ts),
            (tid, call, READ_TS)
        );
    }
    // No call for a writeback, a near miss or a link before boot.
    for (ts, tid) in [(WRITEBACK_TS, 50), (NEAR_MISS_TS, 301), (HOSTILE_TS, 301)] {
        let l = look(event_at(&reader, ts, tid));
        assert!(l.issuer.is_none(), "{ts}");
        assert!(l.requests.is_empty());
    }
    // A call that claims more requests than it has: its window is searched up to the bound
    // (this capture's 3-event chunks put more than that in its second after), what is there is
    // found, nothing is allocated for the claim.
    assert!(reader.chunks_in(READ_TS, READ_TS + links::AFTER).count() > links::MAX_CHUNKS);
    let greedy = look(Event {
        disk_reqs: u32::MAX,
        ..read.clone()
    });
    assert_eq!((greedy.found, greedy.requests.len(), greedy.complete), (2, 2, false));
    // Hostile times: a call at the end of time, a latency to the end of time.
    let _ = look(Event {
        ts: u64::MAX,
        latency: u64::MAX,
        ..read.clone()
    });
    let far = look(Event {
        latency: u64::MAX,
        ..read
    });
    assert_eq!(far.found, 2);
}

/// Move the list's selection down to the first event `pick` accepts.
fn select(app: &mut App, pick: impl Fn(&Event) -> bool) {
    act(app, Action::Move(iocap_tui::action::Move::Home));
    for _ in 0..app.list.len(app.answer.as_ref()) {
        if app.list.selected().is_some_and(&pick) {
            return;
        }
        press(app, KeyCode::Down);
    }
    panic!("no such event in the list");
}

/// The popup's text (from its title to its bottom border) on `screen`.
fn popup_text(screen: &str) -> String {
    let text = screen.split("--- styles ---").next().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let top = lines.iter().position(|l| l.contains("┌ Event")).expect("popup title");
    let left = lines[top][..lines[top].find("┌ Event").unwrap()].chars().count();
    let bottom = top
        + lines[top..]
            .iter()
            .position(|l| l.chars().nth(left) == Some('└'))
            .expect("popup bottom");
    lines[top..=bottom].join("\n")
}

/// The detail popup of a call lists its block requests (time after its start, disk, sector,
/// bytes, queue, device time), found off the UI thread; that of a request says what issued it
/// (the call, its time, latency and file; or the writeback of its file), at 80×24.
#[test]
fn detail_shows_what_is_linked_80x24() {
    use linked::*;
    let dir = tempfile::tempdir().unwrap();
    let (mut app, fx) = app_on(&linked_capture(dir.path()), 80, 24, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;

    select(&mut app, |e| e.ts == READ_TS && e.tid == 301);
    let fx = app.update(Action::Activate);
    assert!(app.list.detail);
    let asked = fx.links.clone().expect("the call's requests are looked up");
    assert_eq!(asked.event.ts, READ_TS);
    // Until the lookup answers, the popup says so.
    assert!(popup_text(&full(&app)).contains("block requests  searching…"));
    settle(&mut app, fx);
    let screen = full(&app);
    let popup = popup_text(&screen);
    assert!(popup.contains("block requests  2"), "{popup}");
    assert!(
        popup.contains("+100µs  vda") && popup.contains("+6.00ms  vda"),
        "{popup}"
    );
    assert!(!popup.contains("more lines"), "{popup}");
    insta::assert_snapshot!("detail_requests_80x24", screen);
    press(&mut app, KeyCode::Esc);

    select(&mut app, |e| e.ts == REQ_TS[1]);
    press(&mut app, KeyCode::Enter);
    let screen = full(&app);
    let popup = popup_text(&screen);
    assert!(popup.contains("issued by  pread64 at +0.001s"), "{popup}");
    assert!(popup.contains("issuer began  6.00ms before"), "{popup}");
    assert!(popup.contains("issuer latency  5.00ms"), "{popup}");
    assert!(popup.contains("issuer file  fd 7 /var/lib/x.db"), "{popup}");
    assert!(!popup.contains("more lines"), "{popup}");
    insta::assert_snapshot!("detail_issuer_80x24", screen);
    press(&mut app, KeyCode::Esc);

    // The other thread's request at a nearby time is its own call's.
    select(&mut app, |e| e.ts == FSYNC_REQ_TS);
    press(&mut app, KeyCode::Enter);
    assert!(popup_text(&full(&app)).contains("issued by  fsync at +0.001s"));
    press(&mut app, KeyCode::Esc);

    // A writeback names its file; a link before boot says it is damaged; neither is looked up.
    select(&mut app, |e| e.ts == WRITEBACK_TS);
    let fx = app.update(Action::Activate);
    assert!(fx.links.is_none());
    assert!(popup_text(&full(&app)).contains("issued by  writeback of /var/lib/x.db"));
    press(&mut app, KeyCode::Esc);
    select(&mut app, |e| e.ts == HOSTILE_TS);
    press(&mut app, KeyCode::Enter);
    assert!(popup_text(&full(&app)).contains("the link is damaged"));
    press(&mut app, KeyCode::Esc);
    // A near miss: looked up, not found.
    select(&mut app, |e| e.ts == NEAR_MISS_TS);
    press(&mut app, KeyCode::Enter);
    let popup = popup_text(&full(&app));
    assert!(popup.contains("not in the capture"), "{popup}");
}

/// `g` in the list goes from a block request to the call that issued it and from a call to its
/// requests, one after the other, in time and latency order; where the linked event is not in
/// the list (the filter hides it, the latency-sorted list does not hold it) or there is none,
/// the status line says so and the selection stays.
#[test]
fn g_jumps_between_a_call_and_its_block_requests() {
    use linked::*;
    let dir = tempfile::tempdir().unwrap();
    let path = linked_capture(dir.path());
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    let at = |app: &App| app.list.selected().map(|e| (e.ts, e.tid)).unwrap();
    select(&mut app, |e| e.ts == READ_TS && e.tid == 301);
    let read = app.list.sel;
    // Request 1, back, request 2, back, request 1 again.
    for (want, note) in [
        ((REQ_TS[0], 301), "went to block request 1 of 2"),
        ((READ_TS, 301), "went to the pread64 that issued it"),
        ((REQ_TS[1], 301), "went to block request 2 of 2"),
        ((READ_TS, 301), "went to the pread64 that issued it"),
        ((REQ_TS[0], 301), "went to block request 1 of 2"),
    ] {
        press(&mut app, KeyCode::Char('g'));
        assert_eq!(at(&app), want, "{:?}", app.note);
        assert_eq!(app.note.as_deref(), Some(note));
        // The rows at the new place are decoded: the selection is on screen.
        assert!(app.list.sel >= app.list.top && app.list.sel < app.list.top + app.layout.list_rows);
    }
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.list.sel, read);
    // The other thread's request at a nearby time goes to its own call.
    select(&mut app, |e| e.ts == FSYNC_REQ_TS);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(at(&app), (FSYNC_TS, 302));
    assert_eq!(app.list.selected().unwrap().nr, 74);
    // Nothing to go to: said, the selection stays.
    for (ts, why) in [
        (WRITEBACK_TS, "a flusher wrote this back: there is no call to go to"),
        (
            NEAR_MISS_TS,
            "its call is not in the capture (dropped, or before it began)",
        ),
        (HOSTILE_TS, "this block request's link is damaged (before boot)"),
        (T0 + 50_000, "this call issued no block request and never slept"),
    ] {
        select(&mut app, |e| e.ts == ts);
        let sel = app.list.sel;
        press(&mut app, KeyCode::Char('g'));
        assert_eq!(app.list.sel, sel);
        assert_eq!(app.note.as_deref(), Some(why));
    }
    // `g` belongs to the list: elsewhere it does nothing.
    app.focus = Pane::Spectrogram;
    assert!(keys::key(&app, KeyEvent::new(KeyCode::Char('g'), KeyModifiers::NONE)).is_none());

    // Latency order: the requests (3 ms) are among the slowest, the call (5 ms) first.
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    press(&mut app, KeyCode::Char('s'));
    select(&mut app, |e| e.ts == READ_TS && e.tid == 301);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(at(&app), (REQ_TS[0], 301), "{:?}", app.note);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(at(&app), (READ_TS, 301), "{:?}", app.note);
    // Kept to the 3 slowest (the two calls and one request), the list lacks the others.
    app.list.slowest = 3;
    press(&mut app, KeyCode::Char('s'));
    press(&mut app, KeyCode::Char('s'));
    select(&mut app, |e| e.ts == READ_TS && e.tid == 301);
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(at(&app), (READ_TS, 301));
    assert_eq!(
        app.note.as_deref(),
        Some("block request 2 of 2 is not among the 3 slowest listed")
    );

    // A filter hiding the calls: the request says so.
    let (mut app, fx) = app_on(&path, 100, 30, "evt.class=block");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    select(&mut app, |e| e.ts == REQ_TS[1]);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(at(&app), (REQ_TS[1], 301));
    assert_eq!(app.note.as_deref(), Some("its pread64 is hidden by the filter"));
    // One hiding the requests: each says so in turn.
    let (mut app, fx) = app_on(&path, 100, 30, "evt.class=syscall");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    select(&mut app, |e| e.ts == READ_TS && e.tid == 301);
    for n in 1..=2 {
        press(&mut app, KeyCode::Char('g'));
        assert_eq!(at(&app), (READ_TS, 301));
        let want = format!("block request {n} of 2 is hidden by the filter");
        assert_eq!(app.note.as_deref(), Some(want.as_str()));
    }
}

/// A call woken by the journal thread: its detail names the waker and the commit it had just
/// ended when it woke the call, and `g` goes there, then on to the commit's request; a call
/// woken during its waker's call is put down to that call, not to a later one; a call whose
/// waker has no event says so.
#[test]
fn g_goes_from_a_call_to_what_its_waker_was_doing() {
    use iocap_format::{Cause, Class};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("woken.cap");
    let t0 = START + 1_000_000;
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(START), 4, 1);
    let app_proc = add_proc(&mut w, 300, 1, b"app");
    let jbd2 = add_proc(&mut w, 400, 2, b"jbd2/vda1-8");
    let peer = add_proc(&mut w, 500, 1, b"peer");
    // The app's write, 10 ms, 9 of them blocked on the journal: woken at +9.6 ms, just after
    // the commit (+3 ms to +9.5 ms) whose request (+5 ms to +9 ms) it waited for.
    let write = Event {
        proc: app_proc,
        wait: 9_000_000,
        wait_journal: 9_000_000,
        sleeps: 1,
        waker: 400,
        waker_proc: jbd2,
        woken: 9_600_000,
        ..Event::syscall(t0, 10_000_000, 300, 300, 1, 1024)
    };
    let commit = Event {
        class: Class::Journal,
        proc: jbd2,
        offset: 57,
        disk_reqs: 1,
        disk_bytes: 4096,
        disk_time: 4_000_000,
        fd: -1,
        ..Event::syscall(t0 + 3_000_000, 6_500_000, 400, 400, 0, 0)
    };
    let commit_req = Event {
        tid: 400,
        cause: Cause::Journal as u8,
        offset: 57,
        link: 2_000_000,
        ..block(t0 + 5_000_000, 4_000_000, 400, jbd2, VDA, 0)
    };
    // Another write, woken by a thread with no event in the capture.
    let lonely = Event {
        proc: app_proc,
        wait: 1_000_000,
        sleeps: 1,
        waker: 999,
        ..Event::syscall(t0 + 20_000_000, 2_000_000, 300, 300, 1, 1024)
    };
    // A read woken at +1 ms by the peer's write (+0.5 ms to +1.5 ms); the peer's next call
    // ends later inside the read, but it did not wake it.
    let read = Event {
        proc: app_proc,
        wait: 900_000,
        wait_call: 900_000,
        sleeps: 1,
        waker: 500,
        waker_proc: peer,
        woken: 1_000_000,
        ..Event::syscall(t0 + 23_000_000, 3_000_000, 300, 302, 0, 10)
    };
    let peer_write = Event {
        proc: peer,
        ..Event::syscall(t0 + 23_500_000, 1_000_000, 500, 500, 1, 10)
    };
    let peer_later = Event {
        proc: peer,
        ..Event::syscall(t0 + 25_000_000, 500_000, 500, 500, 39, 500)
    };
    let mut events = vec![write, commit, commit_req, lonely, read, peer_write, peer_later];
    for i in 0..50 {
        events.push(Event::syscall(t0 + i * 500_000, 100, 300, 301, 39, 300));
    }
    events.sort_by_key(|e| (e.end(), e.ts));
    for e in &events {
        w.push(e).unwrap();
    }
    w.finish(t0 + 30_000_000).unwrap();

    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    select(&mut app, |e| e.ts == t0 && e.tid == 300);
    let fx = app.update(Action::Activate);
    assert!(fx.links.is_some(), "the waker's event is looked up");
    settle(&mut app, fx);
    let popup = popup_text(&full(&app));
    // The anatomy's bar, under its figures: journal 90% and cpu 10% of 59 cells.
    let bar = format!("{:17}journal{:46}cpu   ", "", "");
    assert!(popup.lines().any(|l| l.contains(&bar)), "{popup}");
    // Wrapped across two lines at 100 columns.
    assert!(
        popup.contains("woken by  jbd2/vda1-8 (thread 400): journal commit of transaction 57,")
            && popup.contains("which ended 100µs before it woke the call at +9.60ms"),
        "{popup}"
    );
    assert!(popup.contains("waker.after  9.60ms"), "{popup}");
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('g'));
    let at = app.list.selected().unwrap();
    assert_eq!(
        (at.class, at.ts, at.tid),
        (Class::Journal, t0 + 3_000_000, 400),
        "{:?}",
        app.note
    );
    assert_eq!(app.note.as_deref(), Some("went to its waker's journal commit"));
    // The commit says its transaction, and `g` goes on to its request.
    press(&mut app, KeyCode::Enter);
    let popup = popup_text(&full(&app));
    assert!(popup.contains("transaction  57"), "{popup}");
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('g'));
    let at = app.list.selected().unwrap();
    assert_eq!(
        (at.class, at.ts, at.tid),
        (Class::Block, t0 + 5_000_000, 400),
        "{:?}",
        app.note
    );
    // The journal's request says whose it is, and `g` goes back to the commit.
    press(&mut app, KeyCode::Enter);
    let popup = popup_text(&full(&app));
    assert!(
        popup.contains("issued by  the journal's commit of transaction 57, begun 2.00ms before"),
        "{popup}"
    );
    press(&mut app, KeyCode::Esc);
    press(&mut app, KeyCode::Char('g'));
    let at = app.list.selected().unwrap();
    assert_eq!((at.class, at.ts), (Class::Journal, t0 + 3_000_000), "{:?}", app.note);
    // Woken during the peer's write: that write, not the peer's later call.
    select(&mut app, |e| e.ts == t0 + 23_000_000 && e.tid == 302);
    press(&mut app, KeyCode::Char('g'));
    let at = app.list.selected().unwrap();
    assert_eq!((at.ts, at.tid), (t0 + 23_500_000, 500), "{:?}", app.note);
    // A waker with no event: said, the selection stays.
    select(&mut app, |e| e.ts == t0 + 20_000_000 && e.tid == 300);
    let sel = app.list.sel;
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.list.sel, sel);
    assert_eq!(
        app.note.as_deref(),
        Some("thread 999, which woke it, has no event during the call in the capture")
    );
}

/// `d` splits each group's calls' latency into disk time and the rest, against a plain sum over
/// the matching calls decoded whole; a group of block requests only shows `-`; the split is
/// not computed while it is not shown.
#[test]
fn breakdown_splits_calls_latency_into_disk_and_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = linked_capture(dir.path());
    for filter in ["", "evt.type=pread64 or evt.class=block"] {
        let (mut app, fx) = app_on(&path, 80, 24, filter);
        settle(&mut app, fx);
        assert_eq!(app.breakdown.split, Split::Off);
        assert!(app.groups().iter().all(|g| g.disk == Default::default()));
        press(&mut app, KeyCode::Char('d'));
        assert_eq!(app.breakdown.split, Split::Disk);
        let reader = &app.cap.reader;
        let compiled = iocap_tui::panes::filter_bar::compile(filter, reader).unwrap();
        let mut want: std::collections::HashMap<String, (u64, u64, u64)> = Default::default();
        let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
        let mut bits = iocap_filter::Bitmap::default();
        for ci in 0..reader.chunks().len() {
            reader
                .read_chunk(ci, iocap_format::ColSet::ALL, &mut dec, &mut cols)
                .unwrap();
            match &compiled {
                Some(f) => f.eval(&cols, &mut bits),
                None => bits.reset(cols.len(), true),
            }
            for row in bits.iter_ones() {
                let e = cols.event(row);
                let name = iocap_filter::fields::value(app.breakdown.field(), &e, reader.meta(), reader.tables());
                let w = want.entry(name.to_string()).or_default();
                if e.class != iocap_format::Class::Block {
                    *w = (w.0 + 1, w.1 + e.latency, w.2 + e.disk_time.min(e.latency));
                }
            }
        }
        assert_eq!(app.groups().len(), want.len());
        for g in app.groups() {
            let d = g.disk;
            assert_eq!((d.calls, d.latency, d.disk), want[&g.value], "{} {filter:?}", g.value);
        }
        if filter.is_empty() {
            let pane = snap_pane(&app, app.layout.breakdown);
            // postgres: 203 calls of 300 ns, 5 ms (4 ms on disk) and 4 ms (3 ms): 7 ms on disk.
            assert!(pane.contains("postgres       207   7.00ms 2.06ms"), "{pane}");
            // The flusher's group: one block request, no call.
            assert!(pane.contains("1     -      -"), "{pane}");
            insta::assert_snapshot!("breakdown_split_80x24", pane);
        }
        // `d` again: the largest part of each group's calls' latency. This capture has no
        // anatomy: all of it is on a CPU.
        press(&mut app, KeyCode::Char('d'));
        assert_eq!(app.breakdown.split, Split::Why);
        if filter.is_empty() {
            let pane = snap_pane(&app, app.layout.breakdown);
            assert!(pane.contains("postgres      207   cpu       100%"), "{pane}");
            assert!(pane.contains("1     -         -"), "{pane}");
        }
        press(&mut app, KeyCode::Char('d'));
        assert_eq!(app.breakdown.split, Split::Off);
        assert!(app.groups().iter().all(|g| g.disk == Default::default()));
    }
}

/// `m` cycles what block requests are plotted by (latency, queue, queue+device): the
/// histogram, spectrogram and breakdown percentiles count each block request by the measure
/// and each call by its latency, against a plain count; the titles say which; the slowest
/// stay by latency; a region selected under a measure filters on what was plotted.
#[test]
fn m_measures_block_requests_by_queue_or_queue_plus_device() {
    use iocap_analysis::{LatencyHist, Measure};
    let dir = tempfile::tempdir().unwrap();
    let path = linked_capture(dir.path());
    let (mut app, fx) = app_on(&path, 80, 24, "");
    settle(&mut app, fx);
    let all = {
        let r = &app.cap.reader;
        let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
        let mut all = Vec::new();
        for ci in 0..r.chunks().len() {
            r.read_chunk(ci, iocap_format::ColSet::ALL, &mut dec, &mut cols)
                .unwrap();
            all.extend((0..cols.len()).map(|i| cols.event(i)));
        }
        all
    };
    for (m, label) in [
        (Measure::QUEUE, Some(("blk", "queue"))),
        (Measure::TOTAL, Some(("blk", "q+dev"))),
        (Measure::DISK, Some(("calls", "disk"))),
        (Measure::RUNQ, Some(("calls", "runq"))),
        (Measure::WAIT, Some(("calls", "wait"))),
        (Measure::CPU, Some(("calls", "cpu"))),
        (Measure::LATENCY, None),
    ] {
        let fx = app.update(Action::CycleMeasure);
        assert_eq!(app.view.measure, m);
        assert_eq!(fx.query.as_ref().unwrap().measure, m);
        // Not the index's picture: it knows latencies only.
        assert_eq!(app.view.grid.approximate, m == Measure::LATENCY);
        settle(&mut app, fx);
        let a = app.answer.as_ref().unwrap();
        let mut want = LatencyHist::new();
        for e in &all {
            want.add(m.of(e));
        }
        assert_eq!(a.hist, want, "{m:?}");
        assert_eq!(a.spectro.total(), a.matched);
        let screen = full(&app);
        let titles = screen.lines().nth(1).unwrap();
        match label {
            Some((who, l)) => {
                assert!(titles.contains(&format!("latency → ({who}: {l})")), "{titles}");
                assert!(titles.contains(&format!("Latency, {who} {l}, 208")), "{titles}");
            }
            None => assert!(!titles.contains("blk") && !titles.contains("calls"), "{titles}"),
        }
        if m == Measure::QUEUE {
            insta::assert_snapshot!("measure_queue_80x24", screen);
        }
    }
    // The latency-sorted list is by latency whatever is plotted.
    let _ = app.update(Action::CycleMeasure);
    app.focus = Pane::Events;
    press(&mut app, KeyCode::Char('s'));
    let lat: Vec<u64> = app.answer.as_ref().unwrap().slowest.iter().map(|s| s.latency).collect();
    assert_eq!(&lat[..3], [5_000_000, 4_000_000, 3_000_000]);

    // A region over the column of the requests, all rows: exactly those plotted there (by a
    // part of theirs, or by their latency beside the calls' parts).
    for m in [Measure::QUEUE, Measure::TOTAL, Measure::RUNQ] {
        let (mut app, fx) = app_on(&path, 80, 24, "");
        settle(&mut app, fx);
        while app.view.measure != m {
            act(&mut app, Action::CycleMeasure);
        }
        let col = iocap_analysis::spectro::column(m.of(&event_at(&app.cap.reader, linked::REQ_TS[0], 301)));
        let cell = (0..app.layout.lat_cells)
            .find(|&c| app.layout.cell_cols(c).contains(&col))
            .unwrap();
        let rows = app.layout.time_cells;
        let plotted = app.view.grid.sum(0..rows, app.layout.cell_cols(cell));
        assert!(plotted >= 5, "{m:?}: the requests are there");
        app.view.press(0, cell);
        app.view.release(rows - 1, cell);
        app.focus = Pane::Spectrogram;
        act(&mut app, Action::Activate);
        let field = m.field();
        let others = if m.of_calls() {
            "evt.class in (block, journal)"
        } else {
            "evt.class!=block"
        };
        assert!(
            app.filter.applied.contains(&format!("(({others} and latency>=")),
            "{}",
            app.filter.applied
        );
        assert!(
            app.filter.applied.contains(&format!(") or ({field}>=")),
            "{}",
            app.filter.applied
        );
        assert_eq!(
            app.answer.as_ref().unwrap().matched,
            plotted,
            "{m:?}: {}",
            app.filter.applied
        );
    }
}

/// A block request's FILE/DISK cell names its disk and, when known, its file, escaped like
/// every string from the capture.
#[test]
fn block_requests_list_their_disk_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let (mut app, fx) = app_on(&linked_capture(dir.path()), 120, 40, "evt.class=block");
    settle(&mut app, fx);
    let pane = snap_pane(&app, app.layout.events);
    let text = pane.split("--- styles ---").next().unwrap();
    assert!(text.contains("blk read vda /var/lib/x.db "), "{text}");
    assert!(text.contains("vda /var/lib/x.wal "), "{text}");
    assert!(text.contains("blk read vda /tmp/\\x1b[2J\\u{202e}evil.db "), "{text}");
    assert!(!text.contains('\x1b') && !text.contains('\u{202e}'), "{text}");
    // The flusher's writeback names the file it wrote back.
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("kwor…")).collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert!(rows[0].contains("vda /var/lib/x.db"), "{text}");
}

/// A call with more block requests than the popup holds at 80×24: the popup lists what fits,
/// says how many more there are, and keeps every field; the lookup keeps at most its bound.
#[test]
fn detail_of_a_call_with_many_requests_fits_80x24() {
    use iocap_format::Cause;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.cap");
    let meta = Meta {
        command_line: Vec::new(),
        ..iocap_testkit::meta(START)
    };
    let mut w = iocap_testkit::create(&path, &meta, 16, 1);
    let dd = add_proc(&mut w, 400, 1, b"dd");
    let out = add_file(&mut w, 400, 1, FdType::File, b"/mnt/big.img", VDA);
    let t0 = START + 1_000_000;
    let call = Event {
        fd: 1,
        file: out,
        proc: dd,
        disk_reqs: 100,
        disk_bytes: 100 * 131_072,
        disk_time: 90_000_000,
        ..Event::syscall(t0, 100_000_000, 400, 400, 74, 0)
    };
    for i in 0..100u64 {
        let ts = t0 + 1_000 + i * 900_000;
        w.push(&Event {
            cause: Cause::Syscall as u8,
            link: ts - t0,
            file: out,
            sector: i * 256,
            op: 1,
            ..block(ts, 800_000, 400, dd, VDA, 131_072)
        })
        .unwrap();
    }
    w.push(&call).unwrap();
    w.finish(t0 + 200_000_000).unwrap();
    let (mut app, fx) = app_on(&path, 80, 24, "");
    settle(&mut app, fx);
    app.focus = Pane::Events;
    select(&mut app, |e| e.class == iocap_format::Class::Syscall);
    press(&mut app, KeyCode::Enter);
    let found = app.list.links.as_ref().unwrap();
    assert_eq!((found.found, found.requests.len()), (100, links::LISTED));
    let screen = full(&app);
    let popup = popup_text(&screen);
    assert!(popup.contains("block requests  100"), "{popup}");
    assert!(popup.contains("+1.00µs  vda"), "{popup}");
    let shown = popup.lines().filter(|l| l.contains(" 128K ")).count();
    assert!(shown >= 5, "{popup}");
    assert!(
        popup.contains(&format!("… {} more: a taller terminal shows more", 100 - shown)),
        "{popup}"
    );
    assert!(popup.contains("disk.requests  100"), "{popup}");
    assert!(!popup.contains("more lines"), "{popup}");
}

/// Row `y` of `buf`: each cell's symbol and style.
fn cells(buf: &Buffer, y: u16) -> Vec<(String, Style)> {
    (0..buf.area.width)
        .map(|x| (buf[(x, y)].symbol().to_owned(), buf[(x, y)].style()))
        .collect()
}

/// The filter bar's first line as text, and the column of the caret (the reversed cell).
fn bar(app: &App) -> (String, Option<usize>) {
    let row = cells(&draw(app), app.layout.filter.y);
    let text: String = row.iter().map(|(s, _)| s.as_str()).collect();
    let reversed = |s: &Style| s.add_modifier.contains(ratatui::style::Modifier::REVERSED);
    (text, row.iter().position(|(_, s)| reversed(s)))
}

/// The filter bar's text and caret while it is open.
fn editing(app: &App) -> (String, usize) {
    let i = app.filter.input.as_ref().expect("the bar is open");
    (i.text.clone(), i.caret)
}

fn ctrl(app: &mut App, c: char) {
    press_mod(app, KeyCode::Char(c), KeyModifiers::CONTROL);
}

fn alt(app: &mut App, code: KeyCode) {
    press_mod(app, code, KeyModifiers::ALT);
}

/// A filter longer than the bar scrolls with the caret, `…` marking where the line goes on,
/// so what is typed is always in sight; the closed bar shows the filter's start and end.
#[test]
fn a_long_filter_scrolls_in_the_bar() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    let long = "proc.name=postgres and evt.type=pread64 and latency>=1ms and latency<15.8ms \
                and fd.name=\"/var/lib/pg/base/16384\" and evt.time<1s";
    assert!(long.len() > 120);
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, long);
    // The end of what was typed, and the caret after it, in the last column.
    let (text, caret) = bar(&app);
    assert!(text.starts_with("/ …"), "{text:?}");
    assert_eq!(caret, Some(79), "{text:?}");
    let shown = text[text.find('…').unwrap() + '…'.len_utf8()..].trim_end();
    assert!(long.ends_with(shown) && shown.len() > 70, "{text:?}");
    insta::assert_snapshot!("filter_bar_long_end", snap_pane(&app, app.layout.filter));

    // Home: the start, cut on the right.
    ctrl(&mut app, 'a');
    let (text, caret) = bar(&app);
    assert_eq!(caret, Some(2));
    assert!(text.starts_with("/ proc.name=postgres and"), "{text:?}");
    assert!(text.ends_with('…'), "{text:?}");
    assert!(long.starts_with(&text[2..text.len() - '…'.len_utf8()]), "{text:?}");
    // Moving inside the bar leaves the text where it is.
    alt(&mut app, KeyCode::Char('f'));
    alt(&mut app, KeyCode::Char('f'));
    alt(&mut app, KeyCode::Char('f'));
    assert_eq!(editing(&app).1, "proc.name=postgres".len());
    let (moved, caret) = bar(&app);
    assert_eq!((moved.as_str(), caret), (text.as_str(), Some(2 + 18)));
    // Past the right edge the text follows, cut on both sides, the caret on its character.
    for _ in 0..90 {
        ctrl(&mut app, 'f');
    }
    let (text, caret) = bar(&app);
    let at = editing(&app).1;
    assert!(text.starts_with("/ …") && text.ends_with('…'), "{text:?}");
    let caret = caret.expect("the caret is in sight");
    let under = text.chars().nth(caret).unwrap();
    assert_eq!(under, long[at..].chars().next().unwrap(), "{text:?}");

    // Applied, the closed bar shows both ends of it.
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, long);
    let (text, _) = bar(&app);
    let text = text.trim_end();
    assert!(text.starts_with("filter: proc.name=postgres and "), "{text:?}");
    assert!(text.ends_with(" and evt.time<1s"), "{text:?}");
    assert_eq!(text.matches('…').count(), 1, "{text:?}");
    // Most of the bar used (a cut between words leaves a few cells).
    assert!((60..=80).contains(&text.chars().count()), "{text:?}");
}

/// The error's span is highlighted on the characters it names wherever the line is scrolled,
/// and on the `…` of the side it is hidden beyond.
#[test]
fn the_error_span_follows_the_scroll() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    let red = |s: &Style| s.fg == Some(ratatui::style::Color::Red);
    let red_text = |app: &App| -> String {
        let row = cells(&draw(app), app.layout.filter.y);
        row.iter().filter(|(_, s)| red(s)).map(|(c, _)| c.as_str()).collect()
    };
    let valid = "proc.name=postgres and evt.type=pread64 and latency>=1ms and latency<15.8ms";
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, &format!("{valid} and evt.time<1s and proc.nme=x"));
    let span = app.filter.input.as_ref().unwrap().error.clone().unwrap().span;
    assert_eq!(span.len(), "proc.nme".len());
    assert_eq!(red_text(&app), "proc.nme");
    insta::assert_snapshot!("filter_bar_error_scrolled", snap_pane(&app, app.layout.filter));
    // At the start, the span is beyond the right edge: the `…` there says so.
    ctrl(&mut app, 'a');
    assert_eq!(red_text(&app), "…");
    assert!(bar(&app).0.trim_end().ends_with('…'));
    // A mistake at the start, the caret at the end: the left `…`.
    ctrl(&mut app, 'k');
    type_text(&mut app, &format!("proc.nme=x and {valid}"));
    assert_eq!(red_text(&app), "…");
    assert!(bar(&app).0.starts_with("/ …"));
    ctrl(&mut app, 'a');
    assert_eq!(red_text(&app), "proc.nme");
}

/// readline's keys in the filter bar, what people type without thinking, each checked on the
/// text and caret it leaves.
#[test]
fn the_filter_bar_takes_readline_keys() {
    let (_dir, mut app, fx) = app(80, 24, "");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "proc.name=fio and latency>1ms");
    let at = |app: &App| editing(app);
    let s = |t: &str, c: usize| (t.to_owned(), c);

    ctrl(&mut app, 'w');
    assert_eq!(at(&app), s("proc.name=fio and ", 18), "Ctrl-W: back to a space");
    ctrl(&mut app, 'y');
    assert_eq!(at(&app), s("proc.name=fio and latency>1ms", 29), "Ctrl-Y: pasted back");
    alt(&mut app, KeyCode::Backspace);
    assert_eq!(at(&app), s("proc.name=fio and latency>", 26), "Alt-Backspace: a word");
    alt(&mut app, KeyCode::Char('b'));
    assert_eq!(at(&app).1, 18, "Alt-B: to the word's start");
    ctrl(&mut app, 'k');
    assert_eq!(at(&app), s("proc.name=fio and ", 18), "Ctrl-K: to the end");
    ctrl(&mut app, 'a');
    assert_eq!(at(&app).1, 0, "Ctrl-A");
    alt(&mut app, KeyCode::Char('f'));
    assert_eq!(at(&app).1, 4, "Alt-F: past `proc`");
    alt(&mut app, KeyCode::Char('d'));
    assert_eq!(at(&app), s("proc=fio and ", 4), "Alt-D: the next word");
    ctrl(&mut app, 'y');
    assert_eq!(at(&app), s("proc.name=fio and ", 9));
    ctrl(&mut app, 'e');
    assert_eq!(at(&app).1, 18, "Ctrl-E");
    ctrl(&mut app, 'b');
    ctrl(&mut app, 'b');
    assert_eq!(at(&app).1, 16, "Ctrl-B");
    ctrl(&mut app, 'f');
    assert_eq!(at(&app).1, 17, "Ctrl-F");
    ctrl(&mut app, 'h');
    assert_eq!(at(&app), s("proc.name=fio an ", 16), "Ctrl-H: backspace");
    ctrl(&mut app, 'd');
    assert_eq!(at(&app), s("proc.name=fio an", 16), "Ctrl-D: delete");
    press_mod(&mut app, KeyCode::Left, KeyModifiers::CONTROL);
    assert_eq!(at(&app).1, 14, "Ctrl-←: a word left");
    ctrl(&mut app, 'u');
    assert_eq!(at(&app), s("an", 0), "Ctrl-U: to the start");
    press(&mut app, KeyCode::End);
    ctrl(&mut app, 'y');
    assert_eq!(at(&app), s("anproc.name=fio ", 16), "Ctrl-Y: the last kill");
    // Alt or Ctrl with a key the table does not name types nothing.
    alt(&mut app, KeyCode::Char('x'));
    ctrl(&mut app, 'x');
    assert_eq!(at(&app), s("anproc.name=fio ", 16));

    // Characters stay whole: a wide one, a letter with a combining accent.
    ctrl(&mut app, 'u');
    type_text(&mut app, "fd.name=\"日本e\u{301}\"");
    press(&mut app, KeyCode::Left);
    press(&mut app, KeyCode::Left);
    let (text, caret) = at(&app);
    assert_eq!(&text[caret..], "e\u{301}\"", "← steps over the accent with its letter");
    press(&mut app, KeyCode::Backspace);
    assert_eq!(at(&app).0, "fd.name=\"日e\u{301}\"");
    let (shown, col) = bar(&app);
    // A wide character's second cell is blank in the buffer.
    assert_eq!(shown.trim_end(), "/ fd.name=\"日 e\u{301}\"");
    // `/ fd.name="日` is 13 cells: the caret is on the `e`.
    assert_eq!(col, Some(13));
    // Esc: nothing applied.
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.filter.applied, "");
}

/// A region's clause in the shortest literals that read back, without the bounds every event
/// meets, and without parentheses the filter before it does not need.
#[test]
fn regions_are_written_short() {
    let (_dir, mut app, fx) = app(100, 30, "");
    settle(&mut app, fx);
    let c = lat_cell(&app, 66);
    app.view.cursor_l = c;
    // All rows of the view: no time bounds, the capture is in them.
    press(&mut app, KeyCode::Char('v'));
    for _ in 1..app.layout.time_cells {
        press(&mut app, KeyCode::Down);
    }
    assert!(app.view_end() > app.cap.end);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "latency>=3.98ms and latency<6.31ms");
    press(&mut app, KeyCode::Char('u'));
    // Every row and every latency: nothing to filter on.
    press(&mut app, KeyCode::Home);
    app.view.cursor_l = 0;
    press(&mut app, KeyCode::Char('v'));
    for _ in 0..app.layout.lat_cells {
        press(&mut app, KeyCode::Right);
    }
    for _ in 1..app.layout.time_cells {
        press(&mut app, KeyCode::Down);
    }
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "");
    assert!(
        app.note.as_deref().unwrap_or("").contains("every event"),
        "{:?}",
        app.note
    );

    // An `or` before the region keeps its parentheses.
    let (_dir2, mut or, fx) = self::app(100, 30, "proc.name=fio or proc.name=postgres");
    settle(&mut or, fx);
    or.view.cursor_l = c;
    press(&mut or, KeyCode::Enter);
    assert_eq!(
        or.filter.applied,
        "(proc.name=fio or proc.name=postgres) and evt.time<170ms and latency>=3.98ms and latency<6.31ms"
    );
}

/// The text of screen row `y` of `buf`.
fn row_text(buf: &Buffer, y: u16) -> String {
    (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// On a narrow terminal the comparison's line keeps both captures' names and cuts how they
/// are aligned at its edge (the alignment used to take the whole line and the names none).
#[test]
fn a_narrow_comparison_line_keeps_both_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(dir.path());
    let cap = |name: &str| Capture::new(Arc::new(Reader::open(&path).unwrap()), Path::new(name));
    let bar = || iocap_tui::panes::filter_bar::FilterBar::compiled_already("", None, History::in_memory(Vec::new()));
    for (w, line) in [
        (
            80,
            " A ▀ a.cap  B ▄ b.cap  one filter, aligned by wall clock, A from +0ns",
        ),
        (40, " A ▀ a.cap  B ▄ b.cap  one filter, align"),
        (24, " A ▀ a.cap  B ▄ b.cap  o"),
    ] {
        let (mut app, fx) = App::comparing(
            cap("a.cap"),
            cap("b.cap"),
            bar(),
            Rect::new(0, 0, w, 24),
            Palette::Classic,
        );
        settle(&mut app, fx);
        assert_eq!(
            row_text(&draw(&app), app.layout.compare.y).trim_end(),
            line,
            "{w} columns"
        );
    }
}

/// Set when the worker of [`the_first_frame_is_drawn_before_the_worker_scans`] replies.
static REPLIED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn mark_reply(r: Reply) -> iocap_tui::event_loop::Msg {
    REPLIED.store(true, Ordering::SeqCst);
    iocap_tui::event_loop::Msg::Reply(r)
}

/// The first frame is the index's alone: the worker is asked its first question only once it
/// is drawn, so no scan takes the CPU from it (on a day's recording, the first question
/// scans billions of events, on every core).
#[test]
fn the_first_frame_is_drawn_before_the_worker_scans() {
    use iocap_tui::event_loop::{self, Msg};
    let (_dir, mut app, first) = app(80, 24, "");
    let (tx, rx) = std::sync::mpsc::channel::<Msg>();
    let worker = iocap_tui::worker::Worker::spawn(tx.clone(), mark_reply, Msg::OtherReply).unwrap();
    let mut frames = 0;
    event_loop::run(&mut app, &rx, &worker, first, |_| {
        frames += 1;
        if frames == 1 {
            // Time for a worker already asked to answer this small capture.
            std::thread::sleep(std::time::Duration::from_millis(300));
            assert!(
                !REPLIED.load(Ordering::SeqCst),
                "the worker scanned before the first frame was drawn"
            );
            let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
            tx.send(Msg::Input(crossterm::event::Event::Key(q))).unwrap();
        }
        Ok(())
    })
    .unwrap();
    assert!(frames >= 1);
}

/// A terminal too small for any row of the spectrogram (10 rows) still views the capture's
/// time: the breakdown and the event list show its events, and the spectrogram pane draws
/// nothing over its borders (it showed "Events, none" and an empty breakdown).
#[test]
fn a_terminal_too_small_for_the_plot_still_lists_the_events() {
    let (_dir, mut app, fx) = app(80, 9, "");
    settle(&mut app, fx);
    assert!(
        app.layout.plot.is_empty(),
        "no room for the plot at 80×9: {:?}",
        app.layout.plot
    );
    let buf = draw(&app);
    let screen: Vec<String> = (0..9).map(|y| row_text(&buf, y)).collect();
    let text = screen.join("\n");
    assert!(!text.contains("none"), "{text}");
    assert!(text.contains("Events 1/"), "{text}");
    // The spectrogram's title line is its own (no axis labels drawn over it).
    assert!(
        screen[1].contains("Spectrogram") && !screen[1].contains("1ns"),
        "{text}"
    );
}

/// A group of the events a field does not apply to reads `<NA>` in the breakdown, as in
/// `report --by` (it read `(none)`), and Enter on it keeps those events.
#[test]
fn the_breakdown_says_na_as_report_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = linked_capture(dir.path());
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    app.focus = Pane::Breakdown;
    // The picker: `f`, a few letters, Enter.
    press(&mut app, KeyCode::Char('f'));
    type_text(&mut app, "blk.de");
    press(&mut app, KeyCode::Enter);
    assert!(app.picker.is_none());
    assert_eq!(app.breakdown.field().name, "blk.dev");
    let absent = app
        .groups()
        .iter()
        .position(|g| g.value.is_empty())
        .expect("the calls have no blk.dev");
    let screen = full(&app);
    assert!(screen.contains("<NA>") && !screen.contains("(none)"), "{screen}");
    app.breakdown.sel = absent;
    press(&mut app, KeyCode::Enter);
    assert!(
        app.filter.applied.ends_with("not blk.dev exists"),
        "{}",
        app.filter.applied
    );
}

/// A capture of a database's calls with stacks (`record --stacks`): fsyncs from two code
/// paths, each with the kernel stack of its sleep, and reads with none.
fn stacks_capture(dir: &Path) -> PathBuf {
    use iocap_format::{Stack, StackFrame, StackKind};
    let path = dir.join("stacks.cap");
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(START), 1000, 1);
    let db = add_proc(&mut w, 300, 1, b"db");
    let stack = |w: &mut iocap_format::Writer<std::fs::File>, kind, names: &[&str]| {
        let frames = (names.iter().rev())
            .map(|n| StackFrame {
                addr: 0x1000,
                sym: w.intern(n.as_bytes()),
                module: 0,
                build_id: 0,
            })
            .collect();
        w.add_stack(&Stack { kind, frames })
    };
    let commit = stack(&mut w, StackKind::User, &["main", "commit", "fsync"]);
    let checkpoint = stack(&mut w, StackKind::User, &["main", "checkpoint", "fsync"]);
    let journal = stack(
        &mut w,
        StackKind::Kernel,
        &["do_fsync", "ext4_sync_file", "jbd2_log_wait_commit"],
    );
    for i in 0..300u64 {
        let mut e = Event::syscall(START + i * 1_000_000, 20_000, 300, 300, 17, 4096);
        e.proc = db;
        if i % 3 != 2 {
            // fsync, 3 ms from commit, 1 ms from checkpoint.
            e.nr = 74;
            (e.latency, e.stack_user) = if i % 3 == 0 {
                (3_000_000, commit)
            } else {
                (1_000_000, checkpoint)
            };
            (e.wait, e.sleeps, e.stack_kernel) = (e.latency / 2, 1, journal);
        }
        w.push(&e).unwrap();
    }
    w.finish(START + 400_000_000).unwrap();
    path
}

/// `w` shows the flame graph of the view's calls in the list's place, the widest path first;
/// the arrows select a frame, Enter zooms in on it, Esc zooms out; `w` again goes to the
/// kernel stacks, then back to the list. A call's detail lists its stacks a frame a line.
#[test]
fn the_flame_pane_shows_the_views_stacks_and_zooms() {
    let dir = tempfile::tempdir().unwrap();
    let path = stacks_capture(dir.path());
    let (mut app, fx) = app_on(&path, 100, 30, "");
    settle(&mut app, fx);
    act(&mut app, Action::CycleFlame);
    let fx = app.update(Action::Resize(100, 30));
    settle(&mut app, fx);
    let area = app.layout.events;
    let pane = render_area(&draw(&app), area);
    assert!(pane.contains("flame graph by user stack"), "{pane}");
    assert!(pane.contains("200 calls"), "{pane}");
    // The 100 commits' 300 ms are three times the checkpoints' 100 ms: wider, and first.
    let row = |pane: &str, name: &str| pane.lines().position(|l| l.contains(name));
    let (commit, checkpoint) = (pane.find("commit").unwrap(), pane.find("checkpoint").unwrap());
    assert!(commit < checkpoint, "{pane}");
    assert_eq!(row(&pane, "commit"), row(&pane, "checkpoint"), "one depth: {pane}");
    assert!(row(&pane, "db") < row(&pane, "main"), "the root at the top: {pane}");
    // Select db, main, commit; zoom in: the checkpoints are gone from the picture.
    app.focus = Pane::Events;
    for _ in 0..3 {
        press(&mut app, KeyCode::Down);
    }
    let sel = app.flame.as_ref().unwrap().sel.clone();
    assert_eq!(sel, ["db", "main", "commit"]);
    press(&mut app, KeyCode::Enter);
    let zoomed = render_area(&draw(&app), area);
    assert!(!zoomed.contains("checkpoint"), "{zoomed}");
    assert!(
        zoomed.contains("commit: 300ms of latency, 75.0% of the graph's"),
        "{zoomed}"
    );
    press(&mut app, KeyCode::Esc);
    assert!(render_area(&draw(&app), area).contains("checkpoint"));
    // The kernel stacks, then the list again.
    act(&mut app, Action::CycleFlame);
    let fx = app.update(Action::Resize(100, 30));
    settle(&mut app, fx);
    let kernel = render_area(&draw(&app), area);
    assert!(
        kernel.contains("by kernel stack") && kernel.contains("jbd2_log_wait_commit"),
        "{kernel}"
    );
    act(&mut app, Action::CycleFlame);
    act(&mut app, Action::CycleFlame);
    assert!(app.flame.is_none());
    // The detail of an fsync: its stacks, innermost first.
    let fx = app.update(Action::Resize(100, 30));
    settle(&mut app, fx);
    press(&mut app, KeyCode::Enter);
    let detail = full(&app);
    let at = |s: &str| detail.find(s).unwrap_or_else(|| panic!("{s} missing: {detail}"));
    assert!(at("user stack  fsync") < at("main"), "{detail}");
    assert!(at("kernel stack  jbd2_log_wait_commit") < at("do_fsync"), "{detail}");
}

/// Comparing (`p` pins A), the flame pane is B's graph, each frame red where it holds more of
/// B's latency than of A's, blue where less; the last line gives both sides' figures.
#[test]
fn the_flame_pane_colours_b_against_a() {
    use ratatui::style::Color;
    let dir = tempfile::tempdir().unwrap();
    let path = stacks_capture(dir.path());
    // A: the commits only; B: every call.
    let (mut app, fx) = app_on(&path, 100, 30, "stack.user contains commit");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('p'));
    edit_filter(&mut app, "");
    let fx = app.update(Action::FilterSubmit);
    settle(&mut app, fx);
    act(&mut app, Action::CycleFlame);
    let fx = app.update(Action::Resize(100, 30));
    settle(&mut app, fx);
    let area = app.layout.events;
    let buf = draw(&app);
    let pane = render_area(&buf, area);
    assert!(pane.contains("red more than in A, blue less"), "{pane}");
    let bg = |name: &str| {
        let (row, line) = pane.lines().enumerate().find(|(_, l)| l.contains(name)).expect(name);
        let x = area.x + line[..line.find(name).unwrap()].chars().count() as u16;
        buf[(x, area.y + row as u16)].style().bg
    };
    let red = |c: Option<Color>| matches!(c, Some(Color::Indexed(196 | 203 | 210 | 217 | 224)));
    let blue = |c: Option<Color>| matches!(c, Some(Color::Indexed(33 | 75 | 117 | 153 | 189)));
    // commit: 75 % of B's latency against all of A's; checkpoint: 25 % against none.
    assert!(blue(bg("commit")), "{pane}");
    assert!(red(bg("checkpoint")), "{pane}");
    app.focus = Pane::Events;
    for _ in 0..3 {
        press(&mut app, KeyCode::Down);
    }
    let pane = render_area(&draw(&app), area);
    assert!(pane.contains("commit: B 300ms (75.0%), A 300ms (100.0%)"), "{pane}");
}

/// The list by time shows when each event completed, the order its rows are in (the recorder
/// writes events as they complete): on a real capture, `latency>10ms` reads in order, where the
/// start times (a call that began first and ended last) would not.
#[test]
fn the_list_by_time_shows_the_time_it_is_ordered_by() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mixed.cap");
    let (mut app, fx) = app_on(&path, 120, 40, "latency>10ms");
    settle(&mut app, fx);
    let pane = snap_pane(&app, app.layout.events);
    let times: Vec<f64> = pane
        .lines()
        .filter_map(|l| l.trim_start_matches('│').split_whitespace().next())
        .filter_map(|w| w.strip_prefix('+')?.strip_suffix('s')?.parse().ok())
        .collect();
    assert!(times.len() >= 5, "{pane}");
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}\n{pane}");
    assert!(pane.contains("END"), "{pane}");
    let starts: Vec<u64> = app.list.rows.iter().map(|(_, e)| e.ts).collect();
    assert!(
        starts.windows(2).any(|w| w[0] > w[1]),
        "the fixture has a call that began before one listed above it"
    );
}

/// At 80×24 a status line too long for the terminal (a long note, drops, the time range) is
/// cut with `…`, and the way to the keys stays at its right end.
#[test]
fn the_status_line_keeps_the_keys_hint_when_cut() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mixed.cap");
    let (mut app, fx) = app_on(&path, 80, 24, "");
    settle(&mut app, fx);
    let last = |app: &App| status_text(app);
    let short = last(&app);
    assert!(short.trim_end().ends_with("│ ?: keys"), "{short}");
    assert!(!short.contains("…│"), "nothing cut: {short}");
    app.note = Some("a note long enough to push everything after it past the terminal's edge".into());
    let long = last(&app);
    assert!(long.trim_end().ends_with("…│ ?: keys"), "{long}");
    assert_eq!(long.chars().count(), 80, "{long}");
}

/// The cursor starts where the events are (the busiest cell), so a first Enter filters to
/// them; `]` `[` go to the next slower / faster latency cell with events, `}` `{` a decade,
/// `>` to the slowest, each onto a row that holds some there; Enter on an empty cell with no
/// region keeps the filter.
#[test]
fn seek_keys_reach_the_events_in_a_press() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mixed.cap");
    let (mut app, fx) = app_on(&path, 80, 24, "");
    settle(&mut app, fx);
    let (lat, rows) = (app.layout.lat_cells, app.layout.time_cells);
    let count = |app: &App, t: usize, l: usize| app.view.grid.sum(t..t + 1, app.layout.cell_cols(l));
    let column = |app: &App, l: usize| app.view.grid.sum(0..rows, app.layout.cell_cols(l));
    let most = (0..rows)
        .flat_map(|t| (0..lat).map(move |l| (t, l)))
        .map(|(t, l)| count(&app, t, l))
        .max()
        .unwrap();
    assert!(most > 0);
    assert_eq!(
        count(&app, app.view.cursor_t, app.view.cursor_l),
        most,
        "on the busiest cell"
    );
    // The slowest, in one press.
    press(&mut app, KeyCode::Char('>'));
    let slowest = (0..lat).rev().find(|&l| column(&app, l) > 0).unwrap();
    assert_eq!(app.view.cursor_l, slowest);
    assert!(count(&app, app.view.cursor_t, slowest) > 0);
    // `[` back to the next faster cell with events, skipping the empty ones.
    press(&mut app, KeyCode::Char('['));
    let faster = (0..slowest).rev().find(|&l| column(&app, l) > 0).unwrap();
    assert_eq!(app.view.cursor_l, faster);
    press(&mut app, KeyCode::Char(']'));
    assert_eq!(app.view.cursor_l, slowest);
    // A decade: ten of the spectrogram's columns.
    for _ in 0..lat {
        press(&mut app, KeyCode::Left);
    }
    press(&mut app, KeyCode::Char('}'));
    assert!(
        app.layout.cell_cols(app.view.cursor_l).contains(&10),
        "{}",
        app.view.cursor_l
    );
    press(&mut app, KeyCode::Char('{'));
    assert_eq!(app.view.cursor_l, 0);
    // Nothing at 1 ns: Enter keeps the filter and says why.
    assert_eq!(count(&app, app.view.cursor_t, 0), 0);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "");
    assert!(app.note.as_deref().unwrap_or("").contains("no event under the cursor"));
    // On events, Enter filters to the cell: what it held.
    press(&mut app, KeyCode::Char('>'));
    let here = count(&app, app.view.cursor_t, app.view.cursor_l);
    press(&mut app, KeyCode::Enter);
    assert!(app.filter.applied.contains("latency>="), "{}", app.filter.applied);
    assert_eq!(app.answer.as_ref().unwrap().matched, here);
}

/// `f` opens a picker of the breakdown's fields and `M` one of the plot's measures: typing
/// narrows them (by name, then description), ↓ moves, Enter picks, Esc leaves all as it was;
/// nothing typed reaches the filter or the panes meanwhile.
#[test]
fn the_picker_finds_a_field_by_typing() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/mixed.cap");
    let (mut app, fx) = app_on(&path, 80, 24, "");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('f'));
    assert!(app.picker.is_some());
    type_text(&mut app, "disk");
    insta::assert_snapshot!("picker_80x24", text_of(&full(&app)));
    let names: Vec<&str> = app.picker.as_ref().unwrap().matches().iter().map(|f| f.name).collect();
    // Names with the word first, then descriptions that say it (the disk of a request).
    assert_eq!(names[..2], ["disk.requests", "disk.bytes"], "{names:?}");
    assert!(names.contains(&"blk.dev"), "{names:?}");
    press(&mut app, KeyCode::Esc);
    assert!(app.picker.is_none());
    assert_eq!(app.breakdown.field().name, "proc.name");
    assert_eq!(app.filter.applied, "", "typing in the picker is not the filter's");
    // Typed, moved, picked.
    press(&mut app, KeyCode::Char('f'));
    type_text(&mut app, "evt.");
    press(&mut app, KeyCode::Down);
    let want = app.picker.as_ref().unwrap().matches()[1].name;
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.breakdown.field().name, want);
    // Nothing matches: Enter keeps it open.
    press(&mut app, KeyCode::Char('f'));
    type_text(&mut app, "zzz");
    press(&mut app, KeyCode::Enter);
    assert!(app.picker.is_some());
    press(&mut app, KeyCode::Esc);
    // The measure: any duration, here a reason's part of the wait.
    press(&mut app, KeyCode::Char('M'));
    type_text(&mut app, "wait jour");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.view.measure.field(), "wait.journal");
    let titles = full(&app).lines().nth(1).unwrap().to_string();
    assert!(titles.contains("Latency, calls wait.journal"), "{titles}");
}

/// The text of a `full` screen, without its styles.
fn text_of(screen: &str) -> String {
    screen.split("--- styles ---").next().unwrap().to_owned()
}

/// With a filter naming a process, the status line says how many of the view's drops were its
/// events; without one, or on a capture that does not say whose they were, only the count.
#[test]
fn the_status_line_says_whose_drops_a_named_process_lost() {
    use iocap_format::{DropStats, ProcDropStats, ProcDrops};
    const S: u64 = 1_000_000_000;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, placed: bool| {
        let path = dir.path().join(name);
        let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(S), 64, 1);
        let pg = iocap_testkit::add_proc(&mut w, 123, 1, b"postgres");
        let dd = iocap_testkit::add_proc(&mut w, 77, 1, b"dd");
        for i in 0..20u64 {
            let ts = S + i * 100_000_000;
            w.push(&Event {
                proc: pg,
                ..Event::syscall(ts, 1_000, 123, 123, 1, 4096)
            })
            .unwrap();
            w.push(&Event {
                proc: dd,
                ..Event::syscall(ts + 1, 500, 77, 77, 0, 1)
            })
            .unwrap();
        }
        w.record_drops(&DropStats {
            ts: S + S / 2,
            per_cpu: vec![1_000, 1_000],
        })
        .unwrap();
        if placed {
            let procs = vec![
                ProcDrops {
                    pid: 77,
                    proc: dd,
                    count: 1_998,
                },
                ProcDrops {
                    pid: 123,
                    proc: pg,
                    count: 2,
                },
            ];
            w.record_drops_by_process(&ProcDropStats { ts: S + S / 2, procs })
                .unwrap();
        }
        w.finish(3 * S).unwrap();
        path
    };
    for (placed, filter, want) in [
        (true, "proc.name=postgres", "drops 2,000 (2 theirs)"),
        (true, "proc.pid=77", "drops 2,000 (1,998 theirs)"),
        (true, "", "drops 2,000 │"),
        (true, "latency>1ns", "drops 2,000 │"),
        (false, "proc.name=postgres", "drops 2,000 │"),
    ] {
        let path = write(if placed { "placed.cap" } else { "old.cap" }, placed);
        let (mut app, fx) = app_on(&path, 100, 30, filter);
        settle(&mut app, fx);
        let status = status_text(&app);
        assert!(status.contains(want), "{filter}: {status}");
    }
}
