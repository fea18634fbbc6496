/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * The kernel/user ABI of iocap's recorder: every record the BPF programs put in the
 * ring buffer. Each record starts with a u16 `kind`: the rec_kind in its low KIND_BITS bits
 * and, in the records of events (sys32, sys, sysio, uring, blk), the CPU the event ended on
 * above them (KIND_CPU_MAX for that CPU or any higher one); the rest depends on the kind.
 * The Rust side gets these types from the generated skeleton (see the dummy
 * instances at the end of iocap.bpf.c), so nothing is kept in sync by hand.
 * Sizes are fixed: bpf_ringbuf_reserve needs a constant size.
 */
#ifndef IOCAP_H
#define IOCAP_H

/*
 * REC_END_SYS and REC_END_BLK: a call (laid out as rec_sysio) or block request (rec_blk) still
 * in flight when the recording stopped (stop_at in iocap.bpf.c); its latency runs to the stop.
 */
enum rec_kind {
	REC_SYS = 1,
	REC_BLK = 2,
	REC_FORK = 3,
	REC_EXEC = 4,
	REC_EXIT = 5,
	REC_COMM = 6,
	REC_FD = 7,
	REC_DUP = 8,
	REC_SYS32 = 9,
	REC_SYSIO = 10,
	REC_URING = 11,
	REC_END_SYS = 12,
	REC_END_BLK = 13,
	REC_JOURNAL = 14,
	REC_STACK = 15,
	REC_CGROUP = 16,
};

#define KIND_BITS 5
#define KIND_MASK ((1 << KIND_BITS) - 1)
#define KIND_CPU_MAX ((1 << (16 - KIND_BITS)) - 1)

/* iocap_format::blk_flags::QUEUED: an insert was seen before the issue. */
#define BLK_QUEUED (1U << 7)

/* What a block request was issued for (iocap_format::Cause). */
enum blk_cause {
	CAUSE_NONE = 0,
	CAUSE_SYSCALL = 1,
	CAUSE_WRITEBACK = 2,
	CAUSE_IO_URING = 3,
	CAUSE_JOURNAL = 4,
};

#define COMM_LEN 16
#define PATH_LEN 256
#define ARGS_LEN 256
/* rec_exec.args_len: set when the argument vector was longer than ARGS_LEN - 1 bytes. */
#define ARGS_CUT 0x8000
/* rec_fd.path_len: NUL-terminated (0xffff), or NUL-terminated and cut short (PATH_CUT). */
#define PATH_CUT 0xfffe
#define DNAME_LEN 32

/*
 * One completed syscall, the hot path: 32 bytes (40 in the ring with its header) when the
 * latency fits 32 bits (under 4.29 s) and the return value fits 32 bits, as nearly all do.
 */
struct rec_sys32 {
	__u16 kind; /* REC_SYS32 */
	__u16 nr;
	__u32 tid;
	__u32 pid;
	__s32 arg0; /* as in rec_sys */
	__u64 ts;   /* as in rec_sys */
	__u32 lat;
	__s32 ret;
};

/* One completed syscall whose latency or return value (mmap's address, ...) needs 64 bits. */
struct rec_sys {
	__u16 kind;
	__u16 nr;
	__u32 tid;
	__u32 pid;
	__s32 arg0; /* the first argument, truncated: the fd for syscalls taking one */
	__u64 ts;   /* enter, ns of CLOCK_MONOTONIC in the ring, BOOTTIME once the poller has read it */
	__u64 lat;  /* exit - enter */
	__s64 ret;
};

/*
 * Why a call's thread blocked, each sleep by the first that holds: what the thread was doing
 * as it went to sleep (throttled for its dirty pages, waiting on a folio's writeback, in lock
 * contention, in direct reclaim), else who woke it (a timer, a block request's completion, a
 * signal sent to its process, the network's receive softirq, the journal thread jbd2, a
 * flusher writing an inode back, another thread inside a call).
 * WHY_OTHER (anything else, or a sleep with no waking seen) is not sent: it is the rest.
 */
enum why {
	WHY_DISK = 0,
	WHY_THROTTLE = 1,
	WHY_WRITEBACK = 2,
	WHY_JOURNAL = 3,
	WHY_LOCK = 4,
	WHY_RECLAIM = 5,
	WHY_TIMER = 6,
	WHY_CALL = 7,
	WHY_NET = 8,
	WHY_SIGNAL = 9,
	WHY_N = 10,
	WHY_OTHER = WHY_N,
};

/*
 * A completed syscall that issued block requests (rare: a read that missed the page cache, an
 * fsync, an O_DIRECT call, io_submit), or a positional one (pread64, pwritev2, ...): rec_sys,
 * what its requests did, and the offset it was given.
 */
struct rec_sysio {
	struct rec_sys sys; /* kind REC_SYSIO */
	__u32 reqs;  /* requests created while it was in flight */
	__u32 pad;
	__u64 bytes; /* their bytes, as issued */
	__u64 disk;  /* ns of its latency with at least one of them in flight */
	__u64 offset; /* a positional call's offset (its fourth argument), else 0 */
	/* The call's anatomy (see struct anat), when it left the CPU: else 0. */
	__u64 runq;   /* ns runnable and not running: preempted, or woken and waiting for a CPU */
	__u64 wait;   /* ns blocked (asleep), from its switch out to the waking */
	__u32 waker;  /* tid of the task that woke its longest sleep, 0 for none */
	__u32 sleeps; /* how many times it blocked */
	__u32 waker_pid; /* the process (tgid) of `waker` */
	__u32 pad2;
	/* Of `wait`, ns by why it blocked (enum why); the rest is WHY_OTHER's. */
	__u64 why[WHY_N];
	__u64 woken; /* ns after `sys.ts` at which the waking that ended its longest sleep came; 0: none */
};

/*
 * One completion of an io_uring request (a multishot request completes more than once: each
 * completion is timed from the one before), with what its block requests did.
 */
struct rec_uring {
	__u16 kind; /* REC_URING */
	__u8 op;    /* IORING_OP_* */
	__u8 pad;
	__u32 tid;  /* the submitting thread */
	__u32 pid;
	__s32 fd;   /* the fd at submission; -1 for a registered (fixed) file */
	__u64 ts;   /* submission (or the previous completion), CLOCK_MONOTONIC as rec_sys.ts */
	__u64 lat;  /* completion - ts */
	__s64 res;  /* the completion's result */
	__u32 reqs; /* block requests created while it was being submitted */
	__u32 ino_dev; /* its file, when it has one: the superblock's dev_t ... */
	__u64 ino;     /* ... and inode number */
	__u64 bytes;   /* its block requests' bytes, as issued */
	__u64 disk;    /* ns between ts and completion with at least one of them in flight */
};

/*
 * One completed block request; pid/tid/comm are of the task that created it, and the cause is
 * the span that task was inside then: a syscall (named by tid and link, its enter time), the
 * writeback of one inode, or a journal commit (named by tid, the jbd2 thread's, and link, the
 * commit's start). A device's cache flush, which the block layer makes on its own, is the
 * request of the first span that asked for it since the last one (see flush_askers).
 */
struct rec_blk {
	__u16 kind;
	__u8 op;     /* REQ_OP_* & 0xff */
	__u8 has_pid;
	__u32 cmd_flags; /* iocap_format::blk_flags bits */
	__u32 pid;
	__u32 dev;   /* disk dev_t, major << 20 | minor */
	__u64 ts;    /* issue: CLOCK_MONOTONIC in the ring, BOOTTIME once the poller has read it */
	__u64 lat;   /* complete - issue */
	__u64 queue; /* issue - the request's start (start_time_ns, else its insert; else 0) */
	__u64 sector;
	__u32 bytes;
	__s32 error;
	char comm[COMM_LEN];
	__u32 tid;
	__u16 nr;      /* cause CAUSE_SYSCALL: the syscall's number; CAUSE_IO_URING: the opcode */
	__u8 cause;    /* enum blk_cause */
	__u8 pad;
	__s32 fd;      /* cause CAUSE_SYSCALL: the syscall's first argument (its fd, for most);
			  CAUSE_IO_URING: the request's fd; CAUSE_JOURNAL: the transaction */
	__u32 ino_dev; /* the file whose pages move, when known: its superblock's dev_t ... */
	__u64 link;    /* cause CAUSE_SYSCALL: its enter time, CLOCK_MONOTONIC as rec_sys.ts;
			  CAUSE_IO_URING: the request's submission, as rec_uring.ts;
			  CAUSE_JOURNAL: the commit's start, as rec_sys.ts */
	__u64 ino;     /* ... and inode number (the written-back inode, or the pages' owner) */
	__u16 ioprio;  /* the request's I/O priority: class << 13 | hint << 3 | level */
	__u8 pad2[6];
};

/*
 * A journal commit ended: jbd2's thread `tid` (named for its journal's device, `jbd2/sda1-8`)
 * committed transaction `tx`, from jbd2_start_commit (ts) to jbd2_end_commit, with what its
 * block requests (those of cause CAUSE_JOURNAL linked to it, and the flushes it asked for) did.
 */
struct rec_journal {
	__u16 kind; /* REC_JOURNAL */
	__u16 pad;
	__u32 tid;
	__u32 pid;
	__u32 tx;
	__u64 ts;   /* jbd2_start_commit, CLOCK_MONOTONIC as rec_sys.ts */
	__u64 lat;  /* jbd2_end_commit - ts */
	__u32 reqs; /* its block requests */
	__u32 pad2;
	__u64 bytes; /* their bytes, as issued */
	__u64 disk;  /* ns of the commit with at least one of them in flight */
};

/* The most frames a stack record holds of each stack (bcc's and perf's default is 127). */
#define STACK_DEPTH 64

/*
 * A user frame as the kernel gives it with BPF_F_USER_BUILD_ID (its struct bpf_stack_build_id):
 * the build ID of the file it is in and its offset there (status USER_FRAME_FILE), which stay
 * true after the process is gone, or its bare address (USER_FRAME_IP: the file had no build ID,
 * or the kernel could not read it then).
 */
struct user_frame {
	__s32 status;
	__u8 build_id[20];
	__u64 at; /* the offset in the file, or the address */
};

enum { USER_FRAME_NONE = 0, USER_FRAME_FILE = 1, USER_FRAME_IP = 2 };

/*
 * --stacks: the stacks of a slow call (its latency at least the threshold), sent just before
 * the call's own record, which then goes through the ring too: its user stack as it returned,
 * and the kernel stack of its longest sleep, taken as that sleep ended (at the thread's switch
 * back in, so where it slept). The call is named by tid and its enter time. A count of 0 is
 * no stack (a kernel thread's user stack, a call that did not sleep long, a failure).
 */
struct rec_stack {
	__u16 kind; /* REC_STACK */
	__u8 user_n;   /* frames in `user` */
	__u8 kernel_n; /* frames in `kernel` */
	__u32 tid;
	__u32 pid;
	__u32 pad;
	__u64 ts;  /* the call's enter, as rec_sys.ts */
	__u64 end; /* the call's end: the record's time in the merge (abi::merge_key) */
	struct user_frame user[STACK_DEPTH]; /* innermost first */
	__u64 kernel[STACK_DEPTH]; /* innermost first */
};

/*
 * A new process (thread group); comm is the child's, inherited from the parent. uid is the
 * effective uid, cgroup the cgroup v2 id (its directory's inode number in cgroupfs), cgroup1
 * the id in the v1 hierarchy the recorder chose (`v1_ctrl`; 0 without one).
 */
struct rec_fork {
	__u16 kind;
	__u16 pad;
	__u32 pid;
	__u32 ppid;
	__u32 uid;
	__u64 ts;
	char comm[COMM_LEN];
	__u64 cgroup;
	__u64 cgroup1;
};

/* A successful exec: the new comm, the file name and the start of the argument vector. */
struct rec_exec {
	__u16 kind;
	__u16 args_len;
	__u32 pid;
	__u32 ppid;
	__u32 uid;    /* as in rec_fork: setuid binaries change it here */
	__u64 ts;
	__u64 cgroup;  /* as in rec_fork */
	__u64 cgroup1; /* as in rec_fork */
	char comm[COMM_LEN];
	char filename[PATH_LEN];
	char args[ARGS_LEN];
};

/*
 * A thread group leader exited (EXIT) or renamed itself (COMM). The ts of these and of
 * rec_fork and rec_exec is CLOCK_MONOTONIC, read before the record is reserved (as every
 * record's time, for the merge of the per-CPU rings); the poller moves it to BOOTTIME.
 */
struct rec_comm {
	__u16 kind;
	__u16 pad;
	__u32 pid;
	__u64 ts;
	char comm[COMM_LEN];
};

/* A process moved to another cgroup (of v2's hierarchy or the `v1_ctrl` one): its ids now. */
struct rec_cgroup {
	__u16 kind;
	__u16 pad;
	__u32 pid;
	__u64 ts;
	__u64 cgroup;  /* as in rec_fork */
	__u64 cgroup1; /* as in rec_fork */
};

/*
 * An fd was created (open, socket, pipe, eventfd, ...) or a socket's addresses
 * changed (connect, accept): what the kernel's struct file says about it.
 */
struct rec_fd {
	__u16 kind;
	__u16 nr;     /* the syscall that made it */
	__u32 pid;
	__s32 fd;
	__s32 dirfd;  /* openat's dirfd, for resolving a relative path */
	__u64 ts;     /* the syscall's enter: CLOCK_MONOTONIC, as in rec_sys */
	__u32 mode;   /* inode i_mode, 0 when the file could not be read */
	__u32 magic;  /* the inode's superblock magic (anon inodes, pidfs, ...) */
	__u32 sdev;   /* the superblock's dev_t */
	__u16 family; /* socket family, 0 when not a socket */
	__u16 lport;  /* host order */
	__u16 rport;  /* host order */
	__u16 path_len;
	__u8 laddr[16];
	__u8 raddr[16];
	char dname[DNAME_LEN]; /* the dentry name: "[eventfd]", "inotify", "memfd:x" */
	char path[PATH_LEN];   /* the path given to open, or a unix socket's address */
	__u64 ino;             /* the inode's number, 0 when the file could not be read */
	__u64 end;             /* the syscall's end: the record's time in the merge (abi::merge_key) */
};

/* fcntl(F_DUPFD*) copied oldfd to newfd (dup/dup2/dup3 are decoded from rec_sys). */
struct rec_dup {
	__u16 kind;
	__u16 pad;
	__u32 pid;
	__s32 oldfd;
	__s32 newfd;
	__u64 end; /* the fcntl's end: the record's time in the merge (abi::merge_key) */
};

#endif
