/* Requests and the checking of every response: a GET must return exactly the value written for
 * its key (or miss), a SET must be STORED, and so on; anything else counts as an error.
 * Everything here runs once per request, so it formats and compares with memcpy/memcmp, not
 * printf: sprintf's format parsing and a per-byte value loop were a visible share of the
 * generator's own CPU per GET, which decides whether the server or the client is the limit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lg.h"

/* the value of key k is byte j = 'a' + (k + j) % 26: with period 26, every 26-byte run of it
 * starts at abc2 + k % 26 */
static const char abc2[] = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz";

/* deterministic value of a key: a GET can be checked without remembering what was set */
void value_for(uint32_t key, uint32_t size, char *out)
{
    const char *run = abc2 + key % 26;
    for (uint32_t j = 0; j < size; j += 26)
        memcpy(out + j, run, size - j < 26 ? size - j : 26);
}

static bool value_is(const char *buf, uint32_t key, uint32_t size)
{
    const char *run = abc2 + key % 26;
    for (uint32_t j = 0; j < size; j += 26)
        if (memcmp(buf + j, run, size - j < 26 ? size - j : 26) != 0)
            return false;
    return true;
}

/* decimal of v at p, at least `width` digits (zero-padded); returns the end */
static char *put_u32(char *p, uint32_t v, int width)
{
    char tmp[10];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n < width)
        tmp[n++] = '0';
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

/* "key:%010u" or "ctr:%010u" (not terminated); returns its length */
int key_name(char *out, uint8_t op, uint32_t key)
{
    memcpy(out, op == OP_INCR || op == OP_SETCTR ? "ctr:" : "key:", 4);
    return (int)(put_u32(out + 4, key, 10) - out);
}

static char *put(char *p, const char *s, size_t n)
{
    memcpy(p, s, n);
    return p + n;
}

size_t format_request(char *out, uint8_t op, uint32_t key, uint32_t vsize, char *vbuf)
{
    char *p = out;
    switch (op) {
    case OP_GET: p = put(p, "get ", 4); break;
    case OP_DELETE: p = put(p, "delete ", 7); break;
    case OP_INCR: p = put(p, "incr ", 5); break;
    default: p = put(p, "set ", 4); break;
    }
    p += key_name(p, op, key);
    switch (op) {
    case OP_INCR: p = put(p, " 1\r\n", 4); break;
    case OP_SETCTR: p = put(p, " 0 0 1\r\n0\r\n", 11); break;
    case OP_SET:
        p = put(p, " 0 0 ", 5);
        p = put_u32(p, vsize, 1);
        p = put(p, "\r\n", 2);
        value_for(key, vsize, vbuf);
        p = put(p, vbuf, vsize);
        p = put(p, "\r\n", 2);
        break;
    default: p = put(p, "\r\n", 2); break;
    }
    return (size_t)(p - out);
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
    char expect[64], *p = put(expect, "VALUE ", 6);   /* "VALUE <key> 0 <vsize>\r\n" */
    p += key_name(p, rq->op, rq->key);
    p = put(p, " 0 ", 3);
    p = put_u32(p, vsize, 1);
    p = put(p, "\r\n", 2);
    long hl = p - expect;
    (void)vbuf;
    if (n != hl || memcmp(buf, expect, (size_t)hl) != 0)
        return INT32_MIN;                           /* cannot tell where this reply ends */
    size_t total = (size_t)hl + vsize + 2 + 5;
    if (len < total)
        return 0;
    if (!value_is(buf + hl, rq->key, vsize) || memcmp(buf + hl + vsize, "\r\nEND\r\n", 7) != 0)
        return -(long)total;
    *hit = 1;
    return (long)total;
}
