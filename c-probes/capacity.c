/* capacity: how much a CPU delivers right now, from a short fixed workload on each CPU given.
 *
 * One pinned thread per CPU, all started together, times two dependent chains by the wall clock:
 * - core: a chain of integer multiply-adds, each needing the one before (no overlap, no memory);
 * - memory: a dependent pointer chase (chase.h) through a buffer larger than the CPU's L2, so each
 *   load goes to the shared last-level cache or beyond, where a neighbour on other CPUs competes.
 * The wall clock, not CPU time: a CPU shared with another task, or taken by the hypervisor, makes the
 * same work take longer, which is what a measurement on that CPU would suffer too.
 * Output: a CSV line per CPU, `cpu,core_ns,memory_ns` (ns per step). It knows nothing of who asks.
 * --watch PID (repeatable, up to MAX_WATCH processes) adds `watched_share`: the share of the probe's
 * wall time (threads started to threads joined) that those processes ran on that CPU, summed, from every thread's run time in ns
 * (/proc/PID/task/TID/schedstat) charged to the CPU the thread last ran on. Read here rather than
 * by the caller: a server's hundreds of threads take milliseconds to read from Python, twice a probe. */
#define _GNU_SOURCE
#include "arch.h"
#include "chase.h"
#include "cli.h"
#include "pin.h"

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAX_BYTES (1ull << 30)

#define MAX_PID 4194304        /* the kernel's limit (pid_max) */
#define MAX_WATCH 64           /* as many as the engine's `server` may name (guard.MOST_SERVERS) */

static struct {
	uint64_t core_steps, loads, bytes;  /* bytes 0: 4 × the CPU's L2 */
	uint64_t watch[MAX_WATCH];          /* the processes to watch, nwatch of them */
	int nwatch;
} opt = {8000000, 30000, 0, {0}, 0};

struct worker {
	pthread_t t;
	int cpu;
	double core_ns, memory_ns;
	uint64_t watched_ns;
	pthread_barrier_t *start;
};

/* A thread of the watched process: its schedstat kept open from before the probe to after it, so that
 * each is opened once (a server may have hundreds of threads, and /proc opens are the cost). */
struct watched {
	long tid;
	int fd;
	uint64_t ns;  /* run time before the probe */
};

/* The first number of a /proc file open as fd, read from its start; -1 when it cannot be. */
static int64_t first_number(int fd)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return (int64_t)strtoull(buf, NULL, 10);
}

/* Open and read every thread of `task` (/proc/PID/task); the count, at most `max`. */
static size_t watch_threads(int task, struct watched **out, size_t max)
{
	size_t n = 0, cap = 0;
	*out = NULL;
	int fd = dup(task);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	for (struct dirent *e; (e = readdir(d)) && n < max;) {
		char *end, path[64];
		long tid = strtol(e->d_name, &end, 10);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end)
			continue;
		snprintf(path, sizeof path, "%ld/schedstat", tid);
		int f = openat(task, path, O_RDONLY | O_CLOEXEC);
		int64_t ns = f < 0 ? -1 : first_number(f);
		if (ns < 0) {  /* ended meanwhile */
			if (f >= 0)
				close(f);
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			struct watched *more = realloc(*out, cap * sizeof **out);
			if (!more)
				fail("out of memory reading a watched process's threads");
			*out = more;
		}
		(*out)[n++] = (struct watched){tid, f, (uint64_t)ns};
	}
	closedir(d);
	return n;
}

/* The CPU a thread last ran on (proc(5) stat field 39), -1 when it is gone. */
static int last_cpu(int task, long tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "%ld/stat", tid);
	int fd = openat(task, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');  /* the name may hold spaces and parentheses; the last ')' ends it */
	for (int field = 2; field < 39 && p; field++)  /* p at the space before field `field + 1` */
		p = strchr(p + 1, ' ');
	return p ? atoi(p + 1) : -1;
}

/* Charge each thread's run time since it was opened to the worker on the CPU it last ran on, and close
 * it. Threads started during the probe are not counted: the share is a lower bound. */
static void charge(int task, struct watched *t, size_t n, struct worker *w, int nc)
{
	for (size_t i = 0; i < n; i++) {
		int64_t ns = first_number(t[i].fd);
		close(t[i].fd);
		if (ns <= (int64_t)t[i].ns)
			continue;
		int cpu = last_cpu(task, t[i].tid);
		for (int k = 0; k < nc; k++)
			if (w[k].cpu == cpu)
				w[k].watched_ns += (uint64_t)ns - t[i].ns;
	}
}

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
	printf("usage: capacity [--cpus LIST] [--core-steps N] [--loads N] [--bytes N] [--watch PID]...\n"
	       "  One pinned thread per CPU (default: every usable CPU), started together, times a\n"
	       "  dependent multiply-add chain of --core-steps (%llu) steps and a dependent random chase\n"
	       "  of --loads (%llu) loads through --bytes of memory (default: 4 x the CPU's L2).\n"
	       "  Prints cpu,core_ns,memory_ns: wall-clock ns per step, one line per CPU; with --watch,\n"
	       "  also watched_share: the share of the probe's time the watched processes (at most %d)\n"
	       "  ran on that CPU (0-1).\n",
	       (unsigned long long)opt.core_steps, (unsigned long long)opt.loads, MAX_WATCH);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS];
	int nc = 0;
	prog = "capacity";
	static const struct option lo[] = {
		{"cpus", 1, 0, 'c'}, {"core-steps", 1, 0, 's'}, {"loads", 1, 0, 'l'},
		{"bytes", 1, 0, 'b'}, {"watch", 1, 0, 'w'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	for (int c; (c = getopt_long(argc, argv, "hc:s:l:b:w:", lo, NULL)) != -1;) {
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
		case 'w':
			if (opt.nwatch == MAX_WATCH)
				bad_input("--watch: at most %d processes", MAX_WATCH);
			opt.watch[opt.nwatch] = parse_count("--watch", optarg, 1, MAX_PID);
			for (int k = 0; k <= opt.nwatch; k++)  /* a process named twice is counted once */
				if (opt.watch[k] == opt.watch[opt.nwatch]) {
					opt.nwatch += k == opt.nwatch;
					break;
				}
			break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	nc = cpus_or_all(cpus, nc, MAX_CPUS);
	struct worker *w = calloc((size_t)nc, sizeof *w);
	pthread_barrier_t start;
	if (!w || pthread_barrier_init(&start, NULL, (unsigned)nc))
		fail("cannot set up %d threads", nc);
	/* Per watched process: its /proc/PID/task, opened once (a PID reused meanwhile reads none), and
	 * its threads; one descriptor per thread, as many as the open-file limit allows, some kept spare. */
	struct watched *watched[MAX_WATCH] = {0};
	size_t nw[MAX_WATCH] = {0};
	int task[MAX_WATCH];
	struct rlimit lim;
	size_t room = 0;
	if (opt.nwatch && !getrlimit(RLIMIT_NOFILE, &lim)) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
		getrlimit(RLIMIT_NOFILE, &lim);
		room = lim.rlim_cur > 64 + MAX_WATCH ? (size_t)(lim.rlim_cur - 64 - MAX_WATCH) : 0;
	}
	for (int k = 0; k < opt.nwatch; k++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%llu/task", (unsigned long long)opt.watch[k]);
		task[k] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (task[k] >= 0 && room) {
			nw[k] = watch_threads(task[k], &watched[k], room);
			room -= nw[k];
		}
	}
	uint64_t t0 = now_ns();
	for (int i = 0; i < nc; i++) {
		w[i].cpu = cpus[i];
		w[i].start = &start;
		if (pthread_create(&w[i].t, NULL, work, &w[i]))
			fail("cannot start a thread for CPU %d", cpus[i]);
	}
	for (int i = 0; i < nc; i++)
		pthread_join(w[i].t, NULL);
	uint64_t t1 = now_ns();
	for (int k = 0; k < opt.nwatch; k++) {
		if (task[k] >= 0) {
			charge(task[k], watched[k], nw[k], w, nc);
			close(task[k]);
		}
		free(watched[k]);
	}
	printf(opt.nwatch ? "cpu,core_ns,memory_ns,watched_share\n" : "cpu,core_ns,memory_ns\n");
	for (int i = 0; i < nc; i++) {
		printf("%d,%.4f,%.4f", w[i].cpu, w[i].core_ns, w[i].memory_ns);
		if (opt.nwatch) {
			double share = t1 > t0 ? (double)w[i].watched_ns / (double)(t1 - t0) : 0;
			printf(",%.4f", share < 1 ? share : 1);
		}
		printf("\n");
	}
	free(w);
	return 0;
}
