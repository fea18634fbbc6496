//! A capture read while it is written: [`Reader::refresh`] reads on from where it stopped and
//! ends as a reader opened on the finished file would; the writer's lock says it is live.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use iocap_format::{Event, Liveness, Meta, Reader, Source, Writer, WriterOptions};

use crate::util::{few_and_many_files, files, read_chunks, small_capture};

/// The bytes of a finished capture, shown up to `len` as if they were still being written.
struct Growing {
    bytes: Vec<u8>,
    len: AtomicUsize,
    alive: AtomicBool,
}

impl Growing {
    fn new(bytes: Vec<u8>, len: usize, alive: bool) -> Arc<Growing> {
        Arc::new(Growing {
            bytes,
            len: AtomicUsize::new(len),
            alive: AtomicBool::new(alive),
        })
    }

    fn grow_to(&self, len: usize) {
        self.len.store(len, Ordering::Relaxed);
    }
}

impl Source for Growing {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let shown = &self.bytes[..self.len.load(Ordering::Relaxed)];
        shown.read_exact_at(buf, offset)
    }

    fn len(&self) -> std::io::Result<u64> {
        Ok(self.len.load(Ordering::Relaxed) as u64)
    }

    fn writer_alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }
}

/// Positional reads of a byte slice, as the `Vec<u8>` source does.
trait ReadAt {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()>;
}

impl ReadAt for [u8] {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.get(o..o.checked_add(buf.len())?))
            .ok_or(std::io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

/// Everything two readers must agree on: events by chunk, tables, drops, the span.
fn same<S: Source, T: Source>(a: &Reader<S>, b: &Reader<T>, what: &str) {
    assert_eq!(read_chunks(a).unwrap(), read_chunks(b).unwrap(), "{what}: events");
    assert_eq!(a.chunks(), b.chunks(), "{what}: chunk summaries");
    let (ta, tb) = (a.tables(), b.tables());
    assert_eq!(ta.procs(), tb.procs(), "{what}: processes");
    assert_eq!(files(ta), files(tb), "{what}: files");
    assert_eq!(ta.devices(), tb.devices(), "{what}: devices");
    assert_eq!(ta.string_count(), tb.string_count(), "{what}: strings");
    for p in ta.procs() {
        assert_eq!(ta.string(p.name), tb.string(p.name), "{what}: names");
    }
    assert_eq!(a.drop_stats(), b.drop_stats(), "{what}: drops");
    assert_eq!(a.stop_ts(), b.stop_ts(), "{what}: stop");
    assert_eq!(a.file_len(), b.file_len(), "{what}: length");
}

/// Offset where the frame after the header starts.
fn header_end(bytes: &[u8]) -> usize {
    let len = u32::from_le_bytes(bytes[16 + 8..16 + 12].try_into().unwrap()) as usize;
    16 + 16 + len
}

#[test]
fn refreshing_byte_by_byte_reads_what_a_reader_opened_there_reads() {
    let (bytes, x) = small_capture();
    for alive in [true, false] {
        let src = Growing::new(bytes.clone(), header_end(&bytes), alive);
        let mut r = Reader::new(Arc::clone(&src)).unwrap();
        let mut chunks = 0;
        for cut in header_end(&bytes)..=bytes.len() {
            src.grow_to(cut);
            let grown = r.refresh().unwrap();
            assert_eq!(
                r.chunks().len(),
                chunks + grown.chunks,
                "cut at {cut}: only new chunks are counted"
            );
            chunks = r.chunks().len();
            let fresh = Reader::new(Growing::new(bytes.clone(), cut, alive)).unwrap();
            same(&r, &fresh, &format!("alive {alive}, cut at {cut}"));
            assert_eq!(r.is_clean(), fresh.is_clean(), "cut at {cut}");
            assert_eq!(r.liveness(), fresh.liveness(), "cut at {cut}");
            assert_eq!(r.recovery(), fresh.recovery(), "cut at {cut}");
            if cut < bytes.len() {
                let want = if alive { Liveness::Live } else { Liveness::Recovered };
                assert_eq!(r.liveness(), want, "cut at {cut}");
                // A file being written lacks only what is still to come: it is not damaged.
                assert_eq!(r.recovery().is_none(), alive, "cut at {cut}: {:?}", r.recovery());
            }
        }
        // The index and trailer written: clean, without a reopen.
        assert!(r.is_clean(), "{:?}", r.recovery());
        assert_eq!(r.liveness(), Liveness::Finished);
        assert_eq!(read_chunks(&r).unwrap(), x.chunks);
        same(&r, &Reader::from_bytes(bytes.clone()).unwrap(), "finished");
        assert!(r.refresh().unwrap().is_empty(), "nothing more once finished");
    }
}

#[test]
fn a_growing_file_read_in_a_few_steps_counts_what_each_added() {
    let (bytes, x) = small_capture();
    let src = Growing::new(bytes.clone(), header_end(&bytes), true);
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    assert_eq!(r.liveness(), Liveness::Live);
    assert_eq!(r.recovery(), None);
    assert!(r.chunks().is_empty());
    // Half the file in one step, then the rest.
    src.grow_to(bytes.len() / 2);
    let first = r.refresh().unwrap();
    assert!(first.chunks > 0 && first.tables > 0, "{first:?}");
    assert_eq!(r.chunks().len(), first.chunks);
    let snapshot = r.clone();
    assert!(r.refresh().unwrap().is_empty(), "not grown: nothing added");
    src.grow_to(bytes.len());
    let second = r.refresh().unwrap();
    assert_eq!(first.chunks + second.chunks, x.chunks.len());
    assert_eq!(first.stats + second.stats, x.drops.len());
    assert_eq!(r.liveness(), Liveness::Finished);
    // A clone is a snapshot: it kept what it had.
    assert!(snapshot.same_source(&r));
    assert!(!snapshot.same_source(&Reader::new(Arc::clone(&src)).unwrap()));
    assert_eq!(snapshot.chunks().len(), first.chunks);
    assert_eq!(snapshot.liveness(), Liveness::Live);
    assert_eq!(read_chunks(&snapshot).unwrap(), x.chunks[..first.chunks]);
}

#[test]
fn a_writer_that_dies_leaves_a_recovered_file_and_says_so() {
    let (bytes, _) = small_capture();
    // Cut inside a frame (the last chunk's), as a killed recorder leaves its last buffer.
    let last = Reader::from_bytes(bytes.clone())
        .unwrap()
        .chunks()
        .last()
        .unwrap()
        .offset;
    let cut = last as usize + 40;
    let src = Growing::new(bytes.clone(), cut, true);
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    assert_eq!((r.liveness(), r.recovery()), (Liveness::Live, None));
    src.alive.store(false, Ordering::Relaxed);
    let grown = r.refresh().unwrap();
    assert!(grown.is_empty());
    assert_eq!(r.liveness(), Liveness::Recovered);
    let why = r.recovery().unwrap();
    assert!(why.contains("did not finish") && why.contains("cut short"), "{why}");
    assert_eq!(
        Reader::new(Growing::new(bytes, cut, false)).unwrap().recovery(),
        Some(why)
    );
}

#[test]
fn damage_in_a_live_file_is_reported_and_a_finished_one_stays_unclean() {
    let (mut bytes, _) = small_capture();
    let full = Reader::from_bytes(bytes.clone()).unwrap();
    // Flip a byte inside the second chunk: it is skipped, and said, live or not.
    let at = full.chunks()[1].offset as usize + 20;
    bytes[at] ^= 0x40;
    let src = Growing::new(bytes.clone(), header_end(&bytes), true);
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    src.grow_to(full.chunks()[3].offset as usize);
    r.refresh().unwrap();
    assert_eq!(r.liveness(), Liveness::Live);
    let why = r.recovery().expect("damage is said while live");
    assert!(
        why.contains("damaged bytes") && !why.contains("did not finish"),
        "{why}"
    );
    src.grow_to(bytes.len());
    r.refresh().unwrap();
    // The index lists the chunk the scan skipped: the file is not clean.
    assert_eq!(r.liveness(), Liveness::Recovered);
    assert!(!r.is_clean());
    assert_eq!(r.chunks().len(), full.chunks().len() - 1);
}

/// A capture whose first table frame takes more decoded bytes than [`iocap_format::table_budget`]
/// allows a file of its length then, and which events after it make long enough to take it.
fn tables_over_the_early_budget() -> (Vec<u8>, usize, usize) {
    let mut w = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default()).unwrap();
    // 5,000 strings of 8,000 bytes (40 MB decoded) that zstd keeps in a few tens of KB.
    for i in 0..5_000 {
        let mut s = format!("{i:06}").into_bytes();
        s.resize(8_000, b'a');
        w.intern(&s);
    }
    w.flush().unwrap();
    let tables_end = w.bytes_written() as usize;
    // Events that do not compress: the file grows past what the budget needs.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..200_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w.push(&Event::syscall(
            i * 1_000,
            x >> 40,
            (x % 5_000) as u32,
            1,
            0,
            (x & 0xffff) as i64,
        ))
        .unwrap();
    }
    w.flush().unwrap();
    let events_end = w.bytes_written() as usize;
    (w.finish(300_000_000).unwrap(), tables_end, events_end)
}

#[test]
fn tables_over_the_budget_so_far_wait_for_the_file_to_grow_while_it_is_written() {
    let (bytes, tables_end, events_end) = tables_over_the_early_budget();
    let early = iocap_format::table_budget(tables_end as u64);
    assert!(early < 40_000_000, "the frame must be over the early budget ({early})");
    // Not live: the frame is over the budget of the file as it is, and left out (said).
    let dead = Reader::new(Growing::new(bytes.clone(), tables_end, false)).unwrap();
    assert_eq!(dead.tables().string_count(), 0);
    assert!(
        dead.recovery().unwrap().contains("decoded table data"),
        "{:?}",
        dead.recovery()
    );
    // Live: it waits, and is read once the file is long enough for it.
    let src = Growing::new(bytes.clone(), tables_end, true);
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    assert_eq!(r.tables().string_count(), 0);
    assert_eq!(r.recovery(), None);
    src.grow_to(events_end);
    let grown = r.refresh().unwrap();
    assert_eq!(grown.tables, 1);
    assert_eq!(r.tables().string_count(), 5_000);
    assert_eq!(r.recovery(), None);
    src.grow_to(bytes.len());
    r.refresh().unwrap();
    assert!(r.is_clean());
    same(&r, &Reader::from_bytes(bytes).unwrap(), "finished");
}

#[test]
fn a_recorder_s_lock_makes_a_file_on_disk_live_until_it_is_closed() {
    let dir = std::env::temp_dir().join(format!("iocap-growing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("live.cap");
    let file = std::fs::File::create(&path).unwrap();
    iocap_format::lock_for_writing(&file).unwrap();
    let opts = WriterOptions {
        chunk_events: 100,
        level: 1,
    };
    let mut w = Writer::new(std::io::BufWriter::new(file), &Meta::default(), opts).unwrap();
    w.flush().unwrap();
    let mut r = Reader::open(&path).unwrap();
    assert_eq!(
        (r.liveness(), r.recovery(), r.is_clean()),
        (Liveness::Live, None, false)
    );
    for i in 0..250 {
        w.push(&Event::syscall(i * 10, 5, 1, 1, 0, 0)).unwrap();
    }
    w.flush().unwrap();
    assert_eq!(r.refresh().unwrap().chunks, 3);
    assert_eq!(r.event_count(), 250);
    let mut out = w.finish(10_000).unwrap();
    out.flush().unwrap();
    // Finished but still open: the lock says live, the trailer says finished.
    r.refresh().unwrap();
    assert_eq!(r.liveness(), Liveness::Finished);
    assert!(r.is_clean());
    drop(out);
    // A recorder that dies mid-file leaves a file no one holds.
    let path = dir.join("killed.cap");
    let file = std::fs::File::create(&path).unwrap();
    iocap_format::lock_for_writing(&file).unwrap();
    let mut w = Writer::new(file, &Meta::default(), WriterOptions::default()).unwrap();
    w.push(&Event::syscall(1, 5, 1, 1, 0, 0)).unwrap();
    w.flush().unwrap();
    let mut r = Reader::open(&path).unwrap();
    assert_eq!(r.liveness(), Liveness::Live);
    drop(w);
    r.refresh().unwrap();
    assert_eq!(r.liveness(), Liveness::Recovered);
    assert_eq!(r.event_count(), 1);
    assert!(r.recovery().unwrap().contains("did not finish"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_no_writer_holds_reads_as_live_once_assumed_until_its_end_arrives() {
    let (bytes, x) = small_capture();
    let cut = bytes.len() / 2 + 3;
    let src = Growing::new(bytes.clone(), cut, false);
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    assert_eq!(
        r.liveness(),
        Liveness::Recovered,
        "no lock: a cut file reads as damaged"
    );
    let first = r.chunks().len();
    assert!(r.assume_writer().unwrap().is_empty(), "nothing more to read yet");
    assert_eq!((r.liveness(), r.recovery()), (Liveness::Live, None));
    src.grow_to(bytes.len());
    let grown = r.refresh().unwrap();
    assert_eq!(first + grown.chunks, x.chunks.len());
    assert_eq!(r.liveness(), Liveness::Finished);
    assert!(r.is_clean());
    // A finished file stays as it is.
    let mut done = Reader::from_bytes(bytes).unwrap();
    assert!(done.assume_writer().unwrap().is_empty());
    assert_eq!(done.liveness(), Liveness::Finished);
}

/// A damaged file read in steps (a few bits flipped anywhere, the file grown at random cuts)
/// reads at each step as a reader opened there does, live or not: the scan taken up again skips
/// damage as the scan from the start does. Once whole, a reader opened on it goes by its index,
/// which lists the damaged chunks too (they fail when read); the reader that scanned it has
/// skipped them and stays recovered, saying so.
#[test]
fn a_damaged_file_read_in_steps_reads_as_one_opened_at_each() {
    let (bytes, _) = small_capture();
    let hdr = header_end(&bytes);
    let mut state = 0x5eed_u64;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for round in 0..2_000 {
        let mut b = bytes.clone();
        // After the header: a damaged header does not open at all.
        for _ in 0..1 + next() % 3 {
            let at = hdr + (next() as usize % (b.len() - hdr));
            b[at] ^= 1 << (next() % 8);
        }
        let alive = round % 2 == 0;
        let mut cuts: Vec<usize> = (0..3).map(|_| hdr + next() as usize % (b.len() - hdr)).collect();
        cuts.sort();
        let src = Growing::new(b.clone(), hdr, alive);
        let mut r = Reader::new(Arc::clone(&src)).unwrap();
        for cut in cuts {
            src.grow_to(cut);
            r.refresh().unwrap();
            let fresh = Reader::new(Growing::new(b.clone(), cut, alive)).unwrap();
            let what = format!("round {round}, alive {alive}, cut {cut}: {:?}", r.recovery());
            assert_eq!(r.chunks(), fresh.chunks(), "{what}");
            assert_eq!(r.drop_stats(), fresh.drop_stats(), "{what}");
            assert_eq!(r.tables().procs(), fresh.tables().procs(), "{what}");
            assert_eq!(files(r.tables()), files(fresh.tables()), "{what}");
            assert_eq!(r.tables().string_count(), fresh.tables().string_count(), "{what}");
            assert_eq!(
                (r.liveness(), r.is_clean()),
                (fresh.liveness(), fresh.is_clean()),
                "{what}"
            );
            assert_eq!(r.recovery().is_some(), fresh.recovery().is_some(), "{what}");
        }
        src.grow_to(b.len());
        r.refresh().unwrap();
        let by_index = Reader::new(Growing::new(b.clone(), b.len(), false)).unwrap();
        let what = format!("round {round}, alive {alive}, whole: {:?}", r.recovery());
        if r.is_clean() || !by_index.is_clean() {
            assert_eq!(r.chunks(), by_index.chunks(), "{what}");
            assert_eq!(r.is_clean(), by_index.is_clean(), "{what}");
        } else {
            assert!(r.recovery().is_some_and(|w| w.contains("damaged")), "{what}");
            assert!(r.chunks().iter().all(|c| by_index.chunks().contains(c)), "{what}");
        }
    }
}

/// File rollups (frame kind 16) are listed as they arrive in a file being written, as a reader
/// opened on the finished file lists them: a question on the file reads them, and only them.
#[test]
fn a_growing_file_lists_its_file_rollups_as_they_come() {
    use iocap_format::{ChunkDecoder, Col, ColSet};
    // Chunks 0 and 2 on one file (file rollups), 1 and 3 on a file per event.
    let bytes = few_and_many_files(4);
    let src = Growing::new(bytes.clone(), header_end(&bytes), true);
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    let finished = Reader::from_bytes(bytes.clone()).unwrap();
    let file = ColSet::NONE.with(Col::File);
    let mut dec = ChunkDecoder::new();
    for step in 1..=4 {
        src.grow_to(bytes.len() * step / 4);
        r.refresh().unwrap();
        // A chunk's rollup comes after it: one not there yet is none.
        for i in 0..r.chunks().len() {
            let whole = finished.rollup(i, &mut dec);
            let here = r.rollup(i, &mut dec);
            assert!(here.is_none() || here == whole, "step {step}, chunk {i}");
            let listed = here.is_some() && i % 2 == 0;
            assert_eq!(r.rollup_may_hold(i, file), listed, "step {step}, chunk {i}");
        }
    }
    assert_eq!(r.chunks().len(), 4);
    assert_eq!(r.liveness(), Liveness::Finished);
    // Grown whole, every chunk's rollup is read, of its kind.
    for i in 0..4 {
        let rollup = r.rollup(i, &mut dec).expect("every chunk's rollup");
        assert_eq!(rollup.with_file, i % 2 == 0, "chunk {i}");
        assert_eq!(Some(rollup), finished.rollup(i, &mut dec), "chunk {i}");
    }
}

/// The header of a capture being written, then a hole of zeros that grows (a sparse file): what
/// each look reads, counted.
struct Hole {
    head: Vec<u8>,
    hole: std::sync::atomic::AtomicU64,
    read: std::sync::atomic::AtomicU64,
}

impl Source for Hole {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        if offset + buf.len() as u64 > self.len()? {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.head.get(offset as usize + i).copied().unwrap_or(0);
        }
        Ok(())
    }

    fn len(&self) -> std::io::Result<u64> {
        Ok(self.head.len() as u64 + self.hole.load(Ordering::Relaxed))
    }

    fn writer_alive(&self) -> bool {
        true
    }
}

/// A follower looking again and again at a file whose end is a growing hole (no frame in it)
/// reads each byte of the hole about once, not all of it again at every look.
#[test]
fn a_growing_hole_is_searched_once_not_at_every_look() {
    let (bytes, _) = small_capture();
    let src = Arc::new(Hole {
        head: bytes[..header_end(&bytes)].to_vec(),
        hole: std::sync::atomic::AtomicU64::new(0),
        read: std::sync::atomic::AtomicU64::new(0),
    });
    let mut r = Reader::new(Arc::clone(&src)).unwrap();
    const STEP: u64 = 1 << 20;
    const LOOKS: u64 = 32;
    for _ in 0..LOOKS {
        src.hole.fetch_add(STEP, Ordering::Relaxed);
        r.refresh().unwrap();
        assert_eq!(r.liveness(), Liveness::Live);
    }
    let read = src.read.load(Ordering::Relaxed);
    // Searched again at every look, it would be LOOKS * (LOOKS + 1) / 2 MiB (528 MiB).
    assert!(
        read < 2 * LOOKS * STEP,
        "{read} bytes read for a hole of {} bytes",
        LOOKS * STEP
    );
}
