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
 * (/proc/PID/task/TID/schedstat) charged to the CPU the thread last ran on; a thread started during
 * the probe counts with all its run time, one that ended during it is lost (a lower bound). Read here
 * rather than by the caller: a server's hundreds of threads take milliseconds to read from Python. */
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
	int serve;                          /* a probe per "probe" line on stdin, until end of input */
} opt = {8000000, 30000, 0, {0}, 0, 0};

struct worker {
	pthread_t t;
	int cpu;
	double core_ns, memory_ns;
	uint64_t watched_ns;
	pthread_barrier_t *start;
	void *region, *p;  /* the chase's buffer and where the chase stands (freed after each --serve probe) */
	size_t lines;
};

/* A thread of a watched process: its schedstat opened once and read through the same descriptor
 * (pread) before and after each probe (a server may have hundreds of threads, and /proc opens are
 * the cost; with --serve, the second probe opens only the threads that are new). */
struct watched {
	long tid;
	int fd;
	uint64_t ns;  /* run time before the probe */
};

/* A watched process: its /proc/PID/task and its threads as they were just before the probe. */
struct watched_proc {
	int task;                /* -1 when the process was gone */
	struct watched *t;       /* sorted by tid */
	size_t n, cap;
	int complete;            /* every thread listed was opened (none left out for want of descriptors) */
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

/* Calls fn(tid, arg) for every thread listed in /proc/PID/task, open as `task`; -1 when the listing
 * cannot be read. */
static int each_thread(int task, void (*fn)(long, void *), void *arg)
{
	int fd = openat(task, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);  /* a fresh listing each time */
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (struct dirent *e; (e = readdir(d));) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && !*end)
			fn(tid, arg);
	}
	closedir(d);
	return 0;
}

/* The schedstat of thread `tid` opened as *fd and its run time in ns; -1 (and no descriptor) when the
 * thread ended meanwhile. */
static int64_t open_run_time(int task, long tid, int *fd)
{
	char path[64];
	snprintf(path, sizeof path, "%ld/schedstat", tid);
	*fd = openat(task, path, O_RDONLY | O_CLOEXEC);
	int64_t ns = *fd < 0 ? -1 : first_number(*fd);
	if (ns < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return ns;
}

static int by_tid(const void *a, const void *b)
{
	long x = ((const struct watched *)a)->tid, y = ((const struct watched *)b)->tid;
	return (x > y) - (x < y);
}

static struct watched *find(const struct watched_proc *p, long tid)
{
	struct watched key = {tid, -1, 0};
	return p->n ? bsearch(&key, p->t, p->n, sizeof *p->t, by_tid) : NULL;
}

struct refreshing {
	struct watched_proc *p, old;
	size_t *room;  /* descriptors left for all watched processes */
};

/* One thread of the listing before a probe: its run time now, through the descriptor it kept from the
 * probe before (--serve) or a new one. */
static void refresh_one(long tid, void *arg)
{
	struct refreshing *r = arg;
	struct watched_proc *p = r->p;
	struct watched *was = find(&r->old, tid);
	int fd = was ? was->fd : -1;
	int64_t ns = fd >= 0 ? first_number(fd) : -1;
	if (was)
		was->fd = -1;  /* taken over, or closed below */
	if (ns < 0) {  /* new, or a TID reused after its thread ended */
		if (fd >= 0) {
			close(fd);
			++*r->room;
		}
		if (!*r->room) {
			p->complete = 0;
			return;
		}
		ns = open_run_time(p->task, tid, &fd);
		if (ns < 0)  /* ended meanwhile */
			return;
		--*r->room;
	}
	if (p->n == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 256;
		struct watched *more = realloc(p->t, p->cap * sizeof *more);
		if (!more)
			fail("out of memory reading a watched process's threads");
		p->t = more;
	}
	p->t[p->n++] = (struct watched){tid, fd, (uint64_t)ns};
}

/* Every thread of p->task and its run time, just before a probe; the descriptors of threads that have
 * ended since the last probe are closed. */
static void refresh(struct watched_proc *p, size_t *room)
{
	struct refreshing r = {p, *p, room};
	p->t = NULL;
	p->n = p->cap = 0;
	p->complete = each_thread(p->task, refresh_one, &r) == 0;
	for (size_t i = 0; i < r.old.n; i++)
		if (r.old.t[i].fd >= 0) {
			close(r.old.t[i].fd);
			++*room;
		}
	free(r.old.t);
	qsort(p->t, p->n, sizeof *p->t, by_tid);
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

struct charging {
	struct watched_proc *p;
	struct worker *w;
	int nc;
};

/* Charge `ns` of thread `tid` to the worker on the CPU the thread last ran on; its stat is read only
 * for a thread that ran (most of a server's threads sleep through a probe). */
static void charge_ns(int task, long tid, uint64_t ns, struct worker *w, int nc)
{
	if (!ns)
		return;
	int cpu = last_cpu(task, tid);
	for (int k = 0; k < nc; k++)
		if (w[k].cpu == cpu)
			w[k].watched_ns += ns;
}

/* One thread of the listing after the probe: its run time since it was read before, or, for a thread
 * that was not there (started during the probe, or a TID reused after one ended), all of its run time.
 * A thread that ended during the probe is in no listing: its run time is lost (a lower bound). */
static void charge_one(long tid, void *arg)
{
	struct charging *c = arg;
	struct watched_proc *p = c->p;
	struct watched *t = find(p, tid);
	int64_t ns = t ? first_number(t->fd) : -1;
	if (ns >= 0) {
		if (ns > (int64_t)t->ns)
			charge_ns(p->task, tid, (uint64_t)ns - t->ns, c->w, c->nc);
		return;
	}
	if (!p->complete)  /* a thread left out before for want of descriptors is not a new one */
		return;
	int fd;
	ns = open_run_time(p->task, tid, &fd);
	if (ns > 0)
		charge_ns(p->task, tid, (uint64_t)ns, c->w, c->nc);
	if (fd >= 0)
		close(fd);
}

/* Charge each watched thread's run time during the probe to the worker on the CPU it last ran on. */
static void charge(struct watched_proc *p, struct worker *w, int nc)
{
	struct charging c = {p, w, nc};
	each_thread(p->task, charge_one, &c);
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
	if (!w->region) {  /* the buffer, first touched on its CPU's node */
		uint64_t bytes = opt.bytes ? opt.bytes : 4 * l2_bytes(w->cpu);
		if (!bytes)
			bytes = 4u << 20;  /* no cache sizes shown (some VMs): larger than any L2 met so far */
		w->lines = bytes / CHASE_STRIDE;
		int bound;
		w->region = alloc_lines(w->lines * CHASE_STRIDE, cpu_node(w->cpu), &bound);
		w->p = chase_build(w->region, w->lines, 0x5eed + (uint64_t)w->cpu);
	}
	/* A sequential read of every line brings the buffer into the caches it fits, at the prefetchers'
	 * pace (a pass along the chain would take a miss per line): the timed loads then measure the
	 * cache level, not page faults or the first trip to DRAM. */
	uint64_t warm = 0;
	for (size_t i = 0; i < w->lines; i++)
		warm += *(volatile uint64_t *)((char *)w->region + i * CHASE_STRIDE + sizeof(void *));
	__asm__ volatile("" : : "r"(warm));
	pthread_barrier_wait(w->start);
	uint64_t x = (uint64_t)w->cpu + 1, t0 = now_ns();
	for (uint64_t i = 0; i < opt.core_steps; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		__asm__ volatile("" : "+r"(x));  /* keep every step: the compiler must not fold the chain */
	}
	uint64_t t1 = now_ns();
	w->p = chase_run(w->p, opt.loads);  /* the next probe goes on from here: any line of the cycle will do */
	uint64_t t2 = now_ns();
	w->core_ns = (double)(t1 - t0) / (double)opt.core_steps;
	w->memory_ns = (double)(t2 - t1) / (double)opt.loads;
	if (opt.serve) {  /* the measured command runs until the next probe: it gets the memory back (4 × L2
	                   * per probed CPU, a GiB on a large host), and the next probe builds its own */
		free_lines(w->region, w->lines * CHASE_STRIDE);
		w->region = NULL;
	}
	return NULL;
}

/* One probe: the watched threads read, a pinned thread per CPU started together, the threads' run time
 * charged, a CSV block printed. */
static void probe(struct worker *w, int nc, struct watched_proc *watched, size_t *room)
{
	pthread_barrier_t start;
	if (pthread_barrier_init(&start, NULL, (unsigned)nc))
		fail("cannot set up %d threads", nc);
	for (int k = 0; k < opt.nwatch; k++)
		if (watched[k].task >= 0)
			refresh(&watched[k], room);
	uint64_t t0 = now_ns();
	for (int i = 0; i < nc; i++) {
		w[i].start = &start;
		w[i].watched_ns = 0;
		if (pthread_create(&w[i].t, NULL, work, &w[i]))
			fail("cannot start a thread for CPU %d", w[i].cpu);
	}
	for (int i = 0; i < nc; i++)
		pthread_join(w[i].t, NULL);
	uint64_t t1 = now_ns();
	pthread_barrier_destroy(&start);
	for (int k = 0; k < opt.nwatch; k++)
		if (watched[k].task >= 0)
			charge(&watched[k], w, nc);
	printf(opt.nwatch ? "cpu,core_ns,memory_ns,watched_share\n" : "cpu,core_ns,memory_ns\n");
	for (int i = 0; i < nc; i++) {
		printf("%d,%.4f,%.4f", w[i].cpu, w[i].core_ns, w[i].memory_ns);
		if (opt.nwatch) {
			double share = t1 > t0 ? (double)w[i].watched_ns / (double)(t1 - t0) : 0;
			printf(",%.4f", share < 1 ? share : 1);
		}
		printf("\n");
	}
	if (fflush(stdout))
		fail("cannot write the probe's output");
}

static void usage(void)
{
	printf("usage: capacity [--cpus LIST] [--core-steps N] [--loads N] [--bytes N] [--watch PID]... [--serve]\n"
	       "  One pinned thread per CPU (default: every usable CPU), started together, times a\n"
	       "  dependent multiply-add chain of --core-steps (%llu) steps and a dependent random chase\n"
	       "  of --loads (%llu) loads through --bytes of memory (default: 4 x the CPU's L2).\n"
	       "  Prints cpu,core_ns,memory_ns: wall-clock ns per step, one line per CPU; with --watch,\n"
	       "  also watched_share: the share of the probe's time the watched processes (at most %d)\n"
	       "  ran on that CPU (0-1). --serve: a probe (header and lines) per line 'probe' read on\n"
	       "  stdin, until end of input; the buffers and watched threads' files are kept between.\n",
	       (unsigned long long)opt.core_steps, (unsigned long long)opt.loads, MAX_WATCH);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS];
	int nc = 0;
	prog = "capacity";
	static const struct option lo[] = {
		{"cpus", 1, 0, 'c'}, {"core-steps", 1, 0, 's'}, {"loads", 1, 0, 'l'}, {"bytes", 1, 0, 'b'},
		{"watch", 1, 0, 'w'}, {"serve", 0, 0, 'S'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
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
		case 'S': opt.serve = 1; break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	nc = cpus_or_all(cpus, nc, MAX_CPUS);
	struct worker *w = calloc((size_t)nc, sizeof *w);
	if (!w)
		fail("cannot set up %d threads", nc);
	for (int i = 0; i < nc; i++)
		w[i].cpu = cpus[i];
	/* Per watched process: its /proc/PID/task, opened once (a PID reused meanwhile reads none), and
	 * its threads; one descriptor per thread, as many as the open-file limit allows, some kept spare.
	 * Read before the workers start, not while they set up: a main thread that joined their barrier
	 * made them sleep and wait to be woken on a loaded CPU, which cost more than it saved. */
	struct rlimit lim;
	size_t room = 0;
	if (opt.nwatch && !getrlimit(RLIMIT_NOFILE, &lim)) {
		lim.rlim_cur = lim.rlim_max;
		setrlimit(RLIMIT_NOFILE, &lim);
		getrlimit(RLIMIT_NOFILE, &lim);
		room = lim.rlim_cur > 64 + MAX_WATCH ? (size_t)(lim.rlim_cur - 64 - MAX_WATCH) : 0;
	}
	static struct watched_proc watched[MAX_WATCH];
	for (int k = 0; k < opt.nwatch; k++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/%llu/task", (unsigned long long)opt.watch[k]);
		watched[k].task = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (!opt.serve)
		probe(w, nc, watched, &room);
	else
		/* The engine's two probes around a repeat, one process: the second starts no process and
		 * opens only the watched threads that are new. */
		for (char line[64]; fgets(line, sizeof line, stdin);) {
			if (strcmp(line, "probe\n")) {
				line[strcspn(line, "\n")] = 0;
				bad_input("--serve: expected a line 'probe' on stdin, not '%.20s'", line);
			}
			probe(w, nc, watched, &room);
		}
	for (int i = 0; i < nc; i++)
		if (w[i].region)
			free_lines(w[i].region, w[i].lines * CHASE_STRIDE);
	for (int k = 0; k < opt.nwatch; k++)
		free(watched[k].t);  /* its descriptors close at exit */
	free(w);
	return 0;
}
