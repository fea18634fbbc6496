//! The recording loop on the caller's thread: drain the per-CPU rings, merge their records
//! back into one causal order (merge.rs) in batches, hand them to the writer thread over a
//! short queue, read the drop counters, and keep the kernel's ring backlog limit at a
//! fraction of a second of what the writer drains.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
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
use crate::drop_places::{self, DropPlaces};
use crate::error::Error;
use crate::lanes::Lanes;
use crate::merge::Merge;
use crate::procfs;
use crate::recorder::{nice_this_thread, set_backlog_max, stop_recording, Recorder};
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

        let batch = RefCell::new(Vec::<u8>::with_capacity(BATCH));
        // The merge's sources: each CPU's ring, then each CPU's lane of each lane set
        // (lanes.rs), if any.
        let lane_sources: Vec<(&Lanes, usize)> = self
            .lanes
            .iter()
            .flat_map(|lanes| (0..lanes.cpus()).map(move |cpu| (lanes, cpu)))
            .collect();
        let sources = self.rings.len() + lane_sources.len();
        let intake = Rc::new(Intake::new(sources));
        // One libbpf ring buffer manager per ring, so that each is drained, or stopped, alone.
        let mut rbs = Vec::with_capacity(self.rings.len());
        for (i, ring) in self.rings.iter().enumerate() {
            let intake = Rc::clone(&intake);
            let mut rbb = RingBufferBuilder::new();
            // libbpf's consume() goes on for as long as records keep coming: under a flood it
            // would never return, growing the queue without bound and never checking for
            // stop. A negative return ends it (this record is kept: libbpf has already moved
            // past it).
            rbb.add(ring, move |data: &[u8]| if intake.take(i, data) { 0 } else { -1 })
                .map_err(|e| Error::Bpf(format!("ring buffer: {e}")))?;
            rbs.push(rbb.build().map_err(|e| Error::Bpf(format!("ring buffer: {e}")))?);
        }
        // Drain every ring and lane once, then hand over what the merge can: records keyed up
        // to the round's start for sources drained to empty, up to their last key for the
        // others (see merge.rs). Says whether every source was found empty.
        let round = || -> bool {
            let t0 = procfs::monotonic_ns();
            intake.key_ceiling.set(t0.saturating_add(KEY_SLACK_NS));
            let mut bound = u64::MAX;
            for i in 0..sources {
                intake.stopped[i].set(false);
                intake.thrown_now[i].set(0);
                if let Some(rb) = rbs.get(i) {
                    let _ = rb.consume_raw();
                } else if let Some(&(lanes, cpu)) = lane_sources.get(i - rbs.len()) {
                    lanes.drain(cpu, |data| intake.take(i, data));
                }
                let m = intake.merge.borrow();
                bound = bound.min(if intake.stopped[i].get() { m.last_key(i) } else { t0 });
            }
            intake.merge.borrow_mut().take(bound, &mut batch.borrow_mut());
            !intake.stopped.iter().any(Cell::get)
        };
        let (merge, consumed, boot_offset) = (&intake.merge, &intake.consumed, &intake.boot_offset);
        let (discard_before, discarded) = (&intake.discard_before, &intake.discarded);

        let mut last_drops = Instant::now();
        let mut sent_drops = None;
        let mut places = DropPlaces::default();
        let mut sent_unseen = BTreeMap::new();
        let mut last_progress = Instant::now();
        let mut last_pump = Instant::now();
        // The backlog is the rings' and lanes' together; each CPU's ring, and its lane, is
        // held to the CPU's share of the limit (a lane holds as many bytes as its ring).
        let rings = self.rings.len() as u64;
        let all_bytes = self.ring_bytes as usize * sources;
        let mut backlog = Backlog::new(all_bytes as u64);
        let mut writer_gone;
        let mut limit_set = 0;
        let mut told_ready = false;
        // Consume until the rings are empty, handing over each full batch (waiting for room),
        // for at most `budget` bytes: a flood never empties them, and stop, drops and the
        // backlog limit must be looked at between rounds. False once the writer is gone.
        // Also says whether the rings were found empty: the pipeline keeps up.
        let pump = |budget: usize| -> (bool, bool) {
            let mut moved = 0;
            let start = consumed.get();
            loop {
                let emptied = round();
                if batch.borrow().len() < BATCH {
                    if emptied {
                        return (true, true);
                    }
                    // Records taken and thrown away (old ones, when the pipeline is behind)
                    // count too, four times over: the loop must come back to look at stop.
                    if consumed.get() - start >= (budget as u64).saturating_mul(4) {
                        return (true, false);
                    }
                    continue;
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
            let since = last_pump.elapsed();
            last_pump = Instant::now();
            let (alive, emptied) = pump(QUEUE * BATCH);
            writer_gone = !alive;
            let now = Instant::now();
            backlog.drained(consumed.get() - before, emptied, now);
            // Not while the writer reads /proc at the start: nothing drains then, and the
            // initial limit is what that time may use.
            let ready = shared.ready.load(Ordering::Relaxed);
            if ready {
                let max_age = backlog.max_age(now);
                discard_before.set(match max_age {
                    Some(age) => procfs::boot_ns().saturating_sub(age.as_nanos() as u64),
                    None => 0,
                });
                // The writer holds what it takes to the same age (see `write_loop`).
                shared
                    .max_age
                    .store(max_age.map_or(0, |age| age.as_nanos() as u64), Ordering::Relaxed);
                let limit = cpu_limit(backlog.limit(), rings, self.ring_bytes);
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
                let by_pid = self.drops_by_pid();
                let d = self.drops(discarded.get());
                let total = d.total();
                shared.drops.store(total, Ordering::Relaxed);
                if sent_drops != Some(total) && (total > 0 || sent_drops.is_some()) {
                    // Taken only when sent: a growth read with no new total (its drops were
                    // in the last one's) goes with the next.
                    let (mut grew, forget) = places.growth(&by_pid);
                    self.forget_drop_pids(&forget);
                    drop_places::add(&mut grew, intake.discarded_by_pid.take());
                    if tx.send(Msg::Drops(d, grew)).is_err() {
                        writer_gone = true;
                    }
                    sent_drops = Some(total);
                }
                let unseen = self.unseen();
                if unseen != sent_unseen {
                    if tx.send(Msg::Unseen(procfs::boot_ns(), unseen.clone())).is_err() {
                        writer_gone = true;
                    }
                    sent_unseen = unseen;
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
            // A pump cut short by its budget left records in the rings: on at once, while the
            // pipeline keeps up. Sleeping then capped the drain at a budget a millisecond, and
            // a writer that lost its CPU for a moment (to its own encoder thread) never caught
            // up: a single loop of 2.5 M preads/s dropped 4-13 %. Once it is behind, the poller
            // sleeps: the kernel sheds what the backlog limit refuses for nothing, where a
            // poller that took every record only to throw the old ones away spent its little
            // CPU on that.
            if backlog.is_behind() {
                std::thread::sleep(MIN_NAP);
            } else if emptied {
                std::thread::sleep(nap(consumed.get() - before, since));
            }
        }
        // The end. From here on the programs track nothing new, and what ends is recorded as
        // it stood now, unfinished; so is what is still in flight after the last drain. A
        // call blocked for seconds when the user pressed Ctrl-C is then in the capture.
        if !writer_gone {
            stop_recording(&mut self.skel);
        }
        // Final drain: what the kernel holds now (not what a flood adds while we drain).
        if !writer_gone && pump(all_bytes).0 {
            let (mut ended, failed) = self.in_flight();
            for e in failed {
                eprintln!("iocap: {e}");
            }
            // The requests in flight (end_rqs writes them to a ring), and what ended while they
            // were found (each is handed over once: see in_flight).
            let _ = pump(all_bytes);
            // Nothing more comes: what the merge holds goes too.
            merge.borrow_mut().take(u64::MAX, &mut batch.borrow_mut());
            let b = std::mem::take(&mut *batch.borrow_mut());
            if !b.is_empty() {
                let _ = tx.send(Msg::Batch(b));
            }
            let mut rest = &mut ended[..];
            while rest.len() >= 4 {
                let n = u32::from_ne_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                let Some(rec) = rest.get_mut(4..4 + n) else { break };
                abi::to_boottime(rec, boot_offset.get());
                rest = &mut rest[4 + n..];
            }
            if !ended.is_empty() {
                let _ = tx.send(Msg::Batch(ended));
            }
            let by_pid = self.drops_by_pid();
            let d = self.drops(discarded.get());
            let (mut grew, _) = places.growth(&by_pid);
            drop_places::add(&mut grew, intake.discarded_by_pid.take());
            let _ = tx.send(Msg::Drops(d, grew));
            let unseen = self.unseen();
            if unseen != sent_unseen {
                let _ = tx.send(Msg::Unseen(procfs::boot_ns(), unseen));
            }
            let _ = tx.send(Msg::Finish(procfs::boot_ns()));
        }
        drop(tx);
        let result = handle.join().map_err(|_| Error::Thread("writer thread panicked"))?;
        progress(&shared.progress(self.started));
        result
    }
}

/// Where the rings' and lanes' records go as they are drained: the merge, and what the
/// poller's rounds keep of each source.
struct Intake {
    merge: RefCell<Merge>,
    /// Per source: it was left with records in it this round (its queue reached QUEUED).
    stopped: Vec<Cell<bool>>,
    /// Bytes each source has had discarded (below) in the current round.
    thrown_now: Vec<Cell<usize>>,
    /// The kernel stamps events with CLOCK_MONOTONIC (cheaper); checked every poll.
    boot_offset: Cell<u64>,
    /// Record bytes taken so far, for the drain rate.
    consumed: Cell<u64>,
    /// Events that ended before this (ns of BOOTTIME) are discarded, not written: set when
    /// the pipeline has fallen behind, so that what the rings held when it did (up to the
    /// generous limit of a pipeline keeping up) does not keep the file seconds late while a
    /// starved recorder works through it. Counted with the kernel's drops.
    discard_before: Cell<u64>,
    discarded: Cell<u64>,
    /// Those of `discarded` whose process the record names, by pid, since the last reading
    /// of the drops sent.
    discarded_by_pid: RefCell<HashMap<u32, u64>>,
    /// A key this far past the round's start is not a clock's (a damaged record): it is
    /// held to it, so that it cannot hold its source's later records back for long.
    key_ceiling: Cell<u64>,
}

impl Intake {
    fn new(sources: usize) -> Intake {
        Intake {
            merge: RefCell::new(Merge::new(sources)),
            stopped: (0..sources).map(|_| Cell::new(false)).collect(),
            thrown_now: (0..sources).map(|_| Cell::new(0)).collect(),
            boot_offset: Cell::new(procfs::boot_offset_ns()),
            consumed: Cell::new(0),
            discard_before: Cell::new(0),
            discarded: Cell::new(0),
            discarded_by_pid: RefCell::new(HashMap::new()),
            key_ceiling: Cell::new(u64::MAX),
        }
    }

    /// Take source `i`'s next record: queued in the merge, or thrown away when too old.
    /// False when that source's round ends here (this record taken): its queue is full.
    fn take(&self, i: usize, data: &[u8]) -> bool {
        self.consumed.set(self.consumed.get() + data.len() as u64);
        let key = abi::merge_key(data).min(self.key_ceiling.get());
        let mut m = self.merge.borrow_mut();
        let off = self.boot_offset.get();
        // Judged before it is queued: a starved poller may have millions to throw away.
        if abi::event_end(data).is_some_and(|end| end.wrapping_add(off) < self.discard_before.get()) {
            m.skip(i, key);
            self.discarded.set(self.discarded.get() + 1);
            if let Some(pid) = abi::event_pid(data) {
                *self.discarded_by_pid.borrow_mut().entry(pid).or_insert(0) += 1;
            }
            // Discarding ends the source's round too, after as many bytes as are queued:
            // while a flood refills it as fast as a starved poller throws records away, the
            // drain would never end, and the fresh records of the other sources would wait
            // (seconds, in a debug build).
            let now = self.thrown_now[i].get() + data.len();
            self.thrown_now[i].set(now);
            if now >= QUEUED {
                self.stopped[i].set(true);
                return false;
            }
            return true;
        }
        let waiting = m.push(i, key, data.len(), |b| {
            let start = b.len();
            b.extend_from_slice(data);
            abi::to_boottime(&mut b[start..], off);
        });
        if waiting >= QUEUED {
            self.stopped[i].set(true);
            return false;
        }
        true
    }
}

/// A CPU's ring's share of the backlog limit `total` over `rings` rings of `ring_bytes`: an
/// equal share, but never under what a short burst on one CPU needs (about 7,000 records, or
/// half its ring if that is less).
fn cpu_limit(total: u64, rings: u64, ring_bytes: u32) -> u64 {
    (total / rings.max(1)).max(MIN_CPU_LIMIT.min(u64::from(ring_bytes) / 2))
}

/// The least backlog limit of one CPU's ring.
const MIN_CPU_LIMIT: u64 = 256 << 10;
/// Bytes of one ring's records that may wait in the merge before the poller stops draining
/// that ring for the round.
const QUEUED: usize = 256 << 10;
/// How far past the round's start a record's merge key may be (see `key_ceiling`).
const KEY_SLACK_NS: u64 = 1_000_000_000;
/// Bytes of ring records handed to the writer at once.
const BATCH: usize = 128 << 10;
/// Batches that may wait for the writer: with `BATCH`, a quarter megabyte.
const QUEUE: usize = 2;
/// How often the drop counters are read (and written to the file when they grew).
const DROPS_EVERY: Duration = Duration::from_millis(250);

/// After a pump that emptied the rings, the poller sleeps until about [`NAP_BYTES`] have
/// come again at the rate of the last pump's `bytes` over `over` (since the pump before),
/// between [`MIN_NAP`] and [`MAX_NAP`]. Each wake costs the poller, and the writer it hands
/// a batch to: fio at ~450,000 events/s woke both every millisecond for ~30 KB. The rings
/// hold far more than a nap's worth (a 10 ms burst at one CPU's fastest ~150 MB/s is 1.5 MB,
/// under the backlog limit's floor while keeping up).
fn nap(bytes: u64, over: Duration) -> Duration {
    if bytes == 0 {
        return MAX_NAP;
    }
    let t = over.as_secs_f64() * NAP_BYTES as f64 / bytes as f64;
    Duration::from_secs_f64(t.clamp(MIN_NAP.as_secs_f64(), MAX_NAP.as_secs_f64()))
}

/// See [`nap`]: a batch's worth.
const NAP_BYTES: u64 = BATCH as u64;
const MIN_NAP: Duration = Duration::from_millis(1);
const MAX_NAP: Duration = Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naps_until_a_batch_has_come_within_bounds() {
        let ms = Duration::from_millis;
        // 32 KiB in 1 ms: a batch in 4 ms.
        assert_eq!(nap(32 << 10, ms(1)), ms(4));
        assert_eq!(nap(0, ms(1)), MAX_NAP, "quiet: the longest");
        assert_eq!(nap(1, ms(1)), MAX_NAP);
        assert_eq!(nap(1 << 20, ms(1)), MIN_NAP, "fast: the shortest");
    }

    #[test]
    fn each_ring_is_held_to_its_share_of_the_backlog_but_not_below_a_burst() {
        assert_eq!(cpu_limit(8 << 20, 2, 32 << 20), 4 << 20);
        assert_eq!(cpu_limit(8 << 20, 64, 1 << 20), MIN_CPU_LIMIT);
        // A ring smaller than twice the least limit: half of it.
        assert_eq!(cpu_limit(1 << 10, 4, 256 << 10), 128 << 10);
        assert_eq!(cpu_limit(1 << 20, 0, 32 << 20), 1 << 20);
    }
}
