/* A bounded single-producer single-consumer ring with a sequence stamp per slot: the slot
 * protocol of crossbeam's array channel (Vyukov's bounded queue), which is what seed 004 ran.
 * Both sides write every slot (the producer its message and stamp, the consumer the stamp that
 * frees it), so slots that share a cache line bounce between the two cores: that is the cost
 * the padded layout removes. head and tail are always on lines of their own. */
#ifndef PROBES_RING_H
#define PROBES_RING_H

#include "arch.h"

#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct slot {
	_Atomic uint64_t stamp;  /* == index: free for the producer; == index + 1: full */
	uint64_t msg;
};

struct ring {
	_Alignas(LINE) _Atomic uint64_t head;  /* next index to pop; written by the consumer only */
	_Alignas(LINE) _Atomic uint64_t tail;  /* next index to push; written by the producer only */
	_Alignas(LINE) char *slots;            /* read-only after ring_init */
	size_t stride;                         /* sizeof(struct slot), or LINE when padded */
	uint64_t cap, mask;
};

/* cap must be a power of two >= 2; 0 on success, -1 on a bad size or no memory. */
int ring_init(struct ring *r, uint64_t cap, int padded);
void ring_free(struct ring *r);

/* Spin briefly, then yield: a waiting side must not starve the other on a shared CPU
 * (unpinned threads, more stages than CPUs). The same policy as crossbeam's Backoff. */
static inline void backoff(unsigned *step)
{
	if (*step < 7) {
		for (unsigned i = 0; i < 1u << *step; i++)
			cpu_relax();
		++*step;
	} else {
		sched_yield();
	}
}

static inline struct slot *ring_slot(struct ring *r, uint64_t i)
{
	return (struct slot *)(r->slots + (i & r->mask) * r->stride);
}

static inline void ring_push(struct ring *r, uint64_t msg)
{
	uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	struct slot *s = ring_slot(r, t);
	unsigned step = 0;
	while (atomic_load_explicit(&s->stamp, memory_order_acquire) != t)
		backoff(&step);
	s->msg = msg;
	atomic_store_explicit(&s->stamp, t + 1, memory_order_release);
	atomic_store_explicit(&r->tail, t + 1, memory_order_relaxed);
}

static inline uint64_t ring_pop(struct ring *r)
{
	uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	struct slot *s = ring_slot(r, h);
	unsigned step = 0;
	while (atomic_load_explicit(&s->stamp, memory_order_acquire) != h + 1)
		backoff(&step);
	uint64_t msg = s->msg;
	atomic_store_explicit(&s->stamp, h + r->cap, memory_order_release);
	atomic_store_explicit(&r->head, h + 1, memory_order_relaxed);
	return msg;
}

#endif
