/* The memcached text protocol over a connection's buffers (no sockets here, so that unit tests
 * and the fuzzer drive it directly). Tokenising, argument checks and every reply string follow
 * memcached 1.6's proto_text.c so that replies are byte-identical, quirks included. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"

#define MAX_TOKENS 24

typedef struct { char *value; size_t length; } token_t;

/* Split on single spaces, skipping empty tokens. At most max-1 tokens; the last entry is a
 * terminal token whose value points at the unprocessed rest (NULL if none), like memcached. */
static size_t tokenize(char *cmd, token_t *tokens, size_t max)
{
    size_t n = 0, len = strlen(cmd);
    char *s = cmd, *e = cmd;
    for (size_t i = 0; i < len; i++, e++) {
        if (*e == ' ') {
            if (s != e) {
                tokens[n].value = s;
                tokens[n].length = (size_t)(e - s);
                n++;
                *e = '\0';
                if (n == max - 1) {
                    e++;
                    s = e;
                    break;
                }
            }
            s = e + 1;
        }
    }
    if (s != e) {
        tokens[n].value = s;
        tokens[n].length = (size_t)(e - s);
        n++;
    }
    tokens[n].value = *e == '\0' ? NULL : e;
    tokens[n].length = 0;
    return n + 1;
}

static void set_noreply_maybe(conn *c, token_t *tokens, size_t ntokens)
{
    const char *v = tokens[ntokens - 2].value;
    if (v != NULL && strcmp(v, "noreply") == 0)
        c->noreply = true;
}

void out_string(conn *c, const char *s)
{
    if (c->noreply) {             /* noreply hides every reply of the command, errors too */
        c->noreply = false;
        return;
    }
    out_bytes(c, s, strlen(s));
    out_bytes(c, "\r\n", 2);
}

/* ---- get / gets ---- */

/* get / gets, and gat / gats (get and touch: the first argument is the new exptime) */
static void process_get(conn *c, token_t *tokens, size_t ntokens, bool return_cas, bool touch)
{
    int32_t exptime = 0;
    if (touch && !safe_strtol(tokens[1].value, &exptime)) {
        out_string(c, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    struct outmark here = out_mark(c);
    token_t *key_token = &tokens[touch ? 2 : 1];
    char hdr[KEY_MAX_LENGTH + 80];
    (void)ntokens;
    do {
        while (key_token->length != 0) {
            if (key_token->length > KEY_MAX_LENGTH) {
                /* memcached 1.6 sends its queue after every successful get and, on this error,
                 * drops every reply queued since (earlier commands' too: "set ..; get <long
                 * key>" loses STORED, "get x; version; get <long key>" keeps END, loses
                 * VERSION). Same here, unless part of that is already on the wire. */
                out_truncate(c, c->sent <= c->kept.out ? c->kept : here);
                out_string(c, "CLIENT_ERROR bad command line format");
                return;
            }
            BUMP(tstats.cmd_get, 1);
            item *it;
            if (touch) {
                BUMP(tstats.cmd_touch, 1);
                it = item_touch(key_token->value, key_token->length, realtime(exptime));
                if (it != NULL) BUMP(tstats.touch_hits, 1); else BUMP(tstats.touch_misses, 1);
            } else {
                it = item_get(key_token->value, key_token->length, true);
            }
            if (it != NULL) {
                BUMP(tstats.get_hits, 1);
                /* "VALUE <key> <flags> <bytes>[ <cas>]\r\n"; hdr holds the longest key and
                 * three 20-digit numbers */
                char *p = hdr;
                memcpy(p, "VALUE ", 6);
                p += 6;
                memcpy(p, ITEM_key(it), it->nkey);
                p += it->nkey;
                *p++ = ' ';
                p = fmt_u64(p, it->flags);
                *p++ = ' ';
                p = fmt_u64(p, (uint64_t)(it->nbytes - 2));
                if (return_cas) {
                    *p++ = ' ';
                    p = fmt_u64(p, it->cas);
                }
                *p++ = '\r';
                *p++ = '\n';
                out_bytes(c, hdr, (size_t)(p - hdr));
                out_item(c, it);           /* the reference now belongs to the output queue */
            } else {
                BUMP(tstats.get_misses, 1);
            }
            key_token++;
        }
        /* more keys than one tokenising pass holds: continue on the rest of the line */
        if (key_token->value != NULL) {
            tokenize(key_token->value, tokens, MAX_TOKENS);
            key_token = tokens;
        }
    } while (key_token->value != NULL);
    out_bytes(c, "END\r\n", 5);
    c->kept = out_mark(c);     /* memcached would transmit here */
}

/* ---- set / add / replace / append / prepend / cas ---- */

static void process_update(conn *c, token_t *tokens, size_t ntokens, enum store_type comm,
                           bool handle_cas)
{
    uint32_t flags;
    int32_t exptime, vlen;
    uint64_t req_cas = 0;
    set_noreply_maybe(c, tokens, ntokens);
    if (tokens[1].length > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (!(safe_strtoul(tokens[2].value, &flags) && safe_strtol(tokens[3].value, &exptime) &&
          safe_strtol(tokens[4].value, &vlen))) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    rel_time_t exp = realtime(exptime < 0 ? REALTIME_MAXDELTA + 1 : exptime);
    if (handle_cas && !safe_strtoull(tokens[5].value, &req_cas)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (vlen < 0 || vlen > INT32_MAX - 2) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    size_t nbytes = (size_t)vlen + 2;
    item *it = item_alloc(tokens[1].value, tokens[1].length, flags, exp, nbytes, true);
    if (it == NULL) {
        if (!item_size_ok(tokens[1].length, nbytes))
            out_string(c, "SERVER_ERROR object too large for cache");
        else
            out_string(c, "SERVER_ERROR out of memory storing object");
        c->state = CONN_SWALLOW;          /* the value still arrives: discard it */
        c->sbytes = nbytes;
        if (comm == NREAD_SET)            /* and never leave the old value looking current */
            item_unlink_key(tokens[1].value, tokens[1].length);
        return;
    }
    it->cas = req_cas;
    c->item = it;
    c->rlbytes = nbytes;
    c->cmd = comm;
    c->state = CONN_NREAD;
}

static void complete_nread(conn *c)
{
    item *it = c->item;
    c->item = NULL;
    c->state = CONN_CMD;
    BUMP(tstats.cmd_set, 1);
    if (memcmp(ITEM_data(it) + it->nbytes - 2, "\r\n", 2) != 0) {
        out_string(c, "CLIENT_ERROR bad data chunk");
    } else {
        switch (item_store(it, c->cmd)) {
        case STORED: out_string(c, "STORED"); break;
        case EXISTS: out_string(c, "EXISTS"); break;
        case NOT_FOUND: out_string(c, "NOT_FOUND"); break;
        case NOT_STORED: out_string(c, "NOT_STORED"); break;
        default: out_string(c, "SERVER_ERROR Unhandled storage type."); break;
        }
    }
    item_release(it);
}

/* ---- the other commands ---- */

static void process_arithmetic(conn *c, token_t *tokens, size_t ntokens, bool incr)
{
    char buf[24];
    uint64_t delta;
    set_noreply_maybe(c, tokens, ntokens);
    if (tokens[1].length > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (!safe_strtoull(tokens[2].value, &delta)) {
        out_string(c, "CLIENT_ERROR invalid numeric delta argument");
        return;
    }
    switch (item_delta(tokens[1].value, tokens[1].length, incr, delta, buf)) {
    case DELTA_OK:
        if (incr) BUMP(tstats.incr_hits, 1); else BUMP(tstats.decr_hits, 1);
        out_string(c, buf);
        break;
    case DELTA_NON_NUMERIC:
        out_string(c, "CLIENT_ERROR cannot increment or decrement non-numeric value");
        break;
    case DELTA_EOM:
        out_string(c, "SERVER_ERROR out of memory");
        break;
    case DELTA_NOT_FOUND:
        if (incr) BUMP(tstats.incr_misses, 1); else BUMP(tstats.decr_misses, 1);
        out_string(c, "NOT_FOUND");
        break;
    }
}

static void process_delete(conn *c, token_t *tokens, size_t ntokens)
{
    if (ntokens > 3) {
        bool hold_is_zero = strcmp(tokens[2].value, "0") == 0;
        bool sets_noreply = false;
        set_noreply_maybe(c, tokens, ntokens);
        sets_noreply = c->noreply;
        bool valid = (ntokens == 4 && (hold_is_zero || sets_noreply)) ||
                     (ntokens == 5 && hold_is_zero && sets_noreply);
        if (!valid) {
            out_string(c, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]");
            return;
        }
    }
    if (tokens[1].length > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (item_delete(tokens[1].value, tokens[1].length)) {
        BUMP(tstats.delete_hits, 1);
        out_string(c, "DELETED");
    } else {
        BUMP(tstats.delete_misses, 1);
        out_string(c, "NOT_FOUND");
    }
}

static void process_touch(conn *c, token_t *tokens, size_t ntokens)
{
    int32_t exptime;
    set_noreply_maybe(c, tokens, ntokens);
    if (tokens[1].length > KEY_MAX_LENGTH) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    if (!safe_strtol(tokens[2].value, &exptime)) {
        out_string(c, "CLIENT_ERROR invalid exptime argument");
        return;
    }
    BUMP(tstats.cmd_touch, 1);
    item *it = item_touch(tokens[1].value, tokens[1].length, realtime(exptime));
    if (it != NULL) {
        BUMP(tstats.touch_hits, 1);
        out_string(c, "TOUCHED");
        item_release(it);
    } else {
        BUMP(tstats.touch_misses, 1);
        out_string(c, "NOT_FOUND");
    }
}

static void process_flush_all(conn *c, token_t *tokens, size_t ntokens)
{
    int32_t exptime = 0;
    set_noreply_maybe(c, tokens, ntokens);
    if (ntokens != (c->noreply ? 3u : 2u)) {
        if (!safe_strtol(tokens[1].value, &exptime)) {
            out_string(c, "CLIENT_ERROR invalid exptime argument");
            return;
        }
    }
    BUMP(tstats.cmd_flush, 1);
    item_flush(exptime);
    out_string(c, "OK");
}

static void process_verbosity(conn *c, token_t *tokens, size_t ntokens)
{
    uint32_t level;
    set_noreply_maybe(c, tokens, ntokens);
    if (!safe_strtoul(tokens[1].value, &level)) {
        out_string(c, "CLIENT_ERROR bad command line format");
        return;
    }
    STORE(settings.verbose, level > 2 ? 2 : (int)level);
    out_string(c, "OK");
}

static void process_stats(conn *c, token_t *tokens, size_t ntokens)
{
    if (ntokens == 2) {
        stats_write(c);
    } else if (strcmp(tokens[1].value, "reset") == 0) {
        stats_reset();
        out_string(c, "RESET");
    } else if (strcmp(tokens[1].value, "numa") == 0) {
        stats_numa_write(c);
    } else {
        out_string(c, "ERROR");
    }
}

#define WANT(lo, hi) (ntokens >= (lo) && ntokens <= (hi))

/* dispatch shaped like memcached's process_command_ascii, so that the token-count checks (and
 * therefore which malformed lines get a bare ERROR) are the same */
static void process_command(conn *c, char *line)
{
    token_t tokens[MAX_TOKENS];
    c->noreply = false;
    size_t ntokens = tokenize(line, tokens, MAX_TOKENS);
    if (ntokens < 2 || tokens[0].length < 2) {
        out_string(c, "ERROR");
        return;
    }
    const char *cmd = tokens[0].value;
    if (cmd[0] == 'g') {
        if (ntokens < 3)
            out_string(c, "ERROR");
        else if (strcmp(cmd, "get") == 0)
            process_get(c, tokens, ntokens, false, false);
        else if (strcmp(cmd, "gets") == 0)
            process_get(c, tokens, ntokens, true, false);
        else if (strcmp(cmd, "gat") == 0)
            process_get(c, tokens, ntokens, false, true);
        else if (strcmp(cmd, "gats") == 0)
            process_get(c, tokens, ntokens, true, true);
        else
            out_string(c, "ERROR");
    } else if (strcmp(cmd, "set") == 0 && WANT(6, 7)) {
        process_update(c, tokens, ntokens, NREAD_SET, false);
    } else if (strcmp(cmd, "add") == 0 && WANT(6, 7)) {
        process_update(c, tokens, ntokens, NREAD_ADD, false);
    } else if (strcmp(cmd, "append") == 0 && WANT(6, 7)) {
        process_update(c, tokens, ntokens, NREAD_APPEND, false);
    } else if (strcmp(cmd, "prepend") == 0 && WANT(6, 7)) {
        process_update(c, tokens, ntokens, NREAD_PREPEND, false);
    } else if (strcmp(cmd, "replace") == 0 && WANT(6, 7)) {
        process_update(c, tokens, ntokens, NREAD_REPLACE, false);
    } else if (strcmp(cmd, "cas") == 0 && WANT(7, 8)) {
        process_update(c, tokens, ntokens, NREAD_CAS, true);
    } else if (strcmp(cmd, "incr") == 0 && WANT(4, 5)) {
        process_arithmetic(c, tokens, ntokens, true);
    } else if (strcmp(cmd, "decr") == 0 && WANT(4, 5)) {
        process_arithmetic(c, tokens, ntokens, false);
    } else if (strcmp(cmd, "delete") == 0 && WANT(3, 5)) {
        process_delete(c, tokens, ntokens);
    } else if (strcmp(cmd, "touch") == 0 && WANT(4, 5)) {
        process_touch(c, tokens, ntokens);
    } else if (strcmp(cmd, "stats") == 0) {
        process_stats(c, tokens, ntokens);
    } else if (strcmp(cmd, "flush_all") == 0 && WANT(2, 4)) {
        process_flush_all(c, tokens, ntokens);
    } else if (strcmp(cmd, "version") == 0) {
        out_string(c, "VERSION " CACHE_VERSION);
    } else if (strcmp(cmd, "quit") == 0) {
        c->state = CONN_CLOSING;
    } else if (strcmp(cmd, "verbosity") == 0 && WANT(3, 4)) {
        process_verbosity(c, tokens, ntokens);
    } else if (ntokens >= 2 && tokens[ntokens - 2].value != NULL &&
               strncmp(tokens[ntokens - 2].value, "HTTP/", 5) == 0) {
        c->state = CONN_CLOSING;         /* a browser: memcached hangs up too */
    } else {
        out_string(c, "ERROR");
    }
}

/* memcached closes a connection whose line passes the limit without a newline, unless the line
 * is a multiget (keys may legitimately fill many kilobytes) */
static bool line_may_grow(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] == ' ')
        i++;
    if (i > 100)
        return false;
    return (n - i >= 4 && memcmp(p + i, "get ", 4) == 0) ||
           (n - i >= 5 && memcmp(p + i, "gets ", 5) == 0);
}

/* memcached sends its queued replies after every batch of commands it parses in one go (21 after
 * reading, 20 after such a yield: settings.reqs_per_event) and when its input runs dry; the
 * long-key error of `get` drops only what it has not sent. We track those points in c->kept. */
#define MC_FIRST_BATCH 21
#define MC_BATCH 20

static void command_done(conn *c)
{
    if (c->batch == 0)
        c->batch = MC_FIRST_BATCH;
    if (++c->ncmds >= c->batch) {
        c->kept = out_mark(c);
        c->ncmds = 0;
        c->batch = MC_BATCH;
    }
}

int proto_process(conn *c)
{
    while (c->state != CONN_CLOSING) {
        if (c->out_bytes - c->sent >= OUT_HIGH_WATER)
            return 0;                    /* let the writer drain before parsing more */
        size_t avail = c->rlen - c->rpos;
        char *start = c->rbuf + c->rpos;
        if (c->state == CONN_NREAD) {
            size_t n = avail < c->rlbytes ? avail : c->rlbytes;
            memcpy(ITEM_data(c->item) + (c->item->nbytes - c->rlbytes), start, n);
            c->rpos += n;
            c->rlbytes -= n;
            if (c->rlbytes > 0)
                return 0;
            complete_nread(c);
            command_done(c);
        } else if (c->state == CONN_SWALLOW) {
            size_t n = avail < c->sbytes ? avail : c->sbytes;
            c->rpos += n;
            c->sbytes -= n;
            if (c->sbytes > 0)
                return 0;
            c->state = CONN_CMD;
            command_done(c);
        } else {
            char *el = memchr(start, '\n', avail);
            if (el == NULL) {
                if (avail > LINE_LIMIT && (!line_may_grow(start, avail) || avail > GET_LINE_LIMIT)) {
                    c->state = CONN_CLOSING;
                    break;
                }
                c->kept = out_mark(c);   /* input ran dry: memcached sends what it has */
                c->ncmds = 0;
                c->batch = MC_FIRST_BATCH;
                return 0;
            }
            c->rpos += (size_t)(el - start) + 1;
            if (el > start && el[-1] == '\r')
                el--;
            *el = '\0';
            process_command(c, start);
            if (c->state == CONN_CMD)
                command_done(c);
        }
    }
    return -1;
}
