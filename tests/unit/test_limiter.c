// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_limiter.c - the limiter's unit tests: the memory suite, the Redis
 * suite without a Redis, and the Redis suite with the group's
 * redis-server. No root, no network beyond the loopback.
 */
#include <stdlib.h>

#include "limiter_test.h"
#include "log.h"

int main(void)
{
	int failed = 0;

	/* e.g. XRL_TEST_FILTER='*concurrent*': the threaded cases (make test-tsan) */
	if (getenv("XRL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("XRL_TEST_FILTER"));
	log_init("test_limiter", XRL_LOG_ERR, 0);
	failed += _cmocka_run_group_tests("limiter: memory", xrl_lim_memory_tests, xrl_lim_memory_n,
					  NULL, NULL);
	failed += _cmocka_run_group_tests("limiter: leases in memory", xrl_lim_lease_tests,
					  xrl_lim_lease_n, NULL, NULL);
	failed += _cmocka_run_group_tests("limiter: no redis", xrl_lim_absent_tests,
					  xrl_lim_absent_n, NULL, NULL);
	failed += _cmocka_run_group_tests("limiter: redis-server", xrl_lim_live_tests,
					  xrl_lim_live_n, xrl_lim_live_setup,
					  xrl_lim_live_teardown);
	return failed;
}
