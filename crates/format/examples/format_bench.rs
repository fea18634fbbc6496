//! Capture format benchmark on a synthetic but realistic file I/O mix (what the recorder sees
//! while fio/dd run): encode+compress and decode throughput on one core, and bytes per event.
//!
//! ```text
//! cargo run --release -p iocap-format --example format_bench [-- EVENTS [CHUNK_EVENTS]]  # 4,000,000 65,536
//! cargo run --release -p iocap-format --example format_bench -- --sample PATH EVENTS [CHUNK_EVENTS]
//! cargo run --release -p iocap-format --example format_bench -- --file CAPTURE
//!     # PER_COLUMN=1: decode cost of each column alone; DECODE_ONLY=1: no rewrites (profiling)
//! cargo run --release -p iocap-format --example format_bench -- --rewrite CAPTURE OUT
//! ```
//!
//! `--sample` only writes a capture of that mix (used for fuzzing seeds and fixtures);
//! `--file` gives the size and decode figures of a real capture; `--rewrite` writes a capture
//! again with this version's writer, chunk for chunk, each table entry just before the first
//! chunk that needs it (as the recorder does), so one recording compares format versions.

use std::time::{Duration, Instant};

use iocap_format::varint::Cursor;
use iocap_format::{
    mkdev, ChunkDecoder, Class, Col, ColSet, Columns, Device, DropStats, Event, FdType, FileEntry, Meta, ProcEntry,
    ReadOptions, Reader, Rollup, Writer, WriterOptions,
};

/// xorshift64*: deterministic, so every run measures the same file.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Log-uniform in [lo, hi): latencies spread over decades, as they are.
    fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (a + (b - a) * u).exp() as u64
    }
}

const PID: u32 = 4242;
const THREADS: u32 = 4;
const VDA: u32 = 253 << 20;

/// x86_64 syscall numbers of the mix.
mod nr {
    pub const READ: u32 = 0;
    pub const WRITE: u32 = 1;
    pub const FSTAT: u32 = 5;
    pub const LSEEK: u32 = 8;
    pub const PREAD64: u32 = 17;
    pub const PWRITE64: u32 = 18;
    pub const FUTEX: u32 = 202;
    pub const EPOLL_WAIT: u32 = 232;
}

/// One thread's state: its clock and file offset.
struct Thread {
    tid: u32,
    now: u64,
    offset: u64,
    fd: i32,
    file: u32,
}

/// Generate `n` events as a recorder would hand them over: each thread's syscalls back to back
/// with short user-space gaps, a block request for ~2% of them, in completion order.
fn workload(n: usize, seed: u64) -> Vec<Event> {
    let mut rng = Rng(seed | 1);
    let start = 1_000_000_000_000u64;
    let mut threads: Vec<Thread> = (0..THREADS)
        .map(|i| Thread {
            tid: PID + i,
            now: start + u64::from(i) * 1_000,
            offset: 0,
            fd: 3 + i as i32,
            file: 1 + i,
        })
        .collect();
    let mut out = Vec::with_capacity(n + 64);
    let mut sector = 2_048_000u64;
    // Completion order: always advance the thread whose clock is furthest behind, and emit its
    // event (ts = start) when it completes. Block requests complete out of syscall order.
    let mut pending_block: Vec<Event> = Vec::new();
    while out.len() < n {
        let t = threads.iter_mut().min_by_key(|t| t.now).expect("threads");
        t.now += rng.log_uniform(150, 3_000); // user-space time between syscalls
        let roll = rng.below(100);
        let (nr, lat, ret, fd, file, bytes) = match roll {
            0..=34 => {
                // 4 KiB pread64: mostly page-cache hits, some misses that go to the disk.
                let miss = rng.below(20) == 0;
                let lat = if miss {
                    rng.log_uniform(80_000, 10_000_000)
                } else {
                    rng.log_uniform(400, 4_000)
                };
                t.offset += 4096;
                (nr::PREAD64, lat, 4096, t.fd, t.file, 4096)
            }
            35..=54 => (nr::PWRITE64, rng.log_uniform(1_000, 20_000), 4096, t.fd, t.file, 4096),
            55..=64 => (nr::READ, rng.log_uniform(300, 5_000), 4096, t.fd, t.file, 4096),
            65..=74 => (nr::WRITE, rng.log_uniform(800, 15_000), 4096, t.fd, t.file, 4096),
            75..=79 => (nr::FSTAT, rng.log_uniform(200, 900), 0, t.fd, t.file, 0),
            80..=84 => {
                t.offset = rng.below(1 << 20) * 4096;
                (nr::LSEEK, rng.log_uniform(150, 600), t.offset as i64, t.fd, t.file, 0)
            }
            85..=94 => (nr::FUTEX, rng.log_uniform(300, 2_000_000), 0, -1, 0, 0),
            _ => (nr::EPOLL_WAIT, rng.log_uniform(1_000, 10_000_000), 1, 9, 9, 0),
        };
        let ts = t.now;
        t.now += lat;
        let mut e = Event::syscall(ts, lat, PID, t.tid, nr, ret);
        e.proc = 1;
        e.fd = fd;
        e.file = file;
        e.bytes = bytes;
        out.push(e);
        if rng.below(50) == 0 {
            // A block request issued now, completing 100 µs–5 ms later.
            let size = [4096u64, 8192, 65_536, 131_072][rng.below(4) as usize];
            sector += size / 512 + if rng.below(4) == 0 { rng.below(1 << 20) } else { 0 };
            let write = rng.below(3) == 0;
            pending_block.push(Event {
                class: Class::Block,
                ts,
                latency: rng.log_uniform(100_000, 5_000_000),
                pid: PID,
                tid: t.tid,
                proc: 1,
                fd: -1,
                bytes: size,
                dev: VDA,
                sector,
                queue: rng.log_uniform(500, 50_000),
                op: u8::from(write),
                flags: if write { iocap_format::blk_flags::SYNC } else { 0 },
                ..Event::default()
            });
        }
        let now = ts;
        pending_block.retain(|b| {
            if b.end() <= now {
                out.push(b.clone());
                false
            } else {
                true
            }
        });
    }
    out.truncate(n);
    out
}

fn meta() -> Meta {
    Meta {
        iocap_version: env!("CARGO_PKG_VERSION").into(),
        host: "bench".into(),
        kernel: "6.18.0".into(),
        arch: "x86_64".into(),
        boot_to_wall_ns: 1_763_000_000_000_000_000,
        start_ts: 1_000_000_000_000,
        command_line: vec!["iocap".into(), "record".into(), "-w".into(), "trace.cap".into()],
        filter: None,
        cpus: 2,
        devices: vec![Device {
            dev: VDA,
            name: "vda".into(),
        }],
        next_file: None,
        missing: Vec::new(),
        kept: Vec::new(),
        stacks_min_ns: None,
        containers: false,
    }
}

/// Write `events` as a recorder would: tables first, drop stats once a second.
fn write(events: &[Event], opts: WriterOptions) -> Vec<u8> {
    let mut w = Writer::new(Vec::with_capacity(events.len() * 4), &meta(), opts).expect("writer");
    let name = w.intern(b"fio");
    let exe = w.intern(b"/usr/bin/fio");
    let cmd = w.intern(b"fio --name=randread --rw=randrw --bs=4k --size=4g --numjobs=4");
    w.add_proc(ProcEntry {
        pid: PID,
        ppid: 1,
        name,
        exe,
        cmdline: cmd,
        ..ProcEntry::default()
    });
    for i in 0..THREADS {
        let path = w.intern(format!("/data/fio/randread.{i}.0").as_bytes());
        w.add_file(FileEntry {
            pid: PID,
            fd: 3 + i as i32,
            kind: FdType::File,
            name: path,
            dev: mkdev(253, 0),
            ..FileEntry::default()
        });
    }
    let ep = w.intern(b"anon_inode:[eventpoll]");
    w.add_file(FileEntry {
        pid: PID,
        fd: 9,
        kind: FdType::Eventpoll,
        name: ep,
        ..FileEntry::default()
    });
    w.add_device(&Device {
        dev: VDA,
        name: "vda".into(),
    });
    let mut next_stats = events.first().map_or(0, |e| e.ts) + 1_000_000_000;
    for e in events {
        if e.ts >= next_stats {
            w.record_drops(&DropStats {
                ts: e.ts,
                per_cpu: vec![0, 0],
            })
            .expect("stats");
            next_stats += 1_000_000_000;
        }
        w.push(e).expect("push");
    }
    let stop = events.last().map_or(0, |e| e.end());
    w.finish(stop).expect("finish")
}

/// CPU time this thread has run, from /proc/thread-self/schedstat (ns; 0 if unavailable).
/// The machine is shared: CPU time, unlike wall time, does not count other processes' turns.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Decode every chunk (`want` columns) `rounds` times; returns the CPU time taken.
fn decode(bytes: &[u8], want: ColSet, rounds: usize) -> (Duration, u64) {
    let r = Reader::from_bytes(bytes.to_vec()).expect("reader");
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    let mut check = 0u64;
    let t = Cpu::now();
    for _ in 0..rounds {
        for i in 0..r.chunks().len() {
            r.read_chunk(i, want, &mut dec, &mut cols).expect("chunk");
            check = check.wrapping_add(cols.latency.last().copied().unwrap_or(0));
        }
    }
    (t.elapsed(), check)
}

/// Print bytes/event of each column of the `n` events in `bytes` ([`column_sizes`]).
fn print_column_sizes(bytes: &[u8], n: usize) {
    let cols: Vec<String> = column_sizes(bytes)
        .iter()
        .map(|&(id, stored, enc)| format!("{id}:{:.2}({enc})", stored as f64 / n as f64))
        .collect();
    println!(
        "bytes/event by column id (encoding of the first chunk): {}",
        cols.join(" ")
    );
}

/// Stored bytes per event of each column, summed over every chunk, from the column directories
/// (layout in FORMAT.md): where the bytes go.
fn column_sizes(bytes: &[u8]) -> Vec<(u64, u64, u8)> {
    let r = Reader::from_bytes(bytes.to_vec()).expect("reader");
    let mut sizes: Vec<(u64, u64, u8)> = Vec::new();
    for c in r.chunks() {
        let payload = &bytes[c.offset as usize + 16..];
        let mut cur = Cursor::new(payload);
        let _summary = cur.len_bytes().expect("summary");
        let ncols = cur.varint().expect("ncols");
        for _ in 0..ncols {
            let id = cur.varint().expect("id");
            let encoding = cur.u8().expect("encoding");
            let _codec = cur.u8().expect("codec");
            let _raw = cur.varint().expect("raw_len");
            let stored = cur.varint().expect("stored_len");
            match sizes.iter_mut().find(|s| s.0 == id) {
                Some(s) => s.1 += stored,
                None => sizes.push((id, stored, encoding)),
            }
        }
    }
    sizes
}

/// Figures for a real capture: its size, where the bytes go, decode speed, and its size when
/// its events are rewritten in one go (the recorder closes chunks on a timer, so a short
/// recording has small chunks).
/// How many chunks have a rollup, how many of those hold files in their keys, and their keys
/// and cells; then what the files cost: the rollups the current writer makes of each chunk's
/// events against those it makes with the files left out (as a 1.16 writer did), in bytes
/// before the rollup frame's compression (the cells' totals are stored as they are).
fn print_rollups(r: &Reader<Vec<u8>>) {
    let mut dec = iocap_format::ChunkDecoder::new();
    let (mut with, mut files, mut keys, mut cells) = (0, 0, 0, 0);
    for i in 0..r.chunks().len() {
        let Some(rollup) = r.rollup(i, &mut dec) else { continue };
        with += 1;
        files += usize::from(rollup.with_file);
        keys += rollup.totals.len();
        cells += rollup.cells.len();
    }
    println!(
        "rollups: {with} of {} chunks, {files} with files in their keys; {keys} keys, {cells} cells",
        r.chunks().len()
    );
    let (mut cols, mut out) = (Columns::default(), Vec::new());
    let (mut now, mut before, mut kept) = ([0usize; 2], [0usize; 2], 0);
    let mut size = |r: &Rollup, at: &mut [usize; 2]| {
        out.clear();
        r.encode(&mut out);
        at[0] += out.len();
        out.clear();
        r.encode_cell_totals(&mut out);
        at[1] += out.len();
    };
    for i in 0..r.chunks().len() {
        r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).expect("chunk");
        let made = Rollup::of(&cols, 0);
        kept += usize::from(made.with_file);
        size(&made, &mut now);
        cols.file.fill(0);
        let mut without = Rollup::of(&cols, 0);
        without.with_file = false;
        size(&without, &mut before);
    }
    let n = r.event_count().max(1) as f64;
    println!(
        "rollups made again: {kept} with files; keys {} B, cells' totals {} B ({:.3} bytes/event); \
         without files {} B, {} B ({:.3} bytes/event)",
        now[0],
        now[1],
        (now[0] + now[1]) as f64 / n,
        before[0],
        before[1],
        (before[0] + before[1]) as f64 / n
    );
}

fn real_file(bytes: &[u8]) {
    let r = Reader::from_bytes(bytes.to_vec()).expect("reader");
    let n = r.event_count() as usize;
    let events: Vec<Event> = r.events().collect::<Result<_, _>>().expect("events");
    println!(
        "file: {n} events in {} chunks, {} bytes, {:.2} bytes/event",
        r.chunks().len(),
        bytes.len(),
        bytes.len() as f64 / n as f64
    );
    print_column_sizes(bytes, n);
    print_rollups(&r);
    let rounds = (20_000_000 / n.max(1)).max(1);
    let (d, _) = decode(bytes, ColSet::ALL, rounds);
    println!(
        "decode all cols: {:7.1} M events/s (per CPU second)",
        rate(n, rounds, d)
    );
    let tl = ColSet::NONE.with(Col::Ts).with(Col::Latency);
    let (d, _) = decode(bytes, tl, rounds);
    println!(
        "decode ts+lat:   {:7.1} M events/s (per CPU second)",
        rate(n, rounds, d)
    );
    if std::env::var_os("PER_COLUMN").is_some() {
        let per: Vec<String> = (0..16)
            .map(|c| {
                let (d, _) = decode(bytes, ColSet(1 << c), rounds);
                format!("{c}:{:.1}", d.as_nanos() as f64 / (n * rounds) as f64)
            })
            .collect();
        println!("ns/event decoding one column alone: {}", per.join(" "));
    }
    if std::env::var_os("DECODE_ONLY").is_some() {
        // For profiling the decoder alone.
        return;
    }
    for (level, chunk_events) in [(1, 65_536), (3, 65_536), (9, 65_536), (3, 16_384)] {
        let opts = WriterOptions { level, chunk_events };
        let t = Instant::now();
        let mut w = Writer::new(Vec::new(), r.meta(), opts).expect("writer");
        events.iter().for_each(|e| w.push(e).expect("push"));
        let again = w.finish(r.stop_ts()).expect("finish");
        println!(
            "rewritten in {chunk_events}-event chunks, zstd {level}, no tables: {:.2} bytes/event, {:.1} M events/s",
            again.len() as f64 / n as f64,
            rate(n, 1, t.elapsed())
        );
    }
}

/// Rewrite a capture with the current writer; prints both sizes.
fn rewrite(bytes: &[u8], out: &str) {
    let r = Reader::new_with(
        bytes.to_vec(),
        ReadOptions {
            file_details: true,
            ..ReadOptions::default()
        },
    )
    .expect("reader");
    let t = r.tables();
    // Each entry whole, its process, fd and opening time too: they are written again.
    let all_files = t.file_entries().expect("kept on request");
    let mut w = Writer::new(Vec::new(), r.meta(), WriterOptions::default()).expect("writer");
    let (mut procs, mut files, mut strings) = (0usize, 0usize, 1u32);
    let mut intern_to = |w: &mut Writer<Vec<u8>>, id: u32| {
        while strings <= id {
            assert_eq!(w.intern(t.string(strings).as_bytes()), strings, "string ids are dense");
            strings += 1;
        }
    };
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    for i in 0..r.chunks().len() {
        r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).expect("chunk");
        let max_proc = cols.proc.iter().copied().max().unwrap_or(0);
        let max_file = cols.file.iter().copied().max().unwrap_or(0);
        while procs < t.procs().len() && t.procs()[procs].id <= max_proc {
            let p = t.procs()[procs].clone();
            [p.name, p.exe, p.cmdline]
                .into_iter()
                .for_each(|s| intern_to(&mut w, s));
            w.add_proc(p);
            procs += 1;
        }
        while files < all_files.len() && all_files[files].id <= max_file {
            let f = all_files[files].clone();
            intern_to(&mut w, f.name);
            w.add_file(f);
            files += 1;
        }
        for d in t.devices() {
            if i == 0 {
                w.add_device(d);
            }
        }
        (0..cols.len()).for_each(|e| w.push(&cols.event(e)).expect("push"));
        w.flush().expect("flush");
    }
    // Entries no event refers to are still in the capture.
    for p in &t.procs()[procs..] {
        [p.name, p.exe, p.cmdline]
            .into_iter()
            .for_each(|s| intern_to(&mut w, s));
        w.add_proc(p.clone());
    }
    for f in &all_files[files..] {
        intern_to(&mut w, f.name);
        w.add_file(f.clone());
    }
    let again = w.finish(r.stop_ts()).expect("finish");
    let n = r.event_count() as f64;
    println!(
        "{} events: {:.3} bytes/event as read, {:.3} rewritten",
        n,
        bytes.len() as f64 / n,
        again.len() as f64 / n
    );
    std::fs::write(out, again).expect("write");
}

/// A stopwatch of this thread's CPU time.
struct Cpu(u64);

impl Cpu {
    fn now() -> Cpu {
        Cpu(cpu_ns())
    }

    fn elapsed(&self) -> Duration {
        Duration::from_nanos(cpu_ns() - self.0)
    }
}

fn rate(events: usize, rounds: usize, d: Duration) -> f64 {
    (events * rounds) as f64 / d.as_secs_f64() / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--sample") {
        let path = args.get(1).expect("--sample PATH EVENTS [CHUNK_EVENTS]");
        let n: usize = args.get(2).and_then(|s| s.parse().ok()).expect("EVENTS");
        let chunk_events = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(65_536);
        let opts = WriterOptions {
            chunk_events,
            ..WriterOptions::default()
        };
        std::fs::write(path, write(&workload(n, 7), opts)).expect("write sample");
        return;
    }
    if args.first().map(String::as_str) == Some("--file") {
        let path = args.get(1).expect("--file PATH");
        real_file(&std::fs::read(path).expect("read capture"));
        return;
    }
    if args.first().map(String::as_str) == Some("--rewrite") {
        let path = args.get(1).expect("--rewrite PATH OUT");
        rewrite(&std::fs::read(path).expect("read capture"), args.get(2).expect("OUT"));
        return;
    }
    let n: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(4_000_000);
    let events = workload(n, 7);
    let blocks = events.iter().filter(|e| e.class == Class::Block).count();
    println!(
        "workload: {n} events ({:.1}% block), {THREADS} threads, pread64/pwrite64/read/write 4 KiB, fstat, lseek, futex, epoll_wait",
        100.0 * blocks as f64 / n as f64
    );
    let mut opts = WriterOptions::default();
    if let Some(c) = args.get(1).and_then(|s| s.parse().ok()) {
        opts.chunk_events = c;
    }
    println!("writer: {} events/chunk, zstd level {}", opts.chunk_events, opts.level);
    let _warm = write(&events[..n.min(200_000)], opts.clone());
    let t = Cpu::now();
    let bytes = write(&events, opts);
    let enc = t.elapsed();
    println!(
        "encode+compress: {:7.1} M events/s per CPU second ({:.3} s)",
        rate(n, 1, enc),
        enc.as_secs_f64()
    );
    println!(
        "size:            {:7.2} bytes/event ({} bytes, tables, stats and index included)",
        bytes.len() as f64 / n as f64,
        bytes.len()
    );
    print_column_sizes(&bytes, n);
    let rounds = 3;
    let (d, c1) = decode(&bytes, ColSet::ALL, rounds);
    println!("decode all cols: {:7.1} M events/s per CPU second", rate(n, rounds, d));
    let tl = ColSet::NONE.with(Col::Ts).with(Col::Latency);
    let (d, c2) = decode(&bytes, tl, rounds);
    println!("decode ts+lat:   {:7.1} M events/s per CPU second", rate(n, rounds, d));
    assert_eq!(c1, c2, "both decodes saw the same latencies");
}
