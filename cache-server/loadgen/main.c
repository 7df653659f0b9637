/* loadgen: options, phases (load -> warm-up -> measured window -> stop), and the tidy CSV.
 *
 * Latency definitions (both from the request's send time; in open loop from its intended send
 * time): `latency_*` = until epoll reports the reply's socket readable (the seed study's
 * definition), `parsed_latency_*` = until the whole reply is parsed and checked. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
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
uint64_t g_measure_start = UINT64_MAX, g_measure_end = UINT64_MAX;

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
        "  -P, --pipeline N       closed loop: requests kept outstanding per connection (default\n"
        "                         1); the replies read together are replaced in one write\n"
        "  --no-load              do not store the key space before measuring\n"
        "  --cpus LIST            pin thread i to the i-th CPU of LIST (e.g. 1 or 2-3,6)\n"
        "  --max-ops N            stop each thread after N requests (a bound for tests)\n"
        "  --wait-ready S         retry connecting for up to S seconds (default 5)\n"
        "  --timeout S            a reply due after the window may take S seconds, then it is a\n"
        "                         timeout (default 1)\n"
        "  --load-timeout S       the load phase must store every key within S seconds (default 120)\n"
        "  --max-errors N         exit 1 when errors + timeouts exceed N (default 0)\n"
        "  --measure-file FILE    create FILE when the measured window starts\n"
        "  --raw DIR              write latency histograms (CSV) into DIR\n"
        "exit status: 0 measured; 1 the measurement failed (connection died, errors or timeouts over\n"
        "--max-errors, load phase incomplete, cannot connect); 2 bad options\n");
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

/* every CPU of --cpus must be one this process may run on (a typo must not pin nothing) */
static void check_cpus(const int *cpus, int n)
{
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return;
    for (int i = 0; i < n; i++) {
        if (cpus[i] < CPU_SETSIZE && CPU_ISSET(cpus[i], &allowed))
            continue;
        fprintf(stderr, "loadgen: CPU %d of --cpus is not available here (this process may use %d CPUs:",
                cpus[i], CPU_COUNT(&allowed));
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &allowed))
                fprintf(stderr, " %d", c);
        fprintf(stderr, ")\n");
        exit(2);
    }
}

/* A flag's number, finite and within [lo, hi] (whole when `whole`), else one line naming the flag
 * and the value, exit 2: NaN, inf, -1 or 1e20 must not become a silent mix, a loop or a wrap. */
static double bounded(const char *s, const char *flag, double lo, double hi, int whole)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi || (whole && v != floor(v))) {
        fprintf(stderr, "loadgen: %s wants %s from %.15g to %.15g, not '%s'\n", flag,
                whole ? "a whole number" : "a number", lo, hi, s);
        exit(2);
    }
    return v;
}

static double num(const char *s, const char *flag, double lo, double hi)
{
    return bounded(s, flag, lo, hi, 0);
}

static double whole(const char *s, const char *flag, double lo, double hi)
{
    return bounded(s, flag, lo, hi, 1);
}

/* --mix G,S,D,I: four whole per-mille values summing to 1000 */
static int parse_mix(const char *s, unsigned mix[4])
{
    char *copy = strdup(s), *save = NULL, *tok = strtok_r(copy, ",", &save);
    int n = 0, sum = 0;
    for (; tok && n < 4; tok = strtok_r(NULL, ",", &save), n++)
        sum += (int)(mix[n] = (unsigned)whole(tok, "--mix", 0, 1000));
    int ok = n == 4 && tok == NULL && sum == 1000 && s[strlen(s) - 1] != ',';
    free(copy);
    return ok;
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

void row(const char *metric, double v, const char *unit)
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
        .load = true, .wait_ready = 5, .depth = 64, .pipeline = 1, .timeout = 1, .load_timeout = 120,
        .max_errors = 0,
    };
    const char *measure_file = NULL, *raw = NULL;
    static const struct option opts[] = {
        { "server", 1, 0, 's' }, { "port", 1, 0, 'p' }, { "threads", 1, 0, 't' },
        { "conns", 1, 0, 'c' }, { "duration", 1, 0, 'd' }, { "warmup", 1, 0, 'w' },
        { "keys", 1, 0, 'k' }, { "value-size", 1, 0, 'V' }, { "get-ratio", 1, 0, 'g' },
        { "mix", 1, 0, 'M' }, { "rate", 1, 0, 'r' }, { "depth", 1, 0, 'D' }, { "pipeline", 1, 0, 'P' },
        { "no-load", 0, 0, 'N' }, { "cpus", 1, 0, 'C' }, { "max-ops", 1, 0, 'O' },
        { "wait-ready", 1, 0, 'W' }, { "measure-file", 1, 0, 'F' }, { "raw", 1, 0, 'R' },
        { "timeout", 1, 0, 'T' }, { "load-timeout", 1, 0, 'L' }, { "max-errors", 1, 0, 'E' },
        { "help", 0, 0, 'h' }, { 0, 0, 0, 0 },
    };
    int o;
    while ((o = getopt_long(argc, argv, "s:p:t:c:d:w:k:V:g:M:r:D:P:h", opts, NULL)) != -1) {
        switch (o) {
        case 's': cfg.host = optarg; break;
        case 'p': cfg.port = (int)whole(optarg, "-p", 1, 65535); break;
        case 't': cfg.threads = (int)whole(optarg, "-t", 1, 256); break;
        case 'c': cfg.conns = (int)whole(optarg, "-c", 1, 10000); break;
        case 'd': cfg.duration = num(optarg, "-d", 0.001, 86400); break;
        case 'w': cfg.warmup = num(optarg, "-w", 0, 86400); break;
        case 'k': cfg.keys = (uint32_t)whole(optarg, "-k", 1, 1e9); break;
        case 'V': cfg.value_size = (uint32_t)whole(optarg, "-V", 0, 64u << 20); break;
        case 'g': {
            double g = num(optarg, "-g", 0, 1);
            cfg.mix[0] = (unsigned)(g * 1000 + 0.5);
            cfg.mix[1] = 1000 - cfg.mix[0];
            cfg.mix[2] = cfg.mix[3] = 0;
            break;
        }
        case 'M':
            if (!parse_mix(optarg, cfg.mix)) {
                fprintf(stderr, "loadgen: --mix wants four per-mille values summing to 1000, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'r': cfg.rate = num(optarg, "-r", 0, 1e9); break;
        case 'D': cfg.depth = (unsigned)whole(optarg, "-D", 1, 65536); break;
        case 'P': cfg.pipeline = (unsigned)whole(optarg, "--pipeline", 1, 65536); break;
        case 'N': cfg.load = false; break;
        case 'C':
            if (optarg[0] != '\0' && (cfg.ncpus = parse_cpus(optarg, &cfg.cpus)) <= 0) {
                fprintf(stderr, "loadgen: bad CPU list '%s'\n", optarg);
                return 2;
            }
            break;
        case 'O': cfg.max_ops = (uint64_t)whole(optarg, "--max-ops", 0, 1e15); break;
        case 'W': cfg.wait_ready = num(optarg, "--wait-ready", 0, 3600); break;
        case 'F': measure_file = optarg; break;
        case 'R': raw = optarg; break;
        case 'T': cfg.timeout = num(optarg, "--timeout", 0.001, 3600); break;
        case 'L': cfg.load_timeout = num(optarg, "--load-timeout", 0.001, 86400); break;
        case 'E': cfg.max_errors = (uint64_t)whole(optarg, "--max-errors", 0, 1e15); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loadgen: unexpected argument '%s' (options only; -h lists them)\n", argv[optind]);
        return 2;
    }
    if (cfg.pipeline > 1 && cfg.rate > 0) {
        fprintf(stderr, "loadgen: --pipeline is for the closed loop; with --rate, --depth bounds what is outstanding\n");
        return 2;
    }
    if (cfg.rate <= 0 && cfg.depth < cfg.pipeline)
        cfg.depth = cfg.pipeline;        /* the closed loop's queue holds what is outstanding */
    if (cfg.port == 0) {
        fprintf(stderr, "loadgen: -p PORT is required (-h lists the options)\n");
        return 2;
    }
    struct in_addr ia;
    if (inet_pton(AF_INET, cfg.host, &ia) != 1) {
        fprintf(stderr, "loadgen: -s wants an IPv4 address such as 127.0.0.1, not '%s' (names are not resolved)\n",
                cfg.host);
        return 2;
    }
    if (cfg.ncpus > 0)
        check_cpus(cfg.cpus, cfg.ncpus);
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
    if (ws == NULL || tids == NULL) {
        fprintf(stderr, "loadgen: out of memory for %d threads\n", cfg.threads);
        return 1;
    }
    for (int i = 0; i < cfg.threads; i++) {
        ws[i].id = i;
        int e = worker_connect(&ws[i], &cfg);
        if (e == 0)
            continue;
        int err = errno;
        if (e == LG_ENOMEM) {
            fprintf(stderr, "loadgen: cannot allocate the buffers of thread %d (%d connections, "
                    "-V %u x -D %u = %.0f MB of requests): %s\n", i, cfg.conns, cfg.value_size,
                    cfg.depth, (double)cfg.depth * (cfg.value_size + 64) / (1 << 20), strerror(err));
        } else if (e == LG_ESOCKET && (err == EMFILE || err == ENFILE)) {
            struct rlimit rl;
            getrlimit(RLIMIT_NOFILE, &rl);
            fprintf(stderr, "loadgen: out of file descriptors opening %d x %d connections (%s; "
                    "open-file limit %llu): lower -t/-c or raise 'ulimit -n'\n", cfg.threads, cfg.conns,
                    strerror(err), (unsigned long long)rl.rlim_cur);
        } else if (e == LG_ESOCKET) {
            fprintf(stderr, "loadgen: cannot create a socket: %s\n", strerror(err));
        } else {
            fprintf(stderr, "loadgen: cannot connect to %s:%d: %s\n", cfg.host, cfg.port, strerror(err));
        }
        return 1;
    }
    for (int i = 0; i < cfg.threads; i++)
        pthread_create(&tids[i], NULL, worker_main, &ws[i]);
    for (int i = 0; i < cfg.threads; i++)
        while (!__atomic_load_n(&ws[i].load_done, __ATOMIC_ACQUIRE))
            usleep(1000);
    /* measuring a half-loaded key space would report misses as the server's hit ratio */
    uint64_t stored = 0, expected = 0, dead = 0, load_errors = 0;
    for (int i = 0; i < cfg.threads; i++) {
        load_errors += ws[i].res.errors;
        stored += ws[i].load_stored;
        expected += ws[i].load_expected;
        dead += ws[i].res.deaths;
    }
    if (stored != expected || dead > 0) {
        fprintf(stderr, "loadgen: the load phase stored %llu of %llu keys (%llu errors, %llu connections died, "
                "--load-timeout %.0f s); not measuring\n", (unsigned long long)stored,
                (unsigned long long)expected, (unsigned long long)load_errors,
                (unsigned long long)dead, cfg.load_timeout);
        g_phase = PH_STOP;
        for (int i = 0; i < cfg.threads; i++)
            pthread_join(tids[i], NULL);
        return 1;
    }
    uint64_t t0 = now_ns();
    g_phase = PH_WARMUP;
    sleep_until(t0 + (uint64_t)(cfg.warmup * 1e9));
    double *tcpu = calloc(2 * (size_t)cfg.threads, sizeof(*tcpu));   /* per thread: start, end */
    if (tcpu == NULL) {
        fprintf(stderr, "loadgen: out of memory for %d threads\n", cfg.threads);
        return 1;
    }
    thread_cpu_snap(tids, cfg.threads, tcpu);
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
    thread_cpu_snap(tids, cfg.threads, tcpu + cfg.threads);
    __atomic_store_n(&g_measure_end, end, __ATOMIC_SEQ_CST);
    g_phase = PH_DRAIN;                  /* workers wait --timeout for replies still due */
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
        tot.timeouts += r->timeouts; tot.deaths += r->deaths; tot.sends += r->sends;
    }
    g_phase = PH_STOP;
    double secs = (double)(end - start) / 1e9;
    printf("metric,value,unit\n");
    row("ops_per_s", (double)tot.ops / secs, "1/s");
    row("get_per_s", (double)tot.gets / secs, "1/s");
    latency_rows("latency_", &tot.ready);
    latency_rows("parsed_latency_", &tot.parsed);
    row("ops", (double)tot.ops, "count");
    row("get_hit_ratio", tot.gets ? (double)tot.hits / (double)tot.gets : 0, "ratio");
    row("errors", (double)tot.errors, "count");
    row("timeouts", (double)tot.timeouts, "count");
    row("conn_deaths", (double)tot.deaths, "count");
    row("client_cpu_share", 100.0 * (cpu1 - cpu0) / secs, "%");
    row("client_threads", cfg.threads, "threads");
    row("client_conns", cfg.threads * cfg.conns, "count");
    row("client_pipeline", cfg.rate > 0 ? 0 : cfg.pipeline, "count");
    row("client_sends_per_req", tot.ops ? (double)tot.sends / (double)tot.ops : 0, "ratio");
    if (raw != NULL)
        mkdir(raw, 0755);
    cpu_rows(&cfg, tcpu, tcpu + cfg.threads, cpu1 - cpu0, secs, tot.ops, raw);
    free(tcpu);
    if (raw != NULL) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/latency-ready-hist.csv", raw);
        hist_dump(&tot.ready, p);
        snprintf(p, sizeof(p), "%s/latency-parsed-hist.csv", raw);
        hist_dump(&tot.parsed, p);
    }
    fprintf(stderr, "loadgen: %s loop, %d x %d conns, %.0f ops/s, p99 %.1f us, errors %llu, timeouts %llu, cpu %.0f%%\n",
            cfg.rate > 0 ? "open" : "closed", cfg.threads, cfg.conns, (double)tot.ops / secs,
            (double)hist_quantile(&tot.ready, .99) / 1e3, (unsigned long long)tot.errors,
            (unsigned long long)tot.timeouts, 100.0 * (cpu1 - cpu0) / secs);
    /* the rows above are printed for the record; the exit status says whether they measure */
    int rc = 0;
    if (tot.deaths > 0) {
        fprintf(stderr, "loadgen: FAILED: %llu connections died during the run (server closed or reset them)\n",
                (unsigned long long)tot.deaths);
        rc = 1;
    }
    if (tot.errors + tot.timeouts > cfg.max_errors) {
        fprintf(stderr, "loadgen: FAILED: %llu errors and %llu timeouts (more than --max-errors %llu)\n",
                (unsigned long long)tot.errors, (unsigned long long)tot.timeouts,
                (unsigned long long)cfg.max_errors);
        rc = 1;
    }
    if (tot.ops == 0) {
        fprintf(stderr, "loadgen: FAILED: no request completed in the measured window\n");
        rc = 1;
    }
    return rc;
}
