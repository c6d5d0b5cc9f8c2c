/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * check.h - what every cmocka test here shares: time units, a context
 * string printed with any failure, and asserts that name what they compare
 * and print it in decimal (cmocka 1.1's assert_int_equal prints hex).
 * It includes cmocka and what cmocka needs before it.
 */
#ifndef XRL_TEST_CHECK_H
#define XRL_TEST_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "xrl_gcra.h"

#define NS     1ULL
#define US     (1000ULL * NS)
#define MS     (1000ULL * US)
#define SEC    XRL_NSEC_PER_SEC
#define MINUTE (60ULL * SEC)
#define HOUR   (60ULL * MINUTE)
#define DAY    (24ULL * HOUR)
#define YEAR   (365ULL * DAY)

typedef unsigned long long ull;

/* What the current check is about, printed with any failure. A test of
 * several files defines XRL_CHECK_SHARED_CTX and one `char ctx[256]`. */
#ifdef XRL_CHECK_SHARED_CTX
extern char ctx[256];
#else
static char ctx[256];
#define STR_EQ(got, want) \
	do { \
		const char *g_ = (got), *w_ = (want); \
		if (strcmp(g_, w_)) \
			print_error("[%s] %s = \"%s\", want \"%s\"\n", ctx, #got, g_, w_); \
		assert_string_equal(g_, w_); \
	} while (0)

/* text contains want. */
#define HAS(text, want) \
	do { \
		const char *t_ = (text), *w_ = (want); \
		if (!strstr(t_, w_)) \
			print_error("[%s] got \"%s\"\n  want it to contain \"%s\"\n", ctx, t_, \
				    w_); \
		assert_non_null(strstr(t_, w_)); \
	} while (0)

#endif
#define CTX(...) snprintf(ctx, sizeof(ctx), __VA_ARGS__)

/* Fail with the context and what was compared unless cond holds. */
#define CHECK_(cond, ...) \
	do { \
		if (!(cond)) { \
			print_error("[%s] ", ctx); \
			print_error(__VA_ARGS__); \
		} \
		assert_true(cond); \
	} while (0)

#define EQ(got, want) \
	do { \
		ull g_ = (ull)(got), w_ = (ull)(want); \
		CHECK_(g_ == w_, "%s = %llu (%lld, %#llx), want %s = %llu (%lld, %#llx)\n", #got, \
		       g_, (long long)g_, g_, #want, w_, (long long)w_, w_); \
	} while (0)

#define LE(got, max) \
	do { \
		ull g_ = (ull)(got), m_ = (ull)(max); \
		CHECK_(g_ <= m_, "%s = %llu, want <= %s = %llu\n", #got, g_, #max, m_); \
	} while (0)

#define GE(got, min) \
	do { \
		ull g_ = (ull)(got), m_ = (ull)(min); \
		CHECK_(g_ >= m_, "%s = %llu, want >= %s = %llu\n", #got, g_, #min, m_); \
	} while (0)

#endif
