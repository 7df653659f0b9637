/* Did the threads of a run really run at the same time? A contention number is only one when they
 * did: two threads that take turns on a CPU (another process on it, an unpinned or oversubscribed
 * placement) measure hand-offs through the cache, not contention. Every ~250 µs each thread stamps
 * the wall clock and its own CPU time (CLOCK_THREAD_CPUTIME_ID); between two stamps it ran for the
 * CPU time it gained. corun_pct is the expected share of the run's span (release → last thread done)
 * during which every thread was running, taking each thread's running time as spread evenly inside
 * each interval and independent of the others'. With one thread: the share of the span it ran.
 * A hypervisor that deschedules a vCPU is seen only where the guest kernel accounts it as steal. */
#ifndef PROBES_CORUN_H
#define PROBES_CORUN_H

#include "arch.h"

#include <stdint.h>

/* 250 µs between stamps: one CPU-time read (a system call, ~0.5-1 µs on a VM) per period costs
 * < 0.5%; the wall clock (vDSO, ~25-45 ns) is read once per batch of work. */
#define CORUN_PERIOD_NS 250000ull
/* At most this many stamps per thread; when full, every other one is dropped and the period doubles. */
#define CORUN_MAX_STAMPS 4096

struct corun {
	uint64_t wall[CORUN_MAX_STAMPS], cpu[CORUN_MAX_STAMPS];  /* ns at each stamp */
	uint64_t n, period, next;
};

/* Called by the thread itself: before its first batch, after every batch, after its last. */
void corun_begin(struct corun *c);
void corun_stamp(struct corun *c, uint64_t now);
void corun_end(struct corun *c);

static inline void corun_batch_done(struct corun *c)
{
	uint64_t t = now_ns();
	if (t >= c->next)
		corun_stamp(c, t);
}

/* Percent of [t0, t_end] during which all n threads were running, as described above. */
double corun_pct(const struct corun *const *threads, int n, uint64_t t0, uint64_t t_end);

#endif
