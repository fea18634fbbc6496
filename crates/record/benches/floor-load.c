/*
 * Loads and attaches every program of a BPF object (benches/overhead.sh's floor), prints
 * "ready" once they are all attached, and holds them until SIGINT or SIGTERM, draining the
 * object's ring buffer `rb`, or the per-CPU ring buffers it makes for the array `rings`, or
 * the per-CPU lanes of the arrays `fast` and `cursors`, every millisecond as iocap's poller
 * does. bpftool's
 * `prog loadall ... autoattach` does the same from bpftool 7.3 on; Debian 12 has 7.1.
 *   floor-load OBJ
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The size of each CPU's ring: floor.bpf.c's template's. */
#define CPU_RING (4 << 20)
#define MAX_CPUS 1024
/* floor.bpf.c's FAST_SLOTS: 32-byte records per CPU. */
#define FAST_SLOTS (1 << 17)

static volatile sig_atomic_t stopped;

static void stop(int sig)
{
	(void)sig;
	stopped = 1;
}

static int drop_record(void *ctx, void *data, size_t len)
{
	(void)ctx;
	(void)data;
	(void)len;
	return 0;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;

	if (argc != 2) {
		fprintf(stderr, "usage: floor-load OBJ\n");
		return 2;
	}
	signal(SIGINT, stop);
	signal(SIGTERM, stop);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "floor-load: cannot open %s\n", argv[1]);
		return 1;
	}
	/* FLOOR_CLOCK=3: one ring per possible CPU, in the array `rings`. */
	struct bpf_map *outer = bpf_object__find_map_by_name(obj, "rings");
	int cpus = libbpf_num_possible_cpus(), fds[MAX_CPUS];

	if (outer) {
		if (cpus <= 0 || cpus > MAX_CPUS) {
			fprintf(stderr, "floor-load: %d CPUs\n", cpus);
			return 1;
		}
		for (int i = 0; i < cpus; i++) {
			fds[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "floor_ring", 0, 0, CPU_RING, NULL);
			if (fds[i] < 0) {
				fprintf(stderr, "floor-load: cannot create a ring buffer\n");
				return 1;
			}
		}
		bpf_map__set_inner_map_fd(outer, fds[0]);
		bpf_map__set_max_entries(outer, cpus);
	}
	/* FLOOR_CLOCK=4: each CPU's records in its slice of the array `fast`, its cursor in `cursors`. */
	struct bpf_map *fast = bpf_object__find_map_by_name(obj, "fast");
	struct bpf_map *cursors = bpf_object__find_map_by_name(obj, "cursors");

	if (fast && cursors) {
		bpf_map__set_max_entries(fast, cpus * FAST_SLOTS);
		bpf_map__set_max_entries(cursors, cpus);
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "floor-load: cannot load %s\n", argv[1]);
		return 1;
	}
	for (int i = 0; outer && i < cpus; i++) {
		if (bpf_map_update_elem(bpf_map__fd(outer), &i, &fds[i], BPF_ANY)) {
			fprintf(stderr, "floor-load: cannot place a ring buffer\n");
			return 1;
		}
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "floor-load: cannot attach %s\n", bpf_program__name(prog));
			bpf_object__close(obj);
			return 1;
		}
	}
	struct bpf_map *rb = bpf_object__find_map_by_name(obj, "rb");
	struct ring_buffer *ring = NULL;

	if (rb)
		ring = ring_buffer__new(bpf_map__fd(rb), drop_record, NULL, NULL);
	for (int i = 0; outer && i < cpus; i++) {
		if (i == 0)
			ring = ring_buffer__new(fds[0], drop_record, NULL, NULL);
		else if (ring && ring_buffer__add(ring, fds[i], drop_record, NULL))
			ring = NULL;
	}
	if ((rb || outer) && !ring) {
		fprintf(stderr, "floor-load: cannot open the ring buffers\n");
		bpf_object__close(obj);
		return 1;
	}
	volatile unsigned long long *cur = NULL;
	unsigned long long *recs = NULL;
	static unsigned long long sink[4 * 4096];

	if (fast && cursors) {
		size_t page = sysconf(_SC_PAGESIZE);
		size_t clen = ((size_t)cpus * 128 + page - 1) / page * page;
		size_t rlen = (size_t)cpus * FAST_SLOTS * 32;
		cur = mmap(NULL, clen, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(cursors), 0);
		recs = mmap(NULL, rlen, PROT_READ, MAP_SHARED, bpf_map__fd(fast), 0);
		if (cur == MAP_FAILED || recs == MAP_FAILED) {
			fprintf(stderr, "floor-load: cannot map the buffers\n");
			bpf_object__close(obj);
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (!stopped) {
		if (ring)
			ring_buffer__consume(ring);
		/* Copy each CPU's new records out, as a reader would, and move its tail past them. */
		for (int i = 0; cur && i < cpus; i++) {
			unsigned long long head = __atomic_load_n(&cur[i * 16], __ATOMIC_ACQUIRE);
			unsigned long long tail = cur[i * 16 + 8];
			for (; tail != head; tail++) {
				unsigned long long at = (unsigned long long)i * FAST_SLOTS + (tail & (FAST_SLOTS - 1));
				memcpy(&sink[(tail % 4096) * 4], &recs[at * 4], 32);
			}
			__atomic_store_n(&cur[i * 16 + 8], tail, __ATOMIC_RELEASE);
		}
		usleep(1000);
	}
	ring_buffer__free(ring);
	bpf_object__close(obj);
	return 0;
}
