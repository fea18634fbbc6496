//! Filter throughput on one core: `cargo run --release -p iocap-filter --example bench [EVENTS]`.
//!
//! Writes a capture of EVENTS (default 8 000 000) synthetic events — a database, a benchmark
//! and background noise doing reads, writes and fsyncs on a few dozen files, plus block
//! requests — with `iocap_format::Writer`, then times, for a three-clause filter:
//!
//! 1. decode + filter + log2 latency histogram, chunk by chunk (what `iocap report` does);
//! 2. filter only, over columns decoded beforehand (what the viewer does on a re-filter);
//! 3. filter + histogram over those decoded columns.
//!
//! and prints events/s (all events of the capture, divided by the time). Chunk skipping by
//! summary is on in 1, as in real use, and reported.

use std::time::Instant;

use iocap_filter::{Bitmap, Compiled, Filter};
use iocap_format::{
    log2_bucket, mkdev, ChunkDecoder, Col, Columns, Event, FdType, Reader, Writer, WriterOptions, LOG2_BUCKETS,
};
use iocap_testkit::{add_file, add_proc, bare_meta, block, Rng};

const FILTER: &str = "proc.name=postgres and evt.type in (pread64, read) and latency>=50us";

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(8_000_000);
    let t = Instant::now();
    let bytes = generate(n);
    println!(
        "generated {n} events in {:.2}s: {} bytes, {:.2} bytes/event",
        t.elapsed().as_secs_f64(),
        bytes.len(),
        bytes.len() as f64 / n as f64
    );
    let r = Reader::from_bytes(bytes).expect("the capture reads back");
    let filter = Filter::parse(FILTER).expect("the filter parses");
    let t = Instant::now();
    let c = filter.compile(r.meta(), r.tables());
    println!("filter: {FILTER}\ncompiled in {:.1}us", t.elapsed().as_secs_f64() * 1e6);

    // 1. decode + filter + histogram.
    let mut best = f64::MAX;
    let mut result = (0, [0u64; LOG2_BUCKETS], 0);
    for _ in 0..3 {
        let t = Instant::now();
        result = decode_filter_hist(&r, &c);
        best = best.min(t.elapsed().as_secs_f64());
    }
    let (matched, hist, skipped) = result;
    println!(
        "decode+filter+histogram: {:>7.1} M events/s ({:.3}s; {matched} matched; {skipped} of {} chunks skipped)",
        n as f64 / best / 1e6,
        best,
        r.chunks().len()
    );
    assert_eq!(hist.iter().sum::<u64>(), matched as u64);

    // 2 and 3: over decoded columns.
    let want = c.columns().with(Col::Latency);
    let mut dec = ChunkDecoder::new();
    let chunks: Vec<Columns> = (0..r.chunks().len())
        .map(|i| {
            let mut cols = Columns::default();
            r.read_chunk(i, want, &mut dec, &mut cols).expect("chunk decodes");
            cols
        })
        .collect();
    let mut bits = Bitmap::default();
    let mut best = f64::MAX;
    let mut m2 = 0;
    for _ in 0..5 {
        let t = Instant::now();
        m2 = 0;
        for cols in &chunks {
            c.eval(cols, &mut bits);
            m2 += bits.count_ones();
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    assert_eq!(m2, matched);
    println!(
        "filter only (decoded):   {:>7.1} M events/s ({best:.3}s)",
        n as f64 / best / 1e6
    );
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut h = [0u64; LOG2_BUCKETS];
        for cols in &chunks {
            c.eval(cols, &mut bits);
            histogram(&bits, &cols.latency, &mut h);
        }
        best = best.min(t.elapsed().as_secs_f64());
        assert_eq!(h, hist);
    }
    println!(
        "filter+histogram (decoded): {:>4.1} M events/s ({best:.3}s)",
        n as f64 / best / 1e6
    );
}

fn decode_filter_hist(r: &Reader<Vec<u8>>, c: &Compiled) -> (usize, [u64; LOG2_BUCKETS], usize) {
    let want = c.columns().with(Col::Latency);
    let (mut dec, mut cols, mut bits) = (ChunkDecoder::new(), Columns::default(), Bitmap::default());
    let mut hist = [0u64; LOG2_BUCKETS];
    let (mut matched, mut skipped) = (0, 0);
    for (i, chunk) in r.chunks().iter().enumerate() {
        if !c.may_match(&chunk.summary) {
            skipped += 1;
            continue;
        }
        r.read_chunk(i, want, &mut dec, &mut cols).expect("chunk decodes");
        c.eval(&cols, &mut bits);
        matched += bits.count_ones();
        histogram(&bits, &cols.latency, &mut hist);
    }
    (matched, hist, skipped)
}

fn histogram(bits: &Bitmap, latency: &[u64], h: &mut [u64; LOG2_BUCKETS]) {
    for i in bits.iter_ones() {
        if let Some(&l) = latency.get(i) {
            h[log2_bucket(l)] += 1;
        }
    }
}

fn generate(n: usize) -> Vec<u8> {
    let meta = bare_meta(1_000_000_000, mkdev(253, 0));
    let mut w = Writer::new(Vec::with_capacity(n * 5), &meta, WriterOptions::default()).expect("writer");
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let names = [
        "postgres",
        "fio",
        "dd",
        "systemd-journal",
        "kworker/u4:2",
        "bash",
        "sshd",
        "rsync",
    ];
    let procs: Vec<(u32, u32)> = names
        .iter()
        .enumerate()
        .flat_map(|(i, name)| {
            (0..4u32)
                .map(|k| {
                    let pid = 1000 + i as u32 * 10 + k;
                    (add_proc(&mut w, pid, 1, name.as_bytes()), pid)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    let files: Vec<u32> = (0..64)
        .map(|i| {
            let name = format!("/var/lib/postgresql/base/16384/{}", 2600 + i);
            add_file(&mut w, 1000, 3 + i, FdType::File, name.as_bytes(), mkdev(253, 0))
        })
        .collect();
    // read, write, pread64, pwrite64, fsync, openat, close, futex, epoll_wait
    let nrs = [0u32, 1, 17, 18, 74, 257, 3, 202, 232];
    let mut ts = meta.start_ts;
    for _ in 0..n {
        let x = rng.next_u64();
        ts += 200 + (x & 0x3ff);
        let (proc, pid) = procs[(x >> 10) as usize % procs.len()];
        // Bimodal latency: cache hits around 2us, misses around 200us, rare stalls.
        let latency = match (x >> 20) % 100 {
            0 => 5_000_000 + (x >> 32) % 20_000_000,
            1..=20 => 100_000 + (x >> 32) % 200_000,
            _ => 1_000 + (x >> 32) % 3_000,
        };
        let e = if (x >> 40).is_multiple_of(20) {
            Event {
                sector: (x >> 8) % (1 << 30),
                queue: (x >> 50) % 50_000,
                op: ((x >> 47) % 3) as u8,
                ..block(ts, latency, pid, proc, mkdev(253, 0), 4096 << ((x >> 44) % 6))
            }
        } else {
            let nr = nrs[(x >> 44) as usize % nrs.len()];
            let fi = (x >> 52) as usize % files.len();
            Event {
                proc,
                file: files[fi],
                fd: 3 + fi as i32,
                bytes: 8192,
                ..Event::syscall(ts, latency, pid, pid, nr, 8192)
            }
        };
        w.push(&e).expect("push");
    }
    w.finish(ts + 1).expect("finish")
}
