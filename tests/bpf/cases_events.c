// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cases_events.c - test_bpf's cases about events and leases: the ring
 * buffer's samples of refusals, admission leases.
 */
#include "cases.h"

/*
 * An admission-lease case: rule "busy" (SYN, per_s a second, burst b), one
 * SYN from "from" admitted (its bucket made); fn (test_bpf.c) then floods it.
 */
#define LEASE_CASE(what, per_s, b, from, fn) \
	{ \
		.name = "admission leases: " what, \
		.rules = { { .name = "busy", .proto = TCP, .tcp_class = CLS_SYN, \
			     .rate = { (per_s), 1000000000ULL }, .burst = (b) } }, \
		.s = { { .p = { .src = (from) }, .v = PASS, .r = { RV_P } } }, \
		.g = { G(BUCKET_NEW) = 1 }, .check = (fn), \
	}

static const struct tcase cases[] = {
{
	.name = "ring buffer: the first refusal per source is sampled",
	.rules = { RULE_SYN(2) },
	.s = {
		{ .p = { .src = "198.51.100.7" }, .n = 2, .v = PASS, .r = { RV_P } },
		{ .p = { .src = "198.51.100.7" }, .n = 3, .v = DROP, .r = { RV_D } },
		{ .p = { .src = "2001:db8:1:2::99" }, .n = 2, .v = PASS, .r = { RV_P } },
		{ .p = { .src = "2001:db8:1:2::99" }, .v = DROP, .r = { RV_D } },
		{ .what = "after the 1 s sample interval (no token earned at 10/min)",
		  .sleep_ms = 1100, .p = { .src = "198.51.100.7" }, .v = DROP, .r = { RV_D } },
	},
	.g = { G(BUCKET_NEW) = 2, G(EVENTS_SENT) = 3, G(REFUSED_CACHED) = 3 },
	.check = check_events,
},
LEASE_CASE("a busy source admitted from its lease, never beyond the bucket", 200000, 400,
	   "198.51.100.42", check_leases),
LEASE_CASE("a busy source under its rate, admitted in full from leases", 2000000, 4000,
	   "198.51.100.43", check_leases_busy),
};

const struct case_set cases_events = CASE_SET(cases);
