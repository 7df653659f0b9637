/* Number parsing with memcached's exact acceptance rules: leading blanks and '+' are fine,
 * the number must end at a blank or the end of the token, negatives are refused only where
 * the unsigned value wraps, and 32-bit results are truncated (memcached stores them so).
 * And the one number formatter of the GET path (a VALUE line per hit). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"

static bool ends_ok(const char *s, const char *end)
{
    return isspace((unsigned char)*end) || (*end == '\0' && end != s);
}

bool safe_strtoull(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    *out = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE || end == s || !ends_ok(s, end))   /* no digits is not 0 */
        return false;
    if ((long long)v < 0 && memchr(s, '-', (size_t)(end - s)) != NULL)
        return false;
    *out = v;
    return true;
}

bool safe_strtoul(const char *s, uint32_t *out)
{
    char *end;
    errno = 0;
    *out = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno == ERANGE || end == s || !ends_ok(s, end))
        return false;
    if ((long)v < 0 && memchr(s, '-', (size_t)(end - s)) != NULL)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool safe_strtol(const char *s, int32_t *out)
{
    char *end;
    errno = 0;
    *out = 0;
    long v = strtol(s, &end, 10);
    if (errno == ERANGE || end == s || !ends_ok(s, end))
        return false;
    *out = (int32_t)v;
    return true;
}

/* writes v in decimal at p (no terminator) and returns the end: the VALUE line of every hit
 * needs two or three numbers, and snprintf's format parsing was ~2 % of a GET's server CPU */
char *fmt_u64(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}
