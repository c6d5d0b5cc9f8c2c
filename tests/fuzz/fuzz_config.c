// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_config.c - libFuzzer harness for the policy parser (user/lib/config.c):
 * any bytes into xrl_config_parse, as xrld reads a file on SIGHUP or a
 * policy that `xrlctl policy apply` sends. Run by tests/fuzz/run.sh with
 * -timeout=1, so an input that makes the parser slow (libyaml's quadratic
 * nesting, issue 11 finding 11) is a failure like a crash.
 *
 * Checks beyond the sanitizers: a refusal always says why, and an accepted
 * policy can be summarised.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "config.h"
#include "log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* the parser logs nothing, but a warning per input would drown the run */
	log_init("fuzz_config", XRL_LOG_ERR, 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct xrld_config cfg;  /* large: not on the stack */
	static char sum[1 << 16];
	char err[XRL_ERRLEN];
	int rc;

	err[0] = '\0';
	rc = xrl_config_parse((const char *)data, size, "fuzz.yaml", &cfg, err, sizeof(err));
	if (rc && !err[0]) {
		fprintf(stderr, "refused (%d) without a message\n", rc);
		abort();
	}
	if (!rc && xrl_config_summary(&cfg, sum, sizeof(sum)) < 0) {
		fprintf(stderr, "an accepted policy has no summary\n");
		abort();
	}
	return 0;
}
