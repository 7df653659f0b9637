/* libFuzzer target over the text protocol: the input is split into chunks (first byte = chunk
 * count) fed one after another into one connection, so that lines and values that straddle
 * reads are exercised too. A small -m keeps eviction in play. Invariants checked: the parser
 * never overruns (ASan/UBSan), memory stays under the limit, nothing leaks between inputs. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "conn.h"

static int initialised;

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
        initialised = 1;
    }
    if (size == 0)
        return 0;
    size_t chunks = (size_t)(data[0] % 8) + 1;
    data++;
    size--;
    conn *c = conn_new_buffers(-1);
    size_t step = size / chunks + 1;
    for (size_t off = 0; off < size && c->state != CONN_CLOSING; off += step) {
        size_t n = size - off < step ? size - off : step;
        conn_feed(c, (const char *)data + off, n);
        int r;
        do {
            r = proto_process(c);
            conn_release_output(c);          /* as if the reply was sent */
        } while (r == 0 && c->state != CONN_CLOSING && c->rpos < c->rlen &&
                 (c->state == CONN_CMD ? memchr(c->rbuf + c->rpos, '\n', c->rlen - c->rpos) != NULL : 0));
        if (c->rlen - c->rpos > GET_LINE_LIMIT + 4096)
            abort();                         /* unparsed input must stay bounded */
    }
    conn_free_buffers(c);
    qsbr_quiescent();
    if (item_mem_used() > settings.maxbytes)
        abort();
    return 0;
}
