/* libFuzzer target over the socket layer: the input is split into reads (first byte = chunk
 * count) written one after another into a socketpair whose other end is a server connection
 * driven by conn_event (event.c) from a real epoll set, as a worker would, with a round limit of
 * 1-4 and sometimes a small send buffer so that small inputs reach both limits. After each chunk the
 * event loop runs until epoll reports nothing; the peer end is drained meanwhile, as a client
 * that reads would. Then every request the connection has received must be answered: nothing
 * left unread in the socket, no complete request left unparsed, no reply left unsent - all
 * without further input (issue 12: a reply queued in the last of the bounded rounds used to
 * wait for the client's next request). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cache.h"
#include "conn.h"

static int initialised, epfd;

static void drain_peer(int fd)
{
    char buf[65536];
    while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {}
}

/* true when conn_event closed the connection */
static bool run_until_quiet(conn *c, int peer)
{
    struct epoll_event ev[4];
    for (int spins = 0; spins < 1000000; spins++) {
        drain_peer(peer);
        int n = epoll_wait(epfd, ev, 4, 0);
        if (n == 0)
            return false;
        for (int i = 0; i < n; i++)
            if (conn_event(epfd, ev[i].data.ptr, ev[i].events) < 0)
                return true;
    }
    (void)c;
    abort();                             /* events that never settle: a livelock */
}

static bool complete_request_left(conn *c)
{
    size_t avail = c->rlen - c->rpos;
    if (c->out_bytes - c->sent >= OUT_HIGH_WATER)
        return false;                    /* parsing waits for the writer, legitimately */
    switch (c->state) {
    case CONN_CMD: return memchr(c->rbuf + c->rpos, '\n', avail) != NULL;
    case CONN_NREAD: return avail > 0;   /* the value's bytes are consumed as they come */
    case CONN_SWALLOW: return avail > 0;
    default: return false;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!initialised) {
        settings.maxbytes = 1u << 20;
        settings.item_size_max = 64u << 10;
        clock_init();
        assoc_init(settings.maxbytes);
        lru_init();
        locks_init(LM_STRIPED);
        stats_register_thread();
        epfd = epoll_create1(EPOLL_CLOEXEC);
        if (epfd < 0)
            abort();
        initialised = 1;
    }
    if (size == 0)
        return 0;
    size_t chunks = (size_t)(data[0] % 8) + 1;
    /* a round limit of 1-4 and a small send buffer: 4 KB inputs then reach the limit and the
     * full-socket path as often as megabytes of pipelined requests do on a real server */
    conn_event_rounds = 1 + (data[0] >> 3) % 4;
    bool small_sndbuf = data[0] & 0x20;
    data++;
    size--;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    if (small_sndbuf) {
        int sz = 4096;
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    }
    conn *c = conn_new_buffers(sv[0]);
    __atomic_add_fetch(&stat_curr_conns, 1, __ATOMIC_RELAXED);
    if (conn_watch_new(epfd, c) != 0)
        abort();
    bool closed = false;
    size_t step = size / chunks + 1;
    for (size_t off = 0; off < size && !closed; off += step) {
        size_t n = size - off < step ? size - off : step;
        if (send(sv[1], data + off, n, MSG_NOSIGNAL) != (ssize_t)n)
            abort();                     /* 4 KB inputs: the socket buffer holds a chunk */
        closed = run_until_quiet(c, sv[1]);
        if (closed)
            break;
        int unread = 0;
        ioctl(sv[0], FIONREAD, &unread);
        if (unread != 0 || complete_request_left(c) || c->sent != c->out_bytes)
            abort();                     /* something received is waiting for more input */
    }
    if (!closed)
        conn_close(epfd, c);
    close(sv[1]);
    qsbr_quiescent();
    if (item_mem_used() > settings.maxbytes)
        abort();
    return 0;
}
