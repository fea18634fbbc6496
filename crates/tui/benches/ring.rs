//! A day of recording (issue #19): the viewer and the report on a whole rotation ring.
//!
//! `cargo bench -p iocap-tui --bench ring -- gen EVENTS DIR` writes a synthetic ring into DIR
//! (which must not hold one already): `ring.cap`, `ring.cap1`, ... as `record -C` names them,
//! each file's header naming the next (`Meta::next_file`), each self-contained (its own
//! process and file tables, ids from 1 again), [`PER_FILE`] events a file (`RING_PER_FILE=N`
//! to change it). Events come at 10^5 a second of capture time (a day is 8.64 × 10^9), from
//! 40 processes over 200 files (5 each; `RING_FILES_PER_PROC=N` to change it: with 1, a
//! chunk's rollups hold its files and a question on a file is answered from them), 2 % of them
//! block requests, latencies from 500 ns to 10 ms.
//!
//! `cargo bench -p iocap-tui --bench ring -- DIR` then opens every file of DIR as one
//! recording (`iocap_format::Reader::join`, as `iocap view DIR/` does) and prints: the time to
//! the viewer's first frame (from the chunk summaries alone), a first answer of the whole
//! ring with no filter, a zoom to one hour in its middle (a refilter of that window), then
//! `proc.name=X`, `proc.name=X and latency>1ms`, `latency>1ms`, `proc.pid=N` and `fd.name=F` in that hour, and peak RSS (VmHWM) after each step (`RING_FIRST_ONLY=1`: only
//! the first frame; `RING_SKIP_WHOLE=1`: no answer of the whole ring; `RING_FILTERS='F;G'`:
//! these filters in the hour instead). `report` on the ring is
//! the `iocap` binary's (`iocap report --ring DIR/ring.cap`), timed outside this bench.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use iocap_analysis::ColumnCache;
use iocap_format::{Event, FdType, Reader, Writer, WriterOptions};
use iocap_testkit::{add_file, add_proc, block, meta, Rng, VDA};
use iocap_tui::action::Action;
use iocap_tui::capture::Capture;
use iocap_tui::ui;
use iocap_tui::worker::query::{self, Cancel};

mod common;
use common::{first_frame, rss_kb};

/// Events in one file of the ring by default: 10^8, about 550 MB and 17 minutes of capture
/// time at 10^5 events/s (as `record -C 550M` would cut it).
const PER_FILE: u64 = 100_000_000;
/// ns between events: 10^5 events a second.
const GAP: u64 = 10_000;
/// The first event's time, ns since boot.
const T0: u64 = 1_000_000_000;
/// Process names of the ring; each file holds every one of them (as a rotation's new file
/// gets every current process).
const NAMES: [&str; 8] = ["postgres", "fio", "nginx", "java", "rsyslogd", "sshd", "cron", "node"];

/// The name of file `k` of the ring: `ring.cap`, then `ring.cap1`, ...
fn file_name(k: u64) -> String {
    if k == 0 {
        "ring.cap".into()
    } else {
        format!("ring.cap{k}")
    }
}

/// Write a ring of `n` events into `dir`.
fn generate(dir: &Path, n: u64, per_file: u64, chunk_events: usize, per_proc: u32) {
    std::fs::create_dir_all(dir).unwrap();
    let files = n.div_ceil(per_file).max(1);
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut i = 0u64;
    for k in 0..files {
        let start = T0 + i * GAP;
        let mut m = meta(start);
        m.next_file = (k + 1 < files).then(|| file_name(k + 1));
        let path = dir.join(file_name(k));
        let opts = WriterOptions {
            chunk_events,
            ..WriterOptions::default()
        };
        let mut w = Writer::new(std::fs::File::create(&path).unwrap(), &m, opts).unwrap();
        // 40 processes (5 of each name), each with `per_proc` files open.
        let procs: Vec<(u32, u32)> = (0..40u32)
            .map(|p| {
                (
                    1000 + p,
                    add_proc(&mut w, 1000 + p, 1, NAMES[p as usize % NAMES.len()].as_bytes()),
                )
            })
            .collect();
        let files_of: Vec<u32> = (0..40 * per_proc)
            .map(|f| {
                let pid = 1000 + f / per_proc;
                let name = format!("/data/{}/file{f}", NAMES[(f / per_proc) as usize % NAMES.len()]);
                add_file(
                    &mut w,
                    pid,
                    3 + (f % per_proc) as i32,
                    FdType::File,
                    name.as_bytes(),
                    VDA,
                )
            })
            .collect();
        let end = n.min(i + per_file);
        while i < end {
            let x = rng.next_u64();
            let p = (x % 40) as usize;
            let (pid, proc) = procs[p];
            let latency = match (x >> 8) % 100 {
                0 => 1_000_000 + (x >> 16) % 9_000_000,
                1..=20 => 50_000 + (x >> 16) % 100_000,
                _ => 500 + (x >> 16) % 3_000,
            };
            let ts = T0 + i * GAP + (x >> 40) % 1_000;
            let e = if (x >> 20) % 50 == 7 {
                Event {
                    op: ((x >> 30) % 2) as u8,
                    sector: (x >> 24) % 1_000_000,
                    ..block(ts, latency, pid, proc, VDA, 4096 << ((x >> 28) % 4))
                }
            } else {
                let f = p * per_proc as usize + ((x >> 32) % u64::from(per_proc)) as usize;
                Event {
                    proc,
                    fd: 3 + (f % per_proc as usize) as i32,
                    file: files_of[f],
                    bytes: 4096,
                    ..Event::syscall(
                        ts,
                        latency,
                        pid,
                        pid + ((x >> 36) % 4) as u32,
                        ((x >> 12) % 3) as u32,
                        4096,
                    )
                }
            };
            w.push(&e).unwrap();
            i += 1;
        }
        w.finish(T0 + i * GAP).unwrap();
        eprintln!(
            "{} {} MB",
            path.display(),
            std::fs::metadata(&path).unwrap().len() >> 20
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    match args.as_slice() {
        [gen, n, dir] if gen == "gen" => {
            let n: u64 = n.parse().expect("EVENTS");
            let per_file = std::env::var("RING_PER_FILE")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(PER_FILE);
            let dir = PathBuf::from(dir);
            assert!(!dir.join("ring.cap").exists(), "{} holds a ring already", dir.display());
            let t = Instant::now();
            let chunk = std::env::var("RING_CHUNK")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(WriterOptions::default().chunk_events);
            let per_proc = std::env::var("RING_FILES_PER_PROC")
                .ok()
                .and_then(|s| s.parse().ok())
                .filter(|&n| n > 0)
                .unwrap_or(5);
            generate(&dir, n, per_file, chunk, per_proc);
            eprintln!("generated {n} events in {:.1?}", t.elapsed());
        }
        [dir] => measure(Path::new(dir)),
        _ => {
            eprintln!("usage: ring gen EVENTS DIR | ring DIR");
            std::process::exit(2);
        }
    }
}

/// The ring's files in `dir`, as `iocap view DIR/` finds them: its `*.cap` and `*.capN`.
fn ring_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.contains(".cap"))
        })
        .collect();
    files.sort();
    files
}

/// Peak and current resident memory, MB.
fn memory() -> String {
    format!(
        "peak RSS {} MB (now {} MB)",
        rss_kb("VmHWM:") >> 10,
        rss_kb("VmRSS:") >> 10
    )
}

fn measure(dir: &Path) {
    let (w, h) = (200, 60);
    let t = Instant::now();
    let files = ring_files(dir);
    // As `iocap view DIR/` opens them: several at once.
    let parts: Vec<(String, Reader)> = files
        .iter()
        .zip(Reader::open_each(&files))
        .map(|(p, r)| (p.file_name().unwrap().to_string_lossy().into_owned(), r.unwrap()))
        .collect();
    let read = t.elapsed();
    let reader = Arc::new(Reader::join(parts, Vec::new()).unwrap());
    let opened = t.elapsed();
    let cap = Capture::new(Arc::clone(&reader), dir);
    let (mut app, first_fx, mut term) = first_frame(cap, w, h);
    let first = t.elapsed();
    let n = reader.event_count();
    let span = reader.stop_ts() - reader.meta().start_ts;
    let bytes: u64 = files.iter().map(|p| std::fs::metadata(p).unwrap().len()).sum();
    println!(
        "ring: {} files, {n} events, {} chunks, {:.2} GB, {:.2} h of capture time, {:.2} bytes/event",
        files.len(),
        reader.chunks().len(),
        bytes as f64 / 1e9,
        span as f64 / 3.6e12,
        bytes as f64 / n as f64
    );
    println!(
        "open {} files (headers, tables, indexes)  {:>8.1?}  (of which joining {:.1?})",
        files.len(),
        opened,
        opened - read
    );
    println!("first frame (summaries only)             {:>8.1?}  {}", first, memory());
    if std::env::var_os("RING_FIRST_ONLY").is_some() {
        return;
    }

    let cancel = Cancel::default();
    let run = |q: &query::Query, cache: Option<&ColumnCache>| {
        cancel.0.store(q.gen, Ordering::Relaxed);
        let t = Instant::now();
        let a = query::run(q, cache, &cancel).unwrap().unwrap();
        (t.elapsed(), a)
    };
    let rate = |events: u64, d: std::time::Duration| events as f64 / d.as_secs_f64() / 1e6;
    let first_q = first_fx.query.unwrap();
    let mut q = first_q.clone();
    if std::env::var_os("RING_SKIP_WHOLE").is_none() {
        let (d, a) = run(&q, None);
        println!(
            "first answer, whole ring, no filter      {:>8.1?}  {:>4.0} M/s  matched {}  rows {} of {} ns, {} of {} chunks from rollups  {}",
            d,
            rate(n, d),
            a.matched,
            q.rows,
            q.interval,
            a.rolled,
            reader.chunks().len(),
            memory()
        );
        let _ = app.update(Action::Reply(iocap_tui::worker::Reply::Answer(Box::new(a))));
        term.draw(|f| ui::render(&app, f)).unwrap();
    }
    // One hour in the middle of the ring, as the viewer's zoom shows it: the same rows over
    // an hour.
    const HOUR: u64 = 3_600_000_000_000;
    let mid = reader.meta().start_ts + span.max(HOUR) / 2;
    q.start = mid - HOUR / 2;
    q.interval = HOUR.div_ceil(q.rows as u64);
    q.whole = false;
    let in_hour: u64 = reader
        .chunks()
        .iter()
        .filter(|c| c.summary.max_ts >= q.start && c.summary.min_ts < q.end())
        .map(|c| c.summary.events)
        .sum();
    let cache = ColumnCache::new(query::CACHE_BUDGET);
    let filters: Vec<String> = match std::env::var("RING_FILTERS") {
        Ok(v) => v.split(';').map(str::to_owned).collect(),
        Err(_) => [
            "",
            "proc.name=postgres",
            "proc.name=postgres and latency>1ms",
            "latency>1ms",
            // Fields no rollup keys: the columns of every chunk in the hour.
            "proc.pid=1000",
            "fd.name=/data/postgres/file0",
        ]
        .map(str::to_owned)
        .into(),
    };
    for filter in filters.iter().map(String::as_str) {
        q.gen += 1;
        q.filter = if filter.is_empty() {
            None
        } else {
            iocap_tui::panes::filter_bar::compile(filter, &reader).unwrap()
        };
        let label = if filter.is_empty() { "(none)" } else { filter };
        let (cold, a) = run(&q, Some(&cache));
        let t = Instant::now();
        query::warm(&q, &cache, &cancel).unwrap();
        let fill = t.elapsed();
        let (warm, _) = run(&q, Some(&cache));
        println!(
            "one hour, {label:<36} cold {:>8.1?} {:>4.0} M/s  warm {:>8.1?}  (fill {:>7.1?})  matched {}  {} chunks from rollups  {}",
            cold,
            rate(in_hour, cold),
            warm,
            fill,
            a.matched,
            a.rolled,
            memory()
        );
    }
    let st = cache.stats();
    println!(
        "column cache {} MB of {} MB, {} chunk columns",
        st.bytes >> 20,
        query::CACHE_BUDGET >> 20,
        st.entries
    );
    // The same hour as a filter on the whole ring's view: chunks outside it are ruled out by
    // their summaries.
    let mut whole = first_q.clone();
    let from = (mid - HOUR / 2) - reader.meta().start_ts;
    let text = format!(
        "evt.time>={}s and evt.time<{}s",
        from / 1_000_000_000,
        from / 1_000_000_000 + 3600
    );
    whole.gen = q.gen + 1;
    whole.filter = iocap_tui::panes::filter_bar::compile(&text, &reader).unwrap();
    let (d, a) = run(&whole, None);
    println!(
        "whole ring, {text:<36} cold {:>8.1?}  matched {}  {}",
        d,
        a.matched,
        memory()
    );
    whole.gen += 1;
    whole.filter = iocap_tui::panes::filter_bar::compile(&format!("{text} and proc.name=postgres"), &reader).unwrap();
    let (d, a) = run(&whole, None);
    println!(
        "  ... and proc.name=postgres              cold {:>8.1?}  matched {}  {}",
        d,
        a.matched,
        memory()
    );
    println!("{}", memory());
}
