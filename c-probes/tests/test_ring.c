/* Unit tests of ring.h: every message arrives once and in order, for both layouts, tiny and
 * larger capacities, through two and three threads. Run under TSan by tests/run.sh. */
#define _GNU_SOURCE
#include "ring.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int failed, checks;
static uint64_t n_msgs = 1000000;

struct end {
	struct ring *in, *out;
	uint64_t bad_at, got;
};

static void *relay(void *arg)  /* consumer when out is NULL, producer when in is NULL */
{
	struct end *e = arg;
	e->bad_at = UINT64_MAX;
	for (uint64_t i = 0; i < n_msgs; i++) {
		uint64_t m = e->in ? ring_pop(e->in) : i * 3 + 1;  /* not the index: catches stale slots */
		if (e->in && m != i * 3 + 1 && e->bad_at == UINT64_MAX)
			e->bad_at = i;
		e->got += e->in != NULL;
		if (e->out)
			ring_push(e->out, m);
	}
	return NULL;
}

static void chain(int padded, uint64_t cap, int stages)
{
	struct ring r[2];
	struct end e[3] = {{0}};
	pthread_t t[3];
	for (int i = 0; i + 1 < stages; i++)
		if (ring_init(&r[i], cap, padded))
			abort();
	for (int i = 0; i < stages; i++) {
		e[i].in = i ? &r[i - 1] : NULL;
		e[i].out = i + 1 < stages ? &r[i] : NULL;
		pthread_create(&t[i], NULL, relay, &e[i]);
	}
	for (int i = 0; i < stages; i++)
		pthread_join(t[i], NULL);
	for (int i = 1; i < stages; i++) {
		checks++;
		if (e[i].bad_at != UINT64_MAX || e[i].got != n_msgs) {
			failed++;
			printf("FAIL %s cap=%llu stages=%d: stage %d got %llu, first wrong at %lld\n",
			       padded ? "padded" : "unpadded", (unsigned long long)cap, stages, i,
			       (unsigned long long)e[i].got, (long long)e[i].bad_at);
		}
	}
	checks++;
	if (ring_slot(&r[0], 0)->stamp % cap != 0 || r[0].head != n_msgs || r[0].tail != n_msgs)
		failed++, printf("FAIL ring state after the run\n");
	for (int i = 0; i + 1 < stages; i++)
		ring_free(&r[i]);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		n_msgs = strtoull(argv[1], NULL, 10);
	struct ring r;
	checks += 4;
	if (ring_init(&r, 0, 0) == 0) failed++, printf("FAIL capacity 0 accepted\n");
	if (ring_init(&r, 1, 0) == 0) failed++, printf("FAIL capacity 1 accepted\n");
	if (ring_init(&r, 3, 1) == 0) failed++, printf("FAIL capacity 3 accepted\n");
	if (ring_init(&r, 8, 1) != 0 || r.stride != LINE || (uintptr_t)r.slots % LINE)
		failed++, printf("FAIL padded slots not one per line\n");
	else
		ring_free(&r);

	checks++;  /* single-threaded: fill, drain, wrap around */
	ring_init(&r, 4, 0);
	for (uint64_t k = 0; k < 10; k++) {
		for (uint64_t i = 0; i < 4; i++)
			ring_push(&r, k * 4 + i);
		for (uint64_t i = 0; i < 4; i++)
			if (ring_pop(&r) != k * 4 + i) {
				failed++, printf("FAIL wrap-around order\n");
				k = 10;
				break;
			}
	}
	ring_free(&r);

	for (int padded = 0; padded < 2; padded++) {
		chain(padded, 2, 2);
		chain(padded, 64, 2);
		chain(padded, 8, 3);
	}
	printf("test_ring: %llu messages per chain, %d checks, %d failed\n",
	       (unsigned long long)n_msgs, checks, failed);
	return failed != 0;
}
