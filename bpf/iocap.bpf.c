// SPDX-License-Identifier: GPL-2.0
/*
 * iocap's BPF programs: every syscall (enter -> exit) and every block request
 * (insert -> issue -> complete), plus the process and fd table changes userspace
 * needs to name them. Tracepoints only (tp_btf): kprobes need not exist.
 *
 * The syscall path is the hot one (millions per second). sys_enter leaves the enter
 * time and first arguments in a per-CPU slot, where sys_exit finds them when the call
 * did not leave the CPU (most calls: a per-CPU array lookup is a few inlined
 * instructions). That needs programs the kernel cannot preempt half-way (cpu_slot);
 * without that guarantee the call goes to task-local storage directly. A thread switched out in the middle of a call (it blocked, or was
 * preempted) takes its slot along into task-local storage (sched_switch), where sys_exit
 * looks second. Task storage also caches, when filtering by pid, whether the thread is
 * traced, so the pid hash is not looked up on every call. The exit program reserves one
 * 32-byte record in the ring buffer without waking the consumer (it polls). A failed
 * reserve is counted per CPU, never silently lost.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "iocap.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by userspace before load. */
const volatile __u32 self_tgid = 0;
const volatile bool filter_pids = false;  /* trace only tgids in `pids` */
const volatile bool follow_forks = false; /* children of traced tgids are traced too */
const volatile bool want_sys = true;
const volatile bool want_blk = true;
const volatile __u64 min_latency = 0;
/* io_uring_complete passes (ctx, req, cqe), not (ctx, req, user_data, res, cflags, ...) (6.1). */
const volatile bool uring_complete_cqe = true;
/*
 * Whether per-CPU state (cpu_call, cpu_pick) may be used: only when these programs cannot be
 * preempted half-way (userspace decides from the kernel's preemption model), or another
 * thread could take the CPU between two stores. Otherwise everything goes through task storage.
 */
const volatile bool cpu_slot = false;
/* Time a call's thread spends off the CPU, by why (see struct anat): --no-anatomy clears it. */
const volatile bool want_anatomy = false;
/* --stacks: a call at least this slow has its stacks sent (see rec_stack); 0: none are taken. */
const volatile __u64 stack_min = 0;
/* Record-time filter pushdown: only these syscall numbers (a bitmap indexed by nr) ... */
const volatile bool filter_nrs = false;
const volatile __u64 allow_nrs[8] = {};
/*
 * ... and only processes (thread groups) whose leader's comm is one of these: each the 16
 * NUL-padded bytes of a comm, read as two native-endian words.
 */
#define MAX_COMMS 8
const volatile __u32 n_comms = 0;
const volatile __u64 comms[MAX_COMMS][2] = {};

/* x86_64 syscall numbers of the calls that change the fd table. */
#define NR_open 2
#define NR_pipe 22
#define NR_socket 41
#define NR_connect 42
#define NR_accept 43
#define NR_socketpair 53
#define NR_fcntl 72
#define NR_creat 85
#define NR_chdir 80
#define NR_epoll_create 213
#define NR_inotify_init 253
#define NR_openat 257
#define NR_signalfd 282
#define NR_timerfd_create 283
#define NR_eventfd 284
#define NR_accept4 288
#define NR_signalfd4 289
#define NR_eventfd2 290
#define NR_epoll_create1 291
#define NR_pipe2 293
#define NR_inotify_init1 294
#define NR_perf_event_open 298
#define NR_fanotify_init 300
#define NR_memfd_create 319
#define NR_userfaultfd 323
#define NR_io_uring_setup 425
#define NR_pidfd_open 434
#define NR_openat2 437
#define NR_pread64 17
#define NR_pwrite64 18
#define NR_preadv 295
#define NR_pwritev 296
#define NR_preadv2 327
#define NR_pwritev2 328
#define NR_execve 59
#define NR_prctl 157
#define NR_execveat 322

/* The syscalls above as a bitmap indexed by nr: one load and a shift on every exit. */
#define FD_BIT(nr, w) ((nr) / 64 == (w) ? 1ULL << ((nr) % 64) : 0)
#define FD_WORD(w)                                                                                        \
	(FD_BIT(NR_open, w) | FD_BIT(NR_pipe, w) | FD_BIT(NR_socket, w) | FD_BIT(NR_connect, w) |        \
	 FD_BIT(NR_accept, w) | FD_BIT(NR_socketpair, w) | FD_BIT(NR_fcntl, w) | FD_BIT(NR_creat, w) |  \
	 FD_BIT(NR_epoll_create, w) | FD_BIT(NR_inotify_init, w) | FD_BIT(NR_openat, w) |                \
	 FD_BIT(NR_signalfd, w) | FD_BIT(NR_timerfd_create, w) | FD_BIT(NR_eventfd, w) |                 \
	 FD_BIT(NR_accept4, w) | FD_BIT(NR_signalfd4, w) | FD_BIT(NR_eventfd2, w) |                      \
	 FD_BIT(NR_epoll_create1, w) | FD_BIT(NR_pipe2, w) | FD_BIT(NR_inotify_init1, w) |               \
	 FD_BIT(NR_perf_event_open, w) | FD_BIT(NR_fanotify_init, w) | FD_BIT(NR_memfd_create, w) |      \
	 FD_BIT(NR_userfaultfd, w) | FD_BIT(NR_io_uring_setup, w) | FD_BIT(NR_pidfd_open, w) |           \
	 FD_BIT(NR_openat2, w) | FD_BIT(NR_chdir, w))
#define FD_NR_WORDS 8
static const __u64 fd_nrs[FD_NR_WORDS] = {
	FD_WORD(0), FD_WORD(1), FD_WORD(2), FD_WORD(3), FD_WORD(4), FD_WORD(5), FD_WORD(6), FD_WORD(7),
};

#define F_DUPFD 0
#define F_DUPFD_CLOEXEC 1030
#define AF_UNIX 1
#define AF_INET 2
#define AF_INET6 10

/*
 * One ring buffer per CPU, each written only by programs running on its CPU: one shared ring
 * serializes every CPU's records on its lock (measured: two CPUs each making calls pay twice
 * the per-call cost). Userspace creates the rings (all of one size, as the template below
 * must be) and merges them back into one causal order (merge.rs). Every record is stamped
 * with a time read before it is reserved (see the merge's key, abi::merge_key).
 */
struct ring_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* the template: userspace gives its own */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* resized by userspace to the possible CPUs */
	__type(key, __u32);
	__array(values, struct ring_map);
} rings SEC(".maps");

/* This CPU's ring (the programs cannot migrate while they run). */
static __always_inline void *cpu_ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&rings, &cpu);
}

/* Reserve `size` bytes in this CPU's ring; NULL when it is full (or missing). */
static __always_inline void *ring_reserve(__u64 size)
{
	void *rb = cpu_ring();

	return rb ? bpf_ringbuf_reserve(rb, size, 0) : NULL;
}

/* Failed reserves, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} drops SEC(".maps");

/*
 * Block requests seen issued whose completion never reached blk_complete (rq_new finds them
 * when their address is reused; end_rqs those left at the end), per disk (its
 * dev_t, as rec_blk.dev). Not drops: the recorder says them apart.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} unseen SEC(".maps");

/* One more request of disk `dev` whose completion went untraced. */
static __always_inline void count_unseen(__u32 dev)
{
	__u64 zero = 0, *n = bpf_map_lookup_elem(&unseen, &dev);

	if (!n) {
		bpf_map_update_elem(&unseen, &dev, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&unseen, &dev);
	}
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* Traced thread groups when filter_pids is set. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/*
 * Bumped by userspace each time it adds a pid to `pids`, so that threads which cached
 * "not traced" look again (fork adds children before they run: no bump needed).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} pids_gen SEC(".maps");

/* A syscall in flight, from sys_enter to sys_exit. */
struct inflight {
	__u64 ts; /* enter time; 0 when no traced syscall is in flight */
	__s64 arg0;
	__u64 arg1;
	__u64 arg3; /* a positional call's offset (see is_pos) */
	__u16 nr;
	__u16 io;  /* it created a block request: see call_slots */
	__u32 tid; /* whose call it is (the per-CPU slot is shared by every thread of the CPU) */
};

/* Per CPU: the call of the thread on the CPU, until it exits or the thread is switched out. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct inflight);
} cpu_call SEC(".maps");

/*
 * Per thread, the anatomy of the call it is in (`call`, its enter time), from its first switch
 * out: the time since then is on the CPU, in the run queue (preempted, or woken and not yet
 * running) or blocked (asleep until a waking). A waking while the task is still on its way
 * out of __schedule (still RUNNING) counts as run queue, and a waking with no sleep after it
 * is no sleep: only a waking of a task switched out asleep ends a sleep. So the parts are
 * never negative, and the time on the CPU is the call's latency less the others.
 */
struct anat {
	__u64 call;
	__u64 since;   /* when `state` began */
	__u64 woken;   /* a waking seen while it was still running: it may be on its way out */
	__u64 runq;
	__u64 wait;
	__u64 longest; /* the longest sleep */
	__u64 woke;    /* when the waking that ended it came */
	__u64 by[WHY_N]; /* of `wait`, by why (enum why): WHY_OTHER's is the rest */
	__u32 waker;   /* the tid that woke it */
	__u32 waker_pid; /* and its process */
	__u16 sleeps;
	__u8 state;    /* ANAT_RUN, ANAT_RUNQ, ANAT_ASLEEP */
	__u8 why;      /* asleep: why, when the thread said as it went (else WHY_OTHER) */
	__u8 stack_due; /* --stacks: its longest sleep, long enough, ended: take its stack at switch in */
};

enum { ANAT_RUN = 0, ANAT_RUNQ = 1, ANAT_ASLEEP = 2 };

/* How long before its switch out a waking of a running thread is taken for one on its way out. */
#define ANAT_WAY_OUT_NS 50000ULL

/* Spans of a thread's own (it may block) and of a flusher's (what it wakes, it wakes for writeback). */
enum { WHY_SPAN_LOCK = 1, WHY_SPAN_RECLAIM = 2, WHY_SPAN_FLUSH = 4 };

/* How long before its sleep begins a thread's `why_next` is taken for that sleep's. */
#define WHY_NEXT_NS 100000ULL

/* A waking this soon after a block request's completion, by the task that ran it, is its. */
#define WHY_DONE_NS 50000ULL


/*
 * Per CPU, what the current task is running on behalf of, for who woke a thread (see enum
 * why): timer callbacks and the network's receive softirq under way, and the last block
 * request completion (when, and the task current then: in an interrupt, whichever task it
 * interrupted).
 */
struct cpu_ctx {
	__u64 done;
	__u32 done_pid;
	__u32 timers;
	/* The network's receive softirq under way: the task it runs in, + 1 (0: none). */
	__u32 net_rx;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_ctx);
} cpu_ctx SEC(".maps");

/* Per thread: the call it was switched out in, and whether it is traced. */
struct tctx {
	struct inflight call;
	struct anat anat;
	__u32 gen; /* with filter_pids: pids_gen + 1 when `traced` was decided (0: never) */
	__u8 traced;
	/*
	 * What the thread is doing that it may block in (see enum why), set by the tracepoints
	 * that say so: spans (WHY_SPAN_LOCK, WHY_SPAN_RECLAIM bits, from their begin to their
	 * end) and one sleep about to begin (`why_next`, said at `why_at`).
	 */
	__u8 why_spans;
	__u8 why_next;
	__u8 pad;
	__u64 why_at;
	/* A flusher thread: the inode it is writing back (writeback_single_inode), else 0. */
	__u64 wb_ino;
	__u32 wb_dev;
	/*
	 * A jbd2 thread inside a commit (jbd2_start_commit ... jbd2_end_commit): its start (0:
	 * none), the transaction and its filesystem's dev_t.
	 */
	__u32 jr_tx;
	__u64 jr_ts;
	__u32 jr_dev;
	/*
	 * The io_uring request this thread submitted last (see uring_current): its key in
	 * `urings`, submission time, fd and opcode, and the enter time of the call it was
	 * submitted in (0: none, the SQPOLL thread).
	 */
	__s32 ur_fd;
	__u64 ur_req;
	__u64 ur_ts;
	__u64 ur_call;
	__u16 ur_op;
	__u8 pad2[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tctx);
} tstore SEC(".maps");

/*
 * --stacks: per thread, the kernel stack of its call's longest sleep of at least stack_min,
 * taken when the thread came back on a CPU (so where it slept). Created at the first such
 * sleep: most threads never have one.
 */
struct sleep_stack {
	__u64 call; /* the call's enter time; 0: none */
	__u32 n;    /* frames */
	__u32 pad;
	__u64 ips[STACK_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct sleep_stack);
} sleep_stacks SEC(".maps");

/* Per thread, only while an open-family call is in flight: the path it was given. */
struct open_arg {
	char path[PATH_LEN];
	__u8 cut; /* the path went on past PATH_LEN - 1 bytes */
};

/*
 * Read the path at `up` into `a`: whether it was cut is asked only of one that filled the
 * buffer (one more byte read, past it), so the common path costs nothing more.
 */
static __always_inline void read_path(struct open_arg *a, const char *up)
{
	char next = 0;

	a->path[0] = 0;
	a->cut = bpf_probe_read_user_str(a->path, sizeof(a->path), up) == PATH_LEN &&
		 !bpf_probe_read_user(&next, 1, up + PATH_LEN - 1) && next;
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct open_arg);
} opening SEC(".maps");

/* Scratch space for the path before it goes into `opening` (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct open_arg);
} scratch SEC(".maps");

/* Block requests in flight, keyed by struct request *. */
struct rq_info {
	__u64 insert;
	__u64 issue;
	__u32 pid;
	__u32 bytes;
	char comm[COMM_LEN];
	/* The span the creating task was inside (rec_blk's fields of the same names). */
	__u32 tid;
	__u16 nr;
	__u8 cause;
	__u8 in_slot; /* the sums of the call it was made for are in call_slots, not callio */
	__s32 fd;
	__u32 ino_dev;
	__u64 link;
	__u64 ino;
	/* Its disk (rec_blk.dev), at its making: its record's, and where it counts if unseen. */
	__u32 dev;
	__u32 pad2;
	/* Handed over as in flight at the recording's end (see stop_at): by one program only. */
	__u64 taken;
};

/*
 * Who asked for each device's next cache flush (keyed by rq_info.dev): the span of the first
 * request carrying REQ_PREFLUSH made inside one (a call's fsync, a journal commit's block)
 * since that device's last flush request. The block layer makes the flush a request of its own
 * (its flush queue's), from kblockd's work or a completion, where nothing says whose it is; one
 * flush serves every asker pending at its issue, and is put down to the first.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct rq_info);
} flush_askers SEC(".maps");

/*
 * A request's entry lives in a slot of a direct-mapped table, picked by hashing its address:
 * an array lookup the verifier inlines. Kept in hash maps (this and `callio`), the block
 * programs took ~1,600 ns per request on fio's libaio at iodepth 16, in slots ~950. A request
 * whose slot another holds goes to `rqs`. The holder is a request in flight, or one the kernel
 * freed without completing it (a driver that failed it early), until that address is used
 * for a request again (the block layer reuses its requests).
 */
#define RQ_SLOT_BITS 13
/* Slot numbers are the hash's top bits, masked by this: userspace sets 0 in tests (one slot). */
const volatile __u32 rq_slot_mask = (1 << RQ_SLOT_BITS) - 1;
struct rq_slot {
	__u64 rq; /* the request's address; 0: free */
	struct rq_info i;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << RQ_SLOT_BITS);
	__type(key, __u32);
	__type(value, struct rq_slot);
} rq_slots SEC(".maps");

/*
 * The requests whose slot was taken. LRU: one the kernel frees without completing it must not
 * hold its entry forever.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct rq_info);
} rqs SEC(".maps");

static __always_inline struct rq_slot *rq_slot_of(__u64 rq)
{
	/*
	 * The verifier allows no arithmetic on the address of a request but adding to it, and
	 * (privileged) subtracting another address: one that stays put, the map's, makes it a
	 * number. Fibonacci hashing: requests sit at a fixed stride in their tag set's pages.
	 */
	__u64 at = rq - (__u64)&rq_slots;
	__u32 idx = ((at * 0x9E3779B97F4A7C15ULL) >> (64 - RQ_SLOT_BITS)) & rq_slot_mask;

	return bpf_map_lookup_elem(&rq_slots, &idx);
}

/* Request `rq`'s entry, in its slot or in `rqs`; NULL when it is not tracked. */
static __always_inline struct rq_info *rq_find(__u64 rq)
{
	struct rq_slot *s = rq_slot_of(rq);

	if (s && s->rq == rq)
		return &s->i;
	return bpf_map_lookup_elem(&rqs, &rq);
}

/*
 * Request `rq`'s entry when a new request is made at its address: rq_find, but for `rqs` only
 * when another request holds the slot. The entry of a request that went to `rqs` and whose
 * slot was freed since is missed: it is not counted, and stays until the LRU drops it (the
 * slot is found first). That saves a hash lookup on nearly every request.
 */
static __always_inline struct rq_info *rq_stale(__u64 rq)
{
	struct rq_slot *s = rq_slot_of(rq);

	if (!s || !s->rq)
		return NULL;
	if (s->rq == rq)
		return &s->i;
	return bpf_map_lookup_elem(&rqs, &rq);
}

/* Request `rq` is done with: its slot is free again (or its `rqs` entry gone). */
static __always_inline void rq_forget(__u64 rq)
{
	struct rq_slot *s = rq_slot_of(rq);

	if (s && s->rq == rq)
		*(volatile __u64 *)&s->rq = 0;
	else
		bpf_map_delete_elem(&rqs, &rq);
}

/*
 * Keep `n` as request `rq`'s entry: in its slot when that is free or already the request's
 * (claimed atomically: another CPU may be making a request for the same slot), else in `rqs`.
 */
static __always_inline void rq_keep(__u64 rq, struct rq_info *n)
{
	struct rq_slot *s = rq_slot_of(rq);
	__u64 held;

	if (s) {
		held = s->rq;
		if ((held == 0 || held == rq) && __sync_val_compare_and_swap(&s->rq, held, rq) == held) {
			s->i = *n;
			return;
		}
	}
	bpf_map_update_elem(&rqs, &rq, n, BPF_ANY);
}

/*
 * A syscall (or io_uring request) that created block requests, from its first request until
 * it exits (completes).
 */
struct call_key {
	__u32 tid;
	__u32 pad;
	__u64 ts; /* enter, as inflight.ts (the request's submission, as uring_req.link) */
};

struct call_io {
	__u32 reqs;
	__u32 inflight; /* its requests created and not yet complete */
	__u64 bytes;
	__u64 busy_since; /* when inflight last went from 0 to 1 */
	__u64 disk;       /* closed busy periods so far */
};

/*
 * As block requests (rq_slots), a call's sums live in a slot of a direct-mapped table, picked
 * by hashing its key, or in `callio` when another call holds that slot. A slot whose call
 * never ends (its thread killed in the middle of it) stays taken: its calls go to `callio`.
 */
#define CALL_SLOT_BITS 12
/* Userspace clears it in tests: every call's sums go to `callio`. */
const volatile bool call_slots_on = true;
struct call_slot {
	__u64 ts; /* the call's key (call_key), ts first: 0 is a free slot */
	__u32 tid;
	__u32 pad;
	struct call_io io;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << CALL_SLOT_BITS);
	__type(key, __u32);
	__type(value, struct call_slot);
} call_slots SEC(".maps");

/* LRU: a thread killed in the middle of its call never reaches sys_exit. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct call_key);
	__type(value, struct call_io);
} callio SEC(".maps");

static __always_inline struct call_slot *call_slot_of(__u32 tid, __u64 ts)
{
	__u32 idx = ((ts ^ ((__u64)tid << 40)) * 0x9E3779B97F4A7C15ULL) >> (64 - CALL_SLOT_BITS);

	return call_slots_on ? bpf_map_lookup_elem(&call_slots, &idx) : NULL;
}

/* Whether slot `s` (if any) holds the sums of the call `tid` entered at `ts`. */
static __always_inline bool call_slot_holds(struct call_slot *s, __u32 tid, __u64 ts)
{
	return s && s->ts == ts && s->tid == tid;
}

/* The sums of the call `tid` entered at `ts`, in its slot or in `callio`; NULL: none yet. */
static __always_inline struct call_io *call_io_find(__u32 tid, __u64 ts)
{
	struct call_slot *s = call_slot_of(tid, ts);
	struct call_key ck = { .tid = tid, .ts = ts };

	if (call_slot_holds(s, tid, ts))
		return &s->io;
	return bpf_map_lookup_elem(&callio, &ck);
}

/* The call's sums are done with: its slot is free again (or its `callio` entry gone). */
static __always_inline void call_io_forget(__u32 tid, __u64 ts)
{
	struct call_slot *s = call_slot_of(tid, ts);
	struct call_key ck = { .tid = tid, .ts = ts };

	if (call_slot_holds(s, tid, ts)) {
		/* As call_io_add claims: a slot matches a key only once its sums are set. */
		*(volatile __u32 *)&s->tid = 0;
		asm volatile("" ::: "memory");
		*(volatile __u64 *)&s->ts = 0;
	} else {
		bpf_map_delete_elem(&callio, &ck);
	}
}

/* An io_uring request between its submission and its (last) completion. */
struct uring_req {
	__u64 ts;   /* submission, then each completion of a multishot request */
	__u64 link; /* submission: its key in call_slots with tid, and its block requests' link */
	__u32 tid;
	__u32 pid;
	__s32 fd;
	__u8 op;
	__u8 pad[3];
};

/*
 * Keyed by struct io_kiocb *, which is unique while the request lives (user_data is the
 * application's and need not be). LRU: a request that never completes (its ring torn down,
 * IOSQE_CQE_SKIP_SUCCESS) must not hold its entry forever.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct uring_req);
} urings SEC(".maps");

/*
 * A multishot request's completions but the last are posted without the request (the kernel's
 * aux CQE path passes NULL): they are found by ring and user_data, the only names the
 * application has for them either.
 */
struct uring_tag {
	__u64 ring;
	__u64 user_data;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct uring_tag);
	__type(value, __u64); /* the request, as `urings` keys it */
} uring_tags SEC(".maps");

/* count_drop's thread group: the current task's, read only once a record is dropped. */
#define DROP_CURRENT 0xffffffffu

/*
 * Drops by thread group (tgid), so that the recorder can say whose events were lost: touched
 * only when a record is dropped, never on the way of one kept. A plain hash, not an LRU one,
 * whose evictions would take counts with them: when it is full, a process not in it has its
 * drops counted in `drops` alone, which the recorder reads as of no known process. It reads
 * this map with `drops` (this one first, so that every drop it finds here is in `drops`
 * already) and deletes entries that stopped growing once the map is half full.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} drops_by_pid SEC(".maps");

/* One more drop of thread group `tgid` (DROP_CURRENT: the current task's; 0: none known). */
static __noinline void place_drop(__u32 tgid)
{
	__u64 zero = 0, *n;

	if (tgid == DROP_CURRENT)
		tgid = bpf_get_current_pid_tgid() >> 32;
	if (!tgid)
		return;
	n = bpf_map_lookup_elem(&drops_by_pid, &tgid);
	if (!n) {
		bpf_map_update_elem(&drops_by_pid, &tgid, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&drops_by_pid, &tgid);
	}
	if (n)
		__sync_fetch_and_add(n, 1);
}

/* A record of thread group `tgid` (or DROP_CURRENT) is lost: counted, then placed. */
static __always_inline void count_drop(__u32 tgid)
{
	__u32 zero = 0;
	__u64 *d = bpf_map_lookup_elem(&drops, &zero);
	if (d)
		*d += 1;
	place_drop(tgid);
}

/*
 * Unconsumed ring bytes past which syscall and block records are dropped (and counted),
 * written by userspace (the skeleton's mmapped .bss) as about half a second of what it can
 * drain. What waits in the ring is what a killed recorder loses, so a ring far longer than
 * the recorder can keep up with only makes the file fall seconds behind, then lose them all:
 * this keeps the backlog short in time and sheds the excess here, counted, at the moment it
 * happens. Process and fd records are not held to it, so the tables stay whole. 0: no limit.
 */
volatile __u64 backlog_max = 0;

/*
 * The recording's end, ns of CLOCK_MONOTONIC; 0 while recording. Userspace sets it when it
 * stops. From then on no new call or request is tracked, and one that ends is not recorded
 * as it ends but as it stood at stop_at: an unfinished event (REC_END_SYS, REC_END_BLK),
 * its latency counted to stop_at. Those still in flight after the rings' last drain are
 * handed over by end_rqs and end_calls (or, where no iterator may run, by userspace: see
 * crates/record/src/ended.rs) instead. Each is claimed (an atomic exchange) by whichever of
 * the two comes first, so none is handed over twice.
 */
volatile __u64 stop_at = 0;

/*
 * Tests (IOCAP_REFUSE=end_calls,sys_enter,end_rqs): the verifier rejects the programs named, as
 * a kernel whose security policy refuses iterators refuses end_calls, so that the recorder's
 * probe by loading is tried for real. A constant of .rodata: the verifier drops the branch
 * when it is clear, so the programs cost nothing for it.
 */
const volatile __u32 refuse_progs = 0;
#define REFUSE_END_CALLS 1
#define REFUSE_SYS_ENTER 2
#define REFUSE_END_RQS 4
#define REFUSED_IN_TESTS(bit)                                                                   \
	do {                                                                                    \
		if (refuse_progs & (bit))                                                       \
			return *(int *)(long)bpf_ktime_get_ns(); /* a scalar dereferenced */ \
	} while (0)
/* Possible CPUs: the per-CPU call slots end_calls looks through. */
const volatile __u32 n_cpus = 1;

static __always_inline bool shed(__u32 tgid)
{
	__u64 max = backlog_max;

	void *rb = max ? cpu_ring() : NULL;

	if (rb && bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA) > max) {
		count_drop(tgid);
		return true;
	}
	return false;
}

/*
 * The hot path's own lanes: a completed call's record, the 32-byte rec_sys32 nearly every
 * call leaves (and the 72-byte rec_sysio of a positional call or one that issued block
 * requests), goes into this CPU's slice of `lanes` (`lanes_io`), an array userspace maps,
 * with no ring reserve and submit (a lock, its header, and three helper calls: ~40 ns of each
 * call's ~110 ns above the floor, benches/overhead.sh's "per-CPU lanes" row). Each CPU's
 * slice is a circle of lane_slots (lane_io_slots) records; its cursor's `head` counts the
 * records written, moved here after the record's stores, and `tail` those userspace has
 * taken, moved there. Only sys_exit writes a lane, so one program at a time per CPU, and only
 * when no other thread can run on this CPU in the middle of it (cpu_slot: a kernel without
 * involuntary preemption; irqs never make syscalls). x86's stores are seen in program order:
 * the barrier keeps clang from moving the head's store before the record's. Userspace merges
 * each lane as one more source (merge.rs), keyed by the call's end like the rings' records.
 * A call that changes the fd table keeps to the ring, behind its table records (sys_exit).
 * lane_slots 0 (another preemption model, IOCAP_LANES=0): the rings take these records too.
 */
const volatile __u32 lane_slots = 0;	/* a power of two */
const volatile __u32 lane_io_slots = 0; /* a power of two */

struct lane_cursor {
	__u64 head;
	__u64 pad[7]; /* head and tail on cache lines of their own */
	__u64 tail;
	__u64 pad2[7];
};

struct lane_cursors {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* resized by userspace to the possible CPUs */
	__type(key, __u32);
	__type(value, struct lane_cursor);
};

struct lane_cursors lane_cursors SEC(".maps");
struct lane_cursors lane_io_cursors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* resized by userspace to lane_slots per possible CPU */
	__type(key, __u32);
	__type(value, struct rec_sys32);
} lanes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* resized by userspace to lane_io_slots per possible CPU */
	__type(key, __u32);
	__type(value, struct rec_sysio);
} lanes_io SEC(".maps");

/*
 * This CPU's next free slot of `records` (`slots` records of `size` bytes a CPU) and its
 * cursor in `cursors`; NULL (counted as a drop) when the lane is full or over the backlog
 * limit, as a ring would be.
 */
static __always_inline void *lane_reserve(void *cursors, void *records, __u32 slots, __u64 size,
					  struct lane_cursor **cur)
{
	__u32 cpu = bpf_get_smp_processor_id(), i;
	struct lane_cursor *c = bpf_map_lookup_elem(cursors, &cpu);
	__u64 h, max = backlog_max, waiting;
	void *e;

	if (!c)
		return NULL;
	h = c->head;
	waiting = h - c->tail;
	if (waiting >= slots || (max && waiting * size > max)) {
		count_drop(DROP_CURRENT);
		return NULL;
	}
	i = cpu * slots + (h & (slots - 1));
	e = bpf_map_lookup_elem(records, &i);
	if (!e) {
		count_drop(DROP_CURRENT);
		return NULL;
	}
	*cur = c;
	return e;
}

/* Hand the record lane_reserve gave over: its stores first, then the head past it. */
static __always_inline void lane_submit(struct lane_cursor *c)
{
	asm volatile("" ::: "memory");
	c->head += 1;
}

/*
 * A call's record of `size` bytes: in this CPU's lane (`cursors`, `records`, `slots`) when
 * `lane` and the lanes are on, `*cur` then set; else in its ring. NULL when there is no room,
 * counted.
 */
static __always_inline void *call_reserve(bool lane, void *cursors, void *records, __u32 slots, __u64 size,
					  struct lane_cursor **cur)
{
	void *e;

	if (lane && slots)
		return lane_reserve(cursors, records, slots, size, cur);
	if (shed(DROP_CURRENT))
		return NULL;
	e = ring_reserve(size);
	if (!e)
		count_drop(DROP_CURRENT);
	return e;
}

/* Hand over the record call_reserve gave, through its lane (`cur`) or its ring. */
static __always_inline void call_submit(void *e, struct lane_cursor *cur)
{
	if (cur)
		lane_submit(cur);
	else
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
}

static __always_inline bool traced(__u32 tgid)
{
	if (tgid == self_tgid)
		return false;
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return false;
	return true;
}

static __always_inline bool is_open(__u32 nr)
{
	/* chdir too: its path is where relative paths start from (userspace's cwd). */
	return nr == NR_openat || nr == NR_open || nr == NR_creat || nr == NR_openat2 || nr == NR_chdir;
}

/*
 * Per CPU, with filter_pids: the last thread decided on this CPU, so a thread that keeps
 * its CPU is not looked up in task storage on every call. Keyed by tid, so pids_gen is
 * bumped whenever a tid could change hands between traced and untraced tasks: a traced
 * task is born or dies (proc_fork, proc_exit), or userspace adds a pid.
 */
struct pick {
	__u32 tid;
	__u32 gen;
	__u8 traced;
	__u8 pad[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pick);
} cpu_pick SEC(".maps");

static __always_inline void bump_pids_gen(void)
{
	__u32 zero = 0, *gen = bpf_map_lookup_elem(&pids_gen, &zero);

	if (gen)
		__sync_fetch_and_add(gen, 1);
}

/*
 * With filter_pids: whether this thread is traced, from this CPU's last pick, else from
 * its storage, unless the pid set changed since.
 */
static __always_inline bool traced_cached(struct task_struct *task, __u32 tgid)
{
	__u32 zero = 0, *gen = bpf_map_lookup_elem(&pids_gen, &zero);
	__u32 g = gen ? *gen + 1 : 1, tid = task->pid;
	struct pick *p = bpf_map_lookup_elem(&cpu_pick, &zero);
	struct tctx *c;

	if (!cpu_slot)
		p = NULL;
	if (p && p->tid == tid && p->gen == g)
		return p->traced;
	c = bpf_task_storage_get(&tstore, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!c)
		return false;
	if (c->gen != g) {
		c->traced = traced(tgid);
		c->gen = g;
	}
	if (p) {
		p->tid = tid;
		p->gen = g;
		p->traced = c->traced;
	}
	return c->traced;
}

/*
 * Bit nr (< 512) of an 8-word bitmap. The mask is a bound the verifier sees even when clang
 * reloads nr from the stack; the empty asm keeps clang from folding the mask away.
 */
#define BIT_OF(words, nr)                          \
	({                                         \
		__u32 __w = (nr) / 64;             \
		asm volatile("" : "+r"(__w));      \
		__w &= 7;                          \
		((words)[__w] >> ((nr) % 64)) & 1; \
	})

static __always_inline bool is_fd_nr(__u32 nr)
{
	return nr < FD_NR_WORDS * 64 && BIT_OF(fd_nrs, nr);
}

/* Whether the record-time filter's syscall and process-name parts let this call through. */
static __always_inline bool wanted(struct task_struct *task, __u32 nr)
{
	if (filter_nrs && (nr >= 8 * 64 || !BIT_OF(allow_nrs, nr)))
		return false;
	if (n_comms) {
		char comm[16];
		__u64 a, b;
		bool hit = false;

		/* proc.name is the process's name: its leader's comm, not this thread's. */
		bpf_probe_read_kernel(comm, sizeof(comm), task->group_leader->comm);
		__builtin_memcpy(&a, comm, 8);
		__builtin_memcpy(&b, comm + 8, 8);
		for (__u32 i = 0; i < MAX_COMMS && i < n_comms; i++)
			hit |= a == comms[i][0] && b == comms[i][1];
		return hit;
	}
	return true;
}

/*
 * Calls followed through even when the filter does not want them: the fd table must
 * stay right for later calls that are wanted, and exec/prctl change the process name,
 * so they are judged at exit.
 */
static __always_inline bool always_followed(__u32 nr)
{
	return is_fd_nr(nr) || nr == NR_execve || nr == NR_execveat || nr == NR_prctl;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter, struct pt_regs *regs, long id)
{
	/* The ids are read from the task (the verifier inlines this helper), not by another call. */
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, zero = 0;
	struct inflight *c;

	REFUSED_IN_TESTS(REFUSE_SYS_ENTER);
	if (tgid == self_tgid || stop_at)
		return 0;
	if (filter_pids && !traced_cached(task, tgid))
		return 0;
	if ((filter_nrs || n_comms) && !wanted(task, id) && !always_followed(id))
		return 0;
	if (cpu_slot) {
		c = bpf_map_lookup_elem(&cpu_call, &zero);
	} else {
		struct tctx *t = bpf_task_storage_get(&tstore, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		c = t ? &t->call : NULL;
	}
	if (!c)
		return 0;
	c->tid = task->pid;
	c->nr = id;
	c->io = 0;
	c->arg0 = regs->di;
	/* socketpair's int sv[2] is its fourth argument; everything else needs at most the second. */
	c->arg1 = id == NR_socketpair ? regs->r10 : regs->si;
	c->arg3 = regs->r10;
	if (is_open(id)) {
		__u32 zero = 0, tid = task->pid;
		struct open_arg *a = bpf_map_lookup_elem(&scratch, &zero);
		const char *up = (id == NR_open || id == NR_creat || id == NR_chdir) ? (const char *)regs->di
										       : (const char *)regs->si;
		if (a) {
			read_path(a, up);
			bpf_map_update_elem(&opening, &tid, a, BPF_ANY);
		}
	}
	/*
	 * Last, so the time spent above is not charged to the syscall. CLOCK_MONOTONIC, not
	 * BOOTTIME: a cheaper helper on this hot path; the poller adds the boot offset
	 * (abi::to_boottime) to the records stamped with it (rec_sys, rec_sys32, rec_fd).
	 */
	c->ts = bpf_ktime_get_ns();
	return 0;
}

static __always_inline struct file *fd_file(struct task_struct *t, int fd)
{
	struct fdtable *fdt = BPF_CORE_READ(t, files, fdt);
	struct file **arr;
	struct file *f = NULL;

	if (!fdt || fd < 0 || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	arr = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&f, sizeof(f), &arr[fd]);
	return f;
}

/*
 * Describe fd `fd` of the current task from its struct file, and hand it to userspace. The
 * record carries its call's enter, `ts`, and end, `end`: it is merged by the end, since a call
 * that entered before another thread's close of that fd number ended may get the number, and
 * must come after the close.
 */
static __noinline int emit_fd(int fd, __u32 nr, int dirfd, __u64 ts, __u64 end)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct rec_fd *r;
	struct file *f;
	struct inode *ino;

	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(pid);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->kind = REC_FD;
	r->nr = nr;
	r->pid = pid;
	r->fd = fd;
	r->dirfd = dirfd;
	r->ts = ts;
	r->end = end;
	f = fd_file(t, fd);
	if (f) {
		const unsigned char *dn = BPF_CORE_READ(f, f_path.dentry, d_name.name);
		ino = BPF_CORE_READ(f, f_inode);
		r->mode = BPF_CORE_READ(ino, i_mode);
		r->magic = BPF_CORE_READ(ino, i_sb, s_magic);
		r->sdev = BPF_CORE_READ(ino, i_sb, s_dev);
		r->ino = BPF_CORE_READ(ino, i_ino);
		if (dn)
			bpf_probe_read_kernel_str(r->dname, sizeof(r->dname), dn);
		if ((r->mode & 0170000) == 0140000) {
			struct socket *sock = BPF_CORE_READ(f, private_data);
			struct sock *sk = BPF_CORE_READ(sock, sk);
			__u16 fam = BPF_CORE_READ(sk, __sk_common.skc_family);
			r->family = fam;
			if (fam == AF_INET) {
				BPF_CORE_READ_INTO(r->laddr, sk, __sk_common.skc_rcv_saddr);
				BPF_CORE_READ_INTO(r->raddr, sk, __sk_common.skc_daddr);
			} else if (fam == AF_INET6) {
				BPF_CORE_READ_INTO(r->laddr, sk, __sk_common.skc_v6_rcv_saddr);
				BPF_CORE_READ_INTO(r->raddr, sk, __sk_common.skc_v6_daddr);
			}
			if (fam == AF_INET || fam == AF_INET6) {
				r->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
				r->rport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
			} else if (fam == AF_UNIX) {
				/* The socket's own address, else its peer's (a connected client). */
				struct unix_sock *u = (struct unix_sock *)sk;
				struct unix_address *ua = BPF_CORE_READ(u, addr);
				if (!ua) {
					struct unix_sock *peer = (struct unix_sock *)BPF_CORE_READ(u, peer);
					if (peer)
						ua = BPF_CORE_READ(peer, addr);
				}
				if (ua) {
					__u32 len = BPF_CORE_READ(ua, len);
					if (len > 2) {
						len -= 2; /* minus sun_family */
						if (len > 108)
							len = 108;
						/* Keep clang from folding the mask the verifier needs. */
						asm volatile("" : "+r"(len));
						len &= 127;
						bpf_probe_read_kernel(r->path, len, &ua->name[0].sun_path);
						r->path_len = len;
					}
				}
			}
		}
	}
	if (is_open(nr)) {
		struct open_arg *a = bpf_map_lookup_elem(&opening, &(__u32){ bpf_get_current_pid_tgid() });
		if (a) {
			__builtin_memcpy(r->path, a->path, sizeof(r->path));
			r->path_len = a->cut ? PATH_CUT : 0xffff; /* NUL-terminated */
		}
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

/* The two fds a pipe()/socketpair() wrote into user memory. */
static __always_inline void emit_fd_pair(__u32 nr, __u64 uptr, __u64 ts, __u64 end)
{
	int fds[2] = {};
	if (bpf_probe_read_user(fds, sizeof(fds), (void *)uptr))
		return;
	emit_fd(fds[0], nr, -1, ts, end);
	emit_fd(fds[1], nr, -1, ts, end);
}

/*
 * The path of open-like call `c`, read again where sys_enter could not read it: a string in
 * a page not yet in memory (a program's first use of a literal) reads as nothing there, and
 * the call has faulted the page in since.
 */
static __always_inline void path_again(struct inflight *c)
{
	struct open_arg *a = bpf_map_lookup_elem(&opening, &(__u32){ bpf_get_current_pid_tgid() });
	__u32 nr = c->nr;

	if (a && !a->path[0])
		read_path(a, (const char *)((nr == NR_open || nr == NR_creat || nr == NR_chdir) ? c->arg0 : c->arg1));
}

static __noinline int fd_changes(struct inflight *c, long ret, __u64 ts, __u64 end)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32, nr = c->nr;
	__s64 arg0 = c->arg0;
	__u64 arg1 = c->arg1;

	switch (nr) {
	case NR_openat:
	case NR_openat2:
	case NR_open:
	case NR_creat:
		if (ret >= 0) {
			path_again(c);
			emit_fd(ret, nr, (nr == NR_openat || nr == NR_openat2) ? (int)arg0 : -100, ts, end);
		}
		bpf_map_delete_elem(&opening, &(__u32){ bpf_get_current_pid_tgid() });
		break;
	case NR_chdir:
		/* No fd: a record of the path alone, relative to the old working directory. */
		if (ret == 0) {
			path_again(c);
			emit_fd(-1, nr, -100, ts, end);
		}
		bpf_map_delete_elem(&opening, &(__u32){ bpf_get_current_pid_tgid() });
		break;
	case NR_connect:
		/* -EINPROGRESS: a non-blocking connect has its addresses already. */
		if (ret == 0 || ret == -115)
			emit_fd(arg0, nr, -1, ts, end);
		break;
	case NR_pipe:
	case NR_pipe2:
	case NR_socketpair:
		if (ret == 0)
			emit_fd_pair(nr, nr == NR_socketpair ? arg1 : (__u64)arg0, ts, end);
		break;
	case NR_fcntl:
		if (ret >= 0 && (arg1 == F_DUPFD || arg1 == F_DUPFD_CLOEXEC)) {
			struct rec_dup *d = ring_reserve(sizeof(*d));
			if (!d) {
				count_drop(DROP_CURRENT);
				break;
			}
			d->kind = REC_DUP;
			d->pad = 0;
			d->pid = pid;
			d->oldfd = arg0;
			d->newfd = ret;
			d->end = end;
			bpf_ringbuf_submit(d, BPF_RB_NO_WAKEUP);
		}
		break;
	case NR_socket:
	case NR_accept:
	case NR_accept4:
	case NR_eventfd:
	case NR_eventfd2:
	case NR_epoll_create:
	case NR_epoll_create1:
	case NR_inotify_init:
	case NR_inotify_init1:
	case NR_timerfd_create:
	case NR_memfd_create:
	case NR_signalfd:
	case NR_signalfd4:
	case NR_pidfd_open:
	case NR_userfaultfd:
	case NR_perf_event_open:
	case NR_io_uring_setup:
	case NR_fanotify_init:
		if (ret >= 0)
			emit_fd(ret, nr, -1, ts, end);
		break;
	}
	return 0;
}

/* An event record's kind, with the CPU it ends on (see iocap.h). */
static __always_inline __u16 ev_kind(__u16 kind)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return kind | (cpu < KIND_CPU_MAX ? cpu : KIND_CPU_MAX) << KIND_BITS;
}

/* Calls given a file offset (their fourth argument): rec_sysio carries it. */
static __always_inline bool is_pos(__u32 nr)
{
	return nr == NR_pread64 || nr == NR_pwrite64 || nr == NR_preadv || nr == NR_pwritev ||
	       nr == NR_preadv2 || nr == NR_pwritev2;
}

/* The wide syscall record, alone (rec_sys) or at the head of a rec_sysio. */
static __always_inline void fill_sys(struct rec_sys *e, __u16 kind, __u32 nr, __s64 arg0, __u64 ts, __u64 lat,
				     long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	e->kind = ev_kind(kind);
	e->nr = nr;
	e->tid = pid_tgid;
	e->pid = pid_tgid >> 32;
	e->arg0 = arg0;
	e->ts = ts;
	e->lat = lat;
	e->ret = ret;
}

/* The wide record, for the rare syscall whose latency or return value does not fit 32 bits. */
static __noinline int emit_sys_wide(__u32 nr, __s64 arg0, __u64 ts, __u64 lat, long ret)
{
	struct rec_sys *e;

	if (shed(DROP_CURRENT))
		return 0;
	e = ring_reserve(sizeof(*e));
	if (!e) {
		count_drop(DROP_CURRENT);
		return 0;
	}
	fill_sys(e, REC_SYS, nr, arg0, ts, lat, ret);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * What the block requests of the call `tid` entered at `ts` did until `now` (a request still
 * in flight counts until now); forgets them.
 */
struct io_sum {
	__u32 reqs;
	__u64 bytes;
	__u64 disk;
};

static __always_inline struct io_sum call_io_take(__u32 tid, __u64 ts, __u64 now)
{
	struct call_io *io = call_io_find(tid, ts);
	struct io_sum sum = {};

	if (io) {
		sum.reqs = io->reqs;
		sum.bytes = io->bytes;
		sum.disk = io->disk;
		if (io->inflight && now > io->busy_since)
			sum.disk += now - io->busy_since;
		call_io_forget(tid, ts);
	}
	return sum;
}

/* A call for rec_sysio: the caller's stack, as a subprogram takes at most five arguments. */
struct sys_done {
	__u64 ts;
	__u64 now;
	__s64 arg0;
	__s64 ret;
	__u64 offset;
	__u32 nr;
	__u16 io;   /* it created block requests: their sums are in call_slots */
	__u16 lane; /* it may leave through a lane: it changed no fd (see sys_exit) */
	__u64 runq; /* its anatomy (struct anat), when it left the CPU */
	__u64 wait;
	__u32 waker;
	__u32 sleeps;
	struct anat *anat; /* ... and its wait by why; NULL when it did not leave the CPU */
};

static __noinline int emit_sys_io(struct sys_done *d)
{
	struct lane_cursor *cur = NULL;
	struct io_sum sum = {};
	struct rec_sysio *e;

	if (d->io)
		sum = call_io_take((__u32)bpf_get_current_pid_tgid(), d->ts, d->now);
	e = call_reserve(d->lane, &lane_io_cursors, &lanes_io, lane_io_slots, sizeof(*e), &cur);
	if (!e)
		return 0;
	fill_sys(&e->sys, REC_SYSIO, d->nr, d->arg0, d->ts, d->now - d->ts, d->ret);
	e->reqs = sum.reqs;
	e->pad = 0;
	e->bytes = sum.bytes;
	e->disk = sum.disk;
	e->offset = d->offset;
	e->runq = d->runq;
	e->wait = d->wait;
	e->waker = d->waker;
	e->sleeps = d->sleeps;
	e->waker_pid = d->anat ? d->anat->waker_pid : 0;
	e->pad2 = 0;
	for (int i = 0; i < WHY_N; i++)
		e->why[i] = d->anat ? d->anat->by[i] : 0;
	e->woken = d->anat && d->waker && d->anat->woke > d->ts ? d->anat->woke - d->ts : 0;
	call_submit(e, cur);
	return 0;
}

/* ---- the recording's end: calls still in flight (see stop_at) ---- */

/*
 * The unfinished call `c` of `task`, entered at `ts`, as it stood at stop_at. False when it
 * is not recorded, by the rules sys_exit records a call by.
 */
static __always_inline bool fill_end_call(struct rec_sysio *e, struct task_struct *task, struct inflight *c,
					  __u64 ts)
{
	__u64 end = stop_at;
	struct io_sum sum = {};
	__u32 nr = c->nr;

	if (!want_sys || ts >= end || end - ts < min_latency)
		return false;
	if ((filter_nrs || n_comms) && always_followed(nr) && !wanted(task, nr))
		return false;
	if (c->io)
		sum = call_io_take(task->pid, ts, end);
	e->sys.kind = REC_END_SYS;
	e->sys.nr = nr;
	e->sys.tid = task->pid;
	e->sys.pid = task->tgid;
	e->sys.arg0 = c->arg0;
	e->sys.ts = ts;
	e->sys.lat = end - ts;
	e->sys.ret = 0;
	e->reqs = sum.reqs;
	e->pad = 0;
	e->bytes = sum.bytes;
	e->disk = sum.disk;
	e->offset = is_pos(nr) ? c->arg3 : 0;
	e->runq = 0;
	e->wait = 0;
	e->waker = 0;
	e->sleeps = 0;
	e->waker_pid = 0;
	e->pad2 = 0;
	__builtin_memset(e->why, 0, sizeof(e->why));
	e->woken = 0;
	return true;
}

/*
 * Claim the call `task` is in: in `slot` (a CPU's call slot, or NULL) when that holds the
 * thread's, else in its task storage; copied to `call`. Returns its enter time; 0 when there
 * is none, or the other of sys_exit and end_calls claimed it first.
 */
static __always_inline __u64 claim_call(struct task_struct *task, struct inflight *slot, struct inflight *call)
{
	struct tctx *t;
	__u64 ts = 0;

	if (slot && slot->tid == task->pid)
		ts = __sync_lock_test_and_set(&slot->ts, 0);
	if (ts) {
		*call = *slot;
		return ts;
	}
	t = bpf_task_storage_get(&tstore, task, 0, 0);
	if (!t)
		return 0;
	ts = __sync_lock_test_and_set(&t->call.ts, 0);
	if (ts)
		*call = t->call;
	return ts;
}

/* A call ends after stop_at: claimed, it goes to the ring as it stood at stop_at. */
static __noinline int end_call_exit(struct task_struct *task)
{
	struct inflight *c = NULL, call;
	struct rec_sysio e = {}, *r;
	__u32 zero = 0;
	__u64 ts;

	if (cpu_slot)
		c = bpf_map_lookup_elem(&cpu_call, &zero);
	ts = claim_call(task, c, &call);
	if (!ts || !fill_end_call(&e, task, &call, ts))
		return 0;
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(task->tgid);
		return 0;
	}
	__builtin_memcpy(r, &e, sizeof(e));
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/* Looking through the CPUs' call slots for thread `tid`'s (bpf_loop). */
struct cpu_find {
	__u32 tid;
	__u32 cpu;
	bool found;
};

static long find_cpu_call(__u64 cpu, void *ctx)
{
	struct cpu_find *f = ctx;
	__u32 zero = 0;
	struct inflight *c = bpf_map_lookup_percpu_elem(&cpu_call, &zero, cpu);

	if (c && c->ts && c->tid == f->tid) {
		f->cpu = cpu;
		f->found = true;
		return 1;
	}
	return 0;
}

/*
 * Run by userspace after the rings' last drain: every thread's call still in flight, in a
 * CPU's slot or its task storage, as REC_END_SYS records (each after its u32 size) in the
 * iterator's output.
 */
SEC("iter/task")
int end_calls(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct inflight *c = NULL, call;
	struct cpu_find f = {};
	struct rec_sysio e = {};
	__u32 zero = 0, size = sizeof(e);
	__u64 ts;

	REFUSED_IN_TESTS(REFUSE_END_CALLS);
	if (!task || !stop_at)
		return 0;
	f.tid = task->pid;
	if (cpu_slot) {
		bpf_loop(n_cpus, find_cpu_call, &f, 0);
		if (f.found)
			c = bpf_map_lookup_percpu_elem(&cpu_call, &zero, f.cpu);
	}
	ts = claim_call(task, c, &call);
	if (!ts || !fill_end_call(&e, task, &call, ts))
		return 0;
	bpf_seq_write(ctx->meta->seq, &size, sizeof(size));
	bpf_seq_write(ctx->meta->seq, &e, sizeof(e));
	return 0;
}

/*
 * --stacks: the stacks of the current thread's slow call entered at `ts`, ended at `now`, to
 * the ring (see rec_stack). A full ring loses the stacks, not the call: not counted as a drop.
 */
static __noinline int emit_stack(void *ctx, __u64 ts, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sleep_stack *s;
	struct rec_stack *r;
	long n;

	r = ring_reserve(sizeof(*r));
	if (!r)
		return 0;
	r->kind = REC_STACK;
	r->tid = task->pid;
	r->pid = task->tgid;
	r->pad = 0;
	r->ts = ts;
	r->end = now;
	/* Build IDs and offsets: the process may be gone before userspace reads its maps. */
	n = bpf_get_stack(ctx, r->user, sizeof(r->user), BPF_F_USER_STACK | BPF_F_USER_BUILD_ID);
	r->user_n = n > 0 ? (__u64)n / sizeof(r->user[0]) : 0;
	r->kernel_n = 0;
	s = want_anatomy ? bpf_task_storage_get(&sleep_stacks, task, 0, 0) : NULL;
	if (s && s->call == ts && s->n) {
		__builtin_memcpy(r->kernel, s->ips, sizeof(r->kernel));
		r->kernel_n = s->n < STACK_DEPTH ? s->n : STACK_DEPTH;
		s->call = 0;
	}
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit, struct pt_regs *regs, long ret)
{
	/*
	 * Every thread but ours is traced without a pid filter: read the clock (MONOTONIC, as
	 * at enter) first, so the
	 * lookup below is not charged to the syscall. With one, most threads are not traced:
	 * do not make them pay for the clock.
	 */
	__u64 now = filter_pids ? 0 : bpf_ktime_get_ns();
	struct task_struct *task = bpf_get_current_task_btf();
	struct inflight call, *c;
	struct lane_cursor *cur = NULL;
	struct rec_sys32 *e;
	__u32 zero = 0, nr;
	__u64 ts, lat, runq = 0, wait = 0;
	__u32 waker = 0, sleeps = 0;
	struct anat *anat = NULL;
	bool pos, fd_call, lane;

	if (stop_at)
		return end_call_exit(task);

	/*
	 * A call is in flight only if sys_enter traced it: no pid check needed here. It is in
	 * this CPU's slot unless the thread was switched out since (see spill_call).
	 */
	c = cpu_slot ? bpf_map_lookup_elem(&cpu_call, &zero) : NULL;
	if (c && c->ts && c->tid == task->pid) {
		call = *c;
		c->ts = 0;
	} else {
		struct tctx *t = bpf_task_storage_get(&tstore, task, 0, 0);
		if (!t || !t->call.ts)
			return 0;
		call = t->call;
		t->call.ts = 0;
		/* It left the CPU during the call: what it did off it. */
		if (want_anatomy && t->anat.call == call.ts) {
			runq = t->anat.runq;
			wait = t->anat.wait;
			waker = t->anat.waker;
			sleeps = t->anat.sleeps;
			anat = &t->anat;
			t->anat.call = 0;
		}
	}
	if (filter_pids)
		now = bpf_ktime_get_ns();
	ts = call.ts;
	nr = call.nr;
	/*
	 * Table changes first: userspace must know a new fd before the event that returned it.
	 * So such a call's own event leaves through the ring too, after them: keyed by `now`,
	 * read before they were written, it could be merged ahead of them from a lane (drained
	 * while they were being written, or keyed below them when an interrupting program
	 * raised their ring's keys). These calls are few; the lanes take the rest.
	 */
	fd_call = is_fd_nr(nr);
	if (fd_call)
		fd_changes(&call, ret, ts, now);
	lat = now - ts;
	if (!want_sys || lat < min_latency)
		return 0;
	/* Other calls were judged at enter; these may have changed the name since (see always_followed). */
	if ((filter_nrs || n_comms) && always_followed(nr) && !wanted(task, nr))
		return 0;
	/* A call with stacks follows them through the ring, which keeps their order. */
	lane = !fd_call;
	if (stack_min && lat >= stack_min) {
		emit_stack(ctx, ts, now);
		lane = false;
	}
	/* Values, not &call: a pointer would keep the whole copy on the stack for every call. */
	pos = is_pos(nr);
	if (call.io || pos || runq || wait) {
		struct sys_done d = {
			.ts = ts,
			.now = now,
			.arg0 = call.arg0,
			.ret = ret,
			.offset = pos ? call.arg3 : 0,
			.nr = nr,
			.io = call.io,
			.lane = lane,
			.runq = runq,
			.wait = wait,
			.waker = waker,
			.sleeps = sleeps,
			.anat = anat,
		};

		return emit_sys_io(&d);
	}
	if (lat >> 32 || ret != (__s32)ret)
		return emit_sys_wide(nr, call.arg0, ts, lat, ret);
	e = call_reserve(lane, &lane_cursors, &lanes, lane_slots, sizeof(*e), &cur);
	if (!e)
		return 0;
	e->kind = ev_kind(REC_SYS32);
	e->nr = nr;
	e->tid = task->pid;
	e->pid = task->tgid;
	e->arg0 = call.arg0;
	e->ts = ts;
	e->lat = lat;
	e->ret = ret;
	call_submit(e, cur);
	return 0;
}

/* A task's state as it leaves the CPU (`__state` since 5.14, `state` before). */
struct task_struct___old {
	long state;
} __attribute__((preserve_access_index));

/* The task's state (TASK_RUNNING 0, TASK_INTERRUPTIBLE 1, ...), by a direct load. */
static __always_inline long task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return BPF_CORE_READ((struct task_struct___old *)t, state);
}

/* A direct load, not a probe read: this runs at every switch of a thread in a call. */
static __always_inline bool still_running(struct task_struct *t)
{
	return task_state(t) == 0;
}

/* Sleep states a signal ends: TASK_INTERRUPTIBLE, and TASK_WAKEKILL's for a fatal one. */
#define SIGNAL_SLEEPS (0x1 | 0x100)

/* Why the thread of `t` goes to sleep at `now`, as far as it said (else WHY_OTHER). */
static __always_inline __u8 why_going(struct tctx *t, __u64 now)
{
	__u8 next = t->why_next;

	t->why_next = 0;
	if (t->why_spans & WHY_SPAN_LOCK)
		return WHY_LOCK;
	if (t->why_spans & WHY_SPAN_RECLAIM)
		return WHY_RECLAIM;
	if (next && now - t->why_at < WHY_NEXT_NS)
		return next;
	return WHY_OTHER;
}

/*
 * Whether `t` may have task storage: the kernel's own pointer to it, read directly (no helper),
 * is NULL for the threads iocap never stored anything for (kernel threads, the idle task,
 * threads that never made a traced call). The sched programs run at every context switch and
 * waking of the machine: this spares most of them the storage helper.
 */
static __always_inline bool may_have_storage(struct task_struct *t)
{
	if (bpf_core_field_exists(t->bpf_storage))
		return t->bpf_storage != NULL;
	return true;
}

/* Why the current task wakes a thread at `now`: what it is running on behalf of. */
static __always_inline __u8 why_woken(struct task_struct *woken, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0, pid = task->pid;
	struct cpu_ctx *c = bpf_map_lookup_elem(&cpu_ctx, &zero);
	struct inflight *slot;
	struct tctx *w;
	char comm[TASK_COMM_LEN];

	if (c && c->timers)
		return WHY_TIMER;
	if (c && c->done && c->done_pid == pid && now - c->done < WHY_DONE_NS)
		return WHY_DISK;
	/*
	 * A signal for it: the kernel adds it to the thread's or its process's pending set
	 * before it wakes the thread (the tracepoint signal_generate comes after the waking;
	 * TIF_SIGPENDING's bit differs between architectures and releases). A signal it
	 * blocks does not wake it, nor does any end a sleep it cannot interrupt (a disk wait
	 * with a signal pending is woken by the disk). The first 64 signals, every one Linux
	 * has on x86 and arm64. Its state is still the sleep's at sched_waking.
	 */
	if ((task_state(woken) & SIGNAL_SLEEPS) &&
	    ((woken->pending.signal.sig[0] | woken->signal->shared_pending.signal.sig[0]) & ~woken->blocked.sig[0]))
		return WHY_SIGNAL;
	/* A packet's arrival: on loopback the receive softirq runs in the sender's call. */
	if (c && c->net_rx == pid + 1)
		return WHY_NET;
	/*
	 * A thread inside a call (the commonest waker: a pipe's writer, a futex's owner) is no
	 * journal or flusher thread (kernel threads make no syscalls): asked first, it spares
	 * the name and the storage lookups below. Its call is in this CPU's slot, else in its
	 * task storage (after the checks that need that storage).
	 */
	slot = cpu_slot ? bpf_map_lookup_elem(&cpu_call, &zero) : NULL;
	if (slot && slot->ts && slot->tid == pid)
		return WHY_CALL;
	bpf_get_current_comm(comm, sizeof(comm));
	if (comm[0] == 'j' && comm[1] == 'b' && comm[2] == 'd' && comm[3] == '2' && comm[4] == '/')
		return WHY_JOURNAL;
	w = may_have_storage(task) ? bpf_task_storage_get(&tstore, task, 0, 0) : NULL;
	if (w && (w->wb_ino || (w->why_spans & WHY_SPAN_FLUSH)))
		return WHY_WRITEBACK;
	if (w && w->call.ts)
		return WHY_CALL;
	return WHY_OTHER;
}

/* A sleep of `ns` for `why` ends. */
static __always_inline void add_sleep(struct tctx *t, __u64 ns, __u8 why)
{
	t->anat.wait += ns;
	t->anat.sleeps++;
	if (why < WHY_N)
		t->anat.by[why] += ns;
}

/* Thread `prev`, in call `t->call`, leaves the CPU at `now`: preempted or asleep. */
static __always_inline void anat_out(struct tctx *t, struct task_struct *prev, bool preempt, __u64 now)
{
	__u64 woken_at = t->anat.woken;
	bool woken;

	if (t->anat.call != t->call.ts) {
		__builtin_memset(&t->anat, 0, sizeof(t->anat));
		t->anat.call = t->call.ts;
	}
	/*
	 * Woken on its way out of __schedule (the waker saw it still running, and the kernel
	 * sets it running only once the switch is done): no sleep, a wait for a CPU. A waking
	 * longer ago was a stale one, followed by no sleep.
	 */
	woken = woken_at && now - woken_at < ANAT_WAY_OUT_NS;
	t->anat.woken = 0;
	t->anat.state = preempt || woken || still_running(prev) ? ANAT_RUNQ : ANAT_ASLEEP;
	t->anat.since = now;
	if (t->anat.state == ANAT_ASLEEP)
		t->anat.why = why_going(t, now);
}

/* Thread `next` comes back on the CPU at `now`: its wait for one ends. */
static __always_inline void anat_in(struct task_struct *next, __u64 now)
{
	struct tctx *t;

	if (!may_have_storage(next))
		return;
	t = bpf_task_storage_get(&tstore, next, 0, 0);
	if (!t || !t->call.ts || t->anat.call != t->call.ts || t->anat.state == ANAT_RUN)
		return;
	if (now > t->anat.since) {
		/* Asleep with no waking seen (it came after the thread's switch out began, or
		 * was not traced): the whole time off the CPU counts as a sleep. */
		if (t->anat.state == ANAT_ASLEEP) {
			add_sleep(t, now - t->anat.since, t->anat.why);
		} else {
			t->anat.runq += now - t->anat.since;
		}
	}
	t->anat.state = ANAT_RUN;
	t->anat.woken = 0;
	if (t->anat.stack_due) {
		/* Not running yet: its saved stack is where it slept. */
		struct sleep_stack *s = bpf_task_storage_get(&sleep_stacks, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		long n;

		t->anat.stack_due = 0;
		if (s) {
			n = bpf_get_task_stack(next, s->ips, sizeof(s->ips), 0);
			s->n = n > 0 ? (__u64)n / 8 : 0;
			s->call = t->anat.call;
		}
	}
}

/*
 * A thread leaving the CPU in the middle of a call takes the call along: the slot is
 * the next thread's now, and the call may end on another CPU. With the anatomy on, the
 * thread leaving and the one coming back are timed too (anat_out, anat_in).
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(spill_call, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 zero = 0;
	struct inflight *c = cpu_slot ? bpf_map_lookup_elem(&cpu_call, &zero) : NULL;
	struct tctx *t = NULL;
	__u64 now;

	if (c && c->ts && c->tid == prev->pid) {
		t = bpf_task_storage_get(&tstore, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (t)
			t->call = *c;
		else
			count_drop(prev->tgid); /* the call's event is lost: say so */
		c->ts = 0;
	} else if (want_anatomy && may_have_storage(prev)) {
		/* Its call went to task storage at an earlier switch. */
		t = bpf_task_storage_get(&tstore, prev, 0, 0);
		if (t && !t->call.ts)
			t = NULL;
	}
	if (!want_anatomy)
		return 0;
	now = bpf_ktime_get_ns();
	if (t)
		anat_out(t, prev, preempt, now);
	anat_in(next, now);
	return 0;
}

/* A thread asleep in a call is woken by the current task: its sleep ends, its wait for a CPU begins. */
SEC("tp_btf/sched_waking")
int BPF_PROG(anat_waking, struct task_struct *p)
{
	struct tctx *t;
	__u64 now, slept;

	if (!may_have_storage(p))
		return 0;
	t = bpf_task_storage_get(&tstore, p, 0, 0);
	if (!t)
		return 0;
	now = bpf_ktime_get_ns();
	if (!t->call.ts || t->anat.call != t->call.ts || t->anat.state == ANAT_RUN) {
		/* Still running, maybe on its way out (its call may still be in its CPU's slot):
		 * anat_out decides. */
		t->anat.woken = now;
		return 0;
	}
	if (t->anat.state != ANAT_ASLEEP)
		return 0;
	slept = now > t->anat.since ? now - t->anat.since : 0;
	add_sleep(t, slept, t->anat.why != WHY_OTHER ? t->anat.why : why_woken(p, now));
	if (slept >= t->anat.longest) {
		__u64 id = bpf_get_current_pid_tgid();

		t->anat.longest = slept;
		t->anat.woke = now;
		t->anat.waker = (__u32)id;
		t->anat.waker_pid = id >> 32;
		t->anat.stack_due = stack_min && slept >= stack_min;
	}
	t->anat.state = ANAT_RUNQ;
	t->anat.since = now;
	return 0;
}

/*
 * What a thread is doing that it may block in, said by the tracepoints of dirty throttling,
 * folio writeback waits, lock contention and direct reclaim: kept in its task storage while it
 * is inside a call (see why_going). Timer callbacks are counted per CPU (see why_woken).
 */
static __always_inline struct tctx *why_task(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 zero = 0;
	struct inflight *slot = cpu_slot ? bpf_map_lookup_elem(&cpu_call, &zero) : NULL;
	struct tctx *t;

	if (!want_anatomy)
		return NULL;
	if (slot && slot->ts && slot->tid == task->pid)
		return bpf_task_storage_get(&tstore, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	t = bpf_task_storage_get(&tstore, task, 0, 0);
	return t && t->call.ts ? t : NULL;
}

static __always_inline void why_next(__u8 why)
{
	struct tctx *t = why_task();

	if (t) {
		t->why_next = why;
		t->why_at = bpf_ktime_get_ns();
	}
}

/* Spans end outside calls too: a flag must never outlive its span. */
static __always_inline void why_span(__u8 span, bool on)
{
	struct tctx *t;

	if (on) {
		t = why_task();
		if (t)
			t->why_spans |= span;
	} else if (want_anatomy) {
		t = bpf_task_storage_get(&tstore, bpf_get_current_task_btf(), 0, 0);
		if (t)
			t->why_spans &= ~span;
	}
}

SEC("tp_btf/balance_dirty_pages")
int BPF_PROG(why_throttle)
{
	why_next(WHY_THROTTLE);
	return 0;
}

SEC("tp_btf/folio_wait_writeback")
int BPF_PROG(why_wb_wait)
{
	why_next(WHY_WRITEBACK);
	return 0;
}

SEC("tp_btf/contention_begin")
int BPF_PROG(why_lock_in)
{
	why_span(WHY_SPAN_LOCK, true);
	return 0;
}

SEC("tp_btf/contention_end")
int BPF_PROG(why_lock_out)
{
	why_span(WHY_SPAN_LOCK, false);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_begin")
int BPF_PROG(why_reclaim_in)
{
	why_span(WHY_SPAN_RECLAIM, true);
	return 0;
}

SEC("tp_btf/mm_vmscan_direct_reclaim_end")
int BPF_PROG(why_reclaim_out)
{
	why_span(WHY_SPAN_RECLAIM, false);
	return 0;
}

/*
 * A flusher runs a writeback work (writeback_exec) to the end of its round
 * (writeback_pages_written), waking those who waited for the work (sync, fsync of a
 * flushed inode) as it finishes each: the span covers the wakings.
 */
SEC("tp_btf/writeback_exec")
int BPF_PROG(why_flush_in)
{
	struct tctx *t;

	if (!want_anatomy)
		return 0;
	t = bpf_task_storage_get(&tstore, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t)
		t->why_spans |= WHY_SPAN_FLUSH;
	return 0;
}

SEC("tp_btf/writeback_pages_written")
int BPF_PROG(why_flush_out)
{
	why_span(WHY_SPAN_FLUSH, false);
	return 0;
}

static __always_inline void timers(int by)
{
	__u32 zero = 0;
	struct cpu_ctx *c = bpf_map_lookup_elem(&cpu_ctx, &zero);

	/* An exit whose entry came before the attach finds 0. */
	if (c && (by > 0 || c->timers))
		c->timers += by;
}

SEC("tp_btf/timer_expire_entry")
int BPF_PROG(why_timer_in)
{
	timers(1);
	return 0;
}

SEC("tp_btf/timer_expire_exit")
int BPF_PROG(why_timer_out)
{
	timers(-1);
	return 0;
}

SEC("tp_btf/hrtimer_expire_entry")
int BPF_PROG(why_hrtimer_in)
{
	timers(1);
	return 0;
}

SEC("tp_btf/hrtimer_expire_exit")
int BPF_PROG(why_hrtimer_out)
{
	timers(-1);
	return 0;
}

/*
 * The network's receive softirq runs on this CPU from its entry to its exit, in the task
 * current then (the interrupted one, ksoftirqd, or on PREEMPT_RT a softirq thread that another
 * may preempt): kept with that task, so that an exit the kernel skipped (a recursion miss)
 * leaves its mark on that task only, until its next exit.
 */
static __always_inline void net_rx(unsigned int vec, bool in)
{
	__u32 zero = 0, pid = bpf_get_current_pid_tgid();
	struct cpu_ctx *c;

	if (vec != NET_RX_SOFTIRQ)
		return;
	c = bpf_map_lookup_elem(&cpu_ctx, &zero);
	if (!c)
		return;
	if (in)
		c->net_rx = pid + 1;
	else if (c->net_rx == pid + 1)
		c->net_rx = 0;
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(why_net_in, unsigned int vec)
{
	net_rx(vec, true);
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(why_net_out, unsigned int vec)
{
	net_rx(vec, false);
	return 0;
}

/* ---- processes ---- */

/* The task's cgroup v2 id (bpf_get_current_cgroup_id's, for any task). */
static __always_inline __u64 task_cgroup(struct task_struct *t)
{
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/*
 * The v1 hierarchy whose cgroup a process record carries too, by its controller (set by the
 * recorder, procfs::V1_CONTROLLERS): 0 none, 1 pids, 2 memory, 3 cpu, 4 blkio, 5 devices,
 * 6 freezer, 7 cpuset. A hybrid host's container runtimes put containers in v1 cgroups only.
 */
const volatile __u32 v1_ctrl = 0;

#define SUBSYS(name) \
	(bpf_core_enum_value_exists(enum cgroup_subsys_id, name) ? bpf_core_enum_value(enum cgroup_subsys_id, name) : -1)

/* The controller's index in css_set.subsys on this kernel, -1 when it has none. */
static __always_inline int v1_subsys(void)
{
	switch (v1_ctrl) {
	case 1: return SUBSYS(pids_cgrp_id);
	case 2: return SUBSYS(memory_cgrp_id);
	case 3: return SUBSYS(cpu_cgrp_id);
	case 4: return SUBSYS(io_cgrp_id);
	case 5: return SUBSYS(devices_cgrp_id);
	case 6: return SUBSYS(freezer_cgrp_id);
	case 7: return SUBSYS(cpuset_cgrp_id);
	}
	return -1;
}

/* The task's cgroup in the `v1_ctrl` hierarchy; NULL for none. */
static __always_inline struct cgroup *task_cgrp1(struct task_struct *t)
{
	struct cgroup_subsys_state *css = NULL;
	int i = v1_subsys();
	void *cs;

	if (i < 0 || i >= 64)
		return NULL;
	cs = BPF_CORE_READ(t, cgroups);
	if (!cs || bpf_probe_read_kernel(&css, sizeof(css),
					 cs + bpf_core_field_offset(struct css_set, subsys) + i * sizeof(void *)))
		return NULL;
	if (!css)
		return NULL;
	return BPF_CORE_READ(css, cgroup);
}

/* The task's cgroup id in the `v1_ctrl` hierarchy (its directory's inode there); 0 for none. */
static __always_inline __u64 task_cgroup1(struct task_struct *t)
{
	struct cgroup *cg = task_cgrp1(t);

	return cg ? BPF_CORE_READ(cg, kn, id) : 0;
}

/*
 * `record --cgroup PATH`: the processes in that cgroup or below it are traced, as `-p`'s are
 * (each one's pid joins `pids` as it forks or execs there). Its id, and whether it is one of
 * the `v1_ctrl` hierarchy rather than v2's. 0: no such scope.
 */
const volatile __u64 scope_cgroup = 0;
const volatile bool scope_v1 = false;

/* Deeper cgroups than this are not followed up to the scope. */
#define SCOPE_DEPTH 32

/* Whether task t is in the scope's cgroup or below it. */
static __always_inline bool in_scope(struct task_struct *t)
{
	struct cgroup *cg = scope_v1 ? task_cgrp1(t) : BPF_CORE_READ(t, cgroups, dfl_cgrp);

	for (int i = 0; i < SCOPE_DEPTH && cg; i++) {
		struct cgroup_subsys_state *up;

		if (BPF_CORE_READ(cg, kn, id) == scope_cgroup)
			return true;
		up = BPF_CORE_READ(cg, self.parent);
		cg = up ? BPF_CORE_READ(up, cgroup) : NULL;
	}
	return false;
}

/* A process of the scope (`scope_cgroup`) not yet traced is from now on. */
static __always_inline void join_scope(struct task_struct *t, __u32 pid)
{
	__u8 one = 1;

	if (!scope_cgroup || bpf_map_lookup_elem(&pids, &pid) || !in_scope(t))
		return;
	bpf_map_update_elem(&pids, &pid, &one, BPF_ANY);
	bump_pids_gen();
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, pid = child->tgid;
	struct rec_fork *r;
	__u64 ts;

	if (child->pid != pid) { /* a new thread, not a new process */
		/* Its tid may be cached as someone else's (cpu_pick). */
		if (filter_pids && bpf_map_lookup_elem(&pids, &ppid))
			bump_pids_gen();
		return 0;
	}
	if (filter_pids) {
		if (follow_forks && bpf_map_lookup_elem(&pids, &ppid)) {
			__u8 one = 1;
			bpf_map_update_elem(&pids, &pid, &one, BPF_ANY);
			bump_pids_gen();
		}
		join_scope(child, pid);
		if (!bpf_map_lookup_elem(&pids, &pid))
			return 0;
	}
	if (ppid == self_tgid)
		return 0;
	/* Before the reserve, as every record's time (see `rings`); MONOTONIC, as the others. */
	ts = bpf_ktime_get_ns();
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(pid);
		return 0;
	}
	r->kind = REC_FORK;
	r->pad = 0;
	r->pid = pid;
	r->ppid = ppid;
	r->uid = BPF_CORE_READ(child, cred, euid.val);
	r->cgroup = task_cgroup(child);
	r->cgroup1 = task_cgroup1(child);
	r->ts = ts;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), child->comm);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = p->tgid;
	struct rec_exec *r;
	struct mm_struct *mm;
	__u64 start, end, len, ts;

	/* A runtime moves a container's first process into its cgroup between fork and exec. */
	if (filter_pids)
		join_scope(p, pid);
	if (!traced(pid))
		return 0;
	ts = bpf_ktime_get_ns();
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(pid);
		return 0;
	}
	r->kind = REC_EXEC;
	r->pid = pid;
	r->ppid = BPF_CORE_READ(p, real_parent, tgid);
	r->uid = BPF_CORE_READ(p, cred, euid.val);
	r->cgroup = task_cgroup(p);
	r->cgroup1 = task_cgroup1(p);
	r->ts = ts;
	bpf_get_current_comm(r->comm, sizeof(r->comm));
	r->filename[0] = 0;
	bpf_probe_read_kernel_str(r->filename, sizeof(r->filename), BPF_CORE_READ(bprm, filename));
	/* The new image's argument vector is in place in its memory by now. */
	mm = BPF_CORE_READ(p, mm);
	start = BPF_CORE_READ(mm, arg_start);
	end = BPF_CORE_READ(mm, arg_end);
	len = end > start ? end - start : 0;
	if (len > ARGS_LEN - 1)
		len = ARGS_LEN - 1;
	len &= ARGS_LEN - 1; /* a bound the verifier can see */
	r->args_len = 0;
	if (len && !bpf_probe_read_user(r->args, len, (void *)start))
		r->args_len = len | (end - start > len ? ARGS_CUT : 0);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

static __always_inline void emit_comm(__u16 kind, struct task_struct *t, const char *comm)
{
	__u64 ts = bpf_ktime_get_ns();
	struct rec_comm *r = ring_reserve(sizeof(*r));

	if (!r) {
		count_drop(t->tgid);
		return;
	}
	r->kind = kind;
	r->pad = 0;
	r->pid = t->tgid;
	r->ts = ts;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), comm);
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit, struct task_struct *p)
{
	__u32 zero = 0;
	struct inflight *c = bpf_map_lookup_elem(&cpu_call, &zero);

	/* exit() never returns: its call must not be taken later for a new thread with this tid. */
	if (c && c->tid == p->pid)
		c->ts = 0;
	if (!traced(p->tgid))
		return 0;
	/* Its tid may be given to an untraced task next (cpu_pick). */
	if (filter_pids)
		bump_pids_gen();
	if (p->pid != p->tgid)
		return 0;
	emit_comm(REC_EXIT, p, p->comm);
	if (filter_pids) {
		__u32 pid = p->tgid;
		bpf_map_delete_elem(&pids, &pid);
	}
	return 0;
}

/*
 * A process moved to another cgroup: by its runtime (runc moves its init into a container's
 * cgroups one hierarchy at a time, before the exec), by systemd, by hand. Only moves in the
 * hierarchies process records name, of a whole process (a thread moved alone is not followed).
 * A move into the `--cgroup` scope makes the process traced.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(proc_cgroup, struct cgroup *dst, const char *path, struct task_struct *task, bool threadgroup)
{
	__u32 pid = task->tgid;
	struct cgroup *v1 = task_cgrp1(task);
	void *root = BPF_CORE_READ(dst, root);
	struct rec_cgroup *r;
	__u64 ts;

	if (task->pid != pid)
		return 0;
	if (root != BPF_CORE_READ(task, cgroups, dfl_cgrp, root) && (!v1 || root != BPF_CORE_READ(v1, root)))
		return 0;
	if (filter_pids)
		join_scope(task, pid);
	if (!traced(pid))
		return 0;
	ts = bpf_ktime_get_ns();
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(pid);
		return 0;
	}
	r->kind = REC_CGROUP;
	r->pad = 0;
	r->pid = pid;
	r->ts = ts;
	r->cgroup = task_cgroup(task);
	r->cgroup1 = v1 ? BPF_CORE_READ(v1, kn, id) : 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	return 0;
}

SEC("tp_btf/task_rename")
int BPF_PROG(proc_rename, struct task_struct *t, const char *comm)
{
	if (t->pid != t->tgid || !traced(t->tgid))
		return 0;
	emit_comm(REC_COMM, t, comm);
	return 0;
}

/* ---- block requests ---- */

/*
 * The inode whose page `pg` is, when it belongs to a file (not anonymous memory). Probe reads:
 * the verifier types these words as the union members they share (a list, a pointer) and
 * refuses the bit tests on them.
 */
static __always_inline void page_inode(struct page *pg, __u64 *ino, __u32 *dev)
{
	unsigned long head = BPF_CORE_READ(pg, compound_head);
	unsigned long m;
	struct inode *host;

	if (head & 1) /* a tail page of a folio: the mapping is the head's */
		pg = (struct page *)(head - 1);
	m = (unsigned long)BPF_CORE_READ(pg, mapping);
	if (!m || (m & 3)) /* none, or anonymous / movable (PAGE_MAPPING_FLAGS) */
		return;
	host = BPF_CORE_READ((struct address_space *)m, host);
	if (!host)
		return;
	*ino = BPF_CORE_READ(host, i_ino);
	*dev = BPF_CORE_READ(host, i_sb, s_dev);
}

#define REQ_F_FIXED_FILE 1ULL /* bit 0 of io_kiocb.flags since io_uring began */
#define IORING_CQE_F_MORE 2U   /* uapi: more completions of this request will follow */

/* Opcodes whose request has a file (io_kiocb.file; for others that union holds other data). */
static __always_inline bool uring_op_has_file(__u8 op)
{
	switch (op) {
	case 1 ... 5:   /* readv, writev, fsync, read_fixed, write_fixed */
	case 8 ... 10:  /* sync_file_range, sendmsg, recvmsg */
	case 13:        /* accept */
	case 16 ... 17: /* connect, fallocate */
	case 22 ... 24: /* read, write, fadvise */
	case 26 ... 27: /* send, recv */
	case 30:        /* splice */
	case 33 ... 34: /* tee, shutdown */
	case 47 ... 49: /* send_zc, sendmsg_zc, read_multishot */
	case 55:        /* ftruncate */
	case 58:        /* recv_zc */
	case 60 ... 61: /* readv_fixed, writev_fixed */
		return true;
	}
	return false;
}

/* Opcodes that can complete more than once (multishot poll, accept, recv, read, timeouts). */
static __always_inline bool uring_op_multishot(__u8 op)
{
	switch (op) {
	case 6:  /* poll_add */
	case 10: /* recvmsg */
	case 11: /* timeout */
	case 13: /* accept */
	case 27: /* recv */
	case 49: /* read_multishot */
	case 58: /* recv_zc */
		return true;
	}
	return false;
}

/* The inode of io_uring request `req`'s file (once issued), when its opcode has one. */
static __always_inline void uring_file(__u64 req, __u8 op, __u64 *ino, __u32 *dev)
{
	struct file *f;

	if (!uring_op_has_file(op))
		return;
	f = BPF_CORE_READ((struct io_kiocb *)req, file);
	if (!f)
		return;
	*ino = BPF_CORE_READ(f, f_inode, i_ino);
	*dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
}

/*
 * A request of `bytes` created for the call (io_uring request) `tid` entered (submitted) at
 * `ts`. Its bytes count from its making, as the request itself does: a request issued after
 * its call returned (libaio's, from a plug) still counts in the call's disk.bytes. `first`: the
 * caller knows the call has no sums yet (a syscall's first request, see inflight.io), which
 * spares the lookup that would miss (in `callio`, a hash map, on every such call). True: the
 * sums are in call_slots (see rq_info.in_slot).
 */
static __always_inline bool call_io_add(__u32 tid, __u64 ts, __u64 now, __u32 bytes, bool first)
{
	struct call_slot *s = call_slot_of(tid, ts);
	struct call_key ck = { .tid = tid, .ts = ts };
	struct call_io fresh = { .reqs = 1, .inflight = 1, .bytes = bytes, .busy_since = now };
	struct call_io *io;
	bool in_slot = false;

	if (!first) {
		if (call_slot_holds(s, tid, ts)) {
			io = &s->io;
			in_slot = true;
		} else {
			io = bpf_map_lookup_elem(&callio, &ck);
			if (!io)
				goto fresh;
		}
		io->reqs++;
		io->bytes += bytes;
		if (io->inflight++ == 0)
			io->busy_since = now;
		return in_slot;
	}
fresh:
	/*
	 * Claimed atomically: another CPU may be starting a call in the same slot. The tid goes
	 * last (a free slot's is 0), so a slot matches the key (an io-wq worker may be creating a
	 * request for the same io_uring request) only once its sums are set.
	 */
	if (s && s->ts == 0 && __sync_val_compare_and_swap(&s->ts, 0, ts) == 0) {
		s->io = fresh;
		asm volatile("" ::: "memory");
		*(volatile __u32 *)&s->tid = tid;
		return true;
	}
	bpf_map_update_elem(&callio, &ck, &fresh, BPF_ANY);
	return false;
}

/*
 * The traced call thread `tid` (its storage `t`, if any) is inside, as sys_exit will find it:
 * this CPU's slot while the thread has not been switched out, else its task storage. NULL:
 * none.
 */
static __always_inline struct inflight *call_in_flight(struct tctx *t, __u32 tid)
{
	struct inflight *c = NULL;
	__u32 zero = 0;

	if (cpu_slot) {
		c = bpf_map_lookup_elem(&cpu_call, &zero);
		if (c && !(c->ts && c->tid == tid))
			c = NULL;
	}
	if (!c && t && t->call.ts)
		c = &t->call;
	return c;
}

/*
 * Whether the io_uring request `t` submitted last is being issued now: it is still in
 * flight and the thread is in the call it was submitted in (the SQPOLL thread: in none). A
 * request issued inline creates its block requests in between; one punted to an io-wq
 * worker creates them there (uring_worker_req).
 */
static __always_inline bool uring_current(struct tctx *t, struct inflight *c)
{
	struct uring_req *u;

	if (!t->ur_ts || t->ur_call != (c ? c->ts : 0))
		return false;
	u = bpf_map_lookup_elem(&urings, &t->ur_req);
	return u && u->link == t->ur_ts;
}

/* task_struct.flags of an io_uring worker thread (include/linux/sched.h, since 5.12). */
#define PF_IO_WORKER 0x00000010

/*
 * The io_uring request an io-wq worker is running (one punted there: it could not be issued
 * without blocking, or asked to be async), from the worker's current work, which is embedded in
 * the request: its key in `urings` in `req`, or NULL in any other thread.
 */
static __always_inline struct uring_req *uring_worker_req(struct task_struct *task, __u64 *req)
{
	struct io_worker *w;
	struct io_wq_work *work;

	if (!(task->flags & PF_IO_WORKER) || !bpf_core_field_exists(task->worker_private))
		return NULL;
	w = (struct io_worker *)BPF_CORE_READ(task, worker_private);
	work = BPF_CORE_READ(w, cur_work);
	if (!work)
		return NULL;
	*req = (__u64)work - bpf_core_field_offset(struct io_kiocb, work);
	return bpf_map_lookup_elem(&urings, req);
}

/* A disk's dev_t, as the kernel's tracepoints give it (major << 20 | minor); 0: none. */
static __always_inline __u32 disk_dev(struct gendisk *disk)
{
	return disk ? ((__u32)disk->major << 20) | (__u32)disk->first_minor : 0;
}

/*
 * A new request: who created it and inside which span. Runs in the creating task's context
 * (block_io_start, or the first insert/issue on a kernel without it): the io_uring request
 * it is issuing, else the syscall it is in (its in-flight call, per CPU or in task storage),
 * else the inode a flusher is writing back.
 */
static __noinline int rq_new(struct request *rq, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 key = (__u64)rq;
	__u32 tid = task->pid;
	struct rq_info n = {};
	struct uring_req *u;
	struct inflight *c;
	struct tctx *t;
	struct bio *bio;
	struct rq_info *old, *asker, flush_asker = {};
	__u32 dev, op;
	__u64 req;

	/*
	 * An entry still under this address is a request the block layer has freed and now
	 * reuses: if it was issued, its completion never reached blk_complete. That happens: on
	 * the test machines (Firecracker guests, 6.18) fio on a loaded loop device lost 0-55
	 * completions in 60,000, all in softirqs run in the threads of one process (the guest's
	 * init): ftrace's block_rq_complete had them, no BPF program ran for them (this one's
	 * run_cnt and bpftrace's classic tracepoint equally short; no recursion miss counted).
	 * Counted (`unseen`), so that the recorder can say the capture is not whole.
	 */
	old = rq_stale(key);
	if (old) {
		if (old->issue)
			count_unseen(old->dev);
		rq_forget(key);
	}
	t = bpf_task_storage_get(&tstore, task, 0, 0);
	dev = disk_dev(rq->q->disk);
	op = rq->cmd_flags & 0xff; /* REQ_OP_MASK */
	if (op == REQ_OP_FLUSH) {
		asker = bpf_map_lookup_elem(&flush_askers, &dev);
		if (asker) {
			flush_asker = *asker;
			bpf_map_delete_elem(&flush_askers, &dev);
		}
	}
	/*
	 * With a pid filter a flusher is not traced, but the writeback of a traced process's
	 * files is part of its I/O: userspace keeps the requests for inodes it opened. A journal
	 * commit's requests are kept (a traced call may wait on any commit; there are few), and
	 * a flush is kept when what asked for it was.
	 */
	if (!traced(task->tgid) && !(filter_pids && t && (t->wb_ino || t->jr_ts)) && !flush_asker.cause)
		return 0;
	n.pid = task->tgid;
	n.tid = tid;
	n.fd = -1;
	n.bytes = rq->__data_len;
	n.dev = dev;
	bpf_get_current_comm(n.comm, sizeof(n.comm));
	c = call_in_flight(t, tid);
	if (t && uring_current(t, c)) {
		n.cause = CAUSE_IO_URING;
		n.nr = t->ur_op;
		n.fd = t->ur_fd;
		n.link = t->ur_ts;
		n.in_slot = call_io_add(tid, t->ur_ts, now, n.bytes, false);
		/* Its file (assigned by now) names a registered one, which has no fd. */
		uring_file(t->ur_req, t->ur_op, &n.ino, &n.ino_dev);
	} else if (c) {
		n.cause = CAUSE_SYSCALL;
		n.nr = c->nr;
		n.fd = c->arg0;
		n.link = c->ts;
		n.in_slot = call_io_add(tid, c->ts, now, n.bytes, !c->io);
		c->io = 1;
	} else if ((u = uring_worker_req(task, &req))) {
		/* Punted: the request's, as if its submitter had issued it inline. */
		n.cause = CAUSE_IO_URING;
		n.pid = u->pid;
		n.tid = u->tid;
		n.nr = u->op;
		n.fd = u->fd;
		n.link = u->link;
		n.in_slot = call_io_add(u->tid, u->link, now, n.bytes, false);
		uring_file(req, u->op, &n.ino, &n.ino_dev);
	} else if (t && t->wb_ino) {
		n.cause = CAUSE_WRITEBACK;
		n.ino = t->wb_ino;
		n.ino_dev = t->wb_dev;
	} else if (t && t->jr_ts) {
		n.cause = CAUSE_JOURNAL;
		n.fd = t->jr_tx;
		n.link = t->jr_ts;
		n.ino_dev = t->jr_dev;
		n.in_slot = call_io_add(tid, t->jr_ts, now, n.bytes, false);
	} else if (flush_asker.cause) {
		/* Made by the block layer: the asker's, as if it had issued it. */
		n = flush_asker;
		n.bytes = rq->__data_len;
		n.dev = dev;
		n.in_slot = false;
		if (n.cause == CAUSE_SYSCALL || n.cause == CAUSE_IO_URING || n.cause == CAUSE_JOURNAL)
			n.in_slot = call_io_add(n.tid, n.link, now, n.bytes, false);
	}
	if (n.cause && op != REQ_OP_FLUSH &&
	    (rq->cmd_flags & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH))))
		bpf_map_update_elem(&flush_askers, &dev, &n, BPF_NOEXIST);
	if (!n.ino) {
		/*
		 * Pointers the kernel hands over are read directly (the verifier guards the loads):
		 * cheaper than a probe read each.
		 */
		bio = rq->bio;
		if (bio && bio->bi_io_vec && bio->bi_io_vec->bv_page)
			page_inode(bio->bi_io_vec->bv_page, &n.ino, &n.ino_dev);
	}
	rq_keep(key, &n);
	return 0;
}

/*
 * The syscall (io_uring request) a request was linked to, while it is still in flight. Sums
 * never move between call_slots and callio, so only the map they were put in is looked in:
 * a request that outlives its call (libaio's) does not miss in a hash map at its issue and
 * completion.
 */
static __always_inline struct call_io *rq_call(struct rq_info *i)
{
	struct call_key ck = { .tid = i->tid, .ts = i->link };
	struct call_slot *s;

	if (i->cause != CAUSE_SYSCALL && i->cause != CAUSE_IO_URING && i->cause != CAUSE_JOURNAL)
		return NULL;
	if (!i->in_slot)
		return bpf_map_lookup_elem(&callio, &ck);
	s = call_slot_of(i->tid, i->link);
	return call_slot_holds(s, i->tid, i->link) ? &s->io : NULL;
}

/* A request leaves the block layer (completed, or merged into another): its call's busy time. */
static __always_inline void rq_done(struct rq_info *i, __u64 now)
{
	struct call_io *io = rq_call(i);

	if (io && io->inflight && --io->inflight == 0 && now > io->busy_since)
		io->disk += now - io->busy_since;
}

static __always_inline void rq_track(struct request *rq, bool insert)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct rq_info *i = rq_find(key);

	if (!i) {
		rq_new(rq, now);
		i = rq_find(key);
		if (!i)
			return;
	}
	if (insert) {
		i->insert = now;
	} else {
		struct call_io *io = rq_call(i);
		__u32 len = rq->__data_len;

		i->issue = now;
		/* Counted at its making: what bios merged into it since add. */
		if (io && len > i->bytes)
			io->bytes += len - i->bytes;
		i->bytes = len;
	}
}

SEC("tp_btf/block_io_start")
int BPF_PROG(blk_start, struct request *rq)
{
	if (want_blk && !stop_at)
		rq_new(rq, bpf_ktime_get_ns());
	return 0;
}

/* A request merged into another is freed without completing: it is the other one now. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(blk_merge, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct rq_info *i;

	if (!want_blk || stop_at)
		return 0;
	i = rq_find(key);
	if (i) {
		rq_done(i, bpf_ktime_get_ns());
		rq_forget(key);
	}
	return 0;
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(blk_insert, struct request *rq)
{
	if (want_blk && !stop_at)
		rq_track(rq, true);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(blk_issue, struct request *rq)
{
	if (want_blk && !stop_at)
		rq_track(rq, false);
	return 0;
}

/* A flusher thread writes back one inode: requests it creates until the end are for it. */
SEC("tp_btf/writeback_single_inode_start")
int BPF_PROG(wb_start, struct inode *inode, struct writeback_control *wbc, unsigned long nr_to_write)
{
	struct tctx *t;

	if (!want_blk)
		return 0;
	t = bpf_task_storage_get(&tstore, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t) {
		t->wb_ino = BPF_CORE_READ(inode, i_ino);
		t->wb_dev = BPF_CORE_READ(inode, i_sb, s_dev);
	}
	return 0;
}

SEC("tp_btf/writeback_single_inode")
int BPF_PROG(wb_end, struct inode *inode, struct writeback_control *wbc, unsigned long nr_to_write)
{
	struct tctx *t;

	if (!want_blk)
		return 0;
	t = bpf_task_storage_get(&tstore, bpf_get_current_task_btf(), 0, 0);
	if (t)
		t->wb_ino = 0;
	return 0;
}

/*
 * A jbd2 thread commits a transaction of a filesystem's journal: requests it creates until the
 * end are the commit's (the journal's blocks, the commit block and its flush).
 */
SEC("tp_btf/jbd2_start_commit")
int BPF_PROG(jr_start, journal_t *journal, transaction_t *tx)
{
	struct tctx *t;

	if (!want_blk)
		return 0;
	t = bpf_task_storage_get(&tstore, bpf_get_current_task_btf(), 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (t) {
		t->jr_tx = tx->t_tid;
		t->jr_dev = journal->j_fs_dev->bd_dev;
		t->jr_ts = bpf_ktime_get_ns();
	}
	return 0;
}

/* The commit ends: its event, with its requests' sums (keyed as a call's: the thread, its start). */
SEC("tp_btf/jbd2_end_commit")
int BPF_PROG(jr_end, journal_t *journal, transaction_t *tx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns(), ts;
	struct rec_journal *e;
	struct io_sum sum;
	struct tctx *t;

	if (!want_blk)
		return 0;
	t = bpf_task_storage_get(&tstore, task, 0, 0);
	if (!t || !t->jr_ts)
		return 0;
	ts = t->jr_ts;
	t->jr_ts = 0;
	sum = call_io_take(task->pid, ts, now);
	if (stop_at || now - ts < min_latency || shed(DROP_CURRENT))
		return 0;
	e = ring_reserve(sizeof(*e));
	if (!e) {
		count_drop(DROP_CURRENT);
		return 0;
	}
	e->kind = ev_kind(REC_JOURNAL);
	e->pad = 0;
	e->tid = task->pid;
	e->pid = task->tgid;
	e->tx = t->jr_tx;
	e->ts = ts;
	e->lat = now - ts;
	e->reqs = sum.reqs;
	e->pad2 = 0;
	e->bytes = sum.bytes;
	e->disk = sum.disk;
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* ---- io_uring requests ---- */

/*
 * A request is submitted, in the submitting thread's context (the application's, in
 * io_uring_enter, or its SQPOLL thread): the fd is read now, since by completion the
 * kernel has written the result over it.
 */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(uring_submit, struct io_kiocb *req)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 tgid = task->tgid, tid = task->pid;
	__u64 key = (__u64)req;
	struct uring_req u = {};
	struct inflight *c;
	struct tctx *t;

	if (tgid == self_tgid)
		return 0;
	if (filter_pids && !traced_cached(task, tgid))
		return 0;
	t = bpf_task_storage_get(&tstore, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return 0;
	u.tid = tid;
	u.pid = tgid;
	u.op = req->opcode;
	u.fd = (req->flags & REQ_F_FIXED_FILE) ? -1 : req->cqe.fd;
	u.ts = u.link = bpf_ktime_get_ns();
	bpf_map_update_elem(&urings, &key, &u, BPF_ANY);
	if (uring_op_multishot(u.op)) {
		struct uring_tag tag = { .ring = (__u64)req->ctx, .user_data = req->cqe.user_data };

		bpf_map_update_elem(&uring_tags, &tag, &key, BPF_ANY);
	}
	/* Until the next submission, block requests this thread creates in this call are its. */
	c = call_in_flight(t, tid);
	t->ur_req = key;
	t->ur_ts = u.link;
	t->ur_call = c ? c->ts : 0;
	t->ur_fd = u.fd;
	t->ur_op = u.op;
	return 0;
}

/*
 * A completion is posted (in whichever context: the submitter, an io-wq worker, task work).
 * `req` is NULL for a multishot request's completions but the last, and for completions no
 * request posts (msg_ring's, which match no tag); a request submitted before recording began
 * is not in `urings` and is skipped.
 */
SEC("tp_btf/io_uring_complete")
int uring_complete(__u64 *ctx)
{
	__u64 key = ctx[1], now = bpf_ktime_get_ns();
	struct uring_tag tag = { .ring = ctx[0] };
	struct uring_req *u;
	struct rec_uring *e;
	struct io_sum sum;
	__s32 res;
	__u32 flags;
	bool more;

	/* The branch not taken is dead code once the constant is known, and is not verified. */
	if (uring_complete_cqe) {
		struct io_uring_cqe *cqe = (struct io_uring_cqe *)ctx[2];

		tag.user_data = BPF_CORE_READ(cqe, user_data);
		res = BPF_CORE_READ(cqe, res);
		flags = BPF_CORE_READ(cqe, flags);
	} else {
		tag.user_data = ctx[2];
		res = ctx[3];
		flags = ctx[4];
	}
	if (!key) {
		__u64 *k = bpf_map_lookup_elem(&uring_tags, &tag);

		if (!k)
			return 0;
		key = *k;
	}
	u = bpf_map_lookup_elem(&urings, &key);
	if (!u)
		return 0;
	more = flags & IORING_CQE_F_MORE;
	sum = call_io_take(u->tid, u->link, now);
	if (now - u->ts < min_latency || shed(u->pid))
		goto out;
	e = ring_reserve(sizeof(*e));
	if (!e) {
		count_drop(u->pid);
		goto out;
	}
	e->kind = ev_kind(REC_URING);
	e->op = u->op;
	e->pad = 0;
	e->tid = u->tid;
	e->pid = u->pid;
	e->fd = u->fd;
	e->ts = u->ts;
	e->lat = now - u->ts;
	e->res = res;
	e->reqs = sum.reqs;
	e->bytes = sum.bytes;
	e->disk = sum.disk;
	e->ino = 0;
	e->ino_dev = 0;
	uring_file(key, u->op, &e->ino, &e->ino_dev);
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
out:
	if (more) {
		u->ts = now;
	} else {
		if (uring_op_multishot(u->op)) {
			__u64 *k = bpf_map_lookup_elem(&uring_tags, &tag);

			if (k && *k == key)
				bpf_map_delete_elem(&uring_tags, &tag);
		}
		bpf_map_delete_elem(&urings, &key);
	}
	return 0;
}

/* The kernel's REQ_* bits (they move between releases) as iocap's stable blk_flags bits. */
static __always_inline __u32 blk_flags(__u32 f)
{
	__u32 r = 0;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC)))
		r |= 1 << 0;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_META)))
		r |= 1 << 1;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA)))
		r |= 1 << 2;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH)))
		r |= 1 << 3;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_RAHEAD)))
		r |= 1 << 4;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_PRIO)))
		r |= 1 << 5;
	if (f & (1U << bpf_core_enum_value(enum req_flag_bits, __REQ_IDLE)))
		r |= 1 << 6;
	return r;
}

/*
 * A request's record from its entry (its disk among the rest) and what its `struct request`
 * says (`cmd_flags`, `sector`, `start_time_ns`), but for kind, latency and error.
 *
 * Queue time runs from the request's making, so that queue + latency is the wait
 * /proc/diskstats adds up: from the kernel's own start for it (start_time_ns, read at the end
 * because block_io_start may fire before it is set; 0 when the queue keeps no times; under a
 * plug the plug's clock, read once for the requests of one submission, before any is
 * inserted or issued), else from the insert, else nothing.
 */
/*
 * A request's I/O priority, as the block tracepoints give it (req_get_ioprio): its first bio's,
 * 0 without one. Read at completion, which the kernel traces before it ends the bios.
 */
static __always_inline __u16 rq_ioprio(struct request *rq)
{
	return BPF_CORE_READ(rq, bio, bi_ioprio);
}

static __always_inline void fill_blk(struct rec_blk *r, struct rq_info *i, __u64 cmd_flags, __u64 sector, __u64 born,
				     __u16 ioprio)
{
	__u64 from = i->insert && i->insert <= i->issue ? i->insert : i->issue;

	r->op = cmd_flags & 0xff;
	r->has_pid = i->pid != 0;
	r->cmd_flags = blk_flags(cmd_flags) | (i->insert && i->insert <= i->issue ? BLK_QUEUED : 0);
	r->pid = i->pid;
	r->dev = i->dev;
	r->ts = i->issue;
	if (born && born < from && i->issue - born < 10000000000ULL)
		from = born;
	r->queue = i->issue - from;
	r->sector = sector;
	r->bytes = i->bytes;
	__builtin_memcpy(r->comm, i->comm, sizeof(r->comm));
	r->tid = i->tid;
	r->nr = i->nr;
	r->cause = i->cause;
	r->pad = 0;
	r->fd = i->fd;
	r->ino_dev = i->ino_dev;
	r->link = i->link;
	r->ino = i->ino;
	r->ioprio = ioprio;
	__builtin_memset(r->pad2, 0, sizeof(r->pad2));
}

/* A request completes after stop_at: claimed, it goes to the ring as it stood at stop_at. */
static __noinline int end_rq_complete(struct request *rq, struct rq_info *i)
{
	__u64 end = stop_at;
	struct rec_blk *r;

	if (!i->issue || i->issue >= end || end - i->issue < min_latency)
		return 0;
	if (__sync_lock_test_and_set(&i->taken, 1))
		return 0;
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(i->pid);
		return 0;
	}
	fill_blk(r, i, rq->cmd_flags, rq->__sector, rq->start_time_ns, rq_ioprio(rq));
	r->kind = REC_END_BLK;
	r->lat = end - i->issue;
	r->error = 0;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(blk_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct rq_info *i;
	struct rec_blk *r;

	if (!want_blk)
		return 0;
	if (want_anatomy) {
		__u32 zero = 0;
		struct cpu_ctx *c = bpf_map_lookup_elem(&cpu_ctx, &zero);

		if (c) {
			c->done = now;
			c->done_pid = (__u32)bpf_get_current_pid_tgid();
		}
	}
	i = rq_find(key);
	if (!i)
		return 0;
	if (stop_at)
		return end_rq_complete(rq, i);
	rq_done(i, now);
	if (!i->issue || now - i->issue < min_latency) {
		rq_forget(key);
		return 0;
	}
	if (shed(i->pid)) {
		rq_forget(key);
		return 0;
	}
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(i->pid);
		rq_forget(key);
		return 0;
	}
	r->kind = ev_kind(REC_BLK);
	fill_blk(r, i, rq->cmd_flags, rq->__sector, rq->start_time_ns, rq_ioprio(rq));
	r->lat = now - i->issue;
	r->error = error;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	rq_forget(key);
	return 0;
}

/* ---- the recording's end: block requests still in flight (see stop_at) ---- */

/*
 * Request `key` (entry `i`) after the rings' last drain, claimed. Still the kernel's (its
 * mq_hctx, cleared when it is freed) and issued before stop_at: with the driver, or requeued
 * and waiting to go again, a REC_END_BLK record in the ring with its latency from its last
 * issue to stop_at. Still the kernel's and only inserted: it waits in the scheduler behind the
 * ones issued (a stuck device), a REC_END_BLK issued at stop_at, its wait so far as queue time
 * and no latency. Freed by the kernel: if it was issued, its completion went untraced (see
 * rq_new), counted in `unseen`; one never issued (merged, failed early) is no operation lost.
 */
static __always_inline void end_rq(__u64 key, struct rq_info *i)
{
	struct request *rq = (struct request *)key;
	__u64 end = stop_at, cmd_flags, sector, born;
	struct rec_blk *r;
	bool issued, alive;
	__u16 ioprio;

	issued = i->issue && i->issue < end;
	if (!end || !(issued || (!i->issue && i->insert && i->insert < end)))
		return;
	/* Read before the claim: a completion that claims it first frees it after. */
	alive = BPF_CORE_READ(rq, mq_hctx) != NULL;
	if (__sync_lock_test_and_set(&i->taken, 1))
		return;
	if (!alive) {
		if (issued)
			count_unseen(i->dev);
		return;
	}
	/* Queued: issued at the stop, so that its record's queue time is its wait so far. */
	if (!issued) {
		i->issue = end;
		i->bytes = BPF_CORE_READ(rq, __data_len);
	}
	if (end - (issued ? i->issue : i->insert) < min_latency)
		return;
	cmd_flags = BPF_CORE_READ(rq, cmd_flags);
	sector = BPF_CORE_READ(rq, __sector);
	born = BPF_CORE_READ(rq, start_time_ns);
	ioprio = rq_ioprio(rq);
	r = ring_reserve(sizeof(*r));
	if (!r) {
		count_drop(i->pid);
		return;
	}
	fill_blk(r, i, cmd_flags, sector, born, ioprio);
	r->kind = REC_END_BLK;
	r->lat = end - i->issue;
	r->error = 0;
	bpf_ringbuf_submit(r, 0);
}

/*
 * A slot's request. An entry of `rqs` under the address of a request in a slot is an older
 * request's, left when its completion went untraced and its slot was freed since (see
 * rq_stale): counted unseen here, so that end_rqs_entry does not take it for the request now
 * at that address.
 */
static long end_rq_slot(struct bpf_map *map, __u32 *idx, struct rq_slot *s, void *ctx)
{
	struct rq_info *old;
	__u64 key = s->rq;

	if (!key)
		return 0;
	end_rq(key, &s->i);
	old = bpf_map_lookup_elem(&rqs, &key);
	if (old && old->issue && old->issue < stop_at && !__sync_lock_test_and_set(&old->taken, 1))
		count_unseen(old->dev);
	return 0;
}

static long end_rqs_entry(struct bpf_map *map, __u64 *key, struct rq_info *i, void *ctx)
{
	end_rq(*key, i);
	return 0;
}

/*
 * Run once by userspace (BPF_PROG_TEST_RUN) after the rings' last drain: every block request
 * still in flight, the slots' first, as REC_END_BLK records in the ring of the CPU it runs on.
 * Not an iterator: security policies that refuse BPF iterators (and kernels that lack map
 * iterators' helpers) still run it; it needs bpf_for_each_map_elem (5.13).
 */
SEC("raw_tp")
int end_rqs(void *ctx)
{
	REFUSED_IN_TESTS(REFUSE_END_RQS);
	if (!stop_at)
		return 0;
	bpf_for_each_map_elem(&rq_slots, end_rq_slot, NULL, 0);
	bpf_for_each_map_elem(&rqs, end_rqs_entry, NULL, 0);
	return 0;
}

/* Dummy instances so the skeleton generator emits these types for Rust. */
struct rec_sys _rec_sys = {};
struct rec_sys32 _rec_sys32 = {};
struct rec_sysio _rec_sysio = {};
struct rec_uring _rec_uring = {};
struct rec_journal _rec_journal = {};
struct rec_stack _rec_stack = {};
struct rec_blk _rec_blk = {};
struct rec_fork _rec_fork = {};
struct rec_exec _rec_exec = {};
struct rec_comm _rec_comm = {};
struct rec_cgroup _rec_cgroup = {};
struct rec_fd _rec_fd = {};
struct rec_dup _rec_dup = {};
/* And these, which userspace reads from the maps when no iterator may run (crates/record/src/ended.rs). */
struct tctx _tctx = {};
struct call_slot _call_slot = {};
struct call_key _call_key = {};
