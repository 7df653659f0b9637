/* The sharded mode: worker i owns the keys whose hash maps to shard i (hash table chains, its
 * own LRU list and memory budget), and only worker i touches them, so no lock guards them. An
 * operation on another worker's key is a synchronous message: the caller queues a request in
 * the owner's inbox, wakes it through an eventfd, and sleeps on its own eventfd until the reply;
 * while it waits it serves requests sent to *it*, so two workers calling each other cannot
 * deadlock. Requests carry pointers into the caller's stack and buffers: valid, since the caller
 * is blocked until the owner marks the request done. (Seastar and pelikan busy-poll their
 * queues instead; here a wait costs two wake-ups, which the sweep shows.) */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "cache.h"

struct inbox {
    pthread_mutex_t lock;
    struct rpc *head, *tail;
    int fd;                        /* eventfd: "requests or replies for you" */
    char pad[64];
};

int nshards = 1;
__thread int my_shard;
static struct inbox *inboxes;
static void (*run)(struct rpc *);   /* route_run: what a request means is routing's */

void shard_init(int n, void (*handler)(struct rpc *))
{
    nshards = n;
    run = handler;
    inboxes = calloc((size_t)n, sizeof(*inboxes));
    if (inboxes == NULL)
        abort();
    for (int i = 0; i < n; i++) {
        pthread_mutex_init(&inboxes[i].lock, NULL);
        inboxes[i].fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (inboxes[i].fd < 0) {
            perror("eventfd");
            exit(1);
        }
    }
}

int shard_register(int id)
{
    my_shard = id;
    return inboxes[id].fd;
}

static void kick(int shard)
{
    uint64_t one = 1;
    if (write(inboxes[shard].fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        perror("eventfd write");
}

/* runs every request queued for this worker */
void shard_serve(void)
{
    struct inbox *in = &inboxes[my_shard];
    uint64_t v;
    if (read(in->fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        perror("eventfd read");
    for (;;) {
        pthread_mutex_lock(&in->lock);
        struct rpc *r = in->head;
        if (r != NULL) {
            in->head = r->next;
            if (in->head == NULL)
                in->tail = NULL;
        }
        pthread_mutex_unlock(&in->lock);
        if (r == NULL)
            return;
        int caller = r->caller;
        run(r);
        __atomic_store_n(&r->done, 1, __ATOMIC_RELEASE);   /* r may vanish after this */
        kick(caller);
        BUMP(tstats.rpc_served, 1);
    }
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void shard_call(int owner, struct rpc *r)
{
    struct inbox *in = &inboxes[owner];
    r->caller = my_shard;
    r->done = 0;
    r->next = NULL;
    uint64_t t0 = mono_ns();
    pthread_mutex_lock(&in->lock);
    if (in->tail != NULL) in->tail->next = r; else in->head = r;
    in->tail = r;
    pthread_mutex_unlock(&in->lock);
    kick(owner);
    while (!__atomic_load_n(&r->done, __ATOMIC_ACQUIRE)) {
        struct pollfd p = { .fd = inboxes[my_shard].fd, .events = POLLIN };
        poll(&p, 1, 100);
        shard_serve();             /* also resets our eventfd */
    }
    BUMP(tstats.rpc_calls, 1);
    BUMP(tstats.rpc_wait_ns, mono_ns() - t0);
}

/* the owner keeps its shard under its share of -m, evicting its own LRU (no locks: only it
 * touches its items); items that clients are being sent are skipped, so the overshoot is
 * bounded by the replies in flight */
bool shard_trim(void)
{
    size_t limit = settings.maxbytes / (size_t)nshards;
    for (int i = 0; i < 10000 && LOAD(shard_used[my_shard]) > limit; i++)
        if (!lru_evict((unsigned)my_shard, false))
            return false;                /* nothing left that may go */
    return true;
}

/* an allocation charged to `owner` passed its share: the owner evicts (only it may); false when
 * it could not get under its share because nothing left may be evicted */
bool shard_make_room(int owner)
{
    if (owner == my_shard)
        return shard_trim();
    struct rpc r = { .kind = RPC_TRIM };
    shard_call(owner, &r);
    return r.deleted;
}
