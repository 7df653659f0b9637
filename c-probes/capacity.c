/* capacity: how much a CPU delivers right now, from a short fixed workload on each CPU given.
 *
 * One pinned thread per CPU, all started together, times two dependent chains by the wall clock:
 * - core: a chain of integer multiply-adds, each needing the one before (no overlap, no memory);
 * - memory: a dependent pointer chase (chase.h) through a buffer larger than the CPU's L2, so each
 *   load goes to the shared last-level cache or beyond, where a neighbour on other CPUs competes.
 * The wall clock, not CPU time: a CPU shared with another task, or taken by the hypervisor, makes the
 * same work take longer, which is what a measurement on that CPU would suffer too.
 * Output: a CSV line per CPU, `cpu,core_ns,memory_ns` (ns per step). It knows nothing of who asks. */
#define _GNU_SOURCE
#include "arch.h"
#include "chase.h"
#include "cli.h"
#include "pin.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_BYTES (1ull << 30)

static struct {
	uint64_t core_steps, loads, bytes;  /* bytes 0: 4 × the CPU's L2 */
} opt = {8000000, 30000, 0};

struct worker {
	pthread_t t;
	int cpu;
	double core_ns, memory_ns;
	pthread_barrier_t *start;
};

/* Bytes of the unified level-2 cache of a CPU from sysfs, 0 when the kernel does not say. */
static uint64_t l2_bytes(int cpu)
{
	for (int i = 0; i < 8; i++) {
		char path[96];
		unsigned level = 0, kib = 0;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
		FILE *f = fopen(path, "r");
		if (!f)
			break;
		int ok = fscanf(f, "%u", &level) == 1;
		fclose(f);
		if (!ok || level != 2)
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
		if ((f = fopen(path, "r"))) {
			ok = fscanf(f, "%uK", &kib) == 1;
			fclose(f);
			if (ok)
				return (uint64_t)kib << 10;
		}
	}
	return 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	int e = pin_self(w->cpu);
	if (e)
		fail("cannot pin to CPU %d (error %d)", w->cpu, e);
	uint64_t bytes = opt.bytes ? opt.bytes : 4 * l2_bytes(w->cpu);
	if (!bytes)
		bytes = 4u << 20;  /* no cache sizes shown (some VMs): larger than any L2 met so far */
	size_t lines = bytes / CHASE_STRIDE;
	int bound;
	void *region = alloc_lines(lines * CHASE_STRIDE, cpu_node(w->cpu), &bound);
	void *p = chase_build(region, lines, 0x5eed + (uint64_t)w->cpu);
	/* A sequential read of every line brings the buffer into the caches it fits, at the prefetchers'
	 * pace (a pass along the chain would take a miss per line): the timed loads then measure the
	 * cache level, not page faults or the first trip to DRAM. */
	uint64_t warm = 0;
	for (size_t i = 0; i < lines; i++)
		warm += *(volatile uint64_t *)((char *)region + i * CHASE_STRIDE + sizeof(void *));
	__asm__ volatile("" : : "r"(warm));
	pthread_barrier_wait(w->start);
	uint64_t x = (uint64_t)w->cpu + 1, t0 = now_ns();
	for (uint64_t i = 0; i < opt.core_steps; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));  /* keep every step: the compiler must not fold the chain */
	}
	uint64_t t1 = now_ns();
	p = chase_run(p, opt.loads);
	uint64_t t2 = now_ns();
	w->core_ns = (double)(t1 - t0) / (double)opt.core_steps;
	w->memory_ns = (double)(t2 - t1) / (double)opt.loads;
	(void)p;
	free_lines(region, lines * CHASE_STRIDE);
	return NULL;
}

static void usage(void)
{
	printf("usage: capacity [--cpus LIST] [--core-steps N] [--loads N] [--bytes N]\n"
	       "  One pinned thread per CPU (default: every usable CPU), started together, times a\n"
	       "  dependent multiply-add chain of --core-steps (%llu) steps and a dependent random chase\n"
	       "  of --loads (%llu) loads through --bytes of memory (default: 4 x the CPU's L2).\n"
	       "  Prints cpu,core_ns,memory_ns: wall-clock ns per step, one line per CPU.\n",
	       (unsigned long long)opt.core_steps, (unsigned long long)opt.loads);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS];
	int nc = 0;
	prog = "capacity";
	static const struct option lo[] = {
		{"cpus", 1, 0, 'c'}, {"core-steps", 1, 0, 's'}, {"loads", 1, 0, 'l'},
		{"bytes", 1, 0, 'b'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	for (int c; (c = getopt_long(argc, argv, "hc:s:l:b:", lo, NULL)) != -1;) {
		switch (c) {
		case 'h': usage(); return 0;
		case 'c':
			nc = parse_cpu_list(optarg, cpus, MAX_CPUS);
			if (nc <= 0)
				bad_input("--cpus: cannot parse '%s' (a CPU list such as 0-3,8)", optarg);
			break;
		case 's': opt.core_steps = parse_count("--core-steps", optarg, 1, 1ull << 34); break;
		case 'l': opt.loads = parse_count("--loads", optarg, 1, 1ull << 34); break;
		case 'b': opt.bytes = parse_count("--bytes", optarg, 2 * CHASE_STRIDE, MAX_BYTES); break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	nc = cpus_or_all(cpus, nc, MAX_CPUS);
	struct worker *w = calloc((size_t)nc, sizeof *w);
	pthread_barrier_t start;
	if (!w || pthread_barrier_init(&start, NULL, (unsigned)nc))
		fail("cannot set up %d threads", nc);
	for (int i = 0; i < nc; i++) {
		w[i].cpu = cpus[i];
		w[i].start = &start;
		if (pthread_create(&w[i].t, NULL, work, &w[i]))
			fail("cannot start a thread for CPU %d", cpus[i]);
	}
	for (int i = 0; i < nc; i++)
		pthread_join(w[i].t, NULL);
	printf("cpu,core_ns,memory_ns\n");
	for (int i = 0; i < nc; i++)
		printf("%d,%.4f,%.4f\n", w[i].cpu, w[i].core_ns, w[i].memory_ns);
	free(w);
	return 0;
}
