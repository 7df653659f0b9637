#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double percentile_sorted(const double *sorted, size_t n, double p)
{
	if (n == 0)
		return NAN;
	if (p <= 0)
		return sorted[0];
	if (p >= 1)
		return sorted[n - 1];
	double rank = p * (double)(n - 1);
	size_t lo = (size_t)rank;
	double frac = rank - (double)lo;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

void summarize(double *xs, size_t n, struct summary *s)
{
	qsort(xs, n, sizeof *xs, cmp_double);
	s->n = n;
	s->min = xs[0];
	s->max = xs[n - 1];
	s->p10 = percentile_sorted(xs, n, 0.10);
	s->median = percentile_sorted(xs, n, 0.50);
	s->p90 = percentile_sorted(xs, n, 0.90);
}

double median_of(const double *xs, size_t n, double *tmp)
{
	memcpy(tmp, xs, n * sizeof *xs);
	qsort(tmp, n, sizeof *tmp, cmp_double);
	return percentile_sorted(tmp, n, 0.5);
}

int median_stable(double previous, double current, double rel_tol)
{
	if (!(current > 0) || !isfinite(previous))
		return 0;
	return fabs(current - previous) <= rel_tol * current;
}
