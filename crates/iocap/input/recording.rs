//! One recording's files read as one capture, for `view` (`view DIR/`, `view FILE --ring`):
//! the files a directory holds, or those a rotation's headers name one after another, joined
//! by [`Reader::join`] into one timeline.
//!
//! A recording that lost a file in its middle (deleted, or damaged past opening) is still
//! shown: what the other files hold, with a note on the status line naming the file missing or
//! unreadable. With `--ring` the headers' chain would end at such a file, so it goes on with
//! the next file of the rotation the directory holds (`trace.cap4` after a missing
//! `trace.cap3`). Only files of different hosts or boots, or overlapping in time, are refused
//! (they are not one recording: `report` reads several together).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::Context;
use iocap_format::escape::escape;
use iocap_format::Reader;

use super::{expand, files_in, rotation_order, Capture, Ring};
use crate::UsageError;

/// A recording opened as one capture: its reader, and its name as the viewer shows it.
pub struct Recording {
    /// Every file's chunks on one timeline ([`Reader::join`]).
    pub reader: Reader,
    /// What was named, and how many files it holds: `caps/ (12 files)`.
    pub name: String,
}

/// The recording `capture` names, when it names one of several files: a directory, a pattern,
/// or a file with `--ring`. `None` for one file without `--ring` (opened as ever).
pub fn open_recording(capture: &Capture, ring: &Ring) -> anyhow::Result<Option<Recording>> {
    if capture.is_stdin() {
        if ring.ring {
            return Err(UsageError("--ring follows a recording's files: not with `-`".into()).into());
        }
        return Ok(None);
    }
    let several = ring.ring || capture.file.is_dir() || capture.file.to_string_lossy().contains(['*', '?']);
    if !several {
        return Ok(None);
    }
    let mut notes = Vec::new();
    let mut opened: Vec<(PathBuf, Reader)> = Vec::new();
    let mut failed: HashSet<PathBuf> = HashSet::new();
    let mut seen = HashSet::new();
    let named = expand(&capture.file)?;
    // Every file the recording may take in, opened several at once; with `--ring`, the rest of
    // the rotation each named file is of (the chain below decides which are read).
    let mut candidates = named.clone();
    if ring.ring {
        for p in &named {
            candidates.extend(rotation_after(p));
        }
    }
    let mut seen_candidate = HashSet::new();
    candidates.retain(|p| seen_candidate.insert(p.clone()));
    let mut ready: HashMap<PathBuf, Result<Reader, iocap_format::Error>> =
        candidates.iter().cloned().zip(Reader::open_each(&candidates)).collect();
    let mut queue: std::collections::VecDeque<PathBuf> = named.into();
    while let Some(path) = queue.pop_front() {
        // Each file once (a ring that names itself ends).
        let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if !seen.insert(key) {
            continue;
        }
        // Not among the candidates: named by a header, so never read through a link.
        let (next, unreadable) = match ready.remove(&path).unwrap_or_else(|| Reader::open_next(&path)) {
            Ok(r) => {
                let next = r.meta().next_path(&path);
                opened.push((path.clone(), r));
                (next, false)
            }
            // Out of descriptors is no damage of the file's: leaving it out would present the
            // rest as the whole recording.
            Err(iocap_format::Error::Io(e)) if e.raw_os_error() == Some(libc::EMFILE) => {
                return Err(anyhow::Error::new(e).context(format!("{}", path.display())));
            }
            Err(e) => {
                notes.push(format!("{} could not be read ({e})", shown(&path)));
                failed.insert(path.clone());
                (None, true)
            }
        };
        if ring.ring {
            // The next file its header names; past a file missing or unreadable, the next one
            // of the rotation that is there.
            let after = match next {
                Some(n) if n.exists() => Some(n),
                Some(n) => later_in_rotation(&n),
                None if unreadable => later_in_rotation(&path),
                None => None,
            };
            queue.extend(after);
        }
    }
    opened.sort_by_key(|(_, r)| r.meta().start_ts);
    // A file whose successor is not the next one read: the one it names is missing (or could
    // not be read, said already). The last file names one its recorder had not begun.
    for pair in opened.windows(2) {
        let ((a, ra), (b, _)) = (&pair[0], &pair[1]);
        if let Some(next) = ra.meta().next_path(a) {
            if &next != b && !failed.contains(&next) {
                notes.push(format!("{} is missing (after {})", shown(&next), shown(a)));
            }
        }
    }
    if opened.is_empty() {
        anyhow::bail!(
            "{}: no file of the recording could be read: {}",
            capture.name(),
            notes.join("; ")
        );
    }
    let count = opened.len();
    let files = opened.into_iter().map(|(p, r)| (shown(&p), r)).collect();
    let reader = Reader::join(files, notes).with_context(|| capture.name())?;
    let what = if count == 1 { "file" } else { "files" };
    Ok(Some(Recording {
        reader,
        name: format!("{} ({count} {what})", capture.name()),
    }))
}

/// A file's name as said in a note: its name in its directory, escaped.
pub(super) fn shown(path: &Path) -> String {
    escape(path.file_name().unwrap_or(path.as_os_str()).as_encoded_bytes())
}

/// The first file of `path`'s rotation after it that its directory holds: `t.cap4` after
/// `t.cap2` when `t.cap3` is gone.
pub(super) fn later_in_rotation(path: &Path) -> Option<PathBuf> {
    rotation_after(path).into_iter().next()
}

/// The files of `path`'s rotation after it that its directory holds, in order: `t.cap3`,
/// `t.cap4`, ... after `t.cap2` (none when the directory cannot be read).
fn rotation_after(path: &Path) -> Vec<PathBuf> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let (stem, n, _) = rotation_order(name);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    files_in(dir, |f| {
        let (s, m, _) = rotation_order(f);
        s == stem && m > n
    })
    .unwrap_or_default()
}
