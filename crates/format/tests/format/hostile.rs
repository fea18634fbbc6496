//! Hostile inputs: frames whose checksums are valid around lying payloads, newer versions,
//! unknown frame kinds and columns, and every file under fixtures/hostile/.

use std::path::Path;

use iocap_format::varint::put;
use iocap_format::{
    ChunkDecoder, ChunkSummary, ColSet, Columns, Error, Event, FdType, ReadOptions, Reader, FORMAT_MAJOR, LOG2_BUCKETS,
    MAX_CHUNK_EVENTS, MAX_EVENTS_PER_BYTE,
};

use crate::bombs::frame;
use crate::util::{files, read_chunks, small_capture};

const KIND_HEADER: u16 = 1;
const KIND_STRINGS: u16 = 2;
const KIND_CHUNK: u16 = 6;
const KIND_STATS: u16 = 7;
const KIND_INDEX: u16 = 8;

/// Preamble and a minimal header frame.
fn start(major: u16) -> Vec<u8> {
    let mut out = b"IOCAP\x00\r\n".to_vec();
    out.extend_from_slice(&major.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend(frame(KIND_HEADER, b"{}"));
    out
}

/// A chunk summary for `events` syscalls, all with latency 0.
fn summary(events: u64) -> Vec<u8> {
    let s = ChunkSummary {
        events,
        syscalls: events,
        log2_hist: {
            let mut h = [0; LOG2_BUCKETS];
            h[0] = events;
            h
        },
        ..ChunkSummary::default()
    };
    let mut head = Vec::new();
    s.encode(&mut head);
    let mut out = Vec::new();
    put(&mut out, head.len() as u64);
    out.extend(head);
    out
}

/// A chunk frame whose one column (ts, VARINT) is `data` stored with `codec` and `raw_len`.
fn chunk(events: u64, codec: u8, raw_len: u64, data: &[u8]) -> Vec<u8> {
    let mut body = vec![1, 1, 1, codec];
    put(&mut body, raw_len);
    put(&mut body, data.len() as u64);
    body.extend_from_slice(data);
    raw_chunk(events, &body)
}

/// A chunk frame around a hand-made body (column directory and columns).
fn raw_chunk(events: u64, body: &[u8]) -> Vec<u8> {
    let mut p = summary(events);
    p.extend_from_slice(body);
    frame(KIND_CHUNK, &p)
}

/// Open `bytes` (which must open) and read chunk 0; return its result.
fn read_first(bytes: Vec<u8>) -> Result<Columns, Error> {
    let r = Reader::from_bytes(bytes).expect("a file with a good header opens");
    assert!(!r.is_clean());
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    r.read_chunk(0, ColSet::ALL, &mut dec, &mut cols)?;
    Ok(cols)
}

fn assert_corrupt(r: Result<Columns, Error>, what: &str) {
    match r {
        Err(Error::Corrupt { what: w, .. }) => assert!(!w.contains('\n'), "{what}"),
        other => panic!("{what}: expected a corrupt-chunk error, got {other:?}"),
    }
}

#[test]
fn decompressed_size_over_the_cap_is_refused() {
    // Ten VARINT values of a u64 take at most 100 bytes: more is refused before decompressing.
    for raw_len in [300 << 20, 200 << 20, 101] {
        let mut f = start(FORMAT_MAJOR);
        f.extend(chunk(10, 1, raw_len, &[0; 64]));
        match read_first(f) {
            Err(Error::OverLimit { len, max: 100, .. }) if len == raw_len => {}
            other => panic!("raw_len {raw_len}: expected the column limit, got {other:?}"),
        }
    }
    // Within the column's limit, but more than the 8 bytes of zstd data could expand to.
    let mut f = start(FORMAT_MAJOR);
    f.extend(chunk(1 << 18, 1, 1 << 20, &[0; 8]));
    assert_corrupt(read_first(f), "raw_len 1 MiB from 8 bytes");
    // A stored (raw) payload whose size disagrees.
    let mut f = start(FORMAT_MAJOR);
    f.extend(chunk(10, 0, 50, &[0; 10]));
    assert_corrupt(read_first(f), "raw size mismatch");
}

#[test]
fn zstd_window_over_the_cap_is_refused() {
    // A zstd frame: magic, descriptor 0 (no content size, not single-segment), window
    // descriptor 0x90 (2^(10+18) = 256 MiB window), then one last raw block of 8 bytes.
    let mut z = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x90];
    let block_header: u32 = 1 | (8 << 3); // last block, raw, 8 bytes
    z.extend_from_slice(&block_header.to_le_bytes()[..3]);
    z.extend_from_slice(&[7; 8]);
    let mut f = start(FORMAT_MAJOR);
    f.extend(chunk(8, 1, 8, &z));
    assert_corrupt(read_first(f), "zstd window 256 MiB");
    // The same frame with a 1 KiB window decompresses: the test above failed for the window.
    z[5] = 0x00;
    let mut f = start(FORMAT_MAJOR);
    f.extend(chunk(8, 1, 8, &z));
    assert_eq!(read_first(f).unwrap().ts, vec![7; 8]);
}

#[test]
fn event_counts_over_the_limit_are_refused() {
    // A constant column expands to `events` values from one byte: the count is capped.
    for events in [MAX_CHUNK_EVENTS + 1, 1 << 40, u64::MAX / 2] {
        let mut body = Vec::new();
        put(&mut body, 1);
        body.extend_from_slice(&[1, 0, 0, 1, 1, 5]); // ts: CONST, raw, 1 byte, value 5
        let mut f = start(FORMAT_MAJOR);
        f.extend(raw_chunk(events, &body));
        let r = Reader::from_bytes(f).unwrap();
        assert_eq!(r.chunks().len(), 0, "{events} events");
        assert!(r.recovery().unwrap().contains("damaged summary"), "{:?}", r.recovery());
    }
    // At the limit, in the bytes it needs, it decodes. A column of an id this reader does
    // not know (a later format's) is skipped, so it pads the chunk to the bytes it needs.
    let at_limit = |pad: u64| {
        let mut body = Vec::new();
        put(&mut body, 2);
        body.extend_from_slice(&[1, 0, 0, 1, 1]);
        body.extend_from_slice(&[63, 0, 0]);
        put(&mut body, pad);
        put(&mut body, pad);
        body.push(5);
        body.extend(std::iter::repeat_n(0, pad as usize));
        let mut f = start(FORMAT_MAJOR);
        f.extend(raw_chunk(MAX_CHUNK_EVENTS, &body));
        f
    };
    let needed = MAX_CHUNK_EVENTS / MAX_EVENTS_PER_BYTE;
    let cols = read_first(at_limit(needed)).unwrap();
    assert_eq!(cols.len() as u64, MAX_CHUNK_EVENTS);
    assert!(cols.ts.iter().all(|&t| t == 5));
    // The same events in fewer bytes than they need: refused (a file of a few KB cannot
    // claim billions of events, each a line of an export).
    let r = Reader::from_bytes(at_limit(needed / 2)).unwrap();
    assert_eq!(r.chunks().len(), 0);
    let notes = r.recovery().unwrap();
    assert!(
        notes.contains("a chunk claims 262144 events in ") && notes.contains("more than 128 a byte"),
        "{notes}"
    );
}

#[test]
fn lying_column_directories_are_refused() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("huge column count", {
            let mut b = Vec::new();
            put(&mut b, u64::MAX);
            b
        }),
        ("column longer than the chunk", {
            let mut b = Vec::new();
            put(&mut b, 1);
            b.extend_from_slice(&[1, 1, 0]);
            put(&mut b, 1 << 40);
            put(&mut b, 1 << 40);
            b
        }),
        ("varint column shorter than the count", vec![1, 1, 1, 0, 2, 2, 5, 6]),
        ("unknown encoding", vec![1, 1, 99, 0, 1, 1, 0]),
        // MASKED (11): selector, inner encoding, the selected events' values. Without a class
        // column all four events are calls: selector 1 selects them all, 0 none.
        ("masked column of a masked encoding", vec![1, 12, 11, 0, 3, 3, 1, 11, 0]),
        (
            "masked column of a gap encoding",
            vec![1, 12, 11, 0, 6, 6, 1, 5, 1, 1, 1, 1],
        ),
        (
            "masked column selecting unknown events",
            vec![1, 12, 11, 0, 3, 3, 2, 0, 5],
        ),
        (
            "masked values past the selected events",
            vec![1, 12, 11, 0, 7, 7, 1, 1, 1, 2, 3, 4, 5],
        ),
        (
            "masked values short of the selected events",
            vec![1, 12, 11, 0, 5, 5, 1, 1, 1, 2, 3],
        ),
        ("masked value where none is selected", vec![1, 12, 11, 0, 3, 3, 0, 1, 5]),
        ("masked class column", vec![1, 0, 11, 0, 3, 3, 0, 0, 1]),
        // REF (12): the file column only, never inside MASKED, one varint per event.
        ("REF on a column other than file", vec![1, 1, 12, 0, 4, 4, 0, 1, 1, 1]),
        ("masked column of REF", vec![1, 12, 11, 0, 6, 6, 1, 12, 0, 1, 1, 1]),
        ("REF file column short of the count", vec![1, 9, 12, 0, 3, 3, 0, 11, 1]),
        ("REF file column cut short", vec![1, 9, 12, 0, 4, 4, 0, 11, 1, 0x80]),
        ("unknown codec", vec![1, 1, 0, 7, 1, 1, 5]),
        ("raw sizes disagree", vec![1, 1, 0, 0, 2, 1, 5]),
        ("column stored twice", vec![2, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 5, 5]),
        ("cut short varint", vec![1, 2, 1, 0, 4, 4, 0x80, 0x80, 0x80, 0x80]),
        (
            "dictionary index past its size",
            vec![1, 1, 4, 0, 7, 7, 2, 10, 20, 0, 1, 2, 0],
        ),
        ("empty dictionary", vec![1, 1, 4, 0, 1, 1, 0]),
        ("sparse position past the count", vec![1, 1, 3, 0, 3, 3, 1, 9, 5]),
        ("sparse count over the bytes", vec![1, 1, 3, 0, 3, 3, 100, 0, 5]),
        ("bytes after the last column", vec![1, 1, 0, 0, 1, 1, 5, 0]),
    ];
    for (what, body) in cases {
        let mut f = start(FORMAT_MAJOR);
        f.extend(raw_chunk(4, &body));
        assert_corrupt(read_first(f), what);
    }
    // The same shapes telling the truth read: the four calls' sectors, then none selected.
    for (body, sectors) in [
        (vec![1, 12, 11, 0, 6, 6, 1, 1, 1, 2, 3, 4], [1, 2, 3, 4]),
        (vec![1, 12, 11, 0, 2, 2, 0, 1], [0; 4]),
    ] {
        let mut f = start(FORMAT_MAJOR);
        f.extend(raw_chunk(4, &body));
        assert_eq!(read_first(f).expect("a truthful masked column").sector, sectors);
    }
}

#[test]
fn huge_table_and_stats_counts_are_skipped() {
    let mut strings = vec![0u8];
    let mut raw = Vec::new();
    put(&mut raw, 1 << 60);
    raw.extend_from_slice(b"\x01\x03abc");
    put(&mut strings, raw.len() as u64);
    strings.extend_from_slice(&raw);
    let mut stats = Vec::new();
    put(&mut stats, 5);
    put(&mut stats, u64::MAX);
    let mut f = start(FORMAT_MAJOR);
    f.extend(frame(KIND_STRINGS, &strings));
    f.extend(frame(KIND_STATS, &stats));
    let r = Reader::from_bytes(f).unwrap();
    assert_eq!(r.tables().string_count(), 0);
    assert!(r.drop_stats().is_empty());
    let notes = r.recovery().unwrap();
    assert!(
        notes.contains("table entries do not decode") && notes.contains("stats frame"),
        "{notes}"
    );
}

#[test]
fn hostile_index_is_not_trusted() {
    // An index (valid checksum) listing a chunk at a bogus offset and a count past its bytes.
    let mut f = start(FORMAT_MAJOR);
    let mut idx = Vec::new();
    put(&mut idx, 1);
    put(&mut idx, 0);
    put(&mut idx, u64::MAX);
    let at = f.len() as u64;
    f.extend(frame(KIND_INDEX, &idx));
    f.extend_from_slice(b"IOCAPIDX");
    f.extend_from_slice(&at.to_le_bytes());
    let r = Reader::from_bytes(f).unwrap();
    assert!(!r.is_clean());
    assert!(r.recovery().unwrap().contains("index is damaged"));
    assert_eq!(r.chunks().len(), 0);
}

#[test]
fn newer_major_version_is_a_clear_error() {
    let (mut bytes, _) = small_capture();
    bytes[8..10].copy_from_slice(&(FORMAT_MAJOR + 1).to_le_bytes());
    let e = Reader::from_bytes(bytes).err().expect("refused");
    assert!(
        matches!(e, Error::Version { major, .. } if major == FORMAT_MAJOR + 1),
        "{e:?}"
    );
    assert!(e.to_string().contains("upgrade iocap"), "{e}");
    let e = Reader::from_bytes(start(u16::MAX)).err().expect("refused");
    assert!(matches!(e, Error::Version { .. }));
}

/// Walk the frames of a well-formed file: (kind, offset, total length).
fn frames(bytes: &[u8]) -> Vec<(u16, usize, usize)> {
    let mut out = Vec::new();
    let mut off = 16;
    while off + 16 <= bytes.len() && &bytes[off..off + 4] == b"IOFR" {
        let kind = u16::from_le_bytes([bytes[off + 4], bytes[off + 5]]);
        let len = 16 + u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap()) as usize;
        out.push((kind, off, len));
        off += len;
    }
    out
}

#[test]
fn unknown_frame_kinds_are_skipped() {
    let (bytes, x) = small_capture();
    let full = Reader::from_bytes(bytes.clone()).unwrap();
    let unknown = frame(0x7777, b"from a newer iocap");
    let fs = frames(&bytes);
    assert_eq!(fs[0].0, KIND_HEADER);
    // Rebuild the file with the unknown frame after the header, every offset shifted, and a new
    // index that lists the unknown frame too: it opens cleanly by the index, skipping it.
    let shift = unknown.len() as u64;
    let mut f = bytes[..fs[0].1 + fs[0].2].to_vec();
    let unknown_at = f.len() as u64;
    f.extend_from_slice(&unknown);
    let mut others = Vec::new();
    for &(kind, off, len) in &fs[1..] {
        if kind == KIND_INDEX {
            break;
        }
        if kind != KIND_CHUNK {
            others.push((u64::from(kind), f.len() as u64));
        }
        f.extend_from_slice(&bytes[off..off + len]);
    }
    others.push((0x7777, unknown_at));
    let mut idx = Vec::new();
    put(&mut idx, x.stop_ts);
    put(&mut idx, full.drops());
    put(&mut idx, full.chunks().len() as u64);
    for c in full.chunks() {
        put(&mut idx, c.offset + shift);
        c.summary.encode(&mut idx);
    }
    put(&mut idx, others.len() as u64);
    for (k, o) in others {
        put(&mut idx, k);
        put(&mut idx, o);
    }
    let at = f.len() as u64;
    let scanned = {
        let mut g = f.clone();
        g.extend_from_slice(&unknown);
        g
    };
    f.extend(frame(KIND_INDEX, &idx));
    f.extend_from_slice(b"IOCAPIDX");
    f.extend_from_slice(&at.to_le_bytes());
    let r = Reader::from_bytes(f).unwrap();
    assert!(r.is_clean(), "{:?}", r.recovery());
    assert_eq!(read_chunks(&r).unwrap(), x.chunks);
    assert_eq!(r.tables().procs(), &x.procs[..]);
    // Without an index, the scan skips the unknown frames as well.
    let r = Reader::from_bytes(scanned).unwrap();
    assert!(!r.is_clean());
    assert_eq!(read_chunks(&r).unwrap(), x.chunks);
    let targets: Vec<_> = x.files.iter().map(|f| (f.id, f.target())).collect();
    assert_eq!(files(r.tables()), targets);
}

#[test]
fn unknown_column_ids_are_skipped() {
    // ts VARINT [5, 7]; column 40 (from a newer writer) VARINT [1, 2]; latency CONST 9.
    let body = [3, 1, 1, 0, 2, 2, 40, 1, 0, 2, 2, 2, 0, 0, 1, 1, 5, 7, 1, 2, 9];
    let mut f = start(FORMAT_MAJOR);
    f.extend(raw_chunk(2, &body));
    let cols = read_first(f).unwrap();
    let evs: Vec<Event> = (0..2).map(|i| cols.event(i)).collect();
    assert_eq!((evs[0].ts, evs[1].ts), (5, 7));
    assert_eq!((evs[0].latency, evs[1].latency), (9, 9));
    assert_eq!(evs[0].pid, 0, "a missing column reads as zeros");
}

/// Every file in fixtures/hostile/ opens with a one-line error or reads back without a panic.
#[test]
fn hostile_fixtures_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/hostile");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        n += 1;
        match Reader::open(&path) {
            Err(e) => assert!(!e.to_string().contains('\n'), "{}: {e}", path.display()),
            Ok(r) => {
                let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
                for i in 0..r.chunks().len() {
                    if r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).is_ok() {
                        assert_eq!(cols.len() as u64, r.chunks()[i].summary.events);
                    }
                }
                let _ = r.tables().procs().len();
            }
        }
    }
    assert!(n > 0, "no fixtures in {}", dir.display());
}

const KIND_FILES: u16 = 4;
const KIND_PREFIX_STRINGS: u16 = 9;
const KIND_COLUMN_FILES: u16 = 10;

/// A table frame whose payload is `count` then `entries`, stored raw (codec 0).
fn table(kind: u16, count: u64, entries: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    put(&mut raw, count);
    raw.extend_from_slice(entries);
    let mut p = vec![0u8];
    put(&mut p, raw.len() as u64);
    p.extend(raw);
    frame(kind, &p)
}

/// Files written by a 1.0 writer hold whole strings (kind 2) and row-wise files (kind 4): a
/// 1.1 reader still reads them, and the 1.1 kinds give the same tables.
#[test]
fn version_1_0_and_1_1_table_frames_read_the_same() {
    let mut old = start(FORMAT_MAJOR);
    // strings: id 1 "/usr/a", id 2 "/usr/b"
    old.extend(table(KIND_STRINGS, 2, b"\x01\x06/usr/a\x02\x06/usr/b"));
    // files: id 1, pid 7, fd zigzag(3)=6, kind 1 (file), name 2, dev 0, open_ts 1000
    old.extend(table(KIND_FILES, 1, &[1, 7, 6, 1, 2, 0, 0xe8, 0x07]));
    let mut new = start(FORMAT_MAJOR);
    // id delta zigzag(1)=2, shared 0, "/usr/a"; then zigzag(1), shared 5, "b"
    new.extend(table(KIND_PREFIX_STRINGS, 2, b"\x02\x00\x06/usr/a\x02\x05\x01b"));
    // one entry, field by field: id +1, pid +7, fd +3, kind 1, name +2, dev 0, open_ts +1000
    new.extend(table(KIND_COLUMN_FILES, 1, &[2, 14, 6, 1, 4, 0, 0xd0, 0x0f]));
    let whole = ReadOptions {
        file_details: true,
        ..ReadOptions::default()
    };
    let (old, new) = (
        Reader::new_with(old, whole).unwrap(),
        Reader::new_with(new, whole).unwrap(),
    );
    for r in [&old, &new] {
        let notes = r.recovery().unwrap_or("");
        assert!(!notes.contains("do not decode"), "every table frame decodes: {notes}");
        assert_eq!((r.tables().string(1), r.tables().string(2)), ("/usr/a", "/usr/b"));
        let f = &r.tables().file_entries().expect("kept on request")[0];
        assert_eq!(
            (f.id, f.pid, f.fd, f.kind, f.name, f.open_ts),
            (1, 7, 3, FdType::File, 2, 1000)
        );
        assert_eq!(r.tables().file(1), Some(f.target()));
    }
    assert_eq!(old.tables().file_entries(), new.tables().file_entries());
}

/// 1.1 table frames that lie are refused whole, without a panic or a large allocation.
#[test]
fn lying_prefix_strings_and_column_files_are_refused() {
    let mut big_suffix = vec![0x02, 0x00];
    put(&mut big_suffix, 60_000);
    big_suffix.extend(std::iter::repeat_n(b'a', 60_000));
    // Each further entry repeats the 60 000 bytes before it: the expansion cap stops it.
    let mut quadratic = big_suffix.clone();
    for _ in 0..1_200 {
        quadratic.extend_from_slice(&[0x02]);
        put(&mut quadratic, 60_000);
        quadratic.push(0);
    }
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            table(KIND_PREFIX_STRINGS, 1, b"\x02\x01\x01a"),
            "shares more than the previous string",
        ),
        (table(KIND_PREFIX_STRINGS, 1, b"\x01\x00\x01a"), "id below 0"),
        (
            table(KIND_PREFIX_STRINGS, 2, b"\x02\x00\x01a"),
            "count over the entries",
        ),
        (
            table(KIND_PREFIX_STRINGS, 1_201, &quadratic),
            "shared prefixes over the size cap",
        ),
        (
            table(KIND_COLUMN_FILES, 2, &[2, 2, 2, 1, 2, 0, 0]),
            "count over the bytes / 7",
        ),
        (
            table(KIND_COLUMN_FILES, 1, &[2, 2, 0xfe, 0xff, 0xff, 0xff, 0x1f, 1, 2, 0, 0]),
            "fd over i32",
        ),
        (
            table(KIND_COLUMN_FILES, 1, &[2, 2, 2, 1, 2, 0, 0, 9]),
            "bytes after the last field",
        ),
    ];
    for (t, what) in cases {
        let mut f = start(FORMAT_MAJOR);
        f.extend(t);
        let r = Reader::from_bytes(f).unwrap();
        assert!(
            r.recovery().unwrap_or("").contains("table entries do not decode"),
            "{what}: {:?}",
            r.recovery()
        );
        assert_eq!(r.tables().file_count(), 0, "{what}");
    }
}
