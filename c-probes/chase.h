/* A dependent pointer chase: every load's address is the previous load's value, so loads cannot
 * overlap and the time per load is the memory's latency. The order is one random cycle through
 * every line of the region (Sattolo's algorithm), which leaves the prefetchers nothing to predict. */
#ifndef PROBES_CHASE_H
#define PROBES_CHASE_H

#include <stddef.h>
#include <stdint.h>

#define CHASE_STRIDE 64  /* one pointer per 64-B cache line */

/* Link the first `lines` lines of region (lines × CHASE_STRIDE bytes) into one random cycle; writes
 * the lines in ascending address order (the first touch). Returns the line the chase starts from.
 * seed makes the order reproducible. fail()s when the index array cannot be allocated. */
void *chase_build(void *region, size_t lines, uint64_t seed);

/* Follow n links from p; returns where it ended (pass it back in to continue). */
void *chase_run(void *p, uint64_t n);

#endif
