//! io_uring opcodes and their names, for events of class [`crate::Class::IoUring`].
//!
//! The opcodes are the kernel's `enum io_uring_op` (`include/uapi/linux/io_uring.h`, Linux
//! 6.18), which is ABI: numbers are never reused. The names are the kernel's own (what
//! `io_uring_get_opcode` gives the tracepoints), lowercased.

/// Opcode names by number.
const OPS: [&str; 63] = [
    "nop",
    "readv",
    "writev",
    "fsync",
    "read_fixed",
    "write_fixed",
    "poll_add",
    "poll_remove",
    "sync_file_range",
    "sendmsg",
    "recvmsg",
    "timeout",
    "timeout_remove",
    "accept",
    "async_cancel",
    "link_timeout",
    "connect",
    "fallocate",
    "openat",
    "close",
    "files_update",
    "statx",
    "read",
    "write",
    "fadvise",
    "madvise",
    "send",
    "recv",
    "openat2",
    "epoll_ctl",
    "splice",
    "provide_buffers",
    "remove_buffers",
    "tee",
    "shutdown",
    "renameat",
    "unlinkat",
    "mkdirat",
    "symlinkat",
    "linkat",
    "msg_ring",
    "fsetxattr",
    "setxattr",
    "fgetxattr",
    "getxattr",
    "socket",
    "uring_cmd",
    "send_zc",
    "sendmsg_zc",
    "read_multishot",
    "waitid",
    "futex_wait",
    "futex_wake",
    "futex_waitv",
    "fixed_fd_install",
    "ftruncate",
    "bind",
    "listen",
    "recv_zc",
    "epoll_wait",
    "readv_fixed",
    "writev_fixed",
    "pipe",
];

/// The name of opcode `op`, or `None` when iocap does not know it.
pub fn op_name(op: u32) -> Option<&'static str> {
    OPS.get(op as usize).copied()
}

/// The opcode named `name`.
pub fn op_number(name: &str) -> Option<u32> {
    OPS.iter().position(|n| *n == name).map(|i| i as u32)
}

/// Every known opcode name, in number order.
pub fn op_names() -> impl Iterator<Item = &'static str> {
    OPS.iter().copied()
}

/// Opcodes that move data from their file into memory: a positive result is a byte count.
pub const READ_OPS: &[&str] = &[
    "readv",
    "read_fixed",
    "recvmsg",
    "read",
    "recv",
    "read_multishot",
    "recv_zc",
    "readv_fixed",
];

/// Opcodes that move data from memory to their file: a positive result is a byte count.
pub const WRITE_OPS: &[&str] = &[
    "writev",
    "write_fixed",
    "sendmsg",
    "write",
    "send",
    "send_zc",
    "sendmsg_zc",
    "writev_fixed",
];

/// How many opcodes iocap knows (one past the last known number).
pub const KNOWN_OPS: u32 = OPS.len() as u32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_kernel_numbers() {
        // Spot checks against include/uapi/linux/io_uring.h.
        assert_eq!(op_name(1), Some("readv"));
        assert_eq!(op_name(22), Some("read"));
        assert_eq!(op_name(23), Some("write"));
        assert_eq!(op_name(49), Some("read_multishot"));
        assert_eq!(op_name(62), Some("pipe"));
        assert_eq!(op_name(63), None);
        assert_eq!(op_number("fsync"), Some(3));
        assert_eq!(op_names().count() as u32, KNOWN_OPS);
    }
}
