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
 *   -DFLOOR_CLOCK=2  the clocks, and a 32-byte record per call handed to user space through one
 *                    BPF ring buffer shared by every CPU (reserve, fill, submit without
 *                    wakeup), as iocap did until it measured what CPUs pay to share it.
 *   -DFLOOR_CLOCK=3  the same record through this CPU's own ring buffer (an array of rings,
 *                    one per CPU, that floor-load creates), as iocap does for its other records.
 *   -DFLOOR_CLOCK=4  the same record written into this CPU's lane: its slice of an array
 *                    floor-load maps, a head moved after the stores, no reserve and no submit,
 *                    as iocap writes its hot path's record where the kernel cannot preempt it.
 *
 * Everything above the FLOOR_CLOCK=1 floor is iocap's own work: the per-call bookkeeping and
 * the hand-over of the record. floor-load drains the ring buffers (FLOOR_CLOCK 2, 3) as iocap's
 * poller does, and copies the lanes' records out (FLOOR_CLOCK 4) every millisecond. (A per-CPU batch of 64 records copied to one ring when full was measured too, and
 * saved 7-13 ns a call over the shared ring with one CPU busy: per-CPU rings avoid the same
 * sharing without holding records back.)
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

#if FLOOR_CLOCK == 2
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rb SEC(".maps");

static __always_inline void *ring(void)
{
	return &rb;
}
#elif FLOOR_CLOCK == 3
struct ring_map {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* floor-load's rings are of this size */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1); /* floor-load sets the possible CPUs */
	__type(key, __u32);
	__array(values, struct ring_map);
} rings SEC(".maps");

static __always_inline void *ring(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	return bpf_map_lookup_elem(&rings, &cpu);
}
#elif FLOOR_CLOCK == 4
/*
 * This CPU's own buffer with no reserve and no submit: an array user space maps, FAST_SLOTS
 * records per CPU, and the CPU's cursor (head written here, tail by the reader). Only one
 * program writes it, in process context, so nothing else on the CPU runs between its stores
 * (a kernel without involuntary preemption).
 */
#define FAST_SLOTS (1 << 17)
struct cursor {
	__u64 head;
	__u64 pad[7];
	__u64 tail;
	__u64 pad2[7];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* floor-load sets the possible CPUs */
	__type(key, __u32);
	__type(value, struct cursor);
} cursors SEC(".maps");

struct rec32 {
	__u64 w[4];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1); /* floor-load sets FAST_SLOTS per possible CPU */
	__type(key, __u32);
	__type(value, struct rec32);
} fast SEC(".maps");
#endif

/* The record of a call: its return value and three more words, as iocap's 32-byte record. */
static __always_inline void hand_over(long ret)
{
#if FLOOR_CLOCK == 2 || FLOOR_CLOCK == 3
	void *rb = ring();
	__u64 *e = rb ? bpf_ringbuf_reserve(rb, 32, 0) : NULL;

	if (e) {
		e[0] = ret;
		e[1] = 1;
		e[2] = 2;
		e[3] = 3;
		bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	}
#elif FLOOR_CLOCK == 4
	__u32 cpu = bpf_get_smp_processor_id(), i;
	struct cursor *c = bpf_map_lookup_elem(&cursors, &cpu);
	struct rec32 *e;
	__u64 h;

	if (!c)
		return;
	h = c->head;
	if (h - c->tail >= FAST_SLOTS)
		return;
	i = cpu * FAST_SLOTS + (h & (FAST_SLOTS - 1));
	e = bpf_map_lookup_elem(&fast, &i);
	if (!e)
		return;
	e->w[0] = ret;
	e->w[1] = 1;
	e->w[2] = 2;
	e->w[3] = 3;
	asm volatile("" ::: "memory"); /* the record before the head that publishes it */
	c->head = h + 1;
#endif
}

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_exit, struct pt_regs *regs, long ret)
{
	keep_clock(1);
	hand_over(ret);
	return 0;
}
