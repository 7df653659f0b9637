/* Socket-side connection helpers (conn.c). */
#ifndef CONN_H
#define CONN_H
#include "cache.h"
void conn_feed(conn *c, const char *data, size_t n);
int conn_read(conn *c);
int conn_write(conn *c);
/* event.c: epoll registration and one readiness event (-1: the connection was closed) */
int conn_watch_new(int epfd, conn *c);
void conn_close(int epfd, conn *c);
int conn_event(int epfd, conn *c, uint32_t events);
extern int conn_event_rounds;
#endif
