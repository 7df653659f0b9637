/* Worker threads. The main thread accepts and hands each connection to a worker round-robin
 * (memcached's dispatch); each worker owns its connections and runs one epoll loop over them,
 * blocking in epoll_wait when idle. A connection whose replies do not drain stops being read
 * until they do, so a client that never reads cannot make the server buffer without bound. */
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
    pthread_mutex_t qlock;
    int *queue;
    size_t qlen, qcap;
};

static struct worker *workers;
static int nworkers;
static unsigned next_worker;

static void watch(struct worker *w, conn *c, uint32_t events, int op)
{
    struct epoll_event ev = { .events = events, .data.ptr = c };
    if (epoll_ctl(w->epfd, op, c->fd, &ev) != 0 && op != EPOLL_CTL_DEL)
        perror("epoll_ctl");
}

static void conn_close(struct worker *w, conn *c)
{
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    conn_free_buffers(c);
    __atomic_sub_fetch(&stat_curr_conns, 1, __ATOMIC_RELAXED);
}

/* Read once, parse everything complete, reply; read again only if that read filled the buffer
 * (a short read means the socket is drained: one read and one sendmsg per request, no extra read
 * that would just say EAGAIN). Level-triggered epoll brings us back for anything left. */
static void conn_event(struct worker *w, conn *c, uint32_t events)
{
    if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
        conn_close(w, c);
        return;
    }
    bool drained = false;
    for (int round = 0; round < 16; round++) {
        if (c->sent < c->out_bytes) {    /* earlier replies first */
            int wr = conn_write(c);
            if (wr < 0) { conn_close(w, c); return; }
            if (wr == 0) { watch(w, c, EPOLLOUT, EPOLL_CTL_MOD); c->want_out = true; return; }
            if (c->want_out) { watch(w, c, EPOLLIN, EPOLL_CTL_MOD); c->want_out = false; }
        }
        int r = proto_process(c);        /* also leftovers, e.g. after a high-water stop */
        if (r < 0) {                     /* quit or a protocol violation: flush what we can */
            conn_write(c);
            conn_close(w, c);
            return;
        }
        if (c->out_bytes > 0)
            continue;                    /* write it at the top of the loop */
        if (drained || (events & EPOLLOUT && !(events & EPOLLIN) && round == 0))
            return;
        int rd = conn_read(c);
        if (rd == 0 || rd == -2) { conn_close(w, c); return; }
        if (rd == -1)
            return;
        drained = c->rlen < c->rsize;
    }
}

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
        watch(w, c, EPOLLIN, EPOLL_CTL_ADD);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct epoll_event evs[64];
    stats_register_thread();
    bool sharded = settings.lock_mode == LM_SHARDED;
    if (sharded) {
        w->rpcfd = shard_register(w->id);
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &w->rpcfd };
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->rpcfd, &ev);
    }
    bool qsbr = settings.lock_mode == LM_OPTIMISTIC;
    if (qsbr)
        qsbr_register();
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
                conn_event(w, evs[i].data.ptr, evs[i].events);
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
        shard_init(n);
    for (int i = 0; i < n; i++) {
        struct worker *w = &workers[i];
        w->id = i;
        pthread_mutex_init(&w->qlock, NULL);
        w->epfd = epoll_create1(EPOLL_CLOEXEC);
        w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (w->epfd < 0 || w->evfd < 0) {
            perror("epoll/eventfd");
            exit(1);
        }
        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev);
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
