/* One load thread: its connections on one epoll set, no busy polling. Closed loop: each
 * connection has one request outstanding and sends the next when the reply is parsed. Open
 * loop: each connection sends on a fixed schedule (timerfd), pipelining when replies are slow,
 * and latency counts from the *intended* send time, so a stalled server is not hidden by the
 * generator waiting for it (no coordinated omission). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>
#include "lg.h"

#define RBUF 65536

/* a connected socket, or -1 with errno (EMFILE & co from socket(), the last connect error) */
static int connect_one(const struct config *cfg, const struct sockaddr_in *sa, bool *sock_failed)
{
    uint64_t deadline = now_ns() + (uint64_t)(cfg->wait_ready * 1e9);
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            *sock_failed = true;
            return -1;
        }
        if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            return fd;
        }
        int e = errno;
        close(fd);
        errno = e;
        if (now_ns() >= deadline)
            return -1;
        usleep(20000);
    }
}

int worker_connect(struct worker *w, const struct config *cfg)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->port) };
    if (inet_pton(AF_INET, cfg->host, &sa.sin_addr) != 1) {   /* main.c checked it already */
        errno = EINVAL;
        return LG_ECONNECT;
    }
    w->cfg = cfg;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (w->epfd < 0 || w->tfd < 0)
        return LG_ESOCKET;
    w->conns = calloc((size_t)cfg->conns, sizeof(*w->conns));
    w->vbuf = malloc(cfg->value_size + 1);
    w->ssize = (size_t)cfg->depth * (cfg->value_size + 64) + 4096;
    w->sbuf = malloc(w->ssize);
    if (!w->conns || !w->vbuf || !w->sbuf) {
        errno = ENOMEM;
        return LG_ENOMEM;
    }
    hist_init(&w->res.ready);
    hist_init(&w->res.parsed);
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->tfd, &ev);
    for (int i = 0; i < cfg->conns; i++) {
        struct lconn *c = &w->conns[i];
        c->rsize = RBUF + cfg->value_size;
        c->rbuf = malloc(c->rsize);
        c->q = calloc(cfg->depth, sizeof(*c->q));
        if (!c->rbuf || !c->q) {
            errno = ENOMEM;
            return LG_ENOMEM;
        }
        bool sock_failed = false;
        c->fd = connect_one(cfg, &sa, &sock_failed);
        if (c->fd < 0)
            return sock_failed ? LG_ESOCKET : LG_ECONNECT;
        ev.data.ptr = c;
        epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev);
    }
    return 0;
}

static uint64_t rnd(struct worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static void kill_conn(struct worker *w, struct lconn *c)
{
    if (c->qlen > 0 || g_phase < PH_DRAIN)
        w->res.deaths++;          /* not our own shutdown: the server closed or reset it */
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->dead = true;
    c->qlen = 0;
}

/* writes all of buf; the socket buffer is rarely full for requests this small, so waiting in
 * poll() (bounded) is simpler than carrying partial writes around */
static bool send_all(struct worker *w, struct lconn *c, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = send(c->fd, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (g_phase == PH_MEASURE)
            w->res.sends++;
        if (k > 0) { buf += k; n -= (size_t)k; continue; }
        if (k < 0 && (errno == EAGAIN || errno == EINTR)) {
            struct pollfd p = { .fd = c->fd, .events = POLLOUT };
            if (poll(&p, 1, 1000) > 0) continue;
        }
        w->res.errors++;
        kill_conn(w, c);
        return false;
    }
    return true;
}

static uint8_t pick_op(struct worker *w)
{
    unsigned r = (unsigned)(rnd(w) % 1000), acc = 0;
    for (int i = 0; i < 4; i++) {
        acc += w->cfg->mix[i];
        if (r < acc) return (uint8_t)i;
    }
    return OP_GET;
}

/* queue n requests on c (op/key chosen here unless given) and send them in one write */
static void issue(struct worker *w, struct lconn *c, int n, uint64_t intended, uint64_t step,
                  int fixed_op, uint32_t first_key)
{
    const struct config *cfg = w->cfg;
    size_t len = 0;
    int queued = 0;
    for (int i = 0; i < n && c->qlen < cfg->depth; i++, queued++) {
        struct request *rq = &c->q[(c->qhead + c->qlen) % cfg->depth];
        rq->op = fixed_op >= 0 ? (uint8_t)fixed_op : pick_op(w);
        if (fixed_op >= 0)
            rq->key = first_key + (uint32_t)i;
        else if (rq->op == OP_INCR)
            rq->key = (uint32_t)(rnd(w) % cfg->counters);
        else
            rq->key = (uint32_t)(rnd(w) % cfg->keys);
        len += format_request(w->sbuf + len, rq->op, rq->key, cfg->value_size, w->vbuf);
        c->qlen++;
        w->sent++;
        rq->intended = intended ? intended + (uint64_t)i * step : 0;
    }
    uint64_t t = now_ns();
    if (intended == 0)                    /* closed loop: the clock starts at send() */
        for (unsigned i = c->qlen - (unsigned)queued; i < c->qlen; i++)
            c->q[(c->qhead + i) % cfg->depth].intended = t;
    send_all(w, c, w->sbuf, len);
}

/* closed loop: n more requests on c, in one write (n replies just read, or the first --pipeline) */
static void closed_next(struct worker *w, struct lconn *c, int n)
{
    uint64_t max = w->cfg->max_ops;
    if (g_phase >= PH_DRAIN || (max && w->sent >= max))
        return;
    if (max && w->sent + (uint64_t)n > max)
        n = (int)(max - w->sent);
    issue(w, c, n, 0, 0, -1, 0);
}

/* parses whatever complete replies c holds; returns how many completed */
static int drain(struct worker *w, struct lconn *c, bool record, bool closed)
{
    const struct config *cfg = w->cfg;
    size_t pos = 0;
    int done = 0;
    while (c->qlen > 0 && !c->dead) {
        struct request *rq = &c->q[c->qhead];
        int hit;
        long r = parse_response(c->rbuf + pos, c->rlen - pos, rq, cfg->value_size, w->vbuf, &hit);
        if (r == 0)
            break;
        uint64_t t = now_ns();
        if (r == INT32_MIN) {
            w->res.errors++;
            fprintf(stderr, "loadgen: unparseable reply '%.40s', closing the connection\n", c->rbuf + pos);
            kill_conn(w, c);
            return done;
        }
        if (r < 0) {
            w->res.errors++;
            if (w->res.errors <= 5)
                fprintf(stderr, "loadgen: wrong reply to op %d key %u: '%.*s'\n", rq->op, rq->key,
                        (int)(-r < 60 ? -r : 60), c->rbuf + pos);
            r = -r;
        } else if (!record) {
            if (rq->op == OP_SET || rq->op == OP_SETCTR)
                w->load_stored++;
        } else if (rq->intended >= __atomic_load_n(&g_measure_start, __ATOMIC_RELAXED)) {
            /* every request sent in the window has its latency recorded, also when its reply
             * comes after the window closed; the throughput counts what completed inside it */
            uint64_t ready = c->ready_at > rq->intended ? c->ready_at : rq->intended;
            hist_add(&w->res.ready, ready - rq->intended);
            hist_add(&w->res.parsed, t - rq->intended);
            if (t > __atomic_load_n(&g_measure_end, __ATOMIC_RELAXED)) {
                /* after the window: latency only */
            } else {
            w->res.ops++;
            if (rq->op == OP_GET) {
                w->res.gets++;
                if (hit) w->res.hits++; else w->res.misses++;
            }
            }
        }
        pos += (size_t)r;
        c->qhead = (c->qhead + 1) % cfg->depth;
        c->qlen--;
        done++;
    }
    if (closed && done > 0 && !c->dead)
        closed_next(w, c, done);
    memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
    c->rlen -= pos;
    if (c->rlen == 0)
        c->ready_at = 0;        /* the next reply's readiness is the next epoll wake-up */
    return done;
}

static void on_readable(struct worker *w, struct lconn *c, uint64_t t, bool record, bool closed)
{
    if (c->ready_at == 0)
        c->ready_at = t;
    if (c->rlen == c->rsize) {
        w->res.errors++;
        kill_conn(w, c);
        return;
    }
    ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rsize - c->rlen, MSG_DONTWAIT);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return;
        fprintf(stderr, "loadgen: the server %s a connection\n", n == 0 ? "closed" : "reset");
        kill_conn(w, c);
        return;
    }
    c->rlen += (size_t)n;
    drain(w, c, record, closed);
}

static int outstanding(struct worker *w)
{
    int n = 0;
    for (int i = 0; i < w->cfg->conns; i++)
        n += w->conns[i].dead ? 0 : (int)w->conns[i].qlen;
    return n;
}

/* one epoll round; timeout in ms */
static void pump(struct worker *w, int timeout, bool record, bool closed)
{
    struct epoll_event evs[64];
    int n = epoll_wait(w->epfd, evs, 64, timeout);
    uint64_t t = now_ns();
    for (int i = 0; i < n; i++) {
        if (evs[i].data.ptr == NULL)
            continue;   /* the timer: no read needed, re-arming it (every round) clears it */
        struct lconn *c = evs[i].data.ptr;
        if (!c->dead)
            on_readable(w, c, t, record, closed);
    }
}

/* warm-up: store every key of this thread's share (pipelined), and the incr counters */
static void load_keys(struct worker *w)
{
    const struct config *cfg = w->cfg;
    uint32_t lo = (uint32_t)((uint64_t)cfg->keys * (unsigned)w->id / (unsigned)cfg->threads);
    uint32_t hi = (uint32_t)((uint64_t)cfg->keys * (unsigned)(w->id + 1) / (unsigned)cfg->threads);
    uint32_t clo = (uint32_t)((uint64_t)cfg->counters * (unsigned)w->id / (unsigned)cfg->threads);
    uint32_t chi = (uint32_t)((uint64_t)cfg->counters * (unsigned)(w->id + 1) / (unsigned)cfg->threads);
    int batch = cfg->depth < 32 ? (int)cfg->depth : 32;
    w->load_expected = (hi - lo) + (chi - clo);
    uint64_t deadline = now_ns() + (uint64_t)(cfg->load_timeout * 1e9);
    for (int ci = 0; (lo < hi || clo < chi) && now_ns() < deadline; ci = (ci + 1) % cfg->conns) {
        struct lconn *c = &w->conns[ci];
        if (c->dead)
            return;                      /* main.c reports the shortfall and stops */
        if (lo < hi) {
            int n = hi - lo < (uint32_t)batch ? (int)(hi - lo) : batch;
            issue(w, c, n, 0, 0, OP_SET, lo);
            lo += (uint32_t)n;
        } else {
            int n = chi - clo < (uint32_t)batch ? (int)(chi - clo) : batch;
            issue(w, c, n, 0, 0, OP_SETCTR, clo);
            clo += (uint32_t)n;
        }
        while (outstanding(w) > 0 && now_ns() < deadline)
            pump(w, 100, false, false);
    }
    w->sent = 0;
}

/* After the window: wait up to --timeout for the replies still due, then count each request
 * of the window that is still unanswered as a timeout, its age so far in the histograms (so it
 * shows in latency_max and the tail) - a frozen server cannot hide behind dropped requests. */
static void finish(struct worker *w)
{
    const struct config *cfg = w->cfg;
    uint64_t end = __atomic_load_n(&g_measure_end, __ATOMIC_ACQUIRE);
    /* the window may not have run at all (load phase failed, every connection dead) */
    uint64_t deadline = end == UINT64_MAX ? 0 : end + (uint64_t)(cfg->timeout * 1e9);
    bool closed = cfg->rate <= 0;
    while (outstanding(w) > 0 && now_ns() < deadline) {
        uint64_t left_ms = (deadline - now_ns()) / 1000000u + 1;
        pump(w, left_ms < 100 ? (int)left_ms : 100, true, closed);
    }
    uint64_t t = now_ns(), start = __atomic_load_n(&g_measure_start, __ATOMIC_RELAXED);
    for (int i = 0; i < cfg->conns; i++) {
        struct lconn *c = &w->conns[i];
        if (c->dead)
            continue;
        for (unsigned j = 0; j < c->qlen; j++) {
            const struct request *rq = &c->q[(c->qhead + j) % cfg->depth];
            if (rq->intended < start)
                continue;
            w->res.timeouts++;
            hist_add(&w->res.ready, t - rq->intended);
            hist_add(&w->res.parsed, t - rq->intended);
        }
    }
}

/* at == 0 disarms; setting the timer also resets its expiry count, so it stops being readable */
static void arm_timer(struct worker *w, uint64_t at)
{
    struct itimerspec its = { .it_value = { .tv_sec = (time_t)(at / 1000000000u),
                                            .tv_nsec = (long)(at % 1000000000u) } };
    timerfd_settime(w->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

void *worker_main(void *arg)
{
    struct worker *w = arg;
    const struct config *cfg = w->cfg;
    if (cfg->ncpus > 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cfg->cpus[w->id % cfg->ncpus], &set);
        pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
    }
    w->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    if (cfg->load)
        load_keys(w);
    __atomic_store_n(&w->load_done, 1, __ATOMIC_RELEASE);
    while (g_phase == PH_LOAD)
        usleep(1000);
    bool closed = cfg->rate <= 0;
    if (closed) {
        for (int i = 0; i < cfg->conns; i++)
            if (!w->conns[i].dead)
                closed_next(w, &w->conns[i], (int)cfg->pipeline);
        while (g_phase < PH_DRAIN && outstanding(w) > 0)
            pump(w, 100, true, true);
        finish(w);
        return NULL;
    }
    /* open loop: per-connection schedule, staggered so the threads do not send in lockstep.
     * Timer slack down from 50 us to 1 us: requests leave on time (lateness would count as
     * latency, correctly, but it would be the generator's, not the server's) */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    uint64_t interval = (uint64_t)(1e9 * cfg->conns * cfg->threads / cfg->rate);
    if (interval == 0) interval = 1;
    uint64_t start = now_ns();
    for (int i = 0; i < cfg->conns; i++)
        w->conns[i].next_send = start + interval * (uint64_t)(w->id * cfg->conns + i) /
                                (uint64_t)(cfg->conns * cfg->threads);
    while (g_phase < PH_DRAIN) {
        uint64_t t = now_ns(), next = UINT64_MAX;
        for (int i = 0; i < cfg->conns; i++) {
            struct lconn *c = &w->conns[i];
            if (c->dead) continue;
            uint64_t room = cfg->depth - c->qlen;
            if (c->next_send <= t && room > 0) {
                /* everything due goes out now, stamped with its own intended time; a full
                 * pipeline delays requests but never drops them from the schedule */
                uint64_t due = (t - c->next_send) / interval + 1;
                if (due > room) due = room;
                if (cfg->max_ops && w->sent + due > cfg->max_ops)
                    due = w->sent < cfg->max_ops ? cfg->max_ops - w->sent : 0;
                if (due > 0)
                    issue(w, c, (int)due, c->next_send, interval, -1, 0);
                c->next_send += due * interval;
            }
            /* a full connection is woken by its replies, not by the timer */
            if (c->qlen < cfg->depth && c->next_send < next) next = c->next_send;
        }
        if (cfg->max_ops && w->sent >= cfg->max_ops && outstanding(w) == 0)
            break;
        arm_timer(w, next == UINT64_MAX ? 0 : next);
        pump(w, 100, true, false);
    }
    arm_timer(w, 0);
    finish(w);
    return NULL;
}
