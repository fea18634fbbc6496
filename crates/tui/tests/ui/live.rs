//! A capture being recorded: a writer in this process holds the recorder's lock and flushes
//! chunks, a reader of the test's own plays the follower thread (refresh, snapshot), and the app
//! takes each snapshot as the event loop would. The worker's extension of its last answer must
//! give what a fresh scan of the grown capture gives, reading only the new chunks; the view and
//! the list follow the newest rows until the user moves back, and End resumes.

use super::*;
use iocap_format::{Liveness, Writer};
use iocap_tui::action::Move;
use iocap_tui::worker::{next_capture, Grown, NextFile, Reply as R};

/// One event a millisecond.
const STEP: u64 = 1_000_000;

/// A recording in progress: the file, its writer (holding the lock), and the follower's reader.
struct Recording {
    path: PathBuf,
    w: Option<Writer<std::fs::File>>,
    pg: u32,
    fio: u32,
    file: u32,
    /// Events written so far.
    n: u64,
    follower: Option<Reader>,
}

impl Recording {
    /// A new capture in `dir`, locked as the recorder locks it, with its header and tables
    /// flushed and no event yet.
    fn start(dir: &Path) -> Recording {
        Recording::start_as(dir, "live.cap", None)
    }

    /// [`Recording::start`] as file `name`, which names `next` as the next file of its
    /// rotation.
    fn start_as(dir: &Path, name: &str, next: Option<&str>) -> Recording {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        iocap_format::lock_for_writing(&file).unwrap();
        let meta = Meta {
            command_line: Vec::new(),
            next_file: next.map(str::to_owned),
            ..iocap_testkit::meta(START)
        };
        let opts = iocap_format::WriterOptions {
            chunk_events: 250,
            level: 1,
        };
        let mut w = Writer::new(file, &meta, opts).unwrap();
        let pg = add_proc(&mut w, 200, 1, b"postgres");
        let fio = add_proc(&mut w, 100, 1, b"fio");
        let file = add_file(&mut w, 200, 5, FdType::File, b"/var/lib/pg/base/16384", 0);
        w.flush().unwrap();
        Recording {
            path,
            w: Some(w),
            pg,
            fio,
            file,
            n: 0,
            follower: None,
        }
    }

    fn writer(&mut self) -> &mut Writer<std::fs::File> {
        self.w.as_mut().expect("still recording")
    }

    /// `k` more events (postgres reads, a slow one in four; fio writes; a block write in ten),
    /// flushed, as the recorder's flush leaves them.
    fn write(&mut self, k: u64) {
        for _ in 0..k {
            let (i, ts) = (self.n, START + self.n * STEP);
            let e = match i % 10 {
                9 => Event {
                    sector: i * 8,
                    op: 1,
                    ..block(ts, 200_000 + i % 7 * 1_000, 100, self.fio, VDA, 4096)
                },
                0 | 2 | 4 | 6 => Event {
                    fd: 5,
                    file: self.file,
                    bytes: 8192,
                    proc: self.pg,
                    ..Event::syscall(
                        ts,
                        if i % 8 == 0 { 5_000_000 } else { 2_000 + i % 5 },
                        200,
                        201,
                        17,
                        8192,
                    )
                },
                _ => Event {
                    proc: self.fio,
                    ..Event::syscall(ts, 40_000 + i % 3, 100, 100, 1, 4096)
                },
            };
            self.writer().push(&e).unwrap();
            self.n += 1;
        }
        self.writer().flush().unwrap();
    }

    /// A process named `name` (pid 300) appears, its entry written, and makes `k` calls, not
    /// yet flushed.
    fn new_process(&mut self, name: &[u8], k: u64) {
        let proc = add_proc(self.writer(), 300, 1, name);
        for i in 0..k {
            let ts = START + (self.n + i) * STEP;
            let e = Event {
                proc,
                ..Event::syscall(ts, 7_000, 300, 300, 0, 1)
            };
            self.writer().push(&e).unwrap();
        }
        self.n += k;
    }

    /// What the follower thread sends after reading on: a snapshot of the grown capture.
    fn grown(&mut self) -> Action {
        let r = self.follower.as_mut().expect("a viewer follows");
        let g = r.refresh().unwrap();
        Action::Reply(R::Grown(Grown {
            reader: Arc::new(r.clone()),
            tables: g.tables > 0,
        }))
    }

    /// The recorder finishes the file (index, trailer) and closes it.
    fn finish(&mut self) {
        let stop = START + self.n * STEP;
        self.w.take().unwrap().finish(stop).unwrap();
    }

    /// The recorder dies: its file is closed as it is, and its lock goes.
    fn kill(&mut self) {
        self.w.take();
    }
}

/// A viewer on `rec` in a `w`×`h` terminal, answered, the worker's totals in `kept`; the
/// follower reads on from where the viewer opened the capture.
fn viewer(rec: &mut Recording, w: u16, h: u16, filter: &str, kept: &mut Option<query::Kept>) -> App {
    let (mut app, fx) = app_on(&rec.path, w, h, filter);
    assert_eq!(app.cap.liveness, Liveness::Live);
    rec.follower = Some((*app.cap.reader).clone());
    settle_keeping(&mut app, fx, kept);
    app
}

/// The question `app` asks for `action`, answered by extending `kept` (settled as the workers
/// would), and the same question answered from scratch, for comparison.
fn grow(app: &mut App, action: Action, kept: &mut Option<query::Kept>) -> (query::Query, Answer) {
    let mut fx = app.update(action);
    let q = fx.query.clone().expect("the grown capture is asked of");
    let fresh = {
        let q = query::Query {
            extends: None,
            ..q.clone()
        };
        let cancel = Cancel::default();
        cancel.0.store(q.gen, Ordering::Relaxed);
        query::run(&q, None, &cancel).unwrap().unwrap()
    };
    fx.query = Some(q.clone());
    settle_keeping(app, fx, kept);
    (q, fresh)
}

use iocap_tui::worker::query::Answer;

/// Everything the panes show of an answer.
fn same_answer(a: &Answer, b: &Answer, what: &str) {
    assert_eq!(a.matched, b.matched, "{what}: matched");
    assert_eq!(a.hist, b.hist, "{what}: histogram");
    assert_eq!(a.groups, b.groups, "{what}: breakdown");
    assert_eq!(a.group_count, b.group_count, "{what}: groups");
    assert_eq!(a.per_chunk, b.per_chunk, "{what}: list");
    assert_eq!(a.slowest, b.slowest, "{what}: slowest");
    assert_eq!(a.spectro, b.spectro, "{what}: spectrogram");
    assert_eq!(a.iostat, b.iostat, "{what}: iostat");
    assert_eq!(a.damaged, b.damaged, "{what}: damage");
}

/// Whatever the filter, the list's order and what the panes show, the answer extended by the
/// new chunks is the answer a scan of the grown capture gives.
#[test]
fn growth_is_folded_in_as_a_fresh_scan_counts_it() {
    for filter in ["", "proc.name=postgres", "latency>1ms or evt.class=block"] {
        for (by_latency, iostat, split) in [(false, false, false), (true, true, true)] {
            let what = format!("filter {filter:?}, by latency {by_latency}, iostat {iostat}");
            let dir = tempfile::tempdir().unwrap();
            let mut rec = Recording::start(dir.path());
            rec.write(3_000);
            let mut kept = None;
            let mut app = viewer(&mut rec, 100, 30, filter, &mut kept);
            if by_latency {
                app.focus = Pane::Events;
                let fx = app.update(Action::Sort);
                settle_keeping(&mut app, fx, &mut kept);
            }
            if iostat {
                let fx = app.update(Action::ToggleIostat);
                settle_keeping(&mut app, fx, &mut kept);
            }
            if split {
                let fx = app.update(Action::DiskSplit);
                settle_keeping(&mut app, fx, &mut kept);
            }
            // The capture grows within the rows the view keeps for it.
            for step in 0..3 {
                let before = app.answer.as_ref().unwrap().gen;
                rec.write(700);
                let (q, fresh) = grow(&mut app, rec.grown(), &mut kept);
                assert_eq!(q.extends, Some(before), "{what}, step {step}: the same question, grown");
                let a = app.answer.as_ref().unwrap();
                same_answer(a, &fresh, &format!("{what}, step {step}"));
                assert_eq!(app.cap.total, rec.n);
            }
            let a = app.answer.as_ref().unwrap();
            match filter {
                "" => assert_eq!(a.matched, rec.n, "{what}"),
                _ => assert!(a.matched > 0 && a.matched < rec.n, "{what}"),
            }
        }
    }
}

/// An extension scans the new chunks only: an old chunk damaged on disk since the first answer
/// goes unnoticed by it, where a scan of the whole view reports it.
#[test]
fn an_extension_reads_only_the_new_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recording::start(dir.path());
    rec.write(2_000);
    let mut kept = None;
    let mut app = viewer(&mut rec, 100, 30, "", &mut kept);
    let first = app.cap.reader.chunks()[0].offset;
    // A byte in the middle of the first chunk's frame: its checksum fails from now on.
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&rec.path)
            .unwrap();
        let mut b = [0u8; 1];
        f.read_exact_at(&mut b, first + 40).unwrap();
        f.write_all_at(&[b[0] ^ 0xff], first + 40).unwrap();
    }
    // And its rollup, which would answer for it otherwise.
    damage_rollup_of(&rec.path, first, app.cap.reader.chunks()[1].offset);
    rec.write(500);
    let (q, fresh) = grow(&mut app, rec.grown(), &mut kept);
    assert!(q.extends.is_some());
    let a = app.answer.as_ref().unwrap();
    assert!(
        a.damaged.is_empty(),
        "the old chunks were not read again: {:?}",
        a.damaged
    );
    assert_eq!(a.matched, 2_500);
    assert_eq!(
        fresh.damaged.first().map(|d| d.chunk),
        Some(0),
        "a scan of the view reads it"
    );
}

/// A process that appears while the capture is recorded is judged by the filter: its tables
/// grew, the filter is compiled again, and its events are counted.
#[test]
fn a_process_that_appears_later_is_judged_by_the_filter() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recording::start(dir.path());
    rec.write(1_000);
    let mut kept = None;
    let mut app = viewer(&mut rec, 100, 30, "proc.name=newbie", &mut kept);
    assert_eq!(app.answer.as_ref().unwrap().matched, 0);
    rec.new_process(b"newbie", 40);
    rec.write(100);
    let (q, fresh) = grow(&mut app, rec.grown(), &mut kept);
    assert!(q.extends.is_some());
    let a = app.answer.as_ref().unwrap();
    assert_eq!(a.matched, 40);
    same_answer(a, &fresh, "newbie");
    assert!(status_text(&app).contains("40/1,140"), "{}", status_text(&app));
}

/// A hint given while nothing matched (the value nearest the filter's) goes once the capture
/// being recorded brings the value it said was missing.
#[test]
fn a_hint_goes_once_the_process_it_missed_appears() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recording::start(dir.path());
    rec.write(1_000);
    let mut kept = None;
    let mut app = viewer(&mut rec, 100, 30, "proc.name=fioo", &mut kept);
    assert_eq!(app.answer.as_ref().unwrap().matched, 0);
    assert_eq!(app.near_miss(), Some("proc.name=fio"));
    rec.new_process(b"fioo", 40);
    rec.write(100);
    grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(app.answer.as_ref().unwrap().matched, 40);
    assert_eq!(app.near_miss(), None);
}

/// The status line says the capture is live; the list keeps its newest event selected as the
/// capture grows; moving back stops that (the status line says End follows), End resumes it.
#[test]
fn the_list_follows_the_newest_event_until_moved_back() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recording::start(dir.path());
    rec.write(1_000);
    let mut kept = None;
    let mut app = viewer(&mut rec, 80, 24, "", &mut kept);
    assert!(app.follows());
    let newest = |app: &App| app.list.selected().map(|e| e.ts);
    assert_eq!(newest(&app), Some(START + 999 * STEP), "the newest event selected");
    insta::assert_snapshot!("live_following_80x24", full(&app));
    rec.write(300);
    let _ = grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(newest(&app), Some(START + 1_299 * STEP), "still the newest");
    assert!(status_text(&app).contains("● LIVE"), "{}", status_text(&app));
    assert!(!status_text(&app).contains("End follows"));
    // Back up the list: it stays there as the capture grows.
    app.focus = Pane::Events;
    act(&mut app, Action::Move(Move::Up));
    assert!(!app.follows());
    assert!(
        status_text(&app).contains("● LIVE (End follows)"),
        "{}",
        status_text(&app)
    );
    let held = newest(&app);
    rec.write(300);
    let _ = grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(newest(&app), held, "the selection stays");
    // End: the newest again, and followed.
    act(&mut app, Action::Move(Move::End));
    assert!(app.follows());
    assert_eq!(newest(&app), Some(START + 1_599 * STEP));
    rec.write(300);
    let _ = grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(newest(&app), Some(START + 1_899 * STEP));
    // Every row on screen was decoded: none waits as `…`.
    let screen = full(&app);
    assert!(!screen.lines().any(|l| l.starts_with("│…")), "{screen}");
    // Sorted by latency, the list has no newest end: the slowest stays selected as it grows.
    act(&mut app, Action::Sort);
    assert!(app.follows());
    assert_eq!(app.list.sel, 0);
    rec.write(300);
    let _ = grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(app.list.sel, 0, "the slowest stays selected");
    assert_eq!(app.list.selected().map(|e| e.latency), Some(5_000_000));
}

/// Zoomed in and following, the view moves on by half a page once the newest rows reach its
/// last row (a new question); scrolled back, it stays. Zoomed out all the way, it shows the
/// whole capture, in coarser rows once the capture outgrows those it had.
#[test]
fn the_view_follows_the_newest_rows_and_the_whole_view_stays_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut rec = Recording::start(dir.path());
    rec.write(2_000);
    let mut kept = None;
    let mut app = viewer(&mut rec, 100, 30, "", &mut kept);
    assert!(app.view.all && app.shows_all());
    // Whole: room for the capture to double, and more rows when it has.
    let interval = app.view.interval;
    rec.write(1_000);
    let (q, _) = grow(&mut app, rec.grown(), &mut kept);
    assert!(q.extends.is_some() && app.view.interval == interval);
    rec.write(4_000);
    let (q, _) = grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(q.extends, None, "outgrown: other rows, a new question");
    assert!(app.view.interval > interval && app.shows_all());
    assert_eq!(app.answer.as_ref().unwrap().matched, 7_000);
    // Zoomed in, then End: the newest row half way down, the cursor on it.
    app.focus = Pane::Spectrogram;
    for _ in 0..3 {
        act(&mut app, Action::ZoomIn);
    }
    act(&mut app, Action::Move(Move::End));
    assert!(app.follows() && !app.view.all);
    let rows = app.layout.time_cells as u64;
    let row_of = |app: &App, t: u64| (t - app.view.start) / app.view.interval;
    let last = START + (rec.n - 1) * STEP;
    assert_eq!(row_of(&app, last), rows / 2, "the newest half way down");
    assert_eq!(app.view.cursor_t as u64, rows / 2);
    // Growing within the view: the same rows, extended.
    let room = (rows - rows / 2 - 1) * app.view.interval / STEP;
    rec.write(room);
    let (q, _) = grow(&mut app, rec.grown(), &mut kept);
    assert!(q.extends.is_some(), "within the view");
    assert_eq!(row_of(&app, START + (rec.n - 1) * STEP), rows - 1);
    // Past its last row: half a page on.
    let start = app.view.start;
    rec.write(app.view.interval / STEP + 1);
    let (q, _) = grow(&mut app, rec.grown(), &mut kept);
    assert_eq!(q.extends, None);
    assert!(app.view.start > start);
    assert_eq!(row_of(&app, START + (rec.n - 1) * STEP), rows / 2);
    // Back in time: the view stays put as the capture grows.
    act(&mut app, Action::Move(Move::PageUp));
    assert!(!app.follows());
    let start = app.view.start;
    rec.write(rows * app.view.interval / STEP);
    let (q, _) = grow(&mut app, rec.grown(), &mut kept);
    assert!(q.extends.is_some());
    assert_eq!(app.view.start, start);
}

/// The recorder finishing the file, or dying, is said; what was written stays on screen,
/// without a reload.
#[test]
fn the_end_of_the_recording_is_said() {
    for killed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut rec = Recording::start(dir.path());
        rec.write(1_000);
        let mut kept = None;
        let mut app = viewer(&mut rec, 160, 30, "", &mut kept);
        rec.write(200);
        if killed {
            rec.kill();
        } else {
            rec.finish();
        }
        let (_, fresh) = grow(&mut app, rec.grown(), &mut kept);
        let a = app.answer.as_ref().unwrap();
        same_answer(a, &fresh, "ended");
        assert_eq!(a.matched, 1_200);
        let status = status_text(&app);
        assert!(!status.contains("LIVE"), "{status}");
        if killed {
            assert_eq!(app.cap.liveness, Liveness::Recovered);
            assert!(
                status.contains("the recorder stopped without finishing the file")
                    || full(&app).contains("unfinished file, recovered"),
                "{status}"
            );
            assert!(full(&app).contains("unfinished file, recovered: no footer index"));
        } else {
            assert_eq!(app.cap.liveness, Liveness::Finished);
            assert!(status.contains("the recording finished"), "{status}");
            assert!(!full(&app).contains("recovered"));
        }
    }
}

/// With rotation: once the recorder has finished a file whose header names the next, the
/// follower opens that one, and the app shows it from then on, with the same filter, still
/// following; a finished file naming a file that never comes, or a live one, has no next.
#[test]
fn the_next_file_of_a_rotation_is_shown_once_the_first_is_finished() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Recording::start_as(dir.path(), "live.cap", Some("live.cap1"));
    first.write(1_000);
    let mut kept = None;
    let mut app = viewer(&mut first, 160, 30, "proc.name=postgres", &mut kept);
    let follower = first.follower.clone().unwrap();
    assert!(next_capture(&follower, &first.path).is_none(), "live: no next yet");
    let mut second = Recording::start_as(dir.path(), "live.cap1", Some("live.cap2"));
    second.write(300);
    first.finish();
    let _ = grow(&mut app, first.grown(), &mut kept);
    let follower = first.follower.clone().unwrap();
    let (next, path) = next_capture(&follower, &first.path).expect("the next file");
    assert_eq!(path, dir.path().join("live.cap1"));
    assert_eq!(next.liveness(), Liveness::Live);
    let fx = app.update(Action::Reply(R::NextFile(NextFile {
        reader: Arc::new(next),
        path,
    })));
    let q = fx.query.clone().expect("a new question, of the next file");
    assert_eq!(q.extends, None);
    settle_keeping(&mut app, fx, &mut kept);
    assert!(app.cap.name.ends_with("live.cap1"), "{}", app.cap.name);
    assert!(app.follows());
    let a = app.answer.as_ref().unwrap();
    // postgres's reads are four events in ten.
    assert_eq!((a.matched, app.cap.total), (120, 300));
    let status = status_text(&app);
    assert!(
        status.contains("● LIVE") && status.contains("the recording went on in"),
        "{status}"
    );
    // The second file finished, naming a third that never comes: nothing to move on to.
    second.finish();
    let done = Reader::open(&second.path).unwrap();
    assert_eq!(done.liveness(), Liveness::Finished);
    assert!(next_capture(&done, &second.path).is_none());
}
