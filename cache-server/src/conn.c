/* Connection buffers and socket I/O. Input is read into rbuf and parsed in place; replies are a
 * list of segments, either text in wbuf or a referenced item's value (no copy of values), sent
 * with one sendmsg per batch. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "cache.h"
#include "conn.h"

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n);
    if (q == NULL)
        abort();             /* a few KB for a connection: nothing sensible to do without it */
    return q;
}

conn *conn_new_buffers(int fd)
{
    conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        abort();
    c->fd = fd;
    c->state = CONN_CMD;
    c->rsize = RBUF_INITIAL;
    c->rbuf = xrealloc(NULL, c->rsize);
    c->wsize = 1024;
    c->wbuf = xrealloc(NULL, c->wsize);
    c->ssize = 16;
    c->segs = xrealloc(NULL, c->ssize * sizeof(*c->segs));
    return c;
}

void conn_release_output(conn *c)
{
    for (size_t i = 0; i < c->nsegs; i++)
        if (c->segs[i].it != NULL)
            item_release(c->segs[i].it);
    c->nsegs = c->wlen = c->sent = c->out_bytes = 0;
    memset(&c->kept, 0, sizeof(c->kept));
}

struct outmark out_mark(conn *c)
{
    struct outmark m = { c->nsegs, c->wlen, c->out_bytes,
                         c->nsegs > 0 ? c->segs[c->nsegs - 1].len : 0 };
    return m;
}

/* drops the replies queued after m (never what was already sent: callers check) */
void out_truncate(conn *c, struct outmark m)
{
    for (size_t i = m.nsegs; i < c->nsegs; i++)
        if (c->segs[i].it != NULL)
            item_release(c->segs[i].it);
    c->nsegs = m.nsegs;
    c->wlen = m.wlen;
    c->out_bytes = m.out;
    if (m.nsegs > 0)
        c->segs[m.nsegs - 1].len = m.last_len;
}

void conn_free_buffers(conn *c)
{
    conn_release_output(c);
    if (c->item != NULL)           /* a client that left in the middle of a value */
        item_release(c->item);
    free(c->rbuf);
    free(c->wbuf);
    free(c->segs);
    free(c);
}

static struct outseg *new_seg(conn *c)
{
    if (c->nsegs == c->ssize) {
        c->ssize *= 2;
        c->segs = xrealloc(c->segs, c->ssize * sizeof(*c->segs));
    }
    return &c->segs[c->nsegs++];
}

void out_bytes(conn *c, const char *s, size_t n)
{
    if (c->wlen + n > c->wsize) {
        while (c->wlen + n > c->wsize)
            c->wsize *= 2;
        c->wbuf = xrealloc(c->wbuf, c->wsize);
    }
    memcpy(c->wbuf + c->wlen, s, n);
    struct outseg *last = c->nsegs > 0 ? &c->segs[c->nsegs - 1] : NULL;
    if (last != NULL && last->it == NULL && last->off + last->len == c->wlen) {
        last->len += (uint32_t)n;
    } else {
        struct outseg *sg = new_seg(c);
        sg->it = NULL;
        sg->off = (uint32_t)c->wlen;
        sg->len = (uint32_t)n;
    }
    c->wlen += n;
    c->out_bytes += n;
}

void out_item(conn *c, item *it)
{
    struct outseg *sg = new_seg(c);
    sg->it = it;
    sg->off = 0;
    sg->len = it->nbytes;
    c->out_bytes += it->nbytes;
}

/* Appends received bytes (tests and fuzzer; the server reads straight into rbuf). */
void conn_feed(conn *c, const char *data, size_t n)
{
    if (c->rpos > 0) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    if (c->rlen + n > c->rsize) {
        while (c->rlen + n > c->rsize)
            c->rsize *= 2;
        c->rbuf = xrealloc(c->rbuf, c->rsize);
    }
    memcpy(c->rbuf + c->rlen, data, n);
    c->rlen += n;
}

/* Makes room at rbuf's end for a read (parsed input moved out, the buffer doubled when an unfinished
 * line fills it): 0, or -1 when that line is past the multiget bound. Not while a read is in flight. */
int conn_room(conn *c)
{
    if (c->rpos > 0) {
        memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
        c->rlen -= c->rpos;
        c->rpos = 0;
    }
    if (c->rlen == c->rsize) {
        /* only a multiget line still waiting for its newline fills the buffer; the parser has
         * already closed lines past GET_LINE_LIMIT, so this stays bounded */
        if (c->rsize > GET_LINE_LIMIT)
            return -1;
        c->rsize *= 2;
        c->rbuf = xrealloc(c->rbuf, c->rsize);
    }
    return 0;
}

/* n bytes arrived at rbuf + rlen */
void conn_received(conn *c, size_t n)
{
    c->rlen += n;
    BUMP(tstats.bytes_read, (uint64_t)n);
}

/* 1: read something, 0: peer closed, -1: nothing to read now, -2: error */
int conn_read(conn *c)
{
    if (conn_room(c) < 0)
        return -2;
    ssize_t n = read(c->fd, c->rbuf + c->rlen, c->rsize - c->rlen);
    if (n > 0) {
        conn_received(c, (size_t)n);
        return 1;
    }
    if (n == 0)
        return 0;
    return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? -1 : -2;
}

/* The unsent output as at most max iovecs (segments after the first max wait for the next send):
 * returns their count, *len their bytes. */
int conn_out_iov(conn *c, struct iovec *iov, int max, size_t *len)
{
    int n = 0;
    size_t skip = c->sent, pos = 0, total = 0;
    for (size_t i = 0; i < c->nsegs && n < max; i++) {
        struct outseg *sg = &c->segs[i];
        if (pos + sg->len <= skip) {
            pos += sg->len;
            continue;
        }
        size_t from = skip > pos ? skip - pos : 0;
        char *base = sg->it != NULL ? ITEM_data(sg->it) + sg->off : c->wbuf + sg->off;
        iov[n].iov_base = base + from;
        iov[n].iov_len = sg->len - from;
        total += iov[n].iov_len;
        n++;
        pos += sg->len;
    }
    *len = total;
    return n;
}

/* n more bytes of the output are gone; once all are, the output is released */
void conn_sent(conn *c, size_t n)
{
    c->sent += n;
    BUMP(tstats.bytes_written, (uint64_t)n);
    if (c->sent >= c->out_bytes)
        conn_release_output(c);
}

/* 1: all output sent (and released), 0: the socket is full, -1: error */
int conn_write(conn *c)
{
    while (c->sent < c->out_bytes) {
        struct iovec iov[64];
        size_t len;
        int n = conn_out_iov(c, iov, 64, &len);
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t)n };
        ssize_t w = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);   /* never blocks: see uring.c */
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            return -1;
        }
        c->sent += (size_t)w;
        BUMP(tstats.bytes_written, (uint64_t)w);
    }
    conn_release_output(c);
    return 1;
}
