/* Settings and their defaults (memcached's where they exist); main.c fills them from options. */
#include <string.h>
#include "cache.h"

struct settings settings = {
    .maxbytes = 64u << 20, .item_size_max = 1u << 20, .port = 11211, .addr = "127.0.0.1",
    .nthreads = 4, .maxconns = 1024, .lock_mode = LM_STRIPED, .io_backend = IO_EPOLL,
};

static const char *const io_backends[] = { [IO_EPOLL] = "epoll", [IO_URING] = "io_uring" };

int io_backend_parse(const char *s, enum io_backend *out)
{
    for (unsigned i = 0; i < sizeof(io_backends) / sizeof(io_backends[0]); i++)
        if (strcmp(s, io_backends[i]) == 0) {
            *out = (enum io_backend)i;
            return 0;
        }
    return -1;
}

const char *io_backend_name(enum io_backend b)
{
    return io_backends[b];
}
