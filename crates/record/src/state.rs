//! The writer thread's view of the host: which process entry and which file entry is
//! current for each pid and (pid, fd), kept up to date from the kernel's records, and the
//! conversion of each record into table rows and [`Event`]s for the [`Writer`].
//!
//! Two things a plain recording does not need live here too: the record-time filter, tested on
//! each event against these live tables (through [`Lookup`]) before it reaches the writer, and
//! [`Tracker::rotate`], which starts a new file with every entry that is current re-emitted, so
//! that each file of a rotation reads on its own.

use std::collections::{HashMap, HashSet};

use iocap_format::IdMap;
use std::io::Write;

use iocap_filter::{FileView, Filter, Lookup, ProcView};
use iocap_format::escape::escape;
use iocap_format::{
    blk_flags, uring, BlockOp, Cause, Class, Device, Event, FdType, FileEntry, Meta, ProcEntry, Stack, StackFrame,
    StackKind, Writer,
};

use crate::abi::{self, cstr, Rec};
use crate::classify;
use crate::container_table::Containers;
use crate::containers::Resolver;
use crate::procfs;
use crate::skel::types;
use crate::stacks::{Named, UserFrame};
use crate::sysinfo::{SysInfo, BYTES, CLOSE, DUP, FD_ARG0, FD_RET};

const AT_FDCWD: i32 = -100;

#[derive(Clone, Debug)]
struct Proc {
    id: u32,
    info: procfs::ProcInfo,
    start_ts: u64,
    /// Escaped comm, exe, cmdline, user name and cgroup, as a filter compares them (empty
    /// without a filter).
    shown: [String; 5],
    /// Its container's entry in the current file, 0 on the host.
    container: u32,
}

#[derive(Clone, Debug)]
struct File {
    id: u32,
    kind: FdType,
    name: Vec<u8>,
    dev: u32,
    open_ts: u64,
    /// Escaped name, as a filter compares it (empty without a filter).
    shown: String,
}

/// Every process's fds, by pid and then fd: a fork copies its parent's, and an exit drops its
/// own, without a look at any other process's. (One map keyed by (pid, fd) made each fork scan
/// every fd of the host: with 90,000 open, 5,000 forks took the writer 590 ms instead of 50.)
#[derive(Default)]
struct FdTables(IdMap<u32, IdMap<i32, File>>);

impl FdTables {
    fn get(&self, pid: u32, fd: i32) -> Option<&File> {
        self.0.get(&pid)?.get(&fd)
    }

    fn insert(&mut self, pid: u32, fd: i32, file: File) {
        self.0.entry(pid).or_default().insert(fd, file);
    }

    fn remove(&mut self, pid: u32, fd: i32) {
        if let Some(t) = self.0.get_mut(&pid) {
            t.remove(&fd);
        }
    }

    /// The fds of `pid`, in no order.
    fn of(&self, pid: u32) -> impl Iterator<Item = (i32, &File)> {
        self.0.get(&pid).into_iter().flatten().map(|(&fd, f)| (fd, f))
    }

    /// Forget every fd of `pid`.
    fn forget(&mut self, pid: u32) {
        self.0.remove(&pid);
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = (u32, i32, &mut File)> {
        (self.0.iter_mut()).flat_map(|(&pid, t)| t.iter_mut().map(move |(&fd, f)| (pid, fd, f)))
    }
}

/// A file as an fd of `pid` opened it.
#[derive(Clone, Debug)]
struct Opened {
    pid: u32,
    fd: i32,
    file: File,
    /// Opened while recording (a traced process's fd record), not found in /proc at start.
    recorded: bool,
}

/// Most inodes [`Tracker`] remembers the names of.
const MAX_INODES: usize = 1 << 16;

/// Stacks waiting for their call's record: a stack and its call leave through one ring, so the
/// call follows soon; this many waiting means records were lost, and they are let go.
const MAX_PENDING_STACKS: usize = 1 << 12;

/// `struct user_frame`'s status (bpf/iocap.h): a build ID and offset, or a bare address.
const USER_FRAME_FILE: i32 = 1;
const USER_FRAME_IP: i32 = 2;

/// A record-time filter and what its fields are relative to (`arch`, `start_ts`).
pub struct LiveFilter {
    pub filter: Filter,
    pub meta: Meta,
}

/// The tables as a filter sees them for one event: its process and file, and the devices.
struct Live<'a> {
    proc: Option<&'a Proc>,
    containers: &'a Containers,
    file: Option<&'a File>,
    devs: &'a IdMap<u32, Dev>,
}

/// A block device as found (for the header of the next file) and as a filter compares its name.
struct Dev {
    /// `None` for a disk /sys/block did not name: looked up once, not on every request.
    raw: Option<Device>,
    shown: String,
}

impl Dev {
    fn new(d: &Device) -> Dev {
        Dev {
            raw: Some(d.clone()),
            shown: escape(d.name.as_bytes()),
        }
    }
}

impl Lookup for Live<'_> {
    fn lookup_proc(&self, id: u32) -> Option<ProcView<'_>> {
        self.proc.filter(|p| p.id == id).map(|p| ProcView {
            ppid: p.info.ppid,
            name: &p.shown[0],
            exe: &p.shown[1],
            cmdline: &p.shown[2],
            uid: p.info.uid,
            user: &p.shown[3],
            cgroup: &p.shown[4],
            container: self.containers.view(p.container),
        })
    }

    fn lookup_file(&self, id: u32) -> Option<FileView<'_>> {
        self.file.filter(|f| f.id == id).map(|f| FileView {
            kind: f.kind,
            name: &f.shown,
            dev: f.dev,
        })
    }

    fn lookup_device(&self, dev: u32) -> Option<&str> {
        self.devs
            .get(&dev)
            .filter(|d| d.raw.is_some())
            .map(|d| d.shown.as_str())
    }
}

/// Turns kernel records into capture rows.
pub struct Tracker<W: Write> {
    w: Writer<W>,
    sys: SysInfo,
    memfd_nr: u32,
    /// chdir's and fchdir's numbers: they change the directory relative paths start from.
    chdir_nrs: (u32, u32),
    procs: IdMap<u32, Proc>,
    files: FdTables,
    cwds: IdMap<u32, Vec<u8>>,
    /// Every block device seen so far, by dev_t.
    devs: IdMap<u32, Dev>,
    /// Regular files by (filesystem dev_t, inode): the last fd that opened each, kept after
    /// it closes, to name the file of a block request that carries only its inode (writeback,
    /// readahead). At most [`MAX_INODES`]; emptied when full.
    inodes: IdMap<(u32, u64), Opened>,
    /// Keep a written-back request only when a traced process opened its file while recording
    /// (with a pid filter, the kernel hands over every flusher's requests).
    opened_writeback_only: bool,
    filter: Option<LiveFilter>,
    /// Pids whose leader exited: forgotten at the next `tidy`, as a few records may still follow.
    exited: Vec<u32>,
    /// The processes /proc held before the programs were attached: the name of one that exits
    /// before [`Tracker::snapshot`] reads /proc, which has no fork record, comes from here.
    early: HashMap<u32, procfs::ProcInfo>,
    /// User names by uid (the host's /etc/passwd).
    users: HashMap<u32, Vec<u8>>,
    /// Cgroup paths by id, and the ids not found (see [`path_of`]).
    cgroups: HashMap<u64, Vec<u8>>,
    cgroups_missing: HashSet<u64>,
    /// The same of the v1 hierarchy records also name ([`procfs::cgroup1`]).
    cgroups1: HashMap<u64, Vec<u8>>,
    cgroups1_missing: HashSet<u64>,
    /// The containers processes ran in.
    containers: Containers,
    /// Per block device, where its last completed request ended (sector + size): whether the
    /// next one is sequential, as biopattern decides.
    last_end: IdMap<u32, u64>,
    /// `--stacks`: the named stacks of each call whose record is still to come, by (tid,
    /// enter time): (user, kernel).
    stacks: HashMap<(u32, u64), (Vec<Named>, Vec<Named>)>,
    /// Events pushed so far.
    pub events: u64,
    /// Events the filter left out.
    pub filtered: u64,
}

impl<W: Write> Tracker<W> {
    pub fn new(w: Writer<W>, arch: &str, devices: &[Device], filter: Option<LiveFilter>) -> Tracker<W> {
        Tracker {
            w,
            sys: SysInfo::new(arch),
            memfd_nr: iocap_format::syscalls::number(arch, "memfd_create").unwrap_or(u32::MAX),
            chdir_nrs: (
                iocap_format::syscalls::number(arch, "chdir").unwrap_or(u32::MAX),
                iocap_format::syscalls::number(arch, "fchdir").unwrap_or(u32::MAX),
            ),
            procs: IdMap::default(),
            files: FdTables::default(),
            cwds: IdMap::default(),
            devs: devices.iter().map(|d| (d.dev, Dev::new(d))).collect(),
            inodes: IdMap::default(),
            opened_writeback_only: false,
            filter,
            exited: Vec::new(),
            early: HashMap::new(),
            users: procfs::users(),
            cgroups: HashMap::new(),
            cgroups_missing: HashSet::new(),
            cgroups1: HashMap::new(),
            cgroups1_missing: HashSet::new(),
            containers: Containers::new(Resolver::new()),
            last_end: IdMap::default(),
            stacks: HashMap::new(),
            events: 0,
            filtered: 0,
        }
    }

    /// With a pid filter: keep only the writeback of files the traced processes opened.
    pub fn writeback_of_opened_files_only(&mut self, on: bool) {
        self.opened_writeback_only = on;
    }

    /// The escaped form a filter compares, computed only when there is a filter.
    fn shown(&self, b: &[u8]) -> String {
        if self.filter.is_some() {
            escape(b)
        } else {
            String::new()
        }
    }

    /// Disk `dev`'s name as a terminal may show it (escaped), else its `major:minor`.
    pub fn device_shown(&self, dev: u32) -> String {
        match self.devs.get(&dev).filter(|d| d.raw.is_some()) {
            Some(d) => d.shown.clone(),
            None => {
                let (major, minor) = iocap_format::dev_parts(dev);
                format!("{major}:{minor}")
            }
        }
    }

    /// Every block device known now: the header of a new file lists them.
    pub fn devices(&self) -> Vec<Device> {
        let mut v: Vec<Device> = self.devs.values().filter_map(|d| d.raw.clone()).collect();
        v.sort_by_key(|d| d.dev);
        v
    }

    /// Continue in `w`, a writer for a new file whose header is written: every process, fd and
    /// string that is current now is added to it, so that its events need nothing from the
    /// files before. Returns the previous writer, for the caller to finish.
    pub fn rotate(&mut self, w: Writer<W>) -> Writer<W> {
        let old = std::mem::replace(&mut self.w, w);
        let Tracker {
            w,
            procs,
            files,
            inodes,
            users,
            containers,
            ..
        } = self;
        containers.rotated();
        for (&pid, p) in procs.iter_mut() {
            p.container = containers.place(w, &p.info.cgroup, &p.info.cgroup1);
            let e = proc_entry(w, users, pid, &p.info, p.start_ts, p.container);
            p.id = w.add_proc(e);
        }
        for (pid, fd, f) in files.iter_mut() {
            let e = FileEntry {
                id: 0,
                pid,
                fd,
                kind: f.kind,
                name: w.intern(&f.name),
                dev: f.dev,
                open_ts: f.open_ts,
            };
            f.id = w.add_file(e);
        }
        for o in inodes.values_mut() {
            let e = FileEntry {
                id: 0,
                pid: o.pid,
                fd: o.fd,
                kind: o.file.kind,
                name: w.intern(&o.file.name),
                dev: o.file.dev,
                open_ts: o.file.open_ts,
            };
            o.file.id = w.add_file(e);
        }
        old
    }

    /// Push `e` if the filter keeps it. `file` is the entry `e.file` refers to; asked
    /// before the event's own table changes (a `close` is matched by the name it closed).
    fn keep(&self, e: &Event, file: Option<&File>) -> bool {
        let Some(lf) = &self.filter else { return true };
        let live = Live {
            proc: self.procs.get(&e.pid),
            containers: &self.containers,
            file,
            devs: &self.devs,
        };
        lf.filter.matches(e, &lf.meta, &live)
    }

    fn push(&mut self, e: &Event, keep: bool) -> Result<(), iocap_format::Error> {
        if !keep {
            self.filtered += 1;
            return Ok(());
        }
        self.events += 1;
        self.w.push(e)
    }

    pub fn writer(&mut self) -> &mut Writer<W> {
        &mut self.w
    }

    pub fn into_writer(self) -> Writer<W> {
        self.w
    }

    /// The processes /proc listed before the programs were attached (see `early`).
    pub fn early_processes(&mut self, procs: Vec<procfs::ProcInfo>) {
        self.early = procs.into_iter().map(|p| (p.pid, p)).collect();
    }

    /// Load every process and fd that exists now (after the probes are attached, so that
    /// anything newer arrives as a record).
    pub fn snapshot(&mut self) {
        let sockets = procfs::sockets();
        for p in procfs::processes() {
            let pid = p.pid;
            self.set_proc(p, 0);
            for f in procfs::fds(pid, &sockets) {
                self.set_file(pid, f.fd, f.kind, f.name, f.dev, 0);
                self.remember_inode(pid, f.fd, f.ino, false);
            }
        }
    }

    /// A new entry for process `p.pid`, current from `ts`.
    fn set_proc(&mut self, p: procfs::ProcInfo, ts: u64) -> u32 {
        let container = self.containers.place(&mut self.w, &p.cgroup, &p.cgroup1);
        let e = proc_entry(&mut self.w, &self.users, p.pid, &p, ts, container);
        let id = self.w.add_proc(e);
        let user = p.uid.and_then(|u| self.users.get(&u)).map_or(&[][..], Vec::as_slice);
        let shown = [
            self.shown(&p.comm),
            self.shown(&p.exe),
            self.shown(&p.cmdline),
            self.shown(user),
            self.shown(&p.cgroup),
        ];
        self.procs.insert(
            p.pid,
            Proc {
                id,
                info: p,
                start_ts: ts,
                shown,
                container,
            },
        );
        id
    }

    /// The path of cgroup `id`, which process `pid` was in; see [`path_of`]. Empty when it
    /// cannot be found (it is gone already).
    fn cgroup_path(&mut self, id: u64, pid: u32) -> Vec<u8> {
        let Some(root) = procfs::cgroup2_root() else {
            return Vec::new();
        };
        let now = || procfs::process_cgroups(pid).0;
        path_of(id, root, now, &mut self.cgroups, &mut self.cgroups_missing)
    }

    /// The path of cgroup `id` of the v1 hierarchy ([`procfs::cgroup1`]), as `cgroup_path`.
    fn cgroup1_path(&mut self, id: u64, pid: u32) -> Vec<u8> {
        let Some(v1) = procfs::cgroup1() else {
            return Vec::new();
        };
        let now = || procfs::process_cgroups(pid).1;
        path_of(id, &v1.root, now, &mut self.cgroups1, &mut self.cgroups1_missing)
    }

    fn set_file(&mut self, pid: u32, fd: i32, kind: FdType, name: Vec<u8>, dev: u32, ts: u64) -> u32 {
        let e = FileEntry {
            id: 0,
            pid,
            fd,
            kind,
            name: self.w.intern(&name),
            dev,
            open_ts: ts,
        };
        let id = self.w.add_file(e);
        let shown = self.shown(&name);
        self.files.insert(
            pid,
            fd,
            File {
                id,
                kind,
                name,
                dev,
                open_ts: ts,
                shown,
            },
        );
        id
    }

    /// Remember that fd `fd` of `pid`, just set, is the regular file with inode `ino`.
    fn remember_inode(&mut self, pid: u32, fd: i32, ino: u64, recorded: bool) {
        let Some(file) = self.files.get(pid, fd).filter(|f| f.kind == FdType::File && ino != 0) else {
            return;
        };
        if self.inodes.len() >= MAX_INODES {
            self.inodes.clear();
        }
        let opened = Opened {
            pid,
            fd,
            file: file.clone(),
            recorded,
        };
        self.inodes.insert((file.dev, ino), opened);
    }

    /// The process entry of `pid`, read from /proc if no record told us about it.
    fn proc_id(&mut self, pid: u32, comm: Option<&[u8]>) -> u32 {
        if let Some(p) = self.procs.get(&pid) {
            return p.id;
        }
        let info = procfs::process(pid)
            .or_else(|| self.early.remove(&pid))
            .unwrap_or_else(|| procfs::ProcInfo {
                pid,
                comm: comm.unwrap_or_default().to_vec(),
                ..procfs::ProcInfo::default()
            });
        self.set_proc(info, 0)
    }

    /// The process entry `pid` has now, if the tables know it (0 if not): whose drops the
    /// writer places, without reading /proc for a process it never saw.
    pub fn known_proc(&self, pid: u32) -> u32 {
        self.procs.get(&pid).map_or(0, |p| p.id)
    }

    /// Forget what exited a while ago.
    pub fn tidy(&mut self) {
        if self.exited.is_empty() {
            return;
        }
        let gone: HashSet<u32> = self.exited.drain(..).collect();
        for pid in &gone {
            self.procs.remove(pid);
            self.cwds.remove(pid);
            self.files.forget(*pid);
        }
    }

    /// Apply one record: table changes and at most one event.
    pub fn apply(&mut self, rec: Rec) -> Result<(), iocap_format::Error> {
        match rec {
            Rec::Sys(s) => self.sys_event(&s, None, false),
            Rec::SysIo(s) => self.sys_event(&s.sys, Some(&s), false),
            Rec::Blk(b) => self.blk_event(&b, false),
            Rec::EndSys(s) => self.sys_event(&s.sys, Some(&s), true),
            Rec::EndBlk(b) => self.blk_event(&b, true),
            Rec::Uring(u) => self.uring_event(&u),
            Rec::Journal(j) => self.journal_event(&j),
            Rec::Stack(s) => {
                self.stack_record(&s);
                Ok(())
            }
            Rec::Fork(f) => {
                let (exe, cmdline) = match self.procs.get(&f.ppid) {
                    Some(p) => (p.info.exe.clone(), p.info.cmdline.clone()),
                    None => (Vec::new(), Vec::new()),
                };
                let info = procfs::ProcInfo {
                    pid: f.pid,
                    ppid: f.ppid,
                    comm: cstr(&f.comm).to_vec(),
                    exe,
                    cmdline,
                    uid: Some(f.uid),
                    cgroup: self.cgroup_path(f.cgroup, f.pid),
                    cgroup1: self.cgroup1_path(f.cgroup1, f.pid),
                };
                self.set_proc(info, f.ts);
                // The child starts with copies of its parent's fds.
                let inherited: Vec<(i32, File)> =
                    (self.files.of(f.ppid)).map(|(fd, file)| (fd, file.clone())).collect();
                for (fd, file) in inherited {
                    self.set_file(f.pid, fd, file.kind, file.name, file.dev, f.ts);
                }
                if let Some(cwd) = self.cwds.get(&f.ppid).cloned() {
                    self.cwds.insert(f.pid, cwd);
                }
                Ok(())
            }
            Rec::Exec(e) => {
                // The length, and whether the arguments went on past what was read (ARGS_CUT in
                // bpf/iocap.h): a cut command line ends in `…`, as a cut name does.
                const ARGS_CUT: u16 = 0x8000;
                let args = e.args.get(..usize::from(e.args_len & !ARGS_CUT)).unwrap_or(&[]);
                let mut cmdline = procfs::cmdline(cstr_bytes(args));
                if e.args_len & ARGS_CUT != 0 {
                    cmdline.extend_from_slice("…".as_bytes());
                }
                let info = procfs::ProcInfo {
                    pid: e.pid,
                    ppid: e.ppid,
                    comm: cstr(&e.comm).to_vec(),
                    exe: cstr(&e.filename).to_vec(),
                    cmdline,
                    uid: Some(e.uid),
                    cgroup: self.cgroup_path(e.cgroup, e.pid),
                    cgroup1: self.cgroup1_path(e.cgroup1, e.pid),
                };
                self.set_proc(info, e.ts);
                Ok(())
            }
            Rec::Comm(c) => {
                let info = procfs::ProcInfo {
                    comm: cstr(&c.comm).to_vec(),
                    ..self.procs.get(&c.pid).map(|p| p.info.clone()).unwrap_or_default()
                };
                self.set_proc(procfs::ProcInfo { pid: c.pid, ..info }, c.ts);
                Ok(())
            }
            Rec::Cgroup(c) => {
                // A new entry from now on, only when a path it names changed. A process not
                // known yet (traced from this move on, `--cgroup`) is looked up first.
                self.proc_id(c.pid, None);
                let Some(was) = self.procs.get(&c.pid).map(|p| p.info.clone()) else {
                    return Ok(());
                };
                let (cgroup, cgroup1) = (self.cgroup_path(c.cgroup, c.pid), self.cgroup1_path(c.cgroup1, c.pid));
                if (&cgroup, &cgroup1) != (&was.cgroup, &was.cgroup1) {
                    self.set_proc(procfs::ProcInfo { cgroup, cgroup1, ..was }, c.ts);
                }
                Ok(())
            }
            Rec::Exit(x) => {
                self.exited.push(x.pid);
                Ok(())
            }
            Rec::Fd(f) => {
                self.fd_record(&f);
                Ok(())
            }
            Rec::Dup(d) => {
                self.dup(d.pid, d.oldfd, d.newfd, 0);
                Ok(())
            }
        }
    }

    fn dup(&mut self, pid: u32, old: i32, new: i32, ts: u64) {
        if old == new {
            return;
        }
        match self.files.get(pid, old).cloned() {
            Some(f) => {
                self.set_file(pid, new, f.kind, f.name, f.dev, ts);
            }
            None => {
                self.files.remove(pid, new);
            }
        }
    }

    fn fd_record(&mut self, f: &types::rec_fd) {
        if u32::from(f.nr) == self.chdir_nrs.0 {
            // A successful chdir's path: the working directory from now on.
            if f.path_len == 0xffff {
                let dir = self.absolute(f.pid, AT_FDCWD, cstr(&f.path), b"");
                self.cwds.insert(f.pid, dir);
            } else {
                self.cwds.remove(&f.pid);
            }
            return;
        }
        let dname = String::from_utf8_lossy(cstr(&f.dname)).into_owned();
        let kind = classify::kernel_type(f.mode, f.magic, &dname, f.family, u32::from(f.nr) == self.memfd_nr);
        // NUL-terminated (0xffff), or that and cut short (PATH_CUT, bpf/iocap.h): a cut path
        // ends in `…`, as a cut name does.
        const PATH_CUT: u16 = 0xfffe;
        let terminated = matches!(f.path_len, 0xffff | PATH_CUT);
        let path: &[u8] = if terminated {
            cstr(&f.path)
        } else {
            let n = usize::from(f.path_len).min(f.path.len());
            cstr_bytes(&f.path[..n])
        };
        let name = match kind {
            FdType::Ipv4 | FdType::Ipv6 => {
                classify::inet_name(f.family, &f.laddr, f.lport, &f.raddr, f.rport).into_bytes()
            }
            FdType::Unix => classify::unix_name(path),
            FdType::Memfd => {
                let mut v = dname.clone().into_bytes();
                if !v.starts_with(b"memfd:") {
                    v.splice(0..0, b"memfd:".iter().copied());
                }
                v
            }
            FdType::File | FdType::Directory | FdType::Device | FdType::Pipe if terminated => {
                let mut name = self.absolute(f.pid, f.dirfd, path, cstr(&f.dname));
                if f.path_len == PATH_CUT {
                    name.extend_from_slice("…".as_bytes());
                }
                name
            }
            FdType::Pipe => b"pipe".to_vec(),
            _ if !dname.is_empty() => dname.into_bytes(),
            _ => Vec::new(),
        };
        let kdev = f.sdev;
        let dev = iocap_format::mkdev(kdev >> 20, kdev & 0xfffff);
        self.set_file(f.pid, f.fd, kind, name, dev, f.ts);
        self.remember_inode(f.pid, f.fd, f.ino, true);
    }

    /// After a successful call `nr` of `pid` with first argument `arg0`: where it was an
    /// fchdir, the directory relative paths now start from, its fd's. (A chdir's path comes
    /// in a record of its own, before: [`Tracker::fd_record`].)
    fn changed_dir(&mut self, pid: u32, nr: u32, arg0: i32) {
        if nr == self.chdir_nrs.1 {
            match self.files.get(pid, arg0).map(|f| f.name.clone()) {
                Some(dir) => self.cwds.insert(pid, dir),
                None => self.cwds.remove(&pid),
            };
        }
    }

    /// An open's path made absolute against its dirfd or the process's working directory, its
    /// `.` and `..` taken out where `dname` (the kernel's last component) agrees
    /// ([`classify::resolve`]).
    fn absolute(&mut self, pid: u32, dirfd: i32, path: &[u8], dname: &[u8]) -> Vec<u8> {
        let relative = path.first() != Some(&b'/');
        if relative && dirfd == AT_FDCWD {
            if let std::collections::hash_map::Entry::Vacant(v) = self.cwds.entry(pid) {
                if let Some(c) = procfs::cwd(pid) {
                    v.insert(c);
                }
            }
        }
        let base: &[u8] = match () {
            _ if !relative => b"",
            _ if dirfd == AT_FDCWD => self.cwds.get(&pid).map_or(b"", Vec::as_slice),
            _ => self.files.get(pid, dirfd).map_or(b"", |f| f.name.as_slice()),
        };
        classify::resolve(base, path, dname)
    }

    /// A syscall; `io` when it created block requests; `unfinished` when it was still in
    /// flight at the recording's end (it has no return value, and changed no fd yet).
    fn sys_event(
        &mut self,
        s: &types::rec_sys,
        io: Option<&types::rec_sysio>,
        unfinished: bool,
    ) -> Result<(), iocap_format::Error> {
        let nr = u32::from(s.nr);
        let flags = if unfinished {
            self.sys.get(nr) & !(FD_RET | CLOSE | BYTES)
        } else {
            self.sys.get(nr)
        };
        let mut e = Event::syscall(s.ts, s.lat, s.pid, s.tid, nr, s.ret);
        if unfinished {
            e.flags = blk_flags::UNFINISHED;
        }
        e.cpu = abi::cpu(s.kind);
        if let Some(io) = io {
            e.disk_reqs = io.reqs;
            e.disk_bytes = io.bytes;
            e.disk_time = io.disk;
            e.offset = io.offset;
            e.runq = io.runq;
            e.wait = io.wait;
            e.sleeps = io.sleeps;
            e.waker = io.waker;
            e.woken = io.woken;
            abi::set_wait_by(&mut e, &io.why);
            if io.waker_pid != 0 {
                e.waker_proc = self.proc_id(io.waker_pid, None);
            }
        }
        e.proc = self.proc_id(s.pid, None);
        let stacks = self.stacks.remove(&(s.tid, s.ts));
        if flags & FD_RET != 0 && s.ret >= 0 && flags & DUP == 0 {
            e.fd = s.ret as i32;
        } else if flags & FD_ARG0 != 0 || flags & DUP != 0 {
            e.fd = s.arg0;
        }
        if flags & BYTES != 0 && s.ret > 0 {
            e.bytes = s.ret as u64;
        }
        // One lookup for the file's id and for the filter.
        let file = if e.fd >= 0 { self.files.get(s.pid, e.fd) } else { None };
        e.file = file.map_or(0, |f| f.id);
        let keep = self.keep(&e, file);
        // Into the stack table only for a call that is kept.
        if let Some((user, kernel)) = stacks.filter(|_| keep) {
            e.stack_user = self.add_stack(StackKind::User, &user);
            e.stack_kernel = self.add_stack(StackKind::Kernel, &kernel);
        }
        if flags & DUP != 0 && s.ret >= 0 && !unfinished {
            self.dup(s.pid, s.arg0, s.ret as i32, s.ts + s.lat);
        }
        if flags & CLOSE != 0 && s.ret == 0 {
            self.files.remove(s.pid, s.arg0);
        }
        if s.ret == 0 && !unfinished {
            self.changed_dir(s.pid, nr, s.arg0);
        }
        self.push(&e, keep)
    }

    /// The stacks of a slow call, named now (its process may be gone by the next record), kept
    /// for the call's record, which follows.
    fn stack_record(&mut self, s: &types::rec_stack) {
        // Calls whose record never came (a record lost to a full lane) are not kept forever.
        if self.stacks.len() >= MAX_PENDING_STACKS {
            self.stacks.clear();
        }
        let user_n = usize::from(s.user_n).min(s.user.len());
        let kernel_n = usize::from(s.kernel_n).min(s.kernel.len());
        let user: Vec<UserFrame> = s.user[..user_n]
            .iter()
            .filter_map(|f| match f.status {
                USER_FRAME_FILE => Some(UserFrame::File(f.build_id, f.at)),
                USER_FRAME_IP => Some(UserFrame::Ip(f.at)),
                _ => None,
            })
            .collect();
        let exe = self.procs.get(&s.pid).map_or(&[][..], |p| p.info.exe.as_slice());
        let named = crate::stacks::with_namer(|namer| {
            let user = if user.is_empty() {
                Vec::new()
            } else {
                namer.user(s.pid, exe, &user)
            };
            (user, namer.kernel(&s.kernel[..kernel_n]))
        });
        self.stacks.insert((s.tid, s.ts), named);
    }

    /// The id of a named stack in the capture's table; 0 for an empty one.
    fn add_stack(&mut self, kind: StackKind, frames: &[Named]) -> u32 {
        if frames.is_empty() {
            return 0;
        }
        let w = &mut self.w;
        let frames = frames
            .iter()
            .map(|f| StackFrame {
                addr: f.addr,
                sym: f.sym.as_ref().map_or(0, |s| w.intern(s.as_bytes())),
                module: f.module.as_ref().map_or(0, |m| w.intern(m)),
                build_id: f.build_id.as_ref().map_or(0, |b| w.intern(b.as_bytes())),
            })
            .collect();
        w.add_stack(&Stack { kind, frames })
    }

    /// A completion of an io_uring request: its file by the fd it was submitted with, else
    /// (a registered file) by its inode.
    fn uring_event(&mut self, u: &types::rec_uring) -> Result<(), iocap_format::Error> {
        let op = u32::from(u.op);
        let mut e = Event {
            class: Class::IoUring,
            fd: u.fd,
            disk_reqs: u.reqs,
            disk_bytes: u.bytes,
            disk_time: u.disk,
            cpu: abi::cpu(u.kind),
            ..Event::syscall(u.ts, u.lat, u.pid, u.tid, op, u.res)
        };
        e.proc = self.proc_id(u.pid, None);
        let mut file = None;
        if u.fd >= 0 {
            file = self.files.get(u.pid, u.fd);
        }
        if file.is_none() && u.ino != 0 {
            file = self.inodes.get(&(u.ino_dev, u.ino)).map(|o| &o.file);
        }
        e.file = file.map_or(0, |f| f.id);
        if u.res > 0
            && uring::op_name(op).is_some_and(|n| uring::READ_OPS.contains(&n) || uring::WRITE_OPS.contains(&n))
        {
            e.bytes = u.res as u64;
        }
        let keep = self.keep(&e, file);
        self.push(&e, keep)
    }

    /// A journal commit: jbd2's thread, the transaction in `offset` (as its requests have it),
    /// its requests' sums as a call's.
    fn journal_event(&mut self, j: &types::rec_journal) -> Result<(), iocap_format::Error> {
        let mut e = Event {
            class: Class::Journal,
            ts: j.ts,
            latency: j.lat,
            pid: j.pid,
            tid: j.tid,
            fd: -1,
            offset: u64::from(j.tx),
            disk_reqs: j.reqs,
            disk_bytes: j.bytes,
            disk_time: j.disk,
            cpu: abi::cpu(j.kind),
            ..Event::default()
        };
        e.proc = self.proc_id(j.pid, None);
        let keep = self.keep(&e, None);
        self.push(&e, keep)
    }

    /// [`blk_flags::SEQUENTIAL`] when a request of `bytes` at `sector` starts where the
    /// device's previous one ended, [`blk_flags::RANDOM`] when it does not, neither for the
    /// device's first (biopattern's rule, over the requests the kernel handed over).
    fn pattern(&mut self, dev: u32, sector: u64, bytes: u32) -> u32 {
        let end = sector.saturating_add(u64::from(bytes) / 512);
        match self.last_end.insert(dev, end) {
            Some(prev) if prev == sector => blk_flags::SEQUENTIAL,
            Some(_) => blk_flags::RANDOM,
            None => 0,
        }
    }

    /// A block request; `unfinished` when it was still in flight at the recording's end.
    fn blk_event(&mut self, b: &types::rec_blk, unfinished: bool) -> Result<(), iocap_format::Error> {
        if b.dev != 0 && !self.devs.contains_key(&b.dev) {
            // A disk that appeared while recording (losetup, hotplug): name it.
            for d in procfs::devices() {
                if !self.devs.contains_key(&d.dev) {
                    self.w.add_device(&d);
                    self.devs.insert(d.dev, Dev::new(&d));
                }
            }
            self.devs.entry(b.dev).or_insert(Dev {
                raw: None,
                shown: String::new(),
            });
        }
        let comm = cstr(&b.comm);
        let proc = if b.has_pid != 0 {
            self.proc_id(b.pid, Some(comm))
        } else {
            0
        };
        let cause = Cause::from_code(b.cause);
        let mut e = Event {
            class: Class::Block,
            ts: b.ts,
            latency: b.lat,
            pid: b.pid,
            tid: b.tid,
            proc,
            ret: if b.error != 0 { -5 } else { 0 },
            fd: -1,
            bytes: u64::from(b.bytes),
            dev: b.dev,
            sector: b.sector,
            queue: b.queue,
            op: block_op(b.op) as u8,
            flags: b.cmd_flags
                | self.pattern(b.dev, b.sector, b.bytes)
                | if unfinished { blk_flags::UNFINISHED } else { 0 },
            cause: cause as u8,
            cpu: abi::cpu(b.kind),
            prio: u32::from(b.ioprio),
            ..Event::default()
        };
        // The file: the fd of the syscall that issued it, else the inode whose pages move.
        let mut file = None;
        match cause {
            Cause::Syscall => {
                let nr = u32::from(b.nr);
                e.nr = nr;
                e.link = b.ts.saturating_sub(b.link);
                if self.sys.get(nr) & FD_ARG0 != 0 {
                    e.fd = b.fd;
                    file = self.files.get(b.pid, b.fd);
                }
            }
            Cause::IoUring => {
                e.nr = u32::from(b.nr);
                e.link = b.ts.saturating_sub(b.link);
                if b.fd >= 0 {
                    e.fd = b.fd;
                    file = self.files.get(b.pid, b.fd);
                }
            }
            Cause::Journal => {
                // The transaction: in `offset`, which no block request's field reads (in
                // `nr`, a commit each, it would split the chunks' rollups and type keys).
                e.offset = u64::from(b.fd as u32);
                e.link = b.ts.saturating_sub(b.link);
            }
            Cause::None | Cause::Writeback => {}
        }
        if file.is_none() && b.ino != 0 {
            let opened = self.inodes.get(&(b.ino_dev, b.ino));
            if cause == Cause::Writeback && self.opened_writeback_only && !opened.is_some_and(|o| o.recorded) {
                return Ok(());
            }
            file = opened.map(|o| &o.file);
        }
        e.file = file.map_or(0, |f| f.id);
        let keep = self.keep(&e, file);
        self.push(&e, keep)
    }
}

/// The path of cgroup `id` of the hierarchy mounted at `root`, from `paths`. A new id (a
/// container started since) is looked for first where the process is now (`now`: its path in
/// /proc/PID/cgroup, taken when that directory's inode is `id`), then by walking the hierarchy
/// again into `paths`: once per new id (a short-lived process, runc's init, may be gone by
/// then, its cgroup not), never again for one the walk did not find (`missing`: gone already).
fn path_of(
    id: u64,
    root: &std::path::Path,
    now: impl FnOnce() -> Vec<u8>,
    paths: &mut HashMap<u64, Vec<u8>>,
    missing: &mut HashSet<u64>,
) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::MetadataExt;
    if id == 0 {
        return Vec::new();
    }
    if let Some(p) = paths.get(&id) {
        return p.clone();
    }
    let path = now();
    let rel = path.strip_prefix(b"/").unwrap_or(&path);
    let dir = root.join(std::ffi::OsStr::from_bytes(rel));
    if !path.is_empty() && std::fs::metadata(dir).is_ok_and(|m| m.ino() == id) {
        paths.insert(id, path.clone());
        return path;
    }
    if missing.contains(&id) {
        return Vec::new();
    }
    *paths = procfs::cgroup_paths_under(root);
    match paths.get(&id) {
        Some(p) => p.clone(),
        None => {
            missing.insert(id);
            Vec::new()
        }
    }
}

/// The table entry of process `pid` as `p` describes it, its strings interned in `w`, in
/// container entry `container` (0: none).
fn proc_entry<W: Write>(
    w: &mut Writer<W>,
    users: &HashMap<u32, Vec<u8>>,
    pid: u32,
    p: &procfs::ProcInfo,
    ts: u64,
    container: u32,
) -> ProcEntry {
    let user = p.uid.and_then(|u| users.get(&u)).map_or(&[][..], Vec::as_slice);
    ProcEntry {
        id: 0,
        pid,
        ppid: p.ppid,
        name: w.intern(&p.comm),
        exe: w.intern(&p.exe),
        cmdline: w.intern(&p.cmdline),
        start_ts: ts,
        uid: p.uid,
        user: w.intern(user),
        cgroup: w.intern(&p.cgroup),
        container,
    }
}

fn cstr_bytes(b: &[i8]) -> &[u8] {
    // SAFETY: i8 and u8 have the same layout; every bit pattern is valid for both.
    unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<u8>(), b.len()) }
}

/// The kernel's `REQ_OP_*` (low 8 bits of cmd_flags) as a [`BlockOp`].
pub fn block_op(op: u8) -> BlockOp {
    match op {
        0 => BlockOp::Read,
        1 => BlockOp::Write,
        2 => BlockOp::Flush,
        3 => BlockOp::Discard,
        _ => BlockOp::Other,
    }
}
