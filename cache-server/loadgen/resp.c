/* Requests and the checking of every response: a GET must return exactly the value written for
 * its key (or miss), a SET must be STORED, and so on; anything else counts as an error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lg.h"

/* deterministic value of a key: a GET can be checked without remembering what was set */
void value_for(uint32_t key, uint32_t size, char *out)
{
    for (uint32_t j = 0; j < size; j++)
        out[j] = (char)('a' + (key + j) % 26);
}

int key_name(char *out, uint8_t op, uint32_t key)
{
    return sprintf(out, op == OP_INCR || op == OP_SETCTR ? "ctr:%010u" : "key:%010u", key);
}

size_t format_request(char *out, uint8_t op, uint32_t key, uint32_t vsize, char *vbuf)
{
    char k[32];
    key_name(k, op, key);
    switch (op) {
    case OP_GET: return (size_t)sprintf(out, "get %s\r\n", k);
    case OP_DELETE: return (size_t)sprintf(out, "delete %s\r\n", k);
    case OP_INCR: return (size_t)sprintf(out, "incr %s 1\r\n", k);
    case OP_SETCTR: return (size_t)sprintf(out, "set %s 0 0 1\r\n0\r\n", k);
    default: {
        size_t n = (size_t)sprintf(out, "set %s 0 0 %u\r\n", k, vsize);
        value_for(key, vsize, vbuf);
        memcpy(out + n, vbuf, vsize);
        memcpy(out + n + vsize, "\r\n", 2);
        return n + vsize + 2;
    }
    }
}

static const char *line_end(const char *buf, size_t len)
{
    const char *nl = memchr(buf, '\n', len);
    return nl;
}

static long simple(const char *buf, size_t len, const char *a, const char *b)
{
    const char *nl = line_end(buf, len);
    if (nl == NULL)
        return 0;
    long n = nl - buf + 1;
    size_t la = strlen(a);
    if ((size_t)n == la && memcmp(buf, a, la) == 0) return n;
    if (b != NULL && (size_t)n == strlen(b) && memcmp(buf, b, (size_t)n) == 0) return n;
    return -n;
}

long parse_response(const char *buf, size_t len, const struct request *rq, uint32_t vsize,
                    char *vbuf, int *hit)
{
    *hit = 0;
    switch (rq->op) {
    case OP_SET:
    case OP_SETCTR: return simple(buf, len, "STORED\r\n", NULL);
    case OP_DELETE: return simple(buf, len, "DELETED\r\n", "NOT_FOUND\r\n");
    case OP_INCR: {
        const char *nl = line_end(buf, len);
        if (nl == NULL) return 0;
        long n = nl - buf + 1;
        if (n == 11 && memcmp(buf, "NOT_FOUND\r\n", 11) == 0) return n;
        for (long i = 0; i < n - 2; i++)
            if (buf[i] < '0' || buf[i] > '9') return -n;
        return n > 2 && buf[n - 2] == '\r' ? n : -n;
    }
    default: break;
    }
    const char *nl = line_end(buf, len);
    if (nl == NULL)
        return 0;
    long n = nl - buf + 1;
    if (n == 5 && memcmp(buf, "END\r\n", 5) == 0)
        return n;                                   /* a miss */
    char k[32], expect[96];
    key_name(k, rq->op, rq->key);
    int hl = snprintf(expect, sizeof(expect), "VALUE %s 0 %u\r\n", k, vsize);
    if (n != hl || memcmp(buf, expect, (size_t)hl) != 0)
        return INT32_MIN;                           /* cannot tell where this reply ends */
    size_t total = (size_t)hl + vsize + 2 + 5;
    if (len < total)
        return 0;
    value_for(rq->key, vsize, vbuf);
    if (memcmp(buf + hl, vbuf, vsize) != 0 || memcmp(buf + hl + vsize, "\r\nEND\r\n", 7) != 0)
        return -(long)total;
    *hit = 1;
    return (long)total;
}
