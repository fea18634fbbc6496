//! The writer thread: decodes the poller's batches, keeps the tables ([`Tracker`]), applies
//! the record-time filter, writes and rotates the capture, and measures how fast it drains
//! (which the poller turns into the kernel's backlog limit).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use iocap_format::{DropStats, ProcDropStats, ProcDrops, Writer};

use crate::abi::{self, Rec};
use crate::config::{Output, Progress, Summary};
use crate::error::Error;
use crate::procfs;
use crate::state::Tracker;

/// How often the open chunk is closed and everything written handed to the kernel: what a
/// killed recorder can lose on top of the backlog and the queue, and how late a reader
/// following the file sees an event. Every 250 ms once the chunk holds `FLUSH_EVENTS` (a
/// chunk's summary and headers are then a small share of it), and at least every 500 ms
/// however few, also when nothing more arrives: the loop wakes up for it. A viewer polling a
/// live file every 250 ms so shows an event within 750 ms and some drawing.
const FLUSH_EVERY: Duration = Duration::from_millis(250);
const FLUSH_EVENTS: usize = 1024;
const FLUSH_AT_LEAST: Duration = Duration::from_millis(500);

pub(crate) enum Msg {
    Batch(Vec<u8>),
    /// A reading of the drop counters, and what grew of them since the last one sent,
    /// process by process (pid, count).
    Drops(DropStats, Vec<(u32, u64)>),
    /// When, and how many block requests issued were never seen complete since recording
    /// started, disk by disk (`dev_t`).
    Unseen(u64, BTreeMap<u32, u64>),
    Finish(u64),
}

#[derive(Default)]
pub(crate) struct Shared {
    /// Set once the writer has read /proc and takes batches: until then the pipeline's
    /// drain rate means nothing.
    pub(crate) ready: AtomicBool,
    pub(crate) events: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) drops: AtomicU64,
    pub(crate) failed: AtomicBool,
    /// How old an event may be when the writer takes it, in ns (0: any age): the poller's
    /// `Backlog::max_age`, which it also holds the records it takes from the rings to.
    pub(crate) max_age: AtomicU64,
}

impl Shared {
    pub(crate) fn progress(&self, started: Instant) -> Progress {
        Progress {
            ready: self.ready.load(Ordering::Relaxed),
            events: self.events.load(Ordering::Relaxed),
            drops: self.drops.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            elapsed: started.elapsed(),
        }
    }
}

fn is_enospc(e: &iocap_format::Error) -> bool {
    matches!(e, iocap_format::Error::Io(io) if matches!(io.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)))
}

pub(crate) fn write_loop<W: Write + Send + 'static>(
    mut t: Tracker<W>,
    rx: Receiver<Msg>,
    sh: &Shared,
    mut out: Output<W>,
) -> Result<Summary, Error> {
    let fail = |e: iocap_format::Error, sh: &Shared| -> Error {
        sh.failed.store(true, Ordering::Relaxed);
        if is_enospc(&e) {
            Error::DiskFull
        } else {
            Error::Write(e)
        }
    };
    let mut last_flush = Instant::now();
    let mut drops = DropStats::default();
    // Each file counts its own drops: the counters as they were when it started.
    let mut base = Vec::new();
    let (mut unseen, mut unseen_base) = (BTreeMap::new(), BTreeMap::new());
    // Events written unfinished: in flight at the end.
    let mut unfinished = 0u64;
    let mut stop_ts = None;
    let mut done_bytes = 0;
    let mut files = 1;
    let mut rotate_err = None;
    // Events thrown away here for their age (below), counted with the drops; by pid, those
    // whose record names its process, since the last reading written.
    let mut thrown = 0u64;
    let mut thrown_by_pid: HashMap<u32, u64> = HashMap::new();
    sh.ready.store(true, Ordering::Relaxed);
    loop {
        // Woken by a message, or by the flush that is due when none comes (a quiet machine).
        let msg = match rx.recv_timeout(FLUSH_AT_LEAST.saturating_sub(last_flush.elapsed())) {
            Ok(msg) => Some(msg),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match msg {
            None => {}
            Some(Msg::Batch(b)) => {
                // The poller holds the records it takes from the rings to `max_age`, but
                // then they wait in its merge, its batch and this queue: bytes, not time, and a
                // writer starved of CPU (four floods against its nice 10), stuck a few hundred
                // ms in each batch and each flush, took batches 0.5-3 s old, so the file
                // ended over 2 s before a kill in one round of ten. Judged again here, as the
                // poller judges them (table records are kept, events counted with the drops),
                // old events cost a look at their end rather than their decoding, and the
                // writer is back at the present within a batch.
                let too_old = match sh.max_age.load(Ordering::Relaxed) {
                    0 => 0,
                    age => procfs::boot_ns().saturating_sub(age),
                };
                let mut rest = &b[..];
                while rest.len() >= 4 {
                    let n = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                    let Some(rec) = rest.get(4..4 + n) else { break };
                    if abi::event_end(rec).is_some_and(|end| end < too_old) {
                        thrown += 1;
                        if let Some(pid) = abi::event_pid(rec) {
                            *thrown_by_pid.entry(pid).or_insert(0) += 1;
                        }
                    } else if let Some(r) = abi::decode(rec) {
                        let end = matches!(r, Rec::EndSys(_) | Rec::EndBlk(_));
                        let before = t.events;
                        if let Err(e) = t.apply(r) {
                            return Err(fail(e, sh));
                        }
                        if end {
                            unfinished += t.events - before;
                        }
                    }
                    rest = &rest[4 + n..];
                    // Checked per record: a late poll can make a batch of many chunks.
                    if out
                        .rotate
                        .as_ref()
                        .is_some_and(|r| t.writer().bytes_written() >= r.max_bytes)
                    {
                        match next_file(&mut t, &mut out, &mut files) {
                            Ok(old) => done_bytes += old,
                            Err(Error::Rotate(e)) => {
                                sh.failed.store(true, Ordering::Relaxed);
                                rotate_err = Some(Error::Rotate(e));
                                break;
                            }
                            Err(e) => {
                                sh.failed.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                        base.clone_from(&drops.per_cpu);
                        unseen_base.clone_from(&unseen);
                    }
                }
                sh.events.store(t.events, Ordering::Relaxed);
                if rotate_err.is_some() {
                    // Keep what is written: the current file is finished below.
                    break;
                }
            }
            Some(Msg::Drops(d, mut grew)) => {
                drops = d;
                // On the first CPU's counter, with the poller's own discards.
                match drops.per_cpu.first_mut() {
                    Some(first) => *first += thrown,
                    None => drops.per_cpu.push(thrown),
                }
                crate::drop_places::add(&mut grew, thrown_by_pid.drain());
                // Named by the process entry each pid has now; one that exited and was
                // forgotten is 0, which a reader finds by its pid.
                let by_proc = ProcDropStats {
                    ts: drops.ts,
                    procs: grew
                        .into_iter()
                        .map(|(pid, count)| ProcDrops {
                            pid,
                            proc: t.known_proc(pid),
                            count,
                        })
                        .collect(),
                };
                let w = t.writer();
                if let Err(e) = w
                    .record_drops(&since(&drops, &base))
                    .and_then(|()| w.record_drops_by_process(&by_proc))
                {
                    return Err(fail(e, sh));
                }
            }
            Some(Msg::Unseen(ts, n)) => {
                unseen = n;
                let in_file = unseen
                    .iter()
                    .map(|(&dev, &n)| (dev, n.saturating_sub(unseen_base.get(&dev).copied().unwrap_or(0))))
                    .filter(|&(_, n)| n > 0)
                    .collect();
                if let Err(e) = t.writer().record_unseen(ts, &in_file) {
                    return Err(fail(e, sh));
                }
            }
            Some(Msg::Finish(ts)) => {
                stop_ts = Some(ts);
                break;
            }
        }
        let since = last_flush.elapsed();
        if since >= FLUSH_AT_LEAST || since >= FLUSH_EVERY && t.writer().buffered() >= FLUSH_EVENTS {
            if let Err(e) = t.writer().flush() {
                return Err(fail(e, sh));
            }
            t.tidy();
            last_flush = Instant::now();
        }
        sh.bytes
            .store(done_bytes + t.writer().bytes_written(), Ordering::Relaxed);
    }
    let (events, filtered) = (t.events, t.filtered);
    let unseen_by_disk: Vec<(String, u64)> = unseen.iter().map(|(&dev, &n)| (t.device_shown(dev), n)).collect();
    let w = t.into_writer();
    let stop_ts = stop_ts.unwrap_or_else(procfs::boot_ns);
    let bytes = done_bytes + w.bytes_written();
    match w.finish(stop_ts) {
        Ok(_) => match rotate_err {
            Some(e) => Err(e),
            None => Ok(Summary {
                events,
                filtered,
                drops: drops.total(),
                bytes,
                files,
                unseen: unseen.values().fold(0, |a, &n| a.saturating_add(n)),
                unseen_by_disk,
                unfinished,
            }),
        },
        Err(e) => {
            sh.failed.store(true, Ordering::Relaxed);
            Err(if is_enospc(&e) {
                Error::DiskFull
            } else {
                Error::Write(e)
            })
        }
    }
}

/// Start file number `files` of the rotation and finish the current one; returns the bytes
/// the finished file took (up to its index).
fn next_file<W: Write + Send + 'static>(
    t: &mut Tracker<W>,
    out: &mut Output<W>,
    files: &mut u32,
) -> Result<u64, Error> {
    let Some(rot) = out.rotate.as_mut() else { return Ok(0) };
    let w = (rot.open)(*files).map_err(|e| Error::Rotate(e.to_string()))?;
    let mut meta = out.meta.clone();
    meta.start_ts = procfs::boot_ns();
    meta.devices = t.devices();
    meta.next_file = crate::rotation::next_name(&rot.base, *files);
    // The header on disk at once: the new file opens even if the recorder is killed now.
    let next = Writer::with_encoder(w, &meta, out.options.clone())
        .and_then(|mut w| w.flush().map(|()| w))
        .map_err(|e| Error::Rotate(e.to_string()))?;
    let old = t.rotate(next);
    let bytes = old.bytes_written();
    *files += 1;
    match old.finish(meta.start_ts) {
        Ok(_) => Ok(bytes),
        Err(e) if is_enospc(&e) => Err(Error::DiskFull),
        Err(e) => Err(Error::Write(e)),
    }
}

/// The drop counters `d` minus those at `base` (when the current file started).
fn since(d: &DropStats, base: &[u64]) -> DropStats {
    DropStats {
        ts: d.ts,
        per_cpu: d
            .per_cpu
            .iter()
            .enumerate()
            .map(|(i, &n)| n.saturating_sub(base.get(i).copied().unwrap_or(0)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;
    use std::sync::{Arc, Mutex};

    use iocap_format::{Event, Meta, Reader, WriterOptions};

    use crate::abi::{bytes_of, REC_END_BLK, REC_END_SYS, REC_FD, REC_SYS};
    use crate::skel::types;

    /// Memory the test reads while the writer thread writes to it.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A batch of one record: this process's getpid at 1 µs, 50 ns long.
    fn getpid_batch() -> Vec<u8> {
        let pid = std::process::id();
        let rec = types::rec_sys {
            kind: REC_SYS,
            nr: 39,
            tid: pid,
            pid,
            ts: 1_000,
            lat: 50,
            ret: i64::from(pid),
            ..types::rec_sys::default()
        };
        let mut batch = (std::mem::size_of::<types::rec_sys>() as u32).to_ne_bytes().to_vec();
        batch.extend(bytes_of(&rec));
        batch
    }

    /// One event, then nothing: it is in the file within [`FLUSH_AT_LEAST`] (and some slack
    /// for a busy machine), without another message to wake the writer up.
    #[test]
    fn a_lone_event_is_flushed_without_anything_after_it() {
        let sink = Sink::default();
        let opts = WriterOptions::default();
        let w = Writer::with_encoder(sink.clone(), &Meta::default(), opts.clone()).unwrap();
        let t = Tracker::new(w, "x86_64", &[], None);
        let (tx, rx) = sync_channel(2);
        let out = Output {
            meta: Meta::default(),
            options: opts,
            filter: None,
            rotate: None,
        };
        let writer = std::thread::spawn(move || write_loop(t, rx, &Shared::default(), out));
        let batch = getpid_batch();
        // Let a first flush pass, so the event arrives early in a flush period.
        std::thread::sleep(FLUSH_AT_LEAST + Duration::from_millis(50));
        let sent = Instant::now();
        tx.send(Msg::Batch(batch)).unwrap();
        let events = || {
            let bytes = sink.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
            Reader::from_bytes(bytes).map_or(0, |r| r.event_count())
        };
        while events() == 0 && sent.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = sent.elapsed();
        assert_eq!(events(), 1, "the event reached the file");
        assert!(
            took <= FLUSH_AT_LEAST + Duration::from_millis(300),
            "flushed after {took:?}"
        );
        drop(tx);
        writer.join().unwrap().unwrap();
    }

    /// `recs` handed to a writer thread as one batch, then the recording finished at 10 µs:
    /// the summary, and the file it wrote.
    fn written(recs: &[Vec<u8>]) -> (Summary, Reader<Vec<u8>>) {
        let sink = Sink::default();
        let opts = WriterOptions::default();
        let w = Writer::with_encoder(sink.clone(), &Meta::default(), opts.clone()).unwrap();
        let t = Tracker::new(w, "x86_64", &[], None);
        let out = Output {
            meta: Meta::default(),
            options: opts,
            filter: None,
            rotate: None,
        };
        let (tx, rx) = sync_channel(4);
        let writer = std::thread::spawn(move || write_loop(t, rx, &Shared::default(), out));
        let mut batch = Vec::new();
        for rec in recs {
            batch.extend((rec.len() as u32).to_ne_bytes());
            batch.extend(rec);
        }
        tx.send(Msg::Batch(batch)).unwrap();
        tx.send(Msg::Finish(10_000)).unwrap();
        let summary = writer.join().unwrap().unwrap();
        let r = Reader::from_bytes(sink.0.lock().unwrap().clone()).unwrap();
        (summary, r)
    }

    /// The fd record of `pid`'s openat of the regular file `path`, which returned `fd`, at 500 ns.
    fn opened(pid: u32, fd: i32, path: &[u8]) -> types::rec_fd {
        let mut rec = types::rec_fd {
            kind: REC_FD,
            nr: 257,
            pid,
            fd,
            dirfd: -100,
            ts: 500,
            mode: 0o100_644,
            path_len: 0xffff,
            ..types::rec_fd::default()
        };
        for (d, c) in rec.path.iter_mut().zip(path) {
            *d = *c as i8;
        }
        rec
    }

    /// Records of what was in flight at the end are written as events marked unfinished,
    /// counted in the summary, and change no table: an unfinished `close` has not closed its
    /// fd (its return value, 0, is no result).
    #[test]
    fn unfinished_records_are_marked_and_change_no_fd() {
        let pid = std::process::id();
        let close = types::rec_sysio {
            sys: types::rec_sys {
                kind: REC_END_SYS,
                nr: 3,
                tid: pid,
                pid,
                arg0: 5,
                ts: 1_000,
                lat: 9_000,
                ret: 0,
            },
            ..types::rec_sysio::default()
        };
        let read = types::rec_sys {
            kind: REC_SYS,
            nr: 0,
            tid: pid + 1,
            pid,
            arg0: 5,
            ts: 2_000,
            lat: 100,
            ret: 10,
        };
        let req = types::rec_blk {
            kind: REC_END_BLK,
            op: 1,
            pid,
            ts: 3_000,
            lat: 7_000,
            bytes: 4096,
            ..types::rec_blk::default()
        };
        let (summary, r) = written(&[
            bytes_of(&opened(pid, 5, b"/data/x.db")).to_vec(),
            bytes_of(&close).to_vec(),
            bytes_of(&read).to_vec(),
            bytes_of(&req).to_vec(),
        ]);
        assert_eq!((summary.events, summary.unfinished), (3, 2));
        let evs: Vec<Event> = r.events().map(|e| e.unwrap()).collect();
        let marks: Vec<(u32, bool, i32, u64)> = evs.iter().map(|e| (e.nr, e.unfinished(), e.fd, e.end())).collect();
        assert_eq!(
            marks,
            [(3, true, 5, 10_000), (0, false, 5, 2_100), (0, true, -1, 10_000)]
        );
        assert!(
            evs[1].file != 0 && evs[1].file == evs[0].file,
            "the read still finds the file: {evs:?}"
        );
        assert_eq!(evs[2].class, iocap_format::Class::Block);
    }

    /// A child starts with its parent's fds: its read of an fd the parent opened names the
    /// parent's file, and a read of another process's fd number finds nothing.
    #[test]
    fn a_child_reads_the_files_it_inherited_and_no_one_else_s() {
        // Past any pid_max (2^22): no /proc entry answers for them.
        let (parent, child, other) = (4_200_000u32, 4_200_001u32, 4_200_002u32);
        let fork = types::rec_fork {
            kind: crate::abi::REC_FORK,
            pid: child,
            ppid: parent,
            ts: 600,
            ..types::rec_fork::default()
        };
        let read = |pid: u32, fd: i32, ts: u64| types::rec_sys {
            kind: REC_SYS,
            nr: 0,
            tid: pid,
            pid,
            arg0: fd,
            ts,
            lat: 100,
            ret: 10,
        };
        let (_, r) = written(&[
            bytes_of(&opened(parent, 5, b"/data/x.db")).to_vec(),
            bytes_of(&opened(other, 6, b"/data/other")).to_vec(),
            bytes_of(&fork).to_vec(),
            bytes_of(&read(child, 5, 1_000)).to_vec(),
            bytes_of(&read(child, 6, 2_000)).to_vec(),
        ]);
        let evs: Vec<Event> = r.events().map(|e| e.unwrap()).collect();
        let reads: Vec<(u32, i32, &str)> = (evs.iter())
            .filter(|e| e.nr == 0)
            .map(|e| {
                (
                    e.pid,
                    e.fd,
                    r.tables().file(e.file).map_or("", |f| r.tables().string(f.name)),
                )
            })
            .collect();
        assert_eq!(reads, [(child, 5, "/data/x.db"), (child, 6, "")]);
    }

    /// A rotation's files each count the requests never seen complete since they started,
    /// and the summary says the whole recording's.
    #[test]
    fn each_file_counts_its_own_unseen_requests() {
        let first = Sink::default();
        let opts = WriterOptions::default();
        let w = Writer::with_encoder(first.clone(), &Meta::default(), opts.clone()).unwrap();
        let t = Tracker::new(w, "x86_64", &[], None);
        let later: Arc<Mutex<Vec<Sink>>> = Arc::default();
        let opened = Arc::clone(&later);
        let out = Output {
            meta: Meta::default(),
            options: opts,
            filter: None,
            rotate: Some(crate::config::Rotate {
                // Every file ends after its first record.
                max_bytes: 1,
                base: "/nonexistent/r.cap".into(),
                open: Box::new(move |_| {
                    let s = Sink::default();
                    opened.lock().unwrap().push(s.clone());
                    Ok(s)
                }),
            }),
        };
        let (tx, rx) = sync_channel(8);
        let writer = std::thread::spawn(move || write_loop(t, rx, &Shared::default(), out));
        let batch = getpid_batch();
        // Two disks: 7:0 (unnamed here) and 254:0.
        let (a, b) = (iocap_format::mkdev(7, 0), iocap_format::mkdev(254, 0));
        tx.send(Msg::Unseen(900, BTreeMap::from([(a, 3)]))).unwrap();
        tx.send(Msg::Batch(batch)).unwrap();
        tx.send(Msg::Unseen(2_000, BTreeMap::from([(a, 5), (b, 4)]))).unwrap();
        tx.send(Msg::Finish(3_000)).unwrap();
        let summary = writer.join().unwrap().unwrap();
        assert_eq!((summary.files, summary.unseen), (2, 9));
        assert_eq!(summary.unseen_by_disk, [("7:0".to_owned(), 5), ("254:0".to_owned(), 4)]);
        let unseen = |s: &Sink| {
            let r = Reader::from_bytes(s.0.lock().unwrap().clone()).unwrap();
            (r.unseen(), r.unseen_by_disk().clone())
        };
        assert_eq!(unseen(&first), (3, BTreeMap::from([(a, 3)])));
        let later = later.lock().unwrap();
        assert_eq!(later.len(), 1);
        assert_eq!(unseen(&later[0]), (5 - 3 + 4, BTreeMap::from([(a, 5 - 3), (b, 4)])));
    }
}
