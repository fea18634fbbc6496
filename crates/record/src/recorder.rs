//! Loading and attaching the BPF programs ([`Recorder::start`]), and the settings userspace
//! changes while they run: traced pids, the ring backlog limit, the drop counters.

use std::collections::{BTreeMap, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

use iocap_format::DropStats;
use libbpf_rs::skel::{OpenSkel, Skel, SkelBuilder};
use libbpf_rs::{Link, MapCore, MapFlags, MapHandle, MapType, OpenObject};

use crate::backlog;
use crate::config::Config;
use crate::error::Error;
use crate::kernel::{program, Gates, Kernel, Support, PROGRAMS};
use crate::lanes::{Lanes, SYS32, SYSIO};
use crate::probe::{check_privileges, cpu_slot_safe, preemption_model};
use crate::procfs;
use crate::skel::{IocapSkel, IocapSkelBuilder};

/// Loaded and attached programs.
pub struct Recorder {
    pub(crate) skel: IocapSkel<'static>,
    _links: Vec<Link>,
    /// The links of the programs that claim calls (sys_enter, sys_exit, sched_switch), kept
    /// apart to be detached first at the end when userspace hands the calls over.
    call_links: std::sync::Mutex<Vec<Link>>,
    /// The fds of the attached programs whose recursion misses lose events (the skeleton
    /// keeps them open): those misses are drops too.
    prog_fds: Vec<i32>,
    pub(crate) started: Instant,
    /// CLOCK_BOOTTIME ns just before the first program was attached: no recorded event began
    /// earlier, so this is the recording's start ([`Recorder::start_ns`]).
    start_ns: u64,
    /// The bytes of each CPU's ring.
    pub(crate) ring_bytes: u32,
    /// The rings, one per possible CPU (index = CPU), as the programs' `rings` holds them.
    pub(crate) rings: Vec<MapHandle>,
    /// The per-CPU lanes of the calls' records, when the programs use them (lanes.rs): of
    /// 32-byte records, then of 96-byte ones.
    pub(crate) lanes: Vec<Lanes>,
    /// Only some processes are traced (`-p`, `-c`): the writeback the kernel hands over is
    /// everyone's, and the writer keeps only that of files they opened.
    pub(crate) pid_filtered: bool,
    /// The processes of /proc just before the programs were attached: one that exits before
    /// the writer reads /proc again still gets its name (see `Tracker::early_processes`).
    pub(crate) early: Vec<crate::procfs::ProcInfo>,
    /// Block requests are recorded (asked for, and the kernel has their tracepoints).
    block: bool,
    /// The `end_calls` iterator hands over the calls in flight at the end (else userspace
    /// does: [`Recorder::in_flight`]).
    end_calls: bool,
    /// The `end_rqs` program hands over the block requests in flight at the end.
    end_rqs: bool,
    /// The jbd2 tracepoints are attached: journal commits are events.
    journal: bool,
    /// What was asked for and this kernel cannot record, one line each ([`Recorder::missing`]).
    missing: Vec<String>,
    /// The nice value of the recorder's own threads ([`Recorder::set_nice`]).
    pub(crate) nice: Option<i32>,
}

impl Recorder {
    /// Run the recorder's own threads (ring poller and writer) at nice value `nice` once
    /// [`Recorder::run`] starts (processes started before, a `-c` command, keep theirs).
    /// Negative: on a host whose CPUs the traced work saturates, the recorder takes the CPU it
    /// needs to keep up, so the traced work slows rather than events being dropped. Tried at
    /// once on this thread and undone, so that a value this process may not take (a negative
    /// one without CAP_SYS_NICE) fails here, before a capture file is made.
    pub fn set_nice(&mut self, nice: i32) -> Result<(), Error> {
        let before = thread_nice();
        nice_this_thread(nice)?;
        nice_this_thread(before)?;
        self.nice = Some(nice);
        Ok(())
    }

    /// Load and attach everything; from here on the kernel records.
    pub fn start(cfg: &Config) -> Result<Recorder, Error> {
        check_privileges()?;
        // IOCAP_CPU_SLOT=0/1 overrides the choice (tests run both ways on one kernel).
        let cpu_slot = match std::env::var("IOCAP_CPU_SLOT").as_deref() {
            Ok("0") => false,
            Ok("1") => true,
            _ => cpu_slot_safe(preemption_model().as_deref()),
        };
        // What the kernel lacks is said before anything is loaded, rather than as libbpf's
        // failure to load it.
        let kernel = Kernel::probe()?;
        let mut support = kernel.support(cfg, cpu_slot)?;
        // What it has and refuses (a security policy, a verifier that rejects what another
        // kernel takes) is found by loading: a refused optional program is left out and the
        // load tried again without it, once per program at most.
        let mut tries = 0..=crate::kernel::optional_programs();
        let loaded = (|| -> Result<Loaded, Error> {
            loop {
                let cpu_slot = cpu_slot && support.sched_switch;
                load_log::clear();
                let e = match load(cfg, &support, cpu_slot)? {
                    Ok(loaded) => break Ok(loaded),
                    Err(e) => e,
                };
                let Some((prog, reason)) = load_log::refusal(&e).filter(|_| tries.next().is_some()) else {
                    return Err(load_error(e));
                };
                if support.refuse(&prog, &reason).is_none() {
                    return Err(Error::Refused {
                        role: program(&prog).map_or("the recording", |p| p.role),
                        prog,
                        reason,
                    });
                }
                kernel.check_classes(cfg, &mut support)?;
            }
        })();
        load_log::stop();
        let loaded = loaded?;
        kernel.check_calls_fallback(cfg, &mut support);
        let Loaded {
            mut skel,
            rings,
            ring_bytes,
            lanes_on,
            lane_slots,
            lane_io_slots,
            cpu_slot,
        } = loaded;
        let ring_err = |e| Error::Bpf(format!("{} ring buffers of {ring_bytes} bytes: {e}", rings.len()));
        let block = support.block;
        for (cpu, ring) in rings.iter().enumerate() {
            let fd = ring.as_fd().as_raw_fd() as u32;
            skel.maps
                .rings
                .update(&(cpu as u32).to_ne_bytes(), &fd.to_ne_bytes(), MapFlags::ANY)
                .map_err(ring_err)?;
        }
        let lanes = if lanes_on {
            let m = &skel.maps;
            vec![
                Lanes::map(&m.lane_cursors, &m.lanes, rings.len(), lane_slots, SYS32)?,
                Lanes::map(&m.lane_io_cursors, &m.lanes_io, rings.len(), lane_io_slots, SYSIO)?,
            ]
        } else {
            Vec::new()
        };
        // Limited from the first event: without it, a flood fills the whole ring before the
        // recording loop starts, and the file stays that far behind for seconds.
        set_backlog_max(&mut skel, backlog::INITIAL.min(u64::from(ring_bytes) / 2));
        let (mut links, mut call_links) = (Vec::new(), Vec::new());
        let mut prog_fds = Vec::new();
        let (start_ns, early);
        {
            let gates = Gates {
                support: &support,
                cpu_slot,
                completions: lose_no_completions(),
            };
            let mut by_name: std::collections::HashMap<&std::ffi::OsStr, libbpf_rs::ProgramMut<'_>> =
                skel.object().progs_mut().map(|p| (p.name(), p)).collect();
            early = crate::procfs::processes();
            start_ns = procfs::boot_ns();
            for entry in PROGRAMS.iter().filter(|p| gates.on(p.gate)) {
                let Some(tracepoint) = entry.attach else { continue };
                let prog = by_name
                    .remove(std::ffi::OsStr::new(entry.name))
                    .ok_or_else(|| Error::Bpf(format!("no program {} in the skeleton", entry.name)))?;
                if entry.misses_lose_events() {
                    prog_fds.push(prog.as_fd().as_raw_fd());
                }
                let link = prog
                    .attach()
                    .map_err(|e| Error::Bpf(format!("attaching to {tracepoint}: {e}")))?;
                // The programs that claim calls, which userspace detaches before it reads the
                // calls in flight itself (`in_flight`).
                if entry.claims_calls {
                    call_links.push(link);
                } else {
                    links.push(link);
                }
            }
        }
        let r = Recorder {
            skel,
            _links: links,
            call_links: std::sync::Mutex::new(call_links),
            prog_fds,
            started: Instant::now(),
            start_ns,
            ring_bytes,
            rings,
            lanes,
            pid_filtered: cfg.filter || !cfg.pids.is_empty(),
            early,
            block,
            end_calls: support.end_calls,
            end_rqs: block && support.end_rqs,
            journal: block && support.journal,
            missing: support.missing,
            nice: None,
        };
        for &pid in &cfg.pids {
            r.add_pid(pid)?;
        }
        Ok(r)
    }

    /// When the recording started, ns since boot: just before the first program was attached,
    /// so every event it records began at or after it. The capture's `start_ts`, which every
    /// time in the capture is counted from.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Whether block requests are recorded: asked for, and the kernel has their tracepoints
    /// (else [`Recorder::missing`] says which it lacks).
    pub fn records_block(&self) -> bool {
        self.block
    }

    /// What was asked for and this kernel cannot record, one line each naming the missing
    /// feature, the oldest Linux that has it and what is left out (or the program the kernel
    /// refused, its reason and what is left out): for the capture's header
    /// ([`iocap_format::Meta::missing`]).
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// Of a recording narrowed to some processes, what it also keeps of other threads'
    /// events, a line each: for the capture's header ([`iocap_format::Meta::kept`]).
    pub fn kept(&self) -> Vec<String> {
        let mut kept = Vec::new();
        if !self.pid_filtered || !self.block {
            return kept;
        }
        kept.push("the writeback of the traced processes' files: blk.cause=writeback".into());
        if self.journal {
            kept.push("every journal commit and its requests, which a traced call may wait for: evt.class=journal, blk.cause=journal".into());
        }
        kept.push("the device cache flushes a traced call or a kept commit asked for: blk.op=flush".into());
        kept
    }

    /// [`Recorder::missing`] as sentences to say once: "this kernel lacks the tracepoint
    /// ...", "this kernel refuses ...".
    pub fn missing_said(&self) -> impl Iterator<Item = String> + '_ {
        self.missing.iter().map(|m| {
            if m.starts_with(crate::kernel::REFUSES) {
                m.clone()
            } else {
                format!("this kernel lacks {m}")
            }
        })
    }

    /// Trace `pid` too (with pid filtering on).
    pub fn add_pid(&self, pid: u32) -> Result<(), Error> {
        let err = |e: libbpf_rs::Error| Error::Bpf(format!("adding pid {pid}: {e}"));
        let maps = &self.skel.maps;
        maps.pids
            .update(&pid.to_ne_bytes(), &[1u8], MapFlags::ANY)
            .map_err(err)?;
        // Threads cache whether they are traced: a new generation makes them look again.
        // The kernel bumps it too (by 1, atomically, on traced forks and exits) and this
        // read-modify-write can lose such a bump: a step this large still lands on a value
        // no cache holds, which is all a generation has to be.
        const STEP: u32 = 1 << 20;
        let key = 0u32.to_ne_bytes();
        let gen = match maps.pids_gen.lookup(&key, MapFlags::ANY).map_err(err)? {
            Some(v) => v.get(..4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_ne_bytes),
            None => 0,
        };
        maps.pids_gen
            .update(&key, &gen.wrapping_add(STEP).to_ne_bytes(), MapFlags::ANY)
            .map_err(err)
    }

    /// Calls of the recorder's programs the kernel skipped, of those whose skipped run loses
    /// an event ([`crate::kernel::Program::misses_lose_events`]): a program runs once at a
    /// time on a CPU, and a tracepoint firing in an interrupt while that program runs there (a
    /// disk's completion in a hard interrupt, during another's in a soft one) is not handed to
    /// it. The kernel counts them (`recursion_misses`, Linux 5.12; 0 before).
    fn recursion_misses(&self) -> u64 {
        use libbpf_rs::libbpf_sys::{bpf_prog_get_info_by_fd, bpf_prog_info};
        self.prog_fds
            .iter()
            .map(|&fd| {
                let mut info = bpf_prog_info::default();
                let mut len = std::mem::size_of::<bpf_prog_info>() as u32;
                // SAFETY: `info` is a bpf_prog_info of `len` bytes, which the kernel fills
                // (at most `len`); `fd` is a program the skeleton holds open.
                let r = unsafe { bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
                if r == 0 {
                    info.recursion_misses
                } else {
                    0
                }
            })
            .sum()
    }

    /// Block requests seen issued whose completion never reached the recorder, disk by disk
    /// (the BPF `unseen` map: `dev_t` to count).
    pub(crate) fn unseen(&self) -> BTreeMap<u32, u64> {
        let map = &self.skel.maps.unseen;
        map.keys()
            .filter_map(|k| {
                let dev = u32::from_ne_bytes(k.get(..4)?.try_into().ok()?);
                let v = map.lookup(&k, MapFlags::ANY).ok()??;
                Some((dev, u64::from_ne_bytes(v.get(..8)?.try_into().ok()?)))
            })
            .collect()
    }

    /// Drops by process so far, the BPF `drops_by_pid` map (tgid to count). Read before
    /// [`Recorder::drops`]: a drop program counts in `drops` first, so every drop found here
    /// is in those counters already, and a reading never places more than its total.
    pub(crate) fn drops_by_pid(&self) -> HashMap<u32, u64> {
        let map = &self.skel.maps.drops_by_pid;
        map.keys()
            .filter_map(|k| {
                let pid = u32::from_ne_bytes(k.get(..4)?.try_into().ok()?);
                let v = map.lookup(&k, MapFlags::ANY).ok()??;
                Some((pid, u64::from_ne_bytes(v.get(..8)?.try_into().ok()?)))
            })
            .collect()
    }

    /// Delete `pids`' entries of `drops_by_pid` (see `DropPlaces::growth`).
    pub(crate) fn forget_drop_pids(&self, pids: &[u32]) {
        for pid in pids {
            let _ = self.skel.maps.drops_by_pid.delete(&pid.to_ne_bytes());
        }
    }

    /// The kernel's drop counters, with `discarded` (records the poller threw away as too
    /// old) and the programs' skipped calls added to the first CPU's: the total is what
    /// counts, and stays exact.
    pub(crate) fn drops(&self, discarded: u64) -> DropStats {
        let mut per_cpu = per_cpu_counter(&self.skel.maps.drops);
        let lost = discarded + self.recursion_misses();
        match per_cpu.first_mut() {
            Some(first) => *first += lost,
            None => per_cpu.push(lost),
        }
        DropStats {
            ts: procfs::boot_ns(),
            per_cpu,
        }
    }
}

impl Recorder {
    /// After [`stop_recording`] and the rings' last drain: the calls and block requests
    /// still in flight. The requests go to the ring of the CPU `end_rqs` runs on (the caller
    /// drains it again); the calls are returned as records (REC_END_SYS, each after its `u32`
    /// size, as a batch carries them). Issued requests the kernel freed without a completion
    /// it traced are counted in [`Recorder::unseen`]. Each is claimed by whichever of these and
    /// its own ending comes first, so none is handed over twice.
    /// What could not be handed over is said in the second part, a line each.
    pub(crate) fn in_flight(&self) -> (Vec<u8>, Vec<String>) {
        let mut failed = Vec::new();
        if self.end_rqs {
            if let Err(e) = self.skel.progs.end_rqs.test_run(libbpf_rs::ProgramInput::default()) {
                failed.push(format!("the block requests in flight at the stop are left out: {e}"));
            }
        }
        (self.calls_in_flight(), failed)
    }

    /// [`Recorder::in_flight`]'s calls: by the task iterator, or from userspace.
    fn calls_in_flight(&self) -> Vec<u8> {
        use std::io::Read;

        let mut out = Vec::new();
        let Some(ro) = self.skel.maps.rodata_data.as_ref() else {
            return out;
        };
        if !ro.want_sys {
            return out;
        }
        if self.end_calls {
            // Loaded, the iterator may still be refused its link or its read: then userspace
            // reads what it has not claimed.
            let read = self.skel.progs.end_calls.attach().and_then(|link| {
                libbpf_rs::Iter::new(&link)?
                    .read_to_end(&mut out)
                    .map_err(libbpf_rs::Error::from)
            });
            match read {
                Ok(_) => return out,
                Err(e) => {
                    eprintln!("iocap: the task iterator failed ({e}): the calls in flight are read from userspace")
                }
            }
        }
        let settings = crate::ended::Settings {
            end: self.stop_at(),
            min_latency: ro.min_latency,
            cpu_slot: ro.cpu_slot,
            call_slots_on: ro.call_slots_on,
        };
        // No program may claim a call while userspace reads them: detached, and a moment for
        // one that was already running (a syscall tracepoint's may be preempted) to end.
        if let Ok(mut links) = self.call_links.lock() {
            links.clear();
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        crate::ended::calls(&self.skel, &settings)
    }

    /// `stop_at`, as [`stop_recording`] set it (0 before).
    fn stop_at(&self) -> u64 {
        match self.skel.maps.bss_data.as_ref() {
            // SAFETY: as in set_backlog_max: the mmapped .bss, read as the programs wrote it.
            Some(bss) => unsafe { std::ptr::read_volatile(&bss.stop_at) },
            None => 0,
        }
    }
}

/// A loaded skeleton and what was made for it.
struct Loaded {
    skel: IocapSkel<'static>,
    rings: Vec<MapHandle>,
    ring_bytes: u32,
    lanes_on: bool,
    lane_slots: u32,
    lane_io_slots: u32,
    cpu_slot: bool,
}

/// `IOCAP_REFUSE=end_calls,sys_enter,end_rqs`: the programs the verifier is made to reject
/// (`refuse_progs` in the BPF), as a kernel that refuses them would, for the tests of the
/// probe by loading.
fn refused_in_tests() -> Result<u32, Error> {
    const PROGS: [(&str, u32); 3] = [("end_calls", 1), ("sys_enter", 2), ("end_rqs", 4)];
    let mut bits = 0;
    for name in std::env::var("IOCAP_REFUSE")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
    {
        if name.is_empty() {
            continue;
        }
        match PROGS.iter().find(|(p, _)| *p == name) {
            Some((_, bit)) => bits |= bit,
            None => {
                let known: Vec<&str> = PROGS.iter().map(|(p, _)| *p).collect();
                return Err(Error::Hide(format!(
                    "IOCAP_REFUSE: `{}` is none of {}",
                    iocap_format::escape::escape(name.as_bytes()),
                    known.join(", ")
                )));
            }
        }
    }
    Ok(bits)
}

/// IOCAP_LOSE_COMPLETIONS=1: no program for block completions, so that tests see every
/// request go unseen, as the kernel sometimes runs none for one (see rq_new).
fn lose_no_completions() -> bool {
    std::env::var_os("IOCAP_LOSE_COMPLETIONS").is_none_or(|v| v != "1")
}

/// Open the skeleton, set it up for `cfg` and what `support` says the kernel allows, and load
/// it (with per-CPU call slots when `cpu_slot`). An error setting it up is the outer one; the
/// load's own (the kernel's refusal of a program, whose reason the caller reads) the inner.
fn load(cfg: &Config, support: &Support, cpu_slot: bool) -> Result<Result<Loaded, libbpf_rs::Error>, Error> {
    // The skeleton borrows its object storage for its whole life; one recorder lives as
    // long as the process, so the storage is leaked rather than threaded through lifetimes.
    let storage: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
    let mut open = IocapSkelBuilder::default().open(storage).map_err(load_error)?;
    if let Some(ro) = open.maps.rodata_data.as_mut() {
        ro.self_tgid = std::process::id();
        ro.filter_pids = cfg.filter || !cfg.pids.is_empty();
        ro.follow_forks = cfg.follow_forks;
        ro.want_sys = cfg.syscalls;
        ro.want_blk = support.block;
        ro.min_latency = cfg.min_latency_ns;
        ro.cpu_slot = cpu_slot;
        ro.want_anatomy = support.anatomy;
        ro.v1_ctrl = crate::procfs::cgroup1().map_or(0, |v1| v1.code);
        if let Some(scope) = &cfg.scope {
            ro.scope_cgroup = scope.id;
            ro.scope_v1 = scope.v1;
        }
        // A threshold of 0 would be "off" to the kernel: 1 ns keeps every call's.
        ro.stack_min = cfg.stacks_ns.map_or(0, |ns| ns.max(1));
        ro.refuse_progs = refused_in_tests()?;
        // IOCAP_FEW_SLOTS=1: one slot for every block request, none for calls, so that
        // tests see requests and calls kept in the maps a taken slot sends them to.
        if std::env::var_os("IOCAP_FEW_SLOTS").is_some_and(|v| v == "1") {
            ro.rq_slot_mask = 0;
            ro.call_slots_on = false;
        }
        if let Some(nrs) = &cfg.syscall_nrs {
            // A number past the bitmap (none on x86_64) leaves the choice to userspace.
            if nrs.iter().all(|&nr| (nr as usize) < ro.allow_nrs.len() * 64) {
                ro.filter_nrs = true;
                for &nr in nrs {
                    ro.allow_nrs[nr as usize / 64] |= 1 << (nr % 64);
                }
            }
        }
        if let Some(names) = cfg.names.as_ref().filter(|n| n.len() <= ro.comms.len()) {
            // An empty set would mean "no process": the caller refuses such a filter.
            if !names.is_empty() && names.iter().all(|n| n.len() < 16) {
                ro.n_comms = names.len() as u32;
                for (slot, name) in ro.comms.iter_mut().zip(names) {
                    // NUL-padded, as the kernel keeps a comm, then as two words.
                    let mut comm = [0u8; 16];
                    comm[..name.len()].copy_from_slice(name.as_bytes());
                    for (w, bytes) in slot.iter_mut().zip(comm.chunks_exact(8)) {
                        *w = u64::from_ne_bytes(bytes.try_into().expect("8 bytes"));
                    }
                }
            }
        }
    }
    // The lanes take the calls' records where a program cannot be interrupted by
    // another thread's on its CPU, as the call slots (IOCAP_LANES=0: the rings take all,
    // for the tests of that path and to measure one against the other). Each CPU's
    // share of the ring bytes is then split in three: its ring and its two lanes (each
    // of as many records of its size as fit, a power of two).
    let lanes_on = cpu_slot && std::env::var_os("IOCAP_LANES").is_none_or(|v| v != "0");
    let rings = cpu_rings(if lanes_on { cfg.ring_bytes / 3 } else { cfg.ring_bytes })?;
    let ring_bytes = rings[0].max_entries();
    let slots = |record: usize| {
        if lanes_on {
            pow2_floor(ring_bytes / record as u32)
        } else {
            0
        }
    };
    let (lane_slots, lane_io_slots) = (slots(SYS32), slots(SYSIO));
    if let Some(ro) = open.maps.rodata_data.as_mut() {
        ro.n_cpus = rings.len() as u32;
        ro.lane_slots = lane_slots;
        ro.lane_io_slots = lane_io_slots;
    }
    let ring_err = |e| Error::Bpf(format!("{} ring buffers of {ring_bytes} bytes: {e}", rings.len()));
    open.maps.rings.set_inner_map_fd(rings[0].as_fd()).map_err(ring_err)?;
    open.maps.rings.set_max_entries(rings.len() as u32).map_err(ring_err)?;
    if lanes_on {
        let cpus = rings.len() as u32;
        let lane_err = |e| Error::Bpf(format!("{cpus} lanes of {lane_slots} and {lane_io_slots} records: {e}"));
        let m = &mut open.maps;
        m.lane_cursors.set_max_entries(cpus).map_err(lane_err)?;
        m.lanes.set_max_entries(cpus * lane_slots).map_err(lane_err)?;
        m.lane_io_cursors.set_max_entries(cpus).map_err(lane_err)?;
        m.lanes_io.set_max_entries(cpus * lane_io_slots).map_err(lane_err)?;
    }
    if let Some(ro) = open.maps.rodata_data.as_mut() {
        ro.uring_complete_cqe = support.uring_complete_cqe;
    }
    // Tracepoints newer than the oldest kernels iocap runs on (without block_io_start a
    // request is created at its first insert or issue, still the submitter for most; without
    // the writeback ones writeback has no cause), and what the kernel refused, are not loaded.
    let gates = Gates {
        support,
        cpu_slot,
        completions: lose_no_completions(),
    };
    for mut prog in open.open_object_mut().progs_mut() {
        // A program the table does not name is a mistake its test catches; left loaded.
        let on = program(&prog.name().to_string_lossy()).is_none_or(|p| gates.on(p.gate));
        prog.set_autoload(on);
    }
    Ok(open.load().map(|skel| Loaded {
        skel,
        rings,
        ring_bytes,
        lanes_on,
        lane_slots,
        lane_io_slots,
        cpu_slot,
    }))
}

/// A per-CPU array of one `u64` counter (`drops`): each CPU's value; none if the
/// lookup failed.
fn per_cpu_counter(map: &impl MapCore) -> Vec<u64> {
    match map.lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY) {
        Ok(Some(v)) => v
            .iter()
            .map(|b| b.get(..8).and_then(|b| b.try_into().ok()).map_or(0, u64::from_ne_bytes))
            .collect(),
        _ => Vec::new(),
    }
}

/// libbpf's log while the programs load, kept to find which program the kernel refused and
/// why: libbpf's error says only the errno (and guesses at `ulimit -l`), its log names the
/// program. Printed as it comes too with `IOCAP_BPF_DEBUG=1`, else kept quiet: it is pages of
/// verifier output.
mod load_log {
    use std::sync::Mutex;

    use libbpf_rs::PrintLevel;

    static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn keep(level: PrintLevel, msg: String) {
        if std::env::var_os("IOCAP_BPF_DEBUG").is_some() {
            eprint!("{msg}");
        }
        if level != PrintLevel::Debug {
            if let Ok(mut lines) = LINES.lock() {
                lines.extend(msg.lines().map(str::to_owned));
            }
        }
    }

    /// Start keeping the log anew.
    pub fn clear() {
        if let Ok(mut lines) = LINES.lock() {
            lines.clear();
        }
        libbpf_rs::set_print(Some((PrintLevel::Debug, keep)));
    }

    /// Stop keeping it: from here on libbpf says nothing (or all, with `IOCAP_BPF_DEBUG=1`).
    pub fn stop() {
        if let Ok(mut lines) = LINES.lock() {
            *lines = Vec::new();
        }
        if std::env::var_os("IOCAP_BPF_DEBUG").is_none() {
            libbpf_rs::set_print(None);
        }
    }

    /// The program whose load failed with `err`, and why, from the log since [`clear`].
    pub fn refusal(err: &libbpf_rs::Error) -> Option<(String, String)> {
        let lines = LINES.lock().ok()?;
        super::refusal_in(&lines, err)
    }
}

/// From libbpf's log of a failed load (`lines`) and its error: the program the kernel refused
/// (libbpf's "prog 'NAME': BPF program load failed: ..." or "prog 'NAME': failed to ..."), and
/// the reason: the error's text, with the verifier's last word when its log has one
/// ("processed 0 insns" is none: the program was refused before it was read).
fn refusal_in(lines: &[String], err: &libbpf_rs::Error) -> Option<(String, String)> {
    let failed = lines
        .iter()
        .rev()
        .find(|l| l.contains("prog '") && l.contains("failed"))?;
    let name = failed.split("prog '").nth(1)?.split('\'').next()?.to_owned();
    let mut reason = err.to_string();
    // "Operation not permitted (os error 1)": the errno's name is the part a user looks up.
    if let Some(at) = reason.find(" (os error ") {
        reason.truncate(at);
    }
    let verifier = lines
        .iter()
        .skip_while(|l| !l.contains("-- BEGIN PROG LOAD LOG --"))
        .skip(1)
        .take_while(|l| !l.contains("-- END PROG LOAD LOG --"))
        .filter(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with("processed ") && !l.starts_with("verification time")
        })
        .last();
    if let Some(v) = verifier {
        reason += &format!("; the verifier: {}", v.trim());
    }
    Some((name, reason))
}

/// A load libbpf refused: its first line (the rest, pages of verifier log, is
/// `IOCAP_BPF_DEBUG=1`'s).
fn load_error(err: libbpf_rs::Error) -> Error {
    Error::Bpf(format!("{err:#}").lines().next().unwrap_or("").to_owned())
}

/// One ring buffer per possible CPU, sharing `total` bytes: each a power of two of at least
/// [`MIN_CPU_RING`] bytes (the kernel's rule, and room for a burst on one CPU).
fn cpu_rings(total: u32) -> Result<Vec<MapHandle>, Error> {
    let cpus = libbpf_rs::num_possible_cpus()
        .map_err(|e| Error::Bpf(format!("counting CPUs: {e}")))?
        .max(1);
    let bytes = cpu_ring_bytes(total, cpus);
    let opts = libbpf_rs::libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_rs::libbpf_sys::bpf_map_create_opts>() as _,
        ..Default::default()
    };
    (0..cpus)
        .map(|_| {
            MapHandle::create(MapType::RingBuf, Some("iocap_ring"), 0, 0, bytes, &opts)
                .map_err(|e| Error::Bpf(format!("{cpus} ring buffers of {bytes} bytes: {e}")))
        })
        .collect()
}

/// The least bytes a CPU's ring gets however many CPUs share the total.
const MIN_CPU_RING: u32 = 256 << 10;

/// The largest power of two not over `n` (0 for 0).
fn pow2_floor(n: u32) -> u32 {
    n.checked_ilog2().map_or(0, |b| 1 << b)
}

/// The bytes of each of `cpus` rings sharing `total`: the largest power of two not over an
/// equal share, and at least [`MIN_CPU_RING`].
fn cpu_ring_bytes(total: u32, cpus: usize) -> u32 {
    let share = total / (cpus.max(1) as u32);
    let pow2 = if share == 0 {
        0
    } else {
        1 << (31 - share.leading_zeros())
    };
    pow2.max(MIN_CPU_RING)
}

/// The ring backlog past which the kernel sheds syscall and block records (each CPU's ring).
pub(crate) fn set_backlog_max(skel: &mut IocapSkel<'static>, bytes: u64) {
    if let Some(bss) = skel.maps.bss_data.as_mut() {
        // SAFETY: the .bss map is mmapped for the skeleton's life; a volatile store makes
        // sure it reaches the memory the BPF programs read.
        unsafe { std::ptr::write_volatile(&mut bss.backlog_max, bytes) };
    }
}

/// End the recording now: from here on the programs track nothing new, and what ends after
/// it is recorded as it stood now, unfinished (`stop_at` in bpf/iocap.bpf.c).
pub(crate) fn stop_recording(skel: &mut IocapSkel<'static>) {
    if let Some(bss) = skel.maps.bss_data.as_mut() {
        // SAFETY: as in set_backlog_max.
        unsafe { std::ptr::write_volatile(&mut bss.stop_at, procfs::monotonic_ns().max(1)) };
    }
}

/// The calling thread's nice value, from /proc (field 19 of its stat line); 0 if unreadable.
fn thread_nice() -> i32 {
    std::fs::read_to_string("/proc/thread-self/stat")
        .ok()
        .and_then(|s| s.rsplit(')').next()?.split(' ').nth(17)?.parse().ok())
        .unwrap_or(0)
}

/// Set the calling thread's nice value (Linux's nice is per thread).
pub(crate) fn nice_this_thread(nice: i32) -> Result<(), Error> {
    // SAFETY: plain syscalls on this thread's own id.
    let r = unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice)
    };
    if r != 0 {
        return Err(Error::Nice(nice, std::io::Error::last_os_error()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_program_is_named_with_the_kernels_reason() {
        let lines = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        // A policy that refuses iterators (libbpf 1.7's lines, as on the machines that do).
        let eperm = lines(&[
            "libbpf: prog 'end_calls': BPF program load failed: -EPERM",
            "libbpf: prog 'end_calls': -- BEGIN PROG LOAD LOG --",
            "processed 0 insns (limit 1000000) max_states_per_insn 0 total_states 0 peak_states 0 mark_read 0",
            "libbpf: prog 'end_calls': -- END PROG LOAD LOG --",
            "libbpf: permission error while running as root; try raising 'ulimit -l'? current value: 8.0 MiB",
            "libbpf: prog 'end_calls': failed to load: -EPERM",
            "libbpf: failed to load BPF skeleton 'iocap_bpf': -EPERM",
        ]);
        let err = libbpf_rs::Error::from_raw_os_error(libc::EPERM);
        assert_eq!(
            refusal_in(&eperm, &err),
            Some(("end_calls".to_owned(), "Operation not permitted".to_owned()))
        );
        // A verifier that rejects it: its last word is the reason too.
        let rejected = lines(&[
            "libbpf: prog 'uring_submit': BPF program load failed: -EACCES",
            "libbpf: prog 'uring_submit': -- BEGIN PROG LOAD LOG --",
            "0: R1=ctx() R10=fp0",
            "R0 invalid mem access 'scalar'",
            "processed 12 insns (limit 1000000) max_states_per_insn 0 total_states 1 peak_states 1 mark_read 0",
            "libbpf: prog 'uring_submit': -- END PROG LOAD LOG --",
            "libbpf: prog 'uring_submit': failed to load: -EACCES",
        ]);
        let err = libbpf_rs::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            refusal_in(&rejected, &err),
            Some((
                "uring_submit".to_owned(),
                "Permission denied; the verifier: R0 invalid mem access 'scalar'".to_owned()
            ))
        );
        // A failure that names no program (a map the kernel refused) is not a refusal.
        let map = lines(&["libbpf: map 'rings': failed to create: -EPERM"]);
        assert_eq!(refusal_in(&map, &err), None);
    }

    #[test]
    fn the_table_of_programs_names_every_program_of_the_skeleton_once() {
        let storage: &'static mut MaybeUninit<OpenObject> = Box::leak(Box::new(MaybeUninit::uninit()));
        let open = IocapSkelBuilder::default().open(storage).expect("the skeleton opens");
        let mut in_skel: Vec<String> = open
            .open_object()
            .progs()
            .map(|p| p.name().to_string_lossy().into_owned())
            .collect();
        let mut in_table: Vec<String> = PROGRAMS.iter().map(|p| p.name.to_owned()).collect();
        in_skel.sort();
        in_table.sort();
        assert_eq!(in_table, in_skel);
    }

    #[test]
    fn each_cpu_gets_a_power_of_two_share_of_the_rings() {
        assert_eq!(cpu_ring_bytes(64 << 20, 2), 32 << 20);
        // A share that is not a power of two is rounded down to one.
        assert_eq!(cpu_ring_bytes(64 << 20, 3), 16 << 20);
        assert_eq!(cpu_ring_bytes(64 << 20, 1), 64 << 20);
        // Many CPUs, or a small total: never under the least a ring gets.
        assert_eq!(cpu_ring_bytes(64 << 20, 1024), MIN_CPU_RING);
        assert_eq!(cpu_ring_bytes(1 << 20, 8), MIN_CPU_RING);
        assert_eq!(cpu_ring_bytes(0, 0), MIN_CPU_RING);
    }
}
