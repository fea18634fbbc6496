//! The hot path's per-CPU lanes (`lanes` and `lanes_io` in bpf/iocap.bpf.c): each CPU's
//! completed calls' records of one size (32-byte `rec_sys32`, or 96-byte `rec_sysio`), written
//! by `sys_exit` into a circle of slots in an array this process maps, with no ring buffer's
//! reserve and submit. Each CPU's cursor counts the records
//! written (`head`, moved by the program after a record's stores) and taken (`tail`, moved
//! here after they are copied out). The poller drains each lane as one more source of the
//! merge (merge.rs), beside the CPU's ring.

use std::os::fd::{AsFd, AsRawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;
use crate::skel::types;

/// The records of `lanes`: `struct rec_sys32`.
pub(crate) const SYS32: usize = std::mem::size_of::<types::rec_sys32>();
/// The records of `lanes_io`: `struct rec_sysio`.
pub(crate) const SYSIO: usize = std::mem::size_of::<types::rec_sysio>();
/// The largest record a lane holds.
const MAX_RECORD: usize = if SYS32 > SYSIO { SYS32 } else { SYSIO };
/// A CPU's cursor in `lane_cursors`: `head` then, a cache line on, `tail`.
const CURSOR: usize = 128;
const TAIL: usize = 64;
/// The tail is moved at least this often while a lane is drained, so that a lane a flood
/// keeps full gets room before the whole drain ends.
const TAIL_EVERY: u64 = 4096;

/// One map's values, mapped into this process.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// The `len` bytes of the BPF array map `map` (created `BPF_F_MMAPABLE`).
    fn of(map: &impl AsFd, len: usize, writable: bool) -> Result<Mapping, Error> {
        let prot = libc::PROT_READ | if writable { libc::PROT_WRITE } else { 0 };
        // SAFETY: a fresh shared mapping of the map's fd; the kernel checks the length
        // against the map's size, and the mapping is only used within `len`.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                map.as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(Error::Bpf(format!(
                "mapping the lanes ({len} bytes): {}",
                std::io::Error::last_os_error()
            )));
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| Error::Bpf("mapping the lanes: null".into()))?;
        Ok(Mapping { ptr, len })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `of`, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Every CPU's lane of one record size, mapped.
pub(crate) struct Lanes {
    cursors: Mapping,
    records: Mapping,
    /// Records each lane holds, a power of two.
    slots: u64,
    /// Bytes of each record.
    record: usize,
    cpus: usize,
}

impl Lanes {
    /// Map `cpus` lanes of `slots` records of `record` bytes each: `cursors` and `records`
    /// are the programs' cursor and record arrays (`lane_cursors` and `lanes`, ...), loaded at
    /// those sizes.
    pub(crate) fn map(
        cursors: &impl AsFd,
        records: &impl AsFd,
        cpus: usize,
        slots: u32,
        record: usize,
    ) -> Result<Lanes, Error> {
        if !slots.is_power_of_two() || record == 0 || record > MAX_RECORD {
            return Err(Error::Bpf(format!("lanes of {slots} records of {record} bytes")));
        }
        let page = page_size();
        let round = |n: usize| n.div_ceil(page) * page;
        Ok(Lanes {
            cursors: Mapping::of(cursors, round(cpus * CURSOR), true)?,
            records: Mapping::of(records, round(cpus * slots as usize * record), false)?,
            slots: u64::from(slots),
            record,
            cpus,
        })
    }

    pub(crate) fn cpus(&self) -> usize {
        self.cpus
    }

    /// CPU `cpu`'s cursor word at `at` (0 head, [`TAIL`] tail).
    fn cursor(&self, cpu: usize, at: usize) -> &AtomicU64 {
        assert!(cpu < self.cpus, "lane {cpu} of {}", self.cpus);
        // SAFETY: inside the mapping (cpus cursors of CURSOR bytes), 8-aligned (the mapping is
        // page-aligned), and only ever accessed as atomics here; the program's plain stores
        // and loads of the same words are single aligned moves.
        unsafe { &*self.cursors.ptr.as_ptr().add(cpu * CURSOR + at).cast::<AtomicU64>() }
    }

    /// Hand CPU `cpu`'s waiting records, oldest first, to `take` until it returns false (that
    /// record is taken too) or none is left. Returns how many were taken.
    pub(crate) fn drain(&self, cpu: usize, mut take: impl FnMut(&[u8]) -> bool) -> u64 {
        let (head, tail) = (self.cursor(cpu, 0), self.cursor(cpu, TAIL));
        // Acquire: every record before the head is whole.
        let end = head.load(Ordering::Acquire);
        let start = tail.load(Ordering::Relaxed);
        // A lane holds at most `slots`: a head further on would be a broken program's.
        let end = start.wrapping_add(end.wrapping_sub(start).min(self.slots));
        let mut at = start;
        let mut buf = [0u8; MAX_RECORD];
        let rec = &mut buf[..self.record];
        while at != end {
            let slot = cpu as u64 * self.slots + (at & (self.slots - 1));
            // SAFETY: slot < cpus × slots, so its `record` bytes are inside the mapping; the
            // program does not write a slot between the tail and the head.
            unsafe {
                let from = self.records.ptr.as_ptr().add(slot as usize * self.record);
                std::ptr::copy_nonoverlapping(from, rec.as_mut_ptr(), self.record);
            }
            at = at.wrapping_add(1);
            let more = take(rec);
            if at.wrapping_sub(start) % TAIL_EVERY == 0 {
                // Release: the copies are done before the program may write over them.
                tail.store(at, Ordering::Release);
            }
            if !more {
                break;
            }
        }
        tail.store(at, Ordering::Release);
        at.wrapping_sub(start)
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf reads a constant.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use std::fs::File;
    use std::os::fd::FromRawFd;
    use std::os::unix::fs::FileExt;

    use super::*;

    /// A file in memory of `len` bytes, mapped as a BPF array map would be.
    fn memfd(len: u64) -> File {
        // SAFETY: a plain syscall with a NUL-terminated name; the fd is owned by the File.
        let fd = unsafe { libc::memfd_create(c"lane".as_ptr(), 0) };
        assert!(fd >= 0, "memfd_create: {}", std::io::Error::last_os_error());
        // SAFETY: fd is a fresh descriptor nothing else owns.
        let f = unsafe { File::from_raw_fd(fd) };
        f.set_len(len).unwrap();
        f
    }

    /// CPU `cpu`'s record `n` as the program would write it, at slot `n % slots`, and the
    /// head moved past it.
    fn write(cursors: &File, records: &File, slots: u64, cpu: u64, n: u64) {
        write_sized(cursors, records, slots, SYS32, cpu, n);
    }

    /// [`write`], for records of `size` bytes: its tag first, its last byte `n`.
    fn write_sized(cursors: &File, records: &File, slots: u64, size: usize, cpu: u64, n: u64) {
        let slot = cpu * slots + n % slots;
        let mut rec = vec![0u8; size];
        rec[..8].copy_from_slice(&(cpu << 32 | n).to_ne_bytes());
        rec[size - 1] = n as u8;
        records.write_all_at(&rec, slot * size as u64).unwrap();
        cursors
            .write_all_at(&(n + 1).to_ne_bytes(), cpu * CURSOR as u64)
            .unwrap();
    }

    fn tail(cursors: &File, cpu: u64) -> u64 {
        let mut b = [0u8; 8];
        cursors
            .read_exact_at(&mut b, cpu * CURSOR as u64 + TAIL as u64)
            .unwrap();
        u64::from_ne_bytes(b)
    }

    fn tag(rec: &[u8]) -> u64 {
        u64::from_ne_bytes(rec[..8].try_into().unwrap())
    }

    /// Drain CPU `cpu`'s lane whole, its records' tags onto `got`.
    fn drain_all(lanes: &Lanes, cpu: usize, got: &mut Vec<u64>) -> u64 {
        lanes.drain(cpu, |r| {
            got.push(tag(r));
            true
        })
    }

    #[test]
    fn each_lane_hands_over_its_records_in_order_round_its_circle() {
        let (cpus, slots) = (2usize, 8u32);
        let cursors = memfd(4096);
        let records = memfd(4096);
        let lanes = Lanes::map(&cursors, &records, cpus, slots, SYS32).unwrap();
        let mut got = Vec::new();
        assert_eq!(drain_all(&lanes, 0, &mut got), 0, "nothing written yet");
        // CPU 1 writes 5, CPU 0 three: each lane gives its own, in order.
        for n in 0..5 {
            write(&cursors, &records, 8, 1, n);
        }
        for n in 0..3 {
            write(&cursors, &records, 8, 0, n);
        }
        assert_eq!(drain_all(&lanes, 1, &mut got), 5);
        assert_eq!(got, (0..5).map(|n| 1 << 32 | n).collect::<Vec<_>>());
        assert_eq!(tail(&cursors, 1), 5, "the tail follows what was taken");
        got.clear();
        assert_eq!(drain_all(&lanes, 0, &mut got), 3);
        assert_eq!(got, vec![0, 1, 2]);
        // Round the circle: records 5..12 of CPU 1 use slots 5, 6, 7, 0, 1, ...
        got.clear();
        for n in 5..12 {
            write(&cursors, &records, 8, 1, n);
        }
        assert_eq!(drain_all(&lanes, 1, &mut got), 7);
        assert_eq!(got, (5..12).map(|n| 1 << 32 | n).collect::<Vec<_>>());
        assert_eq!(tail(&cursors, 1), 12);
    }

    #[test]
    fn a_lane_of_wide_records_gives_each_whole() {
        let cursors = memfd(4096);
        let records = memfd(2 * 8 * SYSIO as u64);
        let lanes = Lanes::map(&cursors, &records, 2, 8, SYSIO).unwrap();
        for n in 0..11 {
            write_sized(&cursors, &records, 8, SYSIO, 1, n);
        }
        // Records 0..3 were written over (a lane of 8): taken as if the tail were at 3, each
        // slot is read at its own offset, round the circle.
        cursors
            .write_all_at(&3u64.to_ne_bytes(), CURSOR as u64 + TAIL as u64)
            .unwrap();
        let mut got = Vec::new();
        let n = lanes.drain(1, |r| {
            assert_eq!(r.len(), SYSIO);
            got.push((tag(r), r[SYSIO - 1]));
            true
        });
        assert_eq!(n, 8);
        assert_eq!(got, (3..11).map(|n| (1 << 32 | n, n as u8)).collect::<Vec<_>>());
        assert_eq!(lanes.drain(0, |_| true), 0, "CPU 0 wrote nothing");
    }

    #[test]
    fn a_drain_stopped_keeps_the_rest_for_the_next() {
        let cursors = memfd(4096);
        let records = memfd(4096);
        let lanes = Lanes::map(&cursors, &records, 1, 16, SYS32).unwrap();
        for n in 0..10 {
            write(&cursors, &records, 16, 0, n);
        }
        let mut got = Vec::new();
        // Stopped at the fourth: it is taken, the other six wait.
        assert_eq!(
            lanes.drain(0, |r| {
                got.push(tag(r));
                got.len() < 4
            }),
            4
        );
        assert_eq!(tail(&cursors, 0), 4);
        assert_eq!(drain_all(&lanes, 0, &mut got), 6);
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    }

    #[test]
    fn a_head_past_a_whole_lane_gives_one_lane_at_most() {
        // Only a broken program could write it: the drain still stays inside the lane.
        let cursors = memfd(4096);
        let records = memfd(4096);
        let lanes = Lanes::map(&cursors, &records, 1, 4, SYS32).unwrap();
        cursors.write_all_at(&1000u64.to_ne_bytes(), 0).unwrap();
        assert_eq!(lanes.drain(0, |_| true), 4);
        assert_eq!(tail(&cursors, 0), 4);
        assert!(
            Lanes::map(&cursors, &records, 1, 6, SYS32).is_err(),
            "slots must be a power of two"
        );
    }
}
