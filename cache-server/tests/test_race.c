/* The optimistic mode's unlink/bump race, replayed deterministically (issue 12, item 2).
 * A lock-free GET has checked that its item is linked and is about to move it in the LRU (the
 * item is older than the bump interval) when a DELETE unlinks the same item. If `linked` were
 * cleared only after the LRU lock is dropped, the GET would put the item back on its list, the
 * DELETE would then release it, and the next link into that list would write into freed memory
 * (ASan: heap-use-after-free in do_link <- lru_link). The test hooks (src/hooks.h) hold each
 * thread at its window while the other runs; built with ASan, the run fails on such code. */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "hooks.h"

void (*test_hook)(const char *point, struct item *it);
static sem_t reader_at_bump, writer_unlinked, reader_done;
static int hits_get, hits_unlink;
static const char *victim = "victim";

static void hook(const char *point, struct item *it)
{
    if (strcmp(ITEM_key(it), victim) != 0)
        return;
    if (strcmp(point, "get:before-bump") == 0) {       /* reader: let the writer unlink first */
        hits_get++;
        sem_post(&reader_at_bump);
        sem_wait(&writer_unlinked);
    } else if (strcmp(point, "unlink:after-lru") == 0) {   /* writer: let the reader bump now */
        hits_unlink++;
        sem_post(&writer_unlinked);
        sem_wait(&reader_done);
    }
}

static void *reader(void *arg)
{
    (void)arg;
    stats_register_thread();
    item *it = item_get(victim, strlen(victim), true);
    if (it != NULL)
        item_release(it);
    sem_post(&reader_done);
    return NULL;
}

static void store(const char *key)
{
    item *it = item_alloc(key, strlen(key), 0, 0, 3, true);
    memcpy(ITEM_data(it), "v\r\n", 3);
    if (item_store(it, NREAD_SET) != STORED)
        abort();
    item_release(it);
}

int main(void)
{
    settings.lock_mode = LM_OPTIMISTIC;
    settings.maxbytes = 8u << 20;
    clock_init();
    assoc_init(settings.maxbytes);
    lru_init();
    locks_init(settings.lock_mode);
    stats_register_thread();
    qsbr_register();
    sem_init(&reader_at_bump, 0, 0);
    sem_init(&writer_unlinked, 0, 0);
    sem_init(&reader_done, 0, 0);

    store(victim);
    STORE(current_time, LOAD(current_time) + 10 * ITEM_UPDATE_INTERVAL);   /* due for a bump */
    test_hook = hook;
    pthread_t r;
    pthread_create(&r, NULL, reader, NULL);
    sem_wait(&reader_at_bump);
    item_delete(victim, strlen(victim));                /* meets the reader at the hooks */
    pthread_join(r, NULL);
    test_hook = NULL;
    qsbr_quiescent();                                   /* frees the deleted item */

    /* link another item into the victim's LRU list: touches the list's head */
    char key[32];
    uint32_t lru = (hash(victim, strlen(victim)) >> 24) & (NLRU - 1);
    for (unsigned i = 0;; i++) {
        snprintf(key, sizeof(key), "k%u", i);
        if (((hash(key, strlen(key)) >> 24) & (NLRU - 1)) == lru)
            break;
    }
    store(key);
    item *it = item_get(victim, strlen(victim), false);
    if (hits_get != 1 || hits_unlink != 1 || it != NULL) {
        printf("FAIL race replay: hooks hit %d/%d, victim %s\n", hits_get, hits_unlink,
               it != NULL ? "still visible" : "gone");
        return 1;
    }
    printf("unlink during a lock-free GET's LRU bump: the item stays off its list\n");
    return 0;
}
