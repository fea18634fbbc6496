/*
 * Loads and attaches every program of a BPF object (benches/overhead.sh's floor), prints
 * "ready" once they are all attached, and holds them until SIGINT or SIGTERM, draining the
 * object's ring buffer `rb` (if it has one) every millisecond as iocap's poller does. bpftool's
 * `prog loadall ... autoattach` does the same from bpftool 7.3 on; Debian 12 has 7.1.
 *   floor-load OBJ
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

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
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "floor-load: cannot load %s\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "floor-load: cannot attach %s\n", bpf_program__name(prog));
			bpf_object__close(obj);
			return 1;
		}
	}
	struct bpf_map *rb = bpf_object__find_map_by_name(obj, "rb");
	struct ring_buffer *ring = rb ? ring_buffer__new(bpf_map__fd(rb), drop_record, NULL, NULL) : NULL;

	if (rb && !ring) {
		fprintf(stderr, "floor-load: cannot open the ring buffer\n");
		bpf_object__close(obj);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (!stopped) {
		if (ring)
			ring_buffer__consume(ring);
		usleep(1000);
	}
	ring_buffer__free(ring);
	bpf_object__close(obj);
	return 0;
}
