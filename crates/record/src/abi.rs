//! Decoding of the ring buffer's records (the structs of bpf/iocap.h) into [`Rec`].
//!
//! Pure functions over bytes, so they are tested without root. A record shorter than its
//! kind's struct, or of an unknown kind, decodes to `None`: the kernel side is ours, but a
//! mismatch between an old binary and a new header must not panic.

use crate::skel::types;

/// One record from the kernel.
#[derive(Clone, Debug)]
pub enum Rec {
    /// Both the 32-byte hot record (`rec_sys32`) and the wide one decode to the wide form.
    Sys(types::rec_sys),
    /// A syscall that created block requests: the syscall, and what its requests did.
    SysIo(types::rec_sysio),
    Blk(types::rec_blk),
    /// A completion of an io_uring request.
    Uring(types::rec_uring),
    Fork(types::rec_fork),
    Exec(Box<types::rec_exec>),
    Exit(types::rec_comm),
    Comm(types::rec_comm),
    /// A process moved to another cgroup.
    Cgroup(types::rec_cgroup),
    Fd(Box<types::rec_fd>),
    Dup(types::rec_dup),
    /// A syscall still in flight when the recording stopped, as it stood then: its latency
    /// runs to the stop, its return value is 0.
    EndSys(types::rec_sysio),
    /// A block request still in flight when the recording stopped, as [`Rec::EndSys`].
    EndBlk(types::rec_blk),
    /// A journal commit, with what its block requests did.
    Journal(types::rec_journal),
    /// The stacks of the slow call that follows it (`--stacks`).
    Stack(Box<types::rec_stack>),
}

pub const REC_SYS: u16 = 1;
pub const REC_BLK: u16 = 2;
pub const REC_FORK: u16 = 3;
pub const REC_EXEC: u16 = 4;
pub const REC_EXIT: u16 = 5;
pub const REC_COMM: u16 = 6;
pub const REC_FD: u16 = 7;
pub const REC_DUP: u16 = 8;
pub const REC_SYS32: u16 = 9;
/// A call's `wait` by why (rec_sysio's `why`, in the order of the BPF `enum why`): each into
/// its field, the rest of `wait` into `wait_other`, and the reason with the most.
pub fn set_wait_by(e: &mut iocap_format::Event, why: &[u64; 10]) {
    let [disk, throttle, writeback, journal, lock, reclaim, timer, call, net, signal] = *why;
    e.wait_disk = disk;
    e.wait_throttle = throttle;
    e.wait_writeback = writeback;
    e.wait_journal = journal;
    e.wait_lock = lock;
    e.wait_reclaim = reclaim;
    e.wait_timer = timer;
    e.wait_call = call;
    e.wait_net = net;
    e.wait_signal = signal;
    e.wait_other = e.wait.saturating_sub(why.iter().sum());
    e.reason = e.main_reason() as u8;
}

pub const REC_SYSIO: u16 = 10;
pub const REC_URING: u16 = 11;
pub const REC_END_SYS: u16 = 12;
pub const REC_END_BLK: u16 = 13;
pub const REC_JOURNAL: u16 = 14;
pub const REC_STACK: u16 = 15;
pub const REC_CGROUP: u16 = 16;

/// Bits of a record's `kind` that hold its kind; an event record's CPU is above them (see
/// bpf/iocap.h).
const KIND_BITS: u32 = 5;
const KIND_MASK: u16 = (1 << KIND_BITS) - 1;

/// The record's kind, from its first two bytes.
fn kind_of(rec: &[u8]) -> Option<u16> {
    Some(u16::from_ne_bytes([*rec.first()?, *rec.get(1)?]) & KIND_MASK)
}

/// The CPU an event record's operation ended on, from its raw `kind` field.
pub fn cpu(kind: u16) -> u32 {
    u32::from(kind >> KIND_BITS)
}

/// Types that may be read from any bytes: `#[repr(C)]` structs of integers and arrays only.
///
/// # Safety
/// Every bit pattern of `size_of::<Self>()` bytes must be a valid `Self`, and every byte of a
/// `Self` is initialized (no implicit padding: the generated types name theirs).
pub(crate) unsafe trait Pod: Copy {}
// SAFETY: these generated structs hold only integers and integer arrays (see bpf/iocap.h).
unsafe impl Pod for types::rec_sys {}
// SAFETY: as above.
unsafe impl Pod for types::rec_sys32 {}
// SAFETY: as above.
unsafe impl Pod for types::rec_sysio {}
// SAFETY: as above.
unsafe impl Pod for types::rec_blk {}
// SAFETY: as above.
unsafe impl Pod for types::rec_uring {}
// SAFETY: as above.
unsafe impl Pod for types::rec_journal {}
// SAFETY: as above.
unsafe impl Pod for types::rec_stack {}
// SAFETY: as above.
unsafe impl Pod for types::rec_fork {}
// SAFETY: as above.
unsafe impl Pod for types::rec_exec {}
// SAFETY: as above.
unsafe impl Pod for types::rec_comm {}
// SAFETY: as above.
unsafe impl Pod for types::rec_cgroup {}
// SAFETY: as above.
unsafe impl Pod for types::rec_fd {}
// SAFETY: as above.
unsafe impl Pod for types::rec_dup {}

// SAFETY: as above: the map values userspace reads at the stop (ended.rs).
unsafe impl Pod for types::inflight {}
// SAFETY: as above.
unsafe impl Pod for types::tctx {}
// SAFETY: as above.
unsafe impl Pod for types::call_slot {}
// SAFETY: as above.
unsafe impl Pod for types::call_io {}
// SAFETY: as above.
unsafe impl Pod for types::call_key {}

/// A `T` from the first bytes of `b`, `None` if `b` is shorter.
pub(crate) fn read<T: Pod>(b: &[u8]) -> Option<T> {
    if b.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: the length is checked above and T: Pod accepts any bytes; unaligned read.
    Some(unsafe { std::ptr::read_unaligned(b.as_ptr().cast::<T>()) })
}

/// The bytes of `v`, as the kernel lays out its struct (the generated types spell out their
/// padding, so every byte is initialized).
pub(crate) fn bytes_of<T: Pod>(v: &T) -> &[u8] {
    // SAFETY: `v` is a live `T` of `size_of::<T>()` bytes, all of them initialized (Pod).
    unsafe { std::slice::from_raw_parts((v as *const T).cast::<u8>(), std::mem::size_of::<T>()) }
}

/// Decode one record. Those with a path (exec, fd) are boxed, to keep `Rec` small; block and
/// io_uring records are not: on fio, allocating and freeing each was a tenth of the writer.
pub fn decode(b: &[u8]) -> Option<Rec> {
    match kind_of(b)? {
        REC_SYS => read(b).map(Rec::Sys),
        REC_SYS32 => read::<types::rec_sys32>(b).map(|s| {
            Rec::Sys(types::rec_sys {
                kind: REC_SYS | (s.kind & !KIND_MASK),
                nr: s.nr,
                tid: s.tid,
                pid: s.pid,
                arg0: s.arg0,
                ts: s.ts,
                lat: u64::from(s.lat),
                ret: i64::from(s.ret),
            })
        }),
        REC_SYSIO => read(b).map(Rec::SysIo),
        REC_BLK => read(b).map(Rec::Blk),
        REC_URING => read(b).map(Rec::Uring),
        REC_FORK => read(b).map(Rec::Fork),
        REC_EXEC => read(b).map(|r| Rec::Exec(Box::new(r))),
        REC_EXIT => read(b).map(Rec::Exit),
        REC_COMM => read(b).map(Rec::Comm),
        REC_CGROUP => read(b).map(Rec::Cgroup),
        REC_FD => read(b).map(|r| Rec::Fd(Box::new(r))),
        REC_DUP => read(b).map(Rec::Dup),
        REC_END_SYS => read(b).map(Rec::EndSys),
        REC_END_BLK => read(b).map(Rec::EndBlk),
        REC_JOURNAL => read(b).map(Rec::Journal),
        REC_STACK => read(b).map(|r| Rec::Stack(Box::new(r))),
        _ => None,
    }
}

/// Move a record stamped with CLOCK_MONOTONIC in the kernel (every kind: the cheaper clock
/// helper, one clock for all, since a request's link is its syscall's enter time and the
/// per-CPU rings are merged by these times) to CLOCK_BOOTTIME, in place, by adding `offset`
/// (BOOTTIME - MONOTONIC, which only moves across a suspend: the poller keeps it steady, so a
/// link and its syscall's time move alike). A zero time (a request with no link) stays zero.
/// Records of an unknown kind, and records too short to hold their time, are left alone.
pub fn to_boottime(rec: &mut [u8], offset: u64) {
    let Some(kind) = kind_of(rec) else {
        return;
    };
    let at: &[usize] = match kind {
        REC_SYS => &[std::mem::offset_of!(types::rec_sys, ts)],
        REC_SYS32 => &[std::mem::offset_of!(types::rec_sys32, ts)],
        REC_SYSIO | REC_END_SYS => &[std::mem::offset_of!(types::rec_sysio, sys.ts)],
        REC_FD => &[
            std::mem::offset_of!(types::rec_fd, ts),
            std::mem::offset_of!(types::rec_fd, end),
        ],
        REC_DUP => &[std::mem::offset_of!(types::rec_dup, end)],
        REC_FORK => &[std::mem::offset_of!(types::rec_fork, ts)],
        REC_EXEC => &[std::mem::offset_of!(types::rec_exec, ts)],
        REC_EXIT | REC_COMM => &[std::mem::offset_of!(types::rec_comm, ts)],
        REC_CGROUP => &[std::mem::offset_of!(types::rec_cgroup, ts)],
        REC_URING => &[std::mem::offset_of!(types::rec_uring, ts)],
        REC_JOURNAL => &[std::mem::offset_of!(types::rec_journal, ts)],
        REC_STACK => &[
            std::mem::offset_of!(types::rec_stack, ts),
            std::mem::offset_of!(types::rec_stack, end),
        ],
        REC_BLK | REC_END_BLK => &[
            std::mem::offset_of!(types::rec_blk, ts),
            std::mem::offset_of!(types::rec_blk, link),
        ],
        _ => return,
    };
    for &at in at {
        if let Some(ts) = rec.get_mut(at..at + 8) {
            let mono = u64::from_ne_bytes([ts[0], ts[1], ts[2], ts[3], ts[4], ts[5], ts[6], ts[7]]);
            if mono != 0 {
                ts.copy_from_slice(&mono.wrapping_add(offset).to_ne_bytes());
            }
        }
    }
}

/// When an event record's operation completed, in its times' clock (CLOCK_MONOTONIC as the
/// ring gives it, CLOCK_BOOTTIME after [`to_boottime`]): `None` for table records (processes,
/// fds), which are never discarded.
pub fn event_end(rec: &[u8]) -> Option<u64> {
    let u64_at = |at: usize| u64_at(rec, at);
    let u32_at = |at: usize| {
        rec.get(at..at + 4)
            .map(|b| u64::from(u32::from_ne_bytes(b.try_into().unwrap_or([0; 4]))))
    };
    let (ts, lat) = match kind_of(rec)? {
        REC_SYS => (
            u64_at(std::mem::offset_of!(types::rec_sys, ts))?,
            u64_at(std::mem::offset_of!(types::rec_sys, lat))?,
        ),
        REC_SYS32 => (
            u64_at(std::mem::offset_of!(types::rec_sys32, ts))?,
            u32_at(std::mem::offset_of!(types::rec_sys32, lat))?,
        ),
        REC_SYSIO | REC_END_SYS => (
            u64_at(std::mem::offset_of!(types::rec_sysio, sys.ts))?,
            u64_at(std::mem::offset_of!(types::rec_sysio, sys.lat))?,
        ),
        REC_BLK | REC_END_BLK => (
            u64_at(std::mem::offset_of!(types::rec_blk, ts))?,
            u64_at(std::mem::offset_of!(types::rec_blk, lat))?,
        ),
        REC_URING => (
            u64_at(std::mem::offset_of!(types::rec_uring, ts))?,
            u64_at(std::mem::offset_of!(types::rec_uring, lat))?,
        ),
        REC_JOURNAL => (
            u64_at(std::mem::offset_of!(types::rec_journal, ts))?,
            u64_at(std::mem::offset_of!(types::rec_journal, lat))?,
        ),
        _ => return None,
    };
    Some(ts.saturating_add(lat))
}

/// The process (tgid) of an event record: whose event it is when it is thrown away unwritten
/// (counted with the drops, placed by process). `None` for table records, records too short,
/// and a block request whose maker the kernel did not know (`has_pid` clear).
pub fn event_pid(rec: &[u8]) -> Option<u32> {
    let u32_at = |at: usize| {
        rec.get(at..at + 4)
            .map(|b| u32::from_ne_bytes(b.try_into().unwrap_or([0; 4])))
    };
    let pid = match kind_of(rec)? {
        REC_SYS => u32_at(std::mem::offset_of!(types::rec_sys, pid))?,
        REC_SYS32 => u32_at(std::mem::offset_of!(types::rec_sys32, pid))?,
        REC_SYSIO | REC_END_SYS => u32_at(std::mem::offset_of!(types::rec_sysio, sys.pid))?,
        REC_BLK | REC_END_BLK => {
            if *rec.get(std::mem::offset_of!(types::rec_blk, has_pid))? == 0 {
                return None;
            }
            u32_at(std::mem::offset_of!(types::rec_blk, pid))?
        }
        REC_URING => u32_at(std::mem::offset_of!(types::rec_uring, pid))?,
        REC_JOURNAL => u32_at(std::mem::offset_of!(types::rec_journal, pid))?,
        _ => return None,
    };
    (pid != 0).then_some(pid)
}

/// Where a record goes in the merge of the per-CPU rings (ns of CLOCK_MONOTONIC, read before
/// [`to_boottime`]): a time its program read before reserving it. An event's end (its
/// program read the clock first thing), an fd record's call's end, a process record's own
/// time (read before the reserve). 0 for a record too short or of an unknown kind (the merge
/// keeps it in its ring's order).
///
/// Why this orders causes before effects: when a record A is in a ring before a program that
/// makes record B starts (B may depend on A: an fd opened, then a call on it), A's time was
/// read before A was reserved, and B's after its program started, so A's key is smaller.
pub fn merge_key(rec: &[u8]) -> u64 {
    let u64_at = |at: usize| u64_at(rec, at).unwrap_or(0);
    match kind_of(rec) {
        Some(REC_FD) => u64_at(std::mem::offset_of!(types::rec_fd, end)),
        Some(REC_DUP) => u64_at(std::mem::offset_of!(types::rec_dup, end)),
        Some(REC_STACK) => u64_at(std::mem::offset_of!(types::rec_stack, end)),
        Some(REC_FORK) => u64_at(std::mem::offset_of!(types::rec_fork, ts)),
        Some(REC_EXEC) => u64_at(std::mem::offset_of!(types::rec_exec, ts)),
        Some(REC_EXIT | REC_COMM) => u64_at(std::mem::offset_of!(types::rec_comm, ts)),
        Some(REC_CGROUP) => u64_at(std::mem::offset_of!(types::rec_cgroup, ts)),
        _ => event_end(rec).unwrap_or(0),
    }
}

/// The native-endian u64 at byte `at` of a record, `None` past its end.
fn u64_at(rec: &[u8], at: usize) -> Option<u64> {
    rec.get(at..at + 8)
        .map(|b| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8])))
}

/// The bytes of a C string field up to its first NUL.
pub fn cstr(field: &[i8]) -> &[u8] {
    // SAFETY: i8 and u8 have the same size and alignment; any bit pattern is valid for both.
    let b = unsafe { std::slice::from_raw_parts(field.as_ptr().cast::<u8>(), field.len()) };
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sys_record_roundtrips() {
        let r = types::rec_sys {
            kind: REC_SYS,
            nr: 18,
            tid: 7,
            pid: 6,
            arg0: 3,
            ts: 100,
            lat: 50,
            ret: -5,
        };
        match decode(bytes_of(&r)) {
            Some(Rec::Sys(s)) => {
                assert_eq!(
                    (s.nr, s.tid, s.pid, s.arg0, s.ts, s.lat, s.ret),
                    (18, 7, 6, 3, 100, 50, -5)
                );
            }
            other => panic!("decoded {other:?}"),
        }
    }

    /// The record kinds are numbered in bpf/iocap.h (C) and here (Rust): the same numbers.
    #[test]
    fn record_kinds_match_the_c_header() {
        let header = include_str!("../../../bpf/iocap.h");
        let body = header
            .split("enum rec_kind {")
            .nth(1)
            .and_then(|s| s.split('}').next())
            .expect("enum rec_kind in iocap.h");
        let c: Vec<(&str, u16)> = body
            .split(',')
            .filter_map(|item| {
                let (name, value) = item.split_once('=')?;
                Some((name.trim(), value.trim().parse().ok()?))
            })
            .collect();
        let rust = [
            ("REC_SYS", REC_SYS),
            ("REC_BLK", REC_BLK),
            ("REC_FORK", REC_FORK),
            ("REC_EXEC", REC_EXEC),
            ("REC_EXIT", REC_EXIT),
            ("REC_COMM", REC_COMM),
            ("REC_FD", REC_FD),
            ("REC_DUP", REC_DUP),
            ("REC_SYS32", REC_SYS32),
            ("REC_SYSIO", REC_SYSIO),
            ("REC_URING", REC_URING),
            ("REC_END_SYS", REC_END_SYS),
            ("REC_END_BLK", REC_END_BLK),
            ("REC_JOURNAL", REC_JOURNAL),
            ("REC_STACK", REC_STACK),
            ("REC_CGROUP", REC_CGROUP),
        ];
        assert_eq!(c, rust, "bpf/iocap.h and abi.rs disagree");
        assert!(
            header.contains(&format!("#define KIND_BITS {KIND_BITS}\n")),
            "bpf/iocap.h and abi.rs disagree on KIND_BITS"
        );
        assert!(rust.iter().all(|&(_, k)| k <= KIND_MASK), "a kind overflows KIND_BITS");
    }

    #[test]
    fn the_cpu_rides_above_the_kind() {
        let r = types::rec_sys32 {
            kind: REC_SYS32 | 37 << KIND_BITS,
            nr: 17,
            ..Default::default()
        };
        match decode(bytes_of(&r)) {
            Some(Rec::Sys(s)) => assert_eq!((s.kind & KIND_MASK, cpu(s.kind), s.nr), (REC_SYS, 37, 17)),
            other => panic!("decoded {other:?}"),
        }
        let top = types::rec_blk {
            kind: REC_BLK | u16::MAX << KIND_BITS,
            ..Default::default()
        };
        assert!(matches!(decode(bytes_of(&top)), Some(Rec::Blk(b)) if cpu(b.kind) == 2047));
    }

    #[test]
    fn events_end_at_enter_plus_latency_and_tables_never_do() {
        let sys32 = types::rec_sys32 {
            kind: REC_SYS32,
            ts: 1_000,
            lat: 250,
            ..Default::default()
        };
        assert_eq!(event_end(bytes_of(&sys32)), Some(1_250));
        let sys = types::rec_sys {
            kind: REC_SYS,
            ts: 5_000_000_000,
            lat: 10_000_000_000,
            ..Default::default()
        };
        assert_eq!(event_end(bytes_of(&sys)), Some(15_000_000_000), "a 10 s sleep ends now");
        let blk = types::rec_blk {
            kind: REC_BLK,
            ts: 7,
            lat: 3,
            ..Default::default()
        };
        assert_eq!(event_end(bytes_of(&blk)), Some(10));
        let fd = types::rec_fd {
            kind: REC_FD,
            ts: 1,
            ..Default::default()
        };
        assert_eq!(event_end(bytes_of(&fd)), None);
        assert_eq!(event_end(&bytes_of(&sys32)[..20]), None);
    }

    #[test]
    fn sys32_record_widens() {
        let r = types::rec_sys32 {
            kind: REC_SYS32,
            nr: 0,
            tid: 9,
            pid: 8,
            arg0: -1,
            ts: u64::MAX - 1,
            lat: u32::MAX,
            ret: i32::MIN,
        };
        let b = bytes_of(&r);
        assert_eq!(b.len(), 32, "the hot record must stay 32 bytes");
        match decode(b) {
            Some(Rec::Sys(s)) => {
                assert_eq!(
                    (s.kind, s.nr, s.tid, s.pid, s.arg0, s.ts, s.lat, s.ret),
                    (
                        REC_SYS,
                        0,
                        9,
                        8,
                        -1,
                        u64::MAX - 1,
                        u64::from(u32::MAX),
                        i64::from(i32::MIN)
                    )
                );
            }
            other => panic!("decoded {other:?}"),
        }
        assert!(decode(&b[..31]).is_none());
    }

    #[test]
    fn the_merge_key_is_an_events_end_and_a_table_records_own_time() {
        let sys = types::rec_sys32 {
            kind: REC_SYS32 | (3 << KIND_BITS),
            ts: 1_000,
            lat: 7,
            ..Default::default()
        };
        assert_eq!(merge_key(bytes_of(&sys)), 1_007);
        let blk = types::rec_blk {
            kind: REC_BLK,
            ts: 2_000,
            lat: 50,
            link: 900,
            ..Default::default()
        };
        assert_eq!(merge_key(bytes_of(&blk)), 2_050);
        // An fd record by its call's end, not its enter (ts).
        let fd = types::rec_fd {
            kind: REC_FD,
            ts: 10,
            end: 20,
            ..Default::default()
        };
        assert_eq!(merge_key(bytes_of(&fd)), 20);
        let dup = types::rec_dup {
            kind: REC_DUP,
            end: 11,
            ..Default::default()
        };
        assert_eq!(merge_key(bytes_of(&dup)), 11);
        let exec = types::rec_exec {
            kind: REC_EXEC,
            ts: 12,
            ..Default::default()
        };
        assert_eq!(merge_key(bytes_of(&exec)), 12);
        let exit = types::rec_comm {
            kind: REC_EXIT,
            ts: 13,
            ..Default::default()
        };
        assert_eq!(merge_key(bytes_of(&exit)), 13);
        // Too short, or of no kind we know: 0 (kept in its ring's order).
        assert_eq!(merge_key(&bytes_of(&dup)[..8]), 0);
        assert_eq!(merge_key(&[31, 0, 1, 2]), 0);
    }

    #[test]
    fn monotonic_records_move_to_boottime_and_others_stay() {
        let sys = types::rec_sys32 {
            kind: REC_SYS32,
            ts: 1_000,
            lat: 7,
            ..Default::default()
        };
        let mut b = bytes_of(&sys).to_vec();
        to_boottime(&mut b, 500);
        match decode(&b) {
            Some(Rec::Sys(s)) => assert_eq!((s.ts, s.lat), (1_500, 7)),
            other => panic!("decoded {other:?}"),
        }
        let fd = types::rec_fd {
            kind: REC_FD,
            ts: 10,
            fd: 3,
            ..Default::default()
        };
        let mut b = bytes_of(&fd).to_vec();
        to_boottime(&mut b, 5);
        match decode(&b) {
            Some(Rec::Fd(f)) => assert_eq!((f.ts, f.fd), (15, 3)),
            other => panic!("decoded {other:?}"),
        }
        // What was in flight at the end: as the records they are laid out as, times and link.
        let call = types::rec_sysio {
            sys: types::rec_sys {
                kind: REC_END_SYS,
                ts: 100,
                lat: 9,
                ..Default::default()
            },
            ..Default::default()
        };
        let req = types::rec_blk {
            kind: REC_END_BLK,
            ts: 200,
            lat: 3,
            link: 150,
            ..Default::default()
        };
        let (mut c, mut r) = (bytes_of(&call).to_vec(), bytes_of(&req).to_vec());
        to_boottime(&mut c, 5);
        to_boottime(&mut r, 5);
        assert_eq!((event_end(&c), event_end(&r)), (Some(114), Some(208)));
        match (decode(&c), decode(&r)) {
            (Some(Rec::EndSys(s)), Some(Rec::EndBlk(b))) => {
                assert_eq!((s.sys.ts, b.ts, b.link), (105, 205, 155))
            }
            other => panic!("decoded {other:?}"),
        }
        // Process records too (they were stamped with BOOTTIME once: no longer).
        let fork = types::rec_fork {
            kind: REC_FORK,
            ts: 10,
            ..Default::default()
        };
        let mut b = bytes_of(&fork).to_vec();
        to_boottime(&mut b, 5);
        match decode(&b) {
            Some(Rec::Fork(f)) => assert_eq!(f.ts, 15),
            other => panic!("decoded {other:?}"),
        }
        let comm = types::rec_comm {
            kind: REC_COMM,
            ts: 10,
            ..Default::default()
        };
        let mut b = bytes_of(&comm).to_vec();
        to_boottime(&mut b, 5);
        match decode(&b) {
            Some(Rec::Comm(c)) => assert_eq!(c.ts, 15),
            other => panic!("decoded {other:?}"),
        }
        // A block request moves with its link, so the link still names its syscall's time; no
        // link stays no link.
        for (link, moved) in [(900, 905), (0, 0)] {
            let blk = types::rec_blk {
                kind: REC_BLK,
                ts: 1_000,
                link,
                ..Default::default()
            };
            let mut b = bytes_of(&blk).to_vec();
            to_boottime(&mut b, 5);
            match decode(&b) {
                Some(Rec::Blk(r)) => assert_eq!((r.ts, r.link), (1_005, moved)),
                other => panic!("decoded {other:?}"),
            }
        }
        let io = types::rec_sysio {
            sys: types::rec_sys {
                kind: REC_SYSIO,
                ts: 900,
                lat: 40,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut b = bytes_of(&io).to_vec();
        to_boottime(&mut b, 5);
        assert_eq!(event_end(&b), Some(945));
        // An io_uring request moves with block requests' links to it.
        let ur = types::rec_uring {
            kind: REC_URING,
            ts: 900,
            lat: 60,
            fd: 4,
            ..Default::default()
        };
        let mut b = bytes_of(&ur).to_vec();
        to_boottime(&mut b, 5);
        assert_eq!(event_end(&b), Some(965));
        match decode(&b) {
            Some(Rec::Uring(r)) => assert_eq!((r.ts, r.lat, r.fd), (905, 60, 4)),
            other => panic!("decoded {other:?}"),
        }
        // A journal commit moves with its requests' links to it.
        let jr = types::rec_journal {
            kind: REC_JOURNAL,
            ts: 900,
            lat: 70,
            tx: 12,
            ..Default::default()
        };
        let mut b = bytes_of(&jr).to_vec();
        to_boottime(&mut b, 5);
        assert_eq!(event_end(&b), Some(975));
        match decode(&b) {
            Some(Rec::Journal(r)) => assert_eq!((r.ts, r.lat, r.tx), (905, 70, 12)),
            other => panic!("decoded {other:?}"),
        }
        // Too short to hold the time: no panic, no change.
        let mut short = bytes_of(&sys)[..20].to_vec();
        let copy = short.clone();
        to_boottime(&mut short, 5);
        assert_eq!(short, copy);
        to_boottime(&mut [], 5);
    }

    #[test]
    fn short_or_unknown_records_are_rejected() {
        let r = types::rec_sys {
            kind: REC_SYS,
            ..Default::default()
        };
        let b = bytes_of(&r);
        assert!(decode(&b[..b.len() - 1]).is_none());
        assert!(decode(&[99, 0, 0, 0]).is_none());
        assert!(decode(&[]).is_none());
    }

    #[test]
    fn cstr_stops_at_nul() {
        let f: [i8; 6] = [b'a' as i8, b'b' as i8, 0, b'c' as i8, 0, 0];
        assert_eq!(cstr(&f), b"ab");
        let full: [i8; 2] = [b'x' as i8, b'y' as i8];
        assert_eq!(cstr(&full), b"xy");
    }
}
