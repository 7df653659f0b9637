/* CPUs: parsing lists, checking that they can be used, pinning threads, node-local memory. */
#ifndef PROBES_PIN_H
#define PROBES_PIN_H

#include <stddef.h>

#define MAX_CPUS 4096

/* "0-3,8" → cpus[]; returns the count, or -1 on a syntax error (duplicates are an error too). */
int parse_cpu_list(const char *s, int *cpus, int max);

/* bad_input unless every CPU is online and in this process's affinity mask. */
void check_cpus_usable(const int *cpus, int n);

/* Every online CPU this process may run on, ascending; returns the count. */
int usable_cpus(int *cpus, int max);

/* The n CPUs given (checked as above) or, when n is 0, every usable CPU into cpus[]; returns the count. */
int cpus_or_all(int *cpus, int n, int max);

/* Pin the calling thread to one CPU; 0 or an errno. */
int pin_self(int cpu);

/* NUMA node of a CPU from sysfs, -1 when the kernel shows none. */
int cpu_node(int cpu);

/* size bytes, page-aligned (so 128-B aligned), zeroed, bound to node when node >= 0 and
 * mbind works; *bound says whether it was. Free with free_lines. */
void *alloc_lines(size_t size, int node, int *bound);
void free_lines(void *p, size_t size);

#endif
