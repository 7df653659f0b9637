/* The load generator's own CPU use over the measured window: per thread (its CPU clock read by the
 * main thread at the window's start and end, so the workers' loops are untouched), per request, and
 * as a share of the CPUs it could use. When that share is near 100% the client, not the server, may
 * have set the rate: the report calls such a point client-bound (scripts/lab/report/client.py). */
#include "lg.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

void thread_cpu_snap(const pthread_t *tids, int n, double *out)
{
    for (int i = 0; i < n; i++) {
        clockid_t c;
        struct timespec ts;
        out[i] = -1;             /* unknown: the rows below then leave this thread out */
        if (pthread_getcpuclockid(tids[i], &c) == 0 && clock_gettime(c, &ts) == 0)
            out[i] = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
}

/* The CPUs the client's threads can run on at once: thread i is pinned to the (i mod n)-th CPU of
 * --cpus, else the threads share this process's affinity set. */
static int client_cpus(const struct config *cfg)
{
    int n = cfg->ncpus;
    if (n <= 0) {
        cpu_set_t set;
        n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : cfg->threads;
    }
    return n < cfg->threads ? n : cfg->threads;
}

void cpu_rows(const struct config *cfg, const double *t0, const double *t1, double proc_cpu_s,
              double secs, uint64_t ops, const char *raw)
{
    int ncpu = client_cpus(cfg);
    double busiest = -1, idlest = -1;
    FILE *f = NULL;
    if (raw != NULL) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/client-threads.csv", raw);
        if ((f = fopen(p, "w")) != NULL)
            fprintf(f, "thread,cpu,cpu_s,busy_pct\n");
    }
    for (int i = 0; i < cfg->threads; i++) {
        if (t0[i] < 0 || t1[i] < t0[i])
            continue;
        double pct = 100.0 * (t1[i] - t0[i]) / secs;
        if (busiest < 0 || pct > busiest) busiest = pct;
        if (idlest < 0 || pct < idlest) idlest = pct;
        if (f != NULL)
            fprintf(f, "%d,%d,%.6f,%.2f\n", i, cfg->ncpus > 0 ? cfg->cpus[i % cfg->ncpus] : -1,
                    t1[i] - t0[i], pct);
    }
    if (f != NULL)
        fclose(f);
    /* user + system time of the whole process (its workers, and the main thread that only sleeps) */
    if (ops > 0)
        row("client_cpu_us_per_req", 1e6 * proc_cpu_s / (double)ops, "us");
    row("client_cpu_util_pct", 100.0 * proc_cpu_s / (secs * ncpu), "%");
    row("client_cpus", ncpu, "count");
    if (busiest >= 0) {
        row("client_thread_busy_max_pct", busiest, "%");
        row("client_thread_busy_min_pct", idlest, "%");
    }
}
