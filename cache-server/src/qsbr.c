/* Freeing items: item_free_now at once (every mode but optimistic), and deferred freeing for the
 * optimistic lock mode (quiescent-state-based reclamation).
 * GETs walk hash chains and take item references without any lock, so an item whose last
 * reference goes away may still be under another thread's feet. Such items are retired with a
 * ticket from a global epoch and freed only once every worker has passed a quiescent point
 * (between two epoll batches, holding no item pointer) after that ticket, or is idle in
 * epoll_wait. Workers announce this once per batch, not per request, so a GET costs no fence. */
#include <pthread.h>
#include <stdlib.h>
#include "cache.h"

#define MAX_READERS 256

static uint64_t g_epoch = 1;
static uint64_t *readers[MAX_READERS];   /* each worker's last seen epoch, 0 = offline */
static int nreaders;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;

static __thread uint64_t my_epoch;
static __thread bool registered;
static __thread item *limbo;               /* retired items, linked by their (unused) LRU next */
static __thread size_t nlimbo;

void qsbr_register(void)
{
    pthread_mutex_lock(&reg_lock);
    if (nreaders < MAX_READERS) {
        readers[nreaders++] = &my_epoch;
        registered = true;
    }
    pthread_mutex_unlock(&reg_lock);
    qsbr_online();
}

void qsbr_online(void)
{
    /* seq_cst: the announcement must be visible before this thread's next chain reads */
    if (registered)
        __atomic_store_n(&my_epoch, __atomic_load_n(&g_epoch, __ATOMIC_SEQ_CST), __ATOMIC_SEQ_CST);
}

void qsbr_offline(void)
{
    if (registered)
        __atomic_store_n(&my_epoch, 0, __ATOMIC_RELEASE);
}

size_t qsbr_pending(void) { return nlimbo; }

void item_free_now(item *it) { free(it); }

void qsbr_retire(item *it)
{
    it->retired = __atomic_add_fetch(&g_epoch, 1, __ATOMIC_SEQ_CST);
    /* not hnext: a reader standing on this item still follows hnext into the live chain */
    it->next = limbo;
    limbo = it;
    nlimbo++;
}

/* frees this thread's retired items that no reader can still see */
void qsbr_quiescent(void)
{
    qsbr_online();
    if (limbo == NULL)
        return;
    uint64_t safe = UINT64_MAX;
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < nreaders; i++) {
        uint64_t e = __atomic_load_n(readers[i], __ATOMIC_ACQUIRE);
        if (e != 0 && e < safe)
            safe = e;
    }
    pthread_mutex_unlock(&reg_lock);
    item **p = &limbo;
    while (*p != NULL) {
        item *it = *p;
        if (it->retired <= safe) {
            *p = it->next;
            nlimbo--;
            item_free_now(it);
        } else {
            p = &it->next;
        }
    }
}
