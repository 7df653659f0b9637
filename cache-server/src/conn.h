/* Socket-side connection helpers (conn.c). */
#ifndef CONN_H
#define CONN_H
#include <sys/uio.h>
#include "cache.h"
void conn_feed(conn *c, const char *data, size_t n);
int conn_read(conn *c);
int conn_write(conn *c);
int conn_room(conn *c);
void conn_received(conn *c, size_t n);
int conn_out_iov(conn *c, struct iovec *iov, int max, size_t *len);
void conn_sent(conn *c, size_t n);
/* event.c: epoll registration and one readiness event (-1: the connection was closed) */
int conn_watch_new(int epfd, conn *c);
void conn_close(int epfd, conn *c);
int conn_event(int epfd, conn *c, uint32_t events);
extern int conn_event_rounds;
/* uring.c: the io_uring backend, one ring per worker (--io-backend io_uring) */
struct ring;
struct ring *uring_create(void);    /* NULL when the kernel refuses (said on stderr) */
void uring_add(struct ring *r, conn *c);
void uring_run(struct ring *r, int evfd, int rpcfd, void (*on_accept)(void *), void *arg);
#endif
