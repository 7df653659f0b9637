/* The hash table: a fixed power-of-two array of chains sized from -m at start. It never grows,
 * so no resize can race with lookups. A chain is guarded by the item lock of its keys' hash:
 * stripes use the low bits too and there are at least as many buckets as stripes, so all keys
 * of one chain share one stripe. */
#include <stdlib.h>
#include <string.h>
#include "cache.h"

static item **buckets;
static uint32_t mask;

void assoc_init(size_t maxbytes)
{
    size_t n = 1u << 12;
    while (n < maxbytes / 128 && n < (1u << 24))   /* about one bucket per small item */
        n <<= 1;
    buckets = calloc(n, sizeof(*buckets));
    if (buckets == NULL)
        abort();
    mask = (uint32_t)(n - 1);
}

item *assoc_find(const char *key, size_t nkey, uint32_t hv)
{
    for (item *it = buckets[hv & mask]; it != NULL; it = it->hnext)
        if (it->nkey == nkey && memcmp(ITEM_key(it), key, nkey) == 0)
            return it;
    return NULL;
}

void assoc_insert(item *it)
{
    item **b = &buckets[it->hv & mask];
    it->hnext = *b;
    *b = it;
}

void assoc_delete(item *it)
{
    item **p = &buckets[it->hv & mask];
    while (*p != NULL && *p != it)
        p = &(*p)->hnext;
    if (*p != NULL)
        *p = it->hnext;
    it->hnext = NULL;
}
