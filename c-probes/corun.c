/* corun_pct: the share of a run during which every thread ran (see corun.h). */
#include "corun.h"
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		fail("cannot read the thread's CPU time");
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void record(struct corun *c, uint64_t wall, uint64_t cpu)
{
	if (c->n == CORUN_MAX_STAMPS) {  /* keep stamps 0, 2, 4, …: the intervals merge, sums stay exact */
		for (uint64_t k = 1; 2 * k < c->n; k++)
			c->wall[k] = c->wall[2 * k], c->cpu[k] = c->cpu[2 * k];
		c->n = (c->n + 1) / 2;
		c->period *= 2;
	}
	c->wall[c->n] = wall, c->cpu[c->n] = cpu;
	c->n++;
	c->next = wall + c->period;
}

void corun_begin(struct corun *c)
{
	c->n = 0;
	c->period = CORUN_PERIOD_NS;
	record(c, now_ns(), thread_cpu_ns());
}

void corun_stamp(struct corun *c, uint64_t now)
{
	record(c, now, thread_cpu_ns());
}

void corun_end(struct corun *c)
{
	record(c, now_ns(), thread_cpu_ns());
}

/* A change of one thread's running fraction at time t. */
struct event {
	uint64_t t;
	int thread;
	double f;
};

static int cmp_event(const void *a, const void *b)
{
	const struct event *x = a, *y = b;
	return (x->t > y->t) - (x->t < y->t);
}

double corun_pct(const struct corun *const *threads, int n, uint64_t t0, uint64_t t_end)
{
	if (t_end <= t0 || n <= 0)
		return 0.0;
	uint64_t total = 0;
	for (int i = 0; i < n; i++)
		total += threads[i]->n;
	struct event *ev = malloc((total + 1) * sizeof *ev);
	double *f = calloc((size_t)n, sizeof *f);
	if (!ev || !f)
		fail("out of memory");
	uint64_t ne = 0;
	for (int i = 0; i < n; i++) {
		const struct corun *c = threads[i];
		/* From each stamp on, the fraction of the next interval the thread ran; 0 after its last. */
		for (uint64_t k = 0; k < c->n; k++) {
			double frac = 0.0;
			if (k + 1 < c->n && c->wall[k + 1] > c->wall[k]) {
				double wall = (double)(c->wall[k + 1] - c->wall[k]);
				double cpu = (double)(c->cpu[k + 1] - c->cpu[k]);
				frac = cpu >= wall ? 1.0 : cpu / wall;
			}
			ev[ne++] = (struct event){c->wall[k], i, frac};
		}
	}
	qsort(ev, ne, sizeof *ev, cmp_event);
	/* Before its first stamp a thread has not started: fraction 0. The product over threads is
	 * kept as a count of zero factors and a sum of logs of the others. */
	int zeros = n;
	double logs = 0.0, all = 0.0;
	uint64_t since = t0;
	for (uint64_t k = 0; k <= ne; k++) {
		uint64_t t = k < ne ? ev[k].t : t_end;
		if (t > t_end)
			t = t_end;
		if (t > since && !zeros)
			all += exp(logs) * (double)(t - since);
		if (t > since)
			since = t;
		if (k == ne)
			break;
		int i = ev[k].thread;
		double was = f[i], now = ev[k].f;
		if (was > 0)
			logs -= log(was);
		else
			zeros--;
		if (now > 0)
			logs += log(now);
		else
			zeros++;
		f[i] = now;
	}
	free(ev);
	free(f);
	double pct = 100.0 * all / (double)(t_end - t0);
	return pct > 100.0 ? 100.0 : pct;
}
