//! The per-CPU rings' records back in one order that puts every cause before its effects.
//!
//! Each CPU has its own ring (bpf/iocap.bpf.c: one shared ring serialized every CPU's records
//! on its lock). The writer keeps the process and fd tables from the records in the order it
//! gets them, so an fd record must come before a later call on that fd, which may have run on
//! another CPU. Every record carries a time its program read before reserving it
//! ([`abi::merge_key`](crate::abi::merge_key)): if record A was in its ring before the program
//! that made B started, A's key is smaller than B's. The merge hands records over in key order,
//! and only up to a bound below which no ring can still deliver a record:
//!
//! - a ring the poller drained to empty can still deliver records it had not been given yet,
//!   but none that an already-handed record depends on: a record submitted after the poller
//!   started the round (the time `t0` read before draining) has its effects, if any, keyed
//!   after `t0`. So such a ring bounds the merge at `t0`;
//! - a ring the poller stopped draining (its queue full) bounds it at the last key it gave:
//!   its later records have larger keys, because each ring's keys are made non-decreasing here
//!   (a program interrupted by another on its CPU between its clock read and its reserve
//!   writes its record after the interrupting one's).
//!
//! Records under the bound go out in key order; the rest wait for the next round.
//!
//! Where the kernel cannot preempt the programs, each CPU also has its lanes (lanes.rs) of
//! calls' records, each one more source here, alike. The argument needs every record keyed
//! after its causes were written; the one record that would not be is a call's event after the
//! fd records its own program wrote (keyed by the call's end, read first), so such a call keeps
//! its event on the ring, behind them, where ring order holds.

/// Records waiting, per ring, in the batch format the writer reads (`u32` length, then the
/// record), with their keys.
pub(crate) struct Merge {
    rings: Vec<Queue>,
}

#[derive(Default)]
struct Queue {
    /// Framed records; those before `start` have been handed over.
    bytes: Vec<u8>,
    /// Each waiting record's key and the end of its frame in `bytes`, from `next` on.
    recs: Vec<(u64, usize)>,
    next: usize,
    start: usize,
    /// The largest key this ring has given (its records' keys are raised to it).
    last: u64,
}

impl Queue {
    fn front(&self) -> Option<u64> {
        self.recs.get(self.next).map(|r| r.0)
    }

    /// Hand over this ring's waiting records with keys up to `bound` (a prefix: its keys do
    /// not decrease) into `out`, in one copy.
    fn take(&mut self, bound: u64, out: &mut Vec<u8>) {
        // Runs are short when several CPUs are busy (their keys interleave): a linear scan.
        let waiting = &self.recs[self.next..];
        let n = waiting.iter().position(|r| r.0 > bound).unwrap_or(waiting.len());
        if n == 0 {
            return;
        }
        let end = waiting[n - 1].1;
        out.extend_from_slice(&self.bytes[self.start..end]);
        self.start = end;
        self.next += n;
        if self.next == self.recs.len() {
            self.bytes.clear();
            self.recs.clear();
            (self.next, self.start) = (0, 0);
        } else if self.start > COMPACT_AFTER && self.start > self.bytes.len() / 2 {
            // Under a load that never lets the ring's queue empty (a record keyed after each
            // round's start always waits), what was handed over is dropped from the front
            // now and then, so the queue stays as long as what waits in it.
            self.bytes.drain(..self.start);
            self.recs.drain(..self.next);
            for r in &mut self.recs {
                r.1 -= self.start;
            }
            (self.next, self.start) = (0, 0);
        }
    }
}

/// Handed-over bytes at the front of a queue past which it is compacted (when they are also
/// more than half of it).
const COMPACT_AFTER: usize = 64 << 10;

impl Merge {
    pub(crate) fn new(rings: usize) -> Merge {
        Merge {
            rings: (0..rings).map(|_| Queue::default()).collect(),
        }
    }

    /// Queue ring `ring`'s next record; its key is raised to the ring's last. `fill` writes the
    /// record's bytes after its length (the caller moves its times on the way). Returns the
    /// bytes that ring has waiting, for the caller to stop draining it past a cap.
    pub(crate) fn push(&mut self, ring: usize, key: u64, len: usize, fill: impl FnOnce(&mut Vec<u8>)) -> usize {
        let q = &mut self.rings[ring];
        q.last = q.last.max(key);
        q.bytes.extend_from_slice(&(len as u32).to_ne_bytes());
        fill(&mut q.bytes);
        q.recs.push((q.last, q.bytes.len()));
        q.bytes.len() - q.start
    }

    /// A record of ring `ring` thrown away unqueued (too old to keep): its key still raises
    /// the ring's last, as a queued one's would, which only holds its later records back as far.
    pub(crate) fn skip(&mut self, ring: usize, key: u64) {
        let q = &mut self.rings[ring];
        q.last = q.last.max(key);
    }

    /// The largest key ring `ring` has given: the bound for a ring not drained to empty.
    pub(crate) fn last_key(&self, ring: usize) -> u64 {
        self.rings[ring].last
    }

    /// Hand over, in key order, every waiting record keyed at most `bound`, appending them to
    /// `out` (`u64::MAX`: all of them, when nothing more will come).
    pub(crate) fn take(&mut self, bound: u64, out: &mut Vec<u8>) {
        // Only the rings with records waiting are looked at (most of a large host's are idle).
        let waiting: Vec<usize> = (0..self.rings.len())
            .filter(|&i| self.rings[i].front().is_some())
            .collect();
        loop {
            // The ring with the smallest waiting key, and the next smallest of the others: the
            // first ring's records up to that one go out in one copy.
            let (mut first, mut second) = (None, u64::MAX);
            for &i in &waiting {
                let Some(k) = self.rings[i].front() else { continue };
                match first {
                    Some((_, f)) if k >= f => second = second.min(k),
                    Some((_, f)) => {
                        second = second.min(f);
                        first = Some((i, k));
                    }
                    None => first = Some((i, k)),
                }
            }
            match first {
                Some((i, k)) if k <= bound => self.rings[i].take(bound.min(second), out),
                _ => return,
            }
        }
    }

    /// Whether no record waits.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.rings.iter().all(|q| q.front().is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Push a record of `len` bytes, all `tag`, with `key`.
    fn push(m: &mut Merge, ring: usize, key: u64, tag: u8) -> usize {
        m.push(ring, key, 3, |b| b.extend_from_slice(&[tag; 3]))
    }

    /// The tags of the records in a batch, in order.
    fn tags(out: &[u8]) -> Vec<u8> {
        let mut tags = Vec::new();
        let mut at = 0;
        while at < out.len() {
            let len = u32::from_ne_bytes(out[at..at + 4].try_into().unwrap()) as usize;
            assert_eq!(len, 3);
            tags.push(out[at + 4]);
            assert!(out[at + 4..at + 4 + len].iter().all(|&b| b == out[at + 4]));
            at += 4 + len;
        }
        tags
    }

    #[test]
    fn records_go_out_in_key_order_up_to_the_bound() {
        let mut m = Merge::new(3);
        push(&mut m, 0, 10, b'a');
        push(&mut m, 0, 30, b'c');
        push(&mut m, 0, 50, b'e');
        push(&mut m, 1, 20, b'b');
        push(&mut m, 1, 40, b'd');
        push(&mut m, 2, 60, b'f');
        let mut out = Vec::new();
        m.take(45, &mut out);
        assert_eq!(tags(&out), b"abcd");
        // What is over the bound waits, and goes out with the later records in order.
        push(&mut m, 1, 55, b'g');
        m.take(58, &mut out);
        assert_eq!(tags(&out), b"abcdeg");
        m.take(u64::MAX, &mut out);
        assert_eq!(tags(&out), b"abcdegf");
        assert!(m.is_empty());
    }

    #[test]
    fn a_rings_keys_never_go_back() {
        // A record reserved after another on its CPU that read its clock earlier (interrupted
        // between its clock read and its reserve) takes the earlier record's key: its ring's
        // order is kept, and a record of another ring does not pass the first.
        let mut m = Merge::new(2);
        push(&mut m, 0, 100, b'x');
        push(&mut m, 0, 90, b'y');
        push(&mut m, 1, 95, b'z');
        let mut out = Vec::new();
        m.take(u64::MAX, &mut out);
        assert_eq!(tags(&out), b"zxy");
        assert_eq!(m.last_key(0), 100);
        // A record of no known time (key 0) also stays in its place.
        push(&mut m, 0, 0, b'p');
        push(&mut m, 1, 99, b'q');
        let mut out = Vec::new();
        m.take(u64::MAX, &mut out);
        assert_eq!(tags(&out), b"qp");
    }

    #[test]
    fn a_queue_that_never_empties_stays_short() {
        // Every round leaves the newest record waiting: the queue never empties.
        let mut m = Merge::new(1);
        let mut out = Vec::new();
        for key in 0..200_000u64 {
            push(&mut m, 0, key, b'a');
            m.take(key.saturating_sub(1), &mut out);
        }
        assert_eq!(tags(&out).len(), 199_999, "all but the last went out, in order");
        let q = &m.rings[0];
        assert!(q.bytes.len() <= 2 * COMPACT_AFTER + 7, "{} bytes queued", q.bytes.len());
        assert!(
            q.recs.len() <= 2 * COMPACT_AFTER / 7 + 1,
            "{} records queued",
            q.recs.len()
        );
        m.take(u64::MAX, &mut out);
        assert_eq!(tags(&out).len(), 200_000);
    }

    #[test]
    fn a_thrown_away_record_still_orders_its_ring() {
        let mut m = Merge::new(1);
        push(&mut m, 0, 1, b'a');
        m.skip(0, 5);
        assert_eq!(m.last_key(0), 5, "a bound for the ring's later records");
        push(&mut m, 0, 2, b'b');
        let mut out = Vec::new();
        m.take(4, &mut out);
        assert_eq!(tags(&out), b"a", "b comes after what was skipped");
        m.take(u64::MAX, &mut out);
        assert_eq!(tags(&out), b"ab");
        assert!(m.is_empty());
    }

    /// The ids of records pushed by [`push_id`], in order.
    fn ids(out: &[u8]) -> Vec<u32> {
        out.chunks_exact(8)
            .map(|f| {
                assert_eq!(u32::from_ne_bytes(f[..4].try_into().unwrap()), 4);
                u32::from_ne_bytes(f[4..].try_into().unwrap())
            })
            .collect()
    }

    fn push_id(m: &mut Merge, ring: usize, key: u64, id: u32) {
        m.push(ring, key, 4, |b| b.extend_from_slice(&id.to_ne_bytes()));
    }

    /// Causality under random interleavings: records made by "programs" on several CPUs,
    /// each reading its clock before reserving, some interrupted between the two by another
    /// on their CPU, polled at random moments with a random cap per ring: every record
    /// submitted before another record's program started comes out before it, and every
    /// record comes out once.
    #[test]
    fn a_cause_always_comes_out_before_its_effects() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..300 {
            let cpus = 1 + rand(4) as usize;
            // Per CPU, the records in reserve order (key, id), and how many the poller took.
            let mut rings: Vec<Vec<(u64, u32)>> = vec![Vec::new(); cpus];
            let mut consumed = vec![0usize; cpus];
            // Per record (by id): when it was submitted, and when its program started.
            let (mut submitted, mut started) = (Vec::new(), Vec::new());
            // Per CPU, a program that has read its clock (its key and start) and not reserved.
            let mut pending: Vec<Option<u64>> = vec![None; cpus];
            let mut m = Merge::new(cpus);
            let mut out = Vec::new();
            // A poll under way: its t0, the next ring to drain, the bound so far.
            let mut polling: Option<(u64, usize, u64)> = None;
            for now in 1..300u64 {
                let cpu = rand(cpus as u64) as usize;
                match rand(4) {
                    // A program reads its clock: it goes on later, or at once (nested in a
                    // pending one, if any).
                    0 | 1 => {
                        if pending[cpu].is_none() && rand(2) == 0 {
                            pending[cpu] = Some(now);
                        } else {
                            rings[cpu].push((now, submitted.len() as u32));
                            submitted.push(now);
                            started.push(now);
                        }
                    }
                    2 => {
                        if let Some(key) = pending[cpu].take() {
                            rings[cpu].push((key, submitted.len() as u32));
                            submitted.push(now);
                            started.push(key);
                        }
                    }
                    // The poller: t0 read first, then one ring drained (up to a cap) per
                    // step, programs going on meanwhile, then the merge.
                    _ => match polling {
                        None => polling = Some((now, 0, u64::MAX)),
                        Some((t0, i, bound)) => {
                            let cap = 1 + rand(3) as usize;
                            let mut taken = 0;
                            while consumed[i] < rings[i].len() && taken < cap {
                                let (key, id) = rings[i][consumed[i]];
                                push_id(&mut m, i, key, id);
                                consumed[i] += 1;
                                taken += 1;
                            }
                            let drained = consumed[i] == rings[i].len();
                            let bound = bound.min(if drained { t0 } else { m.last_key(i) });
                            if i + 1 < cpus {
                                polling = Some((t0, i + 1, bound));
                            } else {
                                m.take(bound, &mut out);
                                polling = None;
                            }
                        }
                    },
                }
            }
            for (i, ring) in rings.iter().enumerate() {
                for &(key, id) in &ring[consumed[i]..] {
                    push_id(&mut m, i, key, id);
                }
            }
            m.take(u64::MAX, &mut out);
            let got = ids(&out);
            let mut pos = vec![usize::MAX; submitted.len()];
            for (p, &id) in got.iter().enumerate() {
                assert_eq!(pos[id as usize], usize::MAX, "record {id} came out twice");
                pos[id as usize] = p;
            }
            assert!(pos.iter().all(|&p| p != usize::MAX), "every record comes out");
            for a in 0..submitted.len() {
                for b in 0..submitted.len() {
                    if submitted[a] < started[b] {
                        assert!(
                            pos[a] < pos[b],
                            "record {a} (submitted at {}) after {b} (started at {})",
                            submitted[a],
                            started[b]
                        );
                    }
                }
            }
        }
    }
}
