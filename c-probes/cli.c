#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *prog = "probe";

void bad_input(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: error: ", prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see %s --help)\n", prog);
	va_end(ap);
	exit(2);
}

void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: failed: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

uint64_t parse_count(const char *flag, const char *s, uint64_t min, uint64_t max)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		bad_input("%s needs a number, got '%s'", flag, s ? s : "");
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		bad_input("%s: '%s' is not a whole number", flag, s);
	if (v < min || v > max)
		bad_input("%s: %llu is out of range [%llu, %llu]", flag, v,
			  (unsigned long long)min, (unsigned long long)max);
	return v;
}

double parse_real(const char *flag, const char *s, double min, double max)
{
	char *end;
	if (!s || !*s)
		bad_input("%s needs a number", flag);
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		bad_input("%s: '%s' is not a number", flag, s);
	if (v < min || v > max)
		bad_input("%s: %g is out of range [%g, %g]", flag, v, min, max);
	return v;
}

void no_operands(int argc, char **argv)
{
	if (optind < argc)
		bad_input("unexpected argument '%s'", argv[optind]);
}
