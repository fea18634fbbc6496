//! Containers run by a real runtime (podman, with runc): an event is its container's, named as the
//! runtime names it, and a process outside any container is the host's. Root only, with podman
//! (scripts/setup.sh installs it); elsewhere it prints why and passes.
//!
//! What the runtime says is the truth the capture is held to: the container's id
//! (`podman inspect`) is in the cgroup path of the processes it ran (`/proc/PID/cgroup`, and the
//! capture's `proc.cgroup`), and its name and image are what `podman inspect` says.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{mkfifo, run, Ext4};

const TEST: &str = "report_by_container_name_counts_each_containers_events";

/// `podman` as it runs here: with runc, as crun refuses a host whose cgroups are hybrid (v1
/// controllers beside v2).
fn podman() -> Command {
    let mut c = Command::new("podman");
    c.args(["--runtime", "runc"]);
    c
}

/// Run `cmd`, which must succeed within `secs` seconds (a hung runtime fails the test, and is
/// killed, rather than hanging it); its standard output.
fn within(mut cmd: Command, secs: u64) -> String {
    let what = format!("{cmd:?}");
    let child = (cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()))
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out: Output = match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            // SAFETY: kill(2) on the child this function started, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what}: not done after {secs} s");
        }
    };
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A container the test ran, as the runtime describes it.
struct Container {
    name: String,
    /// Its full id: 64 hex digits.
    id: String,
    /// Its first process (the shell), while it ran.
    pid: u32,
}

/// The test's image and containers, removed on drop (a failed assertion leaves nothing behind).
struct Podman {
    /// As podman names it: `localhost/iocap-bb-PID:latest`.
    image: String,
    containers: Vec<String>,
}

impl Podman {
    /// An image of a static busybox alone (no registry needed): a root filesystem made in `dir`,
    /// imported.
    fn busybox_image(dir: &Path) -> Podman {
        let busybox = std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("busybox"))
                    .find(|b| b.is_file())
            })
            .expect("busybox in PATH (busybox-static)");
        let root = dir.join("rootfs");
        for d in ["bin", "data", "dev", "proc", "sys", "tmp"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::copy(&busybox, root.join("bin/busybox")).unwrap();
        for applet in ["sh", "dd"] {
            std::os::unix::fs::symlink("busybox", root.join("bin").join(applet)).unwrap();
        }
        let tar = dir.join("rootfs.tar");
        let st = Command::new("tar")
            .arg("-C")
            .arg(&root)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .status();
        assert!(st.is_ok_and(|s| s.success()), "tar of {}", root.display());
        let tag = format!("iocap-bb-{}", std::process::id());
        // Removed on drop from here on, even if the import fails half-way.
        let p = Podman {
            image: format!("localhost/{tag}:latest"),
            containers: Vec::new(),
        };
        let mut import = podman();
        import.args(["import", "-q"]).arg(&tar).arg(&tag);
        within(import, 60);
        p
    }

    /// Start container `name` (in the background) running `script` in the image's shell, with
    /// `dir` as its `/data`; once it runs, what the runtime says of it.
    fn run(&mut self, name: &str, dir: &Path, script: &str) -> Container {
        self.containers.push(name.to_owned());
        let mut run = podman();
        // The limits podman asks for by default are above the hard limits of a host that lacks
        // CAP_SYS_RESOURCE (runc then fails to set them); no network, none is needed.
        run.args(["run", "-d", "--replace", "--name", name, "--network", "none"])
            .args(["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"])
            .arg("-v")
            .arg(format!("{}:/data", dir.display()))
            .args([&self.image, "/bin/sh", "-c", script]);
        let id = within(run, 60).trim().to_owned();
        let mut inspect = podman();
        inspect.args([
            "inspect",
            "--format",
            "{{.Id}} {{.State.Pid}} {{.State.Status}} {{.ImageName}}",
            name,
        ]);
        let said = within(inspect, 30);
        let f: Vec<&str> = said.split_whitespace().collect();
        assert_eq!(f.len(), 4, "podman inspect {name}: {said}");
        assert_eq!(f[0], id, "podman run's id is inspect's");
        assert_eq!((f[2], f[3]), ("running", self.image.as_str()), "{name}: {said}");
        assert!(id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        Container {
            name: name.to_owned(),
            id,
            pid: f[1].parse().unwrap(),
        }
    }
}

impl Drop for Podman {
    fn drop(&mut self) {
        if !self.containers.is_empty() {
            let _ = podman().args(["rm", "-f", "-t", "0"]).args(&self.containers).output();
        }
        let _ = podman().args(["rmi", "-f", &self.image]).output();
    }
}

/// A recorder running in the background, killed on drop if it was not stopped.
struct Recorder {
    child: std::process::Child,
    stderr: std::io::BufReader<std::process::ChildStderr>,
}

impl Recorder {
    fn start(args: &[&str], cap: &Path) -> Recorder {
        let (child, stderr) = crate::record::start_recording(args, cap);
        Recorder { child, stderr }
    }

    /// SIGINT, as a user stops it; what it said on standard error.
    fn stop(&mut self) -> String {
        // SAFETY: kill(2) on the recorder this test started, not yet reaped.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) }, 0);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stderr, &mut rest).unwrap();
        assert!(self.child.wait().unwrap().success(), "{rest}");
        rest
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Let a container go: write a line into its FIFO, whose open waits for the container's shell to
/// open it for reading (retried while it has not yet: it may still be starting).
fn release(fifo: &Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut f = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(fifo)
        {
            Ok(f) => break f,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("{}: no container reads it: {e}", fifo.display()),
        }
    };
    f.write_all(b"go\n").unwrap();
}

/// `iocap report CAP FILTER [--by BY] --json` (every event with an empty filter), parsed.
fn report(cap: &Path, filter: &str, by: Option<&str>) -> Value {
    let mut args = vec!["report", cap.to_str().unwrap(), "--json", "--top", "100000"];
    if !filter.is_empty() {
        args.push(filter);
    }
    if let Some(by) = by {
        args.extend(["--by", by]);
    }
    let (code, out, err) = run(&args);
    assert_eq!(code, 0, "iocap {args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("iocap {args:?}: not JSON: {e}: {out}"))
}

/// The events matching `filter`.
fn matched(cap: &Path, filter: &str) -> u64 {
    report(cap, filter, None)["matched"].as_u64().unwrap()
}

/// `report --by BY` of the events matching `filter`: each group's key and count.
fn groups(cap: &Path, filter: &str, by: &str) -> Vec<(String, u64)> {
    let v = report(cap, filter, Some(by));
    let mut g: Vec<(String, u64)> = (v["groups"].as_array().unwrap().iter())
        .map(|g| (g["key"].as_str().unwrap().to_owned(), g["count"].as_u64().unwrap()))
        .collect();
    g.sort();
    g
}

/// The processes the test compares: all but runc's own (see where it is used).
const NOT_RUNC: &str = "not proc.name startswith runc";

/// Two containers, started one before the recording and one during it, do different writes on
/// a disk of the test's own, beside a `dd` on the host: `report --by container.name` counts each
/// container's events exactly (those of the processes whose cgroup path has its id), each
/// container's id, runtime and image are what podman says, and the host's dd is in none;
/// `info` names them, and `record --cgroup` keeps one container's events alone.

#[test]
fn report_by_container_name_counts_each_containers_events() {
    let Some(_running) = crate::record::recording() else {
        return;
    };
    if !crate::util::tools(TEST, &["podman", "runc", "busybox", "mkfs.ext4"]) {
        return;
    }
    let began = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    // Dropped last: unmounted and detached once the containers are gone.
    let fs = Ext4::new(dir.path(), 64);
    let (dir_a, dir_b, dir_host) = (fs.mnt.join("a"), fs.mnt.join("b"), fs.mnt.join("host"));
    for d in [&dir_a, &dir_b, &dir_host] {
        std::fs::create_dir(d).unwrap();
    }
    mkfifo(&dir_a.join("go"));
    mkfifo(&dir_b.join("go"));
    let mut pod = Podman::busybox_image(dir.path());
    let image = pod.image.clone();
    let me = std::process::id();
    let (name_a, name_b) = (format!("iocap-test-a-{me}"), format!("iocap-test-b-{me}"));
    // Each waits for the word before its I/O, so that it runs while the recorder does.
    // A: 200 writes of 4 KiB. B: 64 writes of 16 KiB, then reads them back 8 KiB at a time into
    // /dev/null (128 writes more). With O_DIRECT each write is one on the disk.
    let a = pod.run(
        &name_a,
        &dir_a,
        "read go </data/go && dd if=/dev/zero of=/data/a bs=4k count=200 oflag=direct status=none",
    );
    let cap = dir.path().join("c.cap");
    // The workloads' processes (the containers' shells and dds, the host's dd) and the
    // runtime's own (podman, its monitor conmon, runc): none of these but the containers' may be
    // counted in a container.
    let mut rec = Recorder::start(&["proc.name in (dd, sh, conmon, podman, runc)"], &cap);
    // And A's alone, decided in the kernel by its cgroup (v2's path, as the runtime made it).
    let a_cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", a.pid)).unwrap();
    let a_cgroup = a_cgroup.lines().find_map(|l| l.strip_prefix("0::")).unwrap().to_owned();
    let cap_a = dir.path().join("a.cap");
    let mut rec_a = Recorder::start(&["--cgroup", &a_cgroup], &cap_a);
    // B's cgroup is made while recording, well within a second of the recorder's first look at
    // cgroupfs: containers start beside each other. Each shell execs its last command, so a
    // container's first pid ends as a dd.
    let b = pod.run(
        &name_b,
        &dir_b,
        "read go </data/go && dd if=/dev/zero of=/data/b bs=16k count=64 oflag=direct status=none \
         && dd if=/data/b of=/dev/null bs=8k iflag=direct status=none",
    );
    for c in [&a, &b] {
        let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", c.pid)).unwrap();
        eprintln!(
            "{TEST}: {} {} pid {}: /proc/PID/cgroup:\n{}",
            c.name,
            c.id,
            c.pid,
            cgroup.trim_end()
        );
        assert!(
            cgroup.lines().any(|l| l.contains(&c.id)),
            "{}'s first process is in a cgroup named by its id",
            c.name
        );
    }
    release(&dir_a.join("go"));
    release(&dir_b.join("go"));
    let host = Command::new("dd")
        .arg("if=/dev/zero")
        .arg(format!("of={}", dir_host.join("h").display()))
        .args(["bs=4k", "count=50", "oflag=direct", "status=none"])
        .spawn()
        .expect("run dd");
    let host_pid = host.id();
    assert!(host.wait_with_output().unwrap().status.success());
    let mut wait = podman();
    wait.args(["wait", &name_a, &name_b]);
    let codes = within(wait, 60);
    assert_eq!(
        codes.split_whitespace().collect::<Vec<_>>(),
        ["0", "0"],
        "the containers' exit codes"
    );
    let said = rec.stop();
    rec_a.stop();
    let ran = began.elapsed();
    let drops = report(&cap, "", None)["drops"].clone();
    eprintln!("{TEST}: ran and recorded in {ran:.1?}; drops {drops}; the recorder said: {said}");
    let cap = cap.as_path();

    // What the capture says of the processes, before any container field: the cgroup path each
    // was in names its container (v2's, as the recorder reads it).
    for c in [&a, &b] {
        let (_, out, _) = run(&[
            "events",
            cap.to_str().unwrap(),
            &format!("proc.pid={}", c.pid),
            "-o",
            "proc.pid,proc.name,proc.cgroup",
            "--limit",
            "3",
        ]);
        eprintln!("{TEST}: {}'s first process:\n{}", c.name, out.trim_end());
    }
    let of = |c: &Container| format!("proc.cgroup contains \"{}\" and {NOT_RUNC}", c.id);
    for c in [&a, &b] {
        let cgroups = groups(cap, &format!("proc.pid={}", c.pid), "proc.cgroup");
        assert!(
            cgroups.iter().any(|(k, _)| k.contains(&c.id)),
            "{}'s first process (pid {}) recorded in its cgroup: {cgroups:?}",
            c.name,
            c.pid
        );
    }
    // What each container's processes did, by their cgroup: every write of each dd. (Not every
    // write in the cgroup: runc's init, in the container's cgroup before it execs the shell,
    // writes a byte to runc's sync FIFO: in B, started while recording.)
    let writes = |c: &Container| format!("{} and proc.name=dd and evt.type=write", of(c));
    assert_eq!(matched(cap, &writes(&a)), 200, "A's dd's writes ({drops} dropped)");
    assert_eq!(matched(cap, &writes(&b)), 64 + 128, "B's dds' writes ({drops} dropped)");
    let host_writes = format!("proc.pid={host_pid} and evt.type=write");
    assert_eq!(
        matched(cap, &host_writes),
        50,
        "the host's dd's writes ({drops} dropped)"
    );
    let host_cgroups = groups(cap, &format!("proc.pid={host_pid}"), "proc.cgroup");
    assert!(
        host_cgroups.iter().all(|(k, _)| !k.contains("libpod")),
        "{host_cgroups:?}"
    );
    let by_pid: Vec<Vec<(String, u64)>> = [&a, &b].iter().map(|c| groups(cap, &of(c), "proc.pid")).collect();
    for (c, pids) in [&a, &b].iter().zip(&by_pid) {
        eprintln!("{TEST}: {}'s events by pid, by cgroup: {pids:?}", c.name);
        assert!(pids.iter().any(|(p, _)| *p == c.pid.to_string()), "{pids:?}");
    }

    // The container fields: each container's events are the events of the processes in its
    // cgroup, pid by pid, and carry what podman says of it.
    // Not runc's own processes: runc moves its init into the container's cgroups one hierarchy
    // at a time while it runs, so an entry made meanwhile (at its exec) may have the v1 path
    // (pids: the container) before v2's (`proc.cgroup`: not yet), and is the container's.
    let by_name = groups(cap, NOT_RUNC, "container.name");
    eprintln!("{TEST}: by container.name: {by_name:?}");
    for (c, pids) in [&a, &b].iter().zip(&by_pid) {
        let n: u64 = pids.iter().map(|(_, n)| n).sum();
        let named = by_name.iter().find(|(k, _)| *k == c.name).map(|(_, n)| *n);
        assert_eq!(named, Some(n), "{}'s events by container.name", c.name);
        let is = format!("container.name=\"{}\" and {NOT_RUNC}", c.name);
        assert_eq!(&groups(cap, &is, "proc.pid"), pids, "{}'s processes", c.name);
        for (field, want) in [
            ("container.id", &c.id[..12]),
            ("container.full_id", c.id.as_str()),
            ("container.runtime", "podman"),
            ("container.image", image.as_str()),
        ] {
            assert_eq!(groups(cap, &is, field), [(want.to_owned(), n)], "{}'s {field}", c.name);
        }
        let k8s = format!("{is} and (k8s.pod.name exists or k8s.pod.uid exists or k8s.ns.name exists)");
        assert_eq!(matched(cap, &k8s), 0, "podman's containers are in no pod of Kubernetes");
    }
    let named_writes = |c: &Container| {
        matched(
            cap,
            &format!("container.name=\"{}\" and proc.name=dd and evt.type=write", c.name),
        )
    };
    assert_eq!(named_writes(&a), 200, "A's dd's writes by container.name");
    assert_eq!(named_writes(&b), 64 + 128, "B's dds' writes by container.name");
    // The host's dd is the host's (named `host`, as sysdig names it), and no container's;
    // podman's monitor (conmon, in a cgroup of its own beside the container's) is not in the
    // container either.
    let host_dds = groups(cap, "container.runtime=host and proc.name=dd", "proc.pid");
    assert!(host_dds.iter().any(|(p, _)| *p == host_pid.to_string()), "{host_dds:?}");
    let host_named = groups(cap, &format!("proc.pid={host_pid}"), "container.name");
    assert!(host_named.iter().all(|(k, _)| k == "host"), "{host_named:?}");
    let container_dds = groups(cap, "container.full_id exists and proc.name=dd", "proc.pid");
    assert!(
        container_dds.iter().all(|(p, _)| *p != host_pid.to_string()),
        "{container_dds:?}"
    );
    assert_eq!(matched(cap, "proc.name=conmon and container.full_id exists"), 0);
    assert!(
        matched(cap, "proc.name=conmon and container.name=host") > 0,
        "conmon is seen"
    );

    // `info` names the capture's containers, as podman does.
    let (_, info, _) = run(&["info", cap.to_str().unwrap()]);
    let line = info.lines().find(|l| l.starts_with("containers")).unwrap_or_default();
    for c in [&a, &b] {
        assert!(line.contains(&format!("{} (podman {})", c.name, &c.id[..12])), "{info}");
    }

    // `record --cgroup` kept A's calls and no other's: every write of its dd, nothing of B
    // (started while recording, in a cgroup beside A's) or of the host. (What a recording
    // narrowed to some processes also keeps of others, the journal commits and flushes its
    // calls waited on, is the host's: `info` says so, `also kept`.)
    let cap_a = cap_a.as_path();
    let calls = "evt.class=syscall";
    assert_eq!(
        groups(cap_a, calls, "container.name"),
        [(a.name.clone(), report(cap_a, calls, None)["matched"].as_u64().unwrap())]
    );
    let others = format!("container.name!=\"{}\" and not evt.class in (journal, block)", a.name);
    assert_eq!(
        matched(cap_a, &others),
        0,
        "only A's calls, and the chains they reached"
    );
    assert_eq!(
        matched(cap_a, "proc.name=dd and evt.type=write"),
        200,
        "A's dd's writes, by --cgroup"
    );
    assert_eq!(matched(cap_a, &format!("proc.pid={host_pid} or proc.pid={}", b.pid)), 0);
    eprintln!("{TEST}: {:.1?} in all", began.elapsed());
    drop(pod);
    drop(fs);
}
