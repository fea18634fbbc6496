//! Names and lifetimes of a rotation's files, as tcpdump's `-C`/`-W`: FILE, then FILE1,
//! FILE2, ... (the number appended to the whole name); with a ring of `keep` files, starting
//! file number k removes number k - keep, so at most `keep` exist and the numbers keep telling
//! their order.

use std::path::{Path, PathBuf};

/// File number `n` of a rotation of `base`.
pub fn path(base: &Path, n: u32) -> PathBuf {
    if n == 0 {
        return base.to_path_buf();
    }
    let mut s = base.as_os_str().to_owned();
    s.push(n.to_string());
    PathBuf::from(s)
}

/// The name (in the same directory) of the file that follows file number `n` of a rotation of
/// `base`, as its header names it for readers following the recording
/// ([`iocap_format::Meta::next_file`]); `None` when the name is not UTF-8.
pub fn next_name(base: &Path, n: u32) -> Option<String> {
    let next = path(base, n.checked_add(1)?);
    next.file_name()?.to_str().map(str::to_owned)
}

/// The file to remove when file number `n` starts, keeping `keep` (all when `None`).
pub fn expired(base: &Path, n: u32, keep: Option<u32>) -> Option<PathBuf> {
    keep.and_then(|k| n.checked_sub(k)).map(|old| path(base, old))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ring() {
        assert_eq!(path(Path::new("/t/x.cap"), 0), Path::new("/t/x.cap"));
        assert_eq!(path(Path::new("/t/x.cap"), 12), Path::new("/t/x.cap12"));
        assert_eq!(next_name(Path::new("/t/x.cap"), 0).as_deref(), Some("x.cap1"));
        assert_eq!(next_name(Path::new("x.cap"), 11).as_deref(), Some("x.cap12"));
        let base = Path::new("b");
        assert_eq!(expired(base, 3, None), None);
        assert_eq!(expired(base, 2, Some(3)), None);
        assert_eq!(expired(base, 3, Some(3)), Some(PathBuf::from("b")));
        assert_eq!(expired(base, 5, Some(3)), Some(PathBuf::from("b2")));
    }
}
