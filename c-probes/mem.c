/* mem: what memory costs from each NUMA node's CPUs, per (CPU node, memory node) pair.
 *
 * For every pair, a buffer far larger than the last-level cache is bound to the memory node with
 * mbind before its first touch, then measured from the CPU node's CPUs:
 * - idle latency: a dependent pointer chase in one random cycle over the whole buffer (chase.h);
 * - bandwidth: sequential reads, and reads with a write back, by one thread and by every usable
 *   CPU of the CPU node, each on its own slice, time-boxed over several passes.
 * Afterwards the node of sampled pages is asked from the kernel (move_pages) and reported, so a
 * cell says where its memory really was, not where it was asked to be. */
#define _GNU_SOURCE
#include "arch.h"
#include "chase.h"
#include "cli.h"
#include "numa.h"
#include "pin.h"
#include "ranon.h"
#include "stats.h"

#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIN_CHUNKS 3          /* latency: timed chunks of the chase, at least */
#define MAX_CHUNKS 100000
#define CHUNK_LOADS (1u << 18)  /* ~26 ms at 100 ns a load, well above the clock's ~25 ns */
#define MIN_PASSES 3          /* bandwidth: passes over each slice, at least */
#define L1_BYTES (16u << 10)  /* the small chase: fits any L1 data cache this lab has met */
#define SAMPLE_PAGES 256
#define MAX_SIZE_MIB 65536

static struct {
	double seconds;
	uint64_t size_mib;  /* 0: automatic */
	int huge;
} opt = {0.25, 0, 1};

/* ---- bandwidth ------------------------------------------------------------------------------- */
enum kernel { READ, RW };
static const char *kernel_metric[] = {"read_gbps", "rw_gbps"};

struct bw_worker {
	pthread_t t;
	int cpu, first, last;
	enum kernel k;
	uint64_t *slice;
	size_t words;
	uint64_t passes, t_end, deadline;
	uint64_t sink;
	_Atomic int *ready, *go;
};

/* Eight independent sums in registers (named, not an array gcc -O2 would keep on the stack): no add
 * latency chain and no store-to-load forwarding, so the loads, not the adds, set the pace. */
static uint64_t read_pass(const uint64_t *x, size_t n)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;
	for (size_t i = 0; i + 8 <= n; i += 8) {
		s0 += x[i];
		s1 += x[i + 1];
		s2 += x[i + 2];
		s3 += x[i + 3];
		s4 += x[i + 4];
		s5 += x[i + 5];
		s6 += x[i + 6];
		s7 += x[i + 7];
	}
	return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7;
}

/* Read each word and write it back changed: every byte crosses the bus twice. */
static void rw_pass(uint64_t *x, size_t n)
{
	for (size_t i = 0; i < n; i++)
		x[i] = x[i] * 3 + 1;
}

static void *bw_work(void *arg)
{
	struct bw_worker *w = arg;
	int e = pin_self(w->cpu);
	if (e)
		fail("cannot pin to CPU %d: %s", w->cpu, strerror(e));
	w->first = sched_getcpu();
	atomic_fetch_add(w->ready, 1);
	while (!atomic_load_explicit(w->go, memory_order_acquire))
		cpu_relax();
	uint64_t sink = 0;
	do {
		if (w->k == READ)
			sink += read_pass(w->slice, w->words);
		else
			rw_pass(w->slice, w->words);
		w->passes++;
		w->t_end = now_ns();
	} while (w->passes < MIN_PASSES || w->t_end < w->deadline);
	w->sink = sink;
	w->last = sched_getcpu();
	return NULL;
}

/* GB/s of kernel k by one thread per CPU in cpus[0..n), each on its slice of buf. */
static double bandwidth(enum kernel k, char *buf, size_t size, const int *cpus, int n)
{
	static struct bw_worker w[MAX_CPUS];
	_Atomic int ready = 0, go = 0;
	size_t slice = size / (size_t)n / 4096 * 4096;  /* page-aligned slices: no line shared */
	if (slice < 4096)
		fail("buffer too small for %d threads", n);
	for (int i = 0; i < n; i++) {
		w[i] = (struct bw_worker){.cpu = cpus[i], .k = k, .slice = (uint64_t *)(buf + (size_t)i * slice),
					  .words = slice / 8, .ready = &ready, .go = &go};
		if (pthread_create(&w[i].t, NULL, bw_work, &w[i]))
			fail("pthread_create");
	}
	while (atomic_load(&ready) < n)
		cpu_relax();
	uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)(opt.seconds * 1e9), t_end = t0;
	for (int i = 0; i < n; i++)  /* written before go is released: the workers read it after */
		w[i].deadline = deadline;
	atomic_store_explicit(&go, 1, memory_order_release);
	double bytes = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].t, NULL);
		if (w[i].first != cpus[i] || w[i].last != cpus[i])
			fprintf(stderr, "%s: note: bandwidth thread for CPU %d ran on %d..%d\n", prog, cpus[i],
				w[i].first, w[i].last);
		bytes += (double)w[i].passes * (double)slice * (k == RW ? 2 : 1);
		if (w[i].t_end > t_end)
			t_end = w[i].t_end;
	}
	return bytes / (double)(t_end - t0);  /* bytes per ns = GB/s */
}

/* ---- latency --------------------------------------------------------------------------------- */
/* Median ns per load over timed chunks of the chase from start: at least MIN_CHUNKS, until
 * --seconds is spent. One untimed chunk first. *p_min gets the fastest chunk. */
static double latency(void *start, uint64_t loads_per_chunk, double *p_min)
{
	static double xs[MAX_CHUNKS], tmp[MAX_CHUNKS];
	void *p = chase_run(start, loads_per_chunk);
	size_t n = 0;
	uint64_t t_stop = now_ns() + (uint64_t)(opt.seconds * 1e9);
	*p_min = 0;
	while (n < MAX_CHUNKS && (n < MIN_CHUNKS || now_ns() < t_stop)) {
		uint64_t t0 = now_ns();
		p = chase_run(p, loads_per_chunk);
		xs[n] = (double)(now_ns() - t0) / (double)loads_per_chunk;
		if (!n || xs[n] < *p_min)
			*p_min = xs[n];
		n++;
	}
	if (!p)  /* never true: keeps the chase's end alive */
		fail("chase ended on a null pointer");
	return median_of(xs, n, tmp);
}

/* ---- one cell -------------------------------------------------------------------------------- */
static void row(const char *variant, int threads, const char *cpus, const char *metric, double v,
		const char *unit)
{
	printf("%s,%d,\"%s\",%s,%.4g,%s\n", variant, threads, cpus, metric, v, unit);
}

static void cell(int cpu_node, int mem_node, const int *cpus, int nc, size_t size, int numa)
{
	char variant[64], one[16], all[4096];
	snprintf(variant, sizeof variant, "cpu%d-mem%d", cpu_node, mem_node);
	snprintf(one, sizeof one, "%d", cpus[0]);
	cpu_list_str(all, sizeof all, cpus, nc);
	int e = pin_self(cpus[0]);  /* the chain is built, and latency measured, from the node's first CPU */
	if (e)
		fail("cannot pin to CPU %d: %s", cpus[0], strerror(e));
	int first = sched_getcpu();
	char *buf = alloc_on_node(size, numa ? mem_node : -1, opt.huge);

	/* A chase that stays in L1, on the same buffer: what the probe's own loop costs per load. */
	double l1_min, l1 = latency(chase_build(buf, L1_BYTES / CHASE_STRIDE, 1), CHUNK_LOADS / 4, &l1_min);
	void *start = chase_build(buf, size / CHASE_STRIDE, 2);
	long long hb = huge_bytes(buf, size);
	double lat_min, lat = latency(start, CHUNK_LOADS, &lat_min);
	row(variant, 1, one, "latency_ns", lat, "ns");
	row(variant, 1, one, "latency_ns_min", lat_min, "ns");
	row(variant, 1, one, "latency_l1_ns", l1, "ns");
	for (enum kernel k = READ; k <= RW; k++) {
		row(variant, 1, one, kernel_metric[k], bandwidth(k, buf, size, cpus, 1), "GB/s");
		if (nc > 1)  /* with one usable CPU the node's figure is the one-thread figure */
			row(variant, nc, all, kernel_metric[k], bandwidth(k, buf, size, cpus, nc), "GB/s");
	}
	if (hb >= 0)
		row(variant, 1, one, "huge_pct", 100.0 * (double)hb / (double)size, "%");

	/* Where the memory was, after the measurement (NUMA balancing could have moved it). */
	static int counts[MAX_NODES];
	memset(counts, 0, sizeof counts);
	int known = sample_nodes(buf, size, SAMPLE_PAGES, counts, MAX_NODES), where = -1;
	for (int n = 0; n < MAX_NODES; n++)
		if (counts[n] && (where < 0 || counts[n] > counts[where]))
			where = n;
	if (known) {
		row(variant, 1, one, "mem_node", where, "node");
		row(variant, 1, one, "mem_on_node_pct", 100.0 * counts[mem_node] / known, "%");
	} else {
		fprintf(stderr, "%s: note: the kernel did not say where %s's pages are\n", prog, variant);
	}
	ran_on_note_want("mem", variant, one, 0, cpus[0], first, sched_getcpu(), where, numa ? mem_node : -1);
	free_aligned(buf, size);
}

/* ---- options --------------------------------------------------------------------------------- */
static void usage(void)
{
	printf(
"usage: %s [--cpu-nodes LIST] [--mem-nodes LIST] [--size-mib N] [--seconds S] [--no-huge] [--raw DIR]\n"
"\n"
"For every (CPU node, memory node) pair: memory bound to the memory node before its first touch,\n"
"measured from the CPU node's CPUs. Tidy CSV on stdout, variant cpuC-memM, per pair:\n"
"  latency_ns       idle latency, median over chunks of a random dependent pointer chase (ns)\n"
"  latency_ns_min   the fastest chunk (ns)\n"
"  latency_l1_ns    the same chase over %u KiB of the same buffer: the loop's own cost (ns)\n"
"  read_gbps        sequential read, threads=1 (first CPU of the node) and threads=N (all its\n"
"                   usable CPUs, each on its own slice) (GB/s)\n"
"  rw_gbps          read and write back every word; bytes counted both ways (GB/s)\n"
"  huge_pct         share of the buffer backed by transparent huge pages (%%)\n"
"  mem_node         the node most sampled pages were on, after the measurement (move_pages)\n"
"  mem_on_node_pct  share of %d sampled pages on the memory node asked for (%%)\n"
"\n"
"  --cpu-nodes LIST  nodes whose CPUs measure (default: every node with a usable CPU)\n"
"  --mem-nodes LIST  nodes the memory is bound to (default: every node with memory)\n"
"  --size-mib N      buffer per pair in MiB, 1..%d, at most half the node's free memory\n"
"                    (default: 8 x the last-level cache, at least 64 MiB)\n"
"  --seconds S       time per measurement (latency; each bandwidth run), 0.01..60 (default 0.25)\n"
"  --no-huge         no MADV_HUGEPAGE (default: asked; huge_pct says what the kernel gave)\n"
"  --raw DIR         append a line per pair to DIR/ran-on.csv (default: $LAB_RAW)\n"
"  --help\n"
"Exit codes: 0 measured, 2 bad input, 1 failure.\n", prog, L1_BYTES >> 10, SAMPLE_PAGES, MAX_SIZE_MIB);
}

/* A node list flag: parsed, every node existing, none repeated. */
static int parse_nodes(const char *flag, const char *s, int *nodes)
{
	int n = parse_cpu_list(s, nodes, MAX_NODES);
	if (n < 0)
		bad_input("%s: cannot parse '%s' (want e.g. 0,1 or 0-3)", flag, s);
	for (int i = 0; i < n; i++)
		if (!node_exists(nodes[i]))
			bad_input("%s: NUMA node %d does not exist", flag, nodes[i]);
	return n;
}

int main(int argc, char **argv)
{
	static int cpu_nodes[MAX_NODES], mem_nodes[MAX_NODES], cpus[MAX_CPUS];
	int ncn = 0, nmn = 0;
	prog = "mem";
	static const struct option lo[] = {
		{"cpu-nodes", 1, 0, 'c'}, {"mem-nodes", 1, 0, 'm'}, {"size-mib", 1, 0, 's'},
		{"seconds", 1, 0, 't'}, {"no-huge", 0, 0, 'H'}, {"raw", 1, 0, 'r'},
		{"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	int numa = node_list("online", cpu_nodes, MAX_NODES) > 0;
	for (int c; (c = getopt_long(argc, argv, "hc:m:s:t:Hr:", lo, NULL)) != -1;) {
		switch (c) {
		case 'h': usage(); return 0;
		case 'c': ncn = parse_nodes("--cpu-nodes", optarg, cpu_nodes); break;
		case 'm': nmn = parse_nodes("--mem-nodes", optarg, mem_nodes); break;
		case 's': opt.size_mib = parse_count("--size-mib", optarg, 1, MAX_SIZE_MIB); break;
		case 't': opt.seconds = parse_real("--seconds", optarg, 0.01, 60); break;
		case 'H': opt.huge = 0; break;
		case 'r': ran_on_dir(optarg); break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	if (!numa) {  /* a kernel without NUMA: one node 0 with every CPU, no binding */
		if (ncn || nmn)
			bad_input("this kernel shows no NUMA nodes: --cpu-nodes and --mem-nodes cannot be used");
		fprintf(stderr, "%s: note: the kernel shows no NUMA node: one cell, memory not bound\n", prog);
		cpu_nodes[ncn++] = 0;
		mem_nodes[nmn++] = 0;
	}
	if (!ncn) {
		static int all[MAX_NODES];
		int n = node_list("has_cpu", all, MAX_NODES);
		if (!n)
			n = node_list("online", all, MAX_NODES);
		for (int i = 0; i < n; i++)
			if (node_usable_cpus(all[i], cpus, MAX_CPUS))
				cpu_nodes[ncn++] = all[i];
	}
	if (!nmn && !(nmn = node_list("has_memory", mem_nodes, MAX_NODES)))
		nmn = node_list("online", mem_nodes, MAX_NODES);
	if (!ncn || !nmn)
		fail("no NUMA node with usable CPUs or memory found");
	for (int i = 0; i < ncn && numa; i++)
		if (!node_usable_cpus(cpu_nodes[i], cpus, MAX_CPUS))
			bad_input("--cpu-nodes: node %d has no CPU this process may run on", cpu_nodes[i]);

	/* Far larger than the last-level cache, so the chase and the passes measure memory. */
	int first_cpu;
	if (numa)
		node_usable_cpus(cpu_nodes[0], &first_cpu, 1);
	else
		usable_cpus(&first_cpu, 1);
	unsigned long long llc = llc_bytes(first_cpu), size = opt.size_mib << 20;
	if (!size) {
		size = 8 * llc > (64ull << 20) ? 8 * llc : 64ull << 20;
		size = (size + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	}
	for (int i = 0; i < nmn && numa; i++) {
		unsigned long long half = node_free_bytes(mem_nodes[i]) / 2;
		if (half && size > half) {
			if (opt.size_mib)
				bad_input("--size-mib: %llu MiB is more than half of node %d's free memory (%llu MiB)",
					  size >> 20, mem_nodes[i], half >> 19);
			size = half & ~((2ull << 20) - 1);
		}
	}
	if (llc && size < 4 * llc)
		fprintf(stderr, "%s: note: %llu MiB is less than 4 x the last-level cache (%llu MiB): "
			"part of the latency is the cache's\n", prog, size >> 20, llc >> 20);
	fprintf(stderr, "%s: %d x %d cells, %llu MiB each, last-level cache %llu KiB, huge pages %s\n", prog,
		ncn, nmn, size >> 20, llc >> 10, opt.huge ? "asked (MADV_HUGEPAGE)" : "not asked");

	printf("variant,threads,cpus,metric,value,unit\n");
	for (int i = 0; i < ncn; i++) {
		int nc = numa ? node_usable_cpus(cpu_nodes[i], cpus, MAX_CPUS) : usable_cpus(cpus, MAX_CPUS);
		for (int j = 0; j < nmn; j++)
			cell(cpu_nodes[i], mem_nodes[j], cpus, nc, (size_t)size, numa);
	}
	return 0;
}
