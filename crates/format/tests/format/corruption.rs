//! Damaged captures: every flipped bit is caught by a checksum. The reader fails with a clear
//! error or skips the damaged frame, and never hands back an event that was not written.

use iocap_format::{Error, Event, Reader};

use crate::util::{read_chunks, small_capture, Expected};

/// splitmix64: a small deterministic generator, so a failing seed can be replayed.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Open `bytes` and read everything; check nothing that comes back was not written.
/// Returns how many chunks were read back whole, or `None` when the file did not open.
fn read_damaged(bytes: Vec<u8>, x: &Expected, what: &str) -> Option<usize> {
    let r = match Reader::from_bytes(bytes) {
        Ok(r) => r,
        Err(e) => {
            assert!(
                matches!(e, Error::Corrupt { .. } | Error::NotACapture(_) | Error::Version { .. }),
                "{what}: unexpected error kind {e:?}"
            );
            assert!(!e.to_string().contains('\n'), "{what}: error is one line");
            return None;
        }
    };
    assert_eq!(r.meta(), &x.meta, "{what}: the header is checksummed");
    let all: Vec<Event> = x.events();
    let mut good = 0;
    let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
    for i in 0..r.chunks().len() {
        match r.read_chunk(i, iocap_format::ColSet::ALL, &mut dec, &mut cols) {
            Ok(()) => {
                let evs: Vec<Event> = (0..cols.len()).map(|j| cols.event(j)).collect();
                assert!(x.chunks.contains(&evs), "{what}: chunk {i} is not one that was written");
                good += 1;
            }
            Err(e) => assert!(matches!(e, Error::Corrupt { .. }), "{what}: chunk {i}: {e:?}"),
        }
    }
    for e in r.events().flatten() {
        assert!(all.contains(&e), "{what}: event {e:?} was never written");
    }
    // Table strings: each is one that was written (escaped), or absent.
    for (raw, id) in &x.strings {
        let s = r.tables().string(*id);
        assert!(
            s.is_empty() || s == iocap_format::escape::escape(raw),
            "{what}: string {id}"
        );
    }
    Some(good)
}

#[test]
fn every_single_bit_flip_is_detected() {
    let (bytes, x) = small_capture();
    let total = x.chunks.len();
    for bit in 0..bytes.len() * 8 {
        let mut bad = bytes.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let what = format!("flip of bit {bit}");
        if let Some(good) = read_damaged(bad, &x, &what) {
            // One flip damages one frame: at most one chunk is lost.
            assert!(good + 1 >= total, "{what}: only {good} of {total} chunks read back");
        } else {
            // Only damage to the preamble or the header frame may stop the file opening.
            let hdr_end = 32 + u32::from_le_bytes(bytes[24..28].try_into().unwrap()) as usize;
            assert!(bit / 8 < hdr_end, "{what}: the file did not open");
        }
    }
}

#[test]
fn random_multi_bit_flips_never_give_wrong_events() {
    let (bytes, x) = small_capture();
    let mut opened = 0;
    for seed in 0..3000u64 {
        let mut st = seed;
        let mut bad = bytes.clone();
        let flips = 1 + next(&mut st) % 8;
        for _ in 0..flips {
            let bit = next(&mut st) as usize % (bytes.len() * 8);
            bad[bit / 8] ^= 1 << (bit % 8);
        }
        if read_damaged(bad, &x, &format!("seed {seed}")).is_some() {
            opened += 1;
        }
    }
    assert!(opened > 1000, "most damaged files still open ({opened} did)");
}

#[test]
fn damaged_byte_runs_are_skipped() {
    let (bytes, x) = small_capture();
    for seed in 0..500u64 {
        let mut st = seed;
        let mut bad = bytes.clone();
        let at = next(&mut st) as usize % bytes.len();
        let len = 1 + next(&mut st) as usize % 64;
        for b in bad.iter_mut().skip(at).take(len) {
            *b = next(&mut st) as u8;
        }
        read_damaged(bad, &x, &format!("run seed {seed}"));
    }
    // Scanning a damaged file still returns every other chunk.
    let r = Reader::from_bytes(bytes.clone()).unwrap();
    let c = &r.chunks()[2];
    let mut bad = bytes;
    bad[c.offset as usize + 20] ^= 0xff;
    let len = bad.len();
    bad[len - 1] ^= 0xff; // break the trailer too, so the reader scans
    let r = Reader::from_bytes(bad).unwrap();
    assert!(!r.is_clean());
    let chunks = read_chunks(&r).unwrap();
    let mut want = x.chunks.clone();
    want.remove(2);
    assert_eq!(chunks, want);
    assert!(r.recovery().unwrap().contains("skipped"), "{:?}", r.recovery());
}
