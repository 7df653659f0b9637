/* counters: what sharing one cache line costs N threads that each do M increments.
 *
 * Variants: shared-atomic (one counter for all), padded (one counter per thread, each on its own
 * line), packed (one counter per thread, all in one line: false sharing), arc-shared (clone + drop
 * of one reference-counted object, the Arc<T> pattern of seed 000) and arc-private (the same on a
 * per-thread object). Every op is a locked read-modify-write; only where the line lives differs. */
#define _GNU_SOURCE
#include "arch.h"
#include "cli.h"
#include "corun.h"
#include "pin.h"
#include "ranon.h"

#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum variant { SHARED, PADDED, PACKED, ARC_SHARED, ARC_PRIVATE, NVARIANTS };
static const char *variant_name[] = {"shared-atomic", "padded", "packed", "arc-shared", "arc-private"};

#define MAX_THREADS 1024

struct padded_counter {
	_Alignas(LINE) _Atomic uint64_t v;
};

/* An Arc's control block: the count and the payload share a line, as in Rust. */
struct arc {
	_Alignas(LINE) _Atomic uint64_t refs;
	uint64_t payload[7];
};

static struct {
	_Alignas(LINE) _Atomic uint64_t shared;
	struct padded_counter padded[MAX_THREADS];
	_Alignas(LINE) _Atomic uint64_t packed[16];  /* 16 × 8 B = one 128-B pair of lines */
	struct arc arc;
	_Alignas(LINE) _Atomic int go;
	_Atomic int ready;
} g;

struct worker {
	pthread_t t;
	int id, cpu, pinned, first, last, node;  /* sched_getcpu after pinning and at the end; node of c */
	enum variant v;
	uint64_t ops, t_end;
	struct arc *own;
	struct corun *cr;  /* did the threads run at the same time? (corun.h) */
};

static inline void arc_clone(struct arc *a)
{
	/* Relaxed, as Rust's Arc::clone: a new reference needs no ordering, only a count. */
	atomic_fetch_add_explicit(&a->refs, 1, memory_order_relaxed);
}

static inline void arc_drop(struct arc *a)
{
	/* Release, then acquire if last: the drop protocol of Rust's Arc. */
	if (atomic_fetch_sub_explicit(&a->refs, 1, memory_order_release) == 1) {
		atomic_thread_fence(memory_order_acquire);
		fail("reference count reached zero while a reference was held");
	}
}

/* Ops between two looks at the clock: >= ~40 us even for an uncontended increment (2.5 ns here), so
 * the look costs ~0.1%. (With 4096 the padded 1-thread run measured 2% slower than without corun.) */
#define BATCH 16384

static void *work(void *arg)
{
	struct worker *w = arg;
	int e = w->pinned ? pin_self(w->cpu) : 0;
	if (e)  /* the CPUs were checked: this is the host refusing, not bad input */
		fail("cannot pin to CPU %d: %s", w->cpu, strerror(e));
	w->first = sched_getcpu();
	if (w->v == ARC_PRIVATE) {  /* allocated by its thread, so first-touched on its node */
		if (posix_memalign((void **)&w->own, LINE, sizeof *w->own))
			fail("out of memory");
		memset(w->own, 0, sizeof *w->own);
		atomic_store(&w->own->refs, 1);
	}
	atomic_fetch_add(&g.ready, 1);
	while (!atomic_load_explicit(&g.go, memory_order_acquire))
		cpu_relax();
	_Atomic uint64_t *c = w->v == SHARED ? &g.shared
			    : w->v == PADDED ? &g.padded[w->id].v
			    : &g.packed[w->id % 16];
	struct arc *a = w->v == ARC_SHARED ? &g.arc : w->own;
	corun_begin(w->cr);
	int arc = w->v == ARC_SHARED || w->v == ARC_PRIVATE;
	for (uint64_t done = 0; done < w->ops;) {
		uint64_t end = w->ops - done > BATCH ? done + BATCH : w->ops;
		if (arc) {
			for (uint64_t i = done; i < end; i++) {
				arc_clone(a);
				arc_drop(a);
			}
		} else {
			for (uint64_t i = done; i < end; i++)
				atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
		}
		done = end;
		corun_batch_done(w->cr);
	}
	corun_end(w->cr);
	w->t_end = now_ns();
	w->last = sched_getcpu();
	w->node = page_node(w->v == ARC_SHARED || w->v == ARC_PRIVATE ? (void *)a : (void *)c);
	return NULL;
}

struct result {
	uint64_t ns;   /* from release to the last finisher */
	double corun;  /* % of that span during which every thread ran (corun.h) */
};


/* One measurement: n threads, m ops each. */
static struct result run(enum variant v, const int *cpus, int nc, int n, uint64_t m, int pinned)
{
	static struct worker w[MAX_THREADS];
	static const struct corun *cr[MAX_THREADS];
	memset(&g, 0, sizeof g);
	atomic_store(&g.arc.refs, 1);
	for (int i = 0; i < n; i++) {
		w[i] = (struct worker){.id = i, .cpu = cpus[i % nc], .pinned = pinned, .v = v, .ops = m,
				       .cr = malloc(sizeof(struct corun))};
		if (!w[i].cr)
			fail("out of memory");
		if (pthread_create(&w[i].t, NULL, work, &w[i]))
			fail("pthread_create");
	}
	while (atomic_load(&g.ready) < n)
		cpu_relax();
	uint64_t t0 = now_ns(), t_end = t0;
	atomic_store_explicit(&g.go, 1, memory_order_release);
	char list[4096];
	cpu_list_str(list, sizeof list, cpus, nc);
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		ran_on_note("counters", variant_name[v], list, i, pinned ? w[i].cpu : -1, w[i].first,
			    w[i].last, w[i].node);
		if (w[i].t_end > t_end)
			t_end = w[i].t_end;
		cr[i] = w[i].cr;
		if (w[i].own) {
			if (atomic_load(&w[i].own->refs) != 1)
				fail("arc-private count is off");
			free(w[i].own);
		}
	}
	/* Lost updates would mean the probe is broken, not slow. */
	uint64_t sum = 0, want = (uint64_t)n * m;
	if (v == SHARED)
		sum = atomic_load(&g.shared);
	else if (v == PADDED)
		for (int i = 0; i < n; i++) sum += atomic_load(&g.padded[i].v);
	else if (v == PACKED)
		for (int i = 0; i < 16; i++) sum += atomic_load(&g.packed[i]);
	else
		sum = want, want = atomic_load(&g.arc.refs) == 1 ? want : want + 1;
	if (sum != want)
		fail("%s: counted %llu, expected %llu", variant_name[v],
		     (unsigned long long)sum, (unsigned long long)want);
	struct result r = {t_end - t0, corun_pct(cr, n, t0, t_end)};
	for (int i = 0; i < n; i++)
		free(w[i].cr);
	return r;
}

static void usage(void)
{
	printf(
"usage: %s [--variant LIST] [--cpus LIST] [--threads N] [--ops M] [--rounds R] [--pinned 0|1]\n"
"\n"
"N threads each do M operations on a counter; tidy CSV on stdout per variant:\n"
"  ops_per_s (all threads, 1/s), ops_per_s_per_thread (1/s), ns_per_op (ns, per thread),\n"
"  corun_pct (%%: share of the run during which every thread was running)\n"
"\n"
"  --variant LIST  comma list of these (default: all):\n"
"                  shared-atomic  one atomic counter for all threads\n"
"                  padded         one counter per thread, each on its own 128-B line\n"
"                  packed         16 counters in one 128-B block, thread i on counter\n"
"                                 i mod 16 (false sharing)\n"
"                  arc-shared     clone+drop of one refcounted object (Rust's Arc)\n"
"                  arc-private    the same on a per-thread object\n"
"  --cpus LIST     CPUs for the threads, thread i on CPU i mod count (default: all usable)\n"
"  --threads N     thread count (default: the number of CPUs given)\n"
"  --ops M         operations per thread (default 5000000)\n"
"  --rounds R      measure every variant R times, interleaved; report the median (default 1)\n"
"  --pinned 0|1    0 leaves threads unbound, for the lab's unpinned placement (default 1)\n"
"  --help\n"
"Exit codes: 0 measured, 2 bad input, 1 failure.\n", prog);
}

static int cmp_result(const void *a, const void *b)
{
	uint64_t x = ((const struct result *)a)->ns, y = ((const struct result *)b)->ns;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS];
	int nc = 0, n = 0, pinned = 1, want[NVARIANTS], nv = 0;
	uint64_t m = 5000000, rounds = 1;
	prog = "counters";
	static const struct option lo[] = {
		{"variant", 1, 0, 'v'}, {"cpus", 1, 0, 'c'}, {"threads", 1, 0, 't'},
		{"ops", 1, 0, 'o'}, {"rounds", 1, 0, 'r'}, {"pinned", 1, 0, 'p'},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	for (int c; (c = getopt_long(argc, argv, "hv:c:t:o:r:p:", lo, NULL)) != -1;) {
		switch (c) {
		case 'h': usage(); return 0;
		case 'v': {
			char *s = strdup(optarg), *save = NULL;
			nv = 0;
			for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				int k = 0;
				while (k < NVARIANTS && strcmp(tok, variant_name[k]))
					k++;
				if (k == NVARIANTS)
					bad_input("unknown variant '%s'", tok);
				for (int j = 0; j < nv; j++)
					if (want[j] == k)
						bad_input("variant '%s' given twice", tok);
				want[nv++] = k;
			}
			free(s);
			if (!nv)
				bad_input("--variant needs at least one variant");
			break;
		}
		case 'c':
			if ((nc = parse_cpu_list(optarg, cpus, MAX_CPUS)) < 0)
				bad_input("--cpus: cannot parse '%s' (want e.g. 0,1 or 0-3,8)", optarg);
			break;
		case 't': n = (int)parse_count("--threads", optarg, 1, MAX_THREADS); break;
		case 'o': m = parse_count("--ops", optarg, 1, UINT64_MAX / MAX_THREADS); break;
		case 'r': rounds = parse_count("--rounds", optarg, 1, 1000); break;
		case 'p': pinned = (int)parse_count("--pinned", optarg, 0, 1); break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	nc = cpus_or_all(cpus, nc, MAX_CPUS);
	if (!n)
		n = nc;
	if (!nv)
		for (nv = 0; nv < NVARIANTS; nv++)
			want[nv] = nv;

	static struct result res[NVARIANTS][1000];
	for (uint64_t r = 0; r < rounds; r++)  /* interleaved: drift hits every variant alike */
		for (int i = 0; i < nv; i++)
			res[i][r] = run(want[i], cpus, nc, n, m, pinned);

	printf("variant,threads,metric,value,unit\n");
	for (int i = 0; i < nv; i++) {
		qsort(res[i], rounds, sizeof res[i][0], cmp_result);
		struct result *mid = &res[i][rounds / 2];  /* the median round, with its own corun */
		double t = (double)mid->ns / 1e9, total = (double)n * (double)m / t;
		const char *v = variant_name[want[i]];
		printf("%s,%d,ops_per_s,%.1f,1/s\n", v, n, total);
		printf("%s,%d,ops_per_s_per_thread,%.1f,1/s\n", v, n, total / n);
		printf("%s,%d,ns_per_op,%.3f,ns\n", v, n, t * 1e9 / (double)m);
		printf("%s,%d,corun_pct,%.1f,%%\n", v, n, mid->corun);
	}
	return 0;
}
