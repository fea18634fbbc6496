//! Drops placed by process (frame kind 18, 1.22): each reading's growth per process, read
//! through the index and by a scan alike, placed in time, joined over a rotation's files; a
//! capture whose recorder did not place its drops says so rather than 0, and a frame that does
//! not decode is refused whole, not believed.

use iocap_format::{DropStats, Event, Meta, ProcDropStats, ProcDrops, ProcEntry, Reader, Writer, WriterOptions};

use crate::bombs::frame;

const S: u64 = 1_000_000_000;

fn meta(start: u64) -> Meta {
    Meta {
        host: "h".into(),
        boot_to_wall_ns: 1_700_000_000_000_000_000,
        start_ts: start,
        ..Meta::default()
    }
}

fn writer(start: u64) -> Writer<Vec<u8>> {
    let opts = WriterOptions {
        chunk_events: 2,
        level: 1,
    };
    Writer::new(Vec::new(), &meta(start), opts).unwrap()
}

fn pd(pid: u32, proc: u32, count: u64) -> ProcDrops {
    ProcDrops { pid, proc, count }
}

/// Readings at `start` + 1 s, 2 s ...: each `(per-CPU totals, growth by process)`. Two process
/// entries: `dd` (pid 100, entry 1) and `postgres` (pid 200, entry 2).
fn capture(start: u64, readings: &[(Vec<u64>, Vec<ProcDrops>)]) -> Vec<u8> {
    let mut w = writer(start);
    for (pid, name) in [(100, "dd"), (200, "postgres")] {
        let name = w.intern(name.as_bytes());
        w.add_proc(ProcEntry {
            pid,
            name,
            ..ProcEntry::default()
        });
    }
    for (i, (per_cpu, procs)) in readings.iter().enumerate() {
        let ts = start + (i as u64 + 1) * S;
        w.push(&Event::syscall(ts - 10, 5, 100, 100, 0, 1)).unwrap();
        w.record_drops(&DropStats {
            ts,
            per_cpu: per_cpu.clone(),
        })
        .unwrap();
        w.record_drops_by_process(&ProcDropStats {
            ts,
            procs: procs.clone(),
        })
        .unwrap();
    }
    w.finish(start + (readings.len() as u64 + 2) * S).unwrap()
}

/// 100 drops by 1 s (90 dd's, 10 of nobody known), 150 more by 2 s (dd 100, postgres 50),
/// nothing more at 3 s.
fn readings() -> Vec<(Vec<u64>, Vec<ProcDrops>)> {
    vec![
        (vec![60, 40], vec![pd(100, 1, 90)]),
        (vec![150, 100], vec![pd(200, 2, 50), pd(100, 1, 100)]),
        (vec![150, 100], vec![]),
    ]
}

#[test]
fn drops_by_process_read_back_by_index_and_by_scan_and_place_in_time() {
    let bytes = capture(0, &readings());
    let r = Reader::from_bytes(bytes.clone()).unwrap();
    assert!(r.is_clean());
    let cut = Reader::from_bytes(bytes[..bytes.len() - 1].to_vec()).unwrap();
    assert!(!cut.is_clean());
    for r in [&r, &cut] {
        assert!(r.drops_by_process_recorded());
        assert_eq!(r.drops(), 250);
        // As written, but in pid order and without the empty reading's nothing.
        let frames = r.drop_stats_by_process();
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[1].procs, vec![pd(100, 1, 100), pd(200, 2, 50)]);
        assert!(frames[2].procs.is_empty());
        assert_eq!(
            r.drops_by_process(0, u64::MAX).unwrap(),
            vec![pd(100, 1, 190), pd(200, 2, 50)],
            "most first"
        );
        // Each reading counts in the range holding its time.
        assert_eq!(r.drops_by_process(0, S).unwrap(), vec![]);
        assert_eq!(r.drops_by_process(S, S + 1).unwrap(), vec![pd(100, 1, 90)]);
        assert_eq!(
            r.drops_by_process(S + 1, 3 * S).unwrap(),
            vec![pd(100, 1, 100), pd(200, 2, 50)]
        );
        assert_eq!(r.drops_by_process(3 * S, u64::MAX).unwrap(), vec![]);
    }
}

/// A stats frame alone is what recorders before 1.22 wrote: their drops are not placed, which
/// a reader says (`None`), not 0; a capture without drops places all of its none.
#[test]
fn a_capture_with_drops_and_no_placement_says_not_recorded() {
    let mut w = writer(0);
    w.push(&Event::syscall(10, 5, 100, 100, 0, 1)).unwrap();
    w.record_drops(&DropStats {
        ts: S,
        per_cpu: vec![7],
    })
    .unwrap();
    let old = Reader::from_bytes(w.finish(2 * S).unwrap()).unwrap();
    assert_eq!(old.drops(), 7);
    assert!(!old.drops_by_process_recorded());
    assert_eq!(old.drops_by_process(0, u64::MAX), None);

    let mut w = writer(0);
    w.push(&Event::syscall(10, 5, 100, 100, 0, 1)).unwrap();
    let none = Reader::from_bytes(w.finish(2 * S).unwrap()).unwrap();
    assert!(none.drops_by_process_recorded());
    assert_eq!(none.drops_by_process(0, u64::MAX), Some(vec![]));
}

/// The committed fixtures were written before 1.22 and dropped nothing: every one reads, and
/// says no process lost anything.
#[test]
fn older_fixtures_read_with_nothing_placed() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut read = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "cap") {
            let r = Reader::open(&path).unwrap();
            assert!(r.version().1 < 22, "{path:?} is an older capture");
            assert!(r.drop_stats_by_process().is_empty());
            assert_eq!(r.drops_by_process_recorded(), r.drops() == 0, "{path:?}");
            read += 1;
        }
    }
    assert!(read >= 3, "the fixtures are there");
}

/// An entry the recorder did not know (`proc` 0, the process gone before the reading reached
/// the writer) takes the last entry of its pid; an unknown pid stays unknown.
#[test]
fn an_unknown_entry_is_found_by_its_pid() {
    let r = Reader::from_bytes(capture(
        0,
        &[(vec![30], vec![pd(200, 0, 20), pd(4_000_000, 0, 5), pd(100, 0, 5)])],
    ))
    .unwrap();
    assert_eq!(
        r.drops_by_process(0, u64::MAX).unwrap(),
        vec![pd(200, 2, 20), pd(100, 1, 5), pd(4_000_000, 0, 5)]
    );
}

#[test]
fn a_rotation_joins_its_files_placements_with_their_ids_moved() {
    let a = Reader::from_bytes(capture(0, &readings())).unwrap();
    let b = Reader::from_bytes(capture(10 * S, &[(vec![5], vec![pd(200, 2, 5)])])).unwrap();
    let joined = Reader::join(vec![("a".into(), a), ("b".into(), b)], Vec::new()).unwrap();
    assert!(joined.drops_by_process_recorded());
    // b's entry 2 is entry 4 of the joined tables, postgres again.
    let all = joined.drops_by_process(0, u64::MAX).unwrap();
    assert_eq!(all, vec![pd(100, 1, 190), pd(200, 2, 50), pd(200, 4, 5)]);
    let p = joined.tables().proc(4).unwrap();
    assert_eq!((p.pid, joined.tables().string(p.name)), (200, "postgres"));

    // A file whose recorder did not place its drops leaves the joined placement short: said.
    let mut w = writer(20 * S);
    w.push(&Event::syscall(20 * S + 10, 5, 100, 100, 0, 1)).unwrap();
    w.record_drops(&DropStats {
        ts: 21 * S,
        per_cpu: vec![7],
    })
    .unwrap();
    let old = Reader::from_bytes(w.finish(22 * S).unwrap()).unwrap();
    let a = Reader::from_bytes(capture(0, &readings())).unwrap();
    let joined = Reader::join(vec![("a".into(), a), ("old".into(), old)], Vec::new()).unwrap();
    assert!(!joined.drops_by_process_recorded());
    assert_eq!(joined.drops_by_process(0, u64::MAX), None);
}

/// The drop-processes frame of `bytes`: where it starts and ends.
fn procs_frame(bytes: &[u8]) -> (usize, usize) {
    let at = (0..bytes.len() - 4)
        .find(|&i| &bytes[i..i + 4] == b"IOFR" && bytes[i + 4..i + 6] == 18u16.to_le_bytes())
        .expect("a drop-processes frame");
    let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
    (at, at + 16 + len)
}

fn put(vs: &[u64]) -> Vec<u8> {
    let mut p = Vec::new();
    for &v in vs {
        iocap_format::varint::put(&mut p, v);
    }
    p
}

/// Pids out of order or repeated, a count of entries the payload cannot hold, a pid or entry
/// past 32 bits, a byte too many: the frame is refused whole and noted, and its drops count
/// for no process.
#[test]
fn a_drop_processes_frame_that_does_not_decode_is_refused_whole() {
    let bytes = capture(0, &[(vec![9], vec![pd(100, 1, 9)])]);
    let (at, end) = procs_frame(&bytes);
    assert_eq!(&bytes[at + 16..end], &put(&[S, 1, 100, 1, 9])[..], "as written");
    for bad in [
        [put(&[S, 1, 100, 1, 9]), vec![0]].concat(),
        put(&[S, 2, 200, 2, 1, 100, 1, 8]),
        put(&[S, 2, 100, 1, 1, 100, 1, 8]),
        put(&[S, 1_000, 100, 1, 9]),
        put(&[S, 1, 1 << 32, 1, 9]),
        put(&[S, 1, 100, 1 << 32, 9]),
    ] {
        let mut b = bytes.clone();
        b.splice(at..end, frame(18, &bad));
        let r = Reader::from_bytes(b).unwrap();
        assert_eq!(r.drops(), 9, "{bad:?}");
        assert!(r.drop_stats_by_process().is_empty(), "{bad:?}");
        assert!(
            r.recovery().unwrap().contains("drop-processes frame does not decode"),
            "{:?}",
            r.recovery()
        );
    }
}

/// Counts are the file's claims: sums saturate, and a sum over the recorder's total is still
/// only what each process is said to have lost (no panic, no wrap).
#[test]
fn huge_counts_saturate() {
    let r = Reader::from_bytes(capture(
        0,
        &[
            (vec![u64::MAX], vec![pd(100, 1, u64::MAX)]),
            (vec![u64::MAX], vec![pd(100, 1, u64::MAX), pd(100, 1, 3)]),
        ],
    ))
    .unwrap();
    assert_eq!(r.drops_by_process(0, u64::MAX).unwrap(), vec![pd(100, 1, u64::MAX)]);
}
