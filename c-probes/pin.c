#define _GNU_SOURCE
#include "pin.h"
#include "cli.h"
#include "numa.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int parse_cpu_list(const char *s, int *cpus, int max)
{
	int n = 0;
	const char *p = s;
	if (!s || !*s)
		return -1;
	for (;;) {
		char *end;
		if (*p < '0' || *p > '9')
			return -1;
		long lo = strtol(p, &end, 10), hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return -1;
			hi = strtol(p, &end, 10);
			p = end;
		}
		if (lo > hi || hi >= MAX_CPUS)
			return -1;
		for (long c = lo; c <= hi; c++) {
			if (n == max)
				return -1;
			for (int i = 0; i < n; i++)
				if (cpus[i] == c)
					return -1;
			cpus[n++] = (int)c;
		}
		if (*p == '\0')
			return n;
		if (*p++ != ',')
			return -1;
	}
}

/* The kernel's own list of online CPUs; falls back to "all configured" without sysfs. */
static int online_cpus(int *cpus, int max)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	if (f) {
		int n = -1;
		if (fgets(buf, sizeof buf, f)) {
			buf[strcspn(buf, "\n")] = 0;
			n = parse_cpu_list(buf, cpus, max);
		}
		fclose(f);
		if (n > 0)
			return n;
	}
	long conf = sysconf(_SC_NPROCESSORS_CONF);
	int n = 0;
	for (long c = 0; c < conf && n < max; c++)
		cpus[n++] = (int)c;
	return n;
}

int usable_cpus(int *cpus, int max)
{
	static int online[MAX_CPUS];
	cpu_set_t allowed;
	int n = online_cpus(online, MAX_CPUS), m = 0;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		CPU_ZERO(&allowed);
	for (int i = 0; i < n && m < max; i++)
		if (online[i] < CPU_SETSIZE && CPU_ISSET(online[i], &allowed))
			cpus[m++] = online[i];
	return m;
}

void check_cpus_usable(const int *cpus, int n)
{
	static int online[MAX_CPUS];
	int non = online_cpus(online, MAX_CPUS);
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		fail("sched_getaffinity failed");
	for (int i = 0; i < n; i++) {
		int ok = 0;
		for (int j = 0; j < non; j++)
			ok |= online[j] == cpus[i];
		if (!ok)
			bad_input("CPU %d is not online", cpus[i]);
		if (cpus[i] >= CPU_SETSIZE || !CPU_ISSET(cpus[i], &allowed))
			bad_input("CPU %d is online but not in this process's affinity mask "
				  "(cpuset or taskset)", cpus[i]);
	}
}

int pin_self(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int cpu_node(int cpu)
{
	char path[64];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d", cpu);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int node = -1;
	for (struct dirent *e; (e = readdir(d));) {
		if (strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') {
			node = atoi(e->d_name + 4);
			break;
		}
	}
	closedir(d);
	return node;
}

void *alloc_lines(size_t size, int node, int *bound)
{
	*bound = 0;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		fail("mmap of %zu bytes failed", size);
	/* Before the first touch, so the pages are born on the node. */
	if (node >= 0)
		*bound = bind_to_node(p, size, node) == 0;
	memset(p, 0, size);
	return p;
}

void free_lines(void *p, size_t size)
{
	munmap(p, size);
}

int cpus_or_all(int *cpus, int n, int max)
{
	if (!n)
		return usable_cpus(cpus, max);
	check_cpus_usable(cpus, n);
	return n;
}
