/* Test-only interleaving points. In a build with -DCACHE_TEST_HOOKS (tests/test_race.c) each
 * point calls the test's hook, which may block the thread there while another thread runs; in
 * every other build a point compiles to nothing. */
#ifndef HOOKS_H
#define HOOKS_H
#ifdef CACHE_TEST_HOOKS
struct item;
extern void (*test_hook)(const char *point, struct item *it);
#define TEST_HOOK(point, it) do { if (test_hook != NULL) test_hook(point, it); } while (0)
#else
#define TEST_HOOK(point, it) ((void)0)
#endif
#endif
