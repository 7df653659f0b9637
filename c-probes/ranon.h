/* Where the threads of a probe actually ran and where its memory lives, checked from inside:
 * one CSV line per thread into DIR/ran-on.csv (DIR = --raw or $LAB_RAW; nothing when unset).
 * Columns: probe,variant,cpus,thread,pinned_to,first_cpu,last_cpu,mem_node,mem_want
 * (pinned_to -1 = unbound; first/last = sched_getcpu after pinning and at the end;
 * mem_node = NUMA node of the thread's hot data, -1 when the kernel does not say;
 * mem_want = the node the probe itself bound that data to, -1 when it bound none: then only
 * the placement's membind says where it should be). */
#ifndef PROBES_RANON_H
#define PROBES_RANON_H

/* The directory to write into; NULL or "" = do not record. Default: $LAB_RAW. */
void ran_on_dir(const char *dir);

/* NUMA node of the page holding addr (get_mempolicy MPOL_F_NODE|MPOL_F_ADDR), -1 if unknown. */
int page_node(const void *addr);

/* "0,2,5" from a CPU array (no ranges: exactly what the threads were given). */
void cpu_list_str(char *buf, unsigned long n, const int *cpus, int nc);

void ran_on_note(const char *probe, const char *variant, const char *cpus, int thread,
		 int pinned_to, int first_cpu, int last_cpu, int mem_node);
/* The same, for data the probe bound to node mem_want itself. */
void ran_on_note_want(const char *probe, const char *variant, const char *cpus, int thread,
		      int pinned_to, int first_cpu, int last_cpu, int mem_node, int mem_want);

#endif
