/* Entry: options (memcached's spelling where they exist), the listening socket, the accept loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include "cache.h"


static void usage(FILE *f)
{
    fprintf(f,
        "usage: cache-server [options]\n"
        "  -p, --port N          TCP port (0 = any free port; see --port-file)\n"
        "  -l, --listen ADDR     address to bind (default 127.0.0.1)\n"
        "  -t, --threads N       worker threads (default 4)\n"
        "  -m, --memory-limit MB item memory (default 64)\n"
        "  -c, --conn-limit N    max simultaneous connections (default 1024)\n"
        "  -I, --max-item-size S largest item, e.g. 1m, 512k (default 1m)\n"
        "  --lock-mode MODE      global | striped | rwlock | optimistic | sharded (default striped)\n"
        "  --io-backend B        epoll | io_uring: how workers wait for and do socket I/O (default epoll)\n"
        "  --port-file FILE      write the bound port to FILE once listening\n"
        "  -v                    verbose\n"
        "  -U, -u                accepted and ignored (memcached compatibility)\n");
}

/* a whole number in [lo, hi], or exit 2 naming the option and its range */
static long parse_num(const char *s, const char *opt, const char *what, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno == ERANGE || (end != s && *end == '\0' && (v < lo || v > hi))) {
        fprintf(stderr, "cache-server: %s %s is out of range: %s must be %ld to %ld\n", opt, s, what,
                lo, hi);
        exit(2);
    }
    if (errno != 0 || end == s || *end != '\0') {
        fprintf(stderr, "cache-server: %s wants a whole number (%s), not '%s'\n", opt, what, s);
        exit(2);
    }
    return v;
}

#define MAX_MEMORY_MB (1L << 24)    /* 16 TB: far beyond any host here, and no overflow in bytes */
#define MAX_CONNS (1L << 20)        /* Linux's default fs.nr_open */
#define FDS_RESERVED 32             /* listener, epoll and eventfds, std streams, port file */

/* every connection is a descriptor: make sure -c of them can be open, raising the soft limit
 * (and the hard one where we may, as memcached does) or refusing to start */
static void check_fd_limit(int maxconns, int nthreads)
{
    struct rlimit rl;
    rlim_t need = (rlim_t)maxconns + FDS_RESERVED + 3 * (rlim_t)nthreads;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
        return;
    struct rlimit want = { need, rl.rlim_max >= need ? rl.rlim_max : need };
    if (setrlimit(RLIMIT_NOFILE, &want) != 0) {
        fprintf(stderr, "cache-server: -c %d needs %llu open files, but the limit is %llu (hard %llu) "
                "and cannot be raised: %s; lower -c or raise 'ulimit -n'\n", maxconns,
                (unsigned long long)need, (unsigned long long)rl.rlim_cur,
                (unsigned long long)rl.rlim_max, strerror(errno));
        exit(2);
    }
    if (settings.verbose)
        fprintf(stderr, "cache-server: raised the open-file limit from %llu to %llu for -c %d\n",
                (unsigned long long)rl.rlim_cur, (unsigned long long)need, maxconns);
}

static size_t parse_size(const char *s)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) goto bad;
    if (*end == 'k' || *end == 'K') { v <<= 10; end++; }
    else if (*end == 'm' || *end == 'M') { v <<= 20; end++; }
    else if (*end == 'g' || *end == 'G') { v <<= 30; end++; }
    if (*end != '\0' || v > (1ull << 40)) goto bad;     /* bounded before a shift can wrap */
    if (v < 1024 || v > (1ull << 30)) {
        fprintf(stderr, "cache-server: item size must be between 1k and 1g\n");
        exit(2);
    }
    return (size_t)v;
bad:
    fprintf(stderr, "cache-server: bad item size '%s'\n", s);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *port_file = NULL;
    static const struct option opts[] = {
        { "port", required_argument, 0, 'p' }, { "listen", required_argument, 0, 'l' },
        { "threads", required_argument, 0, 't' }, { "memory-limit", required_argument, 0, 'm' },
        { "conn-limit", required_argument, 0, 'c' }, { "max-item-size", required_argument, 0, 'I' },
        { "lock-mode", required_argument, 0, 'L' }, { "port-file", required_argument, 0, 'P' },
        { "io-backend", required_argument, 0, 'B' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "p:l:t:m:c:I:U:u:vh", opts, NULL)) != -1) {
        switch (o) {
        case 'p': settings.port = (int)parse_num(optarg, "-p", "the TCP port", 0, 65535); break;
        case 'l': settings.addr = optarg; break;
        case 't': settings.nthreads = (int)parse_num(optarg, "-t", "the worker thread count", 1, 256); break;
        case 'm':
            settings.maxbytes = (size_t)parse_num(optarg, "-m", "the memory limit in MB", 1, MAX_MEMORY_MB) << 20;
            break;
        case 'c': settings.maxconns = (int)parse_num(optarg, "-c", "the connection limit", 1, MAX_CONNS); break;
        case 'I': settings.item_size_max = parse_size(optarg); break;
        case 'L':
            if (locks_parse_mode(optarg, &settings.lock_mode) != 0) {
                fprintf(stderr, "cache-server: unknown lock mode '%s' (global, striped, rwlock, optimistic, sharded)\n", optarg);
                return 2;
            }
            break;
        case 'B':
            if (io_backend_parse(optarg, &settings.io_backend) != 0) {
                fprintf(stderr, "cache-server: unknown I/O backend '%s' (epoll, io_uring)\n", optarg);
                return 2;
            }
            break;
        case 'P': port_file = optarg; break;
        case 'v': settings.verbose++; break;
        case 'U': case 'u': break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cache-server: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    if (settings.item_size_max > settings.maxbytes / 2) {
        /* as memcached: an item may take at most half of the memory limit */
        fprintf(stderr, "cache-server: -I %zu bytes is more than half of -m %zu MB: raise -m or lower -I\n",
                settings.item_size_max, settings.maxbytes >> 20);
        return 2;
    }
    check_fd_limit(settings.maxconns, settings.nthreads);
    signal(SIGPIPE, SIG_IGN);
    clock_init();
    assoc_init(settings.maxbytes);
    lru_init();
    locks_init(settings.lock_mode);

    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)settings.port) };
    if (inet_pton(AF_INET, settings.addr, &sa.sin_addr) != 1) {
        fprintf(stderr, "cache-server: bad listen address '%s' (IPv4 only)\n", settings.addr);
        return 2;
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0) {
        fprintf(stderr, "cache-server: cannot listen on %s:%d: %s\n", settings.addr, settings.port,
                strerror(errno));
        return 1;
    }
    threads_start(settings.nthreads);    /* before the port file: a ring the kernel refuses ends here */
    socklen_t sl = sizeof(sa);
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    if (port_file != NULL) {
        char tmp[4096];
        snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (f == NULL || fprintf(f, "%d\n", ntohs(sa.sin_port)) < 0 || fclose(f) != 0 ||
            rename(tmp, port_file) != 0) {
            fprintf(stderr, "cache-server: cannot write %s\n", port_file);
            return 1;
        }
    }
    if (settings.verbose)
        fprintf(stderr, "cache-server: %s:%d, %d threads, lock mode %s, %s, %zu MB\n", settings.addr,
                ntohs(sa.sin_port), settings.nthreads, locks_mode_name(settings.lock_mode),
                io_backend_name(settings.io_backend), settings.maxbytes >> 20);
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EMFILE || errno == ENFILE)
                usleep(10000);           /* out of descriptors: back off instead of spinning */
            continue;
        }
        __atomic_add_fetch(&stat_total_conns, 1, __ATOMIC_RELAXED);
        if (__atomic_load_n(&stat_curr_conns, __ATOMIC_RELAXED) >= (uint64_t)settings.maxconns) {
            static const char msg[] = "ERROR Too many open connections\r\n";
            if (write(c, msg, sizeof(msg) - 1) < 0) { /* best effort, as memcached */ }
            close(c);
            __atomic_add_fetch(&stat_rejected_conns, 1, __ATOMIC_RELAXED);
            continue;
        }
        __atomic_add_fetch(&stat_curr_conns, 1, __ATOMIC_RELAXED);
        thread_dispatch(c);
    }
}
