//! A recording of several files (a rotation ring) viewed as one ([`Reader::join`]): one
//! timeline, each file's processes known by name whatever their ids in it, and a column cache
//! that stays within its budget however many files the ring has.

use iocap_analysis::ColumnCache;

use super::*;

/// Events in file `k` of [`ring`]: postgres's and fio's calls.
fn per_file(k: u64) -> (u64, u64) {
    (300 + 100 * k, 200 + 50 * k)
}

/// [`per_file`] `scale` times over.
fn scaled(k: u64, scale: u64) -> (u64, u64) {
    let (p, f) = per_file(k);
    (p * scale, f * scale)
}

/// A ring of three files in `dir`, `r.cap`, `r.cap1` and `r.cap2`, 1 s each and each naming
/// the next: postgres (10–15 µs calls on `/pg/base`) and fio (1–1.5 ms, on `/fio/job`), each
/// process and file entered in another order in each file after `k` others, so the same name
/// has another table id in each; [`per_file`]
/// events `scale` times over, in chunks of `64 × scale`. Returns the files, each with its name.
fn ring(dir: &Path, scale: u64) -> Vec<(String, Reader)> {
    let names = ["r.cap", "r.cap1", "r.cap2"];
    let mut out = Vec::new();
    for (k, name) in names.iter().enumerate() {
        let start = START + k as u64 * 1_000_000_000;
        let meta = Meta {
            next_file: names.get(k + 1).map(|n| n.to_string()),
            ..iocap_testkit::meta(start)
        };
        let path = dir.join(name);
        let mut w = iocap_testkit::create(&path, &meta, 64 * scale as usize, 1);
        for p in 0..k as u32 {
            add_proc(&mut w, 900 + p, 1, b"other");
            add_file(&mut w, 900 + p, 3, FdType::File, b"/other", 0);
        }
        let ((pg, pg_file), (fio, fio_file)) = {
            let mut add = |pid: u32, name: &[u8], file: &[u8]| {
                let proc = add_proc(&mut w, pid, 1, name);
                (proc, add_file(&mut w, pid, 3, FdType::File, file, 0))
            };
            if k % 2 == 0 {
                (add(200, b"postgres", b"/pg/base"), add(100, b"fio", b"/fio/job"))
            } else {
                let fio = add(100, b"fio", b"/fio/job");
                (add(200, b"postgres", b"/pg/base"), fio)
            }
        };
        let (n_pg, n_fio) = scaled(k as u64, scale);
        let n = n_pg + n_fio;
        let every = 1_000_000_000 / n;
        for i in 0..n {
            // Latencies varied, so a chunk's column takes room in the cache.
            let (pid, proc, file, latency) = if i < n_pg {
                (200, pg, pg_file, 10_000 + (i * 7_919) % 5_000)
            } else {
                (100, fio, fio_file, 1_000_000 + (i * 104_729) % 500_000)
            };
            w.push(&Event {
                proc,
                fd: 3,
                file,
                ..Event::syscall(start + i * every, latency, pid, pid, 0, 0)
            })
            .unwrap();
        }
        w.finish(start + 1_000_000_000).unwrap();
        out.push((name.to_string(), Reader::open(&path).unwrap()));
    }
    out
}

/// The app on the ring in `dir` joined, with `notes`, in a `w`×`h` terminal.
fn app_on_ring(files: Vec<(String, Reader)>, notes: Vec<String>, filter: &str) -> (App, Effects) {
    let reader = Arc::new(Reader::join(files, notes).unwrap());
    let cap = Capture::new(reader, Path::new("ring/ (3 files)"));
    App::new(
        cap,
        filter,
        Rect::new(0, 0, 120, 40),
        Palette::Classic,
        History::in_memory(Vec::new()),
    )
    .unwrap()
}

/// The whole ring is one timeline: its first frame (from the files' summaries) and its answer
/// count every file's events, the breakdown counts each process over all files though its id
/// differs from file to file, and a filter on a name matches it in every file.
#[test]
fn a_ring_is_viewed_as_one_recording() {
    let dir = tempfile::tempdir().unwrap();
    let (pg, fio): (u64, u64) = (0..3).map(per_file).fold((0, 0), |(a, b), (p, f)| (a + p, b + f));
    let (mut app, fx) = app_on_ring(ring(dir.path(), 1), Vec::new(), "");
    assert_eq!(app.cap.total, pg + fio);
    assert_eq!(
        app.view.grid.spectro.total(),
        pg + fio,
        "the first frame holds every file"
    );
    settle(&mut app, fx);
    let a = app.answer.as_ref().unwrap();
    assert_eq!(a.matched, pg + fio);
    let count = |name: &str| a.groups.iter().find(|g| g.value == name).map(|g| g.count);
    assert_eq!((count("postgres"), count("fio")), (Some(pg), Some(fio)));
    insta::assert_snapshot!("ring_120x40", full(&app));

    let (mut app, fx) = app_on_ring(ring(dir.path(), 1), Vec::new(), "proc.name=postgres");
    settle(&mut app, fx);
    assert_eq!(app.answer.as_ref().unwrap().matched, pg);
    // The list's rows, decoded from the last file, name their process.
    act(&mut app, Action::FocusPrev);
    act(&mut app, Action::Move(iocap_tui::action::Move::End));
    let screen = full(&app);
    assert!(screen.contains("postgres") && !screen.contains("fio "), "{screen}");
}

/// A file missing from the middle of the ring (here: left out, with the note `view` makes) is
/// said on the status line; the other files are shown.
#[test]
fn a_missing_file_is_said_and_the_rest_shown() {
    let dir = tempfile::tempdir().unwrap();
    let mut files = ring(dir.path(), 1);
    files.remove(1);
    let notes = vec!["r.cap1 is missing (after r.cap)".to_string()];
    let (mut app, fx) = app_on_ring(files, notes, "");
    settle(&mut app, fx);
    let (p0, f0) = per_file(0);
    let (p2, f2) = per_file(2);
    assert_eq!(app.answer.as_ref().unwrap().matched, p0 + f0 + p2 + f2);
    let status = status_text(&app);
    assert!(
        status.contains("recording: r.cap1 is missing (after r.cap)"),
        "{status}"
    );
}

/// The column cache of a ring larger than its budget holds at most its budget, with part of
/// the ring's chunks, and answers as a scan without it does.
#[test]
fn the_column_cache_stays_within_its_budget_on_a_ring() {
    let dir = tempfile::tempdir().unwrap();
    // 2 million events: some MB of columns, as a budget under 1 MiB is taken for full (the
    // chunks without postgres keep only the filter's column: 5.6 MB in all).
    let (app, fx) = app_on_ring(ring(dir.path(), 1000), Vec::new(), "proc.name=postgres");
    let q = fx.query.unwrap();
    let chunks = app.cap.reader.chunks().len();
    let cancel = Cancel::default();
    cancel.0.store(q.gen, Ordering::Relaxed);
    let plain = query::run(&q, None, &cancel).unwrap().unwrap();
    // Room for about a third of the ring's columns.
    let whole = ColumnCache::new(usize::MAX >> 1);
    query::warm(&q, &whole, &cancel).unwrap();
    let budget = whole.stats().bytes / 3;
    assert!(budget > 3 << 19, "{:?}", whole.stats());
    let cache = ColumnCache::new(budget);
    for _ in 0..3 {
        query::warm(&q, &cache, &cancel).unwrap();
        let st = cache.stats();
        assert!(
            st.bytes <= budget,
            "{} bytes cached, over the budget of {budget}",
            st.bytes
        );
        assert!(st.entries > 0, "{st:?}");
        let cached = query::run(&q, Some(&cache), &cancel).unwrap().unwrap();
        assert_eq!(cached.matched, plain.matched);
        assert_eq!(cached.groups, plain.groups);
    }
    let held = (0..chunks)
        .filter(|&c| cache.holds(c, iocap_format::ColSet::NONE.with(iocap_format::Col::Latency)))
        .count();
    assert!(held > 0 && held < chunks, "{held} of {chunks} chunks held");
}

/// A view whose chunks mostly lie within one spectrogram row takes those from their rollups
/// (chunk frames' neighbours, kind 13) when its question reads no more than a rollup holds, and
/// (or, with latency bounds, its cells' totals) and answers exactly as the scan of every chunk's
/// columns does: the spectrogram, the histogram,
/// the breakdown by process and the matches per chunk, over three files whose process ids
/// differ.
#[test]
fn chunks_within_one_row_are_answered_from_their_rollups_as_their_columns_answer() {
    let dir = tempfile::tempdir().unwrap();
    let (app, fx) = app_on_ring(ring(dir.path(), 20), Vec::new(), "");
    let mut q = fx.query.unwrap();
    let chunks = app.cap.reader.chunks().len();
    let cancel = Cancel::default();
    for filter in [
        "",
        "proc.name=postgres",
        "proc.name!=fio and evt.type=read",
        // Ruled in whole by the summaries of the chunks after 1 s, which their rollups answer.
        "evt.time>=1s",
        // The same, with a process left to judge on the keys.
        "evt.time>=1s and proc.name=postgres",
        // Latency bounds on cell bounds: the cells' own totals (since 1.14) answer.
        "latency>1ms",
        "latency>=10us and latency<1s and proc.name=postgres",
        // The pid is a key's since 1.16.
        "proc.pid=200",
        "latency>1ms and proc.pid!=200",
        // The file is a key's since 1.17 (in a chunk of few files).
        "fd.name=/pg/base",
        "fd.directory=/fio and latency>1ms",
    ] {
        q.gen += 1;
        cancel.0.store(q.gen, Ordering::Relaxed);
        q.filter = (!filter.is_empty())
            .then(|| iocap_tui::panes::filter_bar::compile(filter, &app.cap.reader).unwrap())
            .flatten();
        q.slowest = 0;
        // Grouped by process, and (with pid or file filters) by pid or file, also a key's.
        q.group = iocap_filter::fields::lookup(if filter.contains("pid") {
            "proc.pid"
        } else if filter.contains("fd.") {
            "fd.name"
        } else {
            "proc.name"
        })
        .unwrap();
        let rolled = query::run(&q, None, &cancel).unwrap().unwrap();
        // Keeping the slowest needs every event's latency: no rollup answers.
        q.slowest = 1;
        let scanned = query::run(&q, None, &cancel).unwrap().unwrap();
        assert_eq!(scanned.rolled, 0);
        assert!(
            rolled.rolled >= chunks / 4 && rolled.rolled < chunks,
            "{filter:?}: {} of {chunks} chunks from rollups",
            rolled.rolled
        );
        assert!(rolled.matched > 0, "{filter:?}");
        assert_eq!(rolled.matched, scanned.matched, "{filter:?}");
        assert_eq!(rolled.spectro, scanned.spectro, "{filter:?}");
        assert_eq!(rolled.hist, scanned.hist, "{filter:?}");
        assert_eq!(rolled.groups, scanned.groups, "{filter:?}");
        assert_eq!(rolled.per_chunk, scanned.per_chunk, "{filter:?}");
        // The whole capture's count (the view here is all of it) takes every chunk's rollup
        // the filter can be judged on, whatever rows it spans.
        assert_eq!(
            query::count_whole(&q, None, &cancel, &mut None),
            Some(scanned.matched),
            "{filter:?}"
        );
    }
}
