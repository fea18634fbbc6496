//! What the host looks like when recording starts: processes and their open fds from /proc,
//! socket addresses from /proc/net, block devices from /sys/block, and the capture's [`Meta`].
//!
//! Everything here is best effort: a process that exits while we read it is skipped.

use std::collections::HashMap;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use iocap_format::{mkdev, Device, FdType, Meta};

use crate::classify;

/// A process found in /proc (or told about by a record).
#[derive(Clone, Debug, Default)]
pub struct ProcInfo {
    pub pid: u32,
    pub ppid: u32,
    pub comm: Vec<u8>,
    pub exe: Vec<u8>,
    pub cmdline: Vec<u8>,
    /// The effective uid, `None` when it could not be read.
    pub uid: Option<u32>,
    /// The cgroup v2 path (`/system.slice/x.service`), empty when unknown.
    pub cgroup: Vec<u8>,
    /// On a host that still mounts v1 hierarchies, the path in [`cgroup1`]'s (where the
    /// container runtimes of a hybrid host put their containers); empty when none.
    pub cgroup1: Vec<u8>,
}

/// An fd found in /proc/PID/fd.
#[derive(Clone, Debug)]
pub struct FdInfo {
    pub fd: i32,
    pub kind: FdType,
    pub name: Vec<u8>,
    pub dev: u32,
    /// Its inode number, 0 when it could not be read.
    pub ino: u64,
}

/// Every process in /proc (thread group leaders).
pub fn processes() -> Vec<ProcInfo> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(process)
        .collect()
}

/// One process from /proc, if it still exists.
pub fn process(pid: u32) -> Option<ProcInfo> {
    let base = format!("/proc/{pid}");
    let stat = fs::read(format!("{base}/stat")).ok()?;
    // "pid (comm) S ppid ...": comm may hold spaces and parentheses; it ends at the last ')'.
    let open = stat.iter().position(|&c| c == b'(')?;
    let close = stat.iter().rposition(|&c| c == b')')?;
    let comm = stat.get(open + 1..close)?.to_vec();
    let rest = String::from_utf8_lossy(stat.get(close + 1..)?).into_owned();
    let ppid = rest.split_whitespace().nth(1)?.parse().ok()?;
    let exe = fs::read_link(format!("{base}/exe"))
        .map(|p| p.as_os_str().as_bytes().to_vec())
        .unwrap_or_default();
    let status = fs::read_to_string(format!("{base}/status")).unwrap_or_default();
    let (cgroup, cgroup1) = process_cgroups(pid);
    Some(ProcInfo {
        pid,
        ppid,
        comm,
        exe,
        cmdline: cmdline(&fs::read(format!("{base}/cmdline")).unwrap_or_default()),
        uid: effective_uid(&status),
        cgroup,
        cgroup1,
    })
}

/// The cgroup v2 path of process `pid` now, and its path in the v1 hierarchy [`cgroup1`]
/// reads; each empty when unknown.
pub fn process_cgroups(pid: u32) -> (Vec<u8>, Vec<u8>) {
    let raw = fs::read(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let v1 = cgroup1().map_or_else(Vec::new, |v1| v1_cgroup(&raw, v1.name));
    (unified_cgroup(&raw), v1)
}

/// The effective uid from /proc/PID/status (`Uid:` real, effective, saved, fs).
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The cgroup v2 path from /proc/PID/cgroup (its `0::/path` line); empty on a v1-only host.
fn unified_cgroup(raw: &[u8]) -> Vec<u8> {
    raw.split(|&c| c == b'\n')
        .find_map(|l| l.strip_prefix(b"0::"))
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// The path in v1 hierarchy `controller` from /proc/PID/cgroup (its `N:a,b:/path` line whose
/// controllers include it); empty when there is none.
fn v1_cgroup(raw: &[u8], controller: &str) -> Vec<u8> {
    raw.split(|&c| c == b'\n')
        .find_map(|l| {
            let mut f = l.splitn(3, |&c| c == b':');
            let (_, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            ctrls
                .split(|&c| c == b',')
                .any(|c| c == controller.as_bytes())
                .then_some(path)
        })
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

/// A cgroup v1 hierarchy a hybrid host still mounts, which the recorder reads each process's
/// cgroup in as well as v2's: container runtimes there put a container in v1 cgroups only
/// (podman's `/libpod_parent/libpod-<id>`), its v2 path staying `/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct V1Hierarchy {
    /// The controller whose cgroup is read (`pids`).
    pub name: &'static str,
    /// Its code for the BPF programs (`v1_ctrl` in bpf/iocap.bpf.c), from 1.
    pub code: u32,
    /// Where it is mounted.
    pub root: std::path::PathBuf,
}

/// The controllers a container runtime puts every container in, most likely first; the
/// code of each is its place here plus one (`v1_ctrl`).
const V1_CONTROLLERS: [&str; 7] = ["pids", "memory", "cpu", "blkio", "devices", "freezer", "cpuset"];

/// The v1 hierarchy to read cgroups in: the first of [`V1_CONTROLLERS`] mounted as cgroup v1;
/// `None` on a host with v2 alone. Read once.
pub fn cgroup1() -> Option<&'static V1Hierarchy> {
    static V1: std::sync::OnceLock<Option<V1Hierarchy>> = std::sync::OnceLock::new();
    V1.get_or_init(|| v1_hierarchy(&fs::read("/proc/self/mounts").ok()?))
        .as_ref()
}

/// [`cgroup1`] from the text of /proc/self/mounts.
fn v1_hierarchy(mounts: &[u8]) -> Option<V1Hierarchy> {
    let v1: Vec<(&[u8], &[u8])> = mounts
        .split(|&c| c == b'\n')
        .filter_map(|l| {
            let mut f = l.split(|&c| c == b' ');
            let (_, dir, fstype, opts) = (f.next()?, f.next()?, f.next()?, f.next()?);
            (fstype == b"cgroup").then_some((dir, opts))
        })
        .collect();
    V1_CONTROLLERS.iter().zip(1..).find_map(|(&name, code)| {
        let (dir, _) = v1
            .iter()
            .find(|(_, opts)| opts.split(|&c| c == b',').any(|o| o == name.as_bytes()))?;
        Some(V1Hierarchy {
            name,
            code,
            root: Path::new(std::ffi::OsStr::from_bytes(dir)).to_path_buf(),
        })
    })
}

/// A cgroup whose processes are traced (`record --cgroup PATH`), found by [`cgroup_scope`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupScope {
    /// Its id: its directory's inode number in its hierarchy.
    pub id: u64,
    /// Whether it is in the v1 hierarchy the recorder reads (a hybrid host's container
    /// runtimes use those) rather than in v2's.
    pub v1: bool,
    /// The processes in it or below it now.
    pub pids: Vec<u32>,
}

/// The cgroup `path` names for `record --cgroup`: a directory of a cgroup filesystem
/// (`/sys/fs/cgroup/system.slice/docker-<id>.scope`), or a path from a hierarchy's root
/// (`/system.slice/docker-<id>.scope`, looked for in v2's, then in the v1 hierarchy the
/// recorder reads). A cgroup of another v1 hierarchy stands for the one at the same path in
/// the recorder's (runtimes make the same tree in each). The processes in it and below it are
/// listed now; an error says in one line why the path is not a cgroup.
pub fn cgroup_scope(path: &Path) -> Result<CgroupScope, String> {
    let v1 = cgroup1();
    let shown = escape_path(path);
    let dev_of = |p: &Path| fs::metadata(p).ok().map(|m| m.dev());
    let v1_dev = v1.and_then(|v| dev_of(&v.root));
    let v2_root = cgroup2_root();
    // The directory as given, if it is one of a cgroup filesystem.
    let found = match fs::metadata(path) {
        Ok(m) if m.is_dir() && path.is_absolute() => {
            let dir = path.to_path_buf();
            if v2_root.and_then(dev_of) == Some(m.dev()) {
                Some((dir, false))
            } else if v1_dev == Some(m.dev()) {
                Some((dir, true))
            } else {
                // Another v1 hierarchy's: the same path in the recorder's.
                let mounts = fs::read("/proc/self/mounts").unwrap_or_default();
                let rel = cgroup_mounts(&mounts)
                    .filter(|mount| dev_of(mount) == Some(m.dev()))
                    .find_map(|mount| path.strip_prefix(&mount).ok().map(Path::to_path_buf));
                match (rel, v1) {
                    (Some(rel), Some(v1)) => Some((v1.root.join(rel), true)),
                    _ => None,
                }
            }
        }
        _ => None,
    };
    // Else a path from a hierarchy's root.
    let found = found.or_else(|| {
        let rel = path.strip_prefix("/").unwrap_or(path);
        let roots = [v2_root.map(|r| (r, false)), v1.map(|v| (v.root.as_path(), true))];
        roots
            .into_iter()
            .flatten()
            .map(|(root, v1)| (root.join(rel), v1))
            .find(|(dir, _)| dir.is_dir())
    });
    let Some((dir, v1)) = found else {
        return Err(format!(
            "--cgroup {shown}: no such cgroup (a directory under /sys/fs/cgroup, or a path from its root)"
        ));
    };
    let id = fs::metadata(&dir)
        .map(|m| m.ino())
        .map_err(|e| format!("--cgroup {shown}: {e}"))?;
    let mut pids = Vec::new();
    let mut todo = vec![dir];
    while let Some(d) = todo.pop() {
        if let Ok(procs) = fs::read_to_string(d.join("cgroup.procs")) {
            pids.extend(procs.lines().filter_map(|l| l.trim().parse::<u32>().ok()));
        }
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) && todo.len() < MAX_CGROUPS {
                todo.push(e.path());
            }
        }
    }
    pids.sort_unstable();
    pids.dedup();
    Ok(CgroupScope { id, v1, pids })
}

/// `path` as a terminal may show it.
fn escape_path(path: &Path) -> String {
    iocap_format::escape::escape(path.as_os_str().as_bytes())
}

/// Where each cgroup v1 hierarchy is mounted, from the text of /proc/self/mounts.
fn cgroup_mounts(mounts: &[u8]) -> impl Iterator<Item = std::path::PathBuf> + '_ {
    mounts.split(|&c| c == b'\n').filter_map(|l| {
        let mut f = l.split(|&c| c == b' ');
        let (_, dir, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == b"cgroup").then(|| Path::new(std::ffi::OsStr::from_bytes(dir)).to_path_buf())
    })
}

/// Most cgroups [`cgroup_paths_under`] lists: a host with more is not walked further.
const MAX_CGROUPS: usize = 1 << 16;

/// Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup on a systemd host, but
/// /sys/fs/cgroup/unified on a hybrid one (v1 controllers beside it), so read from the mounts,
/// once (the writer asks at every fork and exec).
pub fn cgroup2_root() -> Option<&'static Path> {
    static ROOT: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let mounts = fs::read("/proc/self/mounts").ok()?;
        mounts.split(|&c| c == b'\n').find_map(|l| {
            let mut f = l.split(|&c| c == b' ');
            let (_, dir, fstype) = (f.next()?, f.next()?, f.next()?);
            // /proc/mounts escapes spaces as \040; a cgroup2 mount point has none in practice.
            (fstype == b"cgroup2").then(|| Path::new(std::ffi::OsStr::from_bytes(dir)).to_path_buf())
        })
    })
    .as_deref()
}

/// Every cgroup of the hierarchy mounted at `root` by id (the inode number of its directory,
/// which is what the kernel's `kn->id` and `bpf_get_current_cgroup_id` give), as its path from
/// the root (`/` for the root itself). Each v1 hierarchy numbers its own.
pub fn cgroup_paths_under(root: &Path) -> HashMap<u64, Vec<u8>> {
    let mut out = HashMap::new();
    let root = root.to_path_buf();
    let Ok(top) = fs::metadata(&root) else {
        return out;
    };
    out.insert(top.ino(), b"/".to_vec());
    let mut todo = vec![root.clone()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            // Not following symlinks: cgroupfs has none, and a directory is a cgroup.
            let Ok(t) = e.file_type() else { continue };
            if !t.is_dir() || out.len() >= MAX_CGROUPS {
                continue;
            }
            let path = e.path();
            // Inodes are ids only within the cgroup2 mount: never cross into another.
            let Ok(m) = e.metadata() else { continue };
            if m.dev() != top.dev() {
                continue;
            }
            if let Ok(rel) = path.strip_prefix(&root) {
                let mut p = b"/".to_vec();
                p.extend_from_slice(rel.as_os_str().as_bytes());
                out.insert(m.ino(), p);
                todo.push(path);
            }
        }
    }
    out
}

/// User names by uid, from /etc/passwd (`name:x:uid:...`); empty when it cannot be read.
pub fn users() -> HashMap<u32, Vec<u8>> {
    let raw = fs::read("/etc/passwd").unwrap_or_default();
    raw.split(|&c| c == b'\n')
        .filter_map(|l| {
            let mut f = l.split(|&c| c == b':');
            let name = f.next()?;
            let uid = std::str::from_utf8(f.nth(1)?).ok()?.parse().ok()?;
            Some((uid, name.to_vec()))
        })
        .collect()
}

/// An argument vector (NUL-separated) as one line, arguments joined by spaces.
pub fn cmdline(raw: &[u8]) -> Vec<u8> {
    let trimmed = raw.strip_suffix(b"\0").unwrap_or(raw);
    trimmed.iter().map(|&c| if c == 0 { b' ' } else { c }).collect()
}

/// The current directory of a process, if it can still be read.
pub fn cwd(pid: u32) -> Option<Vec<u8>> {
    fs::read_link(format!("/proc/{pid}/cwd"))
        .ok()
        .map(|p| p.as_os_str().as_bytes().to_vec())
}

/// The open fds of a process, with sockets named from `sockets` (inode → (type, name)).
pub fn fds(pid: u32, sockets: &HashMap<u64, (FdType, String)>) -> Vec<FdInfo> {
    let dir = format!("/proc/{pid}/fd");
    let Ok(rd) = fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(link) = fs::read_link(e.path()) else {
            continue;
        };
        let link = link.as_os_str().as_bytes().to_vec();
        let md = fs::metadata(e.path()).ok();
        let is_dir = md.as_ref().is_some_and(|m| m.is_dir());
        let dev = md.as_ref().map(|m| user_dev_to_kernel(m.dev())).unwrap_or(0);
        let ino = md.as_ref().map(|m| m.ino()).unwrap_or(0);
        let mut kind = classify::link_type(&link, is_dir);
        let mut name = link.clone();
        if kind == FdType::Socket {
            if let Some((t, n)) = sockets.get(&ino) {
                kind = *t;
                name = n.clone().into_bytes();
            }
        }
        out.push(FdInfo {
            fd,
            kind,
            name,
            dev,
            ino,
        });
    }
    out
}

/// A userspace `dev_t` (glibc encoding) as the kernel's internal one.
pub fn user_dev_to_kernel(dev: u64) -> u32 {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    mkdev(major as u32, minor as u32)
}

/// Socket inode → (type, name) from /proc/net/{tcp,tcp6,udp,udp6,unix}.
pub fn sockets() -> HashMap<u64, (FdType, String)> {
    let mut m = HashMap::new();
    for (file, six) in [("tcp", false), ("udp", false), ("tcp6", true), ("udp6", true)] {
        let Ok(text) = fs::read_to_string(format!("/proc/net/{file}")) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(l), Some(r), Some(ino)) = (f.get(1), f.get(2), f.get(9).and_then(|s| s.parse::<u64>().ok()))
            else {
                continue;
            };
            let (Some((la, lp)), Some((ra, rp))) = (hex_addr(l, six), hex_addr(r, six)) else {
                continue;
            };
            let fam = if six { classify::AF_INET6 } else { classify::AF_INET };
            m.insert(
                ino,
                (classify::socket_type(fam), classify::inet_name(fam, &la, lp, &ra, rp)),
            );
        }
    }
    if let Ok(text) = fs::read_to_string("/proc/net/unix") {
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let Some(ino) = f.get(6).and_then(|s| s.parse::<u64>().ok()) else {
                continue;
            };
            m.insert(ino, (FdType::Unix, f.get(7).copied().unwrap_or("").to_owned()));
        }
    }
    m
}

/// `0100007F:1F90` (IPv4, little-endian words) → address bytes and port.
fn hex_addr(s: &str, six: bool) -> Option<([u8; 16], u16)> {
    let (a, p) = s.split_once(':')?;
    let port = u16::from_str_radix(p, 16).ok()?;
    let mut out = [0u8; 16];
    let words = if six { 4 } else { 1 };
    if a.len() != words * 8 {
        return None;
    }
    for w in 0..words {
        let v = u32::from_str_radix(a.get(w * 8..w * 8 + 8)?, 16).ok()?;
        // /proc prints each 32-bit word in host order.
        out[w * 4..w * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }
    Some((out, port))
}

/// Block devices and their partitions from /sys/block.
pub fn devices() -> Vec<Device> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir("/sys/block") else {
        return out;
    };
    for disk in rd.flatten() {
        let path = disk.path();
        push_device(&path, &mut out);
        if let Ok(parts) = fs::read_dir(&path) {
            for p in parts.flatten() {
                if p.path().join("partition").exists() {
                    push_device(&p.path(), &mut out);
                }
            }
        }
    }
    out.sort_by_key(|d| d.dev);
    out
}

fn push_device(path: &Path, out: &mut Vec<Device>) {
    let Ok(dev) = fs::read_to_string(path.join("dev")) else {
        return;
    };
    let Some((ma, mi)) = dev.trim().split_once(':') else {
        return;
    };
    let (Ok(ma), Ok(mi)) = (ma.parse(), mi.parse()) else {
        return;
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    out.push(Device {
        dev: mkdev(ma, mi),
        name: iocap_format::escape::escape(name.as_bytes()),
    });
}

/// Now on CLOCK_BOOTTIME, ns (the clock of `bpf_ktime_get_boot_ns`).
pub fn boot_ns() -> u64 {
    clock_ns(libc::CLOCK_BOOTTIME) as u64
}

/// CLOCK_MONOTONIC now, ns: the clock the BPF programs stamp their records with.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC) as u64
}

/// CLOCK_BOOTTIME - CLOCK_MONOTONIC now: the time spent suspended since boot.
pub fn boot_offset_ns() -> u64 {
    // MONOTONIC read between two BOOTTIME reads: their middle is the same instant.
    let b1 = clock_ns(libc::CLOCK_BOOTTIME);
    let mono = clock_ns(libc::CLOCK_MONOTONIC);
    let b2 = clock_ns(libc::CLOCK_BOOTTIME);
    ((b1 + b2) / 2 - mono).max(0) as u64
}

fn clock_ns(clock: libc::clockid_t) -> i128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out pointer; clock_gettime writes it and nothing else.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
}

/// The capture header for a recording starting now.
pub fn meta(command_line: Vec<String>, iocap_version: &str, filter: Option<String>) -> Meta {
    // Read the two clocks back to back, twice, and keep the tighter pair.
    let mut best = (i128::MAX, 0i128);
    for _ in 0..3 {
        let b0 = clock_ns(libc::CLOCK_BOOTTIME);
        let w = clock_ns(libc::CLOCK_REALTIME);
        let b1 = clock_ns(libc::CLOCK_BOOTTIME);
        if b1 - b0 < best.0 {
            best = (b1 - b0, w - (b0 + b1) / 2);
        }
    }
    let mut uts: libc::utsname = unsafe_zeroed_utsname();
    // SAFETY: uts is a valid out pointer for uname.
    unsafe { libc::uname(&mut uts) };
    let field = |f: &[libc::c_char]| -> String {
        let b: Vec<u8> = f.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        iocap_format::escape::escape(&b)
    };
    Meta {
        iocap_version: iocap_version.to_owned(),
        host: field(&uts.nodename),
        kernel: field(&uts.release),
        arch: std::env::consts::ARCH.to_owned(),
        boot_to_wall_ns: best.1 as i64,
        start_ts: boot_ns(),
        command_line,
        filter,
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        devices: devices(),
        // Set by the caller when the recording rotates.
        next_file: None,
        // Set by the caller from what the recorder found missing.
        missing: Vec::new(),
        // Set by the caller from what the recorder keeps of untraced threads.
        kept: Vec::new(),
        stacks_min_ns: None,
        // Every process entry says its container (`state.rs`), 0 on the host.
        containers: true,
    }
}

fn unsafe_zeroed_utsname() -> libc::utsname {
    // SAFETY: utsname is plain C arrays of chars; all zeroes is a valid value.
    unsafe { std::mem::zeroed() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_addresses() {
        let (a, p) = hex_addr("0100007F:1F90", false).unwrap();
        assert_eq!(&a[..4], &[127, 0, 0, 1]);
        assert_eq!(p, 8080);
        let (a6, p6) = hex_addr("00000000000000000000000001000000:0016", true).unwrap();
        assert_eq!(a6[15], 1);
        assert_eq!(p6, 22);
        assert!(hex_addr("zz:1", false).is_none());
        assert!(hex_addr("0100007F", false).is_none());
    }

    #[test]
    fn owners_from_status_and_cgroup() {
        let status = "Name:\tsu\nUid:\t1000\t0\t0\t0\nGid:\t100\t100\t100\t100\n";
        assert_eq!(
            effective_uid(status),
            Some(0),
            "the second Uid value is the effective one"
        );
        assert_eq!(effective_uid("Name:\tx\n"), None);
        assert_eq!(effective_uid("Uid:\tx\ty\n"), None);
        let v1_and_v2 = b"12:cpu,cpuacct:/docker/abc\n0::/system.slice/docker-abc.scope\n";
        assert_eq!(unified_cgroup(v1_and_v2), b"/system.slice/docker-abc.scope");
        assert_eq!(unified_cgroup(b"12:cpu:/x\n"), b"", "a v1-only host has no v2 path");
    }

    #[test]
    fn this_process_has_an_owner_and_a_cgroup() {
        let me = process(std::process::id()).expect("/proc/self");
        // SAFETY: geteuid has no preconditions.
        assert_eq!(me.uid, Some(unsafe { libc::geteuid() }));
        let own = fs::read("/proc/self/cgroup").unwrap_or_default();
        assert_eq!(me.cgroup, unified_cgroup(&own));
        if !me.cgroup.is_empty() {
            let root = cgroup2_root().expect("a v2 path means cgroup2 is mounted");
            let by_id = cgroup_paths_under(root);
            let dir = root.join(String::from_utf8_lossy(&me.cgroup[1..]).as_ref());
            let ino = fs::metadata(dir).map(|m| m.ino()).expect("the cgroup's directory");
            assert_eq!(by_id.get(&ino), Some(&me.cgroup), "cgroup ids are directory inodes");
        }
    }

    #[test]
    fn a_hybrid_hosts_v1_hierarchy_and_paths() {
        // This machine's mounts: v1 controllers beside v2 at /sys/fs/cgroup/unified.
        let mounts = b"cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
            cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0\n\
            cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n\
            cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let v1 = v1_hierarchy(mounts).expect("a v1 hierarchy");
        assert_eq!((v1.name, v1.code), ("pids", 1), "pids first");
        assert_eq!(v1.root, Path::new("/sys/fs/cgroup/pids"));
        let no_pids = b"cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n";
        let v1 = v1_hierarchy(no_pids).expect("cpu");
        assert_eq!((v1.name, v1.code), ("cpu", 3));
        assert_eq!(
            v1_hierarchy(b"cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n"),
            None,
            "v2 alone"
        );
        // A podman container's /proc/PID/cgroup here (cgroupfs manager).
        let raw = b"9:name=systemd:/libpod_parent/libpod-ab\n8:pids:/libpod_parent/libpod-ab\n\
            2:cpu,cpuacct:/libpod_parent/libpod-cd\n0::/\n";
        assert_eq!(v1_cgroup(raw, "pids"), b"/libpod_parent/libpod-ab");
        assert_eq!(v1_cgroup(raw, "cpuacct"), b"/libpod_parent/libpod-cd");
        assert_eq!(v1_cgroup(raw, "memory"), b"", "not mounted");
        assert_eq!(v1_cgroup(raw, "systemd"), b"", "name=systemd is no controller");
    }

    #[test]
    fn cmdline_joins_arguments() {
        assert_eq!(cmdline(b"dd\0if=/dev/zero\0"), b"dd if=/dev/zero");
        assert_eq!(cmdline(b""), b"");
    }

    #[test]
    fn dev_conversion() {
        // 8:1 in glibc's encoding is 0x801.
        assert_eq!(user_dev_to_kernel(0x801), mkdev(8, 1));
        assert_eq!(user_dev_to_kernel(libc::makedev(259, 70000)), mkdev(259, 70000));
    }

    #[test]
    fn this_process_is_found() {
        let me = process(std::process::id()).unwrap();
        assert!(!me.comm.is_empty());
        assert!(me.ppid > 0);
    }
}
