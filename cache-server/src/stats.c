/* Statistics. Counters live in each worker's thread-local struct and are written only by that
 * thread (relaxed atomic stores, no locked instructions on the hot path); `stats` sums them
 * (stats_text.c).
 * `stats reset` records a baseline instead of writing other threads' counters. */
#include <pthread.h>
#include <string.h>
#include "cache.h"

#define MAX_THREADS 1024
#define NFIELDS (sizeof(struct thread_stats) / sizeof(uint64_t))

__thread struct thread_stats tstats;
uint64_t stat_curr_conns, stat_total_conns, stat_rejected_conns;

static struct thread_stats *registry[MAX_THREADS];
static int nregistered;
static struct thread_stats baseline;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

void stats_register_thread(void)
{
    pthread_mutex_lock(&reg_lock);
    if (nregistered < MAX_THREADS)
        registry[nregistered++] = &tstats;
    pthread_mutex_unlock(&reg_lock);
}

static void sum_raw(struct thread_stats *out)
{
    memset(out, 0, sizeof(*out));
    uint64_t *o = (uint64_t *)out;
    pthread_mutex_lock(&reg_lock);
    for (int t = 0; t < nregistered; t++) {
        uint64_t *s = (uint64_t *)registry[t];
        for (size_t i = 0; i < NFIELDS; i++)
            o[i] += __atomic_load_n(&s[i], __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&reg_lock);
}

void stats_aggregate(struct thread_stats *out)
{
    sum_raw(out);
    uint64_t *o = (uint64_t *)out, *b = (uint64_t *)&baseline;
    pthread_mutex_lock(&reg_lock);
    for (size_t i = 0; i < NFIELDS; i++)
        o[i] -= b[i];
    pthread_mutex_unlock(&reg_lock);
    out->curr_items += baseline.curr_items;   /* a gauge, not reset */
}

void stats_reset(void)
{
    struct thread_stats now;
    sum_raw(&now);
    pthread_mutex_lock(&reg_lock);
    baseline = now;
    pthread_mutex_unlock(&reg_lock);
}
