//! `--stacks`: naming the frames of the stacks the kernel sent (`rec_stack`), on the traced
//! host while the recording runs, since only it has the binaries and the processes' maps.
//!
//! The kernel gives a user frame as its file's build ID and the offset in that file (the same
//! in every run of the binary, whatever the process's layout), which stay true once the process
//! is gone. The file is found by its build ID: among the files the process maps, its executable,
//! or those every live process maps. Its symbols (and its debug file's) then name the offset. A
//! frame the kernel gave as a bare address goes through the process's maps while it lives. A
//! kernel address is named from `/proc/kallsyms`. A frame that cannot be named (a file not
//! found, a stripped binary, JIT code) keeps what is known: its build ID and offset, or its
//! bare address.
//!
//! The paths come from the traced processes (their maps, their exec's file name): each is
//! opened without blocking and kept only when it is a regular file, held open by this process
//! from then on (a path that later becomes a FIFO or a device is never reopened).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use blazesym::normalize::{Normalizer, UserMeta};
use blazesym::symbolize::source::{Elf, Kernel, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};
use blazesym::{MaybeDefault, Pid};

/// A frame as found on this host: its address (a user frame's file offset when its file was
/// found, else the address as the kernel gave it), its function's name, its file and the
/// file's build ID in hex.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Named {
    pub addr: u64,
    pub sym: Option<String>,
    pub module: Option<Vec<u8>>,
    pub build_id: Option<String>,
}

/// What `[kernel]` frames' module is called in the capture (a kernel module's own name, in
/// brackets, when kallsyms gives one).
pub const KERNEL_MODULE: &[u8] = b"[kernel]";

thread_local! {
    /// The writer thread's [`Namer`], made at its first stack: blazesym's caches are not
    /// `Send`, so they live on the thread that uses them rather than in the tracker.
    static NAMER: RefCell<Option<Namer>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's [`Namer`].
pub fn with_namer<T>(f: impl FnOnce(&mut Namer) -> T) -> T {
    NAMER.with(|n| f(n.borrow_mut().get_or_insert_with(Namer::default)))
}

/// Names frames, with what it learnt kept for the next stacks: each file's symbols
/// (blazesym's caches) and each kernel address's name.
pub struct Namer {
    symbolizer: Symbolizer,
    normalizer: Normalizer,
    kernel: HashMap<u64, Named>,
    /// Files by build ID (`None`: looked for and not found).
    files: HashMap<[u8; 20], Option<CodeFile>>,
    /// The (process when it has a root of its own, path) pairs whose build ID was read.
    seen_paths: HashSet<(Option<u32>, Vec<u8>)>,
    /// When a search of every process's maps last began ([`RESCAN`]), and the processes it
    /// has still to look at.
    scanned: Option<Instant>,
    to_scan: Vec<u32>,
    /// This process's root (`/proc/self/root`), to tell a container's processes.
    own_root: Option<PathBuf>,
}

impl Default for Namer {
    fn default() -> Self {
        Namer {
            symbolizer: Symbolizer::new(),
            normalizer: Normalizer::new(),
            kernel: HashMap::new(),
            files: HashMap::new(),
            seen_paths: HashSet::new(),
            scanned: None,
            to_scan: Vec::new(),
            own_root: std::fs::read_link("/proc/self/root").ok(),
        }
    }
}

/// A user frame as the kernel gave it (`struct user_frame` in bpf/iocap.h).
#[derive(Clone, Copy, Debug)]
pub enum UserFrame {
    /// In the file with this build ID (as the kernel pads it, to 20 bytes), at this offset.
    File([u8; 20], u64),
    /// At this address of the process.
    Ip(u64),
}

/// A file that holds code: its path as the traced process sees it, and the file itself, held
/// open (blazesym reads it through `/proc/self/fd/N`, `open`).
#[derive(Clone, Debug)]
struct CodeFile {
    shown: Vec<u8>,
    open: PathBuf,
    _held: std::sync::Arc<std::fs::File>,
}

/// The most code files held open: a host's distinct binaries and libraries are hundreds; a
/// file past these is left unnamed rather than run the recorder out of fds.
const MAX_CODE_FILES: usize = 4096;

/// How long after a search of every process's maps for a build ID another may be made.
const RESCAN: Duration = Duration::from_secs(10);

/// The longest a stack's naming spends on that search; the next stack goes on with it.
const SCAN_SLICE: Duration = Duration::from_millis(10);

impl Namer {
    /// The frames of a user stack of process `pid` (whose executable, as exec named it, is
    /// `exe`), innermost first.
    pub fn user(&mut self, pid: u32, exe: &[u8], frames: &[UserFrame]) -> Vec<Named> {
        let unknown = |files: &HashMap<[u8; 20], Option<CodeFile>>| {
            frames
                .iter()
                .any(|f| matches!(f, UserFrame::File(id, _) if !files.contains_key(id)))
        };
        if unknown(&self.files) {
            self.learn_process(pid, exe);
        }
        if unknown(&self.files) {
            self.learn_everywhere();
        }
        let mut out = Vec::with_capacity(frames.len());
        let mut bare = Vec::new();
        for f in frames {
            match *f {
                // Its build ID kept either way: a host with the file names it later.
                UserFrame::File(id, offset) => out.push(match self.files.get(&id).cloned().flatten() {
                    Some(file) => Named {
                        addr: offset,
                        sym: self.elf_name(&file.open, offset),
                        module: Some(file.shown),
                        build_id: Some(hex(trimmed(&id))),
                    },
                    None => Named {
                        addr: offset,
                        build_id: Some(hex(trimmed(&id))),
                        ..Named::default()
                    },
                }),
                UserFrame::Ip(ip) => {
                    bare.push((out.len(), ip));
                    out.push(Named {
                        addr: ip,
                        ..Named::default()
                    });
                }
            }
        }
        // Bare addresses through the process's maps, while it lives.
        if !bare.is_empty() {
            let ips: Vec<u64> = bare.iter().map(|&(_, ip)| ip).collect();
            if let Ok(norm) = self.normalizer.normalize_user_addrs(Pid::from(pid), &ips) {
                for (&(i, _), (offset, meta)) in bare.iter().zip(&norm.outputs) {
                    if let Some(UserMeta::Elf(elf)) = norm.meta.get(*meta) {
                        out[i] = Named {
                            addr: *offset,
                            sym: self.elf_name(&elf.path, *offset),
                            module: Some(path_bytes(&elf.path)),
                            build_id: elf.build_id.as_ref().map(|b| hex(b)),
                        };
                    }
                }
            }
        }
        out
    }

    /// Learn the build IDs of the files process `pid` has mapped, while it lives, and of its
    /// executable, which outlives it.
    fn learn_process(&mut self, pid: u32, exe: &[u8]) {
        if let Ok(maps) = std::fs::read(format!("/proc/{pid}/maps")) {
            for path in mapped_files(&maps) {
                self.learn_file(Some(pid), path);
            }
        }
        if exe.starts_with(b"/") {
            self.learn_file(None, exe);
        }
    }

    /// A build ID still unknown: look through every live process's maps (a library the
    /// traced process had is likely mapped by another), a round at most once per [`RESCAN`],
    /// each call for at most [`SCAN_SLICE`]: the writer thread must not stall on a host of
    /// thousands of processes (a stall fills the rings).
    fn learn_everywhere(&mut self) {
        if self.to_scan.is_empty() {
            if self.scanned.is_some_and(|t| t.elapsed() < RESCAN) {
                return;
            }
            self.scanned = Some(Instant::now());
            let Ok(dir) = std::fs::read_dir("/proc") else {
                return;
            };
            self.to_scan = (dir.flatten())
                .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                .collect();
        }
        let started = Instant::now();
        while let Some(pid) = self.to_scan.pop() {
            if let Ok(maps) = std::fs::read(format!("/proc/{pid}/maps")) {
                for path in mapped_files(&maps) {
                    self.learn_file(Some(pid), path);
                }
            }
            if started.elapsed() >= SCAN_SLICE {
                break;
            }
        }
    }

    /// Read the build ID of `path` (as process `pid` sees it, when given) once.
    fn learn_file(&mut self, pid: Option<u32>, path: &[u8]) {
        use std::os::unix::ffi::OsStrExt;
        if !self
            .seen_paths
            .insert((pid.filter(|_| self.in_container(pid)), path.to_vec()))
        {
            return;
        }
        let host = PathBuf::from(std::ffi::OsStr::from_bytes(path));
        // The host's file of that name first; else, for a process in another mount namespace,
        // the file through its root.
        let mut tries = vec![host];
        if let Some(pid) = pid {
            let mut inside = format!("/proc/{pid}/root").into_bytes();
            inside.extend_from_slice(path);
            tries.push(PathBuf::from(std::ffi::OsStr::from_bytes(&inside)));
        }
        for path_tried in tries {
            if self.files.len() >= MAX_CODE_FILES {
                return;
            }
            let Some(file) = open_regular(&path_tried) else {
                continue;
            };
            use std::os::fd::AsRawFd;
            let open = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
            if let Ok(Some(id)) = blazesym::helper::read_elf_build_id(&open) {
                let mut key = [0u8; 20];
                let n = id.len().min(20);
                key[..n].copy_from_slice(&id[..n]);
                self.files.entry(key).or_insert(Some(CodeFile {
                    shown: path.to_vec(),
                    open,
                    _held: std::sync::Arc::new(file),
                }));
            }
        }
    }

    /// Whether process `pid` has a root of its own (a container): its paths are its own.
    fn in_container(&self, pid: Option<u32>) -> bool {
        let Some(pid) = pid else { return false };
        match (std::fs::read_link(format!("/proc/{pid}/root")), &self.own_root) {
            (Ok(root), Some(own)) => &root != own,
            _ => false,
        }
    }

    /// The frames of a kernel stack, innermost first.
    pub fn kernel(&mut self, addrs: &[u64]) -> Vec<Named> {
        let missing: Vec<u64> = addrs.iter().copied().filter(|a| !self.kernel.contains_key(a)).collect();
        if !missing.is_empty() {
            let src = Source::Kernel(Kernel {
                kallsyms: MaybeDefault::Default,
                // No vmlinux image is looked for: kallsyms names every function, and a search
                // of the usual places for one would be slower than the names are worth.
                vmlinux: MaybeDefault::None,
                ..Kernel::default()
            });
            let found = self.symbolizer.symbolize(&src, Input::AbsAddr(&missing)).ok();
            for (i, &addr) in missing.iter().enumerate() {
                let mut n = Named {
                    addr,
                    module: Some(KERNEL_MODULE.to_vec()),
                    ..Named::default()
                };
                if let Some(Symbolized::Sym(s)) = found.as_ref().and_then(|f| f.get(i)) {
                    n.sym = Some(s.name.to_string());
                    if let Some(m) = s.module.as_ref().map(|m| m.to_string_lossy()).filter(|m| !m.is_empty()) {
                        n.module = Some(format!("[{m}]").into_bytes());
                    }
                }
                self.kernel.insert(addr, n);
            }
        }
        let out: Vec<Named> = addrs
            .iter()
            .map(|a| self.kernel.get(a).cloned().unwrap_or_default())
            .collect();
        out
    }

    /// The name of the function at `offset` of file `path`.
    fn elf_name(&self, path: &Path, offset: u64) -> Option<String> {
        // With the debug file's symbols when the host has one (libc6-dbg's name the C
        // library's static functions, `__libc_start_call_main`): a parse per library, once.
        let src = Source::Elf(Elf {
            debug_syms: true,
            ..Elf::new(path)
        });
        match self.symbolizer.symbolize_single(&src, Input::FileOffset(offset)) {
            Ok(Symbolized::Sym(s)) => Some(s.name.to_string()),
            _ => None,
        }
    }
}

/// `path` opened for reading when it is a regular file: without blocking on a FIFO, without
/// becoming a controlling terminal, and checked on the opened file, not the name (which a
/// traced process may change meanwhile).
fn open_regular(path: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    // A device or FIFO by name is not even opened.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .ok()?;
    file.metadata().ok().filter(std::fs::Metadata::is_file).map(|_| file)
}

/// The files a `/proc/PID/maps` maps (absolute paths, not deleted), each once.
fn mapped_files(maps: &[u8]) -> Vec<&[u8]> {
    let mut out: Vec<&[u8]> = Vec::new();
    for line in maps.split(|&b| b == b'\n') {
        // address perms offset dev inode path: the path starts at the first `/` after the inode.
        let Some(at) = line.iter().position(|&b| b == b'/') else {
            continue;
        };
        let path = &line[at..];
        if path.ends_with(b" (deleted)") || out.last() == Some(&path) {
            continue;
        }
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// A build ID less the zeros the kernel pads it with to 20 bytes (an MD5 one has 16).
fn trimmed(id: &[u8; 20]) -> &[u8] {
    let end = id.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &id[..end.clamp(16, 20)]
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn path_bytes(p: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_opened() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.so");
        std::fs::write(&file, b"\x7fELF").unwrap();
        assert!(open_regular(&file).is_some());
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo has no other precondition.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Were it opened for reading, it would wait for a writer: the test would hang.
        assert!(open_regular(&fifo).is_none());
        assert!(open_regular(Path::new("/dev/null")).is_none());
        assert!(open_regular(dir.path()).is_none());
        assert!(open_regular(&dir.path().join("gone")).is_none());
    }

    #[test]
    fn maps_name_each_mapped_file_once() {
        let maps = b"55d0c0a00000-55d0c0a02000 r--p 00000000 fe:01 123 /usr/bin/cat\n\
55d0c0a02000-55d0c0a07000 r-xp 00002000 fe:01 123 /usr/bin/cat\n\
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n\
7f1000000000-7f1000100000 r-xp 00000000 fe:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6\n\
7f2000000000-7f2000001000 rw-s 00000000 00:01 789 /memfd:jit (deleted)\n\
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]\n";
        let files: Vec<&[u8]> = mapped_files(maps);
        assert_eq!(files, [&b"/usr/bin/cat"[..], b"/usr/lib/x86_64-linux-gnu/libc.so.6"]);
        let id = [0xab; 16].iter().chain(&[0; 4]).copied().collect::<Vec<u8>>();
        assert_eq!(hex(trimmed(&id.try_into().unwrap())), "ab".repeat(16));
    }
}
