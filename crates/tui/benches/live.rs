//! Following a capture being recorded: how late an event reaches the screen, what the
//! following viewer costs, and what taking in one new chunk costs on a large capture.
//!
//! `cargo bench -p iocap-tui --bench live -- latency [SECONDS]` (default 10): a writer thread of
//! this process writes synthetic events at 10 a second, then at a million, into a file it holds
//! the recorder's lock on, flushing as the recorder does (a chunk closed at 65,536 events, or at
//! a flush: after 250 ms once 1,024 events wait, after 500 ms however few), through the
//! recorder's 64 KiB buffer. The viewer follows it as `iocap view` does (its event loop,
//! workers and follower, drawing 160×50 frames into a test backend). For a sample of events:
//! the time from the writer's push to the end of the first frame whose answer counts it
//! (median and p99; the recorder's own pipeline, ring to writer, adds about a millisecond), and
//! the CPU the viewer's threads used (every thread but the writer's) per second.
//!
//! `cargo bench -p iocap-tui --bench live -- fold [EVENTS]` (default 10^8): a capture of EVENTS
//! written live and answered once (the viewer's first question), then grown five times by one
//! 65,536-event chunk: each step of taking it in (the follower's refresh and snapshot, the app's
//! update, the worker's extension of its answer, the answer drawn), median of five, against a
//! scan of the whole view again.

use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event as CtEvent, KeyCode, KeyEvent, KeyModifiers};
use iocap_analysis::ColumnCache;
use iocap_format::{Event, FdType, Liveness, Reader, Writer, WriterOptions};
use iocap_testkit::{add_file, add_proc, bare_meta, block, Rng, VDA};
use iocap_tui::action::Action;
use iocap_tui::app::App;
use iocap_tui::capture::Capture;
use iocap_tui::event_loop::{self, Msg};
use iocap_tui::history::History;
use iocap_tui::theme::Palette;
use iocap_tui::ui;
use iocap_tui::worker::query::{self, Cancel};
use iocap_tui::worker::{self, Grown, Reply, Worker};
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

/// The recorder's flush policy and buffer (`crates/record/src/writer.rs`, `crates/iocap/record.rs`).
const FLUSH_EVERY: Duration = Duration::from_millis(250);
const FLUSH_EVENTS: usize = 1024;
const FLUSH_AT_LEAST: Duration = Duration::from_millis(500);
const OUT_BUFFER: usize = 64 << 10;

/// When the captures start, ns since boot.
const START: u64 = 1_000_000_000;

/// A capture file being written, locked as the recorder locks it, with four processes and a file.
struct Live<W: std::io::Write> {
    w: Writer<W>,
    procs: Vec<u32>,
    file: u32,
    rng: Rng,
}

impl<W: std::io::Write> Live<W> {
    fn new(out: W) -> Live<W> {
        let meta = bare_meta(START, VDA);
        let mut w = Writer::new(out, &meta, WriterOptions::default()).unwrap();
        let procs = (100..)
            .zip(["postgres", "fio", "nginx", "java"])
            .map(|(pid, name)| add_proc(&mut w, pid, 0, name.as_bytes()))
            .collect();
        let file = add_file(&mut w, 100, 3, FdType::File, b"/data/db", 0);
        w.flush().unwrap();
        Live {
            w,
            procs,
            file,
            rng: Rng::new(0x9e37_79b9_7f4a_7c15),
        }
    }

    /// One event at `ts`: mostly fast reads by four processes, some slower, a block write in 50.
    fn push(&mut self, ts: u64) {
        let x = self.rng.next_u64();
        let p = (x % 4) as usize;
        let latency = match x % 100 {
            0 => 1_000_000 + x % 9_000_000,
            1..=20 => 50_000 + x % 100_000,
            _ => 500 + x % 3_000,
        };
        let e = if x % 50 == 7 {
            Event {
                op: 1,
                ..block(ts, latency, 101, self.procs[1], VDA, 4096)
            }
        } else {
            Event {
                proc: self.procs[p],
                fd: 3,
                file: self.file,
                bytes: 4096,
                ..Event::syscall(ts, latency, 100 + p as u32, 100 + p as u32, (x % 3) as u32, 4096)
            }
        };
        self.w.push(&e).unwrap();
    }
}

/// A new file at `path`, locked for writing.
fn locked(path: &Path) -> std::fs::File {
    let f = std::fs::File::create(path).unwrap();
    iocap_format::lock_for_writing(&f).unwrap();
    f
}

fn bench_path(what: &str) -> PathBuf {
    std::env::temp_dir().join(format!("iocap-bench-live-{what}-{}.cap", std::process::id()))
}

/// Clock ticks a second (`getconf CLK_TCK`; 100 on Linux).
fn clock_ticks() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPU time (user + system) in seconds from a `/proc/.../stat` file.
fn cpu_of(stat: &str) -> f64 {
    let s = std::fs::read_to_string(stat).unwrap_or_default();
    let rest = s.rfind(')').map_or("", |i| &s[i + 1..]);
    // After the name: the state, then ppid ...; utime and stime are the 14th and 15th fields.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) as f64 / clock_ticks()
}

/// The `q`-th quantile of sorted `v`.
fn quantile(v: &[Duration], q: f64) -> Duration {
    v.get(((v.len() as f64 - 1.0) * q).round() as usize)
        .copied()
        .unwrap_or_default()
}

/// Events at `rate` a second for `secs` seconds, followed by the viewer; prints the latencies
/// and the viewer's CPU.
fn latency(rate: u64, secs: u64) {
    let path = bench_path("latency");
    let file = locked(&path);
    let mut live = Live::new(BufWriter::with_capacity(OUT_BUFFER, file));
    let reader = Reader::open(&path).unwrap();
    assert_eq!(reader.liveness(), Liveness::Live);
    let cap = Capture::new(Arc::new(reader.clone()), &path);
    let (w, h) = (160, 50);
    let (mut app, first) = App::new(
        cap,
        "",
        Rect::new(0, 0, w, h),
        Palette::Classic,
        History::in_memory(Vec::new()),
    )
    .unwrap();
    let (tx, rx) = channel::<Msg>();
    let worker = Worker::spawn(tx.clone(), Msg::Reply, Msg::OtherReply).unwrap();
    worker::follow(&reader, &path, tx.clone(), Msg::Reply).unwrap();

    // Every `every`-th event: its index and when it was pushed.
    let every = (rate / 100).max(1);
    let pushed = Arc::new(Mutex::new(Vec::<(u64, Instant)>::new()));
    let theirs = Arc::clone(&pushed);
    let writer = std::thread::Builder::new()
        .name("bench-writer".into())
        .spawn(move || {
            let begun = Instant::now();
            let (mut n, mut last_flush) = (0u64, Instant::now());
            while begun.elapsed() < Duration::from_secs(secs) {
                let due = (begun.elapsed().as_secs_f64() * rate as f64) as u64;
                while n < due {
                    live.push(START + begun.elapsed().as_nanos() as u64);
                    if n % every == 0 {
                        theirs.lock().unwrap().push((n, Instant::now()));
                    }
                    n += 1;
                }
                let since = last_flush.elapsed();
                if since >= FLUSH_AT_LEAST || since >= FLUSH_EVERY && live.w.buffered() >= FLUSH_EVENTS {
                    live.w.flush().unwrap();
                    last_flush = Instant::now();
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            live.w.flush().unwrap();
            // A little longer for the last events to show, then quit the viewer.
            std::thread::sleep(Duration::from_millis(1_500));
            let cpu = cpu_of("/proc/thread-self/stat");
            let q = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE);
            let _ = tx.send(Msg::Input(CtEvent::Key(q)));
            (n, cpu, live)
        })
        .unwrap();
    let cpu0 = cpu_of("/proc/self/stat");
    let t0 = Instant::now();
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    // (When each frame was done, events its answer counts.)
    let mut frames: Vec<(Instant, u64)> = Vec::new();
    event_loop::run(&mut app, &rx, &worker, first, |app| {
        term.draw(|f| ui::render(app, f)).unwrap();
        frames.push((Instant::now(), app.answer.as_ref().map_or(0, |a| a.matched)));
        Ok(())
    })
    .unwrap();
    let wall = t0.elapsed().as_secs_f64();
    let (written, writer_cpu, live) = writer.join().unwrap();
    let viewer_cpu = cpu_of("/proc/self/stat") - cpu0 - writer_cpu;
    drop(live);
    let mut late: Vec<Duration> = Vec::new();
    let mut missed = 0;
    for &(i, at) in pushed.lock().unwrap().iter() {
        match frames.iter().find(|&&(t, shown)| shown > i && t >= at) {
            Some(&(t, _)) => late.push(t - at),
            None => missed += 1,
        }
    }
    late.sort();
    println!(
        "{:>9} events/s: {written} events, {} frames; event to screen median {:>7.1?} p99 {:>7.1?} max {:>7.1?} ({} sampled, {missed} never shown); viewer CPU {:.1} % of a core ({:.2} s in {:.1} s)",
        rate,
        frames.len(),
        quantile(&late, 0.5),
        quantile(&late, 0.99),
        late.last().copied().unwrap_or_default(),
        late.len(),
        100.0 * viewer_cpu / wall,
        viewer_cpu,
        wall,
    );
    let _ = std::fs::remove_file(&path);
}

/// A capture of `n` events written live, answered, then grown chunk by chunk: what each step
/// of taking a chunk in costs.
fn fold(n: u64) {
    let path = bench_path("fold");
    let mut live = Live::new(locked(&path));
    let t = Instant::now();
    for i in 0..n {
        live.push(START + i * 1_000);
    }
    live.w.flush().unwrap();
    eprintln!(
        "wrote {n} events live in {:.1?} ({} MB)",
        t.elapsed(),
        std::fs::metadata(&path).unwrap().len() >> 20
    );
    let (w, h) = (200, 60);
    let mut follower = Reader::open(&path).unwrap();
    for filter in ["", "proc.name=postgres"] {
        // The capture as the follower has read it so far.
        let cap = Capture::new(Arc::new(follower.clone()), &path);
        let (mut app, fx) = App::new(
            cap,
            filter,
            Rect::new(0, 0, w, h),
            Palette::Classic,
            History::in_memory(Vec::new()),
        )
        .unwrap();
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        let cache = ColumnCache::new(query::CACHE_BUDGET);
        let cancel = Cancel::default();
        let mut kept = None;
        let ask = |q: &query::Query, kept: &mut Option<query::Kept>| {
            cancel.0.store(q.gen, Ordering::Relaxed);
            query::answer(q, Some(&cache), &cancel, kept).unwrap().unwrap()
        };
        let q = fx.query.unwrap();
        let t = Instant::now();
        let a = ask(&q, &mut kept);
        let first = t.elapsed();
        let _ = app.update(Action::Reply(Reply::Answer(Box::new(a))));
        // As the worker does while the viewer is idle.
        let t = Instant::now();
        query::warm(&q, &cache, &cancel).unwrap();
        let warm = t.elapsed();
        let label = if filter.is_empty() { "(none)" } else { filter };
        println!(
            "filter {label}: {} events in {} chunks; first answer {first:.1?} (cold), cache filled in {warm:.1?}",
            app.cap.total,
            app.cap.reader.chunks().len()
        );
        let mut steps: Vec<[Duration; 5]> = Vec::new();
        let mut last_q = q;
        for _ in 0..5 {
            let at = START + (app.cap.total + 1) * 1_000;
            for i in 0..65_536 {
                live.push(at + i * 1_000);
            }
            live.w.flush().unwrap();
            let t = Instant::now();
            let grown = follower.refresh().unwrap();
            let snapshot = Grown {
                reader: Arc::new(follower.clone()),
                tables: grown.tables > 0,
            };
            let refresh = t.elapsed();
            let t = Instant::now();
            let fx = app.update(Action::Reply(Reply::Grown(snapshot)));
            let update = t.elapsed();
            let q = fx.query.expect("asked again");
            assert!(q.extends.is_some(), "the same view, grown: an extension");
            let t = Instant::now();
            let a = ask(&q, &mut kept);
            let extend = t.elapsed();
            let t = Instant::now();
            let _ = app.update(Action::Reply(Reply::Answer(Box::new(a))));
            term.draw(|f| ui::render(&app, f)).unwrap();
            let shown = t.elapsed();
            steps.push([refresh, update, extend, shown, refresh + update + extend + shown]);
            last_q = q;
        }
        let median = |k: usize| {
            let mut v: Vec<Duration> = steps.iter().map(|s| s[k]).collect();
            v.sort();
            v[v.len() / 2]
        };
        // The same question answered by a scan of the whole view, warm: what the fold avoids.
        let rescan = {
            let q = query::Query {
                extends: None,
                gen: last_q.gen + 1,
                ..last_q.clone()
            };
            let t = Instant::now();
            let _ = ask(&q, &mut None);
            t.elapsed()
        };
        println!(
            "  one new chunk (65,536 events), median of 5: total {:>7.1?} = refresh+snapshot {:>7.1?} + app update {:>7.1?} + extension {:>7.1?} + answer drawn {:>7.1?}; a rescan of the view (warm) {:>7.1?}",
            median(4),
            median(0),
            median(1),
            median(2),
            median(3),
            rescan
        );
    }
    drop(live);
    let _ = std::fs::remove_file(&path);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    match args.first().map(String::as_str) {
        Some("fold") => fold(args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000_000)),
        Some("latency") | None => {
            let secs = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10);
            for rate in [10, 1_000_000] {
                latency(rate, secs);
            }
        }
        Some(other) => eprintln!("unknown benchmark `{other}`: latency [SECONDS] or fold [EVENTS]"),
    }
}
