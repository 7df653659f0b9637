/* One readiness event on a connection: write queued replies, parse, read, repeat (thread.c's
 * workers call it; the socket fuzzer calls it directly on a socketpair). A connection gets a
 * bounded number of rounds per event so that one busy client cannot starve the others; when it
 * stops at that bound with work left (replies queued, or requests read but not yet parsed) it
 * asks for EPOLLOUT as well, which a writable socket reports at once, so the work continues in
 * the next batch instead of waiting for the client to send more. */
#include <sys/epoll.h>
#include <unistd.h>
#include "cache.h"
#include "conn.h"

/* rounds per event; a variable so that the socket fuzzer can make the limit bite on small inputs */
int conn_event_rounds = 16;

static void watch(int epfd, conn *c, uint32_t events)
{
    if (c->watching == events)
        return;
    struct epoll_event ev = { .events = events, .data.ptr = c };
    if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->watching = events;
}

int conn_watch_new(int epfd, conn *c)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    c->watching = EPOLLIN;
    return epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
}

void conn_close(int epfd, conn *c)
{
    epoll_ctl(epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    conn_free_buffers(c);
    __atomic_sub_fetch(&stat_curr_conns, 1, __ATOMIC_RELAXED);
}

/* Read once, parse everything complete, reply; read again only if that read filled the buffer
 * (a short read means the socket is drained: one read and one sendmsg per request, no extra read
 * that would just say EAGAIN). Returns -1 when the connection was closed (and freed). */
int conn_event(int epfd, conn *c, uint32_t events)
{
    if (events & (EPOLLERR | EPOLLHUP) && !(events & EPOLLIN)) {
        conn_close(epfd, c);
        return -1;
    }
    bool drained = false;
    for (int round = 0; round < conn_event_rounds; round++) {
        if (c->sent < c->out_bytes) {    /* earlier replies first */
            int wr = conn_write(c);
            if (wr < 0) { conn_close(epfd, c); return -1; }
            if (wr == 0) { watch(epfd, c, EPOLLOUT); return 0; }   /* not read until it drains */
        }
        int r = proto_process(c);        /* also leftovers, e.g. after a high-water stop */
        if (r < 0) {                     /* quit or a protocol violation: flush what we can */
            conn_write(c);
            conn_close(epfd, c);
            return -1;
        }
        if (c->out_bytes > 0)
            continue;                    /* write it at the top of the loop */
        /* nothing queued, nothing parseable left: only the socket can bring more */
        if (drained || (events & EPOLLOUT && !(events & EPOLLIN) && round == 0)) {
            watch(epfd, c, EPOLLIN);
            return 0;
        }
        int rd = conn_read(c);
        if (rd == 0 || rd == -2) { conn_close(epfd, c); return -1; }
        if (rd == -1) {
            watch(epfd, c, EPOLLIN);
            return 0;
        }
        drained = c->rlen < c->rsize;
    }
    /* out of rounds: replies may be queued or input read but unparsed; come back next batch */
    watch(epfd, c, EPOLLIN | EPOLLOUT);
    return 0;
}
