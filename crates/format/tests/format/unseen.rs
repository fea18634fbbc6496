//! The unseen count (frame kind 12, 1.9) and its share of each disk (kind 15, 1.15): block
//! requests issued whose completion never reached the recorder. Read through the index and by
//! a scan alike, summed over a rotation's files, and a frame that does not decode is refused,
//! not believed.

use std::collections::BTreeMap;

use iocap_format::{mkdev, Event, Meta, Reader, Writer, WriterOptions};

use crate::bombs::frame;

/// The disk of [`capture`]'s counts.
const DISK: u32 = 7 << 20;

/// A capture from `start` to `stop` with a few calls, whose recorder said `unseen` counts (all
/// on [`DISK`]) in turn.
fn capture(start: u64, stop: u64, unseen: &[u64]) -> Vec<u8> {
    let each: Vec<BTreeMap<u32, u64>> = unseen.iter().map(|&n| BTreeMap::from([(DISK, n)])).collect();
    capture_by_disk(start, stop, &each)
}

/// [`capture`], each count disk by disk.
fn capture_by_disk(start: u64, stop: u64, unseen: &[BTreeMap<u32, u64>]) -> Vec<u8> {
    let meta = Meta {
        host: "h".into(),
        boot_to_wall_ns: 1_700_000_000_000_000_000,
        start_ts: start,
        ..Meta::default()
    };
    let opts = WriterOptions {
        chunk_events: 2,
        level: 1,
    };
    let mut w = Writer::new(Vec::new(), &meta, opts).unwrap();
    for (i, n) in unseen.iter().enumerate() {
        let ts = start + 10 * i as u64;
        w.push(&Event::syscall(ts, 5, 1, 1, 0, 1)).unwrap();
        w.record_unseen(ts + 1, n).unwrap();
    }
    w.finish(stop).unwrap()
}

#[test]
fn the_largest_count_is_read_through_the_index_and_by_a_scan() {
    let bytes = capture(1_000, 2_000, &[2, 2, 7]);
    let r = Reader::from_bytes(bytes.clone()).unwrap();
    assert!(r.is_clean());
    assert_eq!(r.unseen(), 7);
    assert_eq!(r.unseen_by_disk(), &BTreeMap::from([(DISK, 7)]));
    assert_eq!(r.drops(), 0, "unseen requests are not drops");
    // Without its trailer the file is read by a scan, which finds the same frames.
    let cut = Reader::from_bytes(bytes[..bytes.len() - 1].to_vec()).unwrap();
    assert!(!cut.is_clean());
    assert_eq!(cut.unseen(), 7);
    assert_eq!(cut.unseen_by_disk(), &BTreeMap::from([(DISK, 7)]));
    let none = Reader::from_bytes(capture(1_000, 2_000, &[])).unwrap();
    assert_eq!((none.unseen(), none.unseen_by_disk().len()), (0, 0));
}

/// Each disk keeps its own largest count, and the total is their sum as the recorder last
/// said it.
#[test]
fn each_disk_keeps_its_largest_count() {
    let (a, b) = (mkdev(7, 0), mkdev(254, 16));
    let said = [
        BTreeMap::from([(a, 2)]),
        BTreeMap::from([(a, 2), (b, 1)]),
        BTreeMap::from([(a, 5), (b, 1)]),
    ];
    let r = Reader::from_bytes(capture_by_disk(1_000, 2_000, &said)).unwrap();
    assert_eq!((r.unseen(), r.unseen_by_disk()), (6, &BTreeMap::from([(a, 5), (b, 1)])));
}

#[test]
fn a_rotation_sums_its_files_counts() {
    let a = Reader::from_bytes(capture(1_000, 2_000, &[3])).unwrap();
    let b = Reader::from_bytes(capture(2_000, 3_000, &[1, 4])).unwrap();
    let joined = Reader::join(vec![("a".into(), a), ("b".into(), b)], Vec::new()).unwrap();
    assert_eq!(joined.unseen(), 3 + 4);
    assert_eq!(joined.unseen_by_disk(), &BTreeMap::from([(DISK, 3 + 4)]));
}

/// The unseen-disks frame (kind 15) of `bytes`: where it starts and ends, and its payload.
fn disks_frame(bytes: &[u8]) -> (usize, usize, Vec<u8>) {
    let at = (0..bytes.len() - 4)
        .find(|&i| &bytes[i..i + 4] == b"IOFR" && bytes[i + 4..i + 6] == 15u16.to_le_bytes())
        .expect("an unseen-disks frame");
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    (at, at + 16 + len, bytes[at + 16..at + 16 + len].to_vec())
}

/// An unseen-disks frame that does not decode (a byte too many, disks out of order, a
/// number of disks its payload cannot hold, a disk past 32 bits) is refused whole; the total
/// of its unseen frame still stands.
#[test]
fn an_unseen_disks_frame_that_does_not_decode_is_refused_whole() {
    let bytes = capture(1_000, 2_000, &[9]);
    let (at, end, payload) = disks_frame(&bytes);
    // ts, 1 disk, DISK, 9: as written.
    let mut ok = Vec::new();
    for v in [1_001u64, 1, u64::from(DISK), 9] {
        iocap_format::varint::put(&mut ok, v);
    }
    assert_eq!(payload, ok);
    let put = |vs: &[u64]| {
        let mut p = Vec::new();
        for &v in vs {
            iocap_format::varint::put(&mut p, v);
        }
        p
    };
    let (d, e) = (u64::from(DISK), u64::from(DISK) + 1);
    for bad in [
        [ok.clone(), vec![0]].concat(),
        put(&[1_001, 2, e, 1, d, 8]),
        put(&[1_001, 2, d, 1, d, 8]),
        put(&[1_001, 1_000, d, 9]),
        put(&[1_001, 1, 1 << 32, 9]),
    ] {
        let mut b = bytes.clone();
        b.splice(at..end, frame(15, &bad));
        let r = Reader::from_bytes(b).unwrap();
        assert_eq!((r.unseen(), r.unseen_by_disk().len()), (9, 0), "{bad:?}");
        assert!(
            r.recovery().unwrap().contains("unseen-disks frame does not decode"),
            "{:?}",
            r.recovery()
        );
    }
}

#[test]
fn an_unseen_frame_with_bytes_after_its_count_is_refused() {
    let mut bytes = capture(1_000, 2_000, &[9]);
    // The unseen frame (kind 12) with a byte more in its payload, its checksum right, so that
    // only the payload's shape is wrong.
    let at = (0..bytes.len() - 4)
        .find(|&i| &bytes[i..i + 4] == b"IOFR" && bytes[i + 4..i + 6] == 12u16.to_le_bytes())
        .expect("an unseen frame");
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    let mut payload = bytes[at + 16..at + 16 + len].to_vec();
    payload.push(0);
    let frame = frame(12, &payload);
    // Spliced in place of the old frame: the index's offsets after it no longer hold, so the
    // file is read by a scan, which notes the frame and goes on.
    bytes.splice(at..at + 16 + len, frame);
    let r = Reader::from_bytes(bytes).unwrap();
    assert_eq!(r.unseen(), 0);
    assert!(!r.is_clean());
    assert!(
        r.recovery().unwrap().contains("unseen frame does not decode"),
        "{:?}",
        r.recovery()
    );
    assert_eq!(r.event_count(), 1);
}
