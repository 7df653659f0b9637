/* Routing: the public item operations (what proto.c calls). Outside the sharded mode, and for
 * keys this worker owns, they run the local operation (items.c) at once; otherwise they are a
 * message to the key's owner (shard.c), which runs it through route_run. Kept apart from the
 * local operations as memcached keeps its slab mover apart from slabs.c: shard.c moves messages
 * and knows nothing of items, items.c knows nothing of messages. */
#include "cache.h"

static int remote_owner(uint32_t hv)
{
    if (settings.lock_mode != LM_SHARDED)
        return -1;
    int o = shard_of(hv);
    return o == my_shard ? -1 : o;
}

item *item_get(const char *key, size_t nkey, bool bump)
{
    int o = remote_owner(hash(key, nkey));
    if (o < 0)
        return item_get_local(key, nkey, bump);
    struct rpc r = { .kind = RPC_GET, .key = key, .nkey = nkey, .bump = bump };
    shard_call(o, &r);
    return r.it;
}

item *item_touch(const char *key, size_t nkey, rel_time_t exptime)
{
    int o = remote_owner(hash(key, nkey));
    if (o < 0)
        return item_touch_local(key, nkey, exptime);
    struct rpc r = { .kind = RPC_TOUCH, .key = key, .nkey = nkey, .exptime = exptime };
    shard_call(o, &r);
    return r.it;
}

enum store_result item_store(item *it, enum store_type comm)
{
    int o = remote_owner(it->hv);
    if (o < 0)
        return item_store_local(it, comm);
    struct rpc r = { .kind = RPC_STORE, .it = it, .comm = comm };
    shard_call(o, &r);
    return r.store;
}

bool item_delete(const char *key, size_t nkey)
{
    int o = remote_owner(hash(key, nkey));
    if (o < 0)
        return item_delete_local(key, nkey);
    struct rpc r = { .kind = RPC_DELETE, .key = key, .nkey = nkey };
    shard_call(o, &r);
    return r.deleted;
}

void item_unlink_key(const char *key, size_t nkey) { (void)item_delete(key, nkey); }

enum delta_result item_delta(const char *key, size_t nkey, bool incr, uint64_t delta, char *buf)
{
    int o = remote_owner(hash(key, nkey));
    if (o < 0)
        return item_delta_local(key, nkey, incr, delta, buf);
    struct rpc r = { .kind = RPC_DELTA, .key = key, .nkey = nkey, .incr = incr, .amount = delta,
                     .buf = buf };
    shard_call(o, &r);
    return r.delta;
}

/* runs a request another worker sent to this one, the key's owner (shard_init's handler) */
void route_run(struct rpc *r)
{
    switch (r->kind) {
    case RPC_GET: r->it = item_get_local(r->key, r->nkey, r->bump); break;
    case RPC_TOUCH: r->it = item_touch_local(r->key, r->nkey, r->exptime); break;
    case RPC_STORE: r->store = item_store_local(r->it, r->comm); break;
    case RPC_DELETE: r->deleted = item_delete_local(r->key, r->nkey); break;
    case RPC_DELTA: r->delta = item_delta_local(r->key, r->nkey, r->incr, r->amount, r->buf); break;
    case RPC_TRIM: r->deleted = shard_trim(); break;
    }
}
