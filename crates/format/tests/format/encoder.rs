//! A writer with an encoder thread ([`Writer::with_encoder`]): its flush puts everything in
//! the output before it returns, an output that fails (a full disk) fails a later call and
//! leaves the same readable prefix as the writer without the thread, and a writer dropped
//! unfinished still writes what it was handed.

use std::io::Write;
use std::sync::{Arc, Mutex};

use iocap_format::{Error, Event, Meta, Reader, Writer, WriterOptions};

/// Memory shared with the test, taking at most `room` bytes: then ENOSPC, as a full disk
/// (with what fitted of the last write kept).
#[derive(Clone)]
struct Disk {
    bytes: Arc<Mutex<Vec<u8>>>,
    room: usize,
}

impl Disk {
    fn new(room: usize) -> Disk {
        Disk {
            bytes: Arc::default(),
            room,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        self.bytes.lock().unwrap().clone()
    }
}

impl Write for Disk {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut bytes = self.bytes.lock().unwrap();
        let n = b.len().min(self.room - bytes.len());
        if n == 0 && !b.is_empty() {
            return Err(std::io::Error::from_raw_os_error(libc_enospc()));
        }
        bytes.extend_from_slice(&b[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// ENOSPC on Linux.
fn libc_enospc() -> i32 {
    28
}

fn opts() -> WriterOptions {
    WriterOptions {
        chunk_events: 1000,
        level: 1,
    }
}

fn event(i: u64) -> Event {
    Event::syscall(
        1_000 + i * 100,
        50 + i % 977,
        7,
        7 + (i % 3) as u32,
        (i % 5) as u32,
        i as i64,
    )
}

#[test]
fn a_flush_returns_with_every_chunk_in_the_output() {
    let disk = Disk::new(usize::MAX);
    let mut w = Writer::with_encoder(disk.clone(), &Meta::default(), opts()).unwrap();
    for round in 1..=5u64 {
        for i in 0..2_500 {
            w.push(&event(round * 10_000 + i)).unwrap();
        }
        w.flush().unwrap();
        let r = Reader::from_bytes(disk.bytes()).unwrap();
        assert_eq!(r.event_count(), round * 2_500, "after flush {round}");
    }
    let out = w.finish(10_000_000).unwrap();
    let r = Reader::from_bytes(out.bytes()).unwrap();
    assert!(r.is_clean());
    assert_eq!(r.event_count(), 12_500);
}

/// Write 20 chunks' events to a disk of `room` bytes; the error the writer gave and the bytes
/// on the disk.
fn fill(room: usize, encoder: bool) -> (Option<Error>, Vec<u8>, bool) {
    let disk = Disk::new(room);
    let mut w = if encoder {
        Writer::with_encoder(disk.clone(), &Meta::default(), opts()).unwrap()
    } else {
        Writer::new(disk.clone(), &Meta::default(), opts()).unwrap()
    };
    let mut first = None;
    let mut closed_after = true;
    for i in 0..20_000 {
        if let Err(e) = w.push(&event(i)) {
            match first {
                None => first = Some(e),
                Some(_) => closed_after &= matches!(e, Error::Closed),
            }
        }
    }
    match w.finish(1 << 40) {
        Ok(_) => {}
        Err(e) if first.is_none() => first = Some(e),
        Err(e) => closed_after &= matches!(e, Error::Closed),
    }
    (first, disk.bytes(), closed_after)
}

#[test]
fn a_full_disk_fails_a_later_call_and_keeps_what_fitted() {
    let whole = fill(usize::MAX, false).1.len();
    for room in [whole / 3, whole / 2 + 17, whole - 1] {
        let (here_err, here, _) = fill(room, false);
        let (err, bytes, closed_after) = fill(room, true);
        let err = err.unwrap_or_else(|| panic!("room {room}: no error"));
        assert!(
            matches!(&err, Error::Io(e) if e.raw_os_error() == Some(libc_enospc())),
            "room {room}: {err:?}"
        );
        assert!(matches!(here_err, Some(Error::Io(_))));
        assert!(closed_after, "room {room}: closed after the error");
        assert!(
            bytes == here,
            "room {room}: the same bytes on disk as without the thread"
        );
        // What is on it reads back: the chunks before the one cut short.
        let r = Reader::from_bytes(bytes).unwrap();
        assert!(!r.is_clean());
        assert!(r.event_count() > 0 || room < whole / 10, "room {room}");
    }
}

#[test]
fn a_writer_dropped_unfinished_writes_what_it_was_handed() {
    let disk = Disk::new(usize::MAX);
    let mut w = Writer::with_encoder(disk.clone(), &Meta::default(), opts()).unwrap();
    for i in 0..7_500 {
        w.push(&event(i)).unwrap();
    }
    drop(w);
    let r = Reader::from_bytes(disk.bytes()).unwrap();
    assert!(!r.is_clean());
    // Seven whole chunks were handed over; the open one's 500 events were never written.
    assert_eq!(r.event_count(), 7_000);
}
