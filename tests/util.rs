//! Helpers shared by the end-to-end tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use iocap_format::{Event, FdType};
use iocap_testkit::{add_file, add_proc, block, VDA};

/// Tests that flood the machine run alone; tests whose outcome depends on getting the CPU in
/// time (recordings that count every event, the viewer under a time or memory bound, tmux
/// waiting for a screen) run side by side, but not beside a flood.
static MACHINE: RwLock<()> = RwLock::new(());

/// Run beside other time-sensitive tests, never beside a flood.
pub fn machine_shared() -> RwLockReadGuard<'static, ()> {
    MACHINE.read().unwrap_or_else(|e| e.into_inner())
}

/// Run alone among the time-sensitive tests: this one floods the machine.
pub fn machine_alone() -> RwLockWriteGuard<'static, ()> {
    MACHINE.write().unwrap_or_else(|e| e.into_inner())
}

/// The block requests `iocap record` said (on its standard error) were issued and never seen
/// completing, hence in no capture: 0 when it said nothing of them.
pub fn unseen_requests(stderr: &[u8]) -> u64 {
    const UNSEEN: &str = "iocap: block requests issued whose completion never reached iocap, so not in the capture: ";
    String::from_utf8_lossy(stderr)
        .lines()
        .find_map(|l| l.strip_prefix(UNSEEN)?.split(' ').next()?.parse().ok())
        .unwrap_or(0)
}

/// Whether every one of `tools` runs here (`--version`); if not, says on standard error that
/// `test` is skipped for want of the missing ones (scripts/setup.sh installs them all). In CI
/// (`CI` set, as CI services set it) a missing tool fails the test instead: scripts/setup.sh
/// installs them there, so one missing is a broken setup, and a skip would pass unread.
pub fn tools(test: &str, tools: &[&str]) -> bool {
    let missing: Vec<&str> = (tools.iter().copied())
        .filter(|t| Command::new(t).arg("--version").output().is_err())
        .collect();
    if !missing.is_empty() {
        let ci = std::env::var("CI").is_ok_and(|v| !matches!(v.as_str(), "" | "0" | "false"));
        assert!(
            !ci,
            "{test}: needs {} (scripts/setup.sh installs it), and CI runs every test",
            missing.join(" and ")
        );
        eprintln!("{test}: needs {} (scripts/setup.sh): skipped", missing.join(" and "));
    }
    missing.is_empty()
}

/// The `iocap` binary cargo built for these tests.
pub fn iocap() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iocap"))
}

/// Run `iocap` with `args`; returns (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    let out: Output = iocap().args(args).output().expect("run iocap");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A loop device over the file `img`, detached on drop. Root only: as root one must be had, so a
/// failure to attach is a failure, not a skip.
pub struct LoopDev {
    /// `/dev/loopN`.
    pub path: String,
}

impl LoopDev {
    pub fn attach(img: &Path) -> LoopDev {
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(img)
            .output()
            .expect("run losetup (util-linux)");
        assert!(
            out.status.success(),
            "losetup failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        LoopDev {
            path: String::from_utf8_lossy(&out.stdout).trim().to_owned(),
        }
    }

    /// Reads and writes go to the backing file with O_DIRECT: each request reaches the host's
    /// disk, as a real disk's would, instead of the host's page cache.
    pub fn direct_io(&self) {
        let st = Command::new("losetup")
            .args(["--direct-io=on", &self.path])
            .status()
            .expect("run losetup");
        assert!(st.success(), "losetup --direct-io=on {} failed", self.path);
    }

    /// The disk's name, as captures and /proc/diskstats name it (`loop3`).
    pub fn name(&self) -> &str {
        self.path.trim_start_matches("/dev/")
    }
}

impl Drop for LoopDev {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.path).status();
    }
}

/// Unmounted on drop.
pub struct Mounted(pub PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// A new ext4 filesystem on a loop device over a file of `mib` MiB in `dir`, mounted on
/// `dir/mnt`: a disk of the test's own, which nothing else on the machine touches. Unmounted,
/// then detached, on drop (the fields drop in this order).
pub struct Ext4 {
    /// Where it is mounted.
    pub mnt: PathBuf,
    _mounted: Mounted,
    /// Its device.
    pub dev: LoopDev,
}

impl Ext4 {
    pub fn new(dir: &Path, mib: usize) -> Ext4 {
        // `tool args`, which must succeed.
        let run = |tool: &str, args: &[&std::ffi::OsStr]| {
            let st = Command::new(tool).args(args).status();
            assert!(st.is_ok_and(|s| s.success()), "{tool} {args:?}");
        };
        let img = dir.join("ext4.img");
        std::fs::write(&img, vec![0u8; mib << 20]).unwrap();
        run("mkfs.ext4", &["-q".as_ref(), img.as_os_str()]);
        let dev = LoopDev::attach(&img);
        let mnt = dir.join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        run("mount", &[dev.path.as_ref(), mnt.as_os_str()]);
        Ext4 {
            _mounted: Mounted(mnt.clone()),
            mnt,
            dev,
        }
    }
}

/// Why a test that records (root, BPF, a build with the recorder) cannot run here, or `None`
/// when it can.
pub fn root_skip_reason() -> Option<&'static str> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64", feature = "record")) {
        return Some("this build has no recorder (the viewer-only build, --no-default-features): skipped");
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc_geteuid() };
    (euid != 0).then_some("needs root (CAP_BPF + CAP_PERFMON) to load BPF: skipped")
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// A small synthetic capture with known contents: `n` syscalls by two processes on one file,
/// and one block write every tenth event.
pub fn synthetic_capture(dir: &Path, n: u64) -> PathBuf {
    let path = dir.join("synthetic.cap");
    let mut w = iocap_testkit::create(&path, &iocap_testkit::meta(1_000_000_000), 100, 3);
    let fio = add_proc(&mut w, 100, 1, b"fio");
    let pg = add_proc(&mut w, 200, 1, b"postgres");
    let f = add_file(&mut w, 100, 3, FdType::File, b"/data/fio-r.dat", 0);
    for i in 0..n {
        let ts = 1_000_000_000 + i * 1_000_000;
        let e = if i % 10 == 9 {
            Event {
                sector: i * 8,
                op: 1,
                ..block(ts, 200_000 + i * 10, 100, fio, VDA, 4096)
            }
        } else if i % 2 == 0 {
            Event {
                fd: 3,
                file: f,
                bytes: 4096,
                proc: fio,
                ..Event::syscall(ts, 5_000 + i, 100, 100, 17, 4096)
            }
        } else {
            Event {
                proc: pg,
                ..Event::syscall(ts, 1_000 + i, 200, 201, 202, 0)
            }
        };
        w.push(&e).unwrap();
    }
    w.finish(1_000_000_000 + n * 1_000_000).unwrap();
    path
}

/// Make a FIFO at `path` (0600).
/// Clock `id` now, in ns (CLOCK_BOOTTIME is the clock of every timestamp in a capture).
pub fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid timespec for clock_gettime to fill.
    assert_eq!(unsafe { libc::clock_gettime(id, &mut ts) }, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path, which mkfifo only reads.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// A loop device's queue settings (`/sys/block/DEV/queue/KNOB`), put back as they were on
/// drop: they outlive a detach, and the next test to attach that device expects its defaults
/// (no scheduler, merges on).
pub struct QueueKnobs(Vec<(String, String)>);

impl QueueKnobs {
    /// Set each `(knob, value)` of device `name`; `None` (nothing changed) when a scheduler
    /// asked for is not offered.
    pub fn set(name: &str, knobs: &[(&str, &str)]) -> Option<QueueKnobs> {
        let mut set = QueueKnobs(Vec::new());
        for &(knob, value) in knobs {
            let path = format!("/sys/block/{name}/queue/{knob}");
            let now = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // `none [mq-deadline] kyber`: the one in brackets is the device's.
            let old = match now.split_once('[') {
                Some((_, rest)) => rest.split(']').next().unwrap_or("none"),
                None => now.trim(),
            };
            if knob == "scheduler" && !now.split(['[', ']', ' ', '\n']).any(|w| w == value) {
                return None;
            }
            set.0.push((path.clone(), old.to_owned()));
            std::fs::write(&path, value).unwrap_or_else(|e| panic!("{path} <- {value}: {e}"));
        }
        Some(set)
    }
}

impl Drop for QueueKnobs {
    fn drop(&mut self) {
        for (path, old) in self.0.iter().rev() {
            let _ = std::fs::write(path, old);
        }
    }
}
