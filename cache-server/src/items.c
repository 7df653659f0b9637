/* Items: allocation with eviction, reference counts, and the local store / get / delete / delta /
 * touch / flush semantics of memcached 1.6 (do_store_item and friends), each done under the item
 * lock of the key's hash (route.c decides where they run). Memory is malloc'd per item and
 * charged to one counter (memory.c); an allocation that would pass the limit evicts from the LRU first, so
 * memory stays bounded under any load (items pinned by in-flight responses are bounded by the
 * connection count times one response). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cache.h"
#include "hooks.h"

static uint64_t cas_id;
static rel_time_t oldest_live;
static uint64_t oldest_cas;

static size_t item_total(size_t nkey, size_t nbytes) { return sizeof(item) + nkey + 1 + nbytes; }

bool item_size_ok(size_t nkey, size_t nbytes)
{
    return item_total(nkey, nbytes) <= settings.item_size_max;
}

item *item_alloc(const char *key, size_t nkey, uint32_t flags, rel_time_t exptime, size_t nbytes,
                 bool may_block)
{
    if (!item_size_ok(nkey, nbytes))
        return NULL;
    size_t size = item_total(nkey, nbytes);
    uint32_t hv = hash(key, nkey);
    if (may_block && settings.lock_mode == LM_OPTIMISTIC)
        qsbr_quiescent();    /* the SET path holds no unreferenced item pointer: a safe point */
    bool sharded = settings.lock_mode == LM_SHARDED;
    unsigned lru = sharded ? (unsigned)shard_of(hv) : (hv >> 24) & (NLRU - 1);
    uint64_t used = __atomic_add_fetch(&mem_used, size, __ATOMIC_RELAXED);
    if (sharded) {
        /* charged to the owner's budget, values still being received included; only the owner
         * may touch its LRU, so it is the owner that evicts (here, or by a message), and when
         * nothing can go (everything left is being received or sent) the allocation fails as
         * in the other modes */
        uint64_t mine = __atomic_add_fetch(&shard_used[lru], size, __ATOMIC_RELAXED);
        /* other workers' allocations may pass the share again right after the owner made room:
         * only an owner with nothing left to evict fails us (the overshoot is one allocation in
         * flight per worker) */
        if (mine > settings.maxbytes / (size_t)nshards && !shard_make_room((int)lru) &&
            LOAD(shard_used[lru]) > settings.maxbytes / (size_t)nshards) {
            __atomic_sub_fetch(&shard_used[lru], size, __ATOMIC_RELAXED);
            __atomic_sub_fetch(&mem_used, size, __ATOMIC_RELAXED);
            return NULL;
        }
        used = 0;
    }
    /* charge first, then evict until under the limit: concurrent allocators cannot all slip
     * under it at once; the overshoot is at most one item per thread */
    for (int round = 0; used > settings.maxbytes; round++) {
        bool ok = false;
        for (unsigned i = 0; i < NLRU && !ok; i++)
            ok = lru_evict((lru + i) % NLRU, false);
        for (unsigned i = 0; i < NLRU && !ok && may_block; i++)
            ok = lru_evict((lru + i) % NLRU, true);
        if (!ok || round > 10000) {
            __atomic_sub_fetch(&mem_used, size, __ATOMIC_RELAXED);
            return NULL;
        }
        used = __atomic_load_n(&mem_used, __ATOMIC_RELAXED);
    }
    item *it = malloc(size);
    if (it == NULL) {
        __atomic_sub_fetch(&mem_used, size, __ATOMIC_RELAXED);
        if (sharded)
            __atomic_sub_fetch(&shard_used[lru], size, __ATOMIC_RELAXED);
        return NULL;
    }
    numa_note_item(it);
    memset(it, 0, sizeof(*it));
    it->hv = hv;
    it->refcount = 1;
    it->exptime = exptime;
    it->flags = flags;
    it->nbytes = (uint32_t)nbytes;
    it->size = (uint32_t)size;
    it->nkey = (uint8_t)nkey;
    it->lru_id = (uint8_t)lru;
    memcpy(ITEM_key(it), key, nkey);
    ITEM_key(it)[nkey] = '\0';
    return it;
}

/* a reference unless the item is already on its way out (count 0: retired, not yet freed) */
static bool ref_acquire(item *it)
{
    int32_t r = __atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE);
    do {
        if (r == 0)
            return false;
    } while (!__atomic_compare_exchange_n(&it->refcount, &r, r + 1, true, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    return true;
}

/* ---- the do_* helpers run under the item lock of it->hv ---- */

/* `linked` is set and cleared only by lru.c, inside the LRU critical section that puts the item
 * on or takes it off its list: a concurrent lru_bump, which checks it under the same lock, can
 * therefore never put back an item that is being unlinked (and then freed while still listed).
 * A lock-free reader that finds the item in the table before lru_link reports a miss. */
static void do_link(item *it)
{
    it->cas = __atomic_add_fetch(&cas_id, 1, __ATOMIC_RELAXED);
    STORE(it->time, LOAD(current_time));
    __atomic_add_fetch(&it->refcount, 1, __ATOMIC_ACQ_REL);
    assoc_insert(it);
    lru_link(it);
    BUMP(tstats.curr_items, 1);
    BUMP(tstats.total_items, 1);
    if (settings.lock_mode == LM_SHARDED)
        shard_trim();
}

static void do_unlink(item *it)
{
    if (!LOAD(it->linked))
        return;
    assoc_delete(it);
    lru_unlink(it);                      /* clears linked */
    TEST_HOOK("unlink:after-lru", it);
    BUMP(tstats.curr_items, (uint64_t)-1);
    item_release(it);
}

static void do_replace(item *old, item *it)
{
    do_unlink(old);
    do_link(it);
}

static bool is_flushed(item *it)
{
    rel_time_t ol = LOAD(oldest_live);
    uint64_t oc = LOAD(oldest_cas);
    if (ol == 0 || ol > LOAD(current_time))
        return false;
    return LOAD(it->time) <= ol || (oc != 0 && it->cas != 0 && it->cas < oc);
}

/* Finds a live item. Expired or flushed ones are unlinked when we hold the write lock; readers of
 * the rwlock mode leave them to the next writer or to eviction. */
static item *do_get(const char *key, size_t nkey, uint32_t hv, bool write)
{
    item *it = assoc_find(key, nkey, hv);
    if (it == NULL)
        return NULL;
    bool flushed = is_flushed(it);
    rel_time_t exp = LOAD(it->exptime);
    if (flushed || (exp != 0 && exp <= LOAD(current_time))) {
        if (flushed) BUMP(tstats.get_flushed, 1); else BUMP(tstats.get_expired, 1);
        if (write)
            do_unlink(it);
        return NULL;
    }
    return it;
}

/* rwlock readers share a lock and optimistic readers take none: neither may unlink expired
 * items; in the other modes a GET holds the (only) item lock and may */
static bool get_takes_write(void)
{
    return settings.lock_mode != LM_RWLOCK && settings.lock_mode != LM_OPTIMISTIC;
}

item *item_get_local(const char *key, size_t nkey, bool bump)
{
    uint32_t hv = hash(key, nkey);
    bool w = get_takes_write();
    item_lock(hv, w);
    item *it = do_get(key, nkey, hv, w);
    if (it != NULL && settings.lock_mode == LM_OPTIMISTIC) {
        /* no lock: the item may be unlinked (and released) while we look; a reference on an
         * unlinked item is a stale answer, so give it back and report a miss */
        if (!ref_acquire(it)) {
            it = NULL;
        } else if (!LOAD(it->linked)) {
            item_release(it);
            it = NULL;
        } else if (bump) {
            TEST_HOOK("get:before-bump", it);
            lru_bump(it);
        }
    } else if (it != NULL) {
        __atomic_add_fetch(&it->refcount, 1, __ATOMIC_ACQ_REL);
        if (bump)
            lru_bump(it);
    }
    item_unlock(hv, w);
    return it;
}

item *item_touch_local(const char *key, size_t nkey, rel_time_t exptime)
{
    uint32_t hv = hash(key, nkey);
    item_lock(hv, true);
    item *it = do_get(key, nkey, hv, true);
    if (it != NULL) {
        __atomic_add_fetch(&it->refcount, 1, __ATOMIC_ACQ_REL);
        STORE(it->exptime, exptime);
        lru_bump(it);
    }
    item_unlock(hv, true);
    return it;
}

/* memcached's do_store_item: it->cas carries the request's cas (0 = none) */
enum store_result item_store_local(item *it, enum store_type comm)
{
    uint32_t hv = it->hv;
    enum store_result r = NOT_STORED;
    item_lock(hv, true);
    item *old = do_get(ITEM_key(it), it->nkey, hv, true);
    if (old != NULL) {
        bool cas_match = it->cas != 0 && it->cas == old->cas;
        switch (comm) {
        case NREAD_ADD:
            lru_bump(old);                     /* add fails but promotes the existing item */
            break;
        case NREAD_CAS:
            if (cas_match) { do_replace(old, it); r = STORED; }
            else { r = EXISTS; BUMP(tstats.cas_badval, 1); }
            break;
        case NREAD_APPEND:
        case NREAD_PREPEND: {
            if (it->cas != 0 && !cas_match) { r = EXISTS; break; }
            /* allocated under the lock, so eviction may only try other items' locks; it may
             * take the lock we hold (reentrant), so our reference keeps old off its list */
            __atomic_add_fetch(&old->refcount, 1, __ATOMIC_ACQ_REL);
            item *n = item_alloc(ITEM_key(it), it->nkey, old->flags, LOAD(old->exptime),
                                 old->nbytes + it->nbytes - 2, false);
            if (n == NULL) {
                item_release(old);
                break;
            }
            if (comm == NREAD_APPEND) {
                memcpy(ITEM_data(n), ITEM_data(old), old->nbytes);
                memcpy(ITEM_data(n) + old->nbytes - 2, ITEM_data(it), it->nbytes);
            } else {
                memcpy(ITEM_data(n), ITEM_data(it), it->nbytes);
                memcpy(ITEM_data(n) + it->nbytes - 2, ITEM_data(old), old->nbytes);
            }
            do_replace(old, n);
            item_release(old);
            item_release(n);
            r = STORED;
            break;
        }
        case NREAD_SET:
        case NREAD_REPLACE:
            do_replace(old, it);
            r = STORED;
            break;
        }
        if (comm == NREAD_CAS && r == STORED) BUMP(tstats.cas_hits, 1);
    } else {
        switch (comm) {
        case NREAD_ADD:
        case NREAD_SET:
            do_link(it);
            r = STORED;
            break;
        case NREAD_CAS:
            r = NOT_FOUND;
            BUMP(tstats.cas_misses, 1);
            break;
        default:
            break;
        }
    }
    item_unlock(hv, true);
    return r;
}

bool item_delete_local(const char *key, size_t nkey)
{
    uint32_t hv = hash(key, nkey);
    item_lock(hv, true);
    item *it = do_get(key, nkey, hv, true);
    if (it != NULL)
        do_unlink(it);
    item_unlock(hv, true);
    return it != NULL;
}


/* The value as a number, parsed within its own bytes: strtoull skips blanks, and on the bare
 * value it would walk past "\r\n" into whatever lies after the item (memcached's answer for a
 * value of blanks depends on its slab neighbour; ours is: not a number). */
static bool value_number(const item *it, uint64_t *out)
{
    size_t n = it->nbytes - 2;
    char small[64], *buf = n < sizeof(small) ? small : malloc(n + 1);
    if (buf == NULL)
        return false;
    memcpy(buf, ITEM_data(it), n);
    buf[n] = '\0';
    bool ok = safe_strtoull(buf, out);
    if (buf != small)
        free(buf);
    return ok;
}

/* memcached's do_add_delta: the value must parse as an unsigned 64-bit number; incr wraps,
 * decr stops at 0; a result that fits is written in place padded with spaces (the "9 " quirk)
 * when nobody else holds the item, otherwise it goes into a new item. */
enum delta_result item_delta_local(const char *key, size_t nkey, bool incr, uint64_t delta, char *buf)
{
    uint32_t hv = hash(key, nkey);
    enum delta_result r = DELTA_OK;
    item_lock(hv, true);
    item *it = do_get(key, nkey, hv, true);
    uint64_t value;
    if (it == NULL) {
        r = DELTA_NOT_FOUND;
    } else if (it->nbytes <= 2 || !value_number(it, &value)) {
        r = DELTA_NON_NUMERIC;
    } else {
        if (incr)
            value += delta;
        else
            value = delta > value ? 0 : value - delta;
        int res = snprintf(buf, 24, "%llu", (unsigned long long)value);
        /* a result that fits is written in place, padded with spaces (memcached's bytes, also
         * when a pipelined `get` before it still holds the item: memcached has sent that reply
         * by then). Where we cannot write in place (a reply still references the item, or the
         * optimistic mode, whose readers take references without the lock) we copy into an
         * item of the same length with the same padding: the bytes never depend on the mode */
        bool fits = (uint32_t)res + 2 <= it->nbytes;
        if (fits && settings.lock_mode != LM_OPTIMISTIC &&
            __atomic_load_n(&it->refcount, __ATOMIC_ACQUIRE) == 1) {
            memcpy(ITEM_data(it), buf, (size_t)res);
            memset(ITEM_data(it) + res, ' ', it->nbytes - (size_t)res - 2);
            it->cas = __atomic_add_fetch(&cas_id, 1, __ATOMIC_RELAXED);
            lru_bump(it);
        } else {
            size_t nb = fits ? it->nbytes : (size_t)res + 2;
            __atomic_add_fetch(&it->refcount, 1, __ATOMIC_ACQ_REL);   /* not evicted meanwhile */
            item *n = item_alloc(key, nkey, it->flags, LOAD(it->exptime), nb, false);
            if (n == NULL) {
                r = DELTA_EOM;
            } else {
                memcpy(ITEM_data(n), buf, (size_t)res);
                memset(ITEM_data(n) + res, ' ', nb - (size_t)res - 2);
                memcpy(ITEM_data(n) + nb - 2, "\r\n", 2);
                do_replace(it, n);
                item_release(n);
            }
            item_release(it);
        }
    }
    item_unlock(hv, true);
    return r;
}

/* flush_all: items last stored before now (cas below the mark) or touched before the delayed
 * time stop being visible; they are reclaimed lazily, as in memcached */
void item_flush(long exptime)
{
    rel_time_t now = LOAD(current_time);
    rel_time_t new_oldest = exptime > 0 ? realtime(exptime) : now;
    STORE(oldest_live, new_oldest - 1);
    if (new_oldest - 1 <= now)
        STORE(oldest_cas, __atomic_add_fetch(&cas_id, 1, __ATOMIC_RELAXED));
}
