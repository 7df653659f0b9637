/* ran-on.csv: the CPUs threads ran on and the node of their memory (see ranon.h). */
#define _GNU_SOURCE
#include "ranon.h"
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *dir;
static int dir_set;

void ran_on_dir(const char *d)
{
	dir = d;
	dir_set = 1;
}

/* Raw syscall, as mbind in pin.c: libnuma need not be installed. */
#define PROBES_MPOL_F_NODE (1 << 0)
#define PROBES_MPOL_F_ADDR (1 << 1)

int page_node(const void *addr)
{
	int node = -1;
	if (syscall(SYS_get_mempolicy, &node, NULL, 0ul, addr, PROBES_MPOL_F_NODE | PROBES_MPOL_F_ADDR))
		return -1;
	return node;
}

void cpu_list_str(char *buf, unsigned long n, const int *cpus, int nc)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < nc && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? "," : "", cpus[i]);
}

void ran_on_note(const char *probe, const char *variant, const char *cpus, int thread,
		 int pinned_to, int first_cpu, int last_cpu, int mem_node)
{
	ran_on_note_want(probe, variant, cpus, thread, pinned_to, first_cpu, last_cpu, mem_node, -1);
}

void ran_on_note_want(const char *probe, const char *variant, const char *cpus, int thread,
		      int pinned_to, int first_cpu, int last_cpu, int mem_node, int mem_want)
{
	const char *d = dir_set ? dir : getenv("LAB_RAW");
	if (!d || !*d)
		return;
	char path[4096];
	snprintf(path, sizeof path, "%s/ran-on.csv", d);
	struct stat st;
	int fresh = stat(path, &st) != 0 || st.st_size == 0;
	FILE *f = fopen(path, "a");
	if (!f)
		fail("cannot write %s: %s", path, strerror(errno));
	if (fresh)
		fprintf(f, "probe,variant,cpus,thread,pinned_to,first_cpu,last_cpu,mem_node,mem_want\n");
	fprintf(f, "%s,%s,\"%s\",%d,%d,%d,%d,%d,%d\n", probe, variant, cpus, thread, pinned_to,
		first_cpu, last_cpu, mem_node, mem_want);
	if (fclose(f))
		fail("cannot write %s", path);
}
