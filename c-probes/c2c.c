/* c2c: core-to-core latency of one cache line, per CPU pair.
 *
 * Two threads, pinned to CPUs a and b, bounce a line back and forth. Thread a times a batch of
 * round trips with CLOCK_MONOTONIC; one sample = batch time / (2 × round trips) = one-way ns.
 * Samples are taken until the median is stable (or a cap), then min/p10/median/p90 are printed. */
#define _GNU_SOURCE
#include "arch.h"
#include "cli.h"
#include "pin.h"
#include "ranon.h"
#include "stats.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum mode { CAS, RW };
static const char *mode_name[] = {"cas", "rw"};

/* Where the bounced lines live: the node of CPU a or b (allocated and first touched by a thread
 * on that CPU, bound there with mbind), a NUMA node given by number, or none (first touch by the
 * unpinned main thread, no binding). */
enum { HOME_A = -1, HOME_B = -2, HOME_NONE = -3 };
#define MAX_HOMES 8

static struct {
	uint64_t round_trips, min_samples, max_samples, check_every, preheat_ms, warmup_ms;
	double tolerance, budget_s;  /* budget_s 0: none */
	int homes[MAX_HOMES], nhomes;
} opt = {250, 100, 2000, 50, 200, 5, 0.01, 0, {HOME_A}, 1};

static int several_homes;

/* "cas" with one home; "cas home=a", "cas home=b", "cas home=1" … when several are measured, so
 * the rows of each home stay apart (the variant is the knob under study). */
static void variant_name(char *buf, size_t n, int m, int home)
{
	if (!several_homes)
		snprintf(buf, n, "%s", mode_name[m]);
	else if (home == HOME_A || home == HOME_B)
		snprintf(buf, n, "%s home=%s", mode_name[m], home == HOME_A ? "a" : "b");
	else if (home == HOME_NONE)
		snprintf(buf, n, "%s home=none", mode_name[m]);
	else
		snprintf(buf, n, "%s home=%d", mode_name[m], home);
}

#define STOP UINT64_MAX  /* odd, and never a value of the ping-pong sequences */

struct lines {
	_Alignas(LINE) _Atomic uint64_t ping;  /* cas: the only line; rw: written by a */
	_Alignas(LINE) _Atomic uint64_t pong;  /* rw: written by b */
};

struct pair_run {
	enum mode mode;
	int a, b, sampling;
	uint64_t max_n;  /* sample cap of this run */
	uint64_t budget_ns;  /* --budget's share for this pair (warm-up included), 0 = none */
	struct lines *l;
	_Atomic int pong_ready;
	int first[2], last[2];  /* sched_getcpu of thread a and b after pinning and at the end */
	uint64_t warm_ns;
	double *xs, *tmp;
	size_t n;
};

/* Spins use no pause: on Skylake and later a pause costs ~40 ns, as much as what we measure. */
static void *pong(void *arg)
{
	struct pair_run *r = arg;
	int e = pin_self(r->b);
	if (e)  /* the CPUs were checked: this is the host refusing, not bad input */
		fail("cannot pin to CPU %d: %s", r->b, strerror(e));
	r->first[1] = sched_getcpu();
	atomic_store(&r->pong_ready, 1);
	if (r->mode == CAS) {
		for (uint64_t k = 0;; k++) {
			uint64_t exp = 2 * k + 1;
			while (!atomic_compare_exchange_strong(&r->l->ping, &exp, 2 * k + 2)) {
				if (exp == STOP)
					goto out;
				exp = 2 * k + 1;
			}
		}
	}
	for (uint64_t k = 1;; k++) {
		uint64_t v;
		while ((v = atomic_load_explicit(&r->l->ping, memory_order_acquire)) != k)
			if (v == STOP)
				goto out;
		atomic_store_explicit(&r->l->pong, k, memory_order_release);
	}
out:
	r->last[1] = sched_getcpu();
	return NULL;
}

/* One batch of n round trips starting at sequence *k; returns elapsed ns. */
static uint64_t batch(struct pair_run *r, uint64_t *k, uint64_t n)
{
	uint64_t t0 = now_ns();
	if (r->mode == CAS) {
		for (uint64_t i = 0; i < n; i++, ++*k) {
			uint64_t exp = 2 * *k;
			while (!atomic_compare_exchange_strong(&r->l->ping, &exp, 2 * *k + 1))
				exp = 2 * *k;
		}
	} else {
		for (uint64_t i = 0; i < n; i++) {
			++*k;
			atomic_store_explicit(&r->l->ping, *k, memory_order_release);
			while (atomic_load_explicit(&r->l->pong, memory_order_acquire) != *k)
				;
		}
	}
	return now_ns() - t0;
}

static void *ping(void *arg)
{
	struct pair_run *r = arg;
	int e = pin_self(r->a);
	if (e)
		fail("cannot pin to CPU %d: %s", r->a, strerror(e));
	r->first[0] = sched_getcpu();
	while (!atomic_load(&r->pong_ready))
		;
	uint64_t k = 0, start = now_ns();
	do  /* warm-up: both cores busy long enough to leave idle states and clock up */
		batch(r, &k, opt.round_trips);
	while (now_ns() - start < r->warm_ns);

	double prev = -1;
	int stable = 0;
	for (r->n = 0; r->n < r->max_n;) {
		r->xs[r->n++] = (double)batch(r, &k, opt.round_trips) / (2.0 * (double)opt.round_trips);
		if (r->budget_ns && r->n >= opt.min_samples && now_ns() - start > r->budget_ns)
			break;  /* the pair's share of --budget is spent: keep what it has */
		if (!r->sampling || r->n < opt.min_samples || r->n % opt.check_every)
			continue;
		double med = median_of(r->xs, r->n, r->tmp);
		stable = median_stable(prev, med, opt.tolerance) ? stable + 1 : 0;
		if (stable >= 2)  /* two checks in a row: one lucky agreement is not enough */
			break;
		prev = med;
	}
	/* Let b finish its last reply before telling it to stop. */
	if (r->mode == CAS)
		while (atomic_load(&r->l->ping) != 2 * k)
			;
	atomic_store(&r->l->ping, STOP);
	r->last[0] = sched_getcpu();
	return NULL;
}

static int warned_numa;

/* Allocation and first touch of the lines, on the home's CPU when the home is a or b. */
struct toucher {
	int cpu, node, bound;
	struct lines *l;
};

static void *touch_lines(void *arg)
{
	struct toucher *t = arg;
	int e = t->cpu >= 0 ? pin_self(t->cpu) : 0;
	if (e)
		fail("cannot pin to CPU %d: %s", t->cpu, strerror(e));
	t->l = alloc_lines(sizeof *t->l, t->node, &t->bound);
	return NULL;
}

/* One pair with one home; *home_node = the node the lines' page is on, as the kernel reports it. */
static void measure(enum mode m, int a, int b, int home, uint64_t warm_ms, int adaptive,
		    uint64_t max_n, uint64_t budget_ns, int preheat, struct summary *s, int *home_node,
		    double *xs, double *tmp)
{
	struct toucher t = {.cpu = home == HOME_A ? a : home == HOME_B ? b : -1};
	t.node = home == HOME_NONE ? -1 : t.cpu >= 0 ? cpu_node(t.cpu) : home;
	pthread_t th;
	if (pthread_create(&th, NULL, touch_lines, &t))
		fail("pthread_create");
	pthread_join(th, NULL);
	if (t.node >= 0 && !t.bound) {
		if (home >= 0)  /* a node asked by number must be honoured */
			fail("cannot bind the lines to NUMA node %d: %s", home, strerror(errno));
		if (!warned_numa++)
			fprintf(stderr, "%s: note: mbind to node %d failed (%s); pages placed by first touch\n",
				prog, t.node, strerror(errno));
	}
	*home_node = page_node(t.l);
	uint64_t warm_ns = warm_ms * 1000000;
	if (budget_ns && warm_ns > budget_ns / 2)  /* a budget leaves at least half for sampling */
		warm_ns = budget_ns / 2;
	struct pair_run r = {.mode = m, .a = a, .b = b, .l = t.l, .warm_ns = warm_ns, .xs = xs,
			     .tmp = tmp, .sampling = adaptive, .max_n = max_n, .budget_ns = budget_ns};
	pthread_t tp, tq;
	if (pthread_create(&tq, NULL, pong, &r) || pthread_create(&tp, NULL, ping, &r))
		fail("pthread_create");
	pthread_join(tp, NULL);
	pthread_join(tq, NULL);
	free_lines(t.l, sizeof *t.l);
	summarize(xs, r.n, s);
	if (!preheat) {
		char cpus[32], variant[32];
		snprintf(cpus, sizeof cpus, "%d,%d", a, b);
		variant_name(variant, sizeof variant, m, home);
		for (int i = 0; i < 2; i++)
			ran_on_note_want("c2c", variant, cpus, i, i ? b : a, r.first[i], r.last[i], *home_node,
					 t.bound ? t.node : -1);
	}
}

/* "a", "b,a", "0,1", "none" → opt.homes; anything else is bad input. */
static void parse_homes(const char *arg)
{
	char buf[256];
	if (strlen(arg) >= sizeof buf || !*arg)
		bad_input("--home: want a, b, a NUMA node number or none (comma list), not '%s'", arg);
	strcpy(buf, arg);
	opt.nhomes = 0;
	for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int h;
		if (!strcmp(t, "a")) h = HOME_A;
		else if (!strcmp(t, "b")) h = HOME_B;
		else if (!strcmp(t, "none")) h = HOME_NONE;
		else {
			if (strspn(t, "0123456789") != strlen(t))
				bad_input("--home: want a, b, a NUMA node number or none, not '%s'", t);
			h = (int)parse_count("--home", t, 0, 1023);
			char path[64];
			snprintf(path, sizeof path, "/sys/devices/system/node/node%d", h);
			if (access(path, F_OK))
				bad_input("--home: NUMA node %d does not exist here (%s)", h, path);
		}
		for (int i = 0; i < opt.nhomes; i++)
			if (opt.homes[i] == h)
				bad_input("--home: '%s' given twice", t);
		if (opt.nhomes == MAX_HOMES)
			bad_input("--home: at most %d homes", MAX_HOMES);
		opt.homes[opt.nhomes++] = h;
	}
	if (!opt.nhomes)
		bad_input("--home: want a, b, a NUMA node number or none, not '%s'", arg);
}

static void usage(void)
{
	printf(
"usage: %s [--mode cas|rw|cas,rw] [--cpus LIST | --pairs A:B,... | --matrix] [options]\n"
"\n"
"One-way core-to-core latency in ns (= round trip / 2) of a cache line bounced between\n"
"two pinned threads. Tidy CSV on stdout, one row per pair per statistic:\n"
"  variant (mode, plus \" home=H\" when several homes), cpus (\"a,b\"), metric one_way_ns\n"
"  (median), one_way_ns_min, one_way_ns_p10, one_way_ns_p90 (ns), samples (count),\n"
"  home_node (node, when the kernel reports it).\n"
"\n"
"  --mode M          cas: one line, compare-and-swap ping-pong (as core-to-core-latency)\n"
"                    rw: each side stores to its own line, spins loading the other's (as c2clat)\n"
"                    a comma list runs each mode over every pair (default cas)\n"
"  --cpus LIST       two CPUs: that pair; more: every pair among them (\"0-3,8\")\n"
"  --pairs LIST      explicit pairs, A:B comma separated (\"0:1,0:8\")\n"
"  --extra-pairs LIST  with --cpus or --matrix: these pairs too, after the matrix's (the SMT\n"
"                    siblings of a one-PU-per-core matrix); empty: none\n"
"  --matrix          every pair of usable CPUs (the default when no pair is given)\n"
"  --round-trips N   round trips timed together as one sample (default %llu)\n"
"  --min-samples N   samples before the stability check starts (default %llu)\n"
"  --max-samples N   cap per pair (default %llu)\n"
"  --tolerance X     a pair stops when two successive medians, %llu samples apart, twice\n"
"                    differ by <= X relative (default %g)\n"
"  --fixed           no adaptive stop: always --max-samples\n"
"  --budget S        seconds for the whole run (all pairs, modes and homes): each pair gets\n"
"                    an equal share of what is left, warm-up included, and stops sampling\n"
"                    when it is spent (never before --min-samples). Default: no budget\n"
"  --preheat-ms N    busy ping-pong before the first pair, to raise clocks (default %llu)\n"
"  --warmup-ms N     discarded ping-pong before each pair (default %llu)\n"
"  --home H          where the lines are allocated and first touched (comma list: each\n"
"                    pair is measured once per home; default a):\n"
"                    a, b: by a thread on the pair's first / second CPU, bound (mbind) to its node\n"
"                    N: bound to NUMA node N (exit 1 if the kernel refuses); none: first touch\n"
"                    by the unpinned main thread, no binding. Rows carry home_node: the node the\n"
"                    lines' page is on, as the kernel reports it (get_mempolicy)\n"
"  --no-numa         same as --home none\n"
"  --raw DIR         write c2c-matrix-MODE.csv and ran-on.csv (the CPUs each thread ran on,\n"
"                    sched_getcpu) there (default: $LAB_RAW, if set)\n"
"  --help\n"
"Exit codes: 0 measured, 2 bad input, 1 failure.\n",
	prog, (unsigned long long)opt.round_trips, (unsigned long long)opt.min_samples,
	(unsigned long long)opt.max_samples, (unsigned long long)opt.check_every, opt.tolerance,
	(unsigned long long)opt.preheat_ms, (unsigned long long)opt.warmup_ms);
}

/* "0:1,2:3" → pairs; -1 on a syntax error. */
static int parse_pairs(const char *s, int (*pairs)[2], int max)
{
	int n = 0;
	const char *p = s;
	while (*p) {
		char *end;
		if (n == max || *p < '0' || *p > '9')
			return -1;
		long a = strtol(p, &end, 10);
		if (*end != ':' || end[1] < '0' || end[1] > '9')
			return -1;
		long b = strtol(end + 1, &end, 10);
		if (a == b || a >= MAX_CPUS || b >= MAX_CPUS)
			return -1;
		pairs[n][0] = (int)a;
		pairs[n][1] = (int)b;
		n++;
		p = end;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return -1;
	}
	return n ? n : -1;
}

static void write_matrix(const char *dir, enum mode m, const int *cpus, int nc,
			 int (*pairs)[2], const double *med, int np)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/c2c-matrix-%s.csv", dir, mode_name[m]);
	FILE *f = fopen(path, "w");
	if (!f)
		fail("cannot write %s: %s", path, strerror(errno));
	fprintf(f, "cpu");
	for (int j = 0; j < nc; j++)
		fprintf(f, ",%d", cpus[j]);
	fputc('\n', f);
	for (int i = 0; i < nc; i++) {
		fprintf(f, "%d", cpus[i]);
		for (int j = 0; j < nc; j++) {
			const char *cell = NULL;
			double v = 0;
			for (int p = 0; p < np; p++)  /* the matrix is mirrored: (a,b) fills both cells */
				if ((pairs[p][0] == cpus[i] && pairs[p][1] == cpus[j]) ||
				    (pairs[p][1] == cpus[i] && pairs[p][0] == cpus[j]))
					v = med[p], cell = "";
			if (cell)
				fprintf(f, ",%.2f", v);
			else
				fputc(',', f);
		}
		fputc('\n', f);
	}
	if (fclose(f))
		fail("cannot write %s", path);
	fprintf(stderr, "%s: matrix written to %s\n", prog, path);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS];
	int nc = 0, np = 0, (*pairs)[2] = NULL, modes[2] = {CAS, -1}, adaptive = 1, matrix = 0;
	const char *raw = getenv("LAB_RAW"), *cpus_arg = NULL, *pairs_arg = NULL, *extra_arg = NULL;
	prog = "c2c";
	enum { O_RT = 256, O_MIN, O_MAX, O_TOL, O_FIXED, O_PRE, O_WARM, O_NONUMA, O_RAW, O_PAIRS, O_HOME,
	       O_BUDGET, O_EXTRA };
	static const struct option lo[] = {
		{"mode", 1, 0, 'm'}, {"cpus", 1, 0, 'c'}, {"pairs", 1, 0, O_PAIRS},
		{"matrix", 0, 0, 'M'}, {"round-trips", 1, 0, O_RT}, {"min-samples", 1, 0, O_MIN},
		{"max-samples", 1, 0, O_MAX}, {"tolerance", 1, 0, O_TOL}, {"fixed", 0, 0, O_FIXED},
		{"preheat-ms", 1, 0, O_PRE}, {"warmup-ms", 1, 0, O_WARM}, {"no-numa", 0, 0, O_NONUMA},
		{"raw", 1, 0, O_RAW}, {"home", 1, 0, O_HOME}, {"budget", 1, 0, O_BUDGET},
		{"extra-pairs", 1, 0, O_EXTRA},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	for (int c; (c = getopt_long(argc, argv, "hm:c:M", lo, NULL)) != -1;) {
		switch (c) {
		case 'h': usage(); return 0;
		case 'm':
			if (!strcmp(optarg, "cas")) modes[0] = CAS, modes[1] = -1;
			else if (!strcmp(optarg, "rw")) modes[0] = RW, modes[1] = -1;
			else if (!strcmp(optarg, "cas,rw")) modes[0] = CAS, modes[1] = RW;
			else if (!strcmp(optarg, "rw,cas")) modes[0] = RW, modes[1] = CAS;
			else bad_input("--mode must be cas, rw or cas,rw, not '%s'", optarg);
			break;
		case 'c': cpus_arg = optarg; break;
		case O_PAIRS: pairs_arg = optarg; break;
		case O_EXTRA: extra_arg = optarg; break;
		case 'M': matrix = 1; break;
		case O_RT: opt.round_trips = parse_count("--round-trips", optarg, 1, 1u << 30); break;
		case O_MIN: opt.min_samples = parse_count("--min-samples", optarg, 1, 1u << 24); break;
		case O_MAX: opt.max_samples = parse_count("--max-samples", optarg, 1, 1u << 24); break;
		case O_TOL: opt.tolerance = parse_real("--tolerance", optarg, 0, 1); break;
		case O_FIXED: adaptive = 0; break;
		case O_BUDGET: opt.budget_s = parse_real("--budget", optarg, 0.001, 1e7); break;
		case O_PRE: opt.preheat_ms = parse_count("--preheat-ms", optarg, 0, 600000); break;
		case O_WARM: opt.warmup_ms = parse_count("--warmup-ms", optarg, 0, 600000); break;
		case O_NONUMA: opt.homes[0] = HOME_NONE, opt.nhomes = 1; break;
		case O_HOME: parse_homes(optarg); break;
		case O_RAW: raw = optarg; break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	several_homes = opt.nhomes > 1;
	ran_on_dir(raw);
	if (!!cpus_arg + !!pairs_arg + matrix > 1)
		bad_input("give only one of --cpus, --pairs, --matrix");
	if (extra_arg && pairs_arg)
		bad_input("--extra-pairs goes with --cpus or --matrix, not --pairs (name them all in --pairs)");
	if (opt.min_samples > opt.max_samples)
		bad_input("--min-samples (%llu) exceeds --max-samples (%llu)",
			  (unsigned long long)opt.min_samples, (unsigned long long)opt.max_samples);

	if (pairs_arg) {
		static int pl[MAX_CPUS][2];
		if ((np = parse_pairs(pairs_arg, pl, MAX_CPUS)) < 0)
			bad_input("--pairs: cannot parse '%s' (want A:B[,A:B...], A != B)", pairs_arg);
		pairs = pl;
		for (int p = 0; p < np; p++)  /* the matrix file spans every CPU named */
			for (int e = 0; e < 2; e++) {
				int seen = 0;
				for (int i = 0; i < nc; i++)
					seen |= cpus[i] == pl[p][e];
				if (!seen)
					cpus[nc++] = pl[p][e];
			}
		check_cpus_usable(cpus, nc);
	} else {
		if (cpus_arg) {
			if ((nc = parse_cpu_list(cpus_arg, cpus, MAX_CPUS)) < 0)
				bad_input("--cpus: cannot parse '%s' (want e.g. 0,1 or 0-3,8)", cpus_arg);
			check_cpus_usable(cpus, nc);
		} else {
			nc = usable_cpus(cpus, MAX_CPUS);
		}
		if (nc < 2)
			bad_input("need at least two CPUs, have %d", nc);
		pairs = calloc((size_t)nc * (nc - 1) / 2, sizeof *pairs);
		for (int i = 0; i < nc; i++)
			for (int j = i + 1; j < nc; j++)
				pairs[np][0] = cpus[i], pairs[np][1] = cpus[j], np++;
		if (extra_arg && *extra_arg) {
			/* Measured after the matrix's pairs, with the same budget shares; the matrix file
			 * spans their CPUs too (cells not measured stay empty). */
			static int xl[MAX_CPUS][2];
			int ne = parse_pairs(extra_arg, xl, MAX_CPUS), nx = 0;
			static int xc[2 * MAX_CPUS];
			if (ne < 0)
				bad_input("--extra-pairs: cannot parse '%s' (want A:B[,A:B...], A != B)", extra_arg);
			pairs = realloc(pairs, ((size_t)np + (size_t)ne) * sizeof *pairs);
			if (!pairs)
				fail("out of memory");
			for (int p = 0; p < ne; p++) {
				pairs[np][0] = xl[p][0], pairs[np][1] = xl[p][1], np++;
				for (int e = 0; e < 2; e++) {
					int seen = 0;
					for (int i = 0; i < nc; i++)
						seen |= cpus[i] == xl[p][e];
					if (!seen && nc < MAX_CPUS)
						cpus[nc++] = xl[p][e], xc[nx++] = xl[p][e];
				}
			}
			if (nx)
				check_cpus_usable(xc, nx);
		}
	}

	double *xs = calloc(opt.max_samples, sizeof *xs), *tmp = calloc(opt.max_samples, sizeof *tmp);
	double *med = calloc((size_t)np, sizeof *med);
	if (!xs || !tmp || !med)
		fail("out of memory");

	/* Clock cost, for the record: a sample must span far more than this. */
	uint64_t c0 = now_ns();
	for (int i = 0; i < 1000; i++)
		now_ns();
	fprintf(stderr, "%s: clock_gettime(CLOCK_MONOTONIC) costs %.1f ns; %llu round trips per sample\n",
		prog, (double)(now_ns() - c0) / 1000.0, (unsigned long long)opt.round_trips);

	printf("variant,cpus,metric,value,unit\n");
	uint64_t t_start = now_ns(), t_note = t_start;
	int nmodes = modes[1] >= 0 ? 2 : 1;
	uint64_t runs_left = (uint64_t)np * (uint64_t)nmodes * (uint64_t)opt.nhomes;
	double budget_ns = opt.budget_s * 1e9;
	for (int mi = 0; mi < 2 && modes[mi] >= 0; mi++) {
		enum mode m = modes[mi];
		struct summary s;
		/* Preheat: time-bound ping-pong on the first pair; its few samples are dropped. */
		int hn;
		measure(m, pairs[0][0], pairs[0][1], opt.homes[0], opt.preheat_ms, 0, 1, 0, 1, &s, &hn, xs, tmp);
		for (int p = 0; p < np; p++) {
			char v[32];
			int a = pairs[p][0], b = pairs[p][1];
			for (int h = 0; h < opt.nhomes; h++) {
				/* An equal share of what is left: pairs that overran shrink the later ones'. */
				uint64_t share = 0;
				if (budget_ns > 0) {
					double left = budget_ns - (double)(now_ns() - t_start);
					share = left > (double)runs_left ? (uint64_t)(left / (double)runs_left) : 1;
				}
				runs_left--;
				measure(m, a, b, opt.homes[h], opt.warmup_ms, adaptive, opt.max_samples,
					share, 0, &s, &hn, xs, tmp);
				if (h == 0)  /* the matrix file holds the first home's medians */
					med[p] = s.median;
				variant_name(v, sizeof v, m, opt.homes[h]);
				printf("%s,\"%d,%d\",one_way_ns,%.3f,ns\n", v, a, b, s.median);
				printf("%s,\"%d,%d\",one_way_ns_min,%.3f,ns\n", v, a, b, s.min);
				printf("%s,\"%d,%d\",one_way_ns_p10,%.3f,ns\n", v, a, b, s.p10);
				printf("%s,\"%d,%d\",one_way_ns_p90,%.3f,ns\n", v, a, b, s.p90);
				printf("%s,\"%d,%d\",samples,%zu,count\n", v, a, b, s.n);
				if (hn >= 0)
					printf("%s,\"%d,%d\",home_node,%d,node\n", v, a, b, hn);
			}
			fflush(stdout);
			if (now_ns() - t_note > 5000000000u) {
				t_note = now_ns();
				fprintf(stderr, "%s: %s %d/%d pairs, %.0f s\n", prog, mode_name[m], p + 1, np,
					(double)(t_note - t_start) / 1e9);
			}
		}
		if (raw && *raw)
			write_matrix(raw, m, cpus, nc, pairs, med, np);
	}
	if (opt.budget_s > 0)
		fprintf(stderr, "%s: %llu pair runs in %.1f s (--budget %g s)\n", prog,
			(unsigned long long)np * (unsigned long long)nmodes * (unsigned long long)opt.nhomes,
			(double)(now_ns() - t_start) / 1e9, opt.budget_s);
	if (!pairs_arg)
		free(pairs);
	free(xs);
	free(tmp);
	free(med);
	return 0;
}
