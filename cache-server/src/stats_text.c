/* The `stats` and `stats numa` replies: the workers' counters summed (stats.c), the clock, the memory in
 * use and the lock mode, in memcached's names and order, then our contention counters. Apart from
 * stats.c, whose counters conn.c bumps, because this writes into a connection's reply. */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include "cache.h"

static void stat_u64(conn *c, const char *name, uint64_t v)
{
    char buf[128];
    int n = snprintf(buf, sizeof(buf), "STAT %s %llu\r\n", name, (unsigned long long)v);
    out_bytes(c, buf, (size_t)n);
}

static void stat_str(conn *c, const char *name, const char *v)
{
    char buf[160];
    int n = snprintf(buf, sizeof(buf), "STAT %s %s\r\n", name, v);
    out_bytes(c, buf, (size_t)n);
}

static void stat_secs(conn *c, const char *name, uint64_t ns)
{
    char buf[128];
    int n = snprintf(buf, sizeof(buf), "STAT %s %llu.%06llu\r\n", name,
                     (unsigned long long)(ns / 1000000000u),
                     (unsigned long long)(ns % 1000000000u / 1000u));
    out_bytes(c, buf, (size_t)n);
}

void stats_write(conn *c)
{
    struct thread_stats s;
    struct rusage ru;
    stats_aggregate(&s);
    getrusage(RUSAGE_SELF, &ru);
    rel_time_t now = LOAD(current_time);
    stat_u64(c, "pid", (uint64_t)getpid());
    stat_u64(c, "uptime", now - ITEM_UPDATE_INTERVAL - 2);
    stat_u64(c, "time", (uint64_t)(process_started + now));
    stat_str(c, "version", CACHE_VERSION);
    stat_u64(c, "pointer_size", 8 * sizeof(void *));
    stat_secs(c, "rusage_user", (uint64_t)ru.ru_utime.tv_sec * 1000000000u + (uint64_t)ru.ru_utime.tv_usec * 1000u);
    stat_secs(c, "rusage_system", (uint64_t)ru.ru_stime.tv_sec * 1000000000u + (uint64_t)ru.ru_stime.tv_usec * 1000u);
    stat_u64(c, "max_connections", (uint64_t)settings.maxconns);
    stat_u64(c, "curr_connections", LOAD(stat_curr_conns));
    stat_u64(c, "total_connections", LOAD(stat_total_conns));
    stat_u64(c, "rejected_connections", LOAD(stat_rejected_conns));
    stat_u64(c, "cmd_get", s.cmd_get);
    stat_u64(c, "cmd_set", s.cmd_set);
    stat_u64(c, "cmd_flush", s.cmd_flush);
    stat_u64(c, "cmd_touch", s.cmd_touch);
    stat_u64(c, "get_hits", s.get_hits);
    stat_u64(c, "get_misses", s.get_misses);
    stat_u64(c, "get_expired", s.get_expired);
    stat_u64(c, "get_flushed", s.get_flushed);
    stat_u64(c, "delete_misses", s.delete_misses);
    stat_u64(c, "delete_hits", s.delete_hits);
    stat_u64(c, "incr_misses", s.incr_misses);
    stat_u64(c, "incr_hits", s.incr_hits);
    stat_u64(c, "decr_misses", s.decr_misses);
    stat_u64(c, "decr_hits", s.decr_hits);
    stat_u64(c, "cas_misses", s.cas_misses);
    stat_u64(c, "cas_hits", s.cas_hits);
    stat_u64(c, "cas_badval", s.cas_badval);
    stat_u64(c, "touch_hits", s.touch_hits);
    stat_u64(c, "touch_misses", s.touch_misses);
    stat_u64(c, "bytes_read", s.bytes_read);
    stat_u64(c, "bytes_written", s.bytes_written);
    stat_u64(c, "limit_maxbytes", settings.maxbytes);
    stat_u64(c, "threads", (uint64_t)settings.nthreads);
    stat_u64(c, "bytes", item_mem_used());
    stat_u64(c, "curr_items", s.curr_items);
    stat_u64(c, "total_items", s.total_items);
    stat_u64(c, "expired_unfetched", s.expired_unfetched);
    stat_u64(c, "evictions", s.evictions);
    /* contention counters of the lock mode: acquisitions, those that had to wait, time waited */
    stat_str(c, "lock_mode", locks_mode_name(settings.lock_mode));
    stat_str(c, "io_backend", io_backend_name(settings.io_backend));
    stat_u64(c, "lock_acquires", s.lock_acquires);
    stat_u64(c, "lock_waits", s.lock_waits);
    stat_secs(c, "lock_wait_time", s.lock_wait_ns);
    stat_u64(c, "lru_lock_acquires", s.lru_acquires);
    stat_u64(c, "lru_lock_waits", s.lru_waits);
    stat_secs(c, "lru_lock_wait_time", s.lru_wait_ns);
    stat_u64(c, "shard_rpc_calls", s.rpc_calls);
    stat_secs(c, "shard_rpc_wait_time", s.rpc_wait_ns);
    stat_u64(c, "shard_rpc_served", s.rpc_served);
    out_bytes(c, "END\r\n", 5);
}

/* one node's share of a memory kind: only nodes that hold a sampled page get a line */
static void numa_lines(conn *c, const char *kind, const int *counts, int pages)
{
    char name[64];
    snprintf(name, sizeof(name), "numa_%s_pages", kind);
    stat_u64(c, name, (uint64_t)pages);
    for (int n = 0; n < NUMA_MAX_NODES; n++)
        if (counts[n] > 0) {
            snprintf(name, sizeof(name), "numa_%s_pages_node%d", kind, n);
            stat_u64(c, name, (uint64_t)counts[n]);
        }
}

/* `stats numa`: the NUMA nodes of the item memory (pages of the last items each thread allocated,
 * numa.c) and of the asking connection's buffers (allocated by its worker as every connection's
 * are). `pages` counts distinct pages asked about; a page the kernel could not place (unmapped, or
 * move_pages and get_mempolicy refused) is in no node line. */
void stats_numa_write(conn *c)
{
    int items[NUMA_MAX_NODES] = {0}, conns[NUMA_MAX_NODES] = {0}, pages = 0;
    numa_item_nodes(items, NUMA_MAX_NODES, &pages);
    numa_lines(c, "item", items, pages);
    const void *bufs[] = { c, c->rbuf, c->wbuf, c->segs };
    numa_pages_nodes(bufs, 4, conns, NUMA_MAX_NODES, &pages);
    numa_lines(c, "conn", conns, pages);
    out_bytes(c, "END\r\n", 5);
}
