//! Shared helpers: a model of what was written, to compare a read against.

use std::collections::HashMap;

use iocap_format::escape::escape;
use iocap_format::{
    ChunkDecoder, ColSet, Columns, Device, DropStats, Error, Event, FdTarget, FileEntry, Meta, ProcEntry, Reader,
    Source, Tables, Writer, WriterOptions,
};

/// One call on a [`Writer`]. Nearly every op of a test is an event: boxing them to shrink the
/// rare others would only add an allocation each.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Op {
    Event(Event),
    Str(Vec<u8>),
    Proc(ProcEntry),
    File(FileEntry),
    Dev(Device),
    Drops(DropStats),
    Flush,
}

/// What a reader must give back for a capture written by [`write`].
#[derive(Clone, Debug, Default)]
pub struct Expected {
    /// Events per chunk, in file order.
    pub chunks: Vec<Vec<Event>>,
    /// (raw bytes, id) of every interned string.
    pub strings: Vec<(Vec<u8>, u32)>,
    pub procs: Vec<ProcEntry>,
    pub files: Vec<FileEntry>,
    /// Devices in order of first appearance, last name wins.
    pub devices: Vec<Device>,
    pub drops: Vec<DropStats>,
    pub meta: Meta,
    pub stop_ts: u64,
}

impl Expected {
    pub fn events(&self) -> Vec<Event> {
        self.chunks.concat()
    }
}

/// Play `ops` on a writer into memory; returns the bytes and what reading them must give.
pub fn write(meta: &Meta, ops: &[Op], chunk_events: usize, stop_ts: u64) -> (Vec<u8>, Expected) {
    write_by(meta, ops, chunk_events, stop_ts, false)
}

/// [`write`], by a writer with an encoder thread ([`Writer::with_encoder`]) if `encoder`.
pub fn write_by(meta: &Meta, ops: &[Op], chunk_events: usize, stop_ts: u64, encoder: bool) -> (Vec<u8>, Expected) {
    let opts = WriterOptions { chunk_events, level: 1 };
    let mut w = if encoder {
        Writer::with_encoder(Vec::new(), meta, opts).unwrap()
    } else {
        Writer::new(Vec::new(), meta, opts).unwrap()
    };
    let mut x = Expected {
        meta: escaped_meta(meta),
        stop_ts,
        ..Expected::default()
    };
    // The header's devices come first; device frames rename them or add others.
    for d in &x.meta.devices {
        if !x.devices.iter().any(|known| known.dev == d.dev) {
            x.devices.push(d.clone());
        }
    }
    let mut open: Vec<Event> = Vec::new();
    let mut interned: HashMap<Vec<u8>, u32> = HashMap::new();
    for op in ops {
        match op {
            Op::Event(e) => {
                w.push(e).unwrap();
                open.push(e.clone());
                if open.len() == chunk_events.max(1) {
                    x.chunks.push(std::mem::take(&mut open));
                }
            }
            Op::Str(b) => {
                let id = w.intern(b);
                if let Some(&prev) = interned.get(b) {
                    assert_eq!(prev, id, "interning the same bytes twice gives one id");
                } else if !b.is_empty() {
                    interned.insert(b.clone(), id);
                    x.strings.push((b.clone(), id));
                }
            }
            Op::Proc(p) => {
                let id = w.add_proc(p.clone());
                x.procs.push(ProcEntry { id, ..p.clone() });
            }
            Op::File(f) => {
                let id = w.add_file(f.clone());
                x.files.push(FileEntry { id, ..f.clone() });
            }
            Op::Dev(d) => {
                w.add_device(d);
                let d = Device {
                    dev: d.dev,
                    name: escape(d.name.as_bytes()),
                };
                match x.devices.iter_mut().find(|x| x.dev == d.dev) {
                    Some(old) => *old = d,
                    None => x.devices.push(d),
                }
            }
            Op::Drops(s) => {
                w.record_drops(s).unwrap();
                x.drops.push(s.clone());
            }
            Op::Flush => {
                w.flush().unwrap();
                if !open.is_empty() {
                    x.chunks.push(std::mem::take(&mut open));
                }
            }
        }
    }
    if !open.is_empty() {
        x.chunks.push(open);
    }
    (w.finish(stop_ts).unwrap(), x)
}

/// `meta` as a reader gives it back: every string from the traced host escaped.
pub fn escaped_meta(meta: &Meta) -> Meta {
    let esc = |s: &String| escape(s.as_bytes());
    Meta {
        iocap_version: esc(&meta.iocap_version),
        host: esc(&meta.host),
        kernel: esc(&meta.kernel),
        arch: esc(&meta.arch),
        command_line: meta.command_line.iter().map(esc).collect(),
        filter: meta.filter.as_ref().map(esc),
        next_file: meta.next_file.as_ref().map(esc),
        missing: meta.missing.iter().map(esc).collect(),
        kept: meta.kept.iter().map(esc).collect(),
        devices: meta
            .devices
            .iter()
            .map(|d| Device {
                dev: d.dev,
                name: esc(&d.name),
            })
            .collect(),
        ..meta.clone()
    }
}

/// Decode every chunk of `r` (all columns) into rows.
/// Every file entry's id and what it refers to, by id: what a reader keeps of them.
pub fn files(t: &Tables) -> Vec<(u32, FdTarget)> {
    let mut all: Vec<_> = t.files().collect();
    all.sort_by_key(|&(id, _)| id);
    all
}

pub fn read_chunks<S: Source>(r: &Reader<S>) -> Result<Vec<Vec<Event>>, Error> {
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    (0..r.chunks().len())
        .map(|i| {
            r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols)?;
            Ok((0..cols.len()).map(|j| cols.event(j)).collect())
        })
        .collect()
}

/// A small capture with several chunks, tables between them, drop stats and a flush.
pub fn small_capture() -> (Vec<u8>, Expected) {
    let meta = Meta {
        iocap_version: "test".into(),
        host: "host\x1b[31m".into(),
        kernel: "6.18.0".into(),
        arch: "x86_64".into(),
        boot_to_wall_ns: 1_700_000_000_000_000_000,
        start_ts: 1_000,
        command_line: vec!["iocap".into(), "record".into()],
        filter: Some("fd.type=file".into()),
        cpus: 2,
        devices: vec![Device {
            dev: 0xfd0_0000,
            name: "vda".into(),
        }],
        next_file: Some("trace.cap\x1b1".into()),
        missing: vec!["the tracepoint io_uring:x\x1b[2J (Linux 9.9 and later): nothing".into()],
        kept: vec!["the writeback\x1b[2J of the traced processes' files".into()],
        stacks_min_ns: Some(1_000_000),
        containers: true,
    };
    let mut ops = Vec::new();
    let mut ts = 1_000u64;
    for i in 0..40u32 {
        if i % 9 == 0 {
            ops.push(Op::Str(format!("/data/file{i}\n").into_bytes()));
            ops.push(Op::Proc(ProcEntry {
                pid: 100 + i,
                name: i,
                ..ProcEntry::default()
            }));
            ops.push(Op::File(FileEntry {
                pid: 100 + i,
                fd: 3,
                kind: iocap_format::FdType::File,
                ..FileEntry::default()
            }));
        }
        if i == 20 {
            ops.push(Op::Drops(DropStats {
                ts,
                per_cpu: vec![1, 2],
            }));
            ops.push(Op::Dev(Device {
                dev: 0x800_0000,
                name: "sda".into(),
            }));
        }
        if i == 27 {
            ops.push(Op::Flush);
        }
        ts += 1_000 + u64::from(i % 5) * 333;
        let mut e = Event::syscall(ts, 200 + u64::from(i) * 17, 100, 100 + i % 3, i % 4, 4096);
        e.fd = 3;
        if i % 13 == 0 {
            e.class = iocap_format::Class::Block;
            e.dev = 0xfd0_0000;
            e.sector = u64::from(i) * 8;
            e.bytes = 4096;
        }
        ops.push(Op::Event(e));
    }
    write(&meta, &ops, 8, ts + 5_000)
}

/// xorshift64*: deterministic noise for the synthetic captures, the same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Log-uniform in [lo, hi): latencies spread over decades, as they are.
    pub fn log_uniform(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (a + (b - a) * u).exp() as u64
    }
}

/// A capture of `chunks` chunks of 256 events: in the even ones every event is on one file, so
/// each has a file rollup (frame kind 16); in the odd ones each event is on a file of its own,
/// so each has a rollup without files (kind 13).
pub fn few_and_many_files(chunks: u64) -> Vec<u8> {
    let opts = WriterOptions {
        chunk_events: 256,
        ..WriterOptions::default()
    };
    let mut w = Writer::new(Vec::new(), &Meta::default(), opts).unwrap();
    let n = 256 * chunks;
    for i in 0..n {
        let file = if (i / 256) % 2 == 0 { 5 } else { 100 + i as u32 };
        w.push(&Event {
            file,
            fd: 3,
            ..Event::syscall(1_000 + i * 10, 100 + i, 7, 7, 0, 4096)
        })
        .unwrap();
    }
    w.finish(1_000 + n * 10 + 10_000).unwrap()
}
