/* Where the item memory is: each thread keeps the addresses of the last RING items it allocated (a
 * thread-local store per allocation, nothing shared on the hot path); `stats numa` asks the kernel
 * which NUMA node holds each distinct page among them (move_pages, which moves nothing when given no
 * target nodes; get_mempolicy per page where move_pages is refused). Items are malloc'd one by one,
 * so recent allocations are a sample of the arenas that hold the items. Addresses only: a sampled
 * item may be gone by then, and its page is still the arena's (an unmapped page is not counted). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cache.h"

#define RING 64
#define MAX_RINGS 1024
#define MPOL_F_NODE (1 << 0)
#define MPOL_F_ADDR (1 << 1)

struct ring {
    const void *addr[RING];
    uint64_t n;               /* allocations noted; written by its thread only */
    bool registered;
};

static __thread struct ring mine;
static struct ring *rings[MAX_RINGS];
static int nrings;
static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;

void numa_note_item(const void *p)
{
    if (!mine.registered) {
        mine.registered = true;
        pthread_mutex_lock(&rings_lock);
        if (nrings < MAX_RINGS)
            rings[nrings++] = &mine;
        pthread_mutex_unlock(&rings_lock);
    }
    uint64_t n = LOAD(mine.n);
    STORE(mine.addr[n % RING], p);
    STORE(mine.n, n + 1);
}

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

int numa_pages_nodes(const void **addr, int n, int *counts, int ncounts, int *pages)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < n; i++)
        addr[i] = (const void *)((uintptr_t)addr[i] & ~(page - 1));
    qsort(addr, (size_t)n, sizeof(*addr), cmp_addr);
    int d = 0;
    for (int i = 0; i < n; i++)                  /* distinct pages: each counts once */
        if (d == 0 || addr[d - 1] != addr[i])
            addr[d++] = addr[i];
    *pages = d;
    int *status = malloc((size_t)(d > 0 ? d : 1) * sizeof(int));
    if (status == NULL)
        return 0;
    bool ok = d > 0 && syscall(SYS_move_pages, 0, (unsigned long)d, addr, NULL, status, 0) == 0;
    int known = 0;
    for (int i = 0; i < d; i++) {
        int node = ok ? status[i] : -1;          /* a negative status: not mapped / no page yet */
        if (!ok && syscall(SYS_get_mempolicy, &node, NULL, 0ul, addr[i], MPOL_F_NODE | MPOL_F_ADDR) != 0)
            node = -1;
        if (node >= 0 && node < ncounts) {
            counts[node]++;
            known++;
        }
    }
    free(status);
    return known;
}

int numa_item_nodes(int *counts, int ncounts, int *pages)
{
    const void **addr = malloc((size_t)MAX_RINGS * RING * sizeof(*addr));
    *pages = 0;
    if (addr == NULL)
        return 0;
    int n = 0;
    pthread_mutex_lock(&rings_lock);
    for (int r = 0; r < nrings; r++) {
        uint64_t have = LOAD(rings[r]->n);
        for (uint64_t i = 0; i < have && i < RING; i++)
            addr[n++] = LOAD(rings[r]->addr[i]);
    }
    pthread_mutex_unlock(&rings_lock);
    int known = numa_pages_nodes(addr, n, counts, ncounts, pages);
    free(addr);
    return known;
}
