//! Fuzz the capture reader: open arbitrary bytes, then read every chunk (all columns and a
//! subset), every event and every table. Any panic, abort or runaway allocation is a bug:
//! hostile files must give errors, never crashes. Run with `-malloc_limit_mb=64`: the reader's
//! limits (a table string 8 KiB, tables 16 MiB + 256 bytes per byte of input, a column what its
//! encoding needs for 2^18 events, a few MB) leave no reason for a larger allocation.
//!
//! An input starting with the capture magic (`IOCAP`) is read as a file, twice: as it is, and
//! with every frame's CRC recomputed, because almost every mutation breaks a checksum and would
//! otherwise never reach the payload decoders. Any other input describes a file to build, so
//! that the fuzzer reaches the size checks with valid frames and valid zstd data around sizes
//! it chooses: its first byte picks table frames (even) or a chunk (odd), the rest are read as
//! the choices below (zeros once they run out).
#![no_main]

use iocap_format::varint::put;
use iocap_format::{ChunkDecoder, ChunkSummary, Col, ColSet, Columns, Reader, LOG2_BUCKETS};
use libfuzzer_sys::fuzz_target;

fn read_all(data: Vec<u8>) {
    let Ok(r) = Reader::from_bytes(data) else { return };
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    let some = ColSet::NONE.with(Col::Ts).with(Col::Latency).with(Col::Ret);
    for i in 0..r.chunks().len() {
        if r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).is_ok() {
            assert_eq!(cols.len() as u64, r.chunks()[i].summary.events);
            // Every row of a small chunk; of a large one (up to 2^18 rows, slow under ASan),
            // the first and the last few thousand.
            let n = cols.len();
            for j in (0..n.min(4096)).chain(n.saturating_sub(4096).max(4096)..n) {
                let _ = cols.event(j);
            }
        }
        let _ = r.read_chunk(i, some, &mut dec, &mut cols);
    }
    for e in r.events().take(100_000).flatten() {
        let _ = e.end();
    }
    let _ = r.chunks_in(0, u64::MAX).count();
    let t = r.tables();
    let (used, budget) = t.budget_used();
    assert!(used <= budget, "tables took {used} bytes of a {budget}-byte budget");
    for p in t.procs() {
        let _ = (t.string(p.name), t.string(p.exe), t.string(p.cmdline), t.proc(p.id));
    }
    for (id, f) in t.files() {
        let _ = (t.string(f.name), t.file(id), t.device_name(f.dev));
    }
    let _ = (
        r.drops(),
        r.stop_ts(),
        r.event_count(),
        r.is_clean(),
        r.recovery(),
        r.meta(),
    );
}

/// Recompute the CRC of every frame that fits in the input (FORMAT.md: CRC-32 of kind,
/// reserved, len and payload).
fn fix_crcs(data: &mut [u8]) {
    let mut off = 16;
    while off + 16 <= data.len() {
        if &data[off..off + 4] != b"IOFR" {
            off += 1;
            continue;
        }
        let len = u32::from_le_bytes(data[off + 8..off + 12].try_into().unwrap()) as usize;
        let Some(end) = (off + 16).checked_add(len).filter(|&e| e <= data.len()) else {
            off += 1;
            continue;
        };
        let mut h = crc32fast::Hasher::new();
        h.update(&data[off + 4..off + 12]);
        h.update(&data[off + 16..end]);
        data[off + 12..off + 16].copy_from_slice(&h.finalize().to_le_bytes());
        off = end;
    }
}

/// The fuzzer's choices, one after another; zeros once the input runs out.
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn u8(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        b.to_vec()
    }
}

/// A frame with a valid checksum around `payload`.
fn frame(kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = b"IOFR".to_vec();
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out[4..12]);
    h.update(payload);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// Preamble (format 1.2) and a header frame.
fn start() -> Vec<u8> {
    let mut out = b"IOCAP\x00\r\n".to_vec();
    out.extend_from_slice(&[1, 0, 2, 0, 0, 0, 0, 0]);
    out.extend(frame(1, b"{}"));
    out
}

/// One zstd frame of `prefix` (a raw block) then `len` copies of `byte` (RLE blocks of 128 KiB,
/// 4 bytes each): up to 256 MiB and more from a few KB, the most zstd expands, without the
/// harness holding the bytes.
fn zstd_rle(prefix: &[u8], byte: u8, len: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    let total = prefix.len() as u64 + len;
    // Descriptor 0xc0: an 8-byte content size, not single-segment; window 2^20.
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0xc0, 0x50];
    z.extend_from_slice(&total.to_le_bytes());
    let header = |z: &mut Vec<u8>, last: bool, kind: u32, size: u64| {
        let h = u32::from(last) | kind << 1 | (size as u32) << 3;
        z.extend_from_slice(&h.to_le_bytes()[..3]);
    };
    if !prefix.is_empty() || len == 0 {
        header(&mut z, len == 0, 0, prefix.len() as u64);
        z.extend_from_slice(prefix);
    }
    let mut left = len;
    while left > 0 {
        let n = left.min(BLOCK);
        left -= n;
        header(&mut z, left == 0, 1, n);
        z.push(byte);
    }
    z
}

/// Stored bytes and a declared decompressed size, the fuzzer choosing the codec, the content
/// (a piece of the input repeated, up to 1 MiB: compressible, so small once compressed; or a
/// run of one byte of up to 512 MiB, which the harness never holds) and how far the declared size is from the truth.
fn stored(c: &mut Choices) -> (u8, u64, Vec<u8>) {
    let how = c.u8();
    let piece_len = usize::from(c.u8());
    let piece = c.bytes(piece_len);
    let (codec, real, data) = match how % 3 {
        0 => (0, piece.len() as u64, piece),
        1 => {
            let reps = (c.u32() as usize % (1 << 16)).max(1);
            let reps = reps.min((1 << 20) / piece.len().max(1));
            let raw = piece.repeat(reps);
            (1, raw.len() as u64, zstd::bulk::compress(&raw, 1).unwrap())
        }
        _ => {
            let (byte, len) = (c.u8(), u64::from(c.u32()) % (512 << 20));
            (1, piece.len() as u64 + len, zstd_rle(&piece, byte, len))
        }
    };
    let declared = match (how / 3) % 4 {
        0 | 1 => real,
        2 => real.wrapping_add(u64::from(c.u8())).wrapping_sub(128),
        _ => u64::from(c.u32()) << (c.u8() % 33),
    };
    (codec, declared, data)
}

/// One to four table frames of one kind, each `codec raw_len data` as [`stored`] makes them
/// (so their sizes add up), then a small chunk; read by the index or by a scan.
fn tables(c: &mut Choices) -> Vec<u8> {
    const KINDS: [u16; 6] = [2, 3, 4, 5, 9, 10];
    let kind = KINDS[usize::from(c.u8()) % KINDS.len()];
    let frames = 1 + c.u8() % 4;
    let indexed = c.u8() % 2 == 0;
    let mut out = start();
    let mut others = Vec::new();
    for _ in 0..frames {
        let (codec, raw_len, data) = stored(c);
        let mut p = vec![codec];
        put(&mut p, raw_len);
        p.extend(data);
        others.push((kind, out.len() as u64));
        out.extend(frame(kind, &p));
    }
    let chunk_at = out.len() as u64;
    let s = summary(4);
    out.extend(chunk_frame(&s, &[1, 1, 1, 0, 4, 4, 1, 2, 3, 4]));
    if indexed {
        finish(&mut out, &[(chunk_at, s)], &others);
    }
    out
}

/// A valid summary of `events` syscalls of latency 0 (invalid past 2^18 events).
fn summary(events: u64) -> ChunkSummary {
    let mut log2_hist = [0; LOG2_BUCKETS];
    log2_hist[0] = events;
    ChunkSummary {
        events,
        syscalls: events,
        log2_hist,
        ..ChunkSummary::default()
    }
}

fn chunk_frame(s: &ChunkSummary, body: &[u8]) -> Vec<u8> {
    let mut head = Vec::new();
    s.encode(&mut head);
    let mut p = Vec::new();
    put(&mut p, head.len() as u64);
    p.extend(head);
    p.extend_from_slice(body);
    frame(6, &p)
}

/// The index and trailer for these chunks and table frames.
fn finish(out: &mut Vec<u8>, chunks: &[(u64, ChunkSummary)], others: &[(u16, u64)]) {
    let mut idx = Vec::new();
    put(&mut idx, 1_000);
    put(&mut idx, 0);
    put(&mut idx, chunks.len() as u64);
    for (off, s) in chunks {
        put(&mut idx, *off);
        s.encode(&mut idx);
    }
    put(&mut idx, others.len() as u64);
    for (kind, off) in others {
        put(&mut idx, u64::from(*kind));
        put(&mut idx, *off);
    }
    let at = out.len() as u64;
    out.extend(frame(8, &idx));
    out.extend_from_slice(b"IOCAPIDX");
    out.extend_from_slice(&at.to_le_bytes());
}

/// One chunk of the fuzzer's event count (mostly the small and the largest valid ones) with
/// one to four columns of its choosing: id (16 and up unknown), encoding (9 and up unknown) and
/// bytes as [`stored`] makes them; indexed.
fn chunk(c: &mut Choices) -> Vec<u8> {
    const EVENTS: [u64; 8] = [0, 1, 2, 63, 64, 1000, 1 << 18, (1 << 18) + 1];
    let pick = c.u8();
    let events = if pick < 240 {
        EVENTS[usize::from(pick) % EVENTS.len()]
    } else {
        u64::from(c.u32())
    };
    let ncols = 1 + c.u8() % 4;
    let (mut dir, mut data) = (Vec::new(), Vec::new());
    put(&mut dir, u64::from(ncols));
    for _ in 0..ncols {
        let (id, encoding) = (c.u8() % 20, c.u8() % 10);
        let (codec, raw_len, bytes) = stored(c);
        put(&mut dir, u64::from(id));
        dir.extend_from_slice(&[encoding, codec]);
        put(&mut dir, raw_len);
        put(&mut dir, bytes.len() as u64);
        data.extend(bytes);
    }
    let mut out = start();
    let s = summary(events);
    let at = out.len() as u64;
    out.extend(chunk_frame(&s, &[dir, data].concat()));
    finish(&mut out, &[(at, s)], &[]);
    out
}

fuzz_target!(|data: &[u8]| {
    if data.starts_with(b"IOCAP") {
        read_all(data.to_vec());
        let mut fixed = data.to_vec();
        fix_crcs(&mut fixed);
        if fixed != data {
            read_all(fixed);
        }
        return;
    }
    let mut c = Choices(data);
    let file = if c.u8() % 2 == 0 { tables(&mut c) } else { chunk(&mut c) };
    read_all(file);
});
