//! The pieces of a synthetic capture: its header, the writer onto a file, named table entries
//! and block requests.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use iocap_format::{Class, Device, Event, FdType, FileEntry, Meta, ProcEntry, Writer, WriterOptions};

/// The device number of `vda` in the test captures' headers: `mkdev(254, 0)`.
pub const VDA: u32 = 254 << 20;

/// The device number of `sdb`, the second disk of [`two_disks`]: `mkdev(8, 16)`.
pub const SDB: u32 = (8 << 20) | 16;

/// The header of a capture recorded on the test host: `testhost`, kernel 6.18.0 on x86_64,
/// two CPUs, wall clock at 2023-11-14, the command line `iocap record` and one disk, `vda`
/// ([`VDA`]). Tests that show the header (`iocap info`, the viewer's title) rely on these.
pub fn meta(start_ts: u64) -> Meta {
    Meta {
        iocap_version: "test".into(),
        host: "testhost".into(),
        kernel: "6.18.0".into(),
        arch: "x86_64".into(),
        boot_to_wall_ns: 1_700_000_000_000_000_000,
        start_ts,
        command_line: vec!["iocap".into(), "record".into()],
        cpus: 2,
        devices: vec![Device {
            dev: VDA,
            name: "vda".into(),
        }],
        ..Meta::default()
    }
}

/// The least header a capture needs to be read: x86_64 syscall numbers, the start and one disk,
/// `vda` with device number `vda`.
pub fn bare_meta(start_ts: u64, vda: u32) -> Meta {
    Meta {
        arch: "x86_64".into(),
        start_ts,
        devices: vec![Device {
            dev: vda,
            name: "vda".into(),
        }],
        ..Meta::default()
    }
}

/// A writer onto a new file at `path`, closing a chunk every `chunk_events` events and
/// compressing at zstd `level`.
///
/// # Panics
///
/// When the file cannot be created or the header written: this is for tests.
pub fn create(path: &Path, meta: &Meta, chunk_events: usize, level: i32) -> Writer<File> {
    let file = File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    Writer::new(file, meta, WriterOptions { chunk_events, level }).expect("write the capture's header")
}

/// Add process `pid` (child of `ppid`) named `name`; returns its table id.
pub fn add_proc<W: Write>(w: &mut Writer<W>, pid: u32, ppid: u32, name: &[u8]) -> u32 {
    let name = w.intern(name);
    w.add_proc(ProcEntry {
        pid,
        ppid,
        name,
        ..ProcEntry::default()
    })
}

/// Add `pid`'s fd `fd`, of type `kind`, named `name`, on device `dev` (0: none); returns its
/// table id.
pub fn add_file<W: Write>(w: &mut Writer<W>, pid: u32, fd: i32, kind: FdType, name: &[u8], dev: u32) -> u32 {
    let name = w.intern(name);
    w.add_file(FileEntry {
        pid,
        fd,
        kind,
        name,
        dev,
        ..FileEntry::default()
    })
}

/// A block request of `bytes` on `dev` by `pid` (its thread too), whose table entry is `proc`:
/// issued at `ts`, done `latency` ns later. It is a read at sector 0 with no queue time
/// unless the caller sets `op`, `sector`, `queue` (`Event { op, ..block(..) }`).
pub fn block(ts: u64, latency: u64, pid: u32, proc: u32, dev: u32, bytes: u64) -> Event {
    Event {
        class: Class::Block,
        ts,
        latency,
        pid,
        tid: pid,
        proc,
        fd: -1,
        bytes,
        dev,
        ..Event::default()
    }
}

/// A capture at `path` from `start` (ns since boot) of `n` pairs of 4 KiB block requests by
/// `dd` (pid 400), one a millisecond on each of two disks: `vda` (200 µs each) and [`SDB`],
/// `sdb` (300 µs). Returns its writer, for what a test adds before it finishes it.
pub fn two_disks(path: &Path, start: u64, n: u64) -> Writer<File> {
    let mut w = create(path, &meta(start), 256, 1);
    w.add_device(&Device {
        dev: SDB,
        name: "sdb".into(),
    });
    let dd = add_proc(&mut w, 400, 1, b"dd");
    for i in 0..n {
        for (dev, latency) in [(VDA, 200_000), (SDB, 300_000)] {
            w.push(&block(start + i * 1_000_000, latency, 400, dd, dev, 4096))
                .expect("push a block request");
        }
    }
    w
}
