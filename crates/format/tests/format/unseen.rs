//! The unseen count (frame kind 12, 1.9): block requests issued whose completion never reached
//! the recorder. Read through the index and by a scan alike, summed over a rotation's files,
//! and a frame that does not decode is refused, not believed.

use iocap_format::{Event, Meta, Reader, Writer, WriterOptions};

use crate::bombs::frame;

/// A capture from `start` to `stop` with a few calls, whose recorder said `unseen` counts in turn.
fn capture(start: u64, stop: u64, unseen: &[u64]) -> Vec<u8> {
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
    for (i, &n) in unseen.iter().enumerate() {
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
    assert_eq!(r.drops(), 0, "unseen requests are not drops");
    // Without its trailer the file is read by a scan, which finds the same frames.
    let cut = Reader::from_bytes(bytes[..bytes.len() - 1].to_vec()).unwrap();
    assert!(!cut.is_clean());
    assert_eq!(cut.unseen(), 7);
    assert_eq!(Reader::from_bytes(capture(1_000, 2_000, &[])).unwrap().unseen(), 0);
}

#[test]
fn a_rotation_sums_its_files_counts() {
    let a = Reader::from_bytes(capture(1_000, 2_000, &[3])).unwrap();
    let b = Reader::from_bytes(capture(2_000, 3_000, &[1, 4])).unwrap();
    let joined = Reader::join(vec![("a".into(), a), ("b".into(), b)], Vec::new()).unwrap();
    assert_eq!(joined.unseen(), 3 + 4);
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
