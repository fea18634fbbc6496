//! Filter history, kept across runs in `$XDG_STATE_HOME/iocap/history`
//! (or `~/.local/state/iocap/history`), one filter per line, newest last.
//!
//! Failing to read or write the history never stops the viewer: it just starts empty.

use std::path::{Path, PathBuf};

/// Most filters kept.
const MAX: usize = 500;

/// Filters applied before, and the position of ↑/↓ browsing.
#[derive(Clone, Debug, Default)]
pub struct History {
    entries: Vec<String>,
    /// Where to save, `None` in tests and when there is no home.
    path: Option<PathBuf>,
    /// Index into `entries` while browsing with ↑/↓; `None` when editing fresh text.
    cursor: Option<usize>,
}

impl History {
    /// The history at the user's state directory, loaded if it exists.
    pub fn load_default() -> History {
        match default_path() {
            Some(p) => History::load(&p),
            None => History::default(),
        }
    }

    /// The history kept in `path`.
    pub fn load(path: &Path) -> History {
        let entries = std::fs::read(path)
            .map(|bytes| {
                bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| !l.is_empty())
                    .filter_map(|l| std::str::from_utf8(l).ok())
                    // The file is the user's, but we print it: a line that would need escaping
                    // (control characters, bidi overrides) is dropped, not shown.
                    .filter(|l| iocap_format::escape::is_safe(&l.replace('\\', "")))
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        let skip = entries.len().saturating_sub(MAX);
        History {
            entries: entries.into_iter().skip(skip).collect(),
            path: Some(path.to_owned()),
            cursor: None,
        }
    }

    /// An in-memory history (tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn in_memory(entries: Vec<String>) -> History {
        History {
            entries,
            path: None,
            cursor: None,
        }
    }

    /// The filters kept, oldest first (tests).
    #[cfg(any(test, feature = "testing"))]
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Remember an applied filter (moved to the end if already there) and save.
    pub fn push(&mut self, filter: &str) {
        self.cursor = None;
        let filter = filter.trim();
        if filter.is_empty() || filter.contains('\n') {
            return;
        }
        self.entries.retain(|e| e != filter);
        self.entries.push(filter.to_owned());
        if self.entries.len() > MAX {
            self.entries.remove(0);
        }
        self.save();
    }

    fn save(&self) {
        let Some(path) = &self.path else { return };
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let mut text = self.entries.join("\n");
        text.push('\n');
        // Write then rename, so two viewers closing at once never leave half a file.
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    /// ↑: the previous (older) entry, if any.
    pub fn older(&mut self) -> Option<&str> {
        let i = match self.cursor {
            None => self.entries.len().checked_sub(1)?,
            Some(i) => i.checked_sub(1)?,
        };
        self.cursor = Some(i);
        self.entries.get(i).map(String::as_str)
    }

    /// ↓: the next (newer) entry, or `None` past the newest (back to fresh text).
    pub fn newer(&mut self) -> Option<&str> {
        let i = self.cursor? + 1;
        if i >= self.entries.len() {
            self.cursor = None;
            return None;
        }
        self.cursor = Some(i);
        self.entries.get(i).map(String::as_str)
    }

    /// Stop browsing (the filter bar was closed).
    pub fn reset(&mut self) {
        self.cursor = None;
    }
}

/// `$XDG_STATE_HOME/iocap/history`, else `$HOME/.local/state/iocap/history`.
pub fn default_path() -> Option<PathBuf> {
    let from_env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base = from_env("XDG_STATE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| from_env("HOME").map(|h| h.join(".local/state")))?;
    Some(base.join("iocap").join("history"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browse_and_persist() {
        let dir = std::env::temp_dir().join(format!("iocap-tui-history-{}", std::process::id()));
        let path = dir.join("iocap/history");
        let _ = std::fs::remove_dir_all(&dir);
        let mut h = History::load(&path);
        assert!(h.entries().is_empty());
        h.push("latency>1ms");
        h.push("proc.name=fio");
        h.push("latency>1ms");
        assert_eq!(h.entries(), ["proc.name=fio", "latency>1ms"]);
        assert_eq!(h.older(), Some("latency>1ms"));
        assert_eq!(h.older(), Some("proc.name=fio"));
        assert_eq!(h.older(), None);
        assert_eq!(h.newer(), Some("latency>1ms"));
        assert_eq!(h.newer(), None);
        let again = History::load(&path);
        assert_eq!(again.entries(), ["proc.name=fio", "latency>1ms"]);
        std::fs::write(&path, b"a\x1b[2Jb\n").unwrap();
        assert!(History::load(&path).entries().is_empty());
        std::fs::write(&path, b"fd.name=\"a\\\\b\"\n").unwrap();
        assert_eq!(History::load(&path).entries(), ["fd.name=\"a\\\\b\""]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
