/* Socket-side connection helpers (conn.c). */
#ifndef CONN_H
#define CONN_H
#include "cache.h"
void conn_feed(conn *c, const char *data, size_t n);
int conn_read(conn *c);
int conn_write(conn *c);
#endif
