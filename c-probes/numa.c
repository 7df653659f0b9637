/* NUMA nodes, node-bound memory and page placement (see numa.h). */
#define _GNU_SOURCE
#include "numa.h"
#include "cli.h"
#include "pin.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NODE_SYS "/sys/devices/system/node"
#define HUGE_ALIGN (2ul << 20)
#define PROBES_MPOL_BIND 2
#define PROBES_MPOL_F_NODE (1 << 0)
#define PROBES_MPOL_F_ADDR (1 << 1)

/* First line of a small sysfs file into buf without its newline; 0 on success. */
static int read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)n, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

int node_list(const char *what, int *nodes, int max)
{
	char path[256], buf[4096];
	snprintf(path, sizeof path, NODE_SYS "/%s", what);
	if (read_line(path, buf, sizeof buf))
		return 0;
	if (!buf[0])  /* e.g. has_cpu on a memory-only host part: an empty list */
		return 0;
	int n = parse_cpu_list(buf, nodes, max);  /* node lists use the CPU list syntax */
	return n < 0 ? 0 : n;
}

int node_exists(int node)
{
	char path[256];
	snprintf(path, sizeof path, NODE_SYS "/node%d", node);
	return node >= 0 && node < MAX_NODES && access(path, F_OK) == 0;
}

int node_usable_cpus(int node, int *cpus, int max)
{
	static int all[MAX_CPUS], mine[MAX_CPUS];
	char path[256], buf[4096];
	snprintf(path, sizeof path, NODE_SYS "/node%d/cpulist", node);
	if (read_line(path, buf, sizeof buf) || !buf[0])
		return 0;
	int n = parse_cpu_list(buf, mine, MAX_CPUS), na = usable_cpus(all, MAX_CPUS), m = 0;
	for (int i = 0; i < n && m < max; i++)
		for (int j = 0; j < na; j++)
			if (all[j] == mine[i]) {
				cpus[m++] = mine[i];
				break;
			}
	return m;
}

unsigned long long node_free_bytes(int node)
{
	char path[256], line[256];
	snprintf(path, sizeof path, NODE_SYS "/node%d/meminfo", node);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	unsigned long long kb = 0;
	while (fgets(line, sizeof line, f)) {
		char *p = strstr(line, "MemFree:");
		if (p) {
			kb = strtoull(p + 8, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb * 1024;
}

int bind_to_node(void *p, size_t size, int node)
{
	if (node < 0 || node >= MAX_NODES)
		return EINVAL;
	unsigned long mask[MAX_NODES / (8 * sizeof(unsigned long))] = {0};
	mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
	return syscall(SYS_mbind, p, size, PROBES_MPOL_BIND, mask, (unsigned long)MAX_NODES, 0u) ? errno : 0;
}

void *alloc_on_node(size_t size, int node, int huge)
{
	/* Over-allocate and trim, so the mapping starts on a 2 MiB boundary: THP needs it. */
	size_t span = size + HUGE_ALIGN;
	char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		fail("mmap of %zu bytes failed: %s", span, strerror(errno));
	char *p = (char *)(((uintptr_t)raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	if (raw + span > p + size)
		munmap(p + size, (size_t)(raw + span - (p + size)));
	/* A refusal is not fatal: the probe reports which pages were huge. */
	if (huge)
		(void)madvise(p, size, MADV_HUGEPAGE);
	if (node >= 0) {
		int e = bind_to_node(p, size, node);
		if (e)
			fail("mbind to NUMA node %d refused: %s", node, strerror(e));
	}
	return p;
}

void free_aligned(void *p, size_t size)
{
	munmap(p, size);
}

int sample_nodes(const void *p, size_t size, int nsample, int *counts, int ncounts)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = size / page;
	if (pages == 0 || nsample <= 0)
		return 0;
	if ((size_t)nsample > pages)
		nsample = (int)pages;
	void **addr = calloc((size_t)nsample, sizeof *addr);
	int *status = calloc((size_t)nsample, sizeof *status);
	if (!addr || !status)
		fail("out of memory");
	for (int i = 0; i < nsample; i++)
		addr[i] = (char *)p + (pages * (size_t)i / (size_t)nsample) * page;
	/* nodes == NULL: move_pages moves nothing, it only reports each page's node in status. */
	int ok = syscall(SYS_move_pages, 0, (unsigned long)nsample, addr, NULL, status, 0) == 0;
	int known = 0;
	for (int i = 0; i < nsample; i++) {
		int node = status[i];
		if (!ok) {
			node = -1;
			if (syscall(SYS_get_mempolicy, &node, NULL, 0ul, addr[i],
				    PROBES_MPOL_F_NODE | PROBES_MPOL_F_ADDR))
				node = -1;
		}
		if (node >= 0 && node < ncounts) {
			counts[node]++;
			known++;
		}
	}
	free(addr);
	free(status);
	return known;
}

long long huge_bytes(const void *p, size_t size)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	uintptr_t lo = (uintptr_t)p, hi = lo + size;
	int inside = 0;
	long long total = 0;
	char line[512];
	while (fgets(line, sizeof line, f)) {
		unsigned long a, b;
		unsigned long long kb;
		/* A mapping's header line: "start-end perms …"; its fields follow until the next one. */
		if (sscanf(line, "%lx-%lx ", &a, &b) == 2 && strchr(line, '-') < strchr(line, ' '))
			inside = a < hi && b > lo;
		else if (inside && sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			total += (long long)kb * 1024;
	}
	fclose(f);
	return total;
}

/* "32768K", "2M", "512" → bytes. */
static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end == 'K')
		v <<= 10;
	else if (*end == 'M')
		v <<= 20;
	else if (*end == 'G')
		v <<= 30;
	return v;
}

unsigned long long llc_bytes(int cpu)
{
	unsigned long long best = 0;
	int best_level = 0;
	for (int i = 0; i < 16; i++) {
		char path[256], type[64], level[16], size[64];
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/type", cpu, i);
		if (read_line(path, type, sizeof type))
			break;
		if (strcmp(type, "Instruction") == 0)
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/level", cpu, i);
		if (read_line(path, level, sizeof level))
			continue;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu, i);
		if (read_line(path, size, sizeof size))
			continue;
		int l = atoi(level);
		if (l > best_level) {
			best_level = l;
			best = parse_size(size);
		}
	}
	return best;
}
