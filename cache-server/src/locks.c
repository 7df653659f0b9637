/* The lock modes under study. Every path of the cache takes locks through this file only, so a
 * mode is a choice of which lock object an item or LRU operation maps to:
 *   global  - one mutex over hash table and LRU (twemcache's cache_lock): GETs serialise
 *   striped - hash-striped item mutexes plus one mutex per LRU list (memcached 1.6's scheme)
 *   rwlock  - one reader-writer lock over the hash table (GETs share it), LRU mutexes
 *   optimistic - GETs take no lock at all (atomic chain walk + reference, qsbr.c frees);
 *             writers use the striped item mutexes
 *   sharded - no locks: each worker alone touches its partition (shard.c passes messages)
 * Each acquisition first tries without blocking so that we can count the ones that had to wait
 * and how long they waited (the contention counters of `stats`). Item locks are reentrant per
 * thread: the eviction path may try a lock the thread already holds (same stripe, or the one
 * global lock) and must not deadlock on itself. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cache.h"

#define NSTRIPES 1024

struct padded_mutex { pthread_mutex_t m; char pad[64 - sizeof(pthread_mutex_t) % 64]; };

static enum lock_mode mode;
static struct padded_mutex global_lock;
static struct padded_mutex *stripes;
static struct padded_mutex lru_locks[NLRU];
static pthread_rwlock_t table_rwlock;

/* locks this thread holds, for reentrancy: at most two item locks at once (own + victim) */
static __thread struct { int idx; int depth; } held[4];

static const char *names[] = { "global", "striped", "rwlock", "optimistic", "sharded" };

int locks_parse_mode(const char *s, enum lock_mode *out)
{
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) { *out = (enum lock_mode)i; return 0; }
    return -1;
}

const char *locks_mode_name(enum lock_mode m) { return names[m]; }

void locks_init(enum lock_mode m)
{
    mode = m;
    pthread_mutex_init(&global_lock.m, NULL);
    stripes = calloc(NSTRIPES, sizeof(*stripes));
    if (stripes == NULL)
        abort();
    for (int i = 0; i < NSTRIPES; i++)
        pthread_mutex_init(&stripes[i].m, NULL);
    for (int i = 0; i < NLRU; i++)
        pthread_mutex_init(&lru_locks[i].m, NULL);
    /* prefer writers: with readers preferred a steady GET stream starves every SET */
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&table_rwlock, &ra);
    pthread_rwlockattr_destroy(&ra);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void mutex_lock_counted(pthread_mutex_t *m, uint64_t *acq, uint64_t *waits, uint64_t *ns)
{
    BUMP(*acq, 1);
    if (pthread_mutex_trylock(m) == 0)
        return;
    uint64_t t0 = mono_ns();
    pthread_mutex_lock(m);
    BUMP(*waits, 1);
    BUMP(*ns, mono_ns() - t0);
}

static int item_index(uint32_t hv)
{
    /* low bits, like the bucket index: the table has >= NSTRIPES buckets, so every key of one
     * chain maps to the same stripe */
    return mode == LM_STRIPED || mode == LM_OPTIMISTIC ? (int)(hv & (NSTRIPES - 1)) + 1 : 0;
}

static int *held_depth(int idx, bool create)
{
    for (int i = 0; i < 4; i++)
        if (held[i].depth > 0 && held[i].idx == idx)
            return &held[i].depth;
    if (!create)
        return NULL;
    for (int i = 0; i < 4; i++)
        if (held[i].depth == 0) { held[i].idx = idx; return &held[i].depth; }
    abort();   /* more than four nested locks is a bug */
}

static void raw_lock(int idx, bool write)
{
    if (mode == LM_RWLOCK) {
        pthread_rwlock_t *l = &table_rwlock;
        BUMP(tstats.lock_acquires, 1);
        int r = write ? pthread_rwlock_trywrlock(l) : pthread_rwlock_tryrdlock(l);
        if (r == 0)
            return;
        uint64_t t0 = mono_ns();
        if (write) pthread_rwlock_wrlock(l); else pthread_rwlock_rdlock(l);
        BUMP(tstats.lock_waits, 1);
        BUMP(tstats.lock_wait_ns, mono_ns() - t0);
        return;
    }
    pthread_mutex_t *m = idx == 0 ? &global_lock.m : &stripes[idx - 1].m;
    mutex_lock_counted(m, &tstats.lock_acquires, &tstats.lock_waits, &tstats.lock_wait_ns);
}

static void raw_unlock(int idx)
{
    if (mode == LM_RWLOCK)
        pthread_rwlock_unlock(&table_rwlock);
    else
        pthread_mutex_unlock(idx == 0 ? &global_lock.m : &stripes[idx - 1].m);
}

void item_lock(uint32_t hv, bool write)
{
    if ((!write && mode == LM_OPTIMISTIC) || mode == LM_SHARDED)
        return;                          /* lock-free readers; or a shard's only thread */
    int idx = item_index(hv);
    int *d = held_depth(idx, true);
    if ((*d)++ == 0)
        raw_lock(idx, write);
}

void item_unlock(uint32_t hv, bool write)
{
    if ((!write && mode == LM_OPTIMISTIC) || mode == LM_SHARDED)
        return;
    int idx = item_index(hv);
    int *d = held_depth(idx, false);
    if (--(*d) == 0)
        raw_unlock(idx);
}

/* write lock without blocking; succeeds if this thread already holds it (never upgrades a
 * read lock: the only caller, eviction, runs from writers or from threads holding nothing) */
bool item_trylock(uint32_t hv)
{
    if (mode == LM_SHARDED)
        return true;
    int idx = item_index(hv);
    int *d = held_depth(idx, false);
    if (d != NULL) { (*d)++; return true; }
    int r;
    if (mode == LM_RWLOCK)
        r = pthread_rwlock_trywrlock(&table_rwlock);
    else
        r = pthread_mutex_trylock(idx == 0 ? &global_lock.m : &stripes[idx - 1].m);
    if (r != 0)
        return false;
    BUMP(tstats.lock_acquires, 1);
    d = held_depth(idx, true);
    *d = 1;
    return true;
}

/* global mode: the LRU is under the same single lock, as in twemcache */
void lru_lock(unsigned id)
{
    if (mode == LM_GLOBAL) { item_lock(0, true); return; }
    if (mode == LM_SHARDED) return;
    mutex_lock_counted(&lru_locks[id].m, &tstats.lru_acquires, &tstats.lru_waits,
                       &tstats.lru_wait_ns);
}

void lru_unlock(unsigned id)
{
    if (mode == LM_GLOBAL) { item_unlock(0, true); return; }
    if (mode == LM_SHARDED) return;
    pthread_mutex_unlock(&lru_locks[id].m);
}
