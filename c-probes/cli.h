/* Command-line plumbing shared by the probes: errors that exit 2, strict number parsing. */
#ifndef PROBES_CLI_H
#define PROBES_CLI_H

#include <stdint.h>

extern const char *prog;  /* set by main: prefix of every message */

/* Bad input: message on stderr, exit code 2 (the sweep engine stops on it). */
__attribute__((noreturn, format(printf, 1, 2))) void bad_input(const char *fmt, ...);
/* A failure of the measurement itself: exit code 1 (the sweep records it and goes on). */
__attribute__((noreturn, format(printf, 1, 2))) void fail(const char *fmt, ...);

/* bad_input if getopt left an operand (the probes take options only). */
void no_operands(int argc, char **argv);

/* Whole-string unsigned decimal in [min, max], or bad_input naming the flag. */
uint64_t parse_count(const char *flag, const char *s, uint64_t min, uint64_t max);
double parse_real(const char *flag, const char *s, double min, double max);

#endif
