/* The random cyclic pointer chain of the memory probe (see chase.h). */
#include "chase.h"
#include "cli.h"

#include <stdlib.h>

/* splitmix64: small, fast, good enough to shuffle; reproducible from its seed. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void *chase_build(void *region, size_t lines, uint64_t seed)
{
	char *base = region;
	if (lines < 2) {  /* a line that points to itself */
		*(void **)base = base;
		return base;
	}
	if (lines > UINT32_MAX)
		fail("chase over %zu lines: more than 2^32", lines);
	uint32_t *next = malloc(lines * sizeof *next);
	if (!next)
		fail("out of memory for a %zu-line chain", lines);
	for (size_t i = 0; i < lines; i++)
		next[i] = (uint32_t)i;
	/* Sattolo: swapping i only with j < i makes one cycle through all lines, never a shorter loop
	 * the chase could get caught in (a plain Fisher-Yates shuffle would allow those). */
	for (size_t i = lines - 1; i > 0; i--) {
		size_t j = (size_t)(((unsigned __int128)next_random(&seed) * i) >> 64);
		uint32_t t = next[i];
		next[i] = next[j];
		next[j] = t;
	}
	for (size_t i = 0; i < lines; i++)
		*(void **)(base + i * CHASE_STRIDE) = base + (size_t)next[i] * CHASE_STRIDE;
	free(next);
	return base;
}

void *chase_run(void *p, uint64_t n)
{
	/* volatile: each load must happen, in order, and depend on the one before. */
	void *volatile *q = p;
	for (uint64_t i = 0; i < n; i++)
		q = (void *volatile *)*q;
	return (void *)q;
}
