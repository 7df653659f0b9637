/* Settings and their defaults (memcached's where they exist); main.c fills them from options. */
#include "cache.h"

struct settings settings = {
    .maxbytes = 64u << 20, .item_size_max = 1u << 20, .port = 11211, .addr = "127.0.0.1",
    .nthreads = 4, .maxconns = 1024, .lock_mode = LM_STRIPED,
};
