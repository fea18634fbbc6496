// SPDX-License-Identifier: GPL-2.0
/*
 * The floor under iocap's syscall tracing, for benches/overhead.sh: what any tracer of every
 * syscall pays before it does any work of its own. Two tp_btf programs on sys_enter and
 * sys_exit, the attach points iocap uses, built with the flags iocap's build.rs gives clang.
 *
 *   -DFLOOR_CLOCK=0  both programs empty: the cost of entering a BPF program twice a call.
 *   -DFLOOR_CLOCK=1  each also reads the clock once (bpf_ktime_get_ns(), as iocap does): the two
 *                    reads any enter -> exit latency needs. The value is stored in a per-CPU
 *                    array, so the compiler cannot drop the call.
 *   -DFLOOR_CLOCK=2  the clocks, and a 32-byte record per call handed to user space through a
 *                    BPF ring buffer (reserve, fill, submit without wakeup), as iocap does.
 *   -DFLOOR_CLOCK=3  the clocks, and the record appended to a per-CPU batch of 64 that goes to
 *                    the ring buffer in one copy when full: the per-CPU buffering that would
 *                    replace a reserve and submit per call (what the two cost apart is what
 *                    it could save).
 *
 * Everything above the FLOOR_CLOCK=1 floor is iocap's own work: the per-call bookkeeping and
 * the ring buffer. floor-load drains the ring buffer (FLOOR_CLOCK 2, 3) as iocap's poller does.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

#if FLOOR_CLOCK
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} floor_ts SEC(".maps");

static __always_inline void keep_clock(__u32 slot)
{
	__u64 *t = bpf_map_lookup_elem(&floor_ts, &slot);

	if (t)
		*t = bpf_ktime_get_ns();
}
#else
static __always_inline void keep_clock(__u32 slot) {}
#endif

SEC("tp_btf/sys_enter")
int BPF_PROG(floor_enter, struct pt_regs *regs, long id)
{
	keep_clock(0);
	return 0;
}

#if FLOOR_CLOCK >= 2
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rb SEC(".maps");
#endif

#if FLOOR_CLOCK == 3
#define BATCH 64
struct batch {
	__u64 rec[BATCH][4];
	__u32 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct batch);
} batches SEC(".maps");
#endif

/* The record of a call: its return value and three more words, as iocap's 32-byte record. */
static __always_inline void hand_over(long ret)
{
#if FLOOR_CLOCK == 2
	__u64 *e = bpf_ringbuf_reserve(&rb, 32, 0);

	if (e) {
		e[0] = ret;
		e[1] = 1;
		e[2] = 2;
		e[3] = 3;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
#elif FLOOR_CLOCK == 3
	__u32 zero = 0;
	struct batch *b = bpf_map_lookup_elem(&batches, &zero);
	__u32 n;

	if (!b)
		return;
	n = b->n;
	if (n >= BATCH) {
		bpf_ringbuf_output(&rb, b->rec, sizeof(b->rec), BPF_RB_NO_WAKEUP);
		n = 0;
	}
	b->rec[n][0] = ret;
	b->rec[n][1] = 1;
	b->rec[n][2] = 2;
	b->rec[n][3] = 3;
	b->n = n + 1;
#endif
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_exit, struct pt_regs *regs, long ret)
{
	keep_clock(1);
	hand_over(ret);
	return 0;
}
