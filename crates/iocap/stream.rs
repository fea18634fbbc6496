//! A capture read from standard input, `-` in place of a file (`ssh host sudo iocap record -w - |
//! iocap view -`).
//!
//! Readers read by position and go back (the viewer scrolls, a scan splits chunks between
//! threads), which a pipe cannot do, so what arrives is copied into a file by a thread of its
//! own as it comes, and read from there. The file is new and 0600: in `$TMPDIR`, created
//! exclusively and unlinked as soon as it is open for writing and for reading, so nothing is
//! left behind however iocap ends (a panic or SIGKILL included); or, with `--save FILE`, at
//! that path, created as `record -w` creates captures ([`crate::output`]), and kept.
//!
//! The copy holds the file's writing lock ([`iocap_format::lock_for_writing`]) until the stream
//! ends, so a reader takes the file for a recording still being written: the followers
//! (`view`, `events -f`, `iostat -f`) read on as it arrives, and a stream cut short (the
//! recorder or the connection killed) reads as recovered, with every whole frame before the cut.

use std::fs::{File, OpenOptions};
use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use anyhow::{anyhow, bail, Context};
use iocap_format::{opening_len, Reader, OPENING_PEEK};

use crate::output;

/// What the user reads as the stream's name.
pub const NAME: &str = "standard input";

/// A capture arriving on standard input, copied into a file as it comes.
pub struct Stream {
    /// The copy, opened for reading on an open file of its own: the copy's lock shows on it.
    read: File,
    copy: Arc<Copy>,
}

/// How far the copy got, shared between its thread and the readers waiting for it.
#[derive(Default)]
struct Copy {
    state: Mutex<Copied>,
    more: Condvar,
}

#[derive(Default)]
struct Copied {
    /// The first [`OPENING_PEEK`] bytes, to know how many a reader needs to open the capture.
    head: Vec<u8>,
    /// Bytes copied so far.
    bytes: u64,
    /// Set when the copy is over (and its lock released): `Err` says what stopped it.
    end: Option<Result<(), String>>,
}

impl Copy {
    fn state(&self) -> MutexGuard<'_, Copied> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Stream {
    /// Start copying standard input into a new file: in `$TMPDIR` and removed, or at `save`
    /// and kept. A terminal is refused: a capture is piped in, not typed.
    pub fn start(save: Option<&Path>) -> anyhow::Result<Stream> {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(crate::UsageError(format!(
                "`-` reads a capture from {NAME}, which is a terminal here: pipe one in \
                 (ssh HOST sudo iocap record -w - | iocap view -)"
            ))
            .into());
        }
        let from = File::from(stdin.as_fd().try_clone_to_owned().context(NAME)?);
        let (write, read) = match save {
            Some(path) => saved_file(path)?,
            None => temporary_file()?,
        };
        // Before the first byte is copied, so a reader never sees the copy unlocked and short.
        let _ = iocap_format::lock_for_writing(&write);
        let copy = Arc::new(Copy::default());
        let theirs = Arc::clone(&copy);
        std::thread::Builder::new()
            .name("iocap-stdin".into())
            .spawn(move || copy_all(from, write, &theirs))
            .context("cannot start the thread that reads standard input")?;
        Ok(Stream { read, copy })
    }

    /// Open the capture being copied: once it is all there when `whole` (a command that reads
    /// it once), else as soon as its header is (a follower, which reads on as it grows).
    /// Bytes that are not a capture are refused as soon as they show, either way; a copy that
    /// stopped before the stream's end (a full disk) is an error for `whole`, which would
    /// otherwise answer for a cut capture as if it were all.
    pub fn open(&self, whole: bool) -> anyhow::Result<Reader> {
        let mut c = self.copy.state();
        while c.end.is_none() {
            let need = opening_len(&c.head).with_context(|| NAME.to_string())?;
            if !whole && need.is_some_and(|n| c.bytes >= n) {
                break;
            }
            c = self.copy.more.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        let (end, bytes) = (c.end.clone(), c.bytes);
        let garbage = opening_len(&c.head).with_context(|| NAME.to_string());
        drop(c);
        garbage?;
        if bytes == 0 && end == Some(Ok(())) {
            bail!("{NAME} brought nothing: no capture was piped in");
        }
        if let (true, Some(Err(why))) = (whole, &end) {
            bail!("{NAME}: {why} after {bytes} bytes; the capture is cut there, so nothing is answered for it");
        }
        let file = self.read.try_clone().context(NAME)?;
        match (Reader::new(file), end) {
            (Ok(r), _) => Ok(r),
            // A stream that broke before the capture's start is explained by why it broke.
            (Err(_), Some(Err(why))) => bail!("{NAME}: {why}"),
            (Err(e), _) => Err(anyhow!(e).context(NAME)),
        }
    }

    /// Why the copy stopped before the stream's end (a read error, a full disk), once it has.
    pub fn failure(&self) -> Option<String> {
        self.copy.state().end.clone().and_then(Result::err)
    }
}

/// Copy `from` into `to` until the end, saying how far it got after every block; `to` is
/// closed (its lock released) before the end is announced.
fn copy_all(mut from: File, mut to: File, copy: &Copy) {
    let mut buf = vec![0u8; 64 << 10];
    let end = loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(format!("reading it failed: {e}")),
        };
        if let Err(e) = to.write_all(&buf[..n]) {
            break Err(format!("keeping what it brought failed: {e}"));
        }
        let mut c = copy.state();
        let head = OPENING_PEEK.saturating_sub(c.head.len()).min(n);
        c.head.extend_from_slice(&buf[..head]);
        c.bytes += n as u64;
        // Bytes that are not a capture are not copied on (`yes | iocap report -` would fill
        // $TMPDIR): the copy stops as soon as they show, and says why.
        let garbage = head > 0 && opening_len(&c.head).is_err();
        drop(c);
        copy.more.notify_all();
        if garbage {
            break Err("not an iocap capture (it does not start as one): copying stopped".into());
        }
    };
    drop(to);
    copy.state().end = Some(end);
    copy.more.notify_all();
}

/// A new file in `$TMPDIR` (0600, `O_EXCL`), opened for writing and for reading, and unlinked.
fn temporary_file() -> anyhow::Result<(File, File)> {
    let dir = std::env::temp_dir();
    for n in 0..100u32 {
        let path = dir.join(format!("iocap-stdin-{}-{n}.cap", std::process::id()));
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path);
        let write = match created {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!("cannot create a file in {} for {NAME}: {e}", dir.display()),
        };
        let read = reopen(&path, &write);
        let removed = std::fs::remove_file(&path);
        let read = read?;
        removed.with_context(|| format!("{}", path.display()))?;
        return Ok((write, read));
    }
    bail!("cannot create a file in {} for {NAME}: no free name", dir.display())
}

/// A new capture file at `path`, as `record -w` makes one, opened for writing and for reading.
fn saved_file(path: &Path) -> anyhow::Result<(File, File)> {
    output::check_capture_target(path)?;
    let (write, mut new) = output::create(path)?;
    // Locked before it has a name, as the recorder's files are.
    let _ = iocap_format::lock_for_writing(&write);
    new.publish()?;
    let read = reopen(path, &write)?;
    Ok((write, read))
}

/// Open `path` again, for reading, without following a symlink, and make sure it is the file
/// `ours` is (nothing was swapped in meanwhile): an open file of its own, on which the
/// writing lock of `ours` shows.
fn reopen(path: &Path, ours: &File) -> anyhow::Result<File> {
    let read = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .with_context(|| format!("{}", path.display()))?;
    let (a, b) = (read.metadata()?, ours.metadata()?);
    if (a.dev(), a.ino()) != (b.dev(), b.ino()) {
        bail!("{}: replaced by another file while it was created", path.display());
    }
    Ok(read)
}

/// What [`Stream::start`] is told where to keep the stream: `--save`, allowed only with `-`.
pub fn save_path(file: &Path, save: Option<&Path>) -> anyhow::Result<Option<PathBuf>> {
    match save {
        Some(s) if file != Path::new("-") => Err(crate::UsageError(format!(
            "--save {} keeps a capture read from {NAME}: it goes with `-` in place of the file",
            s.display()
        ))
        .into()),
        s => Ok(s.map(Path::to_path_buf)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_copy_is_locked_until_its_end_and_readers_wait_for_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kept.cap");
        let (write, read) = saved_file(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let (mut tx, rx) = {
            let mut fds = [0; 2];
            // SAFETY: fds is a valid array of two ints for pipe to fill.
            assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
            // SAFETY: both descriptors are new and ours.
            unsafe {
                use std::os::fd::FromRawFd;
                (File::from_raw_fd(fds[1]), File::from_raw_fd(fds[0]))
            }
        };
        let _ = iocap_format::lock_for_writing(&write);
        let copy = Arc::new(Copy::default());
        let theirs = Arc::clone(&copy);
        let thread = std::thread::spawn(move || copy_all(rx, write, &theirs));
        let stream = Stream { read, copy };
        let mut w = iocap_format::Writer::new(Vec::new(), &iocap_format::Meta::default(), Default::default()).unwrap();
        w.push(&iocap_format::Event::syscall(1_000, 250, 42, 42, 0, 1)).unwrap();
        w.flush().unwrap();
        let whole = w.finish(2_000).unwrap();
        let need = opening_len(&whole).unwrap().unwrap() as usize;
        // The preamble and part of the header: a reader waits.
        tx.write_all(&whole[..need - 1]).unwrap();
        let opened = std::thread::scope(|s| {
            let waiting = s.spawn(|| stream.open(false).map(|r| r.liveness()));
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert!(!waiting.is_finished(), "opened before the header was whole");
            tx.write_all(&whole[need - 1..whole.len() - 10]).unwrap();
            waiting.join().unwrap().unwrap()
        });
        assert_eq!(opened, iocap_format::Liveness::Live, "the copy holds the lock");
        tx.write_all(&whole[whole.len() - 10..]).unwrap();
        drop(tx);
        thread.join().unwrap();
        let r = stream.open(true).unwrap();
        assert!(r.is_clean());
        assert_eq!(r.event_count(), 1);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            whole,
            "--save keeps the bytes as they came"
        );
    }

    #[test]
    fn garbage_is_refused_as_soon_as_it_shows() {
        let (write, read) = temporary_file().unwrap();
        let copy = Arc::new(Copy::default());
        let stream = Stream {
            read,
            copy: Arc::clone(&copy),
        };
        let (mut tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
        let thread = std::thread::spawn(move || {
            let from = File::from(std::os::fd::OwnedFd::from(rx));
            copy_all(from, write, &copy)
        });
        let ours = format!("iocap-stdin-{}-", std::process::id());
        let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(&ours))
            .collect();
        assert!(left.is_empty(), "the temporary file has no name once open: {left:?}");
        tx.write_all(b"#!/bin/sh\n").unwrap();
        // The stream stays open: the refusal does not wait for its end.
        let Err(err) = stream.open(false) else {
            panic!("garbage opened")
        };
        assert!(format!("{err:#}").contains("not an iocap capture"), "{err:#}");
        drop(tx);
        thread.join().unwrap();
    }
}
