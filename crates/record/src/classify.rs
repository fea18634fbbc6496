//! What an fd is (`fd.type`) and what to call it (`fd.name`), from what the kernel said
//! about its struct file, or from a `/proc/PID/fd` link for fds that predate the capture.

use std::net::{Ipv4Addr, Ipv6Addr};

use iocap_format::{FdType, MAX_STRING};

const S_IFMT: u32 = 0o170000;
const S_IFSOCK: u32 = 0o140000;
const S_IFREG: u32 = 0o100000;
const S_IFBLK: u32 = 0o060000;
const S_IFDIR: u32 = 0o040000;
const S_IFCHR: u32 = 0o020000;
const S_IFIFO: u32 = 0o010000;
const ANON_INODE_FS_MAGIC: u32 = 0x0904_1934;
const PID_FS_MAGIC: u32 = 0x5049_4446;
pub const AF_UNIX: u16 = 1;
pub const AF_INET: u16 = 2;
pub const AF_INET6: u16 = 10;

/// The type of an anonymous-inode file from its dentry name (`[eventfd]`, `inotify`, ...).
pub fn anon_type(dname: &str) -> FdType {
    match dname.trim_start_matches('[').trim_end_matches(']') {
        "eventfd" => FdType::Event,
        "eventpoll" => FdType::Eventpoll,
        "signalfd" => FdType::Signalfd,
        "timerfd" => FdType::Timerfd,
        "inotify" => FdType::Inotify,
        "fanotify" => FdType::Fanotify,
        "pidfd" => FdType::Pidfd,
        "userfaultfd" => FdType::Userfaultfd,
        "io_uring" => FdType::IoUring,
        "perf_event" => FdType::Perf,
        n if n.starts_with("bpf") => FdType::Bpf,
        _ => FdType::Unknown,
    }
}

/// The type of a file the kernel described by its inode mode, superblock magic, dentry
/// name and (for sockets) family. `memfd` says the fd came from memfd_create.
pub fn kernel_type(mode: u32, magic: u32, dname: &str, family: u16, memfd: bool) -> FdType {
    if magic == PID_FS_MAGIC {
        return FdType::Pidfd;
    }
    if magic == ANON_INODE_FS_MAGIC {
        return anon_type(dname);
    }
    match mode & S_IFMT {
        S_IFSOCK => socket_type(family),
        S_IFDIR => FdType::Directory,
        S_IFIFO => FdType::Pipe,
        S_IFCHR | S_IFBLK => FdType::Device,
        S_IFREG if memfd || dname.starts_with("memfd:") => FdType::Memfd,
        S_IFREG => FdType::File,
        // Some anon-inode files have their own inode with no type bits.
        _ => anon_type(dname),
    }
}

pub fn socket_type(family: u16) -> FdType {
    match family {
        AF_INET => FdType::Ipv4,
        AF_INET6 => FdType::Ipv6,
        AF_UNIX => FdType::Unix,
        _ => FdType::Socket,
    }
}

/// `laddr:lport->raddr:rport` for an IP socket; only the local side while unconnected.
pub fn inet_name(family: u16, laddr: &[u8; 16], lport: u16, raddr: &[u8; 16], rport: u16) -> String {
    let addr = |a: &[u8; 16]| -> String {
        if family == AF_INET {
            Ipv4Addr::new(a[0], a[1], a[2], a[3]).to_string()
        } else {
            format!("[{}]", Ipv6Addr::from(*a))
        }
    };
    if rport == 0 && raddr.iter().all(|&b| b == 0) {
        format!("{}:{}", addr(laddr), lport)
    } else {
        format!("{}:{}->{}:{}", addr(laddr), lport, addr(raddr), rport)
    }
}

/// A unix socket address: a path, or `@name` for the abstract namespace (leading NUL).
pub fn unix_name(addr: &[u8]) -> Vec<u8> {
    match addr.split_first() {
        Some((0, rest)) => {
            let mut v = b"@".to_vec();
            v.extend(rest.iter().take_while(|&&c| c != 0));
            v
        }
        _ => addr.iter().copied().take_while(|&c| c != 0).collect(),
    }
}

/// Type and name of an fd from its `/proc/PID/fd/N` link text (before the capture started).
/// Sockets are named later from `/proc/net` by inode, so `socket:[ino]` gives `Socket`.
pub fn link_type(link: &[u8], is_dir: bool) -> FdType {
    let s = String::from_utf8_lossy(link);
    if let Some(rest) = s.strip_prefix("anon_inode:") {
        return anon_type(rest);
    }
    if s.starts_with("socket:[") {
        return FdType::Socket;
    }
    if s.starts_with("pipe:[") {
        return FdType::Pipe;
    }
    if s.starts_with("/memfd:") {
        return FdType::Memfd;
    }
    if s.starts_with("/dev/") {
        return FdType::Device;
    }
    if is_dir {
        return FdType::Directory;
    }
    if s.starts_with('/') {
        FdType::File
    } else {
        FdType::Unknown
    }
}

/// Join a relative path to the directory it is relative to, then take out `.`, repeated
/// slashes and each `dir/..`, as sysdig does. A tree walk (find's fts, tar) opens `..` relative
/// to a directory it opened, and each name is made from its directory's: joined as given, each
/// step back up made the names longer (`/usr/src/a/../b/../../share/...`, up to the 4 KiB a path
/// is cut to; a recording of find and tar over /usr held 28 MB of such names, and `fd.name` or
/// `fd.directory` filters missed those files).
///
/// `dname` is the last component of the path the kernel resolved (the dentry's name): where
/// `..` followed a symbolic link, the kernel went to the parent of the link's target while a
/// textual `link/..` stays beside the link, and the names then differ. That path is kept as
/// joined (it still names the file). Only the last component is compared: a `link/../f`
/// whose `f` also exists beside the link's target reads as beside the link. An empty `dname`
/// (none known) takes the textual answer.
pub fn resolve(base: &[u8], path: &[u8], dname: &[u8]) -> Vec<u8> {
    let base: &[u8] = if path.first() == Some(&b'/') { b"" } else { base };
    if path.first() != Some(&b'/') && base.first() != Some(&b'/') {
        // No directory to start from (or not a path): kept as given.
        return path.to_vec();
    }
    // The base's own `..`s are ones it kept (above): they stay, and nothing goes up past them.
    let mut parts: Vec<&[u8]> = base
        .split(|&b| b == b'/')
        .filter(|p| !p.is_empty() && *p != b".")
        .collect();
    let mut went_up = false;
    for part in path.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            // The root's parent is the root.
            b".." if parts.last() != Some(&&b".."[..]) => {
                parts.pop();
                went_up = true;
            }
            _ => parts.push(part),
        }
    }
    let last = parts.last().copied().unwrap_or(b"/");
    let mut out = Vec::with_capacity(base.len() + path.len() + 1);
    if went_up && !dname.is_empty() && last != dname {
        // As joined: the base, then the path as given.
        out.extend_from_slice(base);
        if !out.is_empty() && out.last() != Some(&b'/') {
            out.push(b'/');
        }
        out.extend_from_slice(path);
    } else {
        for part in &parts {
            out.push(b'/');
            out.extend_from_slice(part);
        }
        if out.is_empty() {
            out.push(b'/');
        }
    }
    // A name kept as joined is the next one's base: a process opening `link/..` again and
    // again, the link to an ancestor, would grow its names (and the copying of them) without
    // bound. One byte past what the writer keeps, so the writer still marks the name cut.
    out.truncate(MAX_STRING + 1);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_types() {
        assert_eq!(kernel_type(S_IFREG | 0o644, 0xef53, "a.txt", 0, false), FdType::File);
        assert_eq!(kernel_type(S_IFDIR | 0o755, 0xef53, "tmp", 0, false), FdType::Directory);
        assert_eq!(kernel_type(S_IFIFO | 0o600, 0x5049_5045, "", 0, false), FdType::Pipe);
        assert_eq!(
            kernel_type(S_IFSOCK | 0o777, 0x534f_434b, "", AF_UNIX, false),
            FdType::Unix
        );
        assert_eq!(kernel_type(S_IFSOCK, 0x534f_434b, "", AF_INET6, false), FdType::Ipv6);
        assert_eq!(kernel_type(S_IFSOCK, 0x534f_434b, "", 16, false), FdType::Socket);
        assert_eq!(
            kernel_type(0o600, ANON_INODE_FS_MAGIC, "[eventfd]", 0, false),
            FdType::Event
        );
        assert_eq!(
            kernel_type(S_IFREG | 0o600, ANON_INODE_FS_MAGIC, "inotify", 0, false),
            FdType::Inotify
        );
        assert_eq!(
            kernel_type(S_IFREG | 0o777, 0x0102_1994, "memfd:x", 0, true),
            FdType::Memfd
        );
        assert_eq!(
            kernel_type(S_IFCHR | 0o666, 0x1021994, "null", 0, false),
            FdType::Device
        );
        assert_eq!(kernel_type(0, PID_FS_MAGIC, "", 0, false), FdType::Pidfd);
    }

    #[test]
    fn link_types() {
        assert_eq!(link_type(b"anon_inode:[eventpoll]", false), FdType::Eventpoll);
        assert_eq!(link_type(b"anon_inode:[timerfd]", false), FdType::Timerfd);
        assert_eq!(link_type(b"pipe:[1234]", false), FdType::Pipe);
        assert_eq!(link_type(b"socket:[99]", false), FdType::Socket);
        assert_eq!(link_type(b"/memfd:buf (deleted)", false), FdType::Memfd);
        assert_eq!(link_type(b"/var/log/syslog", false), FdType::File);
        assert_eq!(link_type(b"/var/log", true), FdType::Directory);
        assert_eq!(link_type(b"/dev/null", false), FdType::Device);
    }

    #[test]
    fn names() {
        let mut l = [0u8; 16];
        l[..4].copy_from_slice(&[127, 0, 0, 1]);
        let mut r = [0u8; 16];
        r[..4].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(inet_name(AF_INET, &l, 5000, &r, 80), "127.0.0.1:5000->10.0.0.2:80");
        assert_eq!(inet_name(AF_INET, &l, 5000, &[0; 16], 0), "127.0.0.1:5000");
        let mut six = [0u8; 16];
        six[15] = 1;
        assert_eq!(inet_name(AF_INET6, &six, 22, &six, 4000), "[::1]:22->[::1]:4000");
        assert_eq!(unix_name(b"/run/x.sock\0\0"), b"/run/x.sock");
        assert_eq!(unix_name(b"\0abstract\0"), b"@abstract");
        assert_eq!(resolve(b"/home/u", b"a/b", b"b"), b"/home/u/a/b");
        assert_eq!(resolve(b"/home/u/", b"./c", b"c"), b"/home/u/c");
        assert_eq!(resolve(b"/x", b"/abs", b"abs"), b"/abs");
        assert_eq!(resolve(b"", b"rel", b"rel"), b"rel");
    }

    #[test]
    fn a_walk_back_up_names_the_directory_it_reached() {
        // find's fts: `..` relative to the directory it is in, then down again.
        assert_eq!(resolve(b"/usr/src/gtest", b"..", b"src"), b"/usr/src");
        assert_eq!(resolve(b"/usr/src", b"../share/doc", b"doc"), b"/usr/share/doc");
        assert_eq!(resolve(b"/usr", b"../..", b"/"), b"/");
        assert_eq!(resolve(b"/a//b/./c/", b"d", b"d"), b"/a/b/c/d");
        assert_eq!(resolve(b"/", b"/usr/lib/../share", b"share"), b"/usr/share");
        // `link/..` where the kernel went to the parent of the link's target (link ->
        // /data/x, its parent `data`): the names differ and the path stays as joined.
        assert_eq!(resolve(b"/srv/link", b"..", b"data"), b"/srv/link/..");
        assert_eq!(
            resolve(b"/srv/link", b"../g", b"g"),
            b"/srv/g",
            "the last names agree: textual"
        );
        // No dentry name to check against: the textual answer.
        assert_eq!(resolve(b"/srv/link", b"..", b""), b"/srv");
        // Below a kept `..`: nothing goes up past it.
        assert_eq!(resolve(b"/srv/link/..", b"f", b"f"), b"/srv/link/../f");
        assert_eq!(resolve(b"/srv/link/..", b"x/../f", b"f"), b"/srv/link/../f");
        // However long the chain of kept names, one is at most a byte past the writer's cut.
        let mut name = b"/srv".to_vec();
        for _ in 0..2000 {
            name = resolve(&name, b"link/..", b"data");
        }
        assert_eq!(name.len(), MAX_STRING + 1);
        assert!(name.starts_with(b"/srv/link/../link/.."));
    }
}
