/* The load generator's histogram: every quantile within 1 % of the exact one, over values from
 * 100 ns to 10 s (log-uniform, the shape of latency tails), and exact small values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "../loadgen/lg.h"

static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(void)
{
    enum { N = 200000 };
    static uint64_t v[N];
    static struct hist h;
    int failed = 0;
    hist_init(&h);
    srand(7);
    for (int i = 0; i < N; i++) {
        double e = 2.0 + 8.0 * rand() / (double)RAND_MAX;     /* 10^2 .. 10^10 ns */
        v[i] = (uint64_t)pow(10.0, e);
        hist_add(&h, v[i]);
    }
    qsort(v, N, sizeof(v[0]), cmp);
    const double qs[] = { .01, .1, .5, .9, .95, .99, .999, .9999 };
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        uint64_t rank = (uint64_t)(qs[i] * N + 0.5);
        uint64_t exact = v[rank - 1], got = hist_quantile(&h, qs[i]);
        double err = fabs((double)got - (double)exact) / (double)exact;
        if (err > 0.01) {
            printf("FAIL q%.4f: exact %llu got %llu (%.2f%%)\n", qs[i], (unsigned long long)exact,
                   (unsigned long long)got, err * 100);
            failed++;
        }
    }
    if (h.max != v[N - 1] || h.min != v[0]) { printf("FAIL min/max\n"); failed++; }
    hist_init(&h);
    for (uint64_t x = 0; x < 256; x++) hist_add(&h, x);
    if (hist_quantile(&h, 0.5) != 127 && hist_quantile(&h, 0.5) != 128) { printf("FAIL small values\n"); failed++; }
    printf("test-hist: %s\n", failed ? "failed" : "quantiles within 1%");
    return failed != 0;
}
