#define _POSIX_C_SOURCE 200809L  /* posix_memalign, clock_gettime under -std=c11 */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

int ring_init(struct ring *r, uint64_t cap, int padded)
{
	/* cap 1 would make "full of i" (i + 1) equal "free for i + 1": Vyukov's protocol needs >= 2. */
	if (cap < 2 || (cap & (cap - 1)) || cap > (1ull << 30))
		return -1;
	memset(r, 0, sizeof *r);
	r->stride = padded ? LINE : sizeof(struct slot);
	r->cap = cap;
	r->mask = cap - 1;
	/* LINE-aligned in both layouts, so the only difference is the stride. */
	if (posix_memalign((void **)&r->slots, LINE, cap * r->stride))
		return -1;
	memset(r->slots, 0, cap * r->stride);
	for (uint64_t i = 0; i < cap; i++)
		atomic_init(&ring_slot(r, i)->stamp, i);
	return 0;
}

void ring_free(struct ring *r)
{
	free(r->slots);
	r->slots = NULL;
}
