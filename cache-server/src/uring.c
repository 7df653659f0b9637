/* The io_uring event backend (--io-backend io_uring): the connections, buffers and protocol code
 * of the epoll path (conn.c, proto.c), with fewer kernel entries. One ring per worker; a whole
 * batch (every connection's reply and next receive) is submitted by the same io_uring_enter that
 * waits for the next completion, where the epoll path makes a read, a sendmsg and part of an
 * epoll_wait per request (README, "Issue 27: io_uring").
 *
 * A connection has one of these in flight, never more:
 *   - a RECV into rbuf's free end (posted when the parser has run dry and no reply is unsent);
 *   - a SEND of the unsent replies linked to the RECV that follows it (the parser ran dry): the
 *     RECV starts only once every byte is sent (MSG_WAITALL; a send that fails cancels it), and a
 *     successful send posts no completion (CQE_SKIP_SUCCESS), so one completion per request;
 *   - a SEND alone, when input is left to parse after it (the 1 MB high-water stop) or the replies
 *     need more than one send's iovecs: its completion continues the parse.
 * So, as in event.c, nothing is read while replies are unsent, nothing is parsed while a send is
 * in flight, buffers are only moved with nothing in flight, and a connection is closed (and freed)
 * only when its last operation has completed. Each completion gives a connection one round
 * (parse, queue one send), so one deep pipeline cannot starve the others.
 *
 * Raw syscalls and the kernel's <linux/io_uring.h>, no liburing: nothing new to build on either
 * path (Debian, Nix). Needs Linux 6.1 (deferred task work; 5.11 without it). */
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "cache.h"
#include "conn.h"

#define SQ_ENTRIES 256
#define CQ_ENTRIES 4096     /* at most one completion in flight per connection, plus two polls */
#define SEND_IOV 64         /* as conn_write */

struct ring {
    int fd;
    unsigned *sq_head, *sq_tail, *sq_array, sq_mask, sq_entries;
    unsigned *cq_head, *cq_tail, cq_mask;
    struct io_uring_sqe *sqes;
    struct io_uring_cqe *cqes;
    unsigned tail;          /* our SQ tail; the kernel sees it at the next enter */
    bool disabled;          /* created disabled: the worker that submits enables it */
};

struct uconn {
    conn *c;
    struct msghdr mh;       /* the send in flight reads these until it completes */
    struct iovec iov[SEND_IOV];
    size_t sending;         /* bytes of that send */
    bool linked;            /* it is followed by a RECV (its success posts no completion) */
    bool dry;               /* the last parse stopped for want of input, not at the high-water mark */
    bool send_failed, recv_cancelled;
};

/* user_data: a uconn's address with the operation in its low bits, or one of the small constants */
enum { OP_RECV = 1, OP_SEND = 2, OP_LSEND = 3, UD_ACCEPT = 8, UD_RPC = 16 };

static int sys_enter(int fd, unsigned submit, unsigned wait, unsigned flags, void *arg, size_t argsz)
{
    return (int)syscall(__NR_io_uring_enter, fd, submit, wait, flags, arg, argsz);
}

struct ring *uring_create(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    /* one worker submits and reaps: completions' task work runs when it waits, not in interrupts */
    p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP | IORING_SETUP_R_DISABLED |
              IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    p.cq_entries = CQ_ENTRIES;
    int fd = (int)syscall(__NR_io_uring_setup, SQ_ENTRIES, &p);
    if (fd < 0 && errno == EINVAL) {     /* before Linux 6.1 */
        memset(&p, 0, sizeof(p));
        p.flags = IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
        p.cq_entries = CQ_ENTRIES;
        fd = (int)syscall(__NR_io_uring_setup, SQ_ENTRIES, &p);
    }
    if (fd < 0) {
        fprintf(stderr, "cache-server: --io-backend io_uring: io_uring_setup: %s%s\n", strerror(errno),
                errno == EPERM ? " (see sysctl kernel.io_uring_disabled)" : "");
        return NULL;
    }
    unsigned need = IORING_FEAT_SINGLE_MMAP | IORING_FEAT_NODROP | IORING_FEAT_EXT_ARG;
    if ((p.features & need) != need) {
        fprintf(stderr, "cache-server: --io-backend io_uring: this kernel's io_uring is too old (needs 5.11)\n");
        close(fd);
        return NULL;
    }
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    size_t len = sq_len > cq_len ? sq_len : cq_len;
    char *rings = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
    void *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
    struct ring *r = calloc(1, sizeof(*r));
    if (rings == MAP_FAILED || sqes == MAP_FAILED || r == NULL) {
        fprintf(stderr, "cache-server: --io-backend io_uring: cannot map the rings: %s\n", strerror(errno));
        close(fd);
        return NULL;
    }
    r->fd = fd;
    r->sq_head = (unsigned *)(rings + p.sq_off.head);
    r->sq_tail = (unsigned *)(rings + p.sq_off.tail);
    r->sq_array = (unsigned *)(rings + p.sq_off.array);
    r->sq_mask = *(unsigned *)(rings + p.sq_off.ring_mask);
    r->sq_entries = p.sq_entries;
    r->cq_head = (unsigned *)(rings + p.cq_off.head);
    r->cq_tail = (unsigned *)(rings + p.cq_off.tail);
    r->cq_mask = *(unsigned *)(rings + p.cq_off.ring_mask);
    r->cqes = (struct io_uring_cqe *)(rings + p.cq_off.cqes);
    r->sqes = sqes;
    r->tail = *r->sq_tail;
    r->disabled = (p.flags & IORING_SETUP_R_DISABLED) != 0;
    return r;
}

/* Hands the kernel every queued SQE; with wait, also waits (at most timeout_ms) for a completion. */
static void ring_enter(struct ring *r, bool wait, long timeout_ms)
{
    __atomic_store_n(r->sq_tail, r->tail, __ATOMIC_RELEASE);
    for (int tries = 0;; tries++) {
        unsigned n = r->tail - __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE);
        if (n == 0 && !wait)
            return;
        struct __kernel_timespec ts = { timeout_ms / 1000, (timeout_ms % 1000) * 1000000 };
        struct io_uring_getevents_arg ga = { .ts = (uint64_t)(uintptr_t)&ts };
        int rc = wait ? sys_enter(r->fd, n, 1, IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG, &ga, sizeof(ga))
                      : sys_enter(r->fd, n, 0, 0, NULL, 0);
        if (rc >= 0 || errno == ETIME)
            return;
        if ((errno != EINTR && errno != EAGAIN && errno != EBUSY) || tries == 1000) {
            perror("cache-server: io_uring_enter");
            abort();                     /* a ring that takes no work cannot serve anyone */
        }
    }
}

/* n free SQEs, handing the queued ones to the kernel first if there are not (a linked pair must
 * not be split across two enters: the link would end at the first) */
static void sq_reserve(struct ring *r, unsigned n)
{
    if (r->tail - __atomic_load_n(r->sq_head, __ATOMIC_ACQUIRE) + n > r->sq_entries)
        ring_enter(r, false, 0);
}

static struct io_uring_sqe *sqe_get(struct ring *r, int op, int fd, uint64_t ud)
{
    sq_reserve(r, 1);
    unsigned i = r->tail & r->sq_mask;
    struct io_uring_sqe *s = &r->sqes[i];
    memset(s, 0, sizeof(*s));
    s->opcode = (uint8_t)op;
    s->fd = fd;
    s->user_data = ud;
    r->sq_array[i] = i;
    r->tail++;
    return s;
}

static void poll_arm(struct ring *r, int fd, uint64_t ud)
{
    struct io_uring_sqe *s = sqe_get(r, IORING_OP_POLL_ADD, fd, ud);
    s->poll32_events = POLLIN;
}

/* nothing of the connection is in flight here (the header's rule), so it can go at once */
static void uconn_close(struct uconn *uc)
{
    close(uc->c->fd);
    conn_free_buffers(uc->c);
    __atomic_sub_fetch(&stat_curr_conns, 1, __ATOMIC_RELAXED);
    free(uc);
}

static void post_recv(struct ring *r, struct uconn *uc, bool poll_first)
{
    conn *c = uc->c;
    struct io_uring_sqe *s = sqe_get(r, IORING_OP_RECV, c->fd, (uint64_t)(uintptr_t)uc | OP_RECV);
    s->addr = (uint64_t)(uintptr_t)(c->rbuf + c->rlen);
    s->len = (uint32_t)(c->rsize - c->rlen);
    if (poll_first)              /* right after our reply the request is not there yet: wait first */
        s->ioprio = IORING_RECVSEND_POLL_FIRST;
}

/* One round: parse what is buffered once the replies are gone, then send, or receive. */
static void advance(struct ring *r, struct uconn *uc)
{
    conn *c = uc->c;
    if (c->sent == c->out_bytes) {       /* earlier replies first, as event.c */
        if (proto_process(c) < 0) {      /* quit or a protocol violation: flush what we can */
            conn_write(c);
            uconn_close(uc);
            return;
        }
        uc->dry = c->out_bytes - c->sent < OUT_HIGH_WATER;
    }
    if (c->sent < c->out_bytes) {
        size_t len;
        uc->mh.msg_iov = uc->iov;
        uc->mh.msg_iovlen = (size_t)conn_out_iov(c, uc->iov, SEND_IOV, &len);
        uc->sending = len;
        /* the parser wants input after this send: receive as soon as it is done */
        uc->linked = uc->dry && c->sent + len == c->out_bytes && conn_room(c) == 0;
        sq_reserve(r, 2);
        struct io_uring_sqe *s = sqe_get(r, IORING_OP_SENDMSG, c->fd,
                                         (uint64_t)(uintptr_t)uc | (uc->linked ? OP_LSEND : OP_SEND));
        s->addr = (uint64_t)(uintptr_t)&uc->mh;
        s->msg_flags = MSG_NOSIGNAL | MSG_WAITALL;
        if (uc->linked) {
            s->flags = IOSQE_IO_LINK | IOSQE_CQE_SKIP_SUCCESS;
            post_recv(r, uc, true);
        }
        return;
    }
    if (conn_room(c) < 0) {              /* a multiget line past its bound, as conn_read */
        uconn_close(uc);
        return;
    }
    post_recv(r, uc, false);
}

void uring_add(struct ring *r, conn *c)
{
    struct uconn *uc = calloc(1, sizeof(*uc));
    if (uc == NULL)
        abort();
    uc->c = c;
    /* the ring waits for the socket itself; a non-blocking socket would only add failed tries
     * (conn_write, the one direct send, says MSG_DONTWAIT) */
    int fl = fcntl(c->fd, F_GETFL);
    if (fl >= 0)
        fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
    post_recv(r, uc, false);
}

static void complete(struct ring *r, const struct io_uring_cqe *cqe)
{
    struct uconn *uc = (struct uconn *)(uintptr_t)(cqe->user_data & ~(uint64_t)7);
    int res = cqe->res;
    switch (cqe->user_data & 7) {
    case OP_RECV:
        if (res == -ECANCELED) {         /* the send before it failed; both completions end it */
            uc->recv_cancelled = true;
            if (uc->send_failed)
                uconn_close(uc);
            return;
        }
        if (uc->linked) {                /* it ran, so the send before it sent every byte */
            uc->linked = false;
            conn_sent(uc->c, uc->sending);
        }
        if (res <= 0) {                  /* the peer closed, or an error: as conn_read's 0 and -2 */
            uconn_close(uc);
            return;
        }
        conn_received(uc->c, (size_t)res);
        advance(r, uc);
        return;
    case OP_SEND:
        if (res < 0 || (size_t)res != uc->sending) {   /* MSG_WAITALL: all or an error */
            uconn_close(uc);
            return;
        }
        conn_sent(uc->c, uc->sending);
        advance(r, uc);
        return;
    case OP_LSEND:                       /* only a failure posts one */
        uc->send_failed = true;
        if (uc->recv_cancelled)
            uconn_close(uc);
        return;
    }
}

void uring_run(struct ring *r, int evfd, int rpcfd, void (*on_accept)(void *), void *arg)
{
    if (r->disabled &&
        syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_ENABLE_RINGS, NULL, 0) != 0) {
        perror("cache-server: io_uring_register(ENABLE_RINGS)");
        abort();
    }
    poll_arm(r, evfd, UD_ACCEPT);
    if (rpcfd >= 0)
        poll_arm(r, rpcfd, UD_RPC);
    bool qsbr = settings.lock_mode == LM_OPTIMISTIC;
    for (;;) {
        /* waiting = holding no item pointer (as epoll_wait in thread.c); with retired items
         * pending, wake up soon to free them */
        if (qsbr)
            qsbr_offline();
        ring_enter(r, true, qsbr && qsbr_pending() ? 10 : 1000);
        if (qsbr)
            qsbr_online();
        clock_update();
        for (;;) {
            unsigned head = *r->cq_head;
            if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
                break;
            struct io_uring_cqe cqe = r->cqes[head & r->cq_mask];
            __atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
            if (cqe.user_data == UD_ACCEPT) {
                on_accept(arg);
                poll_arm(r, evfd, UD_ACCEPT);
            } else if (cqe.user_data == UD_RPC) {
                shard_serve();
                poll_arm(r, rpcfd, UD_RPC);
            } else {
                complete(r, &cqe);
            }
        }
        if (qsbr)
            qsbr_quiescent();
    }
}
