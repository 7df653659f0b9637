/* Log-linear latency histogram: exact below 256 ns, then 128 buckets per power of two. */
#include <stdio.h>
#include <string.h>
#include "lg.h"

static unsigned bucket_of(uint64_t v)
{
    if (v < (1u << (HIST_SUB_BITS + 1)))
        return (unsigned)v;
    unsigned msb = 63u - (unsigned)__builtin_clzll(v);
    unsigned shift = msb - HIST_SUB_BITS;
    return (shift << HIST_SUB_BITS) + (unsigned)(v >> shift);
}

/* lowest value and width of a bucket */
static void bucket_range(unsigned i, uint64_t *lo, uint64_t *width)
{
    if (i < (1u << (HIST_SUB_BITS + 1))) { *lo = i; *width = 1; return; }
    unsigned shift = (i >> HIST_SUB_BITS) - 1;
    uint64_t mant = (i & ((1u << HIST_SUB_BITS) - 1)) | (1u << HIST_SUB_BITS);
    *lo = mant << shift;
    *width = 1ull << shift;
}

void hist_init(struct hist *h) { memset(h, 0, sizeof(*h)); h->min = UINT64_MAX; }

void hist_add(struct hist *h, uint64_t ns)
{
    unsigned i = bucket_of(ns);
    if (i >= HIST_BUCKETS) i = HIST_BUCKETS - 1;
    h->b[i]++;
    h->count++;
    h->sum += ns;
    if (ns > h->max) h->max = ns;
    if (ns < h->min) h->min = ns;
}

void hist_merge(struct hist *into, const struct hist *from)
{
    for (unsigned i = 0; i < HIST_BUCKETS; i++)
        into->b[i] += from->b[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->max > into->max) into->max = from->max;
    if (from->min < into->min) into->min = from->min;
}

uint64_t hist_quantile(const struct hist *h, double q)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.5), seen = 0;
    if (rank < 1) rank = 1;
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        seen += h->b[i];
        if (seen >= rank) {
            uint64_t lo, w;
            bucket_range(i, &lo, &w);
            uint64_t mid = lo + w / 2;
            return mid > h->max ? h->max : mid < h->min ? h->min : mid;
        }
    }
    return h->max;
}

/* lower bound (ns), count: for plotting or re-merging outside */
void hist_dump(const struct hist *h, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return;
    fprintf(f, "lower_ns,width_ns,count\n");
    for (unsigned i = 0; i < HIST_BUCKETS; i++) {
        if (h->b[i] == 0) continue;
        uint64_t lo, w;
        bucket_range(i, &lo, &w);
        fprintf(f, "%llu,%llu,%llu\n", (unsigned long long)lo, (unsigned long long)w,
                (unsigned long long)h->b[i]);
    }
    fclose(f);
}
