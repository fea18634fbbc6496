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
 *
 * Everything above the FLOOR_CLOCK=1 floor is iocap's own work: the per-call bookkeeping and
 * the ring buffer.
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

SEC("tp_btf/sys_exit")
int BPF_PROG(floor_exit, struct pt_regs *regs, long ret)
{
	keep_clock(1);
	return 0;
}
