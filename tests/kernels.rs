//! The kernel matrix: the recorder in each kernel `scripts/setup.sh` downloaded from Debian
//! (`<target>/kernels/`: 6.1 cloud, 6.1 PREEMPT_RT, 6.12 cloud), booted in QEMU (TCG, no KVM
//! needed, no root) from an initramfs holding iocap, a static busybox and the kernel's own loop
//! module. In each, `iocap record -c` records two `dd`s with O_DIRECT to and from a loop device
//! over a file in tmpfs; the guest prints what iocap reads back on the serial console, and the
//! test checks it against the workload: each dd's reads and writes counted exactly, the loop
//! device's block requests, no drops, and the per-CPU call slot used exactly where the
//! preemption model allows it (never on PREEMPT_RT). Prints a line per kernel.
//!
//! `IOCAP_VM_BIN` names the binary to boot with (`scripts/test.sh` gives the release binary,
//! `scripts/release.sh`); otherwise the one cargo built for these tests, with the shared
//! libraries it needs. Skipped, saying why, without qemu-system-x86_64, busybox-static or the
//! kernels.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Blocks each dd moves: 4 KiB each, so as many reads and writes, and block requests.
pub const BLOCKS: u64 = 200;

/// Longest a boot may take (TCG on a busy machine; a boot takes ~30 s on an idle one).
const BOOT_TIMEOUT: Duration = Duration::from_secs(300);

/// A kernel unpacked from a Debian package: `kernels/<package>/{boot,lib/modules}`.
#[derive(Debug)]
pub struct Kernel {
    /// The package's name (`linux-image-6.1.0-56-rt-amd64-unsigned`).
    pub name: String,
    /// Its release (`uname -r`).
    pub release: String,
    /// The unpacked package.
    pub root: PathBuf,
}

impl Kernel {
    fn vmlinuz(&self) -> PathBuf {
        self.root.join(format!("boot/vmlinuz-{}", self.release))
    }
}

/// The kernels setup.sh unpacked under the target directory, by package name.
pub fn kernels() -> Vec<Kernel> {
    let Some(dir) = kernels_dir() else { return Vec::new() };
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let root = entry.path();
        let boot = std::fs::read_dir(root.join("boot")).into_iter().flatten().flatten();
        for f in boot {
            let file = f.file_name().to_string_lossy().into_owned();
            if let Some(release) = file.strip_prefix("vmlinuz-") {
                found.push(Kernel {
                    name: entry.file_name().to_string_lossy().into_owned(),
                    release: release.to_owned(),
                    root: root.clone(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// `kernels/` beside the binary's profile directory (`target/kernels`, as setup.sh makes it).
fn kernels_dir() -> Option<PathBuf> {
    Path::new(env!("CARGO_BIN_EXE_iocap"))
        .ancestors()
        .map(|d| d.join("kernels"))
        .find(|d| d.is_dir())
}

/// Why the matrix cannot run here, if it cannot.
pub fn skip_reason() -> Option<String> {
    let missing: Vec<&str> = [("qemu-system-x86_64", "qemu-system-x86"), ("xz", "xz-utils")]
        .into_iter()
        .filter(|(tool, _)| {
            Command::new(tool)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_err()
        })
        .map(|(_, pkg)| pkg)
        .collect();
    if !missing.is_empty() {
        return Some(format!("needs {} (scripts/setup.sh)", missing.join(", ")));
    }
    if busybox().is_none() {
        return Some("needs a static busybox (busybox-static; scripts/setup.sh)".into());
    }
    if kernels().is_empty() {
        return Some("no kernels under <target>/kernels (scripts/setup.sh downloads them)".into());
    }
    None
}

/// Debian's busybox-static: `/bin/busybox`, if it is statically linked.
fn busybox() -> Option<PathBuf> {
    let p = PathBuf::from("/bin/busybox");
    let out = Command::new("ldd").arg(&p).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (p.exists() && (text.contains("not a dynamic") || text.contains("statically linked"))).then_some(p)
}

/// The binary to boot with, and the shared libraries it needs (none for the release binary).
fn binary() -> (PathBuf, Vec<PathBuf>) {
    let bin = std::env::var_os("IOCAP_VM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_iocap")));
    let out = Command::new("ldd").arg(&bin).output().expect("run ldd");
    // "libelf.so.1 => /lib/x86_64-linux-gnu/libelf.so.1 (0x...)", "/lib64/ld-linux-x86-64.so.2 (0x...)"
    let libs = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with('/')).map(PathBuf::from))
        .collect();
    (bin, libs)
}

/// A newc cpio archive, as the kernel unpacks an initramfs.
#[derive(Default)]
struct Cpio(Vec<u8>);

impl Cpio {
    fn entry(&mut self, name: &str, mode: u32, rdev: (u32, u32), data: &[u8]) {
        let ino = self.0.len() as u32 + 1;
        let fields = [
            ino,
            mode,
            0,
            0,
            1,
            0,
            data.len() as u32,
            0,
            0,
            rdev.0,
            rdev.1,
            name.len() as u32 + 1,
            0,
        ];
        self.0.extend_from_slice(b"070701");
        for f in fields {
            self.0.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.0.extend_from_slice(name.as_bytes());
        self.0.push(0);
        self.pad();
        self.0.extend_from_slice(data);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }

    fn dir(&mut self, name: &str) {
        self.entry(name, 0o040755, (0, 0), b"");
    }

    fn file(&mut self, name: &str, mode: u32, data: &[u8]) {
        self.entry(name, 0o100000 | mode, (0, 0), data);
    }

    fn finish(mut self) -> Vec<u8> {
        self.entry("TRAILER!!!", 0, (0, 0), b"");
        self.0
    }
}

/// The kernel's loop module (`.ko`, or `.ko.xz` decompressed: busybox's insmod reads neither xz
/// nor zstd).
fn loop_module(k: &Kernel) -> Vec<u8> {
    let dir = k.root.join(format!("lib/modules/{}/kernel/drivers/block", k.release));
    let plain = dir.join("loop.ko");
    if plain.exists() {
        return std::fs::read(plain).expect("read loop.ko");
    }
    let xz = dir.join("loop.ko.xz");
    let out = Command::new("xz").arg("-dc").arg(&xz).output().expect("run xz");
    assert!(out.status.success(), "xz -dc {} failed", xz.display());
    out.stdout
}

/// The initramfs for `k`: `/init` runs `script` (the guest's side), with iocap, busybox, the
/// loop module and the kernel's config in /boot (where the recorder reads the preemption
/// model from, as on an installed system).
pub fn initramfs(k: &Kernel, script: &str) -> Vec<u8> {
    let (bin, libs) = binary();
    let mut c = Cpio::default();
    for d in [
        "bin", "boot", "dev", "lib", "lib64", "proc", "sys", "tmp", "usr", "usr/lib", "sbin",
    ] {
        c.dir(d);
    }
    // The console init's standard streams are opened on, before devtmpfs is mounted.
    c.entry("dev/console", 0o020600, (5, 1), b"");
    c.file(
        "bin/busybox",
        0o755,
        &std::fs::read(busybox().expect("busybox")).expect("read busybox"),
    );
    c.entry("bin/sh", 0o120777, (0, 0), b"busybox");
    c.file("iocap", 0o755, &std::fs::read(&bin).expect("read the iocap binary"));
    let mut dirs = std::collections::BTreeSet::new();
    for lib in libs {
        // /lib/x86_64-linux-gnu/libelf.so.1 and the loader, at the paths the binary names.
        let name = lib.to_string_lossy().trim_start_matches('/').to_owned();
        let mut parent = Path::new(&name).parent();
        let mut missing = Vec::new();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            missing.push(p.to_string_lossy().into_owned());
            parent = p.parent();
        }
        for d in missing.into_iter().rev() {
            if dirs.insert(d.clone()) && !["lib", "lib64", "usr", "usr/lib"].contains(&d.as_str()) {
                c.dir(&d);
            }
        }
        c.file(&name, 0o755, &std::fs::read(&lib).expect("read a shared library"));
    }
    c.file("loop.ko", 0o644, &loop_module(k));
    let config = std::fs::read(k.root.join(format!("boot/config-{}", k.release))).expect("read the kernel config");
    c.file(&format!("boot/config-{}", k.release), 0o644, &config);
    c.file("init", 0o755, script.as_bytes());
    c.finish()
}

/// How a boot ended.
#[derive(Debug)]
pub struct Boot {
    /// The serial console's output.
    pub console: String,
    /// The guest printed `IOCAP-VM done`: it ran to the end.
    pub finished: bool,
    /// QEMU did not exit in time and was killed.
    pub timed_out: bool,
    /// From QEMU's start to its exit.
    pub took: Duration,
}

/// Boot `k` with `initramfs` under QEMU (TCG, 2 CPUs or `IOCAP_VM_CPUS`, 1 GiB) in `dir` (the console log is kept
/// there as `console.log`), and wait for the guest to power off, at most `timeout`.
///
/// The vCPUs share one host thread (`thread=single`). With one thread each, a 6.12 guest once
/// died of its own text patching: detaching the recorder's sched_switch program turned the
/// tracepoint's jump in `__schedule` back into a NOP, and the CPU that had just patched it then
/// ran the int3 the patch had left there a moment before ("Oops: int3" at `__schedule`, in
/// `tracepoint_probe_unregister`, memory already holding the NOP: a stale translation in TCG, which
/// real CPUs do not have). One thread translates and patches in turn; boots take ~10 % longer.
pub fn boot(k: &Kernel, initramfs: &[u8], dir: &Path, timeout: Duration) -> Boot {
    let img = dir.join("initramfs.cpio");
    std::fs::write(&img, initramfs).expect("write the initramfs");
    let log = dir.join("console.log");
    let _ = std::fs::remove_file(&log);
    let start = Instant::now();
    let mut child = Command::new("qemu-system-x86_64")
        .args(["-accel", "tcg,thread=single", "-cpu", "max", "-m", "1024", "-no-reboot"])
        .args(["-smp", &std::env::var("IOCAP_VM_CPUS").unwrap_or_else(|_| "2".into())])
        .args(["-display", "none", "-monitor", "none", "-nodefaults"])
        .arg("-serial")
        .arg(format!("file:{}", log.display()))
        .arg("-kernel")
        .arg(k.vmlinuz())
        .arg("-initrd")
        .arg(&img)
        // panic=-1: a panic reboots, which -no-reboot turns into QEMU's exit.
        .args(["-append", "console=ttyS0 panic=-1 quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("run qemu-system-x86_64");
    let mut timed_out = false;
    loop {
        if child.try_wait().expect("wait for qemu").is_some() {
            break;
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            timed_out = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let took = start.elapsed();
    let console = String::from_utf8_lossy(&std::fs::read(&log).unwrap_or_default()).replace('\r', "");
    let finished = console.lines().any(|l| l == "IOCAP-VM done");
    Boot {
        console,
        finished,
        timed_out,
        took,
    }
}

/// What the guest printed: `IOCAP-VM key value` lines, and `IOCAP-VM-BEGIN key` ... `IOCAP-VM-END`
/// blocks (a command's whole output).
pub fn guest_output(console: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut block: Option<(String, String)> = None;
    for line in console.lines() {
        if let Some((key, text)) = &mut block {
            if line == "IOCAP-VM-END" {
                out.insert(std::mem::take(key), std::mem::take(text));
                block = None;
            } else {
                text.push_str(line);
                text.push('\n');
            }
        } else if let Some(key) = line.strip_prefix("IOCAP-VM-BEGIN ") {
            block = Some((key.to_owned(), String::new()));
        } else if let Some(kv) = line.strip_prefix("IOCAP-VM ") {
            let (k, v) = kv.split_once(' ').unwrap_or((kv, ""));
            out.insert(k.to_owned(), v.to_owned());
        }
    }
    out
}

/// The guest's side: mount what the recorder needs, load the loop module, set up a loop device
/// over a file in tmpfs and record the workload (`-c`), then print what iocap reads back (each
/// dd's calls on each of its files: its summary on standard error is one more write) and
/// how many BPF programs the recorder had loaded (counted from its open fds while the workload
/// runs: the per-CPU slot adds one, `spill_call`; a second recording with the slot forced off
/// says how many there are without it). `record` false: the same boot without iocap (the
/// control runs of `scripts/rt-boots.sh`).
pub fn guest_script(record: bool) -> String {
    let mut s = String::from(
        r#"#!/bin/sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
dmesg -n 1
say() { echo "IOCAP-VM $*"; }
out() { k=$1; shift; echo "IOCAP-VM-BEGIN $k"; "$@" 2>&1; echo "IOCAP-VM-END"; }
say kernel "$(uname -r)"
say version "$(uname -v)"
say preempt "$(cat /sys/kernel/debug/sched/preempt 2>/dev/null || echo -)"
say cpus "$(nproc)"
insmod /loop.ko || say error insmod loop.ko
[ -b /dev/loop0 ] || mknod /dev/loop0 b 7 0
truncate -s 16M /tmp/disk
losetup /dev/loop0 /tmp/disk || say error losetup
cat > /tmp/work.sh <<EOF
ls -l /proc/\$(pidof iocap)/fd | grep -c bpf-prog > /tmp/progs
dd if=/dev/zero of=/dev/loop0 bs=4096 count=BLOCKS oflag=direct 2>/tmp/dd-w &
echo \$! > /tmp/pid-w
wait
dd if=/dev/loop0 of=/dev/null bs=4096 count=BLOCKS iflag=direct 2>/tmp/dd-r &
echo \$! > /tmp/pid-r
wait
EOF
"#,
    );
    if record {
        s.push_str(
            r#"t0=$(cut -d' ' -f1 /proc/uptime)
/iocap --version > /tmp/version 2>&1; say iocap "$(cat /tmp/version)"
/iocap record -w /tmp/t.cap -c 'sh /tmp/work.sh' > /tmp/rec 2>&1; say record_exit $?
say record_took "$t0 $(cut -d' ' -f1 /proc/uptime)"
out record cat /tmp/rec
say progs_anatomy "$(cat /tmp/progs)"
echo 'ls -l /proc/$(pidof iocap)/fd | grep -c bpf-prog > /tmp/progs' > /tmp/count.sh
/iocap record --no-anatomy -w /tmp/on.cap -c 'sh /tmp/count.sh' > /tmp/rec-on 2>&1 || out record_on cat /tmp/rec-on
say progs "$(cat /tmp/progs)"
IOCAP_CPU_SLOT=0 /iocap record --no-anatomy -w /tmp/off.cap -c 'sh /tmp/count.sh' > /tmp/rec-off 2>&1 || out record_off cat /tmp/rec-off
say progs_slot_off "$(cat /tmp/progs)"
W=$(cat /tmp/pid-w); R=$(cat /tmp/pid-r)
out dd_w cat /tmp/dd-w
out dd_r cat /tmp/dd-r
out info /iocap info /tmp/t.cap --json
out w_write /iocap report /tmp/t.cap "proc.pid=$W and evt.type=write and fd.name=/dev/loop0" --json
out w_read /iocap report /tmp/t.cap "proc.pid=$W and evt.type=read and fd.name=/dev/zero" --json
out r_read /iocap report /tmp/t.cap "proc.pid=$R and evt.type=read and fd.name=/dev/loop0" --json
out r_write /iocap report /tmp/t.cap "proc.pid=$R and evt.type=write and fd.name=/dev/null" --json
out blk_write /iocap report /tmp/t.cap "evt.class=block and blk.dev=loop0 and blk.op=write" --json
out blk_read /iocap report /tmp/t.cap "evt.class=block and blk.dev=loop0 and blk.op=read" --json
"#,
        );
    } else {
        s.push_str("sh /tmp/work.sh\nout dd_w cat /tmp/dd-w\nout dd_r cat /tmp/dd-r\n");
    }
    s.push_str("say done\npoweroff -f\n");
    s.replace("BLOCKS", &BLOCKS.to_string())
}

/// `matched` of a `report --json` block.
fn matched(out: &BTreeMap<String, String>, key: &str) -> Result<u64, String> {
    let text = out.get(key).ok_or_else(|| format!("no `{key}` from the guest"))?;
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{key}: {e}: {text}"))?;
    v["matched"]
        .as_u64()
        .ok_or_else(|| format!("{key}: no `matched`: {text}"))
}

/// Check one boot's output against the workload; the summary line, or what is wrong.
pub fn check(boot: &Boot) -> Result<String, String> {
    if !boot.finished {
        let tail: Vec<&str> = boot.console.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(format!(
            "the guest did not finish ({}, {:.0?}); console's end:\n{}",
            if boot.timed_out { "timed out" } else { "QEMU exited" },
            boot.took,
            tail.join("\n")
        ));
    }
    let out = guest_output(&boot.console);
    let mut errors = Vec::new();
    if let Some(e) = out.get("error") {
        errors.push(format!("guest: {e}"));
    }
    if out.get("record_exit").map(String::as_str) != Some("0") {
        errors.push(format!(
            "iocap record exited {:?}: {}",
            out.get("record_exit"),
            out.get("record").map(String::as_str).unwrap_or("").trim()
        ));
    }
    // The end's hand-over ran (what is in flight at the stop is read through it).
    if let Some(left) = out
        .get("record")
        .and_then(|t| t.lines().find(|l| l.contains("are left out")))
    {
        errors.push(format!("iocap record: {left}"));
    }
    // Every program the kernel has the tracepoints for loads: none refused by its verifier.
    if let Some(refused) = out
        .get("record")
        .and_then(|t| t.lines().find(|l| l.contains("this kernel refuses")))
    {
        errors.push(format!("iocap record: {refused}"));
    }
    let info: serde_json::Value = out
        .get("info")
        .and_then(|t| serde_json::from_str(t).ok())
        .ok_or_else(|| format!("no `info --json` from the guest: {:?}", out.get("info")))?;
    let events = info["events"].as_u64().unwrap_or(0);
    let drops = info["drops"].as_u64();
    if drops != Some(0) {
        errors.push(format!("drops {drops:?}, not 0"));
    }
    if info["clean"] != serde_json::Value::Bool(true) {
        errors.push(format!("the capture is not clean: {info}"));
    }
    let mut counts = Vec::new();
    for (key, want) in [
        ("w_write", BLOCKS),
        ("w_read", BLOCKS),
        ("r_read", BLOCKS),
        ("r_write", BLOCKS),
        ("blk_write", BLOCKS),
        ("blk_read", BLOCKS),
    ] {
        match matched(&out, key) {
            Ok(n) => {
                counts.push(format!("{key} {n}"));
                if n != want {
                    errors.push(format!("{key}: {n}, the workload did {want}"));
                }
            }
            Err(e) => errors.push(e),
        }
    }
    for (key, dd) in [("dd_w", "dd of=/dev/loop0"), ("dd_r", "dd if=/dev/loop0")] {
        let want = format!("{BLOCKS}+0 records in\n{BLOCKS}+0 records out");
        if !out.get(key).is_some_and(|t| t.contains(&want)) {
            errors.push(format!("{dd} did not move {BLOCKS} blocks: {:?}", out.get(key)));
        }
    }
    // The per-CPU slot: only where a program cannot be preempted half-way (none, voluntary).
    let version = out.get("version").cloned().unwrap_or_default();
    let preempt = out.get("preempt").cloned().unwrap_or_default();
    let model = if version.contains("PREEMPT_RT") {
        "rt".to_owned()
    } else {
        preempt
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
            .unwrap_or("?")
            .to_owned()
    };
    let want_slot = matches!(model.as_str(), "none" | "voluntary");
    let progs = |k: &str| out.get(k).and_then(|v| v.trim().parse::<u64>().ok());
    let slot = match (progs("progs"), progs("progs_slot_off")) {
        (Some(auto), Some(off)) if auto == off + 1 => "on",
        (Some(auto), Some(off)) if auto == off => "off",
        (a, o) => {
            errors.push(format!("BPF programs loaded: {a:?}, {o:?} with the slot off"));
            "?"
        }
    };
    if slot != if want_slot { "on" } else { "off" } {
        errors.push(format!("per-CPU slot {slot} with preemption {model}"));
    }
    // The anatomy of calls (the main recording's): sched_waking's program, the fourteen that
    // say why a call blocked (every kernel of the matrix has their tracepoints: the newest
    // of them, lock contention's, came in 5.19), and sched_switch's when the slot did not load
    // it already.
    let anatomy = match (progs("progs_anatomy"), progs("progs")) {
        (Some(a), Some(p)) => a.checked_sub(p),
        _ => None,
    };
    let want_anatomy = if slot == "on" { 15 } else { 16 };
    if anatomy != Some(want_anatomy) {
        errors.push(format!(
            "the anatomy loaded {anatomy:?} programs more, not {want_anatomy}"
        ));
    }
    let took = out
        .get("record_took")
        .and_then(|t| {
            let (a, b) = t.split_once(' ')?;
            Some(b.parse::<f64>().ok()? - a.parse::<f64>().ok()?)
        })
        .unwrap_or(f64::NAN);
    let line = format!(
        "events {events}, drops {}, {}, preemption {model}, cpu slot {slot}; recording {took:.1}s, boot {:.1}s",
        drops.map_or("?".to_owned(), |d| d.to_string()),
        counts.join(", "),
        boot.took.as_secs_f64()
    );
    if errors.is_empty() {
        Ok(line)
    } else {
        Err(format!("{line}\n  {}", errors.join("\n  ")))
    }
}

/// A line on the test's standard error that the harness does not capture, so that the matrix's
/// figures are in every CI log, passing or not.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

#[test]
fn records_exactly_in_each_kernel() {
    if let Some(why) = skip_reason() {
        say(&format!("kernel matrix: {why}: skipped"));
        return;
    }
    let _machine = crate::util::machine_alone();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failed = Vec::new();
    for k in kernels() {
        let boot = boot(&k, &initramfs(&k, &guest_script(true)), dir.path(), BOOT_TIMEOUT);
        match check(&boot) {
            Ok(line) => say(&format!("kernel {}: ok: {line}", k.release)),
            Err(why) => {
                say(&format!("kernel {}: FAILED: {why}", k.release));
                let keep = std::env::temp_dir().join(format!("iocap-vm-{}.log", k.release));
                let _ = std::fs::write(&keep, &boot.console);
                say(&format!("  console log: {}", keep.display()));
                failed.push(k.release);
            }
        }
    }
    assert!(failed.is_empty(), "recording is wrong in {failed:?} (above)");
}

/// `scripts/rt-boots.sh`: boot the PREEMPT_RT kernel `IOCAP_RT_BOOTS` times (10) without iocap
/// (the control) and as many with the recording, interleaved, each with a timeout
/// (`IOCAP_RT_TIMEOUT` seconds, 180); prints each boot's time and outcome and keeps the console
/// log of any boot that did not finish. Fails if one did not, or one's recording was wrong.
#[test]
#[ignore = "minutes of QEMU: scripts/rt-boots.sh"]
fn rt_kernel_boots_repeatedly() {
    if let Some(why) = skip_reason() {
        panic!("{why}");
    }
    let env_n = |k: &str, d: u64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let n = env_n("IOCAP_RT_BOOTS", 10);
    let timeout = Duration::from_secs(env_n("IOCAP_RT_TIMEOUT", 180));
    let k = kernels()
        .into_iter()
        .find(|k| k.release.ends_with("-rt-amd64"))
        .expect("the PREEMPT_RT kernel (scripts/setup.sh)");
    let keep = std::env::temp_dir().join("iocap-rt-boots");
    std::fs::create_dir_all(&keep).expect("mkdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let images = [
        (false, initramfs(&k, &guest_script(false))),
        (true, initramfs(&k, &guest_script(true))),
    ];
    let mut bad = Vec::new();
    for i in 1..=n {
        for (record, image) in &images {
            let what = if *record { "with iocap" } else { "control" };
            let b = boot(&k, image, dir.path(), timeout);
            let outcome = if *record {
                check(&b).map_err(|e| e.lines().next().unwrap_or("").to_owned())
            } else if b.finished {
                Ok(String::new())
            } else {
                Err("did not finish".to_owned())
            };
            let state = if b.timed_out {
                "HUNG"
            } else if b.finished {
                "finished"
            } else {
                "ended early"
            };
            match &outcome {
                Ok(line) => eprintln!("boot {i:2} {what:10}: {state} in {:5.1}s {line}", b.took.as_secs_f64()),
                Err(e) => {
                    let log = keep.join(format!("boot-{i}-{}.log", if *record { "iocap" } else { "control" }));
                    let _ = std::fs::write(&log, &b.console);
                    eprintln!(
                        "boot {i:2} {what:10}: {state} in {:5.1}s: {e}; console: {}",
                        b.took.as_secs_f64(),
                        log.display()
                    );
                    bad.push(format!("boot {i} {what}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{bad:?}");
}
