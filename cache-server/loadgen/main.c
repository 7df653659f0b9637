/* loadgen: options, phases (load -> warm-up -> measured window -> stop), and the tidy CSV.
 *
 * Latency definitions (both from the request's send time; in open loop from its intended send
 * time): `latency_*` = until epoll reports the reply's socket readable (the seed study's
 * definition), `parsed_latency_*` = until the whole reply is parsed and checked. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lg.h"

volatile int g_phase = PH_LOAD;
uint64_t g_measure_start = UINT64_MAX;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: loadgen -p PORT [options]        (prints tidy CSV: metric,value,unit)\n"
        "  -s, --server ADDR      IPv4 address (default 127.0.0.1)\n"
        "  -p, --port N           server port\n"
        "  -t, --threads N        load threads (default 1)\n"
        "  -c, --conns N          connections per thread (default 4)\n"
        "  -d, --duration S       measured seconds (default 5)\n"
        "  -w, --warmup S         unmeasured seconds of load first (default 1)\n"
        "  -k, --keys N           key space (default 10000)\n"
        "  -V, --value-size B     value bytes (default 100)\n"
        "  -g, --get-ratio F      fraction of GETs, the rest SETs (default 1.0)\n"
        "  -M, --mix G,S,D,I      per-mille of get,set,delete,incr (e.g. 700,200,50,50)\n"
        "  -r, --rate R           open loop at R requests/s in total (default 0 = closed loop)\n"
        "  -D, --depth N          open loop: max outstanding per connection (default 64)\n"
        "  --no-load              do not store the key space before measuring\n"
        "  --cpus LIST            pin thread i to the i-th CPU of LIST (e.g. 1 or 2-3,6)\n"
        "  --max-ops N            stop each thread after N requests (a bound for tests)\n"
        "  --wait-ready S         retry connecting for up to S seconds (default 5)\n"
        "  --measure-file FILE    create FILE when the measured window starts\n"
        "  --raw DIR              write latency histograms (CSV) into DIR\n");
}

static int parse_cpus(const char *s, int **out)
{
    int *v = NULL, n = 0;
    char *copy = strdup(s), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int a, b;
        if (sscanf(tok, "%d-%d", &a, &b) == 2) {} else if (sscanf(tok, "%d", &a) == 1) b = a;
        else { n = -1; break; }
        if (a < 0 || b < a || b > 4095) { n = -1; break; }
        for (int i = a; i <= b; i++) {
            v = realloc(v, sizeof(int) * (size_t)(n + 1));
            v[n++] = i;
        }
    }
    free(copy);
    *out = v;
    return n;
}

static double num(const char *s, const char *what)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0) {
        fprintf(stderr, "loadgen: bad %s '%s'\n", what, s);
        exit(2);
    }
    return v;
}

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

static void sleep_until(uint64_t t)
{
    uint64_t now;
    while ((now = now_ns()) < t) {
        uint64_t d = t - now;
        struct timespec ts = { (time_t)(d / 1000000000u), (long)(d % 1000000000u) };
        nanosleep(&ts, NULL);
    }
}

static void row(const char *metric, double v, const char *unit)
{
    printf("%s,%.6g,%s\n", metric, v, unit);
}

static void latency_rows(const char *prefix, const struct hist *h)
{
    static const struct { const char *n; double q; } qs[] = {
        { "p50", .50 }, { "p90", .90 }, { "p95", .95 }, { "p99", .99 }, { "p999", .999 } };
    char name[64];
    snprintf(name, sizeof(name), "%savg", prefix);
    row(name, h->count ? (double)h->sum / (double)h->count / 1e6 : 0, "ms");
    for (size_t i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
        snprintf(name, sizeof(name), "%s%s", prefix, qs[i].n);
        row(name, (double)hist_quantile(h, qs[i].q) / 1e6, "ms");
    }
    snprintf(name, sizeof(name), "%smax", prefix);
    row(name, (double)h->max / 1e6, "ms");
}

int main(int argc, char **argv)
{
    struct config cfg = {
        .host = "127.0.0.1", .threads = 1, .conns = 4, .duration = 5, .warmup = 1,
        .keys = 10000, .counters = 0, .value_size = 100, .mix = { 1000, 0, 0, 0 }, .rate = 0,
        .load = true, .wait_ready = 5, .depth = 64,
    };
    const char *measure_file = NULL, *raw = NULL;
    static const struct option opts[] = {
        { "server", 1, 0, 's' }, { "port", 1, 0, 'p' }, { "threads", 1, 0, 't' },
        { "conns", 1, 0, 'c' }, { "duration", 1, 0, 'd' }, { "warmup", 1, 0, 'w' },
        { "keys", 1, 0, 'k' }, { "value-size", 1, 0, 'V' }, { "get-ratio", 1, 0, 'g' },
        { "mix", 1, 0, 'M' }, { "rate", 1, 0, 'r' }, { "depth", 1, 0, 'D' },
        { "no-load", 0, 0, 'N' }, { "cpus", 1, 0, 'C' }, { "max-ops", 1, 0, 'O' },
        { "wait-ready", 1, 0, 'W' }, { "measure-file", 1, 0, 'F' }, { "raw", 1, 0, 'R' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "s:p:t:c:d:w:k:V:g:M:r:D:h", opts, NULL)) != -1) {
        switch (o) {
        case 's': cfg.host = optarg; break;
        case 'p': cfg.port = (int)num(optarg, "port"); break;
        case 't': cfg.threads = (int)num(optarg, "thread count"); break;
        case 'c': cfg.conns = (int)num(optarg, "connection count"); break;
        case 'd': cfg.duration = num(optarg, "duration"); break;
        case 'w': cfg.warmup = num(optarg, "warm-up"); break;
        case 'k': cfg.keys = (uint32_t)num(optarg, "key count"); break;
        case 'V': cfg.value_size = (uint32_t)num(optarg, "value size"); break;
        case 'g': {
            double g = num(optarg, "get ratio");
            if (g > 1) { fprintf(stderr, "loadgen: get ratio is a fraction\n"); return 2; }
            cfg.mix[0] = (unsigned)(g * 1000 + 0.5);
            cfg.mix[1] = 1000 - cfg.mix[0];
            cfg.mix[2] = cfg.mix[3] = 0;
            break;
        }
        case 'M':
            if (sscanf(optarg, "%u,%u,%u,%u", &cfg.mix[0], &cfg.mix[1], &cfg.mix[2], &cfg.mix[3]) != 4 ||
                cfg.mix[0] + cfg.mix[1] + cfg.mix[2] + cfg.mix[3] != 1000) {
                fprintf(stderr, "loadgen: --mix wants four per-mille values summing to 1000\n");
                return 2;
            }
            break;
        case 'r': cfg.rate = num(optarg, "rate"); break;
        case 'D': cfg.depth = (unsigned)num(optarg, "depth"); break;
        case 'N': cfg.load = false; break;
        case 'C':
            if (optarg[0] != '\0' && (cfg.ncpus = parse_cpus(optarg, &cfg.cpus)) <= 0) {
                fprintf(stderr, "loadgen: bad CPU list '%s'\n", optarg);
                return 2;
            }
            break;
        case 'O': cfg.max_ops = (uint64_t)num(optarg, "max ops"); break;
        case 'W': cfg.wait_ready = num(optarg, "wait"); break;
        case 'F': measure_file = optarg; break;
        case 'R': raw = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (cfg.port <= 0 || cfg.port > 65535 || cfg.threads < 1 || cfg.threads > 256 || cfg.conns < 1 ||
        cfg.keys < 1 || cfg.value_size > (64u << 20) || cfg.depth < 1 || cfg.depth > 65536 ||
        cfg.duration <= 0 || cfg.duration > 86400 || optind < argc) {
        usage(stderr);
        return 2;
    }
    if (cfg.mix[3] > 0)
        cfg.counters = cfg.keys < 1000 ? cfg.keys : 1000;
    if (cfg.ncpus > 0) {                  /* the main thread only sleeps, but keep it off the server's CPUs */
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cfg.cpus[0], &set);
        sched_setaffinity(0, sizeof(set), &set);
    }

    struct worker *ws = calloc((size_t)cfg.threads, sizeof(*ws));
    pthread_t *tids = calloc((size_t)cfg.threads, sizeof(*tids));
    for (int i = 0; i < cfg.threads; i++) {
        ws[i].id = i;
        if (worker_connect(&ws[i], &cfg) != 0) {
            fprintf(stderr, "loadgen: cannot connect to %s:%d\n", cfg.host, cfg.port);
            return 1;
        }
    }
    for (int i = 0; i < cfg.threads; i++)
        pthread_create(&tids[i], NULL, worker_main, &ws[i]);
    for (int i = 0; i < cfg.threads; i++)
        while (!__atomic_load_n(&ws[i].load_done, __ATOMIC_ACQUIRE))
            usleep(1000);
    uint64_t t0 = now_ns();
    g_phase = PH_WARMUP;
    sleep_until(t0 + (uint64_t)(cfg.warmup * 1e9));
    double cpu0 = cpu_seconds();
    uint64_t start = now_ns();
    __atomic_store_n(&g_measure_start, start, __ATOMIC_SEQ_CST);
    g_phase = PH_MEASURE;
    if (measure_file != NULL) {
        FILE *f = fopen(measure_file, "w");
        if (f) fclose(f);
    }
    sleep_until(start + (uint64_t)(cfg.duration * 1e9));
    uint64_t end = now_ns();
    double cpu1 = cpu_seconds();
    g_phase = PH_STOP;
    for (int i = 0; i < cfg.threads; i++)
        pthread_join(tids[i], NULL);

    struct thread_result tot;
    memset(&tot, 0, sizeof(tot));
    hist_init(&tot.ready);
    hist_init(&tot.parsed);
    for (int i = 0; i < cfg.threads; i++) {
        struct thread_result *r = &ws[i].res;
        hist_merge(&tot.ready, &r->ready);
        hist_merge(&tot.parsed, &r->parsed);
        tot.ops += r->ops; tot.gets += r->gets; tot.hits += r->hits;
        tot.misses += r->misses; tot.errors += r->errors;
    }
    double secs = (double)(end - start) / 1e9;
    printf("metric,value,unit\n");
    row("ops_per_s", (double)tot.ops / secs, "1/s");
    row("get_per_s", (double)tot.gets / secs, "1/s");
    latency_rows("latency_", &tot.ready);
    latency_rows("parsed_latency_", &tot.parsed);
    row("ops", (double)tot.ops, "count");
    row("get_hit_ratio", tot.gets ? (double)tot.hits / (double)tot.gets : 0, "ratio");
    row("errors", (double)tot.errors, "count");
    row("client_cpu_share", 100.0 * (cpu1 - cpu0) / secs, "%");
    row("client_threads", cfg.threads, "threads");
    row("client_conns", cfg.threads * cfg.conns, "count");
    if (raw != NULL) {
        char p[4096];
        mkdir(raw, 0755);
        snprintf(p, sizeof(p), "%s/latency-ready-hist.csv", raw);
        hist_dump(&tot.ready, p);
        snprintf(p, sizeof(p), "%s/latency-parsed-hist.csv", raw);
        hist_dump(&tot.parsed, p);
    }
    fprintf(stderr, "loadgen: %s loop, %d x %d conns, %.0f ops/s, p99 %.1f us, errors %llu, cpu %.0f%%\n",
            cfg.rate > 0 ? "open" : "closed", cfg.threads, cfg.conns, (double)tot.ops / secs,
            (double)hist_quantile(&tot.ready, .99) / 1e3, (unsigned long long)tot.errors,
            100.0 * (cpu1 - cpu0) / secs);
    if (tot.ops == 0) {
        fprintf(stderr, "loadgen: no request completed in the measured window\n");
        return 1;
    }
    return 0;
}
