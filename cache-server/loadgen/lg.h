/* loadgen: a memcached text-protocol load generator (closed or open loop) on epoll. */
#ifndef LG_H
#define LG_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* ---- log-linear histogram of nanoseconds (hist.c): 128 sub-buckets per power of two, so a
 * bucket is at most 1/128 of its value wide (reported at its midpoint: error <= 0.4%) ---- */
#define HIST_SUB_BITS 7
#define HIST_BUCKETS ((64 - HIST_SUB_BITS) << HIST_SUB_BITS)
struct hist {
    uint64_t count, sum, max, min;
    uint64_t b[HIST_BUCKETS];
};
void hist_init(struct hist *h);
void hist_add(struct hist *h, uint64_t ns);
void hist_merge(struct hist *into, const struct hist *from);
uint64_t hist_quantile(const struct hist *h, double q);
void hist_dump(const struct hist *h, const char *path);

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

enum op { OP_GET, OP_SET, OP_DELETE, OP_INCR, OP_SETCTR };
/* PH_DRAIN: the window is over, no new requests; replies to those in flight are awaited for
 * --timeout seconds, then whatever is still outstanding is a timeout */
enum phase { PH_LOAD, PH_WARMUP, PH_MEASURE, PH_DRAIN, PH_STOP };

struct config {
    const char *host;
    int port;
    int threads, conns;            /* conns per thread */
    double duration, warmup;       /* seconds */
    uint32_t keys, counters;
    uint32_t value_size;
    unsigned mix[4];               /* per-mille of get, set, delete, incr */
    double rate;                   /* requests/s over all connections; 0 = closed loop */
    bool load;                     /* set every key before measuring */
    int *cpus; int ncpus;
    uint64_t max_ops;              /* per thread bound on requests, 0 = none */
    double wait_ready;             /* seconds to retry the first connect */
    unsigned depth;                /* open loop: max outstanding per connection */
    unsigned pipeline;             /* closed loop: requests kept outstanding per connection */
    double timeout;                /* seconds a reply may take after the window ends */
    double load_timeout;           /* seconds the load phase may take */
    uint64_t max_errors;           /* errors + timeouts above this: exit 1 */
};

struct request { uint64_t intended; uint32_t key; uint8_t op; };

struct lconn {
    int fd;
    bool dead;
    char *rbuf; size_t rlen, rsize;
    struct request *q; unsigned qhead, qlen;   /* outstanding requests, FIFO */
    uint64_t ready_at;             /* epoll readiness of the head response, 0 = not yet seen */
    uint64_t next_send;            /* open loop: intended time of the next request */
};

struct thread_result {
    struct hist ready, parsed;     /* send -> epoll readiness, send -> parsed response */
    uint64_t ops, gets, hits, misses, errors;
    uint64_t timeouts;             /* window requests unanswered --timeout after the window */
    uint64_t deaths;               /* connections closed or reset by the server */
    uint64_t sends;                /* send() calls made in the measured window */
};

struct worker {
    int id;
    const struct config *cfg;
    struct lconn *conns;
    int epfd, tfd;
    uint64_t rng;
    char *vbuf;                    /* scratch: expected value */
    char *sbuf; size_t ssize;      /* scratch: outgoing requests */
    struct thread_result res;
    uint64_t sent;
    int load_done;
    uint64_t load_stored, load_expected;   /* STORED replies in the load phase, and how many due */
};

extern volatile int g_phase;
extern uint64_t g_measure_start, g_measure_end;

/* resp.c */
void value_for(uint32_t key, uint32_t size, char *out);
int key_name(char *out, uint8_t op, uint32_t key);
size_t format_request(char *out, uint8_t op, uint32_t key, uint32_t vsize, char *vbuf);
/* >0: bytes of one complete, correct response; 0: incomplete; <0: -(bytes) of a wrong one,
 * or INT32_MIN when the stream cannot be resynchronised */
long parse_response(const char *buf, size_t len, const struct request *rq, uint32_t vsize,
                    char *vbuf, int *hit);

/* worker.c: worker_connect returns 0 or one of these, with errno set */
enum { LG_ENOMEM = 1, LG_ESOCKET, LG_ECONNECT };
int worker_connect(struct worker *w, const struct config *cfg);
void *worker_main(void *arg);

/* main.c: one tidy row, metric,value,unit */
void row(const char *metric, double v, const char *unit);

/* cpu.c: each thread's CPU clock (seconds, -1 if unreadable), and the client's own CPU rows */
void thread_cpu_snap(const pthread_t *tids, int n, double *out);
void cpu_rows(const struct config *cfg, const double *t0, const double *t1, double proc_cpu_s,
              double secs, uint64_t ops, const char *raw);
#endif
