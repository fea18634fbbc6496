//! iocap's latencies beside the peers' own, operation by operation, on the same run (root, BPF;
//! ioping, fio and bpftrace from scripts/setup.sh): ioping's timing of each of its reads, and
//! bpftrace's of each block request.

use iocap_format::{Class, Event, Reader};
use std::collections::HashMap;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::record::recording;
use crate::util::{clock_ns, iocap, run, tools, unseen_requests, LoopDev};

/// `iocap events --json` of `cap` under `filter`, as values.
fn events(cap: &str, filter: &str) -> Vec<serde_json::Value> {
    let (code, out, err) = run(&["events", cap, "--json", filter]);
    assert_eq!(code, 0, "{err}");
    out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// ioping times each read itself, reading the monotonic clock around its pread64: each read's
/// latency in the capture lies within ioping's own figure, a microsecond or so less (its clock
/// reads and iocap's two programs), however loaded the machine.
#[test]
fn each_read_lies_within_iopings_own_timing() {
    let Some(_running) = recording() else { return };
    if !tools("each_read_lies_within_iopings_own_timing", &["ioping"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    // Written, on the disk under /tmp: O_DIRECT reads go to it.
    std::fs::write(&file, vec![7u8; 16 << 20]).unwrap();
    let (cap, out) = (dir.path().join("ioping.cap"), dir.path().join("ioping.json"));
    const N: usize = 50;
    let cmd = format!("ioping -D -c {N} -i 0 -J {} > {}", file.display(), out.display());
    let rec = iocap()
        .args(["record", "-w"])
        .arg(&cap)
        .args(["-c", &cmd, "proc.name=ioping"])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", String::from_utf8_lossy(&rec.stderr));
    // One JSON object per request (its `io.time` in ns), then the statistics.
    let theirs: Vec<u64> = serde_json::from_str::<Vec<serde_json::Value>>(&std::fs::read_to_string(&out).unwrap())
        .unwrap()
        .iter()
        .filter_map(|r| r["io"]["time"].as_u64())
        .collect();
    assert_eq!(theirs.len(), N, "ioping's requests");
    let filter = format!("evt.type=pread64 and fd.name={}", file.display());
    let ours: Vec<u64> = events(cap.to_str().unwrap(), &filter)
        .iter()
        .map(|e| e["latency"].as_u64().unwrap())
        .collect();
    assert_eq!(ours.len(), N, "one pread64 per request in the capture");
    let mut gaps: Vec<i64> = theirs.iter().zip(&ours).map(|(&t, &o)| t as i64 - o as i64).collect();
    eprintln!("ioping - iocap, ns: {gaps:?}");
    // Within: ioping's window holds the call (a microsecond of slack for how ioping reads its
    // clock); the request's I/O itself is hundreds of µs, so a read matched to the wrong request
    // would be off by far more than that.
    assert!(
        gaps.iter().all(|&g| g >= -1_000),
        "a read longer than ioping timed it: {gaps:?}"
    );
    gaps.sort_unstable();
    let median = gaps[N / 2];
    assert!(
        median <= 20_000,
        "ioping - iocap median {median} ns: more than its clock reads"
    );
}

/// A bpftrace program of the two tracepoints every block latency tool reads (block_rq_issue,
/// block_rq_complete), run beside the recording of fio's 2,000 random reads (each block once):
/// each request bpftrace saw is in the capture with the same device latency, within the few
/// µs one tracepoint's programs take to run one after the other.
#[test]
fn each_block_request_has_bpftraces_latency() {
    // Alone: the kernel skips bpftrace's (classic tracepoint) programs on a CPU where another
    // BPF program or map syscall is active, and the other tests' recorders make many (the
    // stop's hand-over reads every thread's task storage by pidfd): 56 of 2,000 missed once.
    let Some(_alone) = crate::record::flooding() else {
        return;
    };
    if !tools(
        "each_block_request_has_bpftraces_latency",
        &["bpftrace", "bpftool", "fio"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    std::fs::write(&img, vec![0u8; 64 << 20]).unwrap();
    let disk = LoopDev::attach(&img);
    disk.direct_io();
    let kdev = kernel_dev(&disk.path);
    // bpftrace attaches first, so at each tracepoint its program runs before iocap's, whose
    // clock reads come that much later: its two programs do alike (map updates, nothing
    // printed until the end), or iocap's latencies come out longer by what bpftrace's extra
    // work at the completion costs (a printf there: 4-6 µs, and lines lost under load).
    let prog = format!(
        "tracepoint:block:block_rq_issue /args->dev == {kdev}/ {{ @s[args->sector] = nsecs; }}
         tracepoint:block:block_rq_complete /args->dev == {kdev} && @s[args->sector]/ {{
             @lat[args->sector] = nsecs - @s[args->sector]; }}
         END {{ clear(@s); }}"
    );
    let bt_out = dir.path().join("bt.txt");
    let mut bt = Tracer::bpftrace(&prog, &bt_out);
    let cap = dir.path().join("blk.cap");
    const N: usize = 2000;
    let cmd = format!(
        "fio --name=peers --filename={} --rw=randread --bs=4k --direct=1 --ioengine=libaio --iodepth=4 \
         --number_ios={N} --size=64m --output=/dev/null",
        disk.path
    );
    let rec = iocap()
        .args(["record", "-w"])
        .arg(&cap)
        .args(["-c", &cmd, &format!("blk.dev={}", disk.name())])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", String::from_utf8_lossy(&rec.stderr));
    let unseen = unseen_requests(&rec.stderr);
    let skipped = bpftrace_block_misses();
    bt.stop();
    let theirs: HashMap<u64, i64> = std::fs::read_to_string(&bt_out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            // `@lat[SECTOR]: NS`, printed as bpftrace exits.
            let (sector, lat) = l.strip_prefix("@lat[")?.split_once("]: ")?;
            Some((sector.parse().ok()?, lat.trim().parse().ok()?))
        })
        .collect();
    let ours: HashMap<u64, i64> = events(cap.to_str().unwrap(), &format!("blk.dev={}", disk.name()))
        .iter()
        .map(|e| (e["blk.sector"].as_u64().unwrap(), e["blk.latency"].as_i64().unwrap()))
        .collect();
    // Every block once: a sector is a request. Completions the kernel ran no BPF program for
    // (README, "unseen") are missing from both alike.
    assert!(
        ours.len() + unseen as usize >= N,
        "{} requests in the capture, {unseen} unseen",
        ours.len()
    );
    let mut only_ours: Vec<&u64> = ours.keys().filter(|s| !theirs.contains_key(s)).collect();
    eprintln!("{} requests only iocap has", only_ours.len());
    let mut only_theirs: Vec<&u64> = theirs.keys().filter(|s| !ours.contains_key(s)).collect();
    only_ours.sort_unstable();
    only_theirs.sort_unstable();
    assert!(only_theirs.is_empty(), "sectors only bpftrace has: {only_theirs:?}");
    // The kernel skips a classic tracepoint's program (bpftrace's) while it finds another BPF
    // program or a BPF map syscall active on that CPU, and counts each skip in the program's
    // recursion misses; iocap's tp_btf programs still run. Under load bpftrace misses requests
    // (12 of 2,000 beside two CPU hogs, 35 beside two system-wide recorders, 76 in a CI run),
    // each one a skip the kernel counted: no more may be missing from bpftrace's side.
    eprintln!("bpftrace's block programs skipped {skipped} times");
    assert!(
        only_ours.len() as u64 <= skipped,
        "sectors only iocap has: {} (bpftrace's programs skipped {skipped} times) {only_ours:?}",
        only_ours.len()
    );
    assert!(
        theirs.len() >= N / 2,
        "bpftrace saw too few requests to compare: {}",
        theirs.len()
    );
    let mut diffs: Vec<i64> = theirs.iter().map(|(s, &l)| ours[s] - l).collect();
    diffs.sort_unstable_by_key(|d| d.abs());
    let (median, p99) = (diffs[diffs.len() / 2].abs(), diffs[diffs.len() * 99 / 100].abs());
    let mut lats: Vec<i64> = ours.values().copied().collect();
    lats.sort_unstable();
    eprintln!(
        "{} requests of median latency {} ns; |iocap - bpftrace| median {median} ns, p99 {p99} ns, largest {} ns",
        diffs.len(),
        lats[lats.len() / 2],
        diffs[diffs.len() - 1]
    );
    assert!(median <= 2_000, "median difference {median} ns");
    // An interrupt may land between two programs of one tracepoint: rare, and tens of µs.
    assert!(p99 <= 50_000, "p99 difference {p99} ns");
}

/// How many times the kernel skipped a run of a classic tracepoint program on `block_rq_*`
/// (bpftrace's: iocap's are tp_btf, of type `tracing`), by `bpftool`'s count of their
/// recursion misses (absent when none).
fn bpftrace_block_misses() -> u64 {
    bpftrace_misses("block_rq_")
}

/// The same, of the classic tracepoint programs whose name begins with `name`.
fn bpftrace_misses(name: &str) -> u64 {
    let out = Command::new("bpftool")
        .args(["prog", "show", "--json"])
        .output()
        .expect("run bpftool");
    assert!(
        out.status.success(),
        "bpftool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let progs: serde_json::Value = serde_json::from_slice(&out.stdout).expect("bpftool's JSON");
    progs
        .as_array()
        .expect("a list of programs")
        .iter()
        .filter(|p| p["type"] == "tracepoint" && p["name"].as_str().is_some_and(|n| n.starts_with(name)))
        .map(|p| p["recursion_misses"].as_u64().unwrap_or(0))
        .sum()
}

/// The device at `path` as the block tracepoints name it: the kernel's dev_t, major << 20 |
/// minor (not userspace's encoding).
fn kernel_dev(path: &str) -> u64 {
    let dev = std::fs::metadata(path)
        .map(|m| std::os::unix::fs::MetadataExt::rdev(&m))
        .unwrap();
    let (major, minor) = ((dev >> 8) & 0xfff, (dev & 0xff) | ((dev >> 12) & 0xfff00));
    major << 20 | minor
}

/// A tracer run beside a recording, stopped (SIGINT, as a user would) and reaped whatever
/// happens.
pub(crate) struct Tracer(Child);

impl Tracer {
    /// bpftrace running `prog` (line-buffered, into `out`), once it says it is attached.
    pub(crate) fn bpftrace(prog: &str, out: &std::path::Path) -> Tracer {
        let mut bt = Tracer(
            Command::new("bpftrace")
                .args(["-B", "line", "-e", prog])
                .stdout(std::fs::File::create(out).unwrap())
                .stderr(Stdio::piped())
                .spawn()
                .expect("run bpftrace"),
        );
        let started = Instant::now();
        while !std::fs::read_to_string(out).unwrap().contains("Attaching") {
            if let Ok(Some(st)) = bt.0.try_wait() {
                let mut err = String::new();
                bt.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                panic!("bpftrace ended ({st}): {err}");
            }
            assert!(started.elapsed() < Duration::from_secs(60), "bpftrace never attached");
            std::thread::sleep(Duration::from_millis(50));
        }
        bt
    }

    /// SIGINT, then wait: bpftrace prints what it holds and detaches. Sent again after 5 s
    /// without an exit (a CI run once waited 11 minutes on a bpftrace that a second SIGINT
    /// ended at once), and after three, SIGKILL: a test never hangs on its tracer.
    pub(crate) fn stop(&mut self) {
        let pid = self.0.id() as libc::pid_t;
        for _ in 0..3 {
            // SAFETY: kill has no memory preconditions; `pid` is this child's, not yet reaped
            // (`try_wait` below reaps it only once it has exited).
            unsafe { libc::kill(pid, libc::SIGINT) };
            for _ in 0..50 {
                if let Ok(Some(_)) = self.0.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            self.stop();
        }
    }
}

/// A thread pinned to CPU 0 beside two spinners that sleeps 1 ms and writes 1 KiB, over and
/// over for 2 s, once a byte on its standard input says the tracers are there.
const CROWDED_SLEEPER: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
static void pin(void) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(0, &s);
    sched_setaffinity(0, sizeof s, &s);
}
static void *spin(void *a) { pin(); for (;;) ; return a; }
int main(int argc, char **argv) {
    struct timespec ms = {0, 1000000}, now, end;
    char go;
    if (read(0, &go, 1) != 1) return 2;
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char b[1024] = {0};
    pin();
    pthread_t t;
    pthread_create(&t, 0, spin, 0);
    pthread_create(&t, 0, spin, 0);
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += 2;
    do {
        nanosleep(&ms, 0);
        if (write(fd, b, sizeof b) != sizeof b) return 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (now.tv_sec < end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec < end.tv_nsec));
    return 0;
}
"#;

/// The anatomy of calls beside an independent one: scripts/anatomy-check.bt, a bpftrace script
/// over sched_switch and sched_waking alone (tids and times no iocap code computed), on the
/// same run. A crowded thread's calls over 1 ms (sleeps of 1 ms, then a wait for the CPU
/// behind two spinners) are matched by thread and latency, and agree on run-queue and blocked
/// time within 50 us or 5 %, but for those whose waking the kernel skipped bpftrace's program
/// for (counted in its recursion misses: bpftrace then counts the wait for a CPU as blocked).
#[test]
fn the_anatomy_agrees_with_a_bpftrace_script_of_the_scheduler() {
    let Some(_alone) = crate::record::flooding() else {
        return;
    };
    if !tools(
        "the_anatomy_agrees_with_a_bpftrace_script_of_the_scheduler",
        &["bpftrace", "bpftool"],
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = crate::record::build_c(dir.path(), "crowded", CROWDED_SLEEPER);
    let mut work = Tracer(
        Command::new(&bin)
            .arg(dir.path().join("out"))
            .stdin(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let pid = work.0.id().to_string();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/anatomy-check.bt");
    let bt_out = dir.path().join("bt.txt");
    let mut bt = Tracer(
        Command::new("bpftrace")
            .arg(&script)
            .args([&pid, "1000000"])
            .stdout(std::fs::File::create(&bt_out).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .expect("run bpftrace"),
    );
    let started = Instant::now();
    while !std::fs::read_to_string(&bt_out).unwrap().contains("Attaching") {
        assert!(started.elapsed() < Duration::from_secs(60), "bpftrace never attached");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cap = dir.path().join("a.cap");
    let mut rec = iocap()
        .args(["record", "--no-block", "-d", "4s", "-p", &pid, "-w"])
        .arg(&cap)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The recorder says so once it is attached.
    let mut err = std::io::BufReader::new(rec.stderr.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut err, &mut line).unwrap();
    assert!(line.starts_with("recording to"), "{line}");
    std::io::Write::write_all(work.0.stdin.as_mut().unwrap(), b"g").unwrap();
    assert!(work.0.wait().unwrap().success());
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(rec.wait().unwrap().success(), "{rest}");
    // The runs of bpftrace's programs the kernel skipped (another tracepoint program running on
    // that CPU): a switch missed loses or stretches a call's off-CPU time in bpftrace's
    // figures, a waking missed moves time between run queue and blocked.
    let (skipped, skipped_switch) = (bpftrace_misses("sched_waking"), bpftrace_misses("sched_switch"));
    bt.stop();
    // `tid latency runq blocked exit`, a line a call, the exit time on CLOCK_MONOTONIC;
    // the capture's times are on CLOCK_BOOTTIME, this far ahead (the time suspended).
    let theirs: Vec<[u64; 5]> = std::fs::read_to_string(&bt_out)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let v: Vec<u64> = l.split(' ').map(|w| w.parse().ok()).collect::<Option<_>>()?;
            v.try_into().ok()
        })
        .collect();
    let mono = clock_ns(libc::CLOCK_MONOTONIC);
    let boot_ahead = clock_ns(libc::CLOCK_BOOTTIME).saturating_sub(mono);
    let r = Reader::open(&cap).unwrap();
    let ours: Vec<Event> = crate::record::events(&r)
        .into_iter()
        .filter(|e| e.class == Class::Syscall && e.latency > 1_000_000)
        .collect();
    // A call is the same in both when it ended at the same time in the same thread (within
    // 50 µs: bpftrace's and iocap's programs on one tracepoint run one after the other).
    let pairs: Vec<(&Event, [u64; 5])> = theirs
        .iter()
        .filter_map(|t| {
            let e = ours
                .iter()
                .find(|e| u64::from(e.tid) == t[0] && (e.ts + e.latency).abs_diff(t[4] + boot_ahead) <= 50_000)?;
            Some((e, *t))
        })
        .collect();
    let (mut differ, mut off) = (Vec::new(), Vec::new());
    for (e, [_, _, rq, bl, _]) in &pairs {
        let near = |a: u64, b: u64| a.abs_diff(b) <= 50_000.max(a.max(b) / 20);
        // Off the CPU, both see the same time, however they split it (but where bpftrace
        // missed a switch).
        if !near(e.runq + e.wait, rq + bl) {
            off.push(format!("{e:?} against runq {rq} blocked {bl}"));
        } else if !(near(e.runq, *rq) && near(e.wait, *bl)) {
            differ.push(format!("{e:?} against runq {rq} blocked {bl}"));
        }
    }
    let matched = pairs.len();
    eprintln!(
        "{} calls over 1 ms, {matched} matched with bpftrace's {}; {} split differently, {} off the CPU for another time; \
         bpftrace's sched_waking skipped {skipped} times, sched_switch {skipped_switch}",
        ours.len(),
        theirs.len(),
        differ.len(),
        off.len()
    );
    assert!(
        ours.len() >= 200 && matched * 10 >= ours.len() * 9,
        "{} calls, {matched} matched",
        ours.len()
    );
    assert!(off.len() as u64 <= skipped_switch, "{off:#?}");
    assert!(differ.len() as u64 <= skipped + skipped_switch, "{differ:#?}");
}

/// `iocap report --measure` beside a bpftrace program of the same tracepoints, on one run on a
/// loop device of its own (direct I/O, mq-deadline, merges off): the histograms of
///
/// - `blk.queue` of fio's 1,000 random 64 KiB writes, 256 in flight: the driver takes 128
///   (loop's hw_queue_depth), so once fio has filled it the rest wait in mq-deadline, for ms
///   while the disk under the image drains (on the test machines most of the 1,000). bpftrace
///   times each from block_io_start to block_rq_issue. iocap's start is the kernel's own
///   (start_time_ns): on 6.18, request by request, ~1 µs later than bpftrace's (measured: the
///   kernel stamps it after block_io_start's programs have run), tens of µs when an interrupt
///   lands between them, rarely;
/// - `disk.time` of dd's 500 O_DIRECT reads of 4 KiB, one request each: the call's time with
///   its one request in flight, from its making (block_io_start, where iocap links it to the
///   call) to its completion, which bpftrace times on the same tracepoints.
///
/// Each request and read once (its own sector, merges off: a request's sector at its making is
/// its sector at issue), so bpftrace keys by sector. The counts agree but for what the kernel
/// ran no program for: bpftrace's skips it counts (see `each_block_request_has_bpftraces_latency`)
/// and completions iocap never saw (`unseen`); p50 and p90 agree within 5 µs of bpftrace's values
/// at the ranks those could shift them to, but for the rounding `report` documents (a
/// percentile is the upper bound of its histogram bucket); the log2 rows over 128 µs (the
/// requests that waited behind the full driver) agree row by row.
#[test]
fn report_measure_agrees_with_bpftrace_on_a_loop_device() {
    use iocap_format::latency::{bucket, bucket_range};
    use iocap_format::{log2_bucket, log2_bucket_range};
    const TEST: &str = "report_measure_agrees_with_bpftrace_on_a_loop_device";
    // Alone, as the other bpftrace tests: beside other recorders bpftrace's programs skip runs.
    let Some(_alone) = crate::record::flooding() else {
        return;
    };
    if !tools(TEST, &["bpftrace", "bpftool", "fio", "dd"]) {
        return;
    }
    const WRITES: usize = 1000;
    const READS: usize = 500;
    // fio writes 64 KiB blocks of the first 64 MiB (1,024: each of its 1,000 a block of its own),
    // dd reads 4 KiB blocks of the 2 MiB after them.
    const READ_FROM: u64 = (64 << 20) / 512;
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("disk.img");
    // Written and synced: dd's reads go to the disk under it, not to holes or dirty pages.
    let mut f = std::fs::File::create(&img).unwrap();
    std::io::Write::write_all(&mut f, &vec![0u8; 66 << 20]).unwrap();
    f.sync_all().unwrap();
    drop(f);
    let disk = LoopDev::attach(&img);
    disk.direct_io();
    let Some(_knobs) = crate::util::QueueKnobs::set(disk.name(), &[("scheduler", "mq-deadline"), ("nomerges", "2")])
    else {
        eprintln!("{TEST}: no mq-deadline scheduler: skipped");
        return;
    };
    let kdev = kernel_dev(&disk.path);
    // Maps only, printed at the exit (a printf costs µs at the tracepoint, and loses lines under
    // load), and the same work at each end: a map update, a lookup and an update. 1,500 keys,
    // within the 4,096 a bpftrace map holds.
    let prog = format!(
        "tracepoint:block:block_io_start /args->dev == {kdev}/ {{ @s[args->sector] = nsecs; }}
         tracepoint:block:block_rq_issue /args->dev == {kdev} && args->sector < {READ_FROM} && @s[args->sector]/ {{
             @q[args->sector] = nsecs - @s[args->sector]; }}
         tracepoint:block:block_rq_complete /args->dev == {kdev} && args->sector >= {READ_FROM} && @s[args->sector]/ {{
             @d[args->sector] = nsecs - @s[args->sector]; }}
         END {{ clear(@s); }}"
    );
    let bt_out = dir.path().join("bt.txt");
    let mut bt = Tracer::bpftrace(&prog, &bt_out);
    let cap = dir.path().join("measure.cap");
    let cmd = format!(
        "fio --name=peers --filename={dev} --rw=randwrite --bs=64k --direct=1 --ioengine=libaio --iodepth=256 \
         --size=64m --number_ios={WRITES} --output=/dev/null && \
         dd if={dev} of=/dev/null bs=4k skip={skip} count={READS} iflag=direct status=none",
        dev = disk.path,
        skip = READ_FROM / 8,
    );
    let rec = iocap()
        .args(["record", "-w"])
        .arg(&cap)
        .args(["-c", &cmd, &format!("blk.dev={} or fd.name={}", disk.name(), disk.path)])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", String::from_utf8_lossy(&rec.stderr));
    let unseen = unseen_requests(&rec.stderr) as usize;
    let skipped = bpftrace_misses("block_") as usize;
    bt.stop();
    let (mut queued, mut disk_time) = (Vec::new(), Vec::new());
    for l in std::fs::read_to_string(&bt_out).unwrap().lines() {
        // `@q[SECTOR]: NS`, printed as bpftrace exits.
        let Some((key, ns)) = l.split_once("]: ") else { continue };
        let ns: u64 = ns.trim().parse().unwrap();
        match key.split_once('[') {
            Some(("@q", _)) => queued.push(ns),
            Some(("@d", _)) => disk_time.push(ns),
            _ => {}
        }
    }
    queued.sort_unstable();
    disk_time.sort_unstable();
    let cap = cap.to_str().unwrap();
    let report = |filter: &str, measure: &str| -> serde_json::Value {
        let (code, out, err) = run(&["report", cap, filter, "--measure", measure, "--json"]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    let q = report(&format!("blk.dev={} and blk.op=write", disk.name()), "blk.queue");
    let d = report(&format!("fd.name={} and evt.type=read", disk.path), "disk.time");
    let drops = q["drops"].as_u64().unwrap();
    let matched = |r: &serde_json::Value| r["matched"].as_u64().unwrap() as usize;
    let figure = |r: &serde_json::Value, p: &str| r["measure_ns"][p].as_u64().unwrap();
    // bpftrace's value at a percentile's rank (the smallest with that share at or below it).
    let at = |v: &[u64], pct: f64| v[((pct * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    eprintln!(
        "blk.queue: iocap {} requests, p50 {} ns, p90 {} ns; bpftrace {}, p50 {} ns, p90 {} ns",
        matched(&q),
        figure(&q, "p50"),
        figure(&q, "p90"),
        queued.len(),
        at(&queued, 0.5),
        at(&queued, 0.9),
    );
    eprintln!(
        "disk.time: iocap {} reads, p50 {} ns, p90 {} ns; bpftrace {}, p50 {} ns, p90 {} ns",
        matched(&d),
        figure(&d, "p50"),
        figure(&d, "p90"),
        disk_time.len(),
        at(&disk_time, 0.5),
        at(&disk_time, 0.9),
    );
    eprintln!("{unseen} unseen, {drops} dropped, bpftrace's block programs skipped {skipped} times");
    // iocap has every request but those whose completion it never saw, and every read (a call's
    // record needs no block tracepoint); bpftrace every one but those a skip cost it, and on a
    // loaded machine (the whole suite running beside it) one in a hundred more: a full CI run
    // saw it print 499 of 500 reads with no skip counted. The peer's count is the reference
    // for the percentiles below, not what the test holds iocap to.
    for (what, ours, theirs, n, lost) in [
        ("writes", matched(&q), queued.len(), WRITES, unseen),
        ("reads", matched(&d), disk_time.len(), READS, 0),
    ] {
        assert!(
            ours <= n && ours + lost >= n,
            "{what}: iocap has {ours} of {n} ({unseen} unseen, {drops} dropped)"
        );
        assert!(
            theirs <= n && theirs + skipped + n / 100 >= n,
            "{what}: bpftrace has {theirs} of {n} (its programs skipped {skipped} times)"
        );
    }
    // What the test is about: requests that waited. Less than a quarter would mean the disk
    // under the image kept up with fio, and the comparison is of a few µs.
    let waited = queued.iter().filter(|&&ns| ns >= 1 << 17).count();
    assert!(
        waited >= WRITES / 4,
        "{waited} of {WRITES} writes waited over 131 µs: no queue formed"
    );
    // `report`'s percentile is the upper bound of the bucket holding its rank, clamped to the
    // values seen. The values missing on either side shift ranks by as many: iocap's lies between
    // bpftrace's values at those ranks, less the 5 µs two programs on one tracepoint and the
    // kernel's stamp after block_io_start's differ by (~1 µs, and a few under an interrupt
    // landing between them; the ms of the queue and the ~50 µs of the reads are far larger).
    const SLACK: u64 = 5_000;
    for (what, r, theirs, missing) in [
        ("blk.queue", &q, &queued, WRITES - queued.len() + WRITES - matched(&q)),
        ("disk.time", &d, &disk_time, READS - disk_time.len()),
    ] {
        for (p, pct) in [("p50", 0.5), ("p90", 0.9)] {
            let rank = (pct * matched(r) as f64).ceil() as usize;
            let lo = theirs[rank.saturating_sub(missing + 1).clamp(1, theirs.len()) - 1];
            let hi = theirs[(rank + missing + 1).clamp(1, theirs.len()) - 1];
            let ours = figure(r, p);
            let (from, to) = (lo.saturating_sub(SLACK), bucket_range(bucket(hi + SLACK)).1);
            assert!(
                (from..=to).contains(&ours),
                "{what} {p}: iocap {ours} ns, bpftrace's values there {lo}..{hi} ns"
            );
        }
    }
    // The log2 rows of the waits behind the full driver, row by row: a value of theirs crosses
    // a power of two over 128 µs only when it lies within µs of it (2 allowed), one missing on
    // either side changes a row by one.
    let mut rows = std::collections::BTreeMap::<u64, (u64, u64)>::new();
    for row in q["histogram"].as_array().unwrap() {
        let (lo, n) = (row[0].as_u64().unwrap(), row[2].as_u64().unwrap());
        rows.entry(lo).or_default().0 += n;
    }
    for &ns in &queued {
        rows.entry(log2_bucket_range(log2_bucket(ns)).0).or_default().1 += 1;
    }
    let missing = (WRITES - queued.len() + WRITES - matched(&q)) as u64;
    let differ: Vec<_> = rows
        .iter()
        .filter(|&(&lo, &(ours, theirs))| lo >= 1 << 17 && ours.abs_diff(theirs) > missing + 2)
        .collect();
    assert!(
        differ.is_empty(),
        "log2 rows (from ns: iocap, bpftrace) apart: {differ:?} of {rows:?}"
    );
    eprintln!("{TEST}: {:.1} s", started.elapsed().as_secs_f64());
}
