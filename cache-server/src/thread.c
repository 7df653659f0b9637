/* Worker threads. The main thread accepts and hands each connection to a worker round-robin
 * (memcached's dispatch); each worker owns its connections and runs one event loop over them:
 * epoll (blocking in epoll_wait when idle; event.c handles each connection's events) or, with
 * --io-backend io_uring, its own ring (uring.c). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cache.h"
#include "conn.h"

struct worker {
    pthread_t tid;
    int id;
    int epfd, evfd, rpcfd;
    struct ring *ring;                   /* io_uring backend: this worker's ring, else NULL */
    pthread_mutex_t qlock;
    int *queue;
    size_t qlen, qcap;
};

static struct worker *workers;
static int nworkers;
static unsigned next_worker;

static void accept_queued(struct worker *w)
{
    uint64_t v;
    if (read(w->evfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
        perror("eventfd read");
    pthread_mutex_lock(&w->qlock);
    size_t n = w->qlen;
    int fds[64];
    if (n > 64) n = 64;
    memcpy(fds, w->queue, n * sizeof(int));
    memmove(w->queue, w->queue + n, (w->qlen - n) * sizeof(int));
    w->qlen -= n;
    if (w->qlen > 0) {                   /* more than one batch: wake ourselves again */
        uint64_t one = 1;
        if (write(w->evfd, &one, sizeof(one)) < 0) perror("eventfd write");
    }
    pthread_mutex_unlock(&w->qlock);
    for (size_t i = 0; i < n; i++) {
        int one = 1;
        setsockopt(fds[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conn *c = conn_new_buffers(fds[i]);
        if (w->ring != NULL)
            uring_add(w->ring, c);
        else if (conn_watch_new(w->epfd, c) != 0) {
            perror("epoll_ctl");
            conn_close(w->epfd, c);
        }
    }
}

static void accept_cb(void *arg)
{
    accept_queued(arg);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[64];
    stats_register_thread();
    bool sharded = settings.lock_mode == LM_SHARDED;
    if (sharded)
        w->rpcfd = shard_register(w->id);
    bool qsbr = settings.lock_mode == LM_OPTIMISTIC;
    if (qsbr)
        qsbr_register();
    if (w->ring != NULL) {
        uring_run(w->ring, w->evfd, sharded ? w->rpcfd : -1, accept_cb, w);
        return NULL;
    }
    if (sharded) {
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &w->rpcfd };
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->rpcfd, &ev);
    }
    for (;;) {
        /* idle in epoll_wait = holding no item pointer: other threads need not wait for us;
         * with retired items pending, wake up soon to free them (memory stays bounded) */
        if (qsbr)
            qsbr_offline();
        int n = epoll_wait(w->epfd, evs, 64, qsbr && qsbr_pending() ? 10 : 1000);
        if (qsbr)
            qsbr_online();
        clock_update();
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr == NULL)
                accept_queued(w);
            else if (evs[i].data.ptr == &w->rpcfd)
                shard_serve();
            else
                conn_event(w->epfd, evs[i].data.ptr, evs[i].events);
        }
        if (qsbr)
            qsbr_quiescent();
    }
    return NULL;
}

void threads_start(int n)
{
    nworkers = n;
    workers = calloc((size_t)n, sizeof(*workers));
    if (workers == NULL)
        abort();
    if (settings.lock_mode == LM_SHARDED)
        shard_init(n, route_run);
    for (int i = 0; i < n; i++) {
        struct worker *w = &workers[i];
        w->id = i;
        pthread_mutex_init(&w->qlock, NULL);
        w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (settings.io_backend == IO_URING) {
            w->epfd = -1;
            if ((w->ring = uring_create()) == NULL)
                exit(1);
        } else {
            w->epfd = epoll_create1(EPOLL_CLOEXEC);
        }
        if ((w->ring == NULL && w->epfd < 0) || w->evfd < 0) {
            perror("epoll/eventfd");
            exit(1);
        }
        if (w->ring == NULL) {
            struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
            epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev);
        }
        if (pthread_create(&w->tid, NULL, worker_main, w) != 0) {
            perror("pthread_create");
            exit(1);
        }
    }
}

void thread_dispatch(int fd)
{
    struct worker *w = &workers[next_worker++ % (unsigned)nworkers];
    pthread_mutex_lock(&w->qlock);
    if (w->qlen == w->qcap) {
        w->qcap = w->qcap ? w->qcap * 2 : 64;
        w->queue = realloc(w->queue, w->qcap * sizeof(int));
        if (w->queue == NULL)
            abort();
    }
    w->queue[w->qlen++] = fd;
    pthread_mutex_unlock(&w->qlock);
    uint64_t one = 1;
    if (write(w->evfd, &one, sizeof(one)) < 0)
        perror("eventfd write");
}
