/* NUMA nodes as the kernel shows them, memory bound to a node, and where pages really are.
 * Raw syscalls only (mbind, move_pages, get_mempolicy): libnuma need not be installed. */
#ifndef PROBES_NUMA_H
#define PROBES_NUMA_H

#include <stddef.h>

#define MAX_NODES 1024

/* Nodes listed in /sys/devices/system/node/<what> ("online", "has_cpu", "has_memory"), ascending;
 * returns the count, 0 when the kernel shows no node (no NUMA support: callers treat it as node 0). */
int node_list(const char *what, int *nodes, int max);

/* 1 when /sys/devices/system/node/node<n> exists. */
int node_exists(int node);

/* The CPUs of a node that this process may run on (online and in its affinity mask); the count. */
int node_usable_cpus(int node, int *cpus, int max);

/* MemFree of a node in bytes from its meminfo, 0 when unreadable. */
unsigned long long node_free_bytes(int node);

/* mbind(MPOL_BIND, node) over [p, p + size): 0 or an errno. Call before the first touch. */
int bind_to_node(void *p, size_t size, int node);

/* size bytes of anonymous memory aligned to 2 MiB (so transparent huge pages can back it), with
 * MADV_HUGEPAGE when huge, bound to node when node >= 0 (fail() when the binding is refused),
 * not yet touched. Free with free_aligned. */
void *alloc_on_node(size_t size, int node, int huge);
void free_aligned(void *p, size_t size);

/* Where sampled pages of [p, p + size) are: up to nsample pages evenly spread, asked with
 * move_pages (get_mempolicy per page where move_pages is missing). counts[node] += 1 per page;
 * returns the number of pages whose node was known. */
int sample_nodes(const void *p, size_t size, int nsample, int *counts, int ncounts);

/* Bytes of [p, p + size) backed by transparent huge pages (AnonHugePages in /proc/self/smaps),
 * -1 when smaps cannot be read. */
long long huge_bytes(const void *p, size_t size);

/* Size in bytes of the largest (last-level) data or unified cache CPU cpu sees, 0 when unknown. */
unsigned long long llc_bytes(int cpu);

#endif
