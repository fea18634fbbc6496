//! Whether a capture is still being written: the recorder holds an exclusive `flock` on the
//! file from before it has a name until it is closed ([`lock_for_writing`]), and a reader asks
//! with a shared one that does not wait ([`crate::Source::writer_alive`]).
//!
//! A lock rather than a look at the bytes: a file cut short by a killed recorder and a file
//! whose recorder is between two flushes look the same, and only the second will grow. `flock`
//! locks belong to the open file, not to a name, so a rename into place, a rotation that
//! removes the oldest file (`-W`) and a reader's read-only descriptor are all unaffected, and
//! the kernel drops the lock when the recorder dies, however it dies.

use std::fs::File;
use std::io;

/// How far a capture is from finished, as a [`crate::Reader`] last saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Its index and trailer are written: read by its index, nothing more will come.
    Finished,
    /// A recorder holds it and is still writing: what is missing after its last whole frame
    /// (no index yet, a frame half written) is still to come, and [`crate::Reader::refresh`]
    /// reads it as it arrives.
    Live,
    /// No index and no recorder: it was read by a recovery scan (a recorder killed or out of
    /// disk, or a damaged file), and [`crate::Reader::recovery`] says what was lost.
    Recovered,
}

/// Mark `file` as being written, for readers to see it live: an exclusive `flock`, held for as
/// long as the file stays open (every descriptor of this open file, its clones included). Take
/// it before the file gets its name, so no reader can see it unnamed-and-unlocked. It never
/// waits: a file someone else has locked is written all the same, only not seen live.
pub fn lock_for_writing(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor `file` keeps open across the call.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// Whether another open file holds `file`'s writing lock ([`lock_for_writing`]): a shared lock
/// tried without waiting, and given back at once when it was granted. Errors (a filesystem
/// without locks) read as no writer: the file then reads as it always did, by index or scan.
pub fn writer_alive(file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let fd = file.as_raw_fd();
        // SAFETY: flock on a descriptor `file` keeps open across the call.
        if unsafe { libc::flock(fd, libc::LOCK_SH | libc::LOCK_NB) } == 0 {
            // SAFETY: as above; a shared lock of ours, given back.
            unsafe { libc::flock(fd, libc::LOCK_UN) };
            return false;
        }
        io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK)
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn read_only(path: &std::path::Path) -> File {
        let mut o = std::fs::OpenOptions::new();
        o.read(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::custom_flags(&mut o, libc::O_NONBLOCK);
        o.open(path).unwrap()
    }

    #[test]
    fn a_read_only_nonblocking_reader_sees_the_writer_until_it_closes() {
        let dir = std::env::temp_dir().join(format!("iocap-live-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.cap");
        let mut w = File::create(&path).unwrap();
        let reader = read_only(&path);
        assert!(!writer_alive(&reader), "no lock yet");
        lock_for_writing(&w).unwrap();
        assert!(writer_alive(&reader));
        assert!(writer_alive(&read_only(&path)), "any reader, opened before or after");
        // Asking does not hold anything: the writer goes on, and a rename moves nothing.
        w.write_all(b"more").unwrap();
        let moved = dir.join("b.cap");
        std::fs::rename(&path, &moved).unwrap();
        assert!(writer_alive(&reader));
        // A clone is the same open file: the lock stays until the last descriptor closes.
        let clone = w.try_clone().unwrap();
        drop(w);
        assert!(writer_alive(&reader));
        drop(clone);
        assert!(!writer_alive(&reader));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
