/* The hash table: a fixed power-of-two array of chains sized from -m at start. It never grows,
 * so no resize can race with lookups. A chain is guarded by the item lock of its keys' hash:
 * stripes use the low bits too and there are at least as many buckets as stripes, so all keys
 * of one chain share one stripe. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "cache.h"

static item **buckets;
static uint32_t mask;

void assoc_init(size_t maxbytes)
{
    size_t n = 1u << 12;
    /* one bucket per 256 B of -m: a load factor of about 1.5 once full of ~170 B items (where
     * memcached grows its table), without an array so big that every lookup misses the cache */
    while (n < maxbytes / 256 && n < (1u << 24))
        n <<= 1;
    /* every lookup lands on a random bucket: in 4 KB pages that is a TLB miss per GET (about
     * half of assoc_find's samples sat on the bucket load in a profile of 1-thread GETs), so ask
     * for huge pages where the kernel gives them (THP "madvise" or "always"): the table is
     * mapped 2 MB-aligned and zeroed; without THP it is as before */
    size_t huge = 2u << 20, bytes = (n * sizeof(*buckets) + huge - 1) / huge * huge;
    char *p = mmap(NULL, bytes + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        abort();
    p += (huge - (uintptr_t)p % huge) % huge;   /* the slack before and after is never touched */
    madvise(p, bytes, MADV_HUGEPAGE);
    buckets = (item **)p;
    mask = (uint32_t)(n - 1);
}

item *assoc_find(const char *key, size_t nkey, uint32_t hv)
{
    /* acquire loads: in the optimistic mode this runs without a lock, next to writers */
    for (item *it = __atomic_load_n(&buckets[hv & mask], __ATOMIC_ACQUIRE); it != NULL;
         it = __atomic_load_n(&it->hnext, __ATOMIC_ACQUIRE))
        if (it->nkey == nkey && memcmp(ITEM_key(it), key, nkey) == 0)
            return it;
    return NULL;
}

void assoc_insert(item *it)
{
    item **b = &buckets[it->hv & mask];
    it->hnext = *b;
    __atomic_store_n(b, it, __ATOMIC_RELEASE);   /* publishes the item's contents too */
}

void assoc_delete(item *it)
{
    item **p = &buckets[it->hv & mask];
    while (*p != NULL && *p != it)
        p = &(*p)->hnext;
    /* it->hnext stays: a lock-free reader standing on `it` must still reach the rest */
    if (*p != NULL)
        __atomic_store_n(p, it->hnext, __ATOMIC_RELEASE);
}
