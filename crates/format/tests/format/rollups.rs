//! Chunk rollups (kind 13) and their cells' totals (kind 14): written after every chunk, found
//! by the index without being read at opening, found by a scan of a file without one, and never
//! used when damaged.

use iocap_format::{ChunkDecoder, ColSet, Columns, Reader, Rollup};

use crate::util::{few_and_many_files, small_capture};

/// Each chunk's rollup as [`Reader::rollup_with_cells`] reads it, and as its decoded columns
/// make it.
fn rollups_read_and_made(r: &Reader<Vec<u8>>) -> Vec<(Option<Rollup>, Rollup)> {
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    (0..r.chunks().len())
        .map(|i| {
            r.read_chunk(i, ColSet::ALL, &mut dec, &mut cols).unwrap();
            (
                r.rollup_with_cells(i, &mut dec).and_then(Rollup::into_decoded),
                Rollup::of(&cols, r.chunks()[i].offset),
            )
        })
        .collect()
}

/// Offsets of the frames of kind `kind` in `bytes`.
fn frames_of_kind(bytes: &[u8], kind: u16) -> Vec<usize> {
    (0..bytes.len().saturating_sub(16))
        .filter(|&at| &bytes[at..at + 4] == b"IOFR" && u16::from_le_bytes([bytes[at + 4], bytes[at + 5]]) == kind)
        .collect()
}

#[test]
fn every_chunk_has_its_rollup_by_index_and_by_scan() {
    let (bytes, _) = small_capture();
    let r = Reader::from_bytes(bytes.clone()).unwrap();
    assert!(r.is_clean() && r.chunks().len() > 2);
    let mut dec = ChunkDecoder::new();
    for (i, (read, made)) in rollups_read_and_made(&r).into_iter().enumerate() {
        assert!(r.has_rollup(i) && r.has_cell_totals(i));
        assert!(made.has_cell_totals());
        assert_eq!(read.as_ref(), Some(&made), "chunk {i}");
        // A question without latency bounds reads the rollup's frame alone.
        let alone = r.rollup(i, &mut dec).unwrap();
        assert!(!alone.has_cell_totals());
        assert_eq!(
            (alone.keys, alone.totals, alone.cells),
            (made.keys, made.totals, made.cells)
        );
    }
    // Without its trailer the file is read by a scan, which finds the same rollups.
    let cut = Reader::from_bytes(bytes[..bytes.len() - 16].to_vec()).unwrap();
    assert!(!cut.is_clean());
    for (i, (read, made)) in rollups_read_and_made(&cut).into_iter().enumerate() {
        assert_eq!(read.as_ref(), Some(&made), "chunk {i}, by scan");
    }
}

#[test]
fn a_damaged_rollup_is_not_used_and_loses_nothing() {
    let (mut bytes, _) = small_capture();
    let at = frames_of_kind(&bytes, 13);
    let chunks = frames_of_kind(&bytes, 6);
    assert_eq!(at.len(), chunks.len(), "one rollup per chunk");
    // A flipped bit in the first rollup's payload: its checksum fails.
    bytes[at[0] + 20] ^= 0x10;
    let r = Reader::from_bytes(bytes).unwrap();
    // The index lists rollups without reading them: the file still opens clean.
    assert!(r.is_clean());
    let (mut dec, mut cols) = (ChunkDecoder::new(), Columns::default());
    assert_eq!(r.rollup(0, &mut dec), None);
    r.read_chunk(0, ColSet::ALL, &mut dec, &mut cols).unwrap();
    assert_eq!(cols.len() as u64, r.chunks()[0].summary.events);
    assert!(r.rollup(1, &mut dec).is_some());
}

#[test]
fn damaged_cells_totals_leave_the_rollup_without_them() {
    let (mut bytes, _) = small_capture();
    let at = frames_of_kind(&bytes, 14);
    assert_eq!(
        at.len(),
        frames_of_kind(&bytes, 6).len(),
        "cells' totals for every chunk"
    );
    bytes[at[0] + 20] ^= 0x10;
    let r = Reader::from_bytes(bytes.clone()).unwrap();
    assert!(r.is_clean());
    // Listed, so said to be there until read.
    assert!(r.has_cell_totals(0));
    let mut dec = ChunkDecoder::new();
    let first = r.rollup_with_cells(0, &mut dec).unwrap();
    assert!(!first.has_cell_totals(), "damaged: not used");
    assert!(r.rollup_with_cells(1, &mut dec).unwrap().has_cell_totals());
    // Chunk 1's cells' totals, in chunk 0's place, are not chunk 0's.
    let (a, b) = (at[0], at[1]);
    let second = bytes[b..at.get(2).copied().unwrap_or(bytes.len())].to_vec();
    let mut swapped = bytes[..a].to_vec();
    swapped.extend_from_slice(&second);
    let r = Reader::from_bytes(swapped).unwrap();
    assert!(!r.rollup_with_cells(0, &mut dec).unwrap().has_cell_totals());
}

#[test]
fn a_rollup_answers_only_for_its_own_chunk() {
    let (bytes, _) = small_capture();
    let at = frames_of_kind(&bytes, 13);
    // The frame the index lists as the first rollup, of another kind now (its checksum
    // covers the kind: it is no rollup either way).
    let mut moved = bytes.clone();
    moved[at[0] + 4] = 99;
    let r = Reader::from_bytes(moved).unwrap();
    let mut dec = ChunkDecoder::new();
    assert_eq!(r.rollup(0, &mut dec), None, "a frame of another kind is no rollup");
    let r = Reader::from_bytes(bytes).unwrap();
    // Chunk 0's rollup names chunk 0's offset, not chunk 1's.
    let first = r.rollup(0, &mut dec).unwrap();
    assert_eq!(first.chunk, r.chunks()[0].offset);
    assert_ne!(first.chunk, r.chunks()[1].offset);
}

/// A table frame damaged after some rollups: the index, listing it, is given up for a scan,
/// which finds every chunk's rollup.
#[test]
fn rollups_found_by_a_scan_after_the_index_failed() {
    let (mut bytes, _) = small_capture();
    let first_rollup = frames_of_kind(&bytes, 13)[0];
    let table = [2u16, 3, 4, 5, 9, 10, 11]
        .iter()
        .flat_map(|&k| frames_of_kind(&bytes, k))
        .filter(|&at| at > first_rollup)
        .min()
        .expect("a table frame after the first chunk");
    bytes[table + 17] ^= 0x01;
    let r = Reader::from_bytes(bytes).unwrap();
    assert!(!r.is_clean(), "the index lists a damaged frame");
    for (i, (read, made)) in rollups_read_and_made(&r).into_iter().enumerate() {
        assert_eq!(read.as_ref(), Some(&made), "chunk {i}");
    }
}

/// Cells' totals are stored uncompressed since 1.15; a file whose writer (1.14) compressed
/// them with zstd, as the other packed frames, reads alike.
#[test]
fn cells_totals_compressed_as_1_14_wrote_them_read_alike() {
    let (bytes, _) = small_capture();
    // The last chunk's: the frames before it stay where they are (each names its chunk by its
    // offset), and the index after it no longer holds, so the file is read by a scan.
    let a = *frames_of_kind(&bytes, 14).last().unwrap();
    let len = u32::from_le_bytes(bytes[a + 8..a + 12].try_into().unwrap()) as usize;
    let payload = &bytes[a + 16..a + 16 + len];
    assert_eq!(payload[0], 0, "stored uncompressed (codec 0)");
    let raw_len = iocap_format::varint::Cursor::new(&payload[1..]).varint().unwrap() as usize;
    let raw = &payload[payload.len() - raw_len..];
    let mut packed = vec![1u8];
    iocap_format::varint::put(&mut packed, raw_len as u64);
    packed.extend_from_slice(&zstd::bulk::compress(raw, 3).unwrap());
    let mut old = bytes.clone();
    old.splice(a..a + 16 + len, crate::bombs::frame(14, &packed));
    let r = Reader::from_bytes(old).unwrap();
    assert!(!r.is_clean());
    let all = rollups_read_and_made(&r);
    for (i, (read, made)) in all.iter().enumerate() {
        assert!(read.as_ref().is_some_and(Rollup::has_cell_totals), "chunk {i}");
        assert_eq!(read.as_ref(), Some(made), "chunk {i}");
    }
}

/// A chunk of few files has a file rollup (frame kind 16), one of many files a rollup without
/// them (kind 13); the index and a scan both tell which, before either is read, so a question
/// on the file reads only the first kind.
#[test]
fn the_listing_says_which_rollups_hold_files() {
    use iocap_format::Col;
    // Chunk 0 on one file, chunk 1 on a file per event.
    let bytes = few_and_many_files(2);
    assert_eq!(frames_of_kind(&bytes, 13).len(), 1);
    assert_eq!(frames_of_kind(&bytes, 16).len(), 1);
    let by_index = Reader::from_bytes(bytes.clone()).unwrap();
    let by_scan = Reader::from_bytes(bytes[..bytes.len() - 16].to_vec()).unwrap();
    assert!(by_index.is_clean() && !by_scan.is_clean());
    let (file, pid) = (ColSet::NONE.with(Col::File), ColSet::NONE.with(Col::Pid));
    let mut dec = ChunkDecoder::new();
    for r in [&by_index, &by_scan] {
        assert_eq!(r.chunks().len(), 2);
        for (i, with_file) in [(0, true), (1, false)] {
            assert_eq!(r.rollup_may_hold(i, file), with_file, "chunk {i}");
            assert_eq!(r.rollup_may_hold(i, file.with(Col::Pid)), with_file, "chunk {i}");
            assert!(r.rollup_may_hold(i, pid), "chunk {i}: its keys hold the pid");
            let rollup = r.rollup(i, &mut dec).unwrap();
            assert_eq!(rollup.with_file, with_file, "chunk {i}");
            assert_eq!(rollup.holds(file), with_file, "chunk {i}");
        }
    }
    // A damaged file rollup is not used, as a damaged rollup is not; its chunk still reads.
    let mut damaged = bytes.clone();
    damaged[frames_of_kind(&bytes, 16)[0] + 20] ^= 0x10;
    let r = Reader::from_bytes(damaged).unwrap();
    let mut cols = Columns::default();
    assert_eq!(r.rollup(0, &mut dec), None);
    r.read_chunk(0, ColSet::ALL, &mut dec, &mut cols).unwrap();
    assert_eq!(cols.len(), 256);
    assert!(r.rollup(1, &mut dec).is_some());
}
