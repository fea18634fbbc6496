//! The panes on the capture of an investigation (issue #14): 40 s of a benchmark reading 32
//! files of one long directory (fast from the cache, slow from the disk), a database's
//! `rt_sigprocmask`, `io_getevents` and failing `openat`, `mmap` returning addresses, and block
//! requests of four sizes, some of them flushed by a kernel thread. Each test drives the app
//! with keys as a user would, at 80×24 and 200×60.

use super::*;
use iocap_format::{blk_flags, Cause, ProcEntry};

/// When the recording started, ns since boot.
const T0: u64 = 5_000_000_000;
/// How long it lasted.
const SPAN: u64 = 40_000_000_000;
/// One event every 10 ms: 4,000.
const STEP: u64 = 10_000_000;
const EVENTS: u64 = SPAN / STEP;
/// The benchmark's directory: longer than any cell that shows it at 80 columns.
const DIR: &str = "/srv/data/benchmarks/run-2024-05-01/fio-job";
/// Where `mmap` maps.
const MAP: i64 = 0x7f3a_1234_5000;
/// The block request sizes, in turn.
const SIZES: [u64; 4] = [4096, 8192, 65536, 131072];

/// Process `pid`, child of `ppid`, named `name`, started with `cmdline`.
fn proc(w: &mut iocap_format::Writer<std::fs::File>, pid: u32, ppid: u32, name: &[u8], cmdline: &[u8]) -> u32 {
    let (name, cmdline) = (w.intern(name), w.intern(cmdline));
    w.add_proc(ProcEntry {
        pid,
        ppid,
        name,
        cmdline,
        ..ProcEntry::default()
    })
}

/// Write the capture into `dir`: event `i` at `T0 + i × STEP` is, by `i % 8`: fio's `pread64`
/// of file `i / 8 % 32` (20 µs, one in three 8 ms), a block request of fio's (`SIZES` in turn,
/// a write with `sync` one in five, queued 100 µs or 2 ms), postgres's `rt_sigprocmask`,
/// `io_getevents` and `openat` failing with ENOENT, fio's `mmap`, a flusher's 128 KiB write,
/// fio's `pwrite64`.
fn investigation(dir: &Path) -> PathBuf {
    let path = dir.join("investigation.cap");
    let meta = Meta {
        command_line: Vec::new(),
        ..iocap_testkit::meta(T0)
    };
    let mut w = iocap_testkit::create(&path, &meta, 512, 1);
    proc(&mut w, 1, 0, b"systemd", b"/sbin/init");
    let fio = proc(
        &mut w,
        100,
        1,
        b"fio",
        b"fio --name=randread --bs=4k --directory=/srv/data",
    );
    let pg = proc(&mut w, 200, 1, b"postgres", b"postgres: checkpointer");
    let flusher = proc(&mut w, 50, 2, b"kworker/u8:2-flush-254:0", b"");
    let files: Vec<u32> = (0..32)
        .map(|k| {
            let name = format!("{DIR}/file-{k}");
            add_file(&mut w, 100, 10 + k, FdType::File, name.as_bytes(), VDA)
        })
        .collect();
    for i in 0..EVENTS {
        let ts = T0 + i * STEP;
        let k = (i / 8) as usize;
        let file = files[k % 32];
        let call = |nr: u32, latency: u64, pid: u32, proc: u32, ret: i64| Event {
            proc,
            ..Event::syscall(ts, latency, pid, pid, nr, ret)
        };
        let e = match i % 8 {
            0 => Event {
                fd: 10 + (k % 32) as i32,
                file,
                bytes: 4096,
                ..call(17, if k.is_multiple_of(3) { 8_000_000 } else { 20_000 }, 100, fio, 4096)
            },
            1 => {
                let write = k.is_multiple_of(5);
                // Sequential two times in three, as biopattern would see a readahead.
                let pattern = match k % 3 {
                    0 => blk_flags::RANDOM,
                    _ => blk_flags::SEQUENTIAL,
                };
                Event {
                    op: u8::from(write),
                    flags: if write { blk_flags::SYNC | pattern } else { pattern },
                    queue: if k.is_multiple_of(2) { 100_000 } else { 2_000_000 },
                    sector: k as u64 * 256,
                    file,
                    ..block(ts, 300_000, 100, fio, VDA, SIZES[k % 4])
                }
            }
            2 => call(14, 500, 200, pg, 0),
            3 => call(208, 1_000_000, 200, pg, 1),
            4 => call(257, 3_000, 200, pg, -2),
            5 => call(9, 2_000, 100, fio, MAP + i as i64 * 4096),
            6 => Event {
                op: 1,
                cause: Cause::Writeback as u8,
                file: files[0],
                ..block(ts, 1_000_000, 50, flusher, VDA, 131_072)
            },
            _ => Event {
                fd: 10 + (k % 32) as i32,
                file,
                bytes: 4096,
                ..call(18, 50_000, 100, fio, 4096)
            },
        };
        w.push(&e).unwrap();
    }
    w.finish(T0 + SPAN).unwrap();
    path
}

/// An app on the investigation's capture in a `w`×`h` terminal, answered.
fn open(w: u16, h: u16, filter: &str) -> (tempfile::TempDir, App) {
    let dir = tempfile::tempdir().unwrap();
    let path = investigation(dir.path());
    let (mut app, fx) = app_on(&path, w, h, filter);
    settle(&mut app, fx);
    (dir, app)
}

/// The text of `area` on screen, without the styles.
fn text(app: &App, area: Rect) -> String {
    let s = snap_pane(app, area);
    s.split("--- styles ---").next().unwrap().to_owned()
}

/// Group the breakdown by `name`, as a user would: `f`, the name typed, Enter.
fn group_by(app: &mut App, name: &str) {
    press(app, KeyCode::Char('f'));
    for c in name.chars() {
        press(app, KeyCode::Char(c));
    }
    press(app, KeyCode::Enter);
    assert!(app.picker.is_none(), "picked");
    assert_eq!(app.breakdown.field().name, name, "the breakdown does not offer {name}");
}

/// The breakdown offers every field whose values are few enough to group, in `f`'s order, and
/// none that holds a value per event; pids read with their process's name and sizes in K, and
/// Enter on a row filters on its exact value.
#[test]
fn breakdown_offers_every_field_with_few_values() {
    let names: Vec<&str> = iocap_tui::panes::breakdown::group_fields()
        .iter()
        .map(|f| f.name)
        .collect();
    assert_eq!(
        names,
        [
            "proc.name",
            "evt.type",
            "fd.name",
            "blk.dev",
            "fd.type",
            "container.name",
            "proc.pid",
            "io.dir",
            "evt.errno",
            "proc.ppid",
            "proc.exe",
            "proc.cmdline",
            "proc.cgroup",
            "container.id",
            "container.full_id",
            "container.runtime",
            "container.image",
            "k8s.pod.name",
            "k8s.pod.uid",
            "k8s.ns.name",
            "user.uid",
            "user.name",
            "thread.tid",
            "evt.class",
            "evt.cpu",
            "fd.num",
            "fd.directory",
            "fd.filename",
            "fd.dev",
            "io.bytes",
            "blk.op",
            "blk.bytes",
            "blk.flags",
            "blk.queued",
            "blk.prio",
            "blk.pattern",
            "blk.cause",
            "blk.syscall",
            "disk.requests",
            "disk.bytes",
            "wait.count",
            "waker.tid",
            "waker.proc.name",
            "stack.user",
            "stack.kernel",
            "stack.top",
            "wait.reason",
        ]
    );
    let (_dir, mut app) = open(80, 24, "");
    let pane = |app: &App| text(app, app.layout.breakdown);
    // `F` goes round every field and back.
    for &name in &names[1..] {
        press(&mut app, KeyCode::Char('F'));
        assert_eq!(app.breakdown.field().name, name);
    }
    press(&mut app, KeyCode::Char('F'));
    assert_eq!(app.breakdown.field().name, "proc.name");

    group_by(&mut app, "proc.pid");
    let by_pid = pane(&app);
    assert!(by_pid.contains("100 fio "), "{by_pid}");
    assert!(by_pid.contains("200 postgres "), "{by_pid}");
    insta::assert_snapshot!("breakdown_by_pid_80x24", snap_pane(&app, app.layout.breakdown));
    group_by(&mut app, "proc.ppid");
    assert!(pane(&app).contains("1 systemd "), "{}", pane(&app));
    group_by(&mut app, "proc.cmdline");
    assert_eq!(
        app.groups()[0].label,
        "fio --name=randread --bs=4k --directory=/srv/data"
    );
    // Cut in the middle: what it runs and on what.
    assert!(pane(&app).contains("fio -…=/srv/data "), "{}", pane(&app));
    group_by(&mut app, "blk.flags");
    assert!(pane(&app).contains("sync "), "{}", pane(&app));
    // Sequential and random (biopattern): fio's 500 requests, two in three sequential.
    group_by(&mut app, "blk.pattern");
    let patterns: Vec<(&str, u64)> = app.groups().iter().map(|g| (g.value.as_str(), g.count)).collect();
    assert_eq!(patterns, [("", 3500), ("sequential", 333), ("random", 167)]);
    assert!(pane(&app).contains("sequential "), "{}", pane(&app));

    // Request sizes, biggest group first: the flusher's and a quarter of fio's are 128 KiB.
    group_by(&mut app, "blk.bytes");
    let sizes: Vec<&str> = app.groups().iter().map(|g| g.label.as_str()).collect();
    assert_eq!(sizes, ["", "128K", "4.0K", "64.0K", "8.0K"]);
    let by_size = pane(&app);
    assert!(by_size.contains("128K") && by_size.contains("<NA>"), "{by_size}");
    app.focus = Pane::Breakdown;
    press(&mut app, KeyCode::Down);
    press(&mut app, KeyCode::Enter);
    assert_eq!(app.filter.applied, "blk.bytes=131072");
    assert_eq!(app.answer.as_ref().unwrap().matched, EVENTS / 8 + EVENTS / 8 / 4);
}

/// The time axis ends with the capture: the first view shows the 40 s and not beyond, zooming
/// out stops there, and neither the wheel, the page keys nor End scroll past either end.
#[test]
fn the_time_axis_ends_with_the_capture() {
    let (_dir, mut app) = open(80, 24, "");
    let status = |app: &App| text(app, app.layout.status);
    assert!(status(&app).contains("│ +0.000s…+40.000s │"), "{}", status(&app));
    let whole = (app.view.start, app.view.interval);
    assert!(app.shows_all());
    // The last row holds the capture's end; a row less would not.
    let rows = app.layout.time_cells as u64;
    assert!(app.view.start + rows * app.view.interval >= T0 + SPAN);
    assert!(app.view.start + (rows - 1) * app.view.interval < T0 + SPAN);
    // Already all of it: zooming out and scrolling change nothing.
    press(&mut app, KeyCode::Char('-'));
    let wheel = |app: &mut App, down: bool| {
        let kind = if down {
            MouseEventKind::ScrollDown
        } else {
            MouseEventKind::ScrollUp
        };
        let (x, y) = (app.layout.plot.x, app.layout.plot.y);
        mouse(app, kind, x, y);
    };
    for _ in 0..20 {
        wheel(&mut app, true);
    }
    press(&mut app, KeyCode::PageDown);
    press(&mut app, KeyCode::End);
    assert_eq!((app.view.start, app.view.interval), whole);

    // Zoomed in, the wheel stops with the last row on the capture's end, and at its start.
    for _ in 0..4 {
        press(&mut app, KeyCode::Char('+'));
    }
    assert!(app.view.interval < whole.1);
    for _ in 0..200 {
        wheel(&mut app, true);
    }
    let end = app.view.start + rows * app.view.interval;
    assert!(end >= T0 + SPAN && end - app.view.interval < T0 + SPAN, "{end}");
    assert!(status(&app).contains("…+40.000s │"), "{}", status(&app));
    press(&mut app, KeyCode::PageDown);
    assert_eq!(app.view.start + rows * app.view.interval, end);
    for _ in 0..200 {
        wheel(&mut app, false);
    }
    assert_eq!(app.view.start, T0);
    press(&mut app, KeyCode::End);
    assert_eq!(app.view.start + rows * app.view.interval, end);
    // Zooming out ends on the whole capture again.
    for _ in 0..20 {
        press(&mut app, KeyCode::Char('-'));
    }
    assert_eq!((app.view.start, app.view.interval), whole);
}

/// Zoomed in, the histogram, breakdown and list say they count the view, of how many match in
/// all; zoomed out, that they count every match; the status line counts every match.
#[test]
fn side_panes_say_what_they_count() {
    let (_dir, mut app) = open(120, 40, "evt.type=pread64");
    let titles = |app: &App| {
        let l = app.layout;
        [l.hist, l.breakdown, l.events].map(|a| text(app, a).lines().next().unwrap().to_owned())
    };
    let [hist, by, list] = titles(&app);
    assert!(hist.contains(" Latency, 500 (all) "), "{hist}");
    assert!(by.contains("(1, all)"), "{by}");
    assert!(list.contains(" Events 1/500 (all), "), "{list}");
    for _ in 0..3 {
        press(&mut app, KeyCode::Char('+'));
    }
    assert!(!app.shows_all());
    let a = app.answer.as_ref().unwrap();
    assert!(a.matched > 0 && a.matched < 500, "{}", a.matched);
    let n = iocap_analysis::units::count(a.matched);
    let [hist, by, list] = titles(&app);
    assert!(hist.contains(&format!(" Latency, {n} in view of 500 ")), "{hist}");
    assert!(by.contains("(1, in view)"), "{by}");
    assert!(list.contains(&format!(" Events 1/{n} in view of 500, ")), "{list}");
    let status = text(&app, app.layout.status);
    assert!(status.contains("│ 500/4,000 │"), "{status}");
    insta::assert_snapshot!("in_view_120x40", full(&app));
}

/// At 80×24: the histogram keeps enough bars for a bimodal latency to show as two modes with a
/// gap, the breakdown's paths of one directory stay apart (cut in the middle), and the list
/// names errors and shows mmap's addresses in hex. At 200×60 the list's TYPE holds the longest
/// name in view.
#[test]
fn names_and_shapes_at_80x24_and_200x60() {
    let (_dir, mut app) = open(80, 24, "evt.type=pread64");
    // pread64: 20 µs from the cache, 8 ms from the disk.
    let hist = text(&app, app.layout.hist);
    // Each bar row (a duration, then its bar if any): whether it has a bar.
    let counts: Vec<bool> = hist
        .lines()
        .filter_map(|l| {
            let label: String = l.strip_prefix('│')?.chars().take(6).collect();
            let label = label.trim();
            let duration = label.starts_with(|c: char| c.is_ascii_digit()) && label.ends_with('s');
            duration.then(|| l.contains('█'))
        })
        .collect();
    let first = counts.iter().position(|&c| c).unwrap();
    let last = counts.iter().rposition(|&c| c).unwrap();
    assert!(
        last > first + 1 && counts[first..=last].contains(&false),
        "two modes and a gap between them:\n{hist}"
    );
    insta::assert_snapshot!("bimodal_80x24", full(&app));

    // Every file of the directory reads apart from the others in the breakdown's cells.
    group_by(&mut app, "fd.name");
    assert_eq!(app.groups().len(), 32);
    app.focus = Pane::Breakdown;
    let mut seen = std::collections::HashSet::new();
    for _ in 0..32 {
        let pane = text(&app, app.layout.breakdown);
        // The selected row is the last one shown once the selection passes the pane's height.
        let sel = app.breakdown.sel;
        let top = sel.saturating_sub(app.layout.breakdown.height as usize - 4);
        let row = pane.lines().nth(2 + sel - top).unwrap();
        let value = row
            .trim_start_matches('│')
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned();
        assert!(value.contains('…') && value.starts_with("/srv"), "{row}");
        seen.insert(value);
        press(&mut app, KeyCode::Down);
    }
    assert_eq!(seen.len(), 32, "{seen:?}");

    let (_dir, app) = open(80, 24, "evt.type=openat or evt.type=mmap");
    let list = text(&app, app.layout.events);
    assert!(list.contains(" ENOENT "), "{list}");
    assert!(list.contains(" 0x7f3a…"), "{list}");
    insta::assert_snapshot!("errors_and_addresses_80x24", snap_pane(&app, app.layout.events));

    // Wide: TYPE as wide as `rt_sigprocmask`, paths whole.
    let (_dir, app) = open(200, 60, "proc.name=postgres or evt.type=pread64");
    let list = text(&app, app.layout.events);
    assert!(list.contains(" rt_sigprocmask "), "{list}");
    assert!(list.contains(" io_getevents "), "{list}");
    assert!(list.contains(&format!(" {DIR}/file-0 ")), "{list}");
    insta::assert_snapshot!("investigation_200x60", full(&app));
    let (_dir, app) = open(80, 24, "");
    insta::assert_snapshot!("investigation_80x24", full(&app));
}

/// `i` shows iostat's figures for the view in place of the list, the same numbers
/// `iocap_analysis::IoStat` gives for the matching block requests issued in the view, and `i`
/// again brings the list back.
#[test]
fn i_shows_iostat_of_the_view() {
    let (_dir, mut app) = open(80, 24, "");
    for _ in 0..2 {
        press(&mut app, KeyCode::Char('+'));
    }
    press(&mut app, KeyCode::PageDown);
    assert!(!app.shows_all());
    press(&mut app, KeyCode::Char('i'));
    assert!(app.iostat);
    let (start, end) = (app.view.start, app.view_end());
    let got = app.answer.as_ref().unwrap().iostat.clone().expect("asked for");
    // The same figures from a plain pass over the requests issued in the view.
    let mut want = iocap_analysis::IoStat::new(start, end, end - start).unwrap();
    let r = &app.cap.reader;
    let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
    for ci in 0..r.chunks().len() {
        r.read_chunk(ci, iocap_format::ColSet::ALL, &mut dec, &mut cols)
            .unwrap();
        for i in 0..cols.len() {
            let e = cols.event(i);
            if e.class == iocap_format::Class::Block && (start..end).contains(&e.ts) {
                let op = iocap_format::BlockOp::from_code(e.op);
                want.add(e.dev, op, e.bytes, e.ts, e.queue, e.latency);
            }
        }
    }
    assert_eq!(got, want.totals());
    assert_eq!(got.len(), 1);
    assert!(
        got[0].reads > 0 && got[0].writes > 0 && got[0].util_pct > 0.0,
        "{got:?}"
    );
    let pane = text(&app, app.layout.events);
    assert!(pane.contains("iostat of +") && pane.contains(" in view"), "{pane}");
    assert!(pane.lines().any(|l| l.starts_with("│vda ")), "{pane}");
    insta::assert_snapshot!("iostat_80x24", snap_pane(&app, app.layout.events));
    // A filter narrows the figures to its requests: the flusher's writes only.
    press(&mut app, KeyCode::Char('/'));
    type_text(&mut app, "blk.cause=writeback");
    press(&mut app, KeyCode::Enter);
    let d = &app.answer.as_ref().unwrap().iostat.as_ref().unwrap()[0];
    assert_eq!(d.reads, 0);
    assert!(d.writes > 0);
    press(&mut app, KeyCode::Char('i'));
    assert!(!app.iostat);
    assert!(text(&app, app.layout.events).contains(" Events 1/"));
}
