/* Unit tests of chase.c: the chain is one cycle through every line, whatever the size. */
#include "chase.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed, checks;

static void expect(int ok, const char *what, size_t lines)
{
	checks++;
	if (!ok) {
		failed++;
		printf("FAIL %s (%zu lines)\n", what, lines);
	}
}

/* Follows the chain once around; 1 when it visits every line exactly once and returns. */
static int one_cycle(char *base, void *start, size_t lines)
{
	unsigned char *seen = calloc(lines, 1);
	void *p = start;
	int ok = 1;
	for (size_t i = 0; i < lines && ok; i++) {
		size_t off = (size_t)((char *)p - base);
		if (off % CHASE_STRIDE || off / CHASE_STRIDE >= lines || seen[off / CHASE_STRIDE])
			ok = 0;
		else
			seen[off / CHASE_STRIDE] = 1;
		p = chase_run(p, 1);
	}
	free(seen);
	return ok && p == start;
}

int main(void)
{
	size_t sizes[] = {1, 2, 3, 7, 64, 1000, 65536};
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
		size_t lines = sizes[s];
		char *base = aligned_alloc(CHASE_STRIDE, lines * CHASE_STRIDE);
		void *start = chase_build(base, lines, 42);
		expect(one_cycle(base, start, lines), "one cycle through every line", lines);
		expect(chase_run(start, lines) == start, "chase_run(lines) comes back", lines);
		if (lines >= 2) {
			size_t self = 0, next_door = 0;
			for (size_t i = 0; i < lines; i++) {
				char *to = *(char **)(base + i * CHASE_STRIDE);
				self += to == base + i * CHASE_STRIDE;
				next_door += to == base + (i + 1) * CHASE_STRIDE;
			}
			expect(self == 0, "no line points to itself", lines);
			/* A sequential chain would let the prefetchers win: a random one is rarely in order. */
			if (lines >= 1000)
				expect(next_door < lines / 100, "under 1% of links go to the next line", lines);
		}
		free(base);
	}
	/* The same seed gives the same order (so two runs chase the same path), another seed another. */
	size_t n = 4096;
	char *a = aligned_alloc(CHASE_STRIDE, n * CHASE_STRIDE), *b = aligned_alloc(CHASE_STRIDE, n * CHASE_STRIDE);
	chase_build(a, n, 7);
	chase_build(b, n, 7);
	int same = 1;
	for (size_t i = 0; i < n; i++)
		same &= *(char **)(a + i * CHASE_STRIDE) - a == *(char **)(b + i * CHASE_STRIDE) - b;
	expect(same, "same seed, same chain", n);
	chase_build(b, n, 8);
	same = 1;
	for (size_t i = 0; i < n; i++)
		same &= *(char **)(a + i * CHASE_STRIDE) - a == *(char **)(b + i * CHASE_STRIDE) - b;
	expect(!same, "another seed, another chain", n);
	free(a);
	free(b);
	printf("test_chase: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
