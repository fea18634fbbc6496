//! Comparisons (issue #16): two captures side by side (`iocap view a.cap b.cap`), and two
//! filters of one capture (`p` pins the filter as side A, the bar edits B). Each side's figures
//! are checked against the same capture viewed alone, so what the panes compare is what each
//! side holds, cell by cell.

use super::*;
use iocap_tui::compare::Align;
use iocap_tui::panes::filter_bar::FilterBar;

/// The spread of each side's events: 2 s.
const SPAN: u64 = 2_000_000_000;
/// postgres's reads, the same on both sides: 200, at 10 µs.
const PG: u64 = 200;

/// A capture in `dir` named `name`, recorded from boot time `start` with the wall clock at
/// `boot_to_wall`: postgres's [`PG`] reads at 10 µs, then `fio` reads at `fio_ns`, each spread
/// evenly over [`SPAN`].
fn side(dir: &Path, name: &str, start: u64, boot_to_wall: i64, fio: u64, fio_ns: u64) -> PathBuf {
    let path = dir.join(name);
    let meta = Meta {
        boot_to_wall_ns: boot_to_wall,
        ..iocap_testkit::meta(start)
    };
    let mut w = iocap_testkit::create(&path, &meta, 64, 1);
    let pg = add_proc(&mut w, 200, 1, b"postgres");
    let f = add_proc(&mut w, 100, 1, b"fio");
    let mut events: Vec<Event> = (0..PG)
        .map(|i| Event {
            proc: pg,
            ..Event::syscall(start + i * (SPAN / PG), 10_000, 200, 200, 0, 8192)
        })
        .chain((0..fio).map(|i| Event {
            proc: f,
            ..Event::syscall(start + i * (SPAN / fio) + 1_000, fio_ns, 100, 100, 0, 4096)
        }))
        .collect();
    events.sort_by_key(|e| e.ts);
    for e in &events {
        w.push(e).unwrap();
    }
    w.finish(start + SPAN).unwrap();
    path
}

/// Wall clocks far apart: two captures taken a day apart.
const DAY: i64 = 86_400_000_000_000;

/// Before: 200 fio reads at 100 µs. After (a day later, another boot): 300 at 1 ms.
fn before_after(dir: &Path) -> (PathBuf, PathBuf) {
    let wall = 1_700_000_000_000_000_000;
    (
        side(dir, "before.cap", 3_000_000_000, wall, 200, 100_000),
        side(dir, "after.cap", 9_000_000_000, wall + DAY, 300, 1_000_000),
    )
}

/// The viewer comparing `a` (side A) with `b` (side B) in a `w`×`h` terminal, under `filter`.
fn comparing(a: &Path, b: &Path, w: u16, h: u16, filter: &str) -> App {
    let open = |p: &Path| Capture::new(Arc::new(Reader::open(p).unwrap()), Path::new(p.file_name().unwrap()));
    let (a, b) = (open(a), open(b));
    let bar = FilterBar::new(filter, &b.reader, History::in_memory(Vec::new())).unwrap();
    let (mut app, fx) = App::comparing(a, b, bar, Rect::new(0, 0, w, h), Palette::Classic);
    settle(&mut app, fx);
    app
}

/// The plot's cells as drawn: `[time cell][latency cell]` glyphs.
fn plot_glyphs(app: &App, plot: Rect) -> Vec<Vec<String>> {
    let buf = draw(app);
    (0..app.layout.time_cells)
        .map(|t| {
            (0..app.layout.lat_cells)
                .map(|l| buf[(plot.x + l as u16, plot.y + t as u16)].symbol().to_owned())
                .collect()
        })
        .collect()
}

/// Counts per display cell of `app`'s spectrogram (side B's, or the capture's viewed alone).
fn counts(app: &App, grid: &iocap_tui::panes::spectrogram::grid::Grid) -> Vec<Vec<u64>> {
    (0..app.layout.time_cells)
        .map(|t| {
            (0..app.layout.lat_cells)
                .map(|l| grid.sum(t..t + 1, app.layout.cell_cols(l)))
                .collect()
        })
        .collect()
}

/// The breakdown's rows as drawn: value, A, B, Δ.
fn breakdown_rows(app: &App) -> Vec<Vec<String>> {
    let text = snap_pane(app, app.layout.breakdown);
    let text = text.split("--- styles ---").next().unwrap();
    text.lines()
        .skip(2)
        .map(|l| {
            l.trim_matches('│')
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|r| r.len() == 4)
        .collect()
}

#[test]
fn two_captures_difference_map_is_each_sides_cells_subtracted() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = before_after(dir.path());
    let app = comparing(&before, &after, 120, 40, "");
    let c = app.compare.as_ref().unwrap();
    // A day apart: each from its own start.
    assert_eq!(c.align, Align::Start);
    assert_eq!(c.offset, 3_000_000_000 - 9_000_000_000);
    // Each capture alone, in the same terminal: the same rows (both last 2 s).
    let alone = |p: &Path| {
        let (mut a, fx) = app_on(p, 120, 40, "");
        // The comparison's line takes a row: the same plot needs the same rows.
        act(&mut a, Action::Resize(120, 39));
        settle(&mut a, fx);
        a
    };
    let (a_alone, b_alone) = (alone(&before), alone(&after));
    assert_eq!(a_alone.layout.time_cells, app.layout.time_cells);
    assert_eq!(a_alone.view.interval, app.view.interval);
    let (a, b) = (
        counts(&a_alone, &a_alone.view.grid),
        counts(&b_alone, &b_alone.view.grid),
    );
    assert_eq!(counts(&app, &c.grid), a, "side A's cells are before.cap's");
    assert_eq!(counts(&app, &app.view.grid), b, "side B's cells are after.cap's");
    // Every cell drawn says the sign of B − A: + where B has more, - where A has, · where both
    // have the same events, blank where neither has any.
    let glyphs = plot_glyphs(&app, app.layout.plot);
    let mut seen = std::collections::BTreeSet::new();
    for t in 0..app.layout.time_cells {
        for l in 0..app.layout.lat_cells {
            let want = match b[t][l].cmp(&a[t][l]) {
                std::cmp::Ordering::Greater => "+",
                std::cmp::Ordering::Less => "-",
                std::cmp::Ordering::Equal if b[t][l] > 0 => "·",
                std::cmp::Ordering::Equal => " ",
            };
            assert_eq!(glyphs[t][l], want, "cell ({t}, {l}): A {} B {}", a[t][l], b[t][l]);
            seen.insert(want);
        }
    }
    // fio moved from 100 µs to 1 ms (- then +); postgres stayed (·).
    assert!(["+", "-", "·"].iter().all(|g| seen.contains(g)), "{seen:?}");
    // The histogram's title counts each side; the breakdown lays them side by side.
    let hist = snap_pane(&app, app.layout.hist);
    assert!(hist.contains("A 400 B 500"), "{hist}");
    assert_eq!(
        breakdown_rows(&app),
        [["fio", "200", "300", "+100"], ["postgres", "200", "200", "0"]]
    );
}

#[test]
fn a_capture_against_itself_differs_nowhere() {
    let dir = tempfile::tempdir().unwrap();
    let path = capture(dir.path());
    let app = comparing(&path, &path, 120, 40, "");
    let c = app.compare.as_ref().unwrap();
    // The same file overlaps itself: laid by wall clock, at no offset.
    assert_eq!((c.align, c.offset), (Align::Wall, 0));
    let glyphs = plot_glyphs(&app, app.layout.plot);
    let drawn: Vec<&String> = glyphs.iter().flatten().collect();
    assert!(drawn.iter().all(|g| *g == " " || *g == "·"), "{drawn:?}");
    assert!(drawn.iter().any(|g| *g == "·"));
    // Each figure the same on both sides, none flagged; every Δ 0.
    let hist = snap_pane(&app, app.layout.hist);
    let line = |side: &str| {
        hist.lines()
            .find_map(|l| l.trim_start_matches('│').strip_prefix(side).map(str::to_owned))
            .unwrap_or_else(|| panic!("no {side:?} line in\n{hist}"))
    };
    assert_eq!(line("A "), line("B "));
    assert!(!hist.contains('*'), "{hist}");
    let rows = breakdown_rows(&app);
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r[3] == "0" && r[1] == r[2]), "{rows:?}");
}

#[test]
fn p_pins_the_filter_as_a_and_the_bar_edits_b() {
    let dir = tempfile::tempdir().unwrap();
    let (_, after) = before_after(dir.path());
    let (mut app, fx) = app_on(&after, 100, 30, "proc.name=postgres");
    settle(&mut app, fx);
    press(&mut app, KeyCode::Char('p'));
    let c = app.compare.as_ref().unwrap();
    assert_eq!(
        (c.align, c.pinned.as_deref()),
        (Align::Same, Some("proc.name=postgres"))
    );
    press(&mut app, KeyCode::Char('/'));
    for _ in 0.."postgres".len() {
        press(&mut app, KeyCode::Backspace);
    }
    type_text(&mut app, "fio");
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "proc.name=fio");
    let a = app.compare_answer().expect("A answered the same question");
    assert_eq!((a.hist.count(), app.hist().unwrap().count()), (PG, 300));
    assert_eq!(
        breakdown_rows(&app),
        [["fio", "0", "300", "+300"], ["postgres", "200", "0", "-200"]]
    );
    // A brushed region narrows both sides: the first two rows, at every latency.
    press(&mut app, KeyCode::Char('v'));
    for _ in 0..app.layout.lat_cells {
        press(&mut app, KeyCode::Right);
    }
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    let clause = app
        .filter
        .applied
        .strip_prefix("proc.name=fio and ")
        .expect("narrowed")
        .to_owned();
    let pinned = app.compare.as_ref().unwrap().pinned.clone().unwrap();
    assert_eq!(pinned, format!("proc.name=postgres and {clause}"));
    // Each side's count is its filter's, viewed alone.
    let alone = |filter: &str| {
        let (mut a, fx) = app_on(&after, 100, 30, filter);
        settle(&mut a, fx);
        a.hist().unwrap().count()
    };
    let a = app.compare_answer().unwrap();
    assert_eq!(a.hist.count(), alone(&pinned));
    assert_eq!(app.hist().unwrap().count(), alone(&app.filter.applied));
    // Undo takes the region back from both sides.
    press(&mut app, KeyCode::Char('u'));
    assert_eq!(app.filter.applied, "proc.name=fio");
    let c = app.compare.as_ref().unwrap();
    assert_eq!(c.pinned.as_deref(), Some("proc.name=postgres"));
    assert_eq!(app.compare_answer().unwrap().hist.count(), PG);
    // p again ends the comparison, the bar's filter in force.
    press(&mut app, KeyCode::Char('p'));
    assert!(app.compare.is_none());
    assert!(!full(&app).contains("B−A"));
}

#[test]
fn overlapping_captures_are_laid_by_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    let wall = 1_700_000_000_000_000_000;
    // A from boot 1 s, B from boot 5 s with its clock 3.5 s behind: B starts 0.5 s after A.
    let a = side(dir.path(), "a.cap", 1_000_000_000, wall, 200, 100_000);
    let b = side(dir.path(), "b.cap", 5_000_000_000, wall - 3_500_000_000, 200, 100_000);
    let app = comparing(&a, &b, 120, 40, "");
    let c = app.compare.as_ref().unwrap();
    assert_eq!((c.align, c.offset), (Align::Wall, -3_500_000_000));
    assert_eq!(c.a_time(5_000_000_000), 1_500_000_000);
    // A's rows are its events at the same wall-clock times as B's rows: its first 0.5 s is
    // before B's start, out of the view.
    let row = |t: usize| app.view.start + app.view.interval * t as u64;
    let a_ts: Vec<u64> = (0..PG)
        .map(|i| 1_000_000_000 + i * (SPAN / PG))
        .chain((0..200).map(|i| 1_000_000_000 + i * (SPAN / 200) + 1_000))
        .collect();
    for t in 0..app.layout.time_cells {
        let (lo, hi) = (c.a_time(row(t)), c.a_time(row(t + 1)));
        let want = a_ts.iter().filter(|&&ts| (lo..hi).contains(&ts)).count() as u64;
        assert_eq!(c.grid.sum(t..t + 1, 0..usize::MAX), want, "row {t}");
    }
    assert!(full(&app).contains("aligned by wall clock, A from -500ms"));
}

#[test]
fn comparison_panes_at_80x24_and_200x60() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = before_after(dir.path());
    for (w, h) in [(80, 24), (200, 60)] {
        let mut app = comparing(&before, &after, w, h, "");
        insta::assert_snapshot!(format!("compare_difference_{w}x{h}"), full(&app));
        press(&mut app, KeyCode::Char('b'));
        insta::assert_snapshot!(format!("compare_side_by_side_{w}x{h}"), full(&app));
    }
}
