/* Protocol unit tests: requests go straight into a connection's buffers (no sockets) and the
 * reply bytes are compared with what memcached 1.6.18 answers (taken from the real server).
 * Also checks that memory stays under -m while storing far more than fits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "conn.h"

static int passed, failed;

static char *collect(conn *c, size_t *n)
{
    char *out = malloc(c->out_bytes + 1);
    size_t pos = 0;
    for (size_t i = 0; i < c->nsegs; i++) {
        struct outseg *sg = &c->segs[i];
        memcpy(out + pos, sg->it ? ITEM_data(sg->it) + sg->off : c->wbuf + sg->off, sg->len);
        pos += sg->len;
    }
    out[pos] = '\0';
    *n = pos;
    conn_release_output(c);
    return out;
}

static void check(const char *name, const char *in, size_t inlen, const char *want, int want_close)
{
    conn *c = conn_new_buffers(-1);
    conn_feed(c, in, inlen);
    int r = proto_process(c);
    size_t n;
    char *got = collect(c, &n);
    int ok = n == strlen(want) && memcmp(got, want, n) == 0 && (r < 0) == want_close;
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s\n  want %s%s\n  got  %s%s\n", name, want, want_close ? " <close>" : "", got,
               r < 0 ? " <close>" : "");
    }
    free(got);
    conn_free_buffers(c);
    qsbr_quiescent();   /* optimistic mode: free what was retired (one thread: nobody else reads) */
}

#define T(name, in, want) check(name, in, sizeof(in) - 1, want, 0)
#define TC(name, in, want) check(name, in, sizeof(in) - 1, want, 1)

static void protocol_cases(void)
{
    T("set/get", "set a 0 0 1\r\nx\r\nget a\r\n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    T("get miss", "get nope\r\n", "END\r\n");
    T("empty line", "\r\n", "ERROR\r\n");
    T("unknown", "foo\r\n", "ERROR\r\n");
    T("upper case", "SET a 0 0 1\r\nx\r\n", "ERROR\r\nERROR\r\n");
    T("get no key", "get\r\n", "ERROR\r\n");
    T("negative length", "set a 0 0 -1\r\nxx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
    T("huge length", "set a 0 0 99999999999999999999\r\n", "CLIENT_ERROR bad command line format\r\n");
    T("length INT_MAX", "set a 0 0 2147483647\r\n", "CLIENT_ERROR bad command line format\r\n");
    T("bad data chunk", "set a 0 0 3\r\nabcd\r\nget a\r\n",
      "CLIENT_ERROR bad data chunk\r\nERROR\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    T("flags wrap to 32 bits", "set d 4294967296 0 1\r\nx\r\nget d\r\n", "STORED\r\nVALUE d 0 1\r\nx\r\nEND\r\n");
    T("negative flags", "set d -1 0 1\r\nx\r\n", "CLIENT_ERROR bad command line format\r\nERROR\r\n");
    T("decr pads in place", "set n 0 0 2\r\n10\r\ndecr n 1\r\nget n\r\n", "STORED\r\n9\r\nVALUE n 0 2\r\n9 \r\nEND\r\n");
    T("incr wraps", "set f 0 0 20\r\n18446744073709551615\r\nincr f 1\r\n", "STORED\r\n0\r\n");
    T("incr non-numeric", "set b 0 0 3\r\nabc\r\nincr b 1\r\n",
      "STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n");
    T("incr bad delta", "incr n -1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
    T("incr missing", "incr zz 1\r\n", "NOT_FOUND\r\n");
    T("incr grows", "set g 0 0 1\r\n9\r\nincr g 1\r\nget g\r\n", "STORED\r\n10\r\nVALUE g 0 2\r\n10\r\nEND\r\n");
    T("delete usage", "delete b 5\r\n",
      "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n");
    T("delete", "delete b 0\r\ndelete b\r\n", "DELETED\r\nNOT_FOUND\r\n");
    T("noreply", "set c 0 0 1 noreply\r\nz\r\ndelete c noreply\r\nget c\r\n", "END\r\n");
    T("noreply hides errors", "set a 0 0 1 noreply\r\nxyz\r\n", "ERROR\r\n");
    T("add/replace", "add a 0 0 1\r\ny\r\nreplace zz 0 0 1\r\ny\r\n", "NOT_STORED\r\nNOT_STORED\r\n");
    T("append/prepend", "set p 0 0 2\r\nab\r\nappend p 0 0 2\r\ncd\r\nprepend p 5 5 2\r\nxy\r\nget p\r\n",
      "STORED\r\nSTORED\r\nSTORED\r\nVALUE p 0 6\r\nxyabcd\r\nEND\r\n");
    T("append missing", "append nokey 0 0 1\r\nx\r\n", "NOT_STORED\r\n");
    T("cas zero", "cas a 0 0 1 0\r\nx\r\n", "EXISTS\r\n");
    T("cas missing", "cas q 0 0 1 1\r\nx\r\n", "NOT_FOUND\r\n");
    T("cas few tokens", "cas c 0 0 1\r\ny\r\n", "ERROR\r\nERROR\r\n");
    {
        char line[300] = "get ";
        memset(line + 4, 'k', 251);
        memcpy(line + 255, "\r\n", 3);
        check("key too long", line, strlen(line), "CLIENT_ERROR bad command line format\r\n", 0);
        char two[400];
        snprintf(two, sizeof(two), "version\r\n%s", line);   /* drops the VERSION reply too */
        check("key too long drops queue", two, strlen(two), "CLIENT_ERROR bad command line format\r\n", 0);
        line[254] = '\r'; line[255] = '\n'; line[256] = '\0';   /* 250 is fine */
        check("key of 250", line, strlen(line), "END\r\n", 0);
    }
    T("touch", "touch zz 10\r\ntouch a x\r\ntouch a 10\r\n",
      "NOT_FOUND\r\nCLIENT_ERROR invalid exptime argument\r\nTOUCHED\r\n");
    T("expired", "set t 0 -1 1\r\nx\r\nget t\r\n", "STORED\r\nEND\r\n");
    T("verbosity", "verbosity\r\nverbosity 1\r\nverbosity a\r\n", "ERROR\r\nOK\r\nCLIENT_ERROR bad command line format\r\n");
    T("flush_all", "set a 0 0 1\r\nx\r\nflush_all\r\nget a\r\nflush_all x\r\n",
      "STORED\r\nOK\r\nEND\r\nCLIENT_ERROR invalid exptime argument\r\n");
    T("version", "version\r\n", "VERSION " CACHE_VERSION "\r\n");
    T("bare LF and spaces", "set  a  0 0 1\nx\r\n get   a  \n", "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n");
    T("NUL ends the line", "get a \0b\r\n", "VALUE a 0 1\r\nx\r\nEND\r\n");
    T("partial line waits", "set a 0 0 1\r", "");
    T("too many tokens", "set a 0 0 1 noreply extra\r\nx\r\n", "ERROR\r\nERROR\r\n");
    T("stats reset", "stats reset\r\nstats foo\r\n", "RESET\r\nERROR\r\n");
    T("too large swallowed", "set big 0 0 2000000\r\n", "SERVER_ERROR object too large for cache\r\n");
    TC("quit", "version\r\nquit\r\nget a\r\n", "VERSION " CACHE_VERSION "\r\n");
    {
        char line[3000];
        memset(line, 'x', sizeof(line));
        check("long line closes", line, sizeof(line), "", 1);
        memcpy(line, "get ", 4);
        check("long multiget waits", line, sizeof(line), "", 0);
    }
    /* gets: the cas value of the item */
    {
        conn *c = conn_new_buffers(-1);
        const char *in = "set u 0 0 1\r\nx\r\ngets u\r\n";
        conn_feed(c, in, strlen(in));
        proto_process(c);
        size_t n;
        char *got = collect(c, &n);
        unsigned long long cas;
        if (sscanf(got, "STORED\r\nVALUE u 0 1 %llu\r\nx\r\nEND\r\n", &cas) == 1 && cas > 0) {
            char cmd[128], want[64];
            snprintf(cmd, sizeof(cmd), "cas u 0 0 1 %llu\r\ny\r\ncas u 0 0 1 %llu\r\nz\r\n", cas, cas);
            check("cas match then stale", cmd, strlen(cmd), "STORED\r\nEXISTS\r\n", 0);
            (void)want;
            passed++;
        } else {
            failed++;
            printf("FAIL gets: %s\n", got);
        }
        free(got);
        conn_free_buffers(c);
    }
}

static void memory_bound(void)
{
    char cmd[200], val[1024];
    memset(val, 'v', sizeof(val));
    conn *c = conn_new_buffers(-1);
    for (int i = 0; i < 20000; i++) {   /* 20 MB of values into a 2 MB cache */
        int n = snprintf(cmd, sizeof(cmd), "set key%d 0 0 1000\r\n", i);
        conn_feed(c, cmd, (size_t)n);
        conn_feed(c, val, 1000);
        conn_feed(c, "\r\n", 2);
        proto_process(c);
        conn_release_output(c);
        qsbr_quiescent();
        if (item_mem_used() > settings.maxbytes) {
            printf("FAIL memory bound: %llu > %zu\n", (unsigned long long)item_mem_used(), settings.maxbytes);
            failed++;
            conn_free_buffers(c);
            return;
        }
    }
    const char *g = "get key19999\r\nget key0\r\n";
    conn_feed(c, g, strlen(g));
    proto_process(c);
    size_t n;
    char *got = collect(c, &n);
    /* newest item present, oldest evicted */
    if (strncmp(got, "VALUE key19999 0 1000\r\n", 23) == 0 && n >= 5 &&
        strcmp(got + n - 10, "END\r\nEND\r\n") == 0) passed++;
    else { failed++; printf("FAIL eviction order: %.60s\n", got); }
    free(got);
    conn_free_buffers(c);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "striped";
    if (locks_parse_mode(mode, &settings.lock_mode) != 0) {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    settings.maxbytes = 2u << 20;
    clock_init();
    assoc_init(settings.maxbytes);
    lru_init();
    locks_init(settings.lock_mode);
    stats_register_thread();
    protocol_cases();
    memory_bound();
    printf("test-proto %s: %d passed, %d failed\n", mode, passed, failed);
    return failed ? 1 : 0;
}
