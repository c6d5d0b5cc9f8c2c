// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fuzz_lease.c - libFuzzer harness for what a caller of POST /v1/release
 * and DELETE /v1/lease/ID chooses: lease ids (xrl_lease_id_parse) and the
 * post-paid cost, against a memory limiter (user/http/limiter/limiter.c, lease.c).
 *
 * Input: byte 0 says whether the one lease held (taken at the start of each
 * run, rule "c", concurrency 2) joins the ids, once (bit 0) or twice (bit
 * 1); bytes 1-4 a cost (little-endian, modulo 10^8 + 1, as the endpoint
 * takes at most); the rest ids separated by '\n' (at most 8 in all).
 *
 * Invariants checked (abort on violation):
 *  - an id that parses gives a rule name shorter than XRL_RULE_NAME_LEN,
 *    NUL-terminated, and a key name of 1 to 128 bytes;
 *  - one release call gives back at most the one lease held (a forged or
 *    repeated id frees nothing), and never fails;
 *  - after the run's lease is given back, the rule admits again (no slot
 *    leaks, none is freed twice);
 *  - a charge of at least the burst to rule "r" (1/h, burst 10) leaves its
 *    bucket refusing (the debt never wraps into credit).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"

#define FUZZ_NAME "fuzz_lease"
#include "fuzz_check.h"

static struct xrl_http_cfg cfg;
static struct xrl_limiter *lim;

static void setup_once(void)
{
	struct xrl_http_rule *c = &cfg.rules[0], *r = &cfg.rules[1];
	char err[256];

	if (lim)
		return;
	xrl_http_cfg_init(&cfg);
	cfg.memory_max_keys = 65536;
	snprintf(c->name, sizeof(c->name), "c");
	c->key_kind = XRL_KEY_HEADER;
	snprintf(c->header, sizeof(c->header), "X-Api-Key");
	c->concurrency = 2;
	c->lease_ttl_ns = 3600 * XRL_NSEC_PER_SEC;
	c->cost = 1;
	c->on_missing_key = XRL_MISSING_REFUSE;
	*r = *c;
	snprintf(r->name, sizeof(r->name), "r");
	r->concurrency = 0;
	r->lease_ttl_ns = 0;
	CHECK(!xrl_rate_parse("1/h", &r->rate, err, sizeof(err)), "rate: %s", err);
	r->burst = 10;
	cfg.n_rules = 2;
	CHECK(!xrl_http_cfg_finish(&cfg, err, sizeof(err)), "cfg: %s", err);
	CHECK(!xrl_limiter_new(&cfg, &lim), "no limiter");
}

static void check_parse(const char *id)
{
	char rule[XRL_RULE_NAME_LEN], kn[128];
	size_t knl = 0;
	__u64 nonce;

	if (xrl_lease_id_parse(id, rule, sizeof(rule), &nonce, kn, &knl))
		return;
	CHECK(strnlen(rule, sizeof(rule)) < sizeof(rule) && rule[0], "rule of '%s'", id);
	CHECK(knl >= 1 && knl <= sizeof(kn), "key name of '%s': %zu bytes", id, knl);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct xrl_http_rule *c, *r;
	const char *key = "k", *ids[XRL_HTTP_MAX_MATCH];
	char *buf, *p, *nl;
	struct xrl_decision d;
	struct xrl_release res;
	__u32 cost = 0, held = 0;
	int n = 0;

	setup_once();
	c = &cfg.rules[0];
	r = &cfg.rules[1];
	if (size < 5)
		return 0;
	memcpy(&cost, data + 1, 4);
	cost %= 100000001u;
	buf = malloc(size - 5 + 1);
	if (!buf)
		return 0;
	memcpy(buf, data + 5, size - 5);
	buf[size - 5] = '\0';
	CHECK(!xrl_limiter_decide(lim, &c, &key, NULL, 1, &d), "decide");
	CHECK(d.allowed && d.n_leases == 1, "the run's lease was refused (a slot leaked)");
	for (int k = 0; k < 2; k++)
		if (data[0] & (1u << k) && n < XRL_HTTP_MAX_MATCH)
			ids[n++] = d.lease[0];
	for (p = buf; p && n < XRL_HTTP_MAX_MATCH; p = nl) {
		nl = strchr(p, '\n');
		if (nl)
			*nl++ = '\0';
		check_parse(p);
		ids[n++] = p;
	}
	CHECK(!xrl_limiter_release(lim, ids, n, cost, &res), "release");
	for (int i = 0; i < n; i++)
		held += res.released[i];
	CHECK(held <= 1, "%u leases given back, one was held", held);
	xrl_limiter_release(lim, (const char *const *)&(const char *){ d.lease[0] }, 1, 0, &res);
	CHECK(!xrl_limiter_decide(lim, &c, &key, NULL, 1, &d), "decide");
	CHECK(d.allowed, "no slot after the release");
	xrl_limiter_release(lim, (const char *const *)&(const char *){ d.lease[0] }, 1, 0, &res);
	if (cost >= r->burst) {
		CHECK(!xrl_limiter_charge(lim, r, key, cost), "charge");
		CHECK(!xrl_limiter_decide(lim, &r, &key, NULL, 1, &d), "decide");
		CHECK(!d.allowed, "a charge of %u left the bucket admitting", cost);
	}
	free(buf);
	return 0;
}
