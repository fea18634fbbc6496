/*
 * Loads and attaches every program of a BPF object (benches/overhead.sh's floor), prints
 * "ready" once they are all attached, and holds them until SIGINT or SIGTERM. bpftool's
 * `prog loadall ... autoattach` does the same from bpftool 7.3 on; Debian 12 has 7.1.
 *   floor-load OBJ
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; }

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
	printf("ready\n");
	fflush(stdout);
	pause();
	bpf_object__close(obj);
	return 0;
}
