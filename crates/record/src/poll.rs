//! The recording loop on the caller's thread: drain the ring into batches, hand them to the
//! writer thread over a short queue, read the drop counters, and keep the kernel's ring
//! backlog limit at a fraction of a second of what the writer drains.

use std::cell::{Cell, RefCell};
use std::io::Write;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{sync_channel, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iocap_format::Writer;
use libbpf_rs::RingBufferBuilder;

use crate::abi;
use crate::backlog::Backlog;
use crate::config::{Output, Progress, Summary};
use crate::error::Error;
use crate::procfs;
use crate::recorder::{nice_this_thread, set_backlog_max, Recorder};
use crate::state::{LiveFilter, Tracker};
use crate::writer::{write_loop, Msg, Shared};

impl Recorder {
    /// Record into `writer` until `stop()` says so (checked every poll), then drain, finish
    /// the file and return what was written. `progress` is called about 4 times a second, and
    /// at once when the writer becomes ready ([`Progress::ready`]).
    pub fn run<W: Write + Send + 'static>(
        mut self,
        writer: Writer<W>,
        out: Output<W>,
        stop: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Summary, Error> {
        let shared = Arc::new(Shared::default());
        // A short queue: what waits in it is lost if the recorder is killed, and the kernel
        // sheds what the writer cannot take (see `backlog_max`), counted, rather than this
        // process buffering seconds of events in memory.
        let (tx, rx) = sync_channel::<Msg>(QUEUE);
        let arch = std::env::consts::ARCH;
        let filter = out.filter.clone().map(|filter| LiveFilter {
            filter,
            meta: out.meta.clone(),
        });
        let mut tracker = Tracker::new(writer, arch, &out.meta.devices, filter);
        tracker.writeback_of_opened_files_only(self.pid_filtered);
        tracker.early_processes(std::mem::take(&mut self.early));
        // This thread polls the ring: it and the writer run at the nice value asked for.
        if let Some(nice) = self.nice {
            nice_this_thread(nice)?;
        }
        let sh = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("iocap-writer".into())
            .spawn(move || {
                // A thread starts at its creator's nice value: the poller's, set above.
                tracker.snapshot();
                write_loop(tracker, rx, &sh, out)
            })
            .map_err(|_| Error::Thread("writer thread could not start"))?;

        let batch = Rc::new(RefCell::new(Vec::<u8>::with_capacity(BATCH)));
        let mut rbb = RingBufferBuilder::new();
        let b2 = Rc::clone(&batch);
        // The kernel stamps events with CLOCK_MONOTONIC (cheaper); checked every poll.
        let boot_offset = Rc::new(Cell::new(procfs::boot_offset_ns()));
        let off = Rc::clone(&boot_offset);
        // Ring bytes taken so far, for the drain rate.
        let consumed = Rc::new(Cell::new(0u64));
        let taken = Rc::clone(&consumed);
        // Events that ended before this (ns of BOOTTIME) are discarded, not written: set when
        // the pipeline has fallen behind, so that what the ring held when it did (up to the
        // generous limit of a pipeline keeping up) does not keep the file seconds late while a
        // starved recorder works through it. Counted with the kernel's drops.
        let discard_before = Rc::new(Cell::new(0u64));
        let discarded = Rc::new(Cell::new(0u64));
        let (cutoff, thrown) = (Rc::clone(&discard_before), Rc::clone(&discarded));
        rbb.add(&self.skel.maps.rb, move |data: &[u8]| {
            taken.set(taken.get() + data.len() as u64);
            let mut b = b2.borrow_mut();
            b.extend_from_slice(&(data.len() as u32).to_ne_bytes());
            let start = b.len();
            b.extend_from_slice(data);
            abi::to_boottime(&mut b[start..], off.get());
            if abi::event_end(&b[start..]).is_some_and(|end| end < cutoff.get()) {
                b.truncate(start - 4);
                thrown.set(thrown.get() + 1);
                return 0;
            }
            // libbpf's consume() goes on for as long as records keep coming: under a flood it
            // would never return, growing the batch without bound and never checking for
            // stop. A negative return ends it (this record is kept: libbpf has already moved
            // past it).
            if b.len() >= BATCH {
                -1
            } else {
                0
            }
        })
        .map_err(|e| Error::Bpf(format!("ring buffer: {e}")))?;
        let rb = rbb.build().map_err(|e| Error::Bpf(format!("ring buffer: {e}")))?;

        let mut last_drops = Instant::now();
        let mut sent_drops = None;
        let mut last_progress = Instant::now();
        let mut backlog = Backlog::new(u64::from(self.ring_bytes));
        let mut writer_gone;
        let mut limit_set = 0;
        let mut told_ready = false;
        // Consume until the ring is empty, handing over each full batch (waiting for room),
        // for at most `budget` bytes: a flood never empties the ring, and stop, drops and
        // the backlog limit must be looked at between rounds. False once the writer is gone.
        // Also says whether the ring was found empty: the pipeline keeps up.
        let pump = |budget: usize| -> (bool, bool) {
            let mut moved = 0;
            loop {
                let _ = rb.consume();
                if batch.borrow().len() < BATCH {
                    return (true, true);
                }
                let b = std::mem::replace(&mut *batch.borrow_mut(), Vec::with_capacity(BATCH));
                moved += b.len();
                if tx.send(Msg::Batch(b)).is_err() {
                    return (false, false);
                }
                if moved >= budget {
                    return (true, false);
                }
            }
        };
        loop {
            let stopping = stop() || shared.failed.load(Ordering::Relaxed);
            // Kept steady unless it really moved (a suspend): each sample differs by tens of
            // ns, and a block request's link must convert exactly as its syscall's time did.
            let offset = procfs::boot_offset_ns();
            if offset.abs_diff(boot_offset.get()) > 1_000_000 {
                boot_offset.set(offset);
            }
            let before = consumed.get();
            let (alive, emptied) = pump(QUEUE * BATCH);
            writer_gone = !alive;
            let now = Instant::now();
            backlog.drained(consumed.get() - before, emptied, now);
            // Not while the writer reads /proc at the start: nothing drains then, and the
            // initial limit is what that time may use.
            let ready = shared.ready.load(Ordering::Relaxed);
            if ready {
                discard_before.set(match backlog.max_age(now) {
                    Some(age) => procfs::boot_ns().saturating_sub(age.as_nanos() as u64),
                    None => 0,
                });
                let limit = backlog.limit();
                if limit != limit_set {
                    set_backlog_max(&mut self.skel, limit);
                    limit_set = limit;
                }
            }
            if !batch.borrow().is_empty() && !writer_gone {
                let b = std::mem::replace(&mut *batch.borrow_mut(), Vec::with_capacity(BATCH));
                match tx.try_send(Msg::Batch(b)) {
                    Ok(()) => {}
                    Err(TrySendError::Full(Msg::Batch(b))) => {
                        // The writer is behind: keep what we have and retry after the next poll.
                        *batch.borrow_mut() = b;
                    }
                    Err(_) => writer_gone = true,
                }
            }
            // Read often and sent whenever they grew, in line with the batches (waiting for
            // room if need be): drops happen exactly when the queue is full, and a reading
            // skipped then would place a whole overload's losses at its end.
            if last_drops.elapsed() >= DROPS_EVERY && !stopping && !writer_gone {
                let d = self.drops(discarded.get());
                let total = d.total();
                shared.drops.store(total, Ordering::Relaxed);
                if sent_drops != Some(total) && (total > 0 || sent_drops.is_some()) {
                    if tx.send(Msg::Drops(d)).is_err() {
                        writer_gone = true;
                    }
                    sent_drops = Some(total);
                }
                last_drops = Instant::now();
            }
            if last_progress.elapsed() >= Duration::from_millis(250) || ready && !told_ready {
                told_ready = ready;
                progress(&shared.progress(self.started));
                last_progress = Instant::now();
            }
            if stopping || writer_gone {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        // Final drain: what the kernel holds now (not what a flood adds while we drain).
        if !writer_gone && pump(self.ring_bytes as usize).0 {
            let b = std::mem::take(&mut *batch.borrow_mut());
            if !b.is_empty() {
                let _ = tx.send(Msg::Batch(b));
            }
            let _ = tx.send(Msg::Drops(self.drops(discarded.get())));
            let _ = tx.send(Msg::Finish(procfs::boot_ns()));
        }
        drop(tx);
        let result = handle.join().map_err(|_| Error::Thread("writer thread panicked"))?;
        progress(&shared.progress(self.started));
        result
    }
}

/// Bytes of ring records handed to the writer at once.
const BATCH: usize = 128 << 10;
/// Batches that may wait for the writer: with `BATCH`, a quarter megabyte.
const QUEUE: usize = 2;
/// How often the drop counters are read (and written to the file when they grew).
const DROPS_EVERY: Duration = Duration::from_millis(250);
