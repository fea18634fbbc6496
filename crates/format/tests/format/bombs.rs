//! Memory bombs: small files declaring huge tables or columns, the recipes that make the
//! `fixtures/hostile/` files of that kind, and what the reader must do with them.
//!
//! Every recipe is code, so the fixtures can be checked against it (they must be what it
//! makes) and made again: `IOCAP_WRITE_FIXTURES=1 cargo test -p iocap-format --test format bombs`.

use std::path::{Path, PathBuf};

use iocap_format::varint::put;
use iocap_format::{ChunkSummary, LOG2_BUCKETS, MAX_CHUNK_EVENTS};

use crate::util::Rng;

pub const KIND_HEADER: u16 = 1;
pub const KIND_STRINGS: u16 = 2;
pub const KIND_CHUNK: u16 = 6;
pub const KIND_INDEX: u16 = 8;
pub const KIND_PREFIX_STRINGS: u16 = 9;
pub const KIND_COLUMN_FILES: u16 = 10;

/// Column encodings and codecs (FORMAT.md).
const VARINT: u8 = 1;
const RAW: u8 = 0;
const ZSTD: u8 = 1;

/// A frame with a valid checksum around any payload (the layout of FORMAT.md).
pub fn frame(kind: u16, payload: &[u8]) -> Vec<u8> {
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

/// A capture built frame by frame and finished with an index listing every frame, so that it
/// opens by its index as a cleanly finished file does.
pub struct Crafted {
    out: Vec<u8>,
    chunks: Vec<(u64, ChunkSummary)>,
    others: Vec<(u16, u64)>,
}

impl Crafted {
    /// Preamble (format 1.2) and a header frame.
    pub fn new() -> Crafted {
        let mut out = b"IOCAP\x00\r\n".to_vec();
        out.extend_from_slice(&1u16.to_le_bytes());
        out.extend_from_slice(&2u16.to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.extend(frame(KIND_HEADER, br#"{"host":"crafted"}"#));
        Crafted {
            out,
            chunks: Vec::new(),
            others: Vec::new(),
        }
    }

    /// A table frame of `kind` whose packed payload is `codec raw_len data`.
    pub fn table(mut self, kind: u16, codec: u8, raw_len: u64, data: &[u8]) -> Crafted {
        let mut p = vec![codec];
        put(&mut p, raw_len);
        p.extend_from_slice(data);
        self.others.push((kind, self.out.len() as u64));
        self.out.extend(frame(kind, &p));
        self
    }

    /// A chunk frame of `events` syscalls (latency 0 in the summary) around `body`.
    pub fn chunk(mut self, events: u64, body: &[u8]) -> Crafted {
        let s = summary(events);
        let mut p = Vec::new();
        let mut head = Vec::new();
        s.encode(&mut head);
        put(&mut p, head.len() as u64);
        p.extend(head);
        p.extend_from_slice(body);
        self.chunks.push((self.out.len() as u64, s));
        self.out.extend(frame(KIND_CHUNK, &p));
        self
    }

    /// The last chunk listed `times` more times in the index, at its one offset.
    pub fn relist(mut self, times: usize) -> Crafted {
        let last = self.chunks.last().expect("a chunk to list again").clone();
        self.chunks.extend(std::iter::repeat_n(last, times));
        self
    }

    /// The index (stop_ts 1 ms), and the trailer.
    pub fn finish(mut self) -> Vec<u8> {
        let mut idx = Vec::new();
        put(&mut idx, 1_000_000);
        put(&mut idx, 0);
        put(&mut idx, self.chunks.len() as u64);
        for (off, s) in &self.chunks {
            put(&mut idx, *off);
            s.encode(&mut idx);
        }
        put(&mut idx, self.others.len() as u64);
        for (kind, off) in &self.others {
            put(&mut idx, u64::from(*kind));
            put(&mut idx, *off);
        }
        let at = self.out.len() as u64;
        self.out.extend(frame(KIND_INDEX, &idx));
        self.out.extend_from_slice(b"IOCAPIDX");
        self.out.extend_from_slice(&at.to_le_bytes());
        self.out
    }
}

/// A valid summary of `events` syscalls of latency 0, all at ts 0.
pub fn summary(events: u64) -> ChunkSummary {
    ChunkSummary {
        events,
        syscalls: events,
        log2_hist: {
            let mut h = [0; LOG2_BUCKETS];
            h[0] = events;
            h
        },
        ..ChunkSummary::default()
    }
}

/// One zstd frame (RFC 8878), by hand: `prefix` as a raw block, then `len` copies of `byte` as
/// RLE blocks of 128 KiB, 4 bytes each (the most any zstd frame expands); the content size
/// stated, a 1 MiB window. Needs no zstd library, so the fixtures do not depend on its version.
pub fn zstd_rle(prefix: &[u8], byte: u8, len: u64) -> Vec<u8> {
    const BLOCK: u64 = 128 << 10;
    let total = u32::try_from(prefix.len() as u64 + len).expect("under 4 GiB");
    // Frame header descriptor 0x80: a 4-byte content size, not single-segment, no checksum, no
    // dictionary; window descriptor 0x50: 2^(10 + 10) bytes.
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x80, 0x50];
    z.extend_from_slice(&total.to_le_bytes());
    // Block header: bit 0 last block, bits 1-2 type (0 raw, 1 RLE), bits 3-23 size.
    let header = |z: &mut Vec<u8>, last: bool, kind: u32, size: u64| {
        let h = u32::from(last) | kind << 1 | (size as u32) << 3;
        z.extend_from_slice(&h.to_le_bytes()[..3]);
    };
    if !prefix.is_empty() {
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

/// The packed payload parts of `raw` compressed by the zstd library (level 19).
fn zstd_lib(raw: &[u8]) -> (u64, Vec<u8>) {
    (raw.len() as u64, zstd::bulk::compress(raw, 19).expect("compress"))
}

/// Strings of 4 KiB (each within any limit on one string), 16 Ki of them per prefix-strings
/// frame (64 MiB, the most one frame may describe), four frames with distinct ids: each
/// string is all 0x01 bytes, which the reader escapes to `\x01`, four bytes each: 1 GiB of
/// escaped strings from 371 bytes. Each string is stored as the 4095 bytes it shares with the
/// previous one and one more byte.
pub fn strings_frames() -> Vec<u8> {
    const PER_FRAME: u64 = 16 << 10;
    let mut f = Crafted::new();
    for frame_no in 0..4u64 {
        let mut raw = Vec::new();
        put(&mut raw, PER_FRAME);
        // First entry: id frame_no * 16 Ki + 1 (zigzag delta from 0), shares nothing, 4096 bytes.
        put(&mut raw, (frame_no * PER_FRAME + 1) * 2);
        put(&mut raw, 0);
        put(&mut raw, 4096);
        raw.extend(std::iter::repeat_n(1u8, 4096));
        for _ in 1..PER_FRAME {
            // id + 1, 4095 bytes shared, one byte more.
            raw.push(2);
            put(&mut raw, 4095);
            raw.extend_from_slice(&[1, 1]);
        }
        let (raw_len, data) = zstd_lib(&raw);
        f = f.table(KIND_PREFIX_STRINGS, ZSTD, raw_len, &data);
    }
    f.chunk(4, &small_chunk()).finish()
}

/// One strings frame (kind 2, whole strings) holding one string of 255 MiB of 0x01 bytes
/// (1 GiB escaped), zstd at the largest ratio the reader accepted (32 768): about 8 KB.
pub fn string_255mib() -> Vec<u8> {
    let len = 255u64 << 20;
    let mut head = Vec::new();
    put(&mut head, 1); // count
    put(&mut head, 1); // id 1
    put(&mut head, len);
    let z = zstd_rle(&head, 1, len);
    Crafted::new()
        .table(KIND_STRINGS, ZSTD, head.len() as u64 + len, &z)
        .chunk(4, &small_chunk())
        .finish()
}

/// One column-files frame of nearly 256 MiB of zeros: 38 million file entries of id 0 (each
/// field a zero delta), which the reader collected before merging (32 bytes each: 1.2 GB).
pub fn column_files() -> Vec<u8> {
    let count = ((256u64 << 20) - 8) / 7;
    let mut head = Vec::new();
    put(&mut head, count);
    let z = zstd_rle(&head, 0, 7 * count);
    Crafted::new()
        .table(KIND_COLUMN_FILES, ZSTD, head.len() as u64 + 7 * count, &z)
        .chunk(4, &small_chunk())
        .finish()
}

/// A chunk body of one column (`id`, VARINT) stored as `codec raw_len data`.
fn one_column(id: u8, codec: u8, raw_len: u64, data: &[u8]) -> Vec<u8> {
    let mut body = vec![1, id, VARINT, codec];
    put(&mut body, raw_len);
    put(&mut body, data.len() as u64);
    body.extend_from_slice(data);
    body
}

/// `chunks` chunks of 2^18 events (the most a chunk may hold) whose latency column (VARINT,
/// zstd) decompresses to 256 MiB of zeros, the old cap, from 8 KB, where 2^18 varints take
/// at most 2.5 MiB.
pub fn column_bombs(chunks: usize) -> Vec<u8> {
    let len = 256u64 << 20;
    let body = one_column(2, ZSTD, len, &zstd_rle(&[], 0, len));
    let mut f = Crafted::new();
    for _ in 0..chunks {
        f = f.chunk(MAX_CHUNK_EVENTS, &body);
    }
    f.finish()
}

/// Bits of each column's type, by column id (FORMAT.md's table): the widest value it holds.
pub const TYPE_BITS: [u32; 16] = [8, 64, 64, 32, 32, 32, 32, 64, 32, 32, 64, 32, 64, 64, 8, 32];

/// Two chunks of 2^18 events whose sixteen columns are each as large as a column can be under
/// the limits: n varints of its type's largest value, zstd-compressed. Valid: they decode.
pub fn column_at_limit() -> Vec<u8> {
    let n = MAX_CHUNK_EVENTS;
    let mut dir = Vec::new();
    let mut data = Vec::new();
    put(&mut dir, 16);
    for (id, bits) in TYPE_BITS.iter().enumerate() {
        let mut one = Vec::new();
        put(&mut one, u64::MAX >> (64 - bits));
        let raw: Vec<u8> = one.iter().copied().cycle().take(one.len() * n as usize).collect();
        let (raw_len, z) = zstd_lib(&raw);
        put(&mut dir, id as u64);
        dir.extend_from_slice(&[VARINT, ZSTD]);
        put(&mut dir, raw_len);
        put(&mut dir, z.len() as u64);
        data.extend(z);
    }
    let body = [dir, data].concat();
    Crafted::new().chunk(n, &body).chunk(n, &body).finish()
}

/// A small chunk of 4 events whose ts column is stored raw: what a table bomb rides along with.
pub fn small_chunk() -> Vec<u8> {
    one_column(1, RAW, 4, &[1, 2, 3, 4])
}

/// `chunks` chunks of 2^18 events stored in no column at all (every value 0), frames of 35 bytes:
/// 55 KB claiming a quarter of a billion events, each a line of an export, before chunks were bounded
/// by their bytes ([`iocap_format::MAX_EVENTS_PER_BYTE`]).
pub fn dense_chunks(chunks: usize) -> Vec<u8> {
    let mut f = Crafted::new();
    for _ in 0..chunks {
        f = f.chunk(MAX_CHUNK_EVENTS, &[0]);
    }
    f.finish()
}

/// One chunk of 4 events listed 4 000 times in the index: 16 000 events claimed of 4 held.
pub fn index_repeats() -> Vec<u8> {
    Crafted::new().chunk(4, &small_chunk()).relist(3_999).finish()
}

/// A function that makes a fixture's bytes.
pub type Recipe = fn() -> Vec<u8>;

/// The fixtures this module makes: (file name, recipe).
pub fn recipes() -> Vec<(&'static str, Recipe)> {
    vec![
        ("strings-frames.cap", strings_frames as Recipe),
        ("string-255mib.cap", string_255mib),
        ("column-files.cap", column_files),
        ("column-bomb.cap", || column_bombs(1)),
        ("column-bombs.cap", || column_bombs(8)),
        ("column-at-limit.cap", column_at_limit),
        ("dense-chunks.cap", || dense_chunks(1_000)),
        ("index-repeats.cap", index_repeats),
    ]
}

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hostile")
}

/// The fixtures are what their recipes make (or are made again with IOCAP_WRITE_FIXTURES=1).
#[test]
fn bomb_fixtures_are_what_their_recipes_make() {
    let write = std::env::var_os("IOCAP_WRITE_FIXTURES").is_some();
    for (name, recipe) in recipes() {
        let path = fixtures_dir().join(name);
        let bytes = recipe();
        assert!(
            bytes.len() < 100_000,
            "{name}: {} bytes, fixtures stay small",
            bytes.len()
        );
        if write {
            std::fs::write(&path, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap_or_default();
        assert!(
            on_disk == bytes,
            "{} is not what its recipe makes: IOCAP_WRITE_FIXTURES=1 cargo test -p iocap-format --test format bombs",
            path.display()
        );
    }
}

/// A tree walk (tar, find, a build) as the recorder writes it: `files` files in directories of
/// 100, every path `depth` bytes long (or a random-looking 40-hex-digit name when `hashed`,
/// as in a git object store), each opened, read twice and closed with latencies of a few µs.
/// With `events` false, only the tables: what the recorder writes at start, seeding every
/// open file of every process from /proc.
pub fn tree_walk(files: u32, depth: usize, hashed: bool, events: bool) -> Vec<u8> {
    use iocap_format::{Event, FdType, FileEntry, Meta, ProcEntry, Writer, WriterOptions};
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
    let comm = w.intern(b"tar");
    let cmdline = w.intern(b"tar cf /backup/all.tar /srv");
    let mut ts = 1_000_000u64;
    let mut proc = 0;
    for i in 0..files {
        if i % 50 == 0 {
            proc = w.add_proc(ProcEntry {
                pid: 100 + i / 50,
                name: comm,
                cmdline,
                start_ts: ts,
                ..ProcEntry::default()
            });
        }
        let dir = format!("/srv/{}/d{:05}/", "x".repeat(depth.saturating_sub(24)), i / 100);
        let path = if hashed {
            format!("{dir}{:016x}{:016x}{:08x}", rng.next(), rng.next(), rng.next() as u32)
        } else {
            format!("{dir}f{:02}.dat", i % 100)
        };
        let name = w.intern(path.as_bytes());
        let file = w.add_file(FileEntry {
            pid: 100 + i / 50,
            fd: 3 + (i % 50) as i32,
            kind: FdType::File,
            name,
            open_ts: ts,
            ..FileEntry::default()
        });
        ts += 1_000 + rng.next() % 5_000;
        if !events {
            continue;
        }
        for (nr, ret, bytes) in [(257, 3, 0), (0, 4096, 4096), (0, 0, 0), (3, 0, 0)] {
            let latency = 300 + rng.next() % 20_000;
            let mut e = Event::syscall(ts, latency, 100 + i / 50, 100 + i / 50, nr, ret);
            e.proc = proc;
            e.file = file;
            e.fd = 3;
            e.bytes = bytes;
            w.push(&e).unwrap();
            ts += latency + 200 + rng.next() % 2_000;
        }
    }
    w.finish(ts).unwrap()
}

/// Captures whose tables are most of them (many files, long regular paths, which prefix coding
/// and zstd store in very few bytes) keep their tables: the budget is not something a real
/// capture meets. (Prints each one's decoded tables per byte of file, which the constants'
/// documentation quotes.) Beyond them: a capture of nothing but the tables of 10 000 files with
/// 4 KiB paths (2 083 bytes decoded per byte of file).
#[test]
fn real_tables_fit_the_budget() {
    use iocap_format::Reader;
    for (files, depth, hashed, events) in [
        (100_000, 40, false, true),
        (100_000, 40, true, true),
        (20_000, 1_000, false, true),
        (10_000, 4_000, false, true),
        (100_000, 40, false, false),
        (100_000, 40, true, false),
        (20_000, 1_000, false, false),
    ] {
        let bytes = tree_walk(files, depth, hashed, events);
        let len = bytes.len() as u64;
        let r = Reader::from_bytes(bytes).unwrap();
        let (used, budget) = r.tables().budget_used();
        eprintln!(
            "{files} files, {depth}-byte paths, hashed {hashed}, events {events}: {len} bytes, tables {used} bytes \
             decoded, {:.1} per byte of file, {:.0}% of the budget",
            used as f64 / len as f64,
            used as f64 * 100.0 / budget as f64
        );
        assert!(r.is_clean(), "{:?}", r.recovery());
        assert_eq!(r.tables().file_count(), files as usize);
        assert_eq!(r.tables().string_count(), files as usize + 2);
    }
}

fn open_fixture(name: &str) -> iocap_format::Reader {
    iocap_format::Reader::open(fixtures_dir().join(name)).unwrap()
}

/// The table bombs open: their tables are refused with a one-line error naming the limit, what
/// was decoded before stays within the budget, and their events still read.
#[test]
fn table_bombs_are_refused_within_the_budget() {
    use iocap_format::{table_budget, ChunkDecoder, ColSet, Columns};
    let cases = [
        // 4 KiB strings (each within the string limit) until the budget is spent.
        ("strings-frames.cap", "decoded table data is "),
        // One 255 MiB string: refused before decompressing (the payload alone is over the budget).
        (
            "string-255mib.cap",
            "decoded table data is 267386886 bytes, over the limit of ",
        ),
        // 38 million file entries: refused before decompressing too.
        (
            "column-files.cap",
            "decoded table data is 268435451 bytes, over the limit of ",
        ),
    ];
    for (name, says) in cases {
        let r = open_fixture(name);
        let notes = r.recovery().unwrap_or_default();
        assert!(notes.contains(says), "{name}: {notes}");
        assert!(!notes.contains('\n'));
        let (used, budget) = r.tables().budget_used();
        assert_eq!(budget, table_budget(r.file_len()));
        assert!(used <= budget && budget < 20 << 20, "{name}: {used} of {budget}");
        assert_eq!(r.tables().file_count(), 0, "{name}");
        let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
        r.read_chunk(0, ColSet::ALL, &mut dec, &mut cols).unwrap();
        assert_eq!(cols.ts, [1, 2, 3, 4], "{name}");
    }
    // The strings merged before the budget ran out are whole and escaped.
    let r = open_fixture("strings-frames.cap");
    let n = r.tables().string_count();
    assert!(n > 100 && n < 4 << 14, "{n} strings");
    assert_eq!(r.tables().string(1), "\\x01".repeat(4096));
    assert_eq!(open_fixture("string-255mib.cap").tables().string_count(), 0);
}

/// A string longer than any path or command line is left out and said, whatever the frame that
/// holds it (whole strings, prefix-coded strings, device names), the frame's other entries
/// still read (a capture whose writer did not cut command lines keeps its paths); one at the
/// limit reads.
#[test]
fn a_string_longer_than_any_name_is_left_out() {
    use iocap_format::{Reader, MAX_STRING};
    let raw = |count: u64, entries: &[u8]| {
        let mut p = Vec::new();
        put(&mut p, count);
        p.extend_from_slice(entries);
        p
    };
    for len in [MAX_STRING, MAX_STRING + 1, 100_000] {
        let s = vec![b'a'; len];
        // Whole strings: id 1 the long one, id 2 "/etc/hosts".
        let mut strings = vec![1u8];
        put(&mut strings, len as u64);
        strings.extend_from_slice(&s);
        strings.extend_from_slice(b"\x02\x0a/etc/hosts");
        // Prefix-coded: id 1 100 bytes, id 2 all of them and the rest (the long one), id 3
        // the long one's first 100 bytes and "/x".
        let mut prefixed = vec![2u8, 0, 100];
        prefixed.extend_from_slice(&s[..100]);
        prefixed.extend_from_slice(&[2, 100]);
        put(&mut prefixed, len as u64 - 100);
        prefixed.extend_from_slice(&s[100..]);
        prefixed.extend_from_slice(b"\x02\x64\x02/x");
        // Devices: 7 the long name, 8 "vda".
        let mut devices = vec![7u8];
        put(&mut devices, len as u64);
        devices.extend_from_slice(&s);
        devices.extend_from_slice(b"\x08\x03vda");
        for (kind, count, entries) in [
            (KIND_STRINGS, 2, strings),
            (KIND_PREFIX_STRINGS, 3, prefixed),
            (5, 2, devices),
        ] {
            let p = raw(count, &entries);
            let r = Reader::from_bytes(Crafted::new().table(kind, RAW, p.len() as u64, &p).finish()).unwrap();
            let t = r.tables();
            let (long, other) = match kind {
                5 => (t.device_name(7).unwrap_or(""), t.device_name(8).unwrap_or("")),
                KIND_STRINGS => (t.string(1), t.string(2)),
                _ => (t.string(2), t.string(3)),
            };
            match kind {
                5 => assert_eq!(other, "vda"),
                KIND_STRINGS => assert_eq!(other, "/etc/hosts"),
                _ => assert_eq!(
                    (t.string(1), other),
                    (&*"a".repeat(100), &*format!("{}/x", "a".repeat(100)))
                ),
            }
            if len == MAX_STRING {
                assert!(r.is_clean(), "kind {kind}: {:?}", r.recovery());
                assert_eq!(long.len(), len, "kind {kind}");
            } else {
                let notes = r.recovery().unwrap_or_default();
                assert!(
                    notes.contains(&format!(
                        "capture at byte 50: a table string is {len} bytes, over the limit of {MAX_STRING}"
                    )),
                    "kind {kind}: {notes}"
                );
                assert_eq!(long, "", "kind {kind}");
            }
        }
    }
}

/// A column bomb is refused before it is decompressed, with a typed one-line error naming the
/// column, its chunk's event count and the limit.
#[test]
fn column_bombs_are_refused_before_decompressing() {
    use iocap_format::{ChunkDecoder, Col, ColSet, Columns, Error, Limit};
    for name in ["column-bomb.cap", "column-bombs.cap"] {
        let r = open_fixture(name);
        assert!(r.is_clean(), "{name}: {:?}", r.recovery());
        let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
        for i in 0..r.chunks().len() {
            let e = r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).unwrap_err();
            match &e {
                Error::OverLimit {
                    limit:
                        Limit::Column {
                            col: Col::Latency,
                            events,
                        },
                    len,
                    max,
                    ..
                } => assert_eq!(
                    (*events, *len, *max),
                    (MAX_CHUNK_EVENTS, 256 << 20, 10 * MAX_CHUNK_EVENTS)
                ),
                other => panic!("{name}: {other:?}"),
            }
            assert!(
                e.to_string().ends_with(
                    "the decompressed latency column of a 262144-event chunk is 268435456 bytes, over the limit of 2621440"
                ),
                "{e}"
            );
        }
        // The columns that are not asked for are not looked at.
        r.read_chunk(0, ColSet::NONE.with(Col::Ts), &mut dec, &mut cols)
            .unwrap();
        assert_eq!(cols.len() as u64, MAX_CHUNK_EVENTS);
    }
}

/// The largest columns the limits allow decode (each at exactly its limit), and one byte more
/// is refused.
#[test]
fn columns_at_the_limit_decode_and_one_byte_more_does_not() {
    use iocap_format::{ChunkDecoder, ColSet, Columns, Error};
    let r = open_fixture("column-at-limit.cap");
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    for i in 0..2 {
        r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).unwrap();
        assert_eq!(cols.len() as u64, MAX_CHUNK_EVENTS);
        let e = cols.event(12_345);
        assert_eq!((e.ts, e.pid, e.op, e.fd), (u64::MAX, u32::MAX, u8::MAX, i32::MIN));
    }
    // A u32 column of 4 events: 20 bytes at most as VARINT; 21 (a value in a 6-byte form) is
    // refused, though it would decode.
    for (data, ok) in [
        (vec![0xffu8, 0xff, 0xff, 0xff, 0x0f], true),
        (vec![0xff, 0xff, 0xff, 0xff, 0x8f, 0x00], false),
    ] {
        let raw: Vec<u8> = data.iter().copied().cycle().take(data.len() * 4).collect();
        let body = one_column(3, RAW, raw.len() as u64, &raw);
        let r = iocap_format::Reader::from_bytes(Crafted::new().chunk(4, &body).finish()).unwrap();
        match r.read_chunk(0, ColSet::ALL, &mut dec, &mut cols) {
            Ok(()) => assert!(ok && cols.pid == [u32::MAX; 4]),
            Err(Error::OverLimit { len: 24, max: 20, .. }) => assert!(!ok),
            Err(e) => panic!("{e}"),
        }
    }
}

/// Strings longer than readers accept are cut by the writer, so every capture it writes reads
/// whole: a command line of 100 KB (a build's, from /proc) keeps its first 8 KiB.
#[test]
fn the_writer_cuts_what_readers_would_refuse() {
    use iocap_format::{Device, Meta, Reader, Writer, WriterOptions, MAX_STRING};
    let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
    let long: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let id = w.intern(&long);
    assert_eq!(w.intern(&long), id, "the same long string is one id");
    let short = w.intern(&long[..MAX_STRING]);
    w.add_device(&Device {
        dev: 7,
        name: "é".repeat(MAX_STRING),
    });
    let r = Reader::from_bytes(w.finish(0).unwrap()).unwrap();
    assert!(r.is_clean(), "{:?}", r.recovery());
    let s = r.tables().string(id);
    assert_eq!(s.len(), MAX_STRING);
    assert!(s.ends_with('…') && long.starts_with(s.trim_end_matches('…').as_bytes()));
    assert_eq!(
        r.tables().string(short).as_bytes(),
        &long[..MAX_STRING],
        "at the limit: whole"
    );
    let d = r.tables().device_name(7).unwrap();
    assert!(d.len() <= MAX_STRING && d.ends_with("é…"), "{}", d.len());
}

/// A file claims no more events than its bytes hold: chunks denser than
/// [`iocap_format::MAX_EVENTS_PER_BYTE`] are skipped and said, and an index listing one chunk
/// many times is not believed (the file is read by its frames instead).
#[test]
fn claims_are_bounded_by_the_bytes_that_make_them() {
    let r = open_fixture("dense-chunks.cap");
    assert_eq!((r.chunks().len(), r.event_count()), (0, 0));
    let notes = r.recovery().unwrap();
    assert!(
        notes.contains("a chunk claims 262144 events in 35 bytes, more than 128 a byte"),
        "{notes}"
    );
    let r = open_fixture("index-repeats.cap");
    assert_eq!((r.chunks().len(), r.event_count()), (1, 4));
    // The writer never writes what readers refuse: identical events, the densest there are,
    // go in chunks that each hold no more than their bytes may.
    let mut w = iocap_format::Writer::new(
        Vec::new(),
        &Default::default(),
        iocap_format::WriterOptions {
            chunk_events: MAX_CHUNK_EVENTS as usize,
            level: 3,
        },
    )
    .unwrap();
    for _ in 0..MAX_CHUNK_EVENTS {
        w.push(&iocap_format::Event::syscall(5, 0, 1, 1, 0, 0)).unwrap();
    }
    let r = iocap_format::Reader::from_bytes(w.finish(10).unwrap()).unwrap();
    assert!(r.is_clean(), "{:?}", r.recovery());
    assert_eq!(r.event_count(), MAX_CHUNK_EVENTS);
    assert!(
        r.chunks().len() > 1,
        "one chunk of identical events is denser than a reader takes"
    );
    let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
    for i in 0..r.chunks().len() {
        r.read_chunk(i, iocap_format::ColSet::ALL, &mut dec, &mut cols).unwrap();
        assert!(cols.ts.iter().all(|&t| t == 5));
    }
}
