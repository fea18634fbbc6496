//! Older minor versions keep reading: a capture written by the 1.1 writer (GAP timestamps as
//! varints, no VBYTE) reads back, and its events written again by this writer (GAP_VBYTE
//! timestamps, VBYTE latencies, byte planes since 1.7) read back the same.

use std::path::Path;

use iocap_format::varint::Cursor;
use iocap_format::{
    ChunkDecoder, Col, ColSet, Columns, Event, Reader, Writer, WriterOptions, FORMAT_MAJOR, FORMAT_MINOR,
};

/// The (column id, encoding) pairs of every chunk's directory (layout in FORMAT.md).
fn encodings(bytes: &[u8], r: &Reader<Vec<u8>>) -> Vec<(u64, u8)> {
    let mut out = Vec::new();
    for c in r.chunks() {
        let mut cur = Cursor::new(&bytes[c.offset as usize + 16..]);
        cur.len_bytes().expect("summary");
        for _ in 0..cur.varint().expect("ncols") {
            let id = cur.varint().expect("id");
            out.push((id, cur.u8().expect("encoding")));
            cur.u8().expect("codec");
            cur.varint().expect("raw_len");
            cur.varint().expect("stored_len");
        }
    }
    out
}

/// `format_bench --sample format-1.1.cap 3000 1000`, run by the 1.1 writer (commit 3eba0c5).
#[test]
fn format_1_1_captures_still_read_and_rewrite_identically() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format-1.1.cap");
    let old = std::fs::read(path).unwrap();
    let r = Reader::from_bytes(old.clone()).unwrap();
    assert_eq!(r.version(), (1, 1));
    assert!(r.is_clean());
    assert_eq!(r.event_count(), 3000);
    // ts as GAP (5), nothing as VBYTE (7) or GAP_VBYTE (8).
    let old_enc = encodings(&old, &r);
    assert!(old_enc.contains(&(1, 5)), "{old_enc:?}");
    assert!(old_enc.iter().all(|&(_, e)| e < 7), "{old_enc:?}");
    let events: Vec<Event> = r.events().collect::<Result<_, _>>().unwrap();
    assert!(events.windows(2).any(|w| w[0].ts != w[1].ts));
    // ts alone (its GAP rebuilt from class, tid and latency decoded behind the scenes).
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    let mut ts = Vec::new();
    for i in 0..r.chunks().len() {
        r.read_chunk(i, ColSet::NONE.with(Col::Ts), &mut dec, &mut cols)
            .unwrap();
        assert!(cols.tid.is_empty() && cols.latency.is_empty());
        ts.extend_from_slice(&cols.ts);
    }
    assert!(ts.iter().eq(events.iter().map(|e| &e.ts)));

    let opts = WriterOptions {
        chunk_events: 1000,
        ..WriterOptions::default()
    };
    let mut w = Writer::new(Vec::new(), r.meta(), opts).unwrap();
    events.iter().for_each(|e| w.push(e).unwrap());
    let new = w.finish(r.stop_ts()).unwrap();
    let r2 = Reader::from_bytes(new.clone()).unwrap();
    assert_eq!(r2.version(), (FORMAT_MAJOR, FORMAT_MINOR));
    let new_enc = encodings(&new, &r2);
    // ts in one of this writer's gap forms: GAP_VBYTE (8) or GAP_PLANES (10, since 1.7),
    // whichever is smaller as stored.
    assert!(
        new_enc.iter().filter(|e| e.0 == 1).all(|&(_, e)| e == 8 || e == 10),
        "{new_enc:?}"
    );
    let again: Vec<Event> = r2.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(again, events);
}
