/* Shared declarations of the cache server: settings, items, connections, per-thread stats.
 * Layout follows memcached: one concern per file (items.c items, memory.c the -m budget, assoc.c
 * hash table, lru.c recency lists, locks.c lock modes, route.c where an operation runs, shard.c
 * messages between workers, proto.c text protocol, conn.c sockets, thread.c workers). Files call
 * only downwards: tests/callgraph.py checks that their dependency graph has no cycle. */
#ifndef CACHE_H
#define CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CACHE_VERSION "1.6.18"      /* the memcached release whose bytes we reproduce */
#define KEY_MAX_LENGTH 250
#define ITEM_UPDATE_INTERVAL 60     /* a GET moves an item in the LRU at most once a minute */
#define REALTIME_MAXDELTA (60 * 60 * 24 * 30)
#define NLRU 8                      /* LRU lists, chosen by hash: no single LRU lock is hot */
#define MAX_SHARDS 256              /* sharded mode: one LRU list per worker */

typedef uint32_t rel_time_t;

enum lock_mode { LM_GLOBAL, LM_STRIPED, LM_RWLOCK, LM_OPTIMISTIC, LM_SHARDED };
enum io_backend { IO_EPOLL, IO_URING };

struct settings {
    size_t maxbytes;           /* -m */
    size_t item_size_max;      /* -I */
    int port;                  /* -p */
    const char *addr;          /* -l */
    int nthreads;              /* -t */
    int maxconns;              /* -c */
    enum lock_mode lock_mode;  /* --lock-mode */
    enum io_backend io_backend; /* --io-backend */
    int verbose;
};
extern struct settings settings;
int io_backend_parse(const char *s, enum io_backend *out);
const char *io_backend_name(enum io_backend b);

/* relaxed atomics: counters and fields that one thread writes and others may read */
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define STORE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define BUMP(x, n) STORE(x, LOAD(x) + (n))   /* single writer: no locked instruction needed */

/* ---- clock (clock.c) ---- */
extern rel_time_t current_time;
extern time_t process_started;
void clock_init(void);
void clock_update(void);
rel_time_t realtime(long exptime);

/* ---- items (items.c) ---- */
typedef struct item {
    struct item *hnext;        /* hash chain, under the item lock */
    struct item *prev, *next;  /* LRU links, under the LRU lock */
    uint64_t cas;
    uint64_t retired;          /* optimistic mode: epoch ticket once retired (qsbr.c) */
    uint32_t hv;
    int32_t refcount;          /* atomic: the hash table holds one, each reader one */
    rel_time_t time;           /* last access, relaxed atomic */
    rel_time_t exptime;        /* relaxed atomic: touch changes it under the item lock */
    uint32_t flags;
    uint32_t nbytes;           /* value length including the trailing "\r\n" */
    uint32_t size;             /* bytes charged against -m */
    uint8_t nkey;
    uint8_t linked;            /* in hash + LRU; changes under item lock and LRU lock (lru.c) */
    uint8_t lru_id;
    char data[];               /* key, NUL, value */
} item;

#define ITEM_key(it) ((it)->data)
#define ITEM_data(it) ((it)->data + (it)->nkey + 1)

enum store_type { NREAD_SET, NREAD_ADD, NREAD_REPLACE, NREAD_APPEND, NREAD_PREPEND, NREAD_CAS };
enum store_result { STORED, NOT_STORED, EXISTS, NOT_FOUND, TOO_LARGE, NO_MEMORY };
enum delta_result { DELTA_OK, DELTA_NON_NUMERIC, DELTA_EOM, DELTA_NOT_FOUND };

item *item_alloc(const char *key, size_t nkey, uint32_t flags, rel_time_t exptime, size_t nbytes,
                 bool may_block);
bool item_size_ok(size_t nkey, size_t nbytes);
void item_flush(long exptime);

/* ---- the -m budget (memory.c): charged by item_alloc, uncharged by the last release ---- */
extern uint64_t mem_used;
extern uint64_t shard_used[MAX_SHARDS];   /* sharded mode: each owner's part of mem_used */
uint64_t item_mem_used(void);
void item_release(item *it);

/* ---- routing (route.c): the public operations, run here or by the key's owner ---- */
item *item_get(const char *key, size_t nkey, bool bump);
item *item_touch(const char *key, size_t nkey, rel_time_t exptime);
enum store_result item_store(item *it, enum store_type comm);
bool item_delete(const char *key, size_t nkey);
void item_unlink_key(const char *key, size_t nkey);
enum delta_result item_delta(const char *key, size_t nkey, bool incr, uint64_t delta, char *buf);

/* ---- freeing (qsbr.c): at once, or deferred for lock-free readers ---- */
void item_free_now(item *it);
void qsbr_register(void);
void qsbr_online(void);
void qsbr_offline(void);
void qsbr_quiescent(void);
void qsbr_retire(item *it);
size_t qsbr_pending(void);

/* ---- sharded mode (shard.c): the owner of a key runs every operation on it ---- */
enum rpc_kind { RPC_GET, RPC_TOUCH, RPC_STORE, RPC_DELETE, RPC_DELTA, RPC_TRIM };
struct rpc {
    enum rpc_kind kind;
    const char *key; size_t nkey;
    bool bump, incr, deleted;
    rel_time_t exptime;
    enum store_type comm;
    uint64_t amount;
    char *buf;
    item *it;
    enum store_result store;
    enum delta_result delta;
    int caller, done;
    struct rpc *next;
};
extern int nshards;
extern __thread int my_shard;
static inline int shard_of(uint32_t hv) { return (int)((hv & 1023) % (uint32_t)nshards); }
void shard_init(int n, void (*handler)(struct rpc *));   /* handler: route_run */
int shard_register(int id);
void shard_call(int owner, struct rpc *r);
void shard_serve(void);
bool shard_trim(void);
bool shard_make_room(int owner);
void route_run(struct rpc *r);
item *item_get_local(const char *key, size_t nkey, bool bump);
item *item_touch_local(const char *key, size_t nkey, rel_time_t exptime);
enum store_result item_store_local(item *it, enum store_type comm);
bool item_delete_local(const char *key, size_t nkey);
enum delta_result item_delta_local(const char *key, size_t nkey, bool incr, uint64_t delta, char *buf);

/* ---- hash (hash.c) ---- */
uint32_t hash(const char *key, size_t nkey);

/* ---- hash table (assoc.c), caller holds the item lock of hv ---- */
void assoc_init(size_t maxbytes);
item *assoc_find(const char *key, size_t nkey, uint32_t hv);
void assoc_insert(item *it);
void assoc_delete(item *it);

/* ---- LRU (lru.c) ---- */
void lru_init(void);
void lru_link(item *it);        /* takes the LRU lock */
void lru_unlink(item *it);      /* takes the LRU lock */
void lru_bump(item *it);        /* moves to head if older than ITEM_UPDATE_INTERVAL */
bool lru_evict(unsigned lru_id, bool may_block);

/* ---- where memory is (numa.c): recent item addresses per thread, their pages' NUMA nodes ---- */
#define NUMA_MAX_NODES 64
void numa_note_item(const void *p);
int numa_pages_nodes(const void **addr, int n, int *counts, int ncounts, int *pages);
int numa_item_nodes(int *counts, int ncounts, int *pages);

/* ---- per-thread statistics (stats.c) ---- */
struct thread_stats {
    uint64_t cmd_get, get_hits, get_misses, get_expired, get_flushed;
    uint64_t cmd_set, cmd_touch, touch_hits, touch_misses;
    uint64_t delete_hits, delete_misses, incr_hits, incr_misses, decr_hits, decr_misses;
    uint64_t cas_hits, cas_misses, cas_badval, cmd_flush;
    uint64_t evictions, expired_unfetched, bytes_read, bytes_written, curr_items, total_items;
    uint64_t lock_acquires, lock_waits, lock_wait_ns;
    uint64_t lru_acquires, lru_waits, lru_wait_ns;
    uint64_t rpc_calls, rpc_wait_ns, rpc_served;
};
extern __thread struct thread_stats tstats;
void stats_register_thread(void);
void stats_reset(void);
void stats_aggregate(struct thread_stats *out);
extern uint64_t stat_curr_conns, stat_total_conns, stat_rejected_conns;

/* ---- locks (locks.c) ---- */
int locks_parse_mode(const char *s, enum lock_mode *out);
const char *locks_mode_name(enum lock_mode m);
void locks_init(enum lock_mode m);
void item_lock(uint32_t hv, bool write);
void item_unlock(uint32_t hv, bool write);
bool item_trylock(uint32_t hv);
void lru_lock(unsigned id);
void lru_unlock(unsigned id);

/* ---- connections and protocol (conn.c, proto.c) ---- */
struct outseg { item *it; uint32_t off, len; };   /* it == NULL: bytes in wbuf at off */

enum conn_state { CONN_CMD, CONN_NREAD, CONN_SWALLOW, CONN_CLOSING };

struct outmark { size_t nsegs, wlen, out; uint32_t last_len; };   /* a point in the reply queue */

typedef struct conn {
    int fd;
    enum conn_state state;
    char *rbuf; size_t rsize, rpos, rlen;          /* unparsed input is rbuf[rpos, rlen) */
    char *wbuf; size_t wsize, wlen;                 /* response text */
    struct outseg *segs; size_t nsegs, ssize, sent; /* response as segments, sent = bytes gone */
    size_t out_bytes;                               /* total bytes queued in segs */
    struct outmark kept;                            /* end of what memcached would have sent */
    unsigned ncmds, batch;                          /* commands since its last flush, and its batch */
    item *item; size_t rlbytes;                     /* value being read (CONN_NREAD) */
    enum store_type cmd; bool noreply;
    uint32_t watching;                              /* epoll events registered (event.c) */
    size_t sbytes;                                  /* bytes to discard (CONN_SWALLOW) */
    struct conn *next;
} conn;

#define RBUF_INITIAL 16384
#define LINE_LIMIT 2048            /* a line without '\n' longer than this closes the connection */
#define GET_LINE_LIMIT (1 << 20)   /* ... unless it is a multiget, bounded here (memory stays bounded) */
#define OUT_HIGH_WATER (1 << 20)   /* stop parsing input while this much output is unsent */

conn *conn_new_buffers(int fd);
void conn_free_buffers(conn *c);
void conn_release_output(conn *c);
int proto_process(conn *c);        /* 0: need more input or output drained; -1: close */
void out_string(conn *c, const char *s);
void out_bytes(conn *c, const char *s, size_t n);
void out_item(conn *c, item *it);
struct outmark out_mark(conn *c);
void out_truncate(conn *c, struct outmark m);

/* ---- util.c: memcached's strict number parsing ---- */
bool safe_strtoul(const char *s, uint32_t *out);
bool safe_strtol(const char *s, int32_t *out);
bool safe_strtoull(const char *s, uint64_t *out);
char *fmt_u64(char *p, uint64_t v);

/* ---- stats output (stats_text.c) ---- */
void stats_write(conn *c);
void stats_numa_write(conn *c);

/* ---- threads (thread.c) ---- */
void threads_start(int nthreads);
void thread_dispatch(int fd);
#endif
