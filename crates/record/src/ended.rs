//! The calls still in flight when the recording stops, found from userspace: where the kernel
//! refuses BPF iterators (a security policy; see `kernel.rs`'s `ITER_TASK`) or lacks the helper
//! the `end_calls` iterator looks through the CPUs' call slots with (before 5.19).
//!
//! A call in flight is in one of two places (bpf/iocap.bpf.c): the call slot of the CPU its
//! thread runs on, or that thread's task storage. User space reads both: the per-CPU slots as
//! any per-CPU array, and a thread's task storage by looking it up with a pidfd of the thread
//! as the key (`PIDFD_THREAD`, Linux 6.9; before, a pidfd names a process, and only each
//! process's main thread is found). The caller detaches the syscall programs first, so that no
//! program claims a call while it is read: what is left in flight then stays so.
//!
//! A call that made block requests has their sums in `call_slots` or `callio`, found as
//! `call_io_find` in the BPF finds them; its disk time runs to the stop, as `call_io_take`'s.

use std::os::fd::{FromRawFd, OwnedFd};

use libbpf_rs::{MapCore, MapFlags};

use crate::abi::{self, REC_END_SYS};
use crate::skel::{types, IocapSkel};

/// `PIDFD_THREAD` (`O_EXCL`): a pidfd of one thread, not of its process (Linux 6.9).
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// A pidfd of thread `tid` (`thread`: by `PIDFD_THREAD`), or `None` if it is gone or the
/// kernel cannot make one.
fn pidfd(tid: u32, thread: bool) -> Option<OwnedFd> {
    let flags = if thread { PIDFD_THREAD } else { 0 };
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid as libc::pid_t, flags) };
    // SAFETY: a non-negative return is a new fd that nothing else owns.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// Whether this kernel makes pidfds of single threads (`PIDFD_THREAD`, Linux 6.9): asked of
/// the calling process's own main thread.
pub(crate) fn thread_pidfds() -> bool {
    pidfd(std::process::id(), true).is_some()
}

/// What the calls' hand-over needs of the recording's settings.
pub(crate) struct Settings {
    /// `stop_at`: CLOCK_MONOTONIC ns.
    pub end: u64,
    /// Calls faster than this (ns) are not recorded.
    pub min_latency: u64,
    /// The programs keep calls in per-CPU slots too (`cpu_slot`).
    pub cpu_slot: bool,
    /// Calls' sums go to `call_slots` at all (`call_slots_on`).
    pub call_slots_on: bool,
}

/// Every traced call still in flight, as REC_END_SYS records each after its `u32` size (what
/// the `end_calls` iterator writes). Run once, after the syscall programs are detached.
pub(crate) fn calls(skel: &IocapSkel<'static>, s: &Settings) -> Vec<u8> {
    let slots = if s.cpu_slot { cpu_slots(skel) } else { Vec::new() };
    let thread = thread_pidfds();
    let mut out = Vec::new();
    for (pid, tid) in threads() {
        if !thread && pid != tid {
            continue;
        }
        let call = match slots.iter().find(|c| c.ts != 0 && c.tid == tid) {
            Some(c) => *c,
            None => match task_call(skel, tid, thread) {
                Some(c) => c,
                None => continue,
            },
        };
        if let Some(rec) = end_call(skel, s, pid, tid, &call) {
            out.extend_from_slice(&(std::mem::size_of::<types::rec_sysio>() as u32).to_ne_bytes());
            out.extend_from_slice(abi::bytes_of(&rec));
        }
    }
    out
}

/// The call `tid` is in, as it stood at the stop, as the iterator's `fill_end_call` makes it:
/// `None` if it began at or after the stop, or is faster than the recording keeps.
fn end_call(
    skel: &IocapSkel<'static>,
    s: &Settings,
    pid: u32,
    tid: u32,
    c: &types::inflight,
) -> Option<types::rec_sysio> {
    if c.ts == 0 || c.ts >= s.end || s.end - c.ts < s.min_latency {
        return None;
    }
    let mut e = types::rec_sysio::default();
    if c.io != 0 {
        if let Some(io) = call_io(skel, s, tid, c.ts) {
            e.reqs = io.reqs;
            e.bytes = io.bytes;
            e.disk = io.disk
                + if io.inflight != 0 {
                    s.end.saturating_sub(io.busy_since)
                } else {
                    0
                };
        }
    }
    e.sys.kind = REC_END_SYS;
    e.sys.nr = c.nr;
    e.sys.tid = tid;
    e.sys.pid = pid;
    // The fd a call takes is its first argument's low 32 bits, as the BPF keeps it.
    e.sys.arg0 = c.arg0 as i32;
    e.sys.ts = c.ts;
    e.sys.lat = s.end - c.ts;
    e.offset = if positional(c.nr) { c.arg3 } else { 0 };
    Some(e)
}

/// The calls that take a file offset (`is_pos` in the BPF): their record carries it.
fn positional(nr: u16) -> bool {
    matches!(
        iocap_format::syscalls::name("x86_64", u32::from(nr)),
        Some("pread64" | "pwrite64" | "preadv" | "pwritev" | "preadv2" | "pwritev2")
    )
}

/// Every CPU's call slot (`cpu_call`).
fn cpu_slots(skel: &IocapSkel<'static>) -> Vec<types::inflight> {
    match skel.maps.cpu_call.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
        Ok(Some(per_cpu)) => per_cpu.iter().filter_map(|b| abi::read(b)).collect(),
        _ => Vec::new(),
    }
}

/// The call in thread `tid`'s task storage, if it is in one.
fn task_call(skel: &IocapSkel<'static>, tid: u32, thread: bool) -> Option<types::inflight> {
    use std::os::fd::AsRawFd;

    let fd = pidfd(tid, thread)?;
    let v = skel
        .maps
        .tstore
        .lookup(&fd.as_raw_fd().to_ne_bytes(), MapFlags::ANY)
        .ok()??;
    let t: types::tctx = abi::read(&v)?;
    (t.call.ts != 0).then_some(t.call)
}

/// The sums of the call `tid` entered at `ts`: in its slot of `call_slots` (picked by the same
/// hash as `call_slot_of` in the BPF), else in `callio`.
fn call_io(skel: &IocapSkel<'static>, s: &Settings, tid: u32, ts: u64) -> Option<types::call_io> {
    if s.call_slots_on {
        let idx = call_slot_index(tid, ts);
        if let Ok(Some(v)) = skel.maps.call_slots.lookup(&idx.to_ne_bytes(), MapFlags::ANY) {
            if let Some(slot) = abi::read::<types::call_slot>(&v) {
                if slot.ts == ts && slot.tid == tid {
                    return Some(slot.io);
                }
            }
        }
    }
    let key = types::call_key {
        tid,
        ts,
        ..Default::default()
    };
    let v = skel.maps.callio.lookup(abi::bytes_of(&key), MapFlags::ANY).ok()??;
    abi::read(&v)
}

/// `call_slot_of`'s slot number (bpf/iocap.bpf.c: `CALL_SLOT_BITS` 12).
fn call_slot_index(tid: u32, ts: u64) -> u32 {
    const CALL_SLOT_BITS: u32 = 12;
    ((ts ^ (u64::from(tid) << 40)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - CALL_SLOT_BITS)) as u32
}

/// Every thread on the machine, as (process, thread), from /proc.
fn threads() -> Vec<(u32, u32)> {
    let numbers = |dir: &str| -> Vec<u32> {
        std::fs::read_dir(dir)
            .map(|d| d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok()).collect())
            .unwrap_or_default()
    };
    numbers("/proc")
        .into_iter()
        .flat_map(|pid| {
            numbers(&format!("/proc/{pid}/task"))
                .into_iter()
                .map(move |tid| (pid, tid))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positional_calls_are_found_by_name() {
        // x86_64: pread64 17, pwrite64 18, preadv2 327; read 0, write 1.
        assert!(positional(17) && positional(18) && positional(327));
        assert!(!positional(0) && !positional(1));
    }
}
