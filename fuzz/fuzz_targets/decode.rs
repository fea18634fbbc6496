//! Fuzz the capture reader: open arbitrary bytes, then read every chunk (all columns and a
//! subset), every event and every table. Any panic, abort or runaway allocation is a bug:
//! hostile files must give errors, never crashes.
//!
//! Each input is read twice: as it is, and with every frame's CRC recomputed, because almost
//! every mutation breaks a checksum and would otherwise never reach the payload decoders.
#![no_main]

use iocap_format::{ChunkDecoder, Col, ColSet, Columns, Reader};
use libfuzzer_sys::fuzz_target;

fn read_all(data: Vec<u8>) {
    let Ok(r) = Reader::from_bytes(data) else { return };
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    let some = ColSet::NONE.with(Col::Ts).with(Col::Latency).with(Col::Ret);
    for i in 0..r.chunks().len() {
        if r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).is_ok() {
            assert_eq!(cols.len() as u64, r.chunks()[i].summary.events);
            for j in 0..cols.len() {
                let _ = cols.event(j);
            }
        }
        let _ = r.read_chunk(i, some, &mut dec, &mut cols);
    }
    for e in r.events().flatten() {
        let _ = e.end();
    }
    let _ = r.chunks_in(0, u64::MAX).count();
    let t = r.tables();
    for p in t.procs() {
        let _ = (t.string(p.name), t.string(p.exe), t.string(p.cmdline), t.proc(p.id));
    }
    for f in t.files() {
        let _ = (t.string(f.name), t.file(f.id), t.device_name(f.dev));
    }
    let _ = (r.drops(), r.stop_ts(), r.event_count(), r.is_clean(), r.recovery(), r.meta());
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

fuzz_target!(|data: &[u8]| {
    read_all(data.to_vec());
    let mut fixed = data.to_vec();
    fix_crcs(&mut fixed);
    if fixed != data {
        read_all(fixed);
    }
});
