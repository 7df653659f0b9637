/* Recency lists. NLRU lists chosen by hash bits so that, outside the global mode, no single LRU
 * mutex sees every SET. GETs move an item at most once per ITEM_UPDATE_INTERVAL (as memcached
 * does), so a read-mostly load rarely touches an LRU lock at all. Eviction walks from the tail. */
#include <stddef.h>
#include "cache.h"

static item *heads[MAX_SHARDS], *tails[MAX_SHARDS];   /* NLRU used, or one per shard */

static void do_link(item *it)
{
    unsigned id = it->lru_id;
    it->prev = NULL;
    it->next = heads[id];
    if (it->next != NULL)
        it->next->prev = it;
    heads[id] = it;
    if (tails[id] == NULL)
        tails[id] = it;
}

static void do_unlink(item *it)
{
    unsigned id = it->lru_id;
    if (heads[id] == it)
        heads[id] = it->next;
    if (tails[id] == it)
        tails[id] = it->prev;
    if (it->next != NULL)
        it->next->prev = it->prev;
    if (it->prev != NULL)
        it->prev->next = it->next;
    it->prev = it->next = NULL;
}

void lru_init(void) {}

/* `linked` changes here only, under the LRU lock (see do_link in items.c) */
void lru_link(item *it)
{
    lru_lock(it->lru_id);
    do_link(it);
    STORE(it->linked, 1);
    lru_unlock(it->lru_id);
}

void lru_unlink(item *it)
{
    lru_lock(it->lru_id);
    do_unlink(it);
    STORE(it->linked, 0);
    lru_unlock(it->lru_id);
}

/* caller holds the item lock (read or write) and a reference */
void lru_bump(item *it)
{
    rel_time_t now = LOAD(current_time);
    if (LOAD(it->time) + ITEM_UPDATE_INTERVAL >= now)
        return;
    lru_lock(it->lru_id);
    if (LOAD(it->linked)) {
        do_unlink(it);
        do_link(it);
    }
    STORE(it->time, now);
    lru_unlock(it->lru_id);
}

static void unlink_victim(item *it)
{
    assoc_delete(it);
    do_unlink(it);
    STORE(it->linked, 0);
    BUMP(tstats.curr_items, (uint64_t)-1);
    if (LOAD(it->exptime) != 0 && LOAD(it->exptime) <= LOAD(current_time))
        BUMP(tstats.expired_unfetched, 1);
    else
        BUMP(tstats.evictions, 1);
}

/* Frees one item from the tail of list `id`. Lock order elsewhere is item -> LRU, so here, holding
 * the LRU lock, we only *try* item locks. If every candidate is busy and the caller holds no item
 * lock (may_block), take a reference on the tail, drop the LRU lock and wait for its item lock. */
bool lru_evict(unsigned id, bool may_block)
{
    lru_lock(id);
    int tries = 0;
    for (item *it = tails[id]; it != NULL && tries < 10; it = it->prev, tries++) {
        if (__atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE) != 1)
            continue;                    /* a reader holds it: do not pull it from under them */
        uint32_t hv = it->hv;
        if (!item_trylock(hv))
            continue;
        /* refcounts only rise under the item lock, which we now hold: the check is stable */
        if (LOAD(it->linked) && __atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE) == 1) {
            unlink_victim(it);
            item_unlock(hv, true);
            lru_unlock(id);
            item_release(it);
            return true;
        }
        item_unlock(hv, true);
    }
    item *it = tails[id];
    if (!may_block || it == NULL) {
        lru_unlock(id);
        return false;
    }
    __atomic_add_fetch(&it->refcount, 1, __ATOMIC_ACQ_REL);
    uint32_t hv = it->hv;
    lru_unlock(id);
    item_lock(hv, true);
    bool ok = false;
    if (LOAD(it->linked) && __atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE) == 2) {
        lru_lock(id);
        unlink_victim(it);
        lru_unlock(id);
        item_release(it);                /* the hash table's reference */
        ok = true;
    }
    item_unlock(hv, true);
    item_release(it);                    /* ours */
    return ok;
}
