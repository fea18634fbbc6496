//! Per-syscall facts the decoder needs: does the first argument name an fd, does the call
//! return a new fd, is the return value a byte count, does it close or duplicate an fd.

use iocap_format::syscalls;

pub const FD_ARG0: u8 = 1;
pub const FD_RET: u8 = 2;
pub const BYTES: u8 = 4;
pub const CLOSE: u8 = 8;
pub const DUP: u8 = 16;

const FD_ARG0_NAMES: &[&str] = &[
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "close",
    "fstat",
    "lseek",
    "ioctl",
    "fsync",
    "fdatasync",
    "ftruncate",
    "getdents",
    "getdents64",
    "fcntl",
    "flock",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendmmsg",
    "recvmmsg",
    "connect",
    "bind",
    "listen",
    "shutdown",
    "getsockname",
    "getpeername",
    "setsockopt",
    "getsockopt",
    "epoll_ctl",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "sendfile",
    "splice",
    "tee",
    "vmsplice",
    "copy_file_range",
    "fadvise64",
    "fallocate",
    "sync_file_range",
    "syncfs",
    "fchmod",
    "fchown",
    "fstatfs",
    "readahead",
    "fsetxattr",
    "fgetxattr",
    "flistxattr",
    "fremovexattr",
    "fchdir",
    "inotify_add_watch",
    "inotify_rm_watch",
    "timerfd_settime",
    "timerfd_gettime",
    "io_uring_enter",
    "io_uring_register",
    "fanotify_mark",
];
const FD_RET_NAMES: &[&str] = &[
    "open",
    "openat",
    "openat2",
    "creat",
    "socket",
    "accept",
    "accept4",
    "dup",
    "dup2",
    "dup3",
    "eventfd",
    "eventfd2",
    "epoll_create",
    "epoll_create1",
    "inotify_init",
    "inotify_init1",
    "timerfd_create",
    "memfd_create",
    "signalfd",
    "signalfd4",
    "pidfd_open",
    "userfaultfd",
    "perf_event_open",
    "io_uring_setup",
    "fanotify_init",
];
const BYTES_NAMES: &[&str] = &[
    "read",
    "write",
    "pread64",
    "pwrite64",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "preadv2",
    "pwritev2",
    "sendto",
    "recvfrom",
    "sendmsg",
    "recvmsg",
    "sendfile",
    "copy_file_range",
    "splice",
];

/// Flags per syscall number of one architecture.
pub struct SysInfo {
    flags: Vec<u8>,
}

impl SysInfo {
    pub fn new(arch: &str) -> SysInfo {
        let mut flags = vec![0u8; 1024];
        let mut set = |names: &[&str], f: u8| {
            for n in names {
                if let Some(nr) = syscalls::number(arch, n) {
                    if let Some(slot) = flags.get_mut(nr as usize) {
                        *slot |= f;
                    }
                }
            }
        };
        set(FD_ARG0_NAMES, FD_ARG0);
        set(FD_RET_NAMES, FD_RET);
        set(BYTES_NAMES, BYTES);
        set(&["close"], CLOSE);
        set(&["dup", "dup2", "dup3"], DUP);
        SysInfo { flags }
    }

    pub fn get(&self, nr: u32) -> u8 {
        self.flags.get(nr as usize).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_64_flags() {
        let s = SysInfo::new("x86_64");
        assert_eq!(s.get(0) & (FD_ARG0 | BYTES), FD_ARG0 | BYTES); // read
        assert_eq!(s.get(18) & BYTES, BYTES); // pwrite64
        assert_eq!(s.get(3), FD_ARG0 | CLOSE); // close
        assert_eq!(s.get(257), FD_RET); // openat
        assert_eq!(s.get(33) & DUP, DUP); // dup2
        assert_eq!(s.get(39), 0); // getpid
        assert_eq!(s.get(100_000), 0);
    }
}
