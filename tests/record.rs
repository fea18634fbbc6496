//! End-to-end tests that really record with BPF (root only; elsewhere they print why and pass).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use iocap_format::{blk_flags, Class, Event, FdType, Liveness, ReadOptions, Reader};
use serde_json::json;

use crate::util::{clock_ns, iocap, machine_alone, machine_shared, root_skip_reason, Ext4, LoopDev};

fn can_record() -> bool {
    if let Some(why) = root_skip_reason() {
        eprintln!("record tests: {why}");
        return false;
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        eprintln!("record tests: no kernel BTF: skipped");
        return false;
    }
    true
}

/// Start a recording test (`None`: it cannot run here, and says why). A recorder starved by
/// another test's flood drops events the test counts on: see [`machine_shared`].
pub(crate) fn recording() -> Option<RwLockReadGuard<'static, ()>> {
    can_record().then(machine_shared)
}

/// Start a test that floods the machine: it runs alone among the time-sensitive tests.
pub(crate) fn flooding() -> Option<RwLockWriteGuard<'static, ()>> {
    can_record().then(machine_alone)
}

const PROG: &str = r#"
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int n = atoi(argv[2]);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char b[64] = {0};
    for (int i = 0; i < n; i++) pwrite(fd, b, sizeof b, (off_t)i * 64);
    fsync(fd);
    close(fd);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    write(sv[0], b, 1);
    int p[2];
    pipe(p);
    write(p[1], b, 2);
    int d = open(argv[3], O_RDONLY | O_DIRECTORY);
    close(d);
    return 0;
}
"#;

/// Compile the C program `src` into `dir/name` (with `-O1 -pthread`).
pub(crate) fn build_c(dir: &Path, name: &str, src: &str) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let bin = dir.join(name);
    let st = Command::new("cc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&bin)
        .arg(&c)
        .status()
        .expect("cc");
    assert!(st.success(), "cc failed on {name}.c");
    bin
}

/// `iocap record --no-block -w cap -c cmd`, which must succeed; its stderr.
fn record_command(cap: &Path, cmd: &str) -> String {
    record_c(&["--no-block"], cap, cmd)
}

/// `iocap record FLAGS -w cap -c cmd`, which must succeed; its stderr.
fn record_c(flags: &[&str], cap: &Path, cmd: &str) -> String {
    let out = iocap()
        .arg("record")
        .args(flags)
        .arg("-w")
        .arg(cap)
        .args(["-c", cmd])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}

fn build_prog(dir: &Path) -> PathBuf {
    build_c(dir, "pwriter", PROG)
}

pub(crate) fn events(r: &Reader<std::fs::File>) -> Vec<Event> {
    r.events().map(|e| e.expect("event decodes")).collect()
}

/// The device number of the disk named `name` in the capture (its header's devices or a later
/// table frame's).
pub(crate) fn dev_of(r: &Reader<std::fs::File>, name: &str) -> u32 {
    r.tables()
        .devices()
        .iter()
        .find(|d| d.name == name)
        .map(|d| d.dev)
        .expect("the loop device is named in the capture")
}

pub(crate) fn nr(name: &str) -> u32 {
    iocap_format::syscalls::number("x86_64", name).unwrap()
}

#[test]
fn exact_pwrites_types_and_names_of_a_short_lived_process() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_prog(dir.path());
    let target = dir.path().join("data.bin");
    let cap = dir.path().join("t.cap");
    let n = 37;
    let cmd = format!("{} {} {n} {}", bin.display(), target.display(), dir.path().display());
    let stderr = record_command(&cap, &cmd);
    assert!(without_refusals(&stderr).starts_with("recording"), "{stderr}");
    let r = Reader::open(&cap).unwrap();
    assert!(r.is_clean());
    let t = r.tables();
    let evs = events(&r);
    let pw: Vec<&Event> = evs
        .iter()
        .filter(|e| e.class == Class::Syscall && e.nr == nr("pwrite64"))
        .collect();
    assert_eq!(pw.len(), n, "pwrite64 events");
    for e in &pw {
        let f = t.file(e.file).expect("pwrite has a file entry");
        assert_eq!(f.kind, FdType::File);
        assert_eq!(t.string(f.name), target.to_str().unwrap());
        let p = t.proc(e.proc).expect("proc entry");
        assert_eq!(t.string(p.name), "pwriter");
        assert_eq!(e.bytes, 64);
        assert!(e.latency > 0);
    }
    let pid = pw[0].pid;
    let kind_of = |call: &str| -> Vec<FdType> {
        evs.iter()
            .filter(|e| e.pid == pid && e.nr == nr(call) && e.file != 0)
            .map(|e| t.file(e.file).unwrap().kind)
            .collect()
    };
    assert_eq!(kind_of("fsync"), vec![FdType::File]);
    // write(sv[0]) and write(p[1]), in that order.
    assert_eq!(kind_of("write"), vec![FdType::Unix, FdType::Pipe]);
    // Each entry's process, kept on request.
    let whole = Reader::open_with(
        &cap,
        ReadOptions {
            file_details: true,
            ..ReadOptions::default()
        },
    )
    .unwrap();
    let dirs: Vec<_> = whole
        .tables()
        .file_entries()
        .expect("kept on request")
        .into_iter()
        .filter(|f| f.pid == pid && f.kind == FdType::Directory)
        .map(|f| t.string(f.name).to_owned())
        .collect();
    assert_eq!(dirs, vec![dir.path().to_str().unwrap().to_owned()]);
}

/// A tree walk back up by `..` relative to its directories (as find's fts does), `..` past
/// a symbolic link, chdir and fchdir.
const WALKER: &str = r#"
#include <fcntl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (chdir(argv[1])) return 1;
    int w = open("walk/a/b", O_RDONLY | O_DIRECTORY);
    for (int i = 0; i < 50; i++) {
        int up = openat(w, "..", O_RDONLY | O_DIRECTORY);
        int down = openat(up, "b", O_RDONLY | O_DIRECTORY);
        close(w);
        close(up);
        w = down;
    }
    close(openat(w, "../../f2", O_RDONLY));
    int l = open("srv/link", O_RDONLY | O_DIRECTORY);
    int lu = openat(l, "..", O_RDONLY | O_DIRECTORY);
    close(openat(lu, "f", O_RDONLY));
    if (chdir("other")) return 1;
    close(open("g", O_RDONLY));
    if (fchdir(lu)) return 1;
    close(open("x/h", O_RDONLY));
    return 0;
}
"#;

#[test]
fn paths_walked_back_up_and_after_a_chdir_name_the_files_opened() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for d in ["walk/a/b", "data/x", "srv", "other"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for f in ["walk/f2", "data/f", "data/x/h", "other/g"] {
        std::fs::write(root.join(f), b"").unwrap();
    }
    std::os::unix::fs::symlink(root.join("data/x"), root.join("srv/link")).unwrap();
    let bin = build_c(dir.path(), "walker", WALKER);
    let cap = dir.path().join("t.cap");
    record_command(&cap, &format!("{} {}", bin.display(), root.display()));
    let r = Reader::open_with(
        &cap,
        ReadOptions {
            file_details: true,
            ..ReadOptions::default()
        },
    )
    .unwrap();
    let t = r.tables();
    let pid = t
        .procs()
        .iter()
        .find(|p| t.string(p.name) == "walker")
        .expect("the walker's process")
        .pid;
    let names: std::collections::BTreeSet<String> = t
        .file_entries()
        .expect("kept on request")
        .into_iter()
        .filter(|f| f.pid == pid && t.string(f.name).starts_with(root.to_str().unwrap()))
        .map(|f| t.string(f.name).to_owned())
        .collect();
    let at = |p: &str| format!("{}/{p}", root.display());
    // The walk's names stay as short as its directories': no `a/b/../b/..` growing 50 times.
    // Past the link, `..` is the parent of the link's target (data): kept as opened, which
    // still names it; what is opened from there goes on from it.
    let want: std::collections::BTreeSet<String> = [
        "walk/a/b",
        "walk/a",
        "walk/f2",
        "srv/link",
        "srv/link/..",
        "srv/link/../f",
        "other/g",
        "srv/link/../x/h",
    ]
    .iter()
    .map(|p| at(p))
    .collect();
    assert_eq!(names, want);
    for n in &names {
        assert!(Path::new(n).exists(), "{n} names no file");
    }
}

fn diskstats_writes(name: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/diskstats").unwrap();
    s.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&name))
        .and_then(|f| f.get(7)?.parse().ok())
        .unwrap_or(0)
}

/// Record `cmd`'s block requests into `cap`; returns the writes /proc/diskstats counted on
/// `disk` meanwhile.
fn record_writes(cap: &Path, cmd: &str, disk: &str) -> u64 {
    record_writes_env(cap, cmd, disk, &[]).0
}

/// [`record_writes`] with `env` set for the recorder; and what the recorder printed on standard
/// error.
fn record_writes_env(cap: &Path, cmd: &str, disk: &str, env: &[(&str, &str)]) -> (u64, String) {
    let before = diskstats_writes(disk);
    let out = iocap()
        .envs(env.iter().copied())
        .args(["record", "--no-syscalls", "-w"])
        .arg(cap)
        .args(["-c", cmd])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (diskstats_writes(disk) - before, stderr)
}

/// A loop device over a new image of `mib` MiB of zeros in `dir`, and its name.
fn scratch_disk(dir: &Path, mib: usize) -> (LoopDev, String) {
    let img = dir.join("disk.img");
    std::fs::write(&img, vec![0u8; mib << 20]).unwrap();
    let dev = LoopDev::attach(&img);
    let name = dev.name().to_owned();
    (dev, name)
}

#[test]
fn dd_direct_on_a_loop_device_matches_diskstats() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (dev, name) = scratch_disk(dir.path(), 8);
    let cap = dir.path().join("dd.cap");
    let cmd = format!(
        "dd if=/dev/zero of={} bs=64k count=20 oflag=direct status=none",
        dev.path
    );
    let kernel = record_writes(&cap, &cmd, &name);
    let r = Reader::open(&cap).unwrap();
    let t = r.tables();
    let evs = events(&r);
    let loop_dev = dev_of(&r, &name);
    let on_loop: Vec<&Event> = evs
        .iter()
        .filter(|e| e.class == Class::Block && e.dev == loop_dev)
        .collect();
    let writes = on_loop
        .iter()
        .filter(|e| e.op == iocap_format::BlockOp::Write as u8)
        .count() as u64;
    assert!(writes >= 20, "at least one write per dd block, got {writes}");
    assert_eq!(writes, kernel, "block write events vs /proc/diskstats writes completed");
    assert_eq!(on_loop.iter().map(|e| e.bytes).sum::<u64>(), 20 * 65536);
    for e in on_loop {
        assert_eq!(t.string(t.proc(e.proc).unwrap().name), "dd");
    }
}

/// Every write fio makes, as the kernel counts it (/proc/diskstats writes completed), is in
/// the capture, or in the count of requests whose completion never reached the recorder. Here
/// the kernel now and then completes a whole iodepth's requests without firing
/// block_rq_complete (6 runs: 0, 0, 16, 0, 32, 0 of 200,000; bpftrace on its tracepoints
/// missed 20 of 1.7 M reads alone), and the capture and its count made up diskstats' figure
/// exactly each time. Writes, so that a probe reading the new device (udev's blkid, not the
/// recorded command) counts in neither.
#[test]
fn fio_writes_are_in_the_capture_or_counted_unseen_as_diskstats_counts_them() {
    let Some(_alone) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (dev, name) = scratch_disk(dir.path(), 64);
    let cap = dir.path().join("fio.cap");
    let json = dir.path().join("fio.json");
    const IOS: u64 = 200_000;
    let cmd = format!(
        "fio --name=w --filename={} --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
         --iodepth=16 --number_ios={IOS} --size=64M --io_size={} --norandommap --output-format=json \
         --output={}",
        dev.path,
        IOS * 4096,
        json.display()
    );
    let kernel = record_writes(&cap, &cmd, &name);
    let fio: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        fio["jobs"][0]["write"]["total_ios"].as_u64(),
        Some(IOS),
        "fio's own count"
    );
    let r = Reader::open(&cap).unwrap();
    // Every chunk the recorder wrote is followed by its rollup, as the chunk's events make it.
    let (mut dec, mut cols) = (iocap_format::ChunkDecoder::new(), iocap_format::Columns::default());
    assert!(r.chunks().len() > 1);
    for i in 0..r.chunks().len() {
        r.read_chunk(i, iocap_format::ColSet::ALL, &mut dec, &mut cols).unwrap();
        let made = iocap_format::Rollup::of(&cols, r.chunks()[i].offset);
        assert_eq!(
            r.rollup_with_cells(i, &mut dec)
                .and_then(iocap_format::Rollup::into_decoded),
            Some(made),
            "chunk {i}"
        );
    }
    let loop_dev = dev_of(&r, &name);
    let writes = events(&r)
        .iter()
        .filter(|e| e.class == Class::Block && e.dev == loop_dev && e.op == iocap_format::BlockOp::Write as u8)
        .count() as u64;
    // The loop device's own: fio's other requests (its program's pages read in, on the
    // machine's disk) count on that disk.
    let (unseen, drops) = (r.unseen_by_disk().get(&loop_dev).copied().unwrap_or(0), r.drops());
    eprintln!("diskstats {kernel} writes; capture {writes}, unseen {unseen}, drops {drops}");
    // Neighbours merged into one request count once: a few.
    assert!(
        kernel >= IOS * 9 / 10,
        "diskstats counted {kernel} writes of fio's {IOS}"
    );
    // None twice; drops (the recorder behind) and unseen completions may hide some, nothing
    // else may.
    assert!(
        writes <= kernel && kernel <= writes + unseen + drops,
        "diskstats {kernel} writes; capture {writes} + unseen {unseen} (drops {drops})"
    );
    assert!(unseen <= kernel / 1000, "a few untraced completions, not {unseen}");
}

/// A request whose completion no BPF program saw (the kernel runs none for a few: README,
/// "unseen") is counted on its own disk. With no program for completions at all
/// (IOCAP_LOSE_COMPLETIONS=1), every write dd makes on a loop device is counted there, each
/// once: when its request's address is used again, or by the iterators at the stop.
#[test]
fn requests_whose_completion_no_program_saw_are_counted_unseen_on_their_disk() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (dev, name) = scratch_disk(dir.path(), 8);
    let cap = dir.path().join("lost.cap");
    let cmd = format!(
        "dd if=/dev/zero of={} bs=64k count=40 oflag=direct status=none",
        dev.path
    );
    let (kernel, stderr) = record_writes_env(&cap, &cmd, &name, &[("IOCAP_LOSE_COMPLETIONS", "1")]);
    assert!(kernel >= 40, "diskstats counted {kernel} writes of dd's 40");
    let r = Reader::open(&cap).unwrap();
    let loop_dev = dev_of(&r, &name);
    assert_eq!(
        r.unseen_by_disk().get(&loop_dev),
        Some(&kernel),
        "{:?}",
        r.unseen_by_disk()
    );
    // Other disks (dd's own pages read in) count apart; the total is their sum.
    assert_eq!(r.unseen(), r.unseen_by_disk().values().sum::<u64>());
    assert!(!events(&r).iter().any(|e| e.class == Class::Block && e.dev == loop_dev));
    assert!(stderr.contains(&format!("{name} {kernel}")), "{stderr}");
    let info = iocap().args(["info", "--json"]).arg(&cap).output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(
        info["unseen_block_requests_by_disk"][&name].as_u64(),
        Some(kernel),
        "{info}"
    );
}

/// A loop device whose requests get stuck: its backing file lies on an ext4 (itself on a loop
/// device) frozen with `fsfreeze`, so its worker blocks on the first request it takes until
/// the thaw. Thawed on drop (a failed assertion must not leave a writer blocked on it), its
/// requests then drained, the devices detached and the filesystem unmounted.
struct StuckDisk {
    /// The stuck device.
    up: LoopDev,
    mnt: PathBuf,
    _low: Ext4,
}

impl StuckDisk {
    /// Made in `dir`, frozen already.
    fn new(dir: &Path) -> StuckDisk {
        let low = Ext4::new(dir, 32);
        let mnt = low.mnt.clone();
        let up_img = mnt.join("up.img");
        std::fs::write(&up_img, vec![0u8; 1 << 20]).unwrap();
        let up = LoopDev::attach(&up_img);
        let st = Command::new("fsfreeze").arg("-f").arg(&mnt).status();
        assert!(st.is_ok_and(|s| s.success()), "fsfreeze -f {}", mnt.display());
        StuckDisk { up, mnt, _low: low }
    }
}

impl Drop for StuckDisk {
    fn drop(&mut self) {
        let _ = Command::new("fsfreeze").arg("-u").arg(&self.mnt).status();
        let inflight = format!("/sys/block/{}/inflight", self.up.name());
        for _ in 0..100 {
            let idle = std::fs::read_to_string(&inflight).map_or(true, |s| s.split_whitespace().all(|n| n == "0"));
            if idle {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// A write stuck when the recording stops is in the capture, unfinished: its call and its
/// block request, each with its latency counted to the stop. The request is stuck for real:
/// the loop device it goes to writes into a file on a filesystem frozen meanwhile, so its
/// worker blocks (/sys/block/*/inflight says 1) until the thaw, long after the stop.
#[test]
fn a_write_stuck_at_the_stop_is_recorded_unfinished_with_its_request() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let stuck = StuckDisk::new(dir.path());
    let (up, name) = (&stuck.up, stuck.up.name().to_owned());
    let cap = dir.path().join("stuck.cap");
    // dd in the background, off the recorder's pipes (it outlives the recording); the
    // command ends, and with it the recording, a second later.
    let cmd = format!(
        "dd if=/dev/zero of={} bs=4k count=1 oflag=direct status=none </dev/null >/dev/null 2>&1 & sleep 1",
        up.path
    );
    // `iocap record -c CMD` with the environment `env` (IOCAP_HIDE, ...); its standard error.
    let record = |cap: &Path, env: &[(&str, &str)]| {
        let out = iocap()
            .envs(env.iter().copied())
            .args(["record", "-w"])
            .arg(cap)
            .args(["-c", &cmd])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    };
    let err = record(&cap, &[]);
    assert!(err.contains("2 still in flight at the stop"), "{err}");
    let r = Reader::open(&cap).unwrap();
    let dev = dev_of(&r, &name);
    let evs = events(&r);
    let unfinished: Vec<&Event> = evs.iter().filter(|e| e.unfinished()).collect();
    assert_eq!(
        unfinished.len(),
        2,
        "the write and its request, nothing else: {unfinished:?}"
    );
    let call = unfinished
        .iter()
        .find(|e| e.class == Class::Syscall)
        .expect("the write call");
    let req = unfinished
        .iter()
        .find(|e| e.class == Class::Block)
        .expect("its block request");
    let pid = call.pid;
    let comm = r
        .tables()
        .procs()
        .iter()
        .find(|p| p.id == call.proc)
        .map(|p| r.tables().string(p.name).to_owned());
    assert_eq!(comm.as_deref(), Some("dd"));
    assert_eq!(iocap_format::syscalls::name("x86_64", call.nr), Some("write"));
    // Entered within the second before the stop, blocked since: latency to the stop.
    let stop = r.stop_ts();
    assert!(
        call.latency >= 500_000_000 && call.end() <= stop,
        "{call:?}, stop {stop}"
    );
    assert_eq!((call.ret, call.bytes, call.disk_reqs, call.disk_bytes), (0, 0, 1, 4096));
    assert!(call.disk_time > 0 && call.disk_time <= call.latency, "{call:?}");
    assert_eq!(
        (req.dev, req.pid, req.bytes, req.op),
        (dev, pid, 4096, iocap_format::BlockOp::Write as u8)
    );
    assert_eq!(req.ts - req.link, call.ts, "the request names its call");
    assert_eq!(req.end(), call.end(), "both run to the same stop");
    assert_eq!(r.unseen(), 0);
    // What the filter language and `events` make of them.
    let (code, text, err) =
        crate::util::run(&["events", cap.to_str().unwrap(), "evt.unfinished", "and", "proc.name=dd"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(rows.len(), 2, "{text}");
    assert!(rows.iter().all(|l| l.contains(" unfin ")), "{text}");

    // Without the task iterator that hands over the calls in flight, userspace reads them
    // from each thread's task storage: the same two, as they stood at the stop. A kernel
    // without the helper the iterator looks through the CPUs' call slots with (before 5.19),
    // one that hides the iterator, and one whose verifier rejects it (as some security
    // policies refuse iterators: the recorder probes by loading); each capture says which
    // hand-over it lacks, and why.
    let same = |e: &Event| (e.class, e.nr, e.ret, e.disk_reqs, e.disk_bytes, e.bytes, e.op, e.dev);
    let want: Vec<_> = unfinished.iter().map(|e| same(e)).collect();
    for (name, env, says) in [
        (
            "old",
            ("IOCAP_HIDE", "map_lookup_percpu_elem"),
            "the BPF helper bpf_map_lookup_percpu_elem (Linux 5.19 and later): calls in flight when the \
             recording stops are read from userspace instead",
        ),
        (
            "hidden",
            ("IOCAP_HIDE", "iter_task"),
            "BPF task iterators (iter/task) (Linux 5.8 and later): calls in flight when the recording \
             stops are read from userspace instead",
        ),
        (
            "refused",
            ("IOCAP_REFUSE", "end_calls"),
            "this kernel refuses BPF task iterators (iter/task) (end_calls: Permission denied; the verifier: \
             R0 invalid mem access 'scalar'): calls in flight when the recording stops are read from \
             userspace instead",
        ),
    ] {
        let cap = dir.path().join(format!("stuck-{name}.cap"));
        let err = record(&cap, &[env]);
        assert!(err.contains(says), "{name}: {err}");
        assert!(err.contains("2 still in flight at the stop"), "{name}: {err}");
        let r = Reader::open(&cap).unwrap();
        assert!(
            r.meta().missing.iter().any(|m| m.starts_with(says)),
            "{name}: {:?}",
            r.meta().missing
        );
        let mut got: Vec<Event> = events(&r).into_iter().filter(|e| e.unfinished()).collect();
        got.sort_by_key(|e| e.class as u8);
        let mut want = want.clone();
        want.sort_by_key(|w| w.0 as u8);
        assert_eq!(got.iter().map(same).collect::<Vec<_>>(), want, "{name}: {got:?}");
        let call = got.iter().find(|e| e.class == Class::Syscall).unwrap();
        let req = got.iter().find(|e| e.class == Class::Block).unwrap();
        assert!(call.latency >= 500_000_000 && call.disk_time > 0, "{name}: {call:?}");
        assert_eq!(
            (req.ts - req.link, req.end(), req.pid),
            (call.ts, call.end(), call.pid),
            "{name}"
        );
    }
}

/// How a line saying the kernel refused one of iocap's optional programs begins (on machines
/// whose policy refuses the task iterator, every recording says it first).
pub(crate) const REFUSES: &str = "iocap: this kernel refuses ";

/// `stderr` without the lines saying what the kernel refuses.
pub(crate) fn without_refusals(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.starts_with(REFUSES))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `iocap record ARGS -w CAP` started, once it says it is recording (every probe attached);
/// its standard error to read the rest of.
pub(crate) fn start_recording(
    args: &[&str],
    cap: &Path,
) -> (std::process::Child, std::io::BufReader<std::process::ChildStderr>) {
    let mut rec = iocap()
        .arg("record")
        .args(args)
        .arg("-w")
        .arg(cap)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(rec.stderr.take().unwrap());
    let mut line = String::new();
    // What the kernel refuses is said first (a security policy that refuses the task iterator).
    loop {
        line.clear();
        std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        if !line.starts_with(REFUSES) {
            break;
        }
    }
    assert!(line.starts_with("recording"), "{line}");
    (rec, stderr)
}

/// Requests queued behind a stuck device when the recording stops are in the capture too:
/// with mq-deadline and merges off, fio's 160 writes in flight on a device whose driver takes
/// 128 (loop's hw_queue_depth) leave 32 waiting in the scheduler, inserted and never issued.
/// Each is unfinished, issued at the stop with no latency, its wait so far its queue time; the
/// 128 issued run to the stop. /proc's view agrees: the kernel counts 128 in flight.
#[test]
fn requests_queued_behind_a_stuck_device_are_recorded_unfinished() {
    let Some(_running) = recording() else { return };
    if !crate::util::tools("requests_queued_behind_a_stuck_device", &["fio"]) {
        return;
    }
    let depth: usize = std::fs::read_to_string("/sys/module/loop/parameters/hw_queue_depth")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(128);
    const IOS: usize = 160;
    if depth >= IOS {
        eprintln!("requests_queued_behind_a_stuck_device: loop takes {depth} requests at once: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The device's queue settings are put back at the end, as they outlive the detach: after
    // the disk is thawed (declared first, dropped last), since changing the scheduler waits
    // for the requests in flight.
    let knobs;
    let stuck = StuckDisk::new(dir.path());
    let name = stuck.up.name().to_owned();
    knobs = crate::util::QueueKnobs::set(&name, &[("scheduler", "mq-deadline"), ("nomerges", "2")]);
    assert!(knobs.is_some(), "mq-deadline");
    let cap = dir.path().join("queued.cap");
    // fio in the background, off the recorder's pipes: it outlives the recording.
    let cmd = format!(
        "fio --name=queued --filename={} --rw=randwrite --bs=4k --direct=1 --ioengine=libaio \
         --iodepth={IOS} --size=1m --output=/dev/null </dev/null >/dev/null 2>&1 & sleep 2",
        stuck.up.path
    );
    let err = record_c(&[], &cap, &cmd);
    let r = Reader::open(&cap).unwrap();
    let (dev, stop) = (dev_of(&r, &name), r.stop_ts());
    let open: Vec<Event> = events(&r)
        .into_iter()
        .filter(|e| e.unfinished() && e.class == Class::Block && e.dev == dev)
        .collect();
    let (queued, issued): (Vec<&Event>, Vec<&Event>) = open.iter().partition(|e| e.latency == 0);
    assert_eq!((issued.len(), queued.len()), (depth, IOS - depth), "{err}");
    // The recorder's stop (when its programs stopped tracking), a little before the capture's.
    let end = issued[0].end();
    assert!(end <= stop);
    assert!(
        issued.iter().all(|e| e.end() == end && e.latency >= 1_000_000_000),
        "{issued:?}"
    );
    for e in &queued {
        assert_eq!(e.ts, end, "issued at the stop: {e:?}");
        assert!(e.flags & blk_flags::QUEUED != 0, "its insert seen: {e:?}");
        assert!(
            e.queue >= 1_000_000_000,
            "waiting since before the second's sleep: {e:?}"
        );
        assert_eq!((e.bytes, e.op), (4096, iocap_format::BlockOp::Write as u8));
    }
    let inflight = std::fs::read_to_string(format!("/sys/block/{name}/inflight")).unwrap();
    assert_eq!(
        inflight.split_whitespace().nth(1),
        Some(depth.to_string().as_str()),
        "{inflight}"
    );
}

/// Ctrl-C while a traced process waits in `read` on an empty FIFO: the read is in the
/// capture, unfinished, timed from its start to the stop (the path a user takes: `-p`, then
/// SIGINT).
#[test]
fn ctrl_c_keeps_a_read_still_waiting() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (fifo, go) = (dir.path().join("fifo"), dir.path().join("go"));
    let st = Command::new("mkfifo").arg(&fifo).arg(&go).status().unwrap();
    assert!(st.success());
    // It waits on `go` until the recording runs (a call entered before it is not known),
    // then opens the FIFO read-write, so that the open does not wait for a writer, and reads.
    let script = format!("read g <{}; exec 3<>{}; read x <&3", go.display(), fifo.display());
    let mut waiter = Command::new("sh").args(["-c", &script]).spawn().unwrap();
    let pid = waiter.id();
    let cap = dir.path().join("fifo.cap");
    let (mut rec, mut stderr) = start_recording(&["--no-block", "-p", &pid.to_string()], &cap);
    std::fs::write(&go, "go\n").unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(unsafe { libc::kill(rec.id() as i32, libc::SIGINT) }, 0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rec.wait().unwrap().success(), "{rest}");
    let _ = waiter.kill();
    let _ = waiter.wait();
    assert!(rest.contains("1 still in flight at the stop"), "{rest}");
    let r = Reader::open(&cap).unwrap();
    let open: Vec<Event> = events(&r).into_iter().filter(|e| e.unfinished()).collect();
    assert_eq!(open.len(), 1, "{open:?}");
    let e = &open[0];
    // dash reads `<&3` through fd 0, a copy of the FIFO's fd.
    assert_eq!((e.pid, e.nr, e.fd, e.ret), (pid, nr("read"), 0, 0), "{e:?}");
    let t = r.tables();
    let file = t.file(e.file).map(|f| t.string(f.name));
    assert_eq!(file, fifo.to_str(), "{e:?}");
    assert!(e.latency >= 500_000_000 && e.end() <= r.stop_ts(), "{e:?}");
}

/// Stopped in the middle of fio's random reads (16 in flight on a loop device, completing
/// in microseconds, so most of those in flight at the stop complete while the recorder
/// collects them): each operation is in the capture once, finished or not, and what is
/// unfinished is at most what fio keeps in flight.
#[test]
fn stopped_under_load_each_operation_is_recorded_once() {
    let Some(_alone) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (dev, name) = scratch_disk(dir.path(), 64);
    let mut fio = Command::new("fio")
        .args([
            "--name=r",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=16",
        ])
        .args(["--size=64M", "--time_based", "--runtime=20", "--output=/dev/null"])
        .arg(format!("--filename={}", dev.path))
        .stdin(Stdio::null())
        .spawn()
        .expect("run fio");
    std::thread::sleep(Duration::from_millis(500));
    let cap = dir.path().join("load.cap");
    let out = iocap().args(["record", "-d", "1s", "-w"]).arg(&cap).output().unwrap();
    let _ = fio.kill();
    let _ = fio.wait();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = Reader::open(&cap).unwrap();
    let loop_dev = dev_of(&r, &name);
    let evs = events(&r);
    let mut seen = std::collections::HashSet::new();
    for e in &evs {
        let key = (e.class as u8, e.tid, e.ts, e.dev, e.sector);
        assert!(seen.insert(key), "recorded twice: {e:?}");
    }
    let reads = evs.iter().filter(|e| e.class == Class::Block && e.dev == loop_dev);
    let (done, open): (Vec<&Event>, Vec<&Event>) = reads.partition(|e| !e.unfinished());
    let mut calls_open = std::collections::HashMap::new();
    for e in evs.iter().filter(|e| e.class == Class::Syscall && e.unfinished()) {
        *calls_open.entry(e.tid).or_insert(0) += 1;
    }
    eprintln!(
        "fio: {} reads done, {} unfinished; calls unfinished in {} threads",
        done.len(),
        open.len(),
        calls_open.len()
    );
    assert!(done.len() > 1000, "fio ran meanwhile: {}", done.len());
    assert!(open.len() <= 16, "at most fio's iodepth in flight: {}", open.len());
    let stop = r.stop_ts();
    assert!(open.iter().all(|e| e.end() <= stop), "unfinished ones run to the stop");
    assert!(
        !calls_open.is_empty(),
        "some thread was in a call at the stop (fio's, the recorder's caller)"
    );
    assert!(
        calls_open.values().all(|&n| n == 1),
        "a thread is in one call at most: {calls_open:?}"
    );
}

/// `iocap info --json FILE`, parsed.
fn info_json(cap: &Path) -> serde_json::Value {
    let (code, out, err) = crate::util::run(&["info", "--json", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// While the recorder writes, the file reads as live (its unwritten end is not damage, for a
/// reader and for `info`); killed, it reads as recovered, with what was lost said.
#[test]
fn a_live_recording_is_not_damaged_and_sigkill_leaves_a_recoverable_file() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("k.cap");
    let mut child = iocap()
        .args(["record", "-w"])
        .arg(&cap)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Seconds: several flushes (at least every 500 ms) have happened.
    std::thread::sleep(Duration::from_millis(2500));
    let mut r = Reader::open(&cap).expect("a live recording opens");
    assert_eq!(r.liveness(), Liveness::Live);
    assert_eq!(r.meta().next_file, None, "no rotation, no next file");
    assert_eq!(r.recovery(), None, "a live file is not damaged");
    assert!(!r.is_clean());
    let v = info_json(&cap);
    assert_eq!(
        (&v["live"], &v["clean"], &v["recovery"]),
        (&json!(true), &json!(false), &json!(null))
    );
    let (_, text, _) = crate::util::run(&["info", cap.to_str().unwrap()]);
    assert!(text.contains("clean        no: being recorded"), "{text}");
    let first = r.event_count();
    std::thread::sleep(Duration::from_millis(1000));
    let grown = r.refresh().unwrap();
    assert!(grown.chunks > 0 && r.event_count() > first, "it grew: {grown:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    r.refresh().unwrap();
    assert_eq!(r.liveness(), Liveness::Recovered);
    let why = r.recovery().expect("a killed recording says what it lacks");
    assert!(why.contains("did not finish"), "{why}");
    let r = Reader::open(&cap).expect("a killed recording opens");
    assert!(!r.is_clean());
    assert_eq!(r.liveness(), Liveness::Recovered);
    assert!(r.event_count() > 0);
    assert_eq!(info_json(&cap)["live"], json!(false));
}

/// With `-C`, the files before the current one are finished, and the current one is live.
#[test]
fn a_rotation_s_earlier_files_are_finished_while_the_current_one_is_live() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("live-rot.cap");
    let mut rec = iocap()
        .args(["record", "--no-block", "-w"])
        .arg(&cap)
        .args(["-C", "200KB"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut load = Command::new("sh")
        .args([
            "-c",
            "while :; do dd if=/dev/zero of=/dev/null bs=1 count=20000 status=none; done",
        ])
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while rotated(&cap).len() < 3 && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
    }
    // Read again if a rotation happened meanwhile: the newest must stay the newest throughout.
    let (files, states) = loop {
        let files = rotated(&cap);
        let states: Vec<(Liveness, Option<String>)> = files
            .iter()
            .map(|(_, p)| {
                let r = Reader::open(p).unwrap();
                (r.liveness(), r.recovery().map(str::to_owned))
            })
            .collect();
        if rotated(&cap) == files {
            break (files, states);
        }
    };
    let _ = load.kill();
    let _ = load.wait();
    let _ = rec.kill();
    let _ = rec.wait();
    assert!(files.len() >= 3, "rotated: {files:?}");
    for (n, s) in states.iter().enumerate() {
        // The newest two may be finishing as they are read (a rotation), but are never damaged.
        if n + 2 < states.len() {
            assert_eq!(s, &(Liveness::Finished, None), "file {n}");
        } else {
            assert_ne!(s.0, Liveness::Recovered, "file {n}: {s:?}");
            assert_eq!(s.1, None, "file {n}");
        }
    }
    assert_eq!(
        states.last().unwrap().0,
        Liveness::Live,
        "the newest file is being written"
    );
}

/// Run `iocap record ARGS`; returns the number of events it says it wrote, after asserting success.
fn record_ok(args: &[&str]) -> (u64, String) {
    let out = iocap().arg("record").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let wrote = stderr
        .split("iocap: wrote ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `wrote N events` in {stderr}"));
    (wrote, stderr)
}

#[test]
fn record_filter_on_proc_name_keeps_one_of_two_processes() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_prog(dir.path());
    let (alpha, beta) = (dir.path().join("alpha"), dir.path().join("beta"));
    std::fs::copy(&bin, &alpha).unwrap();
    std::fs::copy(&bin, &beta).unwrap();
    let d = dir.path().display();
    let cmd = format!(
        "{} {d}/a.bin 23 {d}; {} {d}/b.bin 31 {d}",
        alpha.display(),
        beta.display()
    );
    let cap = dir.path().join("f.cap");
    let cap_s = cap.to_str().unwrap();
    let (wrote, _) = record_ok(&["--no-block", "-w", cap_s, "-c", &cmd, "proc.name=alpha"]);
    let r = Reader::open(&cap).unwrap();
    assert!(r.is_clean());
    assert_eq!(r.meta().filter.as_deref(), Some("proc.name=alpha"));
    let t = r.tables();
    let evs = events(&r);
    assert_eq!(evs.len() as u64, wrote);
    for e in &evs {
        let p = t.proc(e.proc).expect("a kept event's process is in the file");
        assert_eq!(t.string(p.name), "alpha", "{e:?}");
    }
    let pw: Vec<&Event> = evs.iter().filter(|e| e.nr == nr("pwrite64")).collect();
    assert_eq!(pw.len(), 23, "alpha's pwrites, none of beta's 31");
    for e in pw {
        let f = t.file(e.file).expect("a kept event's file is in the file");
        assert_eq!(t.string(f.name), format!("{d}/a.bin"));
    }
}

#[test]
fn system_wide_filter_on_syscall_and_name_is_decided_in_the_kernel_and_loses_nothing() {
    // No -c: the kernel's syscall-number and process-name checks alone narrow the whole
    // system. The socketpair, pipe and openat calls are not wanted but must still be
    // followed, or the kept writes would have no fd types.
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("pwuniq");
    std::fs::copy(build_prog(dir.path()), &bin).unwrap();
    let cap = dir.path().join("sys.cap");
    let filter = "proc.name=pwuniq and evt.type in (pwrite64, fsync, write)";
    let (mut rec, mut stderr) = start_recording(&["--no-block", filter], &cap);
    let target = dir.path().join("data.bin");
    for n in [37, 5] {
        let st = Command::new(&bin)
            .arg(&target)
            .arg(n.to_string())
            .arg(dir.path())
            .status();
        assert!(st.unwrap().success());
    }
    let st = Command::new("kill").args(["-INT", &rec.id().to_string()]).status();
    assert!(st.unwrap().success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rec.wait().unwrap().success(), "{rest}");
    let r = Reader::open(&cap).unwrap();
    let t = r.tables();
    let evs = events(&r);
    let count = |call: &str| evs.iter().filter(|e| e.nr == nr(call)).count();
    assert_eq!((count("pwrite64"), count("fsync"), count("write")), (42, 2, 4));
    assert_eq!(evs.len(), 48, "nothing but the wanted calls");
    for e in &evs {
        assert_eq!(t.string(t.proc(e.proc).unwrap().name), "pwuniq");
        assert!(e.latency > 0);
    }
    let kinds: Vec<FdType> = evs
        .iter()
        .filter(|e| e.nr == nr("write"))
        .map(|e| t.file(e.file).expect("the written fd is known").kind)
        .collect();
    assert_eq!(kinds, [FdType::Unix, FdType::Pipe, FdType::Unix, FdType::Pipe]);
    for e in evs.iter().filter(|e| e.nr == nr("pwrite64")) {
        assert_eq!(t.string(t.file(e.file).unwrap().name), target.to_str().unwrap());
    }
}

const THREADS: &str = r#"
#include <pthread.h>
#include <time.h>
#include <unistd.h>
static void *work(void *arg) {
    struct timespec ts = {0, 50 * 1000};
    for (int i = 0; i < 300; i++) {
        for (int j = 0; j < 50; j++) getppid();
        nanosleep(&ts, 0);
    }
    return arg;
}
int main(void) {
    pthread_t t[6];
    for (int i = 0; i < 6; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 6; i++) pthread_join(t[i], 0);
    return 0;
}
"#;

#[test]
fn calls_of_threads_that_block_and_move_between_cpus_are_all_kept() {
    // Six threads on two CPUs: every sleep switches the thread out mid-call (its call moves
    // from the CPU's slot to the thread's storage) and threads wake up on either CPU.
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "threads", THREADS);
    // Both ways of keeping a call in flight: per-CPU slots (kernels that cannot preempt the
    // programs), task storage only (the others).
    for slot in ["1", "0"] {
        threads_are_all_kept(dir.path(), &bin, slot);
    }
}

/// `iocap record --no-block -w CAP -c CMD` with the environment variable `var` set to `value`
/// (one of the recorder's ways chosen for a test): the capture, which must have lost nothing,
/// and the recorder's stderr.
fn record_with(var: &str, value: &str, cap: &Path, cmd: &str) -> (Reader<std::fs::File>, String) {
    let out = iocap()
        .env(var, value)
        .args(["record", "--no-block", "-w"])
        .arg(cap)
        .args(["-c", cmd])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let r = Reader::open(cap).unwrap();
    assert_eq!(r.drops(), 0, "{var}={value}: {stderr}");
    (r, stderr)
}

fn threads_are_all_kept(dir: &Path, bin: &Path, slot: &str) {
    let cap = dir.join(format!("thr{slot}.cap"));
    let (r, stderr) = record_with("IOCAP_CPU_SLOT", slot, &cap, bin.to_str().unwrap());
    let all = events(&r);
    assert!(stderr.contains(&format!("wrote {} events", all.len())), "{stderr}");
    // Not the shell's calls (`-c` runs the command through sh).
    let t = r.tables();
    let evs: Vec<&Event> = all
        .iter()
        .filter(|e| t.proc(e.proc).is_some_and(|p| t.string(p.name) == "threads"))
        .collect();
    let sleeps: Vec<&&Event> = evs
        .iter()
        .filter(|e| e.nr == nr("clock_nanosleep") || e.nr == nr("nanosleep"))
        .collect();
    assert_eq!(evs.iter().filter(|e| e.nr == nr("getppid")).count(), 6 * 300 * 50);
    assert_eq!(sleeps.len(), 6 * 300);
    // Each sleep's latency is its own: at least the 50 us asked, never a stale enter time.
    assert!(
        sleeps.iter().all(|e| e.latency >= 50_000 && e.latency < 1_000_000_000),
        "{sleeps:?}"
    );
    let mut tids: Vec<u32> = sleeps.iter().map(|e| e.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    assert_eq!(tids.len(), 6, "each thread's sleeps under its own tid");
}

const SLEEPER: &str = r#"
#include <time.h>
#include <unistd.h>
int main(void) {
    struct timespec ts = {0, 3 * 1000 * 1000};
    for (int i = 0; i < 200; i++) getppid();
    for (int i = 0; i < 7; i++) nanosleep(&ts, 0);
    for (int i = 0; i < 200; i++) getppid();
    return 0;
}
"#;

#[test]
fn record_filter_on_latency_keeps_only_slow_syscalls() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "sleeper", SLEEPER);
    let cap = dir.path().join("slow.cap");
    let (wrote, _) = record_ok(&["-w", cap.to_str().unwrap(), "-c", bin.to_str().unwrap(), "latency>1ms"]);
    let r = Reader::open(&cap).unwrap();
    let t = r.tables();
    let evs = events(&r);
    assert_eq!(evs.len() as u64, wrote);
    assert!(evs.iter().all(|e| e.latency > 1_000_000), "only slow events");
    let mine: Vec<&Event> = evs
        .iter()
        .filter(|e| t.proc(e.proc).is_some_and(|p| t.string(p.name) == "sleeper"))
        .collect();
    let sleeps = mine
        .iter()
        .filter(|e| e.nr == nr("clock_nanosleep") || e.nr == nr("nanosleep"));
    assert_eq!(sleeps.count(), 7, "every 3 ms sleep is kept");
    assert!(mine.iter().all(|e| e.nr != nr("getppid")), "no fast getppid");
}

#[test]
fn record_filter_typo_exits_2_with_a_caret_and_leaves_no_file() {
    // No root needed: the filter is checked before anything else.
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("typo.cap");
    let out = iocap()
        .args(["record", "-w"])
        .arg(&cap)
        .args(["proc.nme=fio", "and", "latency>1ms"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown field `proc.nme`"), "{stderr}");
    assert!(stderr.contains("  ^^^^^^^^\n"), "{stderr}");
    assert!(stderr.contains("did you mean `proc.name`"), "{stderr}");
    assert!(!cap.exists());
}

/// A workload of exactly 10 x 20000 one-byte reads of /dev/zero by dd, for rotation.
/// Ten bursts of 40,000 events, a pause after each: a debug build's recorder drains a burst
/// in the pause, where one flood of 400,000 at ~1 M/s kept its rings from emptying for the
/// half second after which the recorder counts itself behind, and it then shed events (in half
/// the runs on a slower host; base and encoder builds alike). Overload is tested on its own.
const DD_LOOP: &str =
    "for i in 1 2 3 4 5 6 7 8 9 10; do dd if=/dev/zero of=/dev/null bs=1 count=20000 status=none; sleep 0.2; done";

/// The files of a rotation of `base` that exist, by number.
fn rotated(base: &Path) -> Vec<(u32, PathBuf)> {
    (0..1000)
        .map(|n| {
            let p = if n == 0 {
                base.to_path_buf()
            } else {
                PathBuf::from(format!("{}{n}", base.display()))
            };
            (n, p)
        })
        .filter(|(_, p)| p.exists())
        .collect()
}

#[test]
fn rotation_files_are_self_contained_and_add_up() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("rot.cap");
    let (wrote, stderr) = record_ok(&["--no-block", "-w", cap.to_str().unwrap(), "-C", "100KB", "-c", DD_LOOP]);
    let files = rotated(&cap);
    assert!(files.len() >= 3, "several files: {files:?}\n{stderr}");
    assert_eq!(
        files.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        (0..files.len() as u32).collect::<Vec<_>>()
    );
    let (mut total, mut dd_reads, mut drops) = (0, 0, 0);
    for (n, path) in &files {
        let r = Reader::open(path).unwrap();
        assert!(r.is_clean(), "file {n} is finished");
        // Each names the next, for a reader following the recording.
        assert_eq!(r.meta().next_file, Some(format!("rot.cap{}", n + 1)), "file {n}");
        assert_eq!(
            r.meta().next_path(path),
            Some(PathBuf::from(format!("{}{}", cap.display(), n + 1)))
        );
        let t = r.tables();
        drops += r.drops();
        let evs = events(&r);
        assert!(!evs.is_empty(), "file {n} has events");
        for e in &evs {
            assert!(
                t.proc(e.proc).is_some(),
                "file {n}: process {} of {e:?} defined",
                e.proc
            );
            assert!(
                e.file == 0 || t.file(e.file).is_some(),
                "file {n}: file of {e:?} defined"
            );
        }
        dd_reads += evs
            .iter()
            .filter(|e| e.nr == nr("read") && e.bytes == 1)
            .filter(|e| t.string(t.proc(e.proc).unwrap().name) == "dd")
            .filter(|e| t.file(e.file).is_some_and(|f| t.string(f.name) == "/dev/zero"))
            .count();
        total += evs.len() as u64;
        let size = std::fs::metadata(path).unwrap().len();
        if (*n as usize) < files.len() - 1 {
            assert!(size >= 100_000, "file {n} ended at {size} bytes, before -C");
        }
    }
    assert_eq!(total, wrote, "the files add up to what was written");
    assert_eq!(drops, 0, "no drops, so the count below is exact");
    assert_eq!(
        dd_reads,
        10 * 20000,
        "every one-byte read of /dev/zero, named in its own file"
    );
}

#[test]
fn rotation_ring_keeps_at_most_w_files() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("ring.cap");
    // A file ends at the first chunk or once-a-second flush past -C; a chunk of this workload is
    // 50-120 KB, so 30KB rotates at every chunk (100KB sometimes held two and rotated only twice).
    let args = [
        "--no-block",
        "-w",
        cap.to_str().unwrap(),
        "-C",
        "30KB",
        "-W",
        "2",
        "-c",
        DD_LOOP,
    ];
    let (_, stderr) = record_ok(&args);
    let more: u32 = stderr
        .split(" and ")
        .nth(1)
        .and_then(|s| s.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no `and N more files` in {stderr}"));
    assert!(more >= 3, "rotated several times: {stderr}");
    let files = rotated(&cap);
    let numbers: Vec<u32> = files.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, [more - 1, more], "only the last two files remain: {stderr}");
    for (_, p) in files {
        assert!(Reader::open(&p).unwrap().is_clean());
    }
}

/// `record -w` onto something that exists: a file (pre-created 0666 by another user, with a
/// second hard link) is replaced by a new one of ours, 0600; a FIFO is refused at once,
/// before any probe is attached, instead of hanging in open().
#[test]
fn an_existing_target_is_replaced_by_a_new_file_and_a_fifo_refused() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("trace.cap");
    std::fs::write(&cap, "planted").unwrap();
    std::fs::set_permissions(&cap, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::chown(&cap, Some(65534), Some(65534)).unwrap();
    let twin = dir.path().join("twin");
    std::fs::hard_link(&cap, &twin).unwrap();
    let old = std::fs::metadata(&cap).unwrap();
    record_ok(&["--no-block", "-w", cap.to_str().unwrap(), "-c", "true"]);
    let new = std::fs::metadata(&cap).unwrap();
    assert_ne!(new.ino(), old.ino(), "a new file, not the planted one opened in place");
    assert_eq!((new.uid(), new.mode() & 0o777), (0, 0o600));
    assert_eq!(
        std::fs::read_to_string(&twin).unwrap(),
        "planted",
        "not written through a hard link"
    );
    assert!(Reader::open(&cap).unwrap().is_clean());

    let fifo = dir.path().join("fifo.cap");
    crate::util::mkfifo(&fifo);
    let mut child = iocap()
        .args(["record", "-d", "2s", "-w"])
        .arg(&fifo)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let hung = child.try_wait().unwrap().is_none();
    if hung {
        child.kill().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!hung, "record hung on a FIFO: {err}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is a FIFO") && err.lines().count() == 1, "{err}");
    assert!(!err.contains("recording"), "refused before attaching: {err}");
}

const FLOOD: &str = r#"
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    for (;;) syscall(SYS_getppid);
}
"#;

/// A recorder killed under a load it cannot keep up with (four processes flooding getppid,
/// the recorder at nice 10) still leaves a file that opens, whose last event is at most 1.5 s
/// older than the kill: the backlog it holds is bounded in time, and what it could not take
/// was dropped (and counted) in the kernel instead of queued in memory.
#[test]
fn killed_under_overload_the_file_reaches_the_last_second() {
    let Some(_alone) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "flood", FLOOD);
    let mut report = Vec::new();
    for round in 0..5 {
        let cap = dir.path().join(format!("flood{round}.cap"));
        let mut floods: Vec<_> = (0..4).map(|_| Command::new(&bin).spawn().unwrap()).collect();
        let mut rec = Command::new("nice")
            .args(["-n", "10"])
            .arg(env!("CARGO_BIN_EXE_iocap"))
            .args(["record", "--no-block", "-w"])
            .arg(&cap)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // When the recorder says it is recording: loading and attaching its programs at nice
        // 10 against four floods takes a while, which is not what this measures.
        let spawned = std::time::Instant::now();
        let err = rec.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufRead::lines(std::io::BufReader::new(err));
            if lines
                .next()
                .is_some_and(|l| l.is_ok_and(|l| l.starts_with("recording to")))
            {
                let _ = tx.send(std::time::Instant::now());
            }
            lines.for_each(drop);
        });
        let attached = rx.recv_timeout(Duration::from_secs(60)).expect("the recorder starts");
        std::thread::sleep(Duration::from_millis(6000));
        let killed_at = clock_ns(libc::CLOCK_BOOTTIME);
        rec.kill().unwrap();
        rec.wait().unwrap();
        for f in &mut floods {
            f.kill().unwrap();
            f.wait().unwrap();
        }
        let r = Reader::open(&cap).unwrap_or_else(|e| panic!("round {round}: a killed recording opens: {e}"));
        let last = r.chunks().iter().map(|c| c.summary.max_ts).max().unwrap_or(0);
        let behind = killed_at.saturating_sub(last);
        report.push(format!(
            "round {round}: started in {:.2} s, {} events, {} drops, last event {:.2} s before the kill",
            attached.duration_since(spawned).as_secs_f64(),
            r.event_count(),
            r.drops(),
            behind as f64 / 1e9
        ));
        assert!(r.event_count() > 0, "{report:?}");
        assert!(behind <= 1_500_000_000, "{report:?}");
        let _ = std::fs::remove_file(&cap);
    }
    eprintln!("{}", report.join("\n"));
}

const COUNTED_FLOOD: &str = r#"
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    for (int p = 0; p < 3; p++)
        if (fork() == 0) break;
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
    while (wait(NULL) > 0) {}
    return 0;
}
"#;

/// What the kernel sheds when the writer cannot keep up is counted: four processes make
/// exactly 4N getppid calls, and the getppid events kept plus the drops add up to 4N (plus at
/// most the few other calls those processes make). The recorder's threads run at nice 10 and
/// the four at 0, so they cannot keep up (`nice -n 10 iocap` put the four at nice 10 too: on a
/// quiet machine the recorder then kept up, 0 drops, once the calls' records left through
/// lanes).
#[test]
fn shed_events_are_counted_as_drops() {
    let Some(_alone) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "counted", COUNTED_FLOOD);
    let cap = dir.path().join("c.cap");
    let n: u64 = 2_000_000;
    let out = Command::new(env!("CARGO_BIN_EXE_iocap"))
        .args(["record", "--nice", "10", "--no-block", "-w"])
        .arg(&cap)
        .args(["-c", &format!("{} {n}", bin.display())])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = Reader::open(&cap).unwrap();
    let all = events(&r);
    let getppid = all.iter().filter(|e| e.nr == nr("getppid")).count() as u64;
    let others = all.len() as u64 - getppid;
    let drops = r.drops();
    eprintln!(
        "{getppid} getppid kept, {others} other calls, {drops} dropped, of {} getppid",
        4 * n
    );
    assert!(
        drops > 0,
        "the writer kept up with four floods at nice 10: the test shows nothing"
    );
    assert!(
        getppid + drops >= 4 * n,
        "lost without being counted: {getppid} + {drops} < {}",
        4 * n
    );
    assert!(
        getppid + drops <= 4 * n + 4 * 200,
        "counted drops that did not happen: {getppid} + {drops}"
    );
    // Placed in time: readings all along the overload (not one at its end), every half
    // second of the flood with drops in it, give or take one.
    let flood: Vec<u64> = all.iter().filter(|e| e.nr == nr("getppid")).map(|e| e.ts).collect();
    let (first, last) = (
        flood.iter().min().copied().unwrap(),
        flood.iter().max().copied().unwrap(),
    );
    let half = 500_000_000;
    let mut without = Vec::new();
    let mut t = first;
    while t + half <= last {
        if iocap_analysis::drops::between(&r, t.saturating_sub(half), t + 2 * half) == 0 {
            without.push((t - first) as f64 / 1e9);
        }
        t += half;
    }
    assert!(
        without.is_empty(),
        "no drops within a half second of {without:?} s into the flood"
    );
    assert!(
        r.drop_stats().len() as u64 >= (last - first) / half,
        "{} readings over {} ms",
        r.drop_stats().len(),
        (last - first) / 1_000_000
    );
}

/// A full disk stops the recording with a one-line error whose count of readable events is
/// what a reader really gets back; a closed stderr is no panic.
#[test]
fn a_full_disk_says_what_is_readable_and_a_closed_stderr_is_no_panic() {
    let Some(_alone) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "iocap-test"])
        .arg(&mnt)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mount a 1 MiB tmpfs");
    let cap = mnt.join("full.cap");
    // A flood big enough to fill 1 MiB in well under a second.
    let bin = build_c(dir.path(), "counted", COUNTED_FLOOD);
    let out = iocap()
        .args(["record", "--no-block", "-w"])
        .arg(&cap)
        .args(["-c", &format!("{} 5000000", bin.display())])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let readable = Reader::open(&cap).map(|r| r.event_count());
    let _ = Command::new("umount").arg(&mnt).status();
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.lines().last().unwrap_or("");
    assert!(last.contains("the disk is full"), "{err}");
    let said: u64 = last
        .split("; ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {last}"));
    assert_eq!(Ok(said), readable.map_err(|e| e.to_string()), "{last}");
    assert!(said > 0, "{last}");

    // stderr closed before iocap writes its first line.
    let cap = dir.path().join("quiet.cap");
    let mut child = iocap()
        .args(["record", "--no-block", "-d", "1s", "-w"])
        .arg(&cap)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "exit 101 is a panic");
    assert!(Reader::open(&cap).unwrap().is_clean());
}

/// A request that can record nothing is a usage error before anything is loaded or created
/// (no root needed to see it).
#[test]
fn requests_that_record_nothing_exit_2_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("n.cap");
    for (args, says) in [
        (
            vec!["--no-block", "evt.class=block"],
            "can match no event that is recorded",
        ),
        (vec!["--no-block", "--no-syscalls"], "leave nothing to record"),
        (vec!["evt.class=block and evt.type=read"], "can match no event"),
        // Issue #14: each of these recorded nothing and exited 0.
        (
            vec!["latency>1ms and latency<1us"],
            "can match no event: `latency>1ms` and `latency<1us` cannot both hold",
        ),
        (
            vec!["--no-block", "blk.dev=vda"],
            "can match no event that is recorded: it matches only block requests, which --no-block leaves out",
        ),
        (
            vec!["blk.dev=loop2 and disk.time>0"],
            "`blk.dev=loop2` rules out syscalls, io_uring requests and journal commits; `disk.time>0` rules out block requests",
        ),
        (
            vec!["--min-latency", "1ms", "latency<1us"],
            "can match no event as slow as --min-latency 1ms: `latency>=1ms` and `latency<1us` cannot both hold",
        ),
        (
            vec!["--no-syscalls", "fd.num=3"],
            "it matches only syscalls and io_uring requests, which --no-syscalls leaves out",
        ),
        (
            vec!["--cgroup", "/no/such\x1b[2Jcgroup"],
            "--cgroup /no/such\\x1b[2Jcgroup: no such cgroup",
        ),
        (vec!["--cgroup", "/proc"], "--cgroup /proc: no such cgroup"),
    ] {
        let out = iocap().args(["record", "-w"]).arg(&cap).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
        assert!(!cap.exists());
    }
}

/// The recording's start, the header's `start_ts` that every time in the capture counts from,
/// is taken before the probes attach: no event begins before it, though the traced process
/// makes syscalls all through the attach (issue #14, point 8: it used to be read after, and a
/// capture had calls 14.4 ms before its start).
#[test]
fn no_event_begins_before_the_recording_start() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("s.cap");
    let mut busy = Command::new("dd")
        .args(["if=/dev/zero", "of=/dev/null", "bs=1", "count=100000000"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = busy.id().to_string();
    let out = iocap()
        .args(["record", "-d", "1s", "-p", &pid, "-w"])
        .arg(&cap)
        .output()
        .unwrap();
    let _ = busy.kill();
    let _ = busy.wait();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r = Reader::open(&cap).unwrap();
    let first = r
        .chunks()
        .iter()
        .map(|c| c.summary.min_ts)
        .min()
        .expect("dd's calls were recorded");
    let start = r.meta().start_ts;
    assert!(
        first >= start,
        "the first event began {:.3} ms before the recording's start",
        (start - first) as f64 / 1e6
    );
}

/// The fields of format 1.5 on a real recording: the offsets of positional calls, the CPU,
/// who a process runs as (a setuid exec changes it) and its cgroup, and biopattern's
/// sequential/random of block requests with whether they were queued.
#[test]
fn offsets_owners_cpus_and_block_patterns_are_recorded() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    let dev = LoopDev::attach(&img);
    let cap = dir.path().join("fields.cap");
    // Reads at sectors 56, 40, 24 (each elsewhere than the last one ended), then four 64 KiB
    // writes one after the other from sector 1024; pread64 at known offsets; a nobody.
    let loop_path = &dev.path;
    let cmd = format!(
        "for s in 7 5 3; do dd if={loop_path} of=/dev/null bs=4k count=1 skip=$s iflag=direct status=none; done; \
         dd if=/dev/zero of={loop_path} bs=64k count=4 seek=8 oflag=direct status=none; \
         python3 -c 'import os; f=os.open(\"{loop_path}\", os.O_RDONLY); [os.pread(f, 512, o) for o in (0, 4096, 1 << 22)]'; \
         setpriv --reuid=65534 --regid=65534 --clear-groups cat /dev/null"
    );
    record_c(&[], &cap, &cmd);
    let r = Reader::open(&cap).unwrap();
    let t = r.tables();
    let evs = events(&r);
    let loop_dev = dev_of(&r, dev.name());

    let offsets: Vec<u64> = evs
        .iter()
        .filter(|e| e.class == Class::Syscall && e.nr == nr("pread64") && e.ret == 512)
        .map(|e| e.offset)
        .collect();
    assert_eq!(offsets, [0, 4096, 1 << 22], "pread64 offsets");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    assert!(
        evs.iter().all(|e| e.cpu < cpus),
        "every event's CPU is one of the {cpus}"
    );

    let own_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let own_cgroup = own_cgroup.lines().find_map(|l| l.strip_prefix("0::")).unwrap_or("");
    let owner = |name: &str| {
        let p = t.procs().iter().rev().find(|p| t.string(p.name) == name).expect(name);
        (p.uid, t.string(p.user).to_owned(), t.string(p.cgroup).to_owned())
    };
    assert_eq!(owner("dd"), (Some(0), "root".into(), own_cgroup.into()));
    assert_eq!(owner("cat"), (Some(65534), "nobody".into(), own_cgroup.into()));

    use iocap_format::blk_flags::{QUEUED, RANDOM, SEQUENTIAL};
    let on_loop: Vec<(u8, u64, u32)> = evs
        .iter()
        .filter(|e| e.class == Class::Block && e.dev == loop_dev)
        .map(|e| (e.op, e.sector, e.flags & (SEQUENTIAL | RANDOM)))
        .collect();
    let read = iocap_format::BlockOp::Read as u8;
    let reads: Vec<_> = on_loop
        .iter()
        .filter(|(op, s, _)| *op == read && [56, 40, 24].contains(s))
        .collect();
    assert_eq!(reads.len(), 3, "{on_loop:?}");
    assert!(reads[1..].iter().all(|r| r.2 == RANDOM), "{on_loop:?}");
    let writes: Vec<_> = on_loop.iter().filter(|(op, _, _)| *op != read).collect();
    assert_eq!(writes.first().map(|w| (w.1, w.2)), Some((1024, RANDOM)), "{on_loop:?}");
    assert!(writes[1..].iter().all(|w| w.2 == SEQUENTIAL), "{on_loop:?}");
    // Whatever the device's scheduler, a request is either queued first or sent straight on.
    let queued = evs.iter().filter(|e| e.class == Class::Block && e.flags & QUEUED != 0);
    assert!(queued.clone().all(|e| e.queue < e.latency + 10_000_000_000));
    // Queue time runs from the request's making (the kernel's start), inserted or not: a
    // second at most on an idle loop device.
    assert!(
        evs.iter()
            .filter(|e| e.class == Class::Block)
            .all(|e| e.queue < 1_000_000_000),
        "a block request's queue time is from its making, not from boot or a stale entry"
    );
}

/// `--nice N` runs the recorder's own threads (ring poller and writer) at N, and only them: the
/// `-c` command (whose parent is the recorder) keeps the nice value it was started with.
#[test]
fn nice_applies_to_the_recorder_s_threads_not_to_the_command() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("n.cap");
    // Each of the recorder's threads: its name and nice value (field 19 of its stat line; the
    // names have no spaces), then the command's own nice value.
    let cmd = r#"for t in /proc/$PPID/task/*; do echo "$(cat $t/comm) $(cut -d' ' -f19 $t/stat)"; done; echo "command $(nice)""#;
    let out = iocap()
        .args(["record", "--nice", "-7", "-w", cap.to_str().unwrap(), "-c", cmd])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let nice: Vec<(&str, &str)> = stdout.lines().filter_map(|l| l.split_once(' ')).collect();
    assert!(nice.contains(&("iocap", "-7")), "the poller: {stdout}");
    assert!(nice.contains(&("iocap-writer", "-7")), "the writer: {stdout}");
    // This test's own nice value, which the recorder and so its command started with.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let ours = stat.rsplit(')').next().unwrap().split(' ').nth(17).unwrap().to_string();
    assert!(
        nice.contains(&("command", ours.as_str())),
        "the command keeps {ours}: {stdout}"
    );
    // A value this process may not take (negative without CAP_SYS_NICE): one line, exit 1,
    // before a capture file is made.
    let denied = dir.path().join("denied.cap");
    let out = Command::new("setpriv")
        .args(["--inh-caps=-sys_nice", "--bounding-set=-sys_nice"])
        .arg(env!("CARGO_BIN_EXE_iocap"))
        .args(["record", "--nice", "-5", "-w", denied.to_str().unwrap(), "-c", "true"])
        .output();
    if let Ok(out) = out {
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("cannot run the recorder at nice -5"), "{err}");
        assert!(!denied.exists(), "no file when the nice value is refused");
    }
    // Out of range: a usage error before anything is recorded.
    let out = iocap()
        .args(["record", "--nice", "-21", "-w", cap.to_str().unwrap(), "-c", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Two threads pinned to different CPUs: one opens a file, hands the fd over (a pipe), the
/// other preads it at offset i, hands it back, the first closes it, and the next open gets the
/// same fd for another file. Each CPU's records go through its own ring: the fd record (on the
/// opener's CPU) must reach the writer before the pread (on the reader's), and the close before
/// the next open, or preads are named after the wrong file.
const FD_RELAY: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
static int to_reader[2], to_opener[2], n;
static void pin(int cpu) {
    cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s);
    if (pthread_setaffinity_np(pthread_self(), sizeof s, &s)) exit(3);
}
static void *reader(void *arg) {
    (void)arg; pin(1);
    char b[1];
    for (int i = 0; i < n; i++) {
        int fd;
        if (read(to_reader[0], &fd, sizeof fd) != sizeof fd) exit(4);
        if (pread(fd, b, 1, i) != 1) exit(5);
        if (write(to_opener[1], &fd, sizeof fd) != sizeof fd) exit(6);
    }
    return 0;
}
int main(int argc, char **argv) {
    char path[4096];
    n = atoi(argv[2]);
    if (pipe(to_reader) || pipe(to_opener)) return 1;
    pthread_t t; pthread_create(&t, 0, reader, 0);
    pin(0);
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/f%d", argv[1], i % 4);
        int fd = open(path, O_RDONLY);
        if (fd < 0) return 2;
        if (write(to_reader[1], &fd, sizeof fd) != sizeof fd) return 6;
        if (read(to_opener[0], &fd, sizeof fd) != sizeof fd) return 4;
        close(fd);
    }
    pthread_join(t, 0);
    return 0;
}
"#;

#[test]
fn calls_on_another_cpu_see_the_fd_table_of_the_moment() {
    let Some(_running) = recording() else { return };
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: needs two CPUs");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "relay", FD_RELAY);
    let n = 4000;
    for k in 0..4 {
        std::fs::write(dir.path().join(format!("f{k}")), vec![b'x'; n]).unwrap();
    }
    let cap = dir.path().join("t.cap");
    let cmd = format!("{} {} {n}", bin.display(), dir.path().display());
    let stderr = record_command(&cap, &cmd);
    let r = Reader::open(&cap).unwrap();
    assert_eq!(r.drops(), 0, "nothing lost: {stderr}");
    let t = r.tables();
    let preads: Vec<Event> = events(&r)
        .into_iter()
        // The reader thread's (the loader's preads of libraries are the main thread's).
        .filter(|e| e.class == Class::Syscall && e.nr == nr("pread64") && e.tid != e.pid)
        .collect();
    assert_eq!(preads.len(), n, "the reader's pread64 events");
    // Both CPUs took part: the readers' calls ended on CPU 1, the opener's on CPU 0.
    assert!(preads.iter().all(|e| e.cpu == 1), "the reader was pinned to CPU 1");
    let mut wrong = Vec::new();
    for e in &preads {
        let want = dir.path().join(format!("f{}", e.offset % 4));
        let got = t.file(e.file).map(|f| t.string(f.name).to_owned());
        if got.as_deref() != want.to_str() {
            wrong.push((e.offset, got));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {n} preads named after another file: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
}

const ALTERNATE: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
/* alternate DIR N: N times, open DIR/a or DIR/b in turn (the same fd number each time), read
   a byte, close. */
int main(int argc, char **argv) {
    long n = atol(argv[2]);
    char a[4096], b[4096], c[1];
    snprintf(a, sizeof a, "%s/a", argv[1]);
    snprintf(b, sizeof b, "%s/b", argv[1]);
    for (long i = 0; i < n; i++) {
        int fd = open(i % 2 ? b : a, O_RDONLY);
        if (fd < 0) return 1;
        read(fd, c, 1);
        close(fd);
    }
    return 0;
}
"#;

/// An open's own event names the file it opened, though its number was another file's a call
/// before: the writer learns the new fd from the open's table record before the open's event,
/// whichever path the calls' records take (lanes where the kernel cannot preempt the programs,
/// the rings with IOCAP_LANES=0). From a lane, 99.7 % of these opens were once named after
/// nothing: the open's event went ahead of its table record.
#[test]
fn an_open_s_event_names_the_file_it_opened() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "alternate", ALTERNATE);
    for name in ["a", "b"] {
        std::fs::write(dir.path().join(name), b"x").unwrap();
    }
    let n = 20_000;
    for lanes in ["1", "0"] {
        let cap = dir.path().join(format!("alt{lanes}.cap"));
        let cmd = format!("{} {} {n}", bin.display(), dir.path().display());
        let (r, _) = record_with("IOCAP_LANES", lanes, &cap, &cmd);
        let t = r.tables();
        let mine = |e: &&Event| t.proc(e.proc).is_some_and(|p| t.string(p.name) == "alternate");
        let all = events(&r);
        let name_of = |e: &Event| t.file(e.file).map(|f| t.string(f.name).to_owned());
        for call in ["openat", "read"] {
            let named = |file: &str| {
                let path = dir.path().join(file);
                all.iter()
                    .filter(mine)
                    .filter(|e| e.nr == nr(call) && name_of(e).as_deref() == path.to_str())
                    .count()
            };
            assert_eq!(
                (named("a"), named("b")),
                (n / 2, n / 2),
                "{call} events named after the file they used (IOCAP_LANES={lanes})"
            );
        }
    }
}

/// A second recorder on the path a live one writes is refused (it would replace the file, and
/// the first would go on writing where no one reads); a recorder whose file was removed (its
/// directory deleted) or replaced meanwhile says so and fails, rather than naming a file that
/// is not its own.
#[test]
fn a_recording_in_progress_is_not_replaced_and_a_lost_one_is_said() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("same.cap");
    let args = ["--no-block", "-p", "1"];
    let (mut first, mut stderr) = start_recording(&args, &cap);
    let out = iocap()
        .args(["record", "--no-block", "-p", "1", "-d", "1s", "-w"])
        .arg(&cap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is being recorded now (another iocap holds it)"), "{err}");
    assert_eq!(unsafe { libc::kill(first.id() as i32, libc::SIGINT) }, 0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(first.wait().unwrap().success(), "{rest}");
    assert_eq!(
        Reader::open(&cap).unwrap().liveness(),
        iocap_format::Liveness::Finished,
        "the first recording is whole"
    );

    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let cap = sub.join("x.cap");
    let (mut rec, mut stderr) = start_recording(&args, &cap);
    std::fs::remove_dir_all(&sub).unwrap();
    assert_eq!(unsafe { libc::kill(rec.id() as i32, libc::SIGINT) }, 0);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert_eq!(rec.wait().unwrap().code(), Some(1), "{rest}");
    assert!(rest.contains("x.cap removed or replaced by another program"), "{rest}");
    assert!(!rest.contains("iocap: wrote "), "no file is named as written: {rest}");
}

/// A path or a command line longer than what the recorder reads of it (255 bytes) is kept cut,
/// and says so with a `…`; one that fits is whole, with none.
#[test]
fn a_path_or_command_line_cut_short_ends_in_an_ellipsis() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let long = "d".repeat(200);
    let deep = dir.path().join(&long).join(&long);
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("f"), b"x").unwrap();
    std::fs::write(dir.path().join("short"), b"x").unwrap();
    let cap = dir.path().join("long.cap");
    let cmd = format!("cd {} && cat {long}/{long}/f short >/dev/null", dir.path().display());
    record_command(&cap, &cmd);
    let r = Reader::open(&cap).unwrap();
    let t = r.tables();
    let names: Vec<String> = t.files().map(|(_, f)| t.string(f.name).to_owned()).collect();
    let cut: Vec<&String> = names.iter().filter(|n| n.contains(&long[..50])).collect();
    assert!(!cut.is_empty() && cut.iter().all(|n| n.ends_with('…')), "{cut:?}");
    let short = dir.path().join("short");
    assert!(
        names.iter().any(|n| n == short.to_str().unwrap()),
        "whole, no …: {names:?}"
    );
    let cmdlines: Vec<String> = t.procs().iter().map(|p| t.string(p.cmdline).to_owned()).collect();
    // cat's own command line is over 400 bytes: cut, and said to be.
    let cat: Vec<&String> = cmdlines.iter().filter(|c| c.starts_with("cat ")).collect();
    assert!(!cat.is_empty() && cat.iter().all(|c| c.ends_with('…')), "{cat:?}");
}

/// One process floods getppid while another spins on the other CPU (no syscalls), starving the
/// recorder's threads at nice 19.
const DROP_FLOOD: &str = r#"
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]);
    pid_t spin = fork();
    if (spin == 0) for (;;) {}
    for (long i = 0; i < n; i++) syscall(SYS_getppid);
    kill(spin, SIGKILL);
    waitpid(spin, NULL, 0);
    return 0;
}
"#;

/// Drops are placed on the process whose events were lost (#46 item 5): a system-wide
/// recording with the smallest ring beside one process flooding getppid loses events, nearly
/// all of them that process's; at every reading the processes' drops so far are at most the
/// total read then (the per-process counts are read first), and at the last reading, after the
/// stop, they are the total exactly: every drop has its process. `info` and `report` name it.
#[test]
fn drops_are_placed_on_the_flooding_process() {
    let Some(_alone) = flooding() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = build_c(dir.path(), "dropflood", DROP_FLOOD);
    let cap = dir.path().join("d.cap");
    let mut rec = Command::new(env!("CARGO_BIN_EXE_iocap"))
        .args(["record", "--nice", "19", "--ring-mib", "1", "--no-block", "-w"])
        .arg(&cap)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = rec.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let said = std::thread::spawn(move || {
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(err)).map_while(Result::ok);
        if lines.next().is_some_and(|l| l.starts_with("recording to")) {
            let _ = tx.send(());
        }
        lines.collect::<Vec<_>>().join("\n")
    });
    rx.recv_timeout(Duration::from_secs(60)).expect("the recorder starts");
    let flood = Command::new(&bin).arg("4000000").spawn().unwrap();
    let pid = flood.id();
    assert!(flood.wait_with_output().unwrap().status.success());
    // SAFETY: kill(2) on the recorder this test started; SIGINT stops it cleanly.
    assert_eq!(unsafe { libc::kill(rec.id() as i32, libc::SIGINT) }, 0);
    assert!(rec.wait().unwrap().success(), "{}", said.join().unwrap());
    let stderr = said.join().unwrap();

    let r = Reader::open(&cap).unwrap();
    let total = r.drops();
    assert!(total > 0, "the recorder kept up: the test shows nothing ({stderr})");
    let by = r.drops_by_process(0, u64::MAX).expect("placed by process");
    let placed = by.iter().map(|d| d.count).sum::<u64>();
    let of_flood = by.iter().filter(|d| d.pid == pid).map(|d| d.count).sum::<u64>();
    eprintln!(
        "{total} dropped, {placed} placed, {of_flood} of the flood (pid {pid}), {} readings; top {:?}",
        r.drop_stats().len(),
        &by[..by.len().min(4)]
    );
    // Reading by reading: the processes' drops so far against the total read at that time.
    let readings = r.drop_stats_by_process();
    assert_eq!(readings.len(), r.drop_stats().len(), "a placement after each reading");
    let mut so_far = 0u64;
    for (d, p) in r.drop_stats().iter().zip(readings) {
        assert_eq!(d.ts, p.ts);
        so_far += p.procs.iter().map(|p| p.count).sum::<u64>();
        assert!(so_far <= d.total(), "at {}: {so_far} placed of {}", d.ts, d.total());
    }
    assert_eq!(placed, total, "every drop has its process once the recording stopped");
    assert!(
        of_flood * 100 >= total * 95,
        "{of_flood} of {total} drops placed on the flood"
    );
    let entry = by.iter().find(|d| d.pid == pid).unwrap();
    let p = r.tables().proc(entry.proc).expect("named by its process entry");
    assert_eq!(r.tables().string(p.name), "dropflood");

    let (code, out, err) = crate::util::run(&["info", cap.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!("dropped of   dropflood (pid {pid}) {of_flood}")),
        "{out}"
    );
    let (code, out, err) = crate::util::run(&["report", cap.to_str().unwrap(), &format!("proc.pid={pid}")]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(&format!(
            "dropped while recording: {of_flood} of this process's events ({total} in all)"
        )),
        "{out}"
    );
}

/// A cgroup v2 directory of the test's own, removed on drop (its processes gone by then).
struct Cgroup(PathBuf);

impl Drop for Cgroup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// A process moved into a cgroup by hand, with no exec (as runc moves its init, as systemd
/// moves a service): `record --cgroup` traces it from the move on, and its events after the
/// move carry the new cgroup (its process entry follows `cgroup_attach_task`).
#[test]
fn a_process_moved_into_the_cgroup_is_traced_from_the_move() {
    let Some(_running) = recording() else { return };
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    let root = mounts
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(f[1]))
        })
        .expect("cgroup2 is mounted");
    let name = format!("iocap-test-{}", std::process::id());
    let cg = Cgroup(root.join(&name));
    std::fs::create_dir(&cg.0).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (go, out) = (dir.path().join("go"), dir.path().join("out"));
    crate::util::mkfifo(&go);
    // The shell waits for the word, then writes with its builtin echo: no fork, no exec.
    let mut sh = Command::new("sh")
        .arg("-c")
        .arg(format!("read x < {} && echo moved > {}", go.display(), out.display()))
        .spawn()
        .unwrap();
    let cap = dir.path().join("m.cap");
    let path = format!("/{name}");
    let (mut rec, mut stderr) = start_recording(&["--cgroup", &path], &cap);
    std::fs::write(cg.0.join("cgroup.procs"), sh.id().to_string()).unwrap();
    std::fs::write(&go, "go\n").unwrap();
    assert!(sh.wait().unwrap().success());
    // SAFETY: kill(2) on the recorder this test started, not yet reaped.
    assert_eq!(unsafe { libc::kill(rec.id() as i32, libc::SIGINT) }, 0);
    let mut said = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut said).unwrap();
    assert!(rec.wait().unwrap().success(), "{said}");
    let write = format!("proc.pid={} and evt.type=write and fd.name={}", sh.id(), out.display());
    let (code, json, err) =
        crate::util::run(&["report", cap.to_str().unwrap(), &write, "--json", "--by", "proc.cgroup"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "the moved shell's write, once: {json}");
    assert_eq!(groups[0]["key"], path.as_str(), "in its new cgroup: {json}");
    assert_eq!(groups[0]["count"], 1);
}
