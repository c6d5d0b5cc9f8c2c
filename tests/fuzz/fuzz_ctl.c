// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_ctl.c - libFuzzer harness for the control protocol decoder
 * (xrl_ctl_decode in user/lib/control_wire.c), which reads whatever a client of xrld's
 * socket sends. The input is copied to a buffer of exactly its size, not
 * NUL-terminated, as xrld holds a request, so ASan sees any read past it
 * (issue 11, finding 13a).
 *
 * Checks beyond the sanitizers: a decoded request has 0..XRL_CTL_MAXARGS
 * arguments, each inside the buffer, NULL after the last; encoding them
 * again and decoding that gives the same arguments.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_wire.h"

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

static void roundtrip(int argc, char **argv)
{
	char *req, *av[XRL_CTL_MAXARGS + 1];
	long n;
	int ac;

	n = xrl_ctl_encode(argc, (const char *const *)argv, &req);
	if (n < 0)
		return;         /* -E2BIG: the encoder's bound, not the decoder's */
	if (xrl_ctl_decode(req, (size_t)n, &ac, av))
		FAIL("a request the encoder made does not decode\n");
	if (ac != argc)
		FAIL("argc %d, re-decoded %d\n", argc, ac);
	/* the encoder takes C strings: compare up to the first NUL */
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], av[i]))
			FAIL("argument %d differs after a round trip\n", i);
	free(req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[XRL_CTL_MAXARGS + 1];
	char *buf = malloc(size ? size : 1);
	int argc = -1;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (!xrl_ctl_decode(buf, size, &argc, argv)) {
		if (argc < 0 || argc > XRL_CTL_MAXARGS || argv[argc])
			FAIL("argc %d out of range or argv not NULL-terminated\n", argc);
		for (int i = 0; i < argc; i++)
			if (argv[i] < buf || argv[i] + strlen(argv[i]) >= buf + size)
				FAIL("argument %d lies outside the request\n", i);
		roundtrip(argc, argv);
	}
	free(buf);
	return 0;
}
