/* Unit tests of stats.c: percentiles by hand-computed expectations. */
#include "stats.h"

#include <math.h>
#include <stdio.h>

static int failed, checks;

static void near(const char *what, double got, double want)
{
	checks++;
	if (!(fabs(got - want) <= 1e-9 * (1 + fabs(want)))) {
		failed++;
		printf("FAIL %s: got %.12g, want %.12g\n", what, got, want);
	}
}

int main(void)
{
	double one[] = {7};
	near("single p0", percentile_sorted(one, 1, 0), 7);
	near("single p50", percentile_sorted(one, 1, 0.5), 7);
	near("single p100", percentile_sorted(one, 1, 1), 7);
	checks++;
	if (!isnan(percentile_sorted(one, 0, 0.5)))
		failed++, printf("FAIL empty: not NaN\n");

	double four[] = {1, 2, 3, 4};  /* rank = p × 3 */
	near("even median", percentile_sorted(four, 4, 0.5), 2.5);
	near("p10 of 4", percentile_sorted(four, 4, 0.1), 1.3);
	near("p90 of 4", percentile_sorted(four, 4, 0.9), 3.7);
	near("p below 0", percentile_sorted(four, 4, -1), 1);
	near("p above 1", percentile_sorted(four, 4, 2), 4);

	double xs[11];  /* 0..100 shuffled: percentiles land exactly on the values */
	for (int i = 0; i < 11; i++)
		xs[i] = (double)((i * 7) % 11) * 10;
	struct summary s;
	summarize(xs, 11, &s);
	near("summary min", s.min, 0);
	near("summary p10", s.p10, 10);
	near("summary median", s.median, 50);
	near("summary p90", s.p90, 90);
	near("summary max", s.max, 100);
	checks++;
	for (int i = 1; i < 11; i++)
		if (xs[i - 1] > xs[i]) {
			failed++, printf("FAIL summarize did not sort\n");
			break;
		}

	double odd[] = {5, 1, 9, 3, 7}, tmp[5];
	near("median_of odd", median_of(odd, 5, tmp), 5);
	near("median_of keeps input", odd[0], 5);
	double skew[] = {10, 10, 10, 10, 1e6};  /* one preempted sample must not move the median */
	near("median ignores outlier", median_of(skew, 5, tmp), 10);

	checks += 4;
	if (!median_stable(100, 100.5, 0.01)) failed++, printf("FAIL stable 0.5%%\n");
	if (median_stable(100, 103, 0.01)) failed++, printf("FAIL unstable 3%%\n");
	if (median_stable(-1, 100, 0.01)) failed++, printf("FAIL no previous median\n");
	if (median_stable(100, NAN, 0.01)) failed++, printf("FAIL NaN current\n");

	printf("test_stats: %d checks, %d failed\n", checks, failed);
	return failed != 0;
}
