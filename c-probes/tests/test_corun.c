/* Unit tests of corun.c on hand-made timelines (times in µs, stored as ns). */
#include "corun.h"

#include <stdio.h>
#include <stdlib.h>

static int failed, checks;

static void within(const char *what, double got, double lo, double hi)
{
	checks++;
	if (!(got >= lo && got <= hi)) {
		failed++;
		printf("FAIL %s: got %.3f, want [%g, %g]\n", what, got, lo, hi);
	}
}

/* A thread stamping every `step` µs from `from` to `to`, running `share` of each interval, except
 * inside [off_from, off_to) where it did not run at all. */
static struct corun *thread(double from, double to, double step, double share, double off_from, double off_to)
{
	struct corun *c = calloc(1, sizeof *c);
	double cpu = 0;
	for (double t = from; t <= to + 1e-9 && c->n < CORUN_MAX_STAMPS; t += step) {
		c->wall[c->n] = (uint64_t)(t * 1000), c->cpu[c->n] = (uint64_t)(cpu * 1000);
		c->n++;
		if (!(t >= off_from && t < off_to))
			cpu += step * share;
	}
	return c;
}

static double pct(struct corun *a, struct corun *b, double span_us)
{
	const struct corun *both[2] = {a, b};
	double r = corun_pct(both, b ? 2 : 1, 0, (uint64_t)(span_us * 1000));
	free(a);
	free(b);
	return r;
}

int main(void)
{
	within("one thread, always on", pct(thread(0, 1000, 10, 1, -1, -1), NULL, 1000), 99.9, 100);
	within("two threads side by side", pct(thread(0, 1000, 10, 1, -1, -1), thread(0, 1000, 10, 1, -1, -1), 1000),
	       99.9, 100);
	within("b off half the time", pct(thread(0, 1000, 10, 1, -1, -1), thread(0, 1000, 10, 1, 250, 750), 1000), 49.9, 50.1);
	/* a then b, as when one CPU runs them one after the other. */
	within("one after the other", pct(thread(0, 500, 10, 1, -1, -1), thread(0, 1000, 10, 1, 0, 500), 1000), 0, 0.01);
	within("one thread alone, half the span", pct(thread(0, 500, 10, 1, -1, -1), NULL, 1000), 49.9, 50.1);
	/* Taking turns finer than an interval: each ran half of every interval. Independent halves
	 * overlap a quarter of the time: the estimate, not the truth (0), but far under any threshold. */
	within("turns on one CPU", pct(thread(0, 1000, 10, 0.5, -1, -1), thread(0, 1000, 10, 0.5, -1, -1), 1000),
	       24.9, 25.1);
	/* Contention slows a thread's work, not its CPU time: still running. */
	within("slow but running", pct(thread(0, 1000, 10, 1, -1, -1), thread(0, 990, 30, 1, -1, -1), 1000), 98, 100);
	within("a thread that never started", pct(thread(0, 1000, 10, 1, -1, -1), thread(0, 0, 10, 1, -1, -1), 1000),
	       0, 0);
	within("starts late", pct(thread(0, 1000, 10, 1, -1, -1), thread(400, 1000, 10, 1, -1, -1), 1000), 59.9, 60.1);
	within("empty span", pct(thread(0, 10, 10, 1, -1, -1), NULL, 0), 0, 0);

	/* More stamps than fit: every other one is dropped, the period doubles, the span is kept. */
	struct corun *c = calloc(1, sizeof *c);
	corun_begin(c);
	uint64_t first = c->wall[0], last = 0;
	for (uint64_t k = 1; k <= 3 * CORUN_MAX_STAMPS; k++)
		corun_stamp(c, last = first + k * CORUN_PERIOD_NS);
	within("stamps stay within the cap", (double)c->n, CORUN_MAX_STAMPS / 2, CORUN_MAX_STAMPS);
	within("the period grew", (double)c->period, 2.0 * CORUN_PERIOD_NS, 1e12);
	within("first stamp kept", (double)(c->wall[0] - first), 0, 0);
	within("last stamp kept", (double)(c->wall[c->n - 1] - last), 0, 0);
	free(c);

	printf("corun: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
