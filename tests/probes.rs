//! What `iocap record` says on a kernel that lacks something: `IOCAP_HIDE` takes features of
//! this kernel for absent, and the recorder's own probes, errors and degraded recordings follow
//! (root only; elsewhere they print why and pass).

use std::path::Path;
use std::process::Output;

use iocap_format::{Class, Reader};

use crate::record::{events, recording};
use crate::util::{iocap, run, LoopDev};

/// `iocap record` with `IOCAP_HIDE=hide` and `args`, writing `cap`.
fn record_hiding(hide: &str, cap: &Path, args: &[&str]) -> Output {
    iocap()
        .env("IOCAP_HIDE", hide)
        .args(["record", "-w"])
        .arg(cap)
        .args(args)
        .output()
        .expect("run iocap")
}

fn release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn a_missing_requirement_is_one_line_naming_it_and_the_oldest_linux_with_it() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("never.cap");
    let kernel = release();
    let cases = [
        (
            "btf",
            &[][..],
            "BTF type information (/sys/kernel/btf/vmlinux), which iocap needs for its programs, built once for \
             every kernel (CO-RE); Linux 5.4 and later have it, built with CONFIG_DEBUG_INFO_BTF=y",
        ),
        (
            "ringbuf",
            &[],
            "the BPF ring buffer (BPF_MAP_TYPE_RINGBUF), which iocap needs for every event; Linux 5.8 and later have it",
        ),
        (
            "task_storage",
            &[],
            "BPF task storage (BPF_MAP_TYPE_TASK_STORAGE), which iocap needs for calls that block; Linux 5.11 and \
             later have it",
        ),
        (
            "sys_exit",
            &[],
            "the tracepoint raw_syscalls:sys_exit, which iocap needs for syscalls; Linux 5.5 and later have it, \
             built with CONFIG_FTRACE_SYSCALLS=y",
        ),
        // Block requests alone were asked for: without their tracepoints nothing is left.
        (
            "block_rq_complete",
            &["--no-syscalls"],
            "the tracepoint block:block_rq_complete, which iocap needs for block requests; Linux 5.11 and later have it",
        ),
    ];
    for (hide, args, lacks) in cases {
        let out = record_hiding(hide, &cap, &[&["-d", "1s"], args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "IOCAP_HIDE={hide}: {err}");
        assert_eq!(
            err,
            format!("iocap: this kernel ({kernel}) lacks {lacks}\n"),
            "IOCAP_HIDE={hide}"
        );
        assert!(!cap.exists(), "IOCAP_HIDE={hide}: no file is created");
    }
    let out = record_hiding("ringbuff", &cap, &["-d", "1s"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("iocap: IOCAP_HIDE: `ringbuff` is no feature iocap probes; these are: btf, ringbuf,"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A loop device over a file of 8 MiB in `dir`, and a command writing 20 × 64 KiB to it.
fn loop_writer(dir: &Path) -> (LoopDev, String) {
    let img = dir.join("disk.img");
    std::fs::write(&img, vec![0u8; 8 << 20]).unwrap();
    let dev = LoopDev::attach(&img);
    let cmd = format!(
        "dd if=/dev/zero of={} bs=64k count=20 oflag=direct status=none",
        dev.path
    );
    (dev, cmd)
}

/// What `iocap info` says the capture lacks, as text lines and as JSON: what the kernel lacks,
/// not what it refuses (a security policy may refuse the task iterator: that note is checked
/// in record.rs, and would be in every capture of such a machine).
fn info_missing(cap: &Path) -> (Vec<String>, Vec<String>) {
    let lacks = |m: &String| !m.starts_with("this kernel refuses");
    let cap = cap.to_str().unwrap();
    let (code, text, err) = run(&["info", cap]);
    assert_eq!(code, 0, "{err}");
    let lines = text
        .lines()
        .filter_map(|l| l.strip_prefix("missing      "))
        .map(str::to_owned)
        .filter(lacks)
        .collect();
    let (code, json, err) = run(&["info", "--json", cap]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let listed = v["missing"]
        .as_array()
        .expect("missing is an array")
        .iter()
        .map(|m| m.as_str().unwrap().to_owned())
        .filter(lacks)
        .collect();
    (lines, listed)
}

/// The lines of `stderr` that say the kernel lacks something.
fn lacks_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter_map(|l| l.strip_prefix("iocap: this kernel lacks "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn without_block_tracepoints_syscalls_are_recorded_and_the_capture_says_why_blocks_are_not() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_dev, cmd) = loop_writer(dir.path());
    let cap = dir.path().join("noblock.cap");
    let out = record_hiding("block_rq_issue", &cap, &["-c", &cmd]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let note = "the tracepoint block:block_rq_issue (Linux 5.11 and later): block requests are not recorded";
    assert_eq!(lacks_lines(&out.stderr), [note], "said once: {err}");
    assert!(err.contains("(syscalls: on, block: off)"), "{err}");
    let r = Reader::open(&cap).unwrap();
    let evs = events(&r);
    assert!(
        evs.iter().any(|e| e.class == Class::Syscall),
        "dd's syscalls are recorded"
    );
    assert!(!evs.iter().any(|e| e.class == Class::Block), "no block requests");
    assert_eq!(info_missing(&cap), (vec![note.to_owned()], vec![note.to_owned()]));
}

#[test]
fn a_missing_optional_tracepoint_leaves_its_part_out_and_the_rest_is_recorded() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_dev, cmd) = loop_writer(dir.path());
    let cap = dir.path().join("partial.cap");
    let out = record_hiding("block_io_start,io_uring_submit_req", &cap, &["-c", &cmd]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let notes = [
        "the tracepoint block:block_io_start (Linux 6.5 and later): a block request is taken as created at its \
         first insert or issue, by the task doing that (usually the one that created it)",
        "the tracepoint io_uring:io_uring_submit_req (Linux 5.19 and later): io_uring requests are not recorded",
    ]
    .map(str::to_owned);
    assert_eq!(lacks_lines(&out.stderr), notes, "each said once: {err}");
    assert!(err.contains("(syscalls: on, block: on)"), "{err}");
    let r = Reader::open(&cap).unwrap();
    let evs = events(&r);
    let blocks = evs.iter().filter(|e| e.class == Class::Block).count();
    assert!(
        blocks >= 20,
        "dd's writes are recorded without block_io_start: {blocks}"
    );
    assert!(evs.iter().any(|e| e.class == Class::Syscall));
    assert_eq!(info_missing(&cap), (notes.to_vec(), notes.to_vec()));

    // Nothing hidden, nothing missing (this kernel has every tracepoint iocap uses).
    let full = dir.path().join("full.cap");
    let out = record_hiding("", &full, &["-c", &cmd]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(lacks_lines(&out.stderr), Vec::<String>::new());
    assert_eq!(info_missing(&full), (vec![], vec![]));
}

/// A kernel that has a feature and refuses iocap's program for it (a security policy that
/// refuses BPF iterators, a verifier that rejects it): found by loading, not by the kernel's
/// BTF. `IOCAP_REFUSE` makes the verifier reject the programs it names, for real. A program the
/// recording can go without is left out, said once with the kernel's reason, and named in the
/// capture; one it cannot go without ends it, with that reason, not libbpf's `ulimit -l` guess.
#[test]
fn a_refused_program_is_left_out_or_named_as_the_cause() {
    let Some(_running) = recording() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (_dev, cmd) = loop_writer(dir.path());
    let refusing = |progs: &str, cap: &Path| {
        iocap()
            .env("IOCAP_REFUSE", progs)
            .args(["record", "-w"])
            .arg(cap)
            .args(["-c", &cmd])
            .output()
            .expect("run iocap")
    };

    let cap = dir.path().join("nosys.cap");
    let out = refusing("sys_enter", &cap);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.trim_end(),
        "iocap: the kernel refused iocap's BPF program sys_enter (every syscall): Permission denied; \
         the verifier: R0 invalid mem access 'scalar' (IOCAP_BPF_DEBUG=1 shows libbpf's log)"
    );
    assert!(!cap.exists(), "no file is created");

    let cap = dir.path().join("norqs.cap");
    let out = refusing("end_rqs", &cap);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let note = "this kernel refuses a BPF program run on demand over the request maps (raw_tp, \
                bpf_for_each_map_elem) (end_rqs: Permission denied; the verifier: R0 invalid mem access \
                'scalar'): block requests still in flight when the recording stops are left out (those \
                that end after it are not)";
    let said: Vec<&str> = err.lines().filter(|l| l.contains("end_rqs")).collect();
    assert_eq!(said, [format!("iocap: {note}")], "said once: {err}");
    let r = Reader::open(&cap).unwrap();
    assert!(r.meta().missing.iter().any(|m| m == note), "{:?}", r.meta().missing);
    let blocks = events(&r).iter().filter(|e| e.class == Class::Block).count();
    assert!(blocks >= 20, "dd's requests are recorded: {blocks}");
}
