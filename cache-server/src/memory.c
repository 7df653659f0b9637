/* The -m budget: every item's bytes are charged to one counter (and in the sharded mode to its
 * owner's share) from allocation (items.c) until its last reference goes, here. Below the LRU,
 * which releases the items it evicts. */
#include "cache.h"

uint64_t mem_used;
uint64_t shard_used[MAX_SHARDS];

uint64_t item_mem_used(void) { return __atomic_load_n(&mem_used, __ATOMIC_RELAXED); }

/* The charge goes when the last reference does, even if the free waits for a grace period:
 * otherwise eviction would see no progress while its victims sit in limbo and would empty the
 * whole LRU. Limbo is freed within one epoll batch of every worker, so RSS can pass -m only by
 * what one batch retires. */
void item_release(item *it)
{
    if (__atomic_sub_fetch(&it->refcount, 1, __ATOMIC_ACQ_REL) == 0) {
        __atomic_sub_fetch(&mem_used, it->size, __ATOMIC_RELAXED);
        if (settings.lock_mode == LM_SHARDED)
            __atomic_sub_fetch(&shard_used[it->lru_id], it->size, __ATOMIC_RELAXED);
        if (settings.lock_mode == LM_OPTIMISTIC)
            qsbr_retire(it);             /* a lock-free reader may still be looking at it */
        else
            item_free_now(it);
    }
}
