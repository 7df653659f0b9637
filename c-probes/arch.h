/* The two machine-level primitives every probe shares: a monotonic clock and a spin hint. */
#ifndef PROBES_ARCH_H
#define PROBES_ARCH_H

#include <stdint.h>
#include <time.h>

/* 128 B, not 64: Intel's adjacent-line prefetcher pulls lines in pairs, so two hot
 * variables 64 B apart still interfere (the same reason crossbeam's CachePadded is 128 B). */
#define LINE 128

/* CLOCK_MONOTONIC through the vDSO: ~20-50 ns a call, so it is read once per batch of
 * round trips, never per operation. Portable (x86, arm64), no invariant-TSC assumption. */
static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tell the core we are spinning: frees the sibling hyperthread's resources and avoids the
 * memory-order mis-speculation flush when the awaited line finally changes. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif
