//! The files iocap writes (`record -w`, `export -o`): always a new file, created 0600 and owned
//! by whoever runs iocap, put in place by a rename.
//!
//! Opening an existing path in place would keep its owner, its mode and its other hard links (a
//! user who pre-created `trace.cap` 0666 in /tmp would read root's capture), would write through
//! a symlink, and would turn a device node or a FIFO into a regular file when renamed over. So
//! the new file is made unnamed in the target's directory (`O_TMPFILE`): nothing exists under
//! any name until [`NewFile::publish`] links it in place, and an iocap killed before that
//! (SIGKILL included) leaves nothing behind. Where the filesystem has no `O_TMPFILE` it falls
//! back to a hidden `O_EXCL` name, removed on every exit path but SIGKILL.
//!
//! What is at the path decides what happens, through [`Existing::of`]: a regular file or a
//! symlink is replaced, a directory, block device or socket refused; a character device or a
//! FIFO (`-o /dev/null`, `-o >(gzip)`) is written in place by `export`, as `cp` and `tee` do,
//! and refused by `record`, whose capture must be a file of its own.

use std::ffi::{CString, OsString};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicPtr, Ordering};

use anyhow::{anyhow, bail, Context};

/// What is at a target path now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    Nothing,
    Regular,
    Symlink,
    Directory,
    CharDevice,
    Fifo,
    BlockDevice,
    Socket,
}

impl Existing {
    /// Look at `path` without following a symlink there.
    pub fn of(path: &Path) -> anyhow::Result<Existing> {
        let m = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Nothing),
            Err(e) => return Err(anyhow!("{}: {e}", path.display())),
        };
        let t = m.file_type();
        Ok(if t.is_file() {
            Existing::Regular
        } else if t.is_symlink() {
            Existing::Symlink
        } else if t.is_dir() {
            Existing::Directory
        } else if t.is_char_device() {
            Existing::CharDevice
        } else if t.is_fifo() {
            Existing::Fifo
        } else if t.is_block_device() {
            Existing::BlockDevice
        } else {
            Existing::Socket
        })
    }

    fn what(self) -> &'static str {
        match self {
            Existing::Nothing => "nothing",
            Existing::Regular => "a file",
            Existing::Symlink => "a symbolic link",
            Existing::Directory => "a directory",
            Existing::CharDevice => "a character device",
            Existing::Fifo => "a FIFO",
            Existing::BlockDevice => "a block device",
            Existing::Socket => "a socket",
        }
    }

    /// The one-line refusal for writing a new file over this.
    pub fn refuse(self, path: &Path, why: &str) -> anyhow::Error {
        anyhow!("{} is {}: {why}", path.display(), self.what())
    }
}

/// Which file an open file or a path is (device and inode): to tell later whether a path still
/// names the file it named (`record`'s files at the end, a follower's), or that two paths name
/// one file (a rotation that loops).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileId(u64, u64);

impl FileId {
    /// The file `file` is (for `record`, which the viewer-only build has not).
    #[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
    pub fn of(file: &File) -> std::io::Result<FileId> {
        use std::os::unix::fs::MetadataExt;
        file.metadata().map(|m| FileId(m.dev(), m.ino()))
    }

    /// The file `path` names, a link not followed; `None` when it names none.
    pub fn at(path: &Path) -> Option<FileId> {
        use std::os::unix::fs::MetadataExt;
        std::fs::symlink_metadata(path).ok().map(|m| FileId(m.dev(), m.ino()))
    }
}

/// Refuse, before anything is started, a path a capture must not be written to (`record -w`,
/// `--save`): anything but nothing or a regular file (which is replaced by a new file, never
/// opened in place).
pub fn check_capture_target(path: &Path) -> anyhow::Result<()> {
    check_new_file_target(path, "a capture")?;
    // A recording in progress there (another recorder's, a `--save` of a stream): replacing
    // it would lose that recording while its recorder goes on writing to the unlinked file.
    // Read-only, never following a link nor waiting on a FIFO planted since the look above.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    if let Ok(f) = opened {
        if f.metadata().is_ok_and(|m| m.is_file()) && iocap_format::writer_alive(&f) {
            bail!(
                "{} is being recorded now (another iocap holds it): pick another path",
                path.display()
            );
        }
    }
    Ok(())
}

/// Refuse a path that `what` ("a capture", "a man page") must not be written to: anything but
/// nothing or a regular file, which is replaced by a new file, never opened in place.
pub fn check_new_file_target(path: &Path, what: &str) -> anyhow::Result<()> {
    match Existing::of(path)? {
        Existing::Nothing | Existing::Regular => Ok(()),
        Existing::Symlink => {
            Err(Existing::Symlink.refuse(path, "refusing to write through it; remove it or pick another path"))
        }
        e => Err(e.refuse(
            path,
            &format!("{what} is written to a new regular file; pick another path"),
        )),
    }
}

/// A new file being written, not yet (or already) linked at its path.
#[derive(Debug)]
pub struct NewFile {
    path: PathBuf,
    /// A descriptor of the file, kept to link it by (the caller owns the one it writes to).
    fd: File,
    /// The hidden name it has when the filesystem had no `O_TMPFILE`; removed unless published.
    named: Option<PathBuf>,
    published: bool,
}

/// Create a new file (0600) for `path` in its directory, without a name yet. Refuses a path
/// whose directory is `/dev` (or below it, but for `/dev/shm`): a regular file there is a
/// device node someone forgot, never what was meant.
pub fn create(path: &Path) -> anyhow::Result<(File, NewFile)> {
    let name = path
        .file_name()
        .filter(|n| !n.is_empty() && *n != "." && *n != "..")
        .ok_or_else(|| anyhow!("{}: not a file name", path.display()))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let real = std::fs::canonicalize(&dir).with_context(|| format!("{}", dir.display()))?;
    if real.starts_with("/dev") && !real.starts_with("/dev/shm") {
        bail!(
            "{}: refusing to create a regular file under /dev (a device node would be expected there)",
            path.display()
        );
    }
    let (file, named) = match create_unnamed(&dir) {
        Ok(f) => (f, None),
        // No O_TMPFILE on this filesystem (or system): a hidden name of our own.
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)) => {
            let (tmp, f) = create_hidden(&dir, name)?;
            (f, Some(tmp))
        }
        Err(e) => return Err(anyhow!("cannot create {}: {e}", path.display())),
    };
    let fd = file.try_clone().with_context(|| format!("{}", path.display()))?;
    if let Some(tmp) = &named {
        cleanup::remember(tmp);
    }
    Ok((
        file,
        NewFile {
            path: path.to_path_buf(),
            fd,
            named,
            published: false,
        },
    ))
}

impl NewFile {
    /// Put the file at its path, replacing whatever is there now (a regular file, a symlink,
    /// anything planted since it was checked) by a rename, which never follows a symlink.
    pub fn publish(&mut self) -> anyhow::Result<()> {
        if self.published {
            return Ok(());
        }
        let err = |e: std::io::Error| anyhow!("cannot create {}: {e}", self.path.display());
        match self.named.take() {
            Some(tmp) => {
                std::fs::rename(&tmp, &self.path).map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    err(e)
                })?;
                cleanup::forget();
            }
            None => {
                // Straight to the path when nothing is there; else under a hidden name, then
                // renamed over, as link(2) never replaces.
                match link(&self.fd, &self.path) {
                    Ok(()) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => {
                        let dir = match self.path.parent() {
                            Some(p) if !p.as_os_str().is_empty() => p,
                            _ => Path::new("."),
                        };
                        let name = self.path.file_name().unwrap_or_default();
                        let tmp = hidden_names(dir, name)
                            .find_map(|tmp| match link(&self.fd, &tmp) {
                                Ok(()) => Some(Ok(tmp)),
                                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => None,
                                Err(e) => Some(Err(e)),
                            })
                            .unwrap_or_else(|| Err(std::io::Error::other("no free temporary name")))
                            .map_err(err)?;
                        std::fs::rename(&tmp, &self.path).map_err(|e| {
                            let _ = std::fs::remove_file(&tmp);
                            err(e)
                        })?;
                    }
                    Err(e) => return Err(err(e)),
                }
            }
        }
        self.published = true;
        Ok(())
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if let Some(tmp) = self.named.take() {
            let _ = std::fs::remove_file(tmp);
            cleanup::forget();
        }
    }
}

#[cfg(target_os = "linux")]
fn create_unnamed(dir: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
}

#[cfg(not(target_os = "linux"))]
fn create_unnamed(_dir: &Path) -> std::io::Result<File> {
    Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// Give the unnamed file `fd` the name `at` (fails with EEXIST when something is there).
#[cfg(target_os = "linux")]
fn link(fd: &File, at: &Path) -> std::io::Result<()> {
    let to = CString::new(at.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let proc_path = CString::new(format!("/proc/self/fd/{}", fd.as_raw_fd())).map_err(std::io::Error::other)?;
    // SAFETY: both paths are NUL-terminated strings that live across the call.
    let r = unsafe {
        libc::linkat(
            libc::AT_FDCWD,
            proc_path.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_SYMLINK_FOLLOW,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::ENOENT) || Path::new("/proc/self/fd").exists() {
        return Err(e);
    }
    // No /proc: AT_EMPTY_PATH links the descriptor itself (needs CAP_DAC_READ_SEARCH).
    let empty = c"";
    // SAFETY: as above; the empty path is a valid C string.
    let r = unsafe {
        libc::linkat(
            fd.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn link(_fd: &File, _at: &Path) -> std::io::Result<()> {
    // Only unnamed files are linked, and only Linux makes them.
    Err(std::io::Error::from_raw_os_error(libc::EOPNOTSUPP))
}

/// `.NAME.iocap-PID-N.tmp` in `dir`, for N = 0..16.
fn hidden_names<'a>(dir: &'a Path, name: &'a std::ffi::OsStr) -> impl Iterator<Item = PathBuf> + 'a {
    (0..16u32).map(move |n| {
        let mut s = OsString::from(".");
        s.push(name);
        s.push(format!(".iocap-{}-{n}.tmp", std::process::id()));
        dir.join(s)
    })
}

/// A new hidden file in `dir`, created exclusively (`O_EXCL` never follows a symlink).
fn create_hidden(dir: &Path, name: &std::ffi::OsStr) -> anyhow::Result<(PathBuf, File)> {
    for tmp in hidden_names(dir, name) {
        let r = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&tmp);
        match r {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(anyhow!("cannot create a file in {}: {e}", dir.display())),
        }
    }
    bail!("cannot create a file in {}: no free temporary name", dir.display())
}

/// Open an existing character device or FIFO to write to it in place (no create, no
/// truncate). `follow`: through a symlink (`/dev/stdout` is one), which the caller has seen
/// leads to a device or FIFO; a symlink to a regular file is never written through.
pub fn open_in_place(path: &Path, follow: bool) -> anyhow::Result<File> {
    let flags = if follow {
        libc::O_CLOEXEC
    } else {
        libc::O_NOFOLLOW | libc::O_CLOEXEC
    };
    OpenOptions::new()
        .write(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| anyhow!("cannot write to {}: {e}", path.display()))
}

/// Whether a symlink at `path` leads to a character device or a FIFO (`/dev/stdout`,
/// `/dev/fd/3`, a process substitution).
pub fn leads_to_stream(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device() || m.file_type().is_fifo())
}

/// The hidden temporary of the fallback path, removed by SIGINT, SIGTERM and SIGHUP before
/// they end the process, as the handlers that `Drop` relies on never run then.
mod cleanup {
    use super::*;

    static TMP: AtomicPtr<libc::c_char> = AtomicPtr::new(std::ptr::null_mut());

    extern "C" fn on_signal(sig: libc::c_int) {
        let p = TMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
        // SAFETY: unlink, signal and raise are async-signal-safe; `p` is a leaked C string.
        unsafe {
            if !p.is_null() {
                libc::unlink(p);
            }
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }

    pub fn remember(tmp: &Path) {
        let Ok(c) = CString::new(tmp.as_os_str().as_bytes()) else {
            return;
        };
        let old = TMP.swap(c.into_raw(), Ordering::SeqCst);
        if !old.is_null() {
            // SAFETY: every pointer stored in TMP came from CString::into_raw.
            drop(unsafe { CString::from_raw(old) });
        }
        for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            let ours = on_signal as *const () as libc::sighandler_t;
            // SAFETY: swapping a disposition; the handler is async-signal-safe.
            unsafe {
                let cur = libc::signal(sig, ours);
                // An ignored signal stays ignored, and a caller's own handler (record's Ctrl-C)
                // stays: it stops and cleans up itself.
                if cur != libc::SIG_DFL && cur != ours {
                    libc::signal(sig, cur);
                }
            }
        }
    }

    pub fn forget() {
        let old = TMP.swap(std::ptr::null_mut(), Ordering::SeqCst);
        if !old.is_null() {
            // SAFETY: as in `remember`.
            drop(unsafe { CString::from_raw(old) });
        }
    }
}

/// Write `path` with `write`: a new file (0600) put in place once whole, or a character device
/// or FIFO written as it is (`-o /dev/null`, `-o /dev/stdout`); a directory, block device or
/// socket refused.
pub fn write_to(path: &Path, write: &dyn Fn(&mut (dyn Write + Send)) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let in_place = |follow: bool| -> anyhow::Result<()> {
        let mut out = BufWriter::new(open_in_place(path, follow)?);
        write(&mut out)?;
        out.flush().with_context(|| format!("{}", path.display()))?;
        Ok(())
    };
    match Existing::of(path)? {
        // `-o /dev/null`, `-o /dev/stdout` (a symlink), a FIFO: written as asked, as `cp` and
        // `tee` do; replacing them would turn a device node into a regular file for everyone.
        Existing::CharDevice | Existing::Fifo => in_place(false),
        Existing::Symlink if leads_to_stream(path) => in_place(true),
        e @ (Existing::Directory | Existing::BlockDevice | Existing::Socket) => Err(e.refuse(
            path,
            "an export is written to a file, a character device or a FIFO (or `-o -`; with --format parquet, into a directory's dataset)",
        )),
        Existing::Nothing | Existing::Regular | Existing::Symlink => write_whole(path, write),
    }
}

/// Write a new file at `path` with `write` (mode 0600), put in place only once whole and on disk.
pub fn write_whole(path: &Path, write: &dyn Fn(&mut (dyn Write + Send)) -> anyhow::Result<()>) -> anyhow::Result<()> {
    let (file, mut new) = create(path)?;
    let mut out = BufWriter::new(file);
    write(&mut out)?;
    out.flush().with_context(|| format!("{}", path.display()))?;
    out.get_ref()
        .sync_all()
        .with_context(|| format!("{}", path.display()))?;
    new.publish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn nothing_is_named_until_published_and_then_it_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.cap");
        std::fs::write(&path, b"old").unwrap();
        let other = dir.path().join("hardlink");
        std::fs::hard_link(&path, &other).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
        let (mut f, mut nf) = create(&path).unwrap();
        f.write_all(b"new").unwrap();
        let names = || {
            let mut v: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(), ["hardlink", "out.cap"], "no temporary name while writing");
        assert_eq!(std::fs::read(&path).unwrap(), b"old");
        nf.publish().unwrap();
        assert_eq!(names(), ["hardlink", "out.cap"]);
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
        assert_eq!(
            std::fs::read(&other).unwrap(),
            b"old",
            "another hard link is not written through"
        );
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    }

    #[test]
    fn unpublished_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.csv");
        let (mut f, nf) = create(&path).unwrap();
        f.write_all(b"half").unwrap();
        drop(nf);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_symlink_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let path = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        assert_eq!(Existing::of(&path).unwrap(), Existing::Symlink);
        let (mut f, mut nf) = create(&path).unwrap();
        f.write_all(b"new").unwrap();
        nf.publish().unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
    }

    #[test]
    fn kinds_and_dev() {
        assert_eq!(Existing::of(Path::new("/dev/null")).unwrap(), Existing::CharDevice);
        assert_eq!(Existing::of(Path::new("/")).unwrap(), Existing::Directory);
        assert_eq!(Existing::of(Path::new("/nonexistent/x")).unwrap(), Existing::Nothing);
        let e = create(Path::new("/dev/iocap-test-never")).unwrap_err().to_string();
        assert!(e.contains("under /dev"), "{e}");
        assert!(!Path::new("/dev/iocap-test-never").exists());
    }
}
