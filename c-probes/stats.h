/* Order statistics of a sample set: what c2c reports per pair. */
#ifndef PROBES_STATS_H
#define PROBES_STATS_H

#include <stddef.h>

struct summary {
	double min, p10, median, p90, max;
	size_t n;
};

/* p in [0, 1]; linear interpolation between closest ranks (numpy's default, R type 7). */
double percentile_sorted(const double *sorted, size_t n, double p);

/* Sorts xs in place and fills s; n must be > 0. */
void summarize(double *xs, size_t n, struct summary *s);

/* Median of xs[0..n) without touching xs (copies into tmp, which holds n doubles). */
double median_of(const double *xs, size_t n, double *tmp);

/* 1 when two successive medians differ by at most rel_tol of the newer one. */
int median_stable(double previous, double current, double rel_tol);

#endif
