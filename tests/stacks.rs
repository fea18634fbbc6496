//! The stacks of slow calls (#45): `record --stacks` and `iocap flame` on a program whose code
//! paths are known, and against bpftrace's `ustack` and `kstack` taken at the same points.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use iocap_format::{Class, Reader};

use crate::peers::Tracer;
use crate::record::{events, nr};
use crate::util::{iocap, tools};

/// `slow_path` writes 1 MiB and fsyncs it (milliseconds on a loop device's ext4), then
/// `fast_path` reads a page back 20 times from the page cache (microseconds); N rounds, then
/// it lives on M ms, so that a tool naming frames only once the events are read (bpftrace)
/// finds the process. The C library's fsync keeps no frame pointer, so a stack walk skips
/// the frame of the function that calls it: each slow path calls it through a helper of its
/// own, which is the frame skipped.
const SLOW_FAST: &str = r#"
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) static int sync_a(int fd) { int r = fsync(fd); __asm__ volatile("" ::: "memory"); return r; }
__attribute__((noinline)) static int sync_b(int fd) { int r = fsync(fd); __asm__ volatile("" ::: "memory"); return r; }
__attribute__((noinline)) static void slow_path(int fd, int i) {
    static char buf[1 << 20];
    memset(buf, i, sizeof buf);
    if (write(fd, buf, sizeof buf) != sizeof buf || (i % 2 ? sync_a(fd) : sync_b(fd)) != 0) exit(1);
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void fast_path(int fd) {
    char buf[4096];
    if (pread(fd, buf, sizeof buf, 0) < 0) exit(2);
    __asm__ volatile("" ::: "memory");
}
int main(int argc, char **argv) {
    int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (fd < 0) return 3;
    for (int i = 0; i < atoi(argv[2]); i++) {
        slow_path(fd, i);
        for (int j = 0; j < 20; j++) fast_path(fd);
    }
    usleep(atoi(argv[3]) * 1000);
    return 0;
}
"#;

/// The program, built with frame pointers and symbols.
fn build(dir: &Path) -> PathBuf {
    let c = dir.join("slowfast.c");
    std::fs::write(&c, SLOW_FAST).unwrap();
    let bin = dir.join("slowfast");
    let st = Command::new("cc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&c)
        .status()
        .expect("cc");
    assert!(st.success(), "cc failed");
    bin
}

/// `iocap flame CAP ARGS...`'s folded lines: path and weight.
fn flame(cap: &Path, args: &[&str]) -> BTreeMap<String, u64> {
    let out = iocap().arg("flame").arg(cap).args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (path, w) = l.rsplit_once(' ').expect("path weight");
            (path.to_owned(), w.parse().expect("a weight"))
        })
        .collect()
}

/// bpftrace's stacks printed after a line `tag` (`U`, `K`): each frame's function, outermost
/// first, joined by `;` as a folded path.
fn bpftrace_stacks(out: &str, tag: &str) -> Vec<String> {
    let mut stacks = Vec::new();
    let mut lines = out.lines();
    while let Some(l) = lines.next() {
        if l != tag {
            continue;
        }
        // bpftrace's stack starts with an empty line, and ends with one.
        let mut frames: Vec<&str> = Vec::new();
        for f in lines.by_ref() {
            let f = f.trim();
            if f.is_empty() && frames.is_empty() {
                continue;
            }
            if f.is_empty() {
                break;
            }
            frames.push(f.rsplit_once('+').map_or(f, |(name, _)| name));
        }
        frames.reverse();
        stacks.push(frames.join(";"));
    }
    stacks
}

/// The flame graph of the slow calls holds `slow_path` under `main` with every slow fsync's
/// latency and nothing of `fast_path`; their sleeps' kernel stacks are fsync's waits; and the
/// frames are bpftrace's, user and kernel, at the same points.
#[test]
fn a_slow_paths_calls_are_under_it_in_the_flame_graph() {
    // Alone: the kernel skips bpftrace's classic tracepoint programs on a CPU where another
    // BPF program is running (see the peers tests).
    let Some(_alone) = crate::record::flooding() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let _fs = crate::cause::Ext4::new(dir.path());
    let bin = build(dir.path());
    let with_bpftrace = tools("a_slow_paths_calls_are_under_it_in_the_flame_graph", &["bpftrace"]);
    // At the same points as the recorder: the user stack as fsync returns, the kernel stack
    // at each switch out inside it (the recorder keeps the longest sleep's).
    let prog = "tracepoint:syscalls:sys_enter_fsync /comm == \"slowfast\"/ { @s[tid] = nsecs; }
         tracepoint:syscalls:sys_exit_fsync /@s[tid]/ {
             if (nsecs - @s[tid] >= 1000000) { printf(\"U\\n%s\\n\", ustack); } delete(@s[tid]); }
         tracepoint:sched:sched_switch /@s[args->prev_pid]/ { printf(\"K\\n%s\\n\", kstack); }
         END { clear(@s); }";
    let bt_out = dir.path().join("bt.txt");
    let mut bt = with_bpftrace.then(|| Tracer::bpftrace(prog, &bt_out));
    let cap = dir.path().join("s.cap");
    let cmd = format!("{} {}/mnt/f 20 1000", bin.display(), dir.path().display());
    let rec = iocap()
        .args(["record", "--stacks=1ms", "-w"])
        .arg(&cap)
        .args(["-c", &cmd])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", String::from_utf8_lossy(&rec.stderr));
    if let Some(bt) = bt.as_mut() {
        bt.stop();
    }

    let r = Reader::open(&cap).unwrap();
    let t = r.tables();
    let ours = |pid: u32| t.procs().iter().any(|p| p.pid == pid && t.string(p.name) == "slowfast");
    let evs = events(&r);
    let slow: Vec<_> = evs
        .iter()
        .filter(|e| e.class == Class::Syscall && e.nr == nr("fsync") && ours(e.pid))
        .collect();
    assert_eq!(slow.len(), 20, "every fsync is recorded");
    assert!(
        slow.iter().all(|e| e.latency >= 1_000_000),
        "1 MiB fsyncs take milliseconds"
    );
    assert!(
        slow.iter().all(|e| e.stack_user != 0),
        "every slow fsync kept its user stack"
    );
    let latency: u64 = slow.iter().map(|e| e.latency).sum();

    // By user stack, weighted by latency: slow_path under main holds every slow fsync's.
    let user = flame(&cap, &["latency>=1ms and evt.class=syscall"]);
    let under: u64 = (user.iter())
        .filter(|(p, _)| p.starts_with("slowfast;") && p.contains(";main;slow_path;") && p.ends_with("fsync"))
        .map(|(_, w)| w)
        .sum();
    assert_eq!(under, latency, "{user:#?}");
    // The fast calls kept none: a cached read takes microseconds. (On a crowded machine one
    // may be preempted past 1 ms: then it is slow, and has its stack, under fast_path.)
    // (fast_path's preads read 4 KiB; the loader's, of the libraries' headers, less.)
    let preads: Vec<_> = (evs.iter())
        .filter(|e| e.nr == nr("pread64") && ours(e.pid) && e.bytes == 4096)
        .collect();
    assert_eq!(preads.len(), 400);
    assert!(preads.iter().all(|e| (e.stack_user != 0) == (e.latency >= 1_000_000)));
    let slow_reads: u64 = preads
        .iter()
        .filter(|e| e.latency >= 1_000_000)
        .map(|e| e.latency)
        .sum();
    let fast_path: u64 = (user.iter())
        .filter(|(p, _)| p.contains("fast_path"))
        .map(|(_, w)| w)
        .sum();
    assert_eq!(fast_path, slow_reads, "{user:#?}");

    // The block requests the fsyncs issued are under the fsyncs' stacks too.
    let issued: u64 = (evs.iter())
        .filter(|e| e.class == Class::Block && e.cause == iocap_format::Cause::Syscall as u8)
        .filter(|e| slow.iter().any(|c| c.tid == e.tid && c.ts == e.ts - e.link))
        .map(|e| e.latency)
        .sum();
    assert!(issued > 0, "the fsyncs issued requests");
    let requests = flame(&cap, &["evt.class=block and blk.syscall=fsync"]);
    let under: u64 = (requests.iter())
        .filter(|(p, _)| p.contains(";main;slow_path;") && p.ends_with("fsync"))
        .map(|(_, w)| w)
        .sum();
    assert_eq!(under, issued, "{requests:#?}");

    // By kernel stack: where they slept, inside fsync.
    let kernel = flame(&cap, &["--by", "kernel", "--weight", "count", "evt.type=fsync"]);
    assert!(!kernel.is_empty(), "the fsyncs slept");
    for path in kernel.keys() {
        assert!(path.contains(";do_fsync;ext4_sync_file;"), "{path}");
        let waits = ["jbd2_log_wait_commit", "folio_wait", "blk_mq", "io_schedule", "wait_on"];
        assert!(waits.iter().any(|w| path.contains(w)), "{path}");
    }

    // The filter's view of the same stacks.
    let out = iocap()
        .args(["report", "--json"])
        .arg(&cap)
        .arg("stack.user contains slow_path and stack.kernel contains ext4_sync_file")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["matched"], kernel.values().sum::<u64>(), "{v}");

    // A process gone by the time its stacks are named (it exits at once after its last
    // call): its frames are still named, from the build IDs and offsets the kernel gave. And
    // streamed (`-w -`), the stack table goes along.
    let gone = dir.path().join("gone.cap");
    let cmd = format!("{} {}/mnt/g 4 0", bin.display(), dir.path().display());
    let rec = iocap()
        .args(["record", "--stacks=1ms", "-w", "-", "-c", &cmd])
        .output()
        .unwrap();
    assert!(rec.status.success(), "{}", String::from_utf8_lossy(&rec.stderr));
    std::fs::write(&gone, &rec.stdout).unwrap();
    let paths = flame(&gone, &["evt.type=fsync", "--weight", "count"]);
    assert_eq!(
        (paths.iter())
            .filter(|(p, _)| p.contains(";main;slow_path;"))
            .map(|(_, n)| n)
            .sum::<u64>(),
        4,
        "{paths:#?}"
    );

    let Some(_) = bt else { return };
    // bpftrace's frames, by the same symbol tables: the user paths of the slow fsyncs are the
    // same, frame for frame; the kernel stack of each call's longest sleep is one bpftrace saw
    // at a switch out in a slow fsync, less the scheduler's frames it has below the wait.
    let out = std::fs::read_to_string(&bt_out).unwrap();
    // bpftrace names frames only as it prints them: one it printed after the process had
    // gone (it lags on a busy machine), it leaves as addresses. Those say nothing of ours.
    let theirs_user: BTreeSet<String> = (bpftrace_stacks(&out, "U").into_iter())
        .filter(|s| !s.split(';').any(|f| f.starts_with("0x")))
        .collect();
    let ours_user: BTreeMap<String, u64> = flame(&cap, &["evt.type=fsync", "--weight", "count"])
        .into_iter()
        .map(|(p, n)| (p.trim_start_matches("slowfast;").to_owned(), n))
        .collect();
    assert!(!theirs_user.is_empty(), "bpftrace printed no user stack: {out}");
    // Every path bpftrace named is one of ours, and ours are its: all but a call or two (a
    // frame one of the two could not name then).
    let known: u64 = (ours_user.iter())
        .filter(|(p, _)| theirs_user.contains(*p))
        .map(|(_, n)| n)
        .sum();
    assert!(
        theirs_user.iter().all(|p| ours_user.contains_key(p)),
        "{ours_user:#?} {theirs_user:#?}"
    );
    assert!(known + 2 >= 20, "{ours_user:#?} {theirs_user:#?}");
    // The kernel's: each call's longest sleep is where bpftrace saw a slow fsync switch out
    // (but for one or two whose switch bpftrace's program missed: it is skipped while a BPF
    // map syscall runs on its CPU).
    let theirs_kernel = bpftrace_stacks(&out, "K");
    let seen: u64 = (kernel.iter())
        .filter(|(path, _)| {
            let ours = path.trim_start_matches("slowfast;");
            theirs_kernel.iter().any(|k| k.starts_with(&format!("{ours};")))
        })
        .map(|(_, n)| n)
        .sum();
    let all: u64 = kernel.values().sum();
    assert!(seen + 2 >= all, "{kernel:#?} against {theirs_kernel:#?}");
}
