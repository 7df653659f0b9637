/* channel: messages through our own bounded ring, slots padded vs unpadded, two threads
 * (producer → consumer) or a pipeline of three (producer → relay → consumer) as in seed 004.
 * Reports ns per message and messages per second, end to end. */
#define _GNU_SOURCE
#include "arch.h"
#include "cli.h"
#include "corun.h"
#include "pin.h"
#include "ranon.h"
#include "ring.h"

#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STAGES 8

static const char *layout_name[] = {"unpadded", "padded"};

static struct {
	uint64_t messages, capacity, work;
	int stages, pinned;
} opt = {2000000, 64, 0, 2, 1};

struct stage {
	pthread_t t;
	int id, cpu, first, last, node;  /* sched_getcpu after pinning and at the end; node of its ring */
	struct ring *in, *out;
	_Atomic int *ready, *go;
	uint64_t t_end;
	struct corun *cr;  /* did the stages run at the same time? (corun.h) */
};

/* Messages between two looks at the clock: >= ~20 us even for the cheapest hand-off, so the look
 * costs < 0.3%. */
#define BATCH 1024

/* Per-message work of a stage (seed 004 parsed and serialized JSON): a dependent chain the
 * compiler cannot fold, so --work scales the compute between channel operations. */
static inline uint64_t busy(uint64_t x, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *stage_main(void *arg)
{
	struct stage *s = arg;
	int e = opt.pinned ? pin_self(s->cpu) : 0;
	if (e)  /* the CPUs were checked: this is the host refusing, not bad input */
		fail("cannot pin to CPU %d: %s", s->cpu, strerror(e));
	s->first = sched_getcpu();
	atomic_fetch_add(s->ready, 1);
	while (!atomic_load_explicit(s->go, memory_order_acquire))
		cpu_relax();
	uint64_t sink = 0;
	corun_begin(s->cr);
	for (uint64_t done = 0; done < opt.messages;) {
		uint64_t end = opt.messages - done > BATCH ? done + BATCH : opt.messages;
		for (uint64_t i = done; i < end; i++) {
			uint64_t m = s->in ? ring_pop(s->in) : i;
			if (s->in && m != i)  /* every message, once, in order */
				fail("stage %d received %llu, expected %llu", s->id,
				     (unsigned long long)m, (unsigned long long)i);
			if (opt.work)
				sink += busy(m, opt.work);
			if (s->out)
				ring_push(s->out, m);
		}
		done = end;
		corun_batch_done(s->cr);
	}
	corun_end(s->cr);
	s->t_end = now_ns();
	s->last = sched_getcpu();
	s->node = page_node(s->out ? s->out->slots : s->in->slots);
	__asm__ __volatile__("" ::"r"(sink));
	return NULL;
}

struct result {
	uint64_t ns;   /* from release to the last stage's last message */
	double corun;  /* % of that span during which every stage ran (corun.h) */
};

/* One run. */
static struct result run(int padded, const int *cpus, int nc)
{
	static struct ring rings[MAX_STAGES];
	static struct stage st[MAX_STAGES];
	static const struct corun *cr[MAX_STAGES];
	_Atomic int ready = 0, go = 0;
	for (int i = 0; i + 1 < opt.stages; i++)
		if (ring_init(&rings[i], opt.capacity, padded))
			fail("cannot allocate a ring of %llu slots", (unsigned long long)opt.capacity);
	for (int i = 0; i < opt.stages; i++) {
		st[i] = (struct stage){.id = i, .cpu = cpus[i % nc], .ready = &ready, .go = &go,
				       .in = i ? &rings[i - 1] : NULL,
				       .out = i + 1 < opt.stages ? &rings[i] : NULL,
				       .cr = malloc(sizeof(struct corun))};
		if (!st[i].cr)
			fail("out of memory");
		if (pthread_create(&st[i].t, NULL, stage_main, &st[i]))
			fail("pthread_create");
	}
	while (atomic_load(&ready) < opt.stages)
		sched_yield();
	uint64_t t0 = now_ns();
	atomic_store_explicit(&go, 1, memory_order_release);
	char list[4096];
	cpu_list_str(list, sizeof list, cpus, nc);
	for (int i = 0; i < opt.stages; i++) {
		pthread_join(st[i].t, NULL);
		ran_on_note("channel", layout_name[padded], list, i, opt.pinned ? st[i].cpu : -1,
			    st[i].first, st[i].last, st[i].node);
		cr[i] = st[i].cr;
	}
	for (int i = 0; i + 1 < opt.stages; i++)
		ring_free(&rings[i]);
	uint64_t t_end = st[opt.stages - 1].t_end;
	struct result r = {t_end - t0, corun_pct(cr, opt.stages, t0, t_end)};
	for (int i = 0; i < opt.stages; i++)
		free(st[i].cr);
	return r;
}

static void usage(void)
{
	printf(
"usage: %s [--variant padded|unpadded|padded,unpadded] [--cpus LIST] [--stages 2|3] [options]\n"
"\n"
"Messages (8-B sequence numbers) through a bounded SPSC ring with a stamp per slot\n"
"(crossbeam's array-channel protocol). Tidy CSV on stdout per variant:\n"
"  ns_per_msg (ns, end to end / messages), msgs_per_s (1/s),\n"
"  corun_pct (%%: share of the run during which every stage was running)\n"
"\n"
"  --variant LIST   padded: one slot per 128-B line; unpadded: 16-B slots, 8 per 128 B\n"
"                   (head and tail are padded in both). Default: padded,unpadded\n"
"  --cpus LIST      stage i runs on CPU i mod count (default: all usable)\n"
"  --stages N       2 = producer -> consumer; 3 = producer -> relay -> consumer, the seed 004\n"
"                   pipeline; up to %d (default 2)\n"
"  --messages N     messages per run (default %llu)\n"
"  --capacity N     slots per ring, a power of two >= 2 (default %llu)\n"
"  --work N         dependent multiply-adds per message in every stage (default 0)\n"
"  --rounds R       measure each variant R times, interleaved; report the median (default 1)\n"
"  --pinned 0|1     0 leaves threads unbound, for the lab's unpinned placement (default 1)\n"
"  --help\n"
"Exit codes: 0 measured, 2 bad input, 1 failure.\n",
	prog, MAX_STAGES, (unsigned long long)opt.messages, (unsigned long long)opt.capacity);
}

static int cmp_result(const void *a, const void *b)
{
	uint64_t x = ((const struct result *)a)->ns, y = ((const struct result *)b)->ns;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	static int cpus[MAX_CPUS];
	int nc = 0, layouts[2] = {1, 0}, nl = 2;
	uint64_t rounds = 1;
	prog = "channel";
	static const struct option lo[] = {
		{"variant", 1, 0, 'v'}, {"cpus", 1, 0, 'c'}, {"stages", 1, 0, 's'},
		{"messages", 1, 0, 'n'}, {"capacity", 1, 0, 'C'}, {"work", 1, 0, 'w'},
		{"rounds", 1, 0, 'r'}, {"pinned", 1, 0, 'p'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
	for (int c; (c = getopt_long(argc, argv, "hv:c:s:n:C:w:r:p:", lo, NULL)) != -1;) {
		switch (c) {
		case 'h': usage(); return 0;
		case 'v':
			if (!strcmp(optarg, "padded")) layouts[0] = 1, nl = 1;
			else if (!strcmp(optarg, "unpadded")) layouts[0] = 0, nl = 1;
			else if (!strcmp(optarg, "padded,unpadded")) layouts[0] = 1, layouts[1] = 0, nl = 2;
			else if (!strcmp(optarg, "unpadded,padded")) layouts[0] = 0, layouts[1] = 1, nl = 2;
			else bad_input("--variant must be padded, unpadded or both, not '%s'", optarg);
			break;
		case 'c':
			if ((nc = parse_cpu_list(optarg, cpus, MAX_CPUS)) < 0)
				bad_input("--cpus: cannot parse '%s' (want e.g. 0,1 or 0-3,8)", optarg);
			break;
		case 's': opt.stages = (int)parse_count("--stages", optarg, 2, MAX_STAGES); break;
		case 'n': opt.messages = parse_count("--messages", optarg, 1, 1ull << 40); break;
		case 'C':
			opt.capacity = parse_count("--capacity", optarg, 2, 1ull << 30);
			if (opt.capacity & (opt.capacity - 1))
				bad_input("--capacity must be a power of two, not %llu",
					  (unsigned long long)opt.capacity);
			break;
		case 'w': opt.work = parse_count("--work", optarg, 0, 1ull << 20); break;
		case 'r': rounds = parse_count("--rounds", optarg, 1, 1000); break;
		case 'p': opt.pinned = (int)parse_count("--pinned", optarg, 0, 1); break;
		default: bad_input("unknown option");
		}
	}
	no_operands(argc, argv);
	nc = cpus_or_all(cpus, nc, MAX_CPUS);
	if (opt.pinned && nc < opt.stages)
		fprintf(stderr, "%s: note: %d stages on %d CPUs: some stages share a CPU\n",
			prog, opt.stages, nc);

	static struct result res[2][1000];
	for (uint64_t r = 0; r < rounds; r++)
		for (int i = 0; i < nl; i++)
			res[i][r] = run(layouts[i], cpus, nc);

	printf("variant,metric,value,unit\n");
	for (int i = 0; i < nl; i++) {
		qsort(res[i], rounds, sizeof res[i][0], cmp_result);
		struct result *mid = &res[i][rounds / 2];  /* the median round, with its own corun */
		double t = (double)mid->ns;
		printf("%s,ns_per_msg,%.3f,ns\n", layout_name[layouts[i]], t / (double)opt.messages);
		printf("%s,msgs_per_s,%.1f,1/s\n", layout_name[layouts[i]], (double)opt.messages * 1e9 / t);
		printf("%s,corun_pct,%.1f,%%\n", layout_name[layouts[i]], mid->corun);
	}
	return 0;
}
