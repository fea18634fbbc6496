//! Viewer benchmark: time to first frame, time to re-aggregate after a filter change, and
//! resident memory, on a generated capture.
//!
//! Each refilter is timed cold (nothing cached, as the viewer's first question: every chunk
//! decoded) and warm (the same question again once the column cache is filled, as the viewer's
//! worker does while idle; the fill is timed too). Then what a view of part of the capture
//! costs besides: the count of a filter's matches in the whole capture, a query with
//! iostat's figures against one without, and the flame graph of a region's calls (the slowest
//! 1 % have stacks, as `record --stacks=1ms` keeps them) against the region without it.
//!
//! `cargo bench -p iocap-tui --bench view -- [EVENTS] [PATH]` (default 10^7 events, written to
//! a temp file unless PATH exists already, in which case it is reused). Environment:
//! `VIEW_ONLY=TEXT` runs only the refilters whose label contains TEXT, `VIEW_REPS=N` times each
//! warm refilter N times and prints the median (default 1).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use iocap_analysis::ColumnCache;
use iocap_format::{Event, FdType, Reader, Writer, WriterOptions};
use iocap_testkit::{add_file, add_proc, bare_meta, block, Rng, VDA};
use iocap_tui::action::Action;
use iocap_tui::app::App;
use iocap_tui::capture::Capture;
use iocap_tui::ui;
use iocap_tui::worker::query::{self, Cancel};

mod common;
use common::{first_frame, rss_kb};

fn generate(path: &Path, n: u64) {
    let meta = bare_meta(1_000_000_000, VDA);
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &meta, WriterOptions::default()).unwrap();
    let names = ["postgres", "fio", "nginx", "java"];
    let procs: Vec<u32> = (100..)
        .zip(names)
        .map(|(pid, name)| add_proc(&mut w, pid, 0, name.as_bytes()))
        .collect();
    let file = add_file(&mut w, 100, 3, FdType::File, b"/data/db", 0);
    // 64 user stacks of 12 frames and 16 kernel stacks of 8, for the calls of 1 ms or more.
    let frames = |w: &mut Writer<std::fs::File>, kind, n: usize, k: usize| {
        let frames = (0..n)
            .map(|f| iocap_format::StackFrame {
                addr: (k * 64 + f) as u64,
                sym: w.intern(format!("fn_{}_{}", f, k % (f + 1)).as_bytes()),
                module: 0,
                build_id: 0,
            })
            .collect();
        w.add_stack(&iocap_format::Stack { kind, frames })
    };
    let users: Vec<u32> = (0..64)
        .map(|k| frames(&mut w, iocap_format::StackKind::User, 12, k))
        .collect();
    let kernels: Vec<u32> = (0..16)
        .map(|k| frames(&mut w, iocap_format::StackKind::Kernel, 8, k))
        .collect();
    // 1 M events/s of capture time; a xorshift keeps latencies varied but reproducible.
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    for i in 0..n {
        let x = rng.next_u64();
        let p = (x % 4) as usize;
        let latency = match x % 100 {
            0 => 1_000_000 + x % 9_000_000,
            1..=20 => 50_000 + x % 100_000,
            _ => 500 + x % 3_000,
        };
        let ts = 1_000_000_000 + i * 1_000;
        let e = if x % 50 == 7 {
            Event {
                op: 1,
                ..block(ts, latency, 101, procs[1], VDA, 4096)
            }
        } else {
            Event {
                proc: procs[p],
                fd: 3,
                file,
                bytes: 4096,
                stack_user: if latency >= 1_000_000 {
                    users[(x >> 8) as usize % 64]
                } else {
                    0
                },
                stack_kernel: if latency >= 1_000_000 {
                    kernels[(x >> 16) as usize % 16]
                } else {
                    0
                },
                ..Event::syscall(ts, latency, 100 + p as u32, 100 + p as u32, (x % 3) as u32, 4096)
            }
        };
        w.push(&e).unwrap();
    }
    w.finish(1_000_000_000 + n * 1_000).unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let n: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000_000);
    let path = args
        .get(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("iocap-bench-{n}.cap")));
    if !path.exists() {
        let t = Instant::now();
        generate(&path, n);
        eprintln!(
            "generated {n} events in {:.1?} ({} MB)",
            t.elapsed(),
            std::fs::metadata(&path).unwrap().len() >> 20
        );
    }
    let (w, h) = (200, 60);

    let t = Instant::now();
    let reader = Arc::new(Reader::open(&path).unwrap());
    let cap = Capture::new(Arc::clone(&reader), &path);
    let (mut app, first_fx, mut term) = first_frame(cap, w, h);
    let first = t.elapsed();

    let cancel = Cancel::default();
    // Cold: nothing cached (the viewer's first question: every chunk decoded). Then the cache
    // is filled as the worker does while idle (timed as "fill"), and warm is the same question
    // again, on that cache.
    let run = |q: &query::Query, cache: Option<&ColumnCache>| {
        cancel.0.store(q.gen, Ordering::Relaxed);
        let t = Instant::now();
        let a = query::run(q, cache, &cancel).unwrap().unwrap();
        (t.elapsed(), a)
    };
    let rate = |d: std::time::Duration| n as f64 / d.as_secs_f64() / 1e6;
    let q = first_fx.query.unwrap();
    let (full, a) = run(&q, None);
    println!(
        "events {n}  chunks {}  file {} MB  threads {}",
        reader.chunks().len(),
        std::fs::metadata(&path).unwrap().len() >> 20,
        std::thread::available_parallelism().map_or(1, usize::from).min(2)
    );
    println!("first frame (index only)      {:>8.1?}", first);
    println!(
        "full scan, no filter   cold   {:>8.1?}  {:>4.0} M events/s  matched {}",
        full,
        rate(full),
        a.matched
    );
    let fx = app.update(Action::Reply(iocap_tui::worker::Reply::Answer(Box::new(a))));
    term.draw(|f| ui::render(&app, f)).unwrap();
    let mut q = fx.query.unwrap_or_else(|| app.update(Action::NextField).query.unwrap());
    // The list sorted by time (the default) keeps no event; sorted by latency, the slowest 2^20.
    let mut stats = iocap_analysis::CacheStats::default();
    let only = std::env::var("VIEW_ONLY").unwrap_or_default();
    let reps: usize = std::env::var("VIEW_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1)
        .max(1);
    for (filter, slowest) in [
        ("", 0),
        ("proc.name=postgres", 0),
        ("latency>1ms", 0),
        ("proc.name=fio and latency>=50us and latency<200us", 0),
        ("", query::SLOWEST),
        ("proc.name=postgres", query::SLOWEST),
    ] {
        let label = format!(
            "{}{}",
            if filter.is_empty() { "(none)" } else { filter },
            if slowest > 0 { ", by latency" } else { "" }
        );
        if !label.contains(&only) {
            continue;
        }
        q.gen += 1;
        q.slowest = slowest;
        q.filter = if filter.is_empty() {
            None
        } else {
            iocap_tui::panes::filter_bar::compile(filter, &reader).unwrap()
        };
        let cache = ColumnCache::new(query::CACHE_BUDGET);
        let (cold, a) = run(&q, Some(&cache));
        let t = Instant::now();
        query::warm(&q, &cache, &cancel).unwrap();
        let fill = t.elapsed();
        let mut warms: Vec<_> = (0..reps).map(|_| run(&q, Some(&cache)).0).collect();
        warms.sort();
        let warm = warms[reps / 2];
        stats = cache.stats();
        println!(
            "refilter {:<50} cold {:>8.1?} {:>4.0} M/s  warm {:>8.1?} {:>4.0} M/s  (fill {:>7.1?})  matched {}",
            label,
            cold,
            rate(cold),
            warm,
            rate(warm),
            fill,
            a.matched
        );
    }
    // What a view of part of the capture asks besides: the filter's matches in the whole
    // capture (once per filter), and iostat's figures while `i` shows them.
    if "whole count".contains(&only) || "iostat".contains(&only) {
        q.gen += 1;
        q.slowest = 0;
        q.filter = iocap_tui::panes::filter_bar::compile("proc.name=postgres", &reader).unwrap();
        let cache = ColumnCache::new(query::CACHE_BUDGET);
        cancel.0.store(q.gen, Ordering::Relaxed);
        let count = |cache: &ColumnCache| {
            let t = Instant::now();
            let n = query::count_all(&q, Some(cache), &cancel).unwrap();
            (t.elapsed(), n)
        };
        let (cold, matched) = count(&cache);
        query::warm(&q, &cache, &cancel).unwrap();
        let (warm, _) = count(&cache);
        println!(
            "whole count proc.name=postgres  cold {:>8.1?} {:>4.0} M/s  warm {:>8.1?} {:>4.0} M/s  matched {matched}",
            cold,
            rate(cold),
            warm,
            rate(warm)
        );
        // iostat over every block request: the bench's are all fio's.
        q.filter = None;
        q.gen += 1;
        let (plain, _) = run(&q, None);
        q.iostat = true;
        q.gen += 1;
        let (with, a) = run(&q, None);
        let devices = a.iostat.map_or(0, |d| d.len());
        println!(
            "iostat, no filter               cold {:>8.1?} {:>4.0} M/s  (without {:>8.1?})  disks {devices}",
            with,
            rate(with),
            plain
        );
        q.iostat = false;
    }
    // The flame graph of a brushed region (`w` once Enter has made the region the filter):
    // its calls' stacks folded, against the same region without.
    if "flame".contains(&only) {
        let region = "evt.time>=2s and evt.time<8s and latency>=1ms";
        q.filter = iocap_tui::panes::filter_bar::compile(region, &reader).unwrap();
        q.gen += 1;
        let (plain, _) = run(&q, None);
        q.flame = Some(iocap_analysis::flame::By::User);
        q.gen += 1;
        let (with, a) = run(&q, None);
        let (paths, calls) = a.flame.map_or((0, 0), |(p, n)| (p.len(), n));
        println!("flame graph of {region}  cold {with:>8.1?}  (without {plain:>8.1?})  {calls} calls, {paths} paths");
        q.flame = None;
        q.filter = None;
    }
    // The latency-sorted list: the UI only asks for its rows (timed as "UI"); the rows thread
    // decodes the chunks the slowest events on screen come from (timed as "rows").
    app.focus = iocap_tui::layout::Pane::Events;
    let q = app.update(Action::Sort).query.unwrap();
    let (_, a) = run(&q, None);
    let mut loader = iocap_tui::worker::rows::RowLoader::new();
    let mut screen = |app: &mut App, action: Action| {
        let t = Instant::now();
        let fx = app.update(action);
        let ui = t.elapsed();
        let t = Instant::now();
        let rows = loader.load(&fx.rows.unwrap());
        let load = t.elapsed();
        let _ = app.update(Action::Reply(iocap_tui::worker::Reply::Rows(rows)));
        (ui, load)
    };
    let first = screen(&mut app, Action::Reply(iocap_tui::worker::Reply::Answer(Box::new(a))));
    let next = screen(&mut app, Action::Move(iocap_tui::action::Move::PageDown));
    println!(
        "latency-sorted list: first screen UI {:>6.1?} rows {:>6.1?}, next page UI {:>6.1?} rows {:>6.1?} ({} rows of {})",
        first.0,
        first.1,
        next.0,
        next.1,
        app.list.rows.len(),
        app.list.len(app.answer.as_ref())
    );
    let st = stats;
    println!(
        "column cache (last refilter) {} MB of {} MB, {} chunk columns, hits {} misses {}",
        st.bytes >> 20,
        query::CACHE_BUDGET >> 20,
        st.entries,
        st.hits,
        st.misses
    );
    println!("peak RSS {} MB", rss_kb("VmHWM:") / 1024);
}
