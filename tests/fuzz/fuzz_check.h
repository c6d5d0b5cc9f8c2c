/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* fuzz_check.h - CHECK for the libFuzzer harnesses: a broken invariant, named. */
#ifndef XRL_FUZZ_CHECK_H
#define XRL_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

/*
 * CHECK(cond, fmt, ...): unless cond holds, print "NAME: cond: " and the
 * message (printf) on stderr and abort(), which libFuzzer reports as a
 * crash and keeps the input of. NAME is FUZZ_NAME, which the harness
 * defines before it includes this file ("fuzz_http").
 */
#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, FUZZ_NAME ": %s: ", #cond);                                \
			fprintf(stderr, __VA_ARGS__);                                              \
			fputc('\n', stderr);                                                       \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

#endif
