// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * pen_cost.c - what identity-tier penalties add to a decision, in process
 * memory (no Redis, no HTTP): ns per xrl_limiter_decide with penalties off
 * and on, for one rule and for three rules a request, keys drawn from a
 * pool of 100,000 (so the buckets are not all in cache) at a rate that
 * never refuses (a refusal's strike is not what is measured). Also the
 * SHA-256 of one key alone (EVP_Digest, as limiter/penalty.c computes it).
 *
 * Built by make (build/bench/pen_cost):
 *   build/bench/pen_cost [DECISIONS]
 *   valgrind --tool=callgrind build/bench/pen_cost DECISIONS RULES PENALTIES(0|1)
 *     one case, once (the warm-up's 100,000 decisions included): on a shared
 *     VM (no perf counters) instructions are steadier than time
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "http/http.h"

#define POOL 100000

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

static char keys[POOL][40];

static void rule(struct xrl_http_cfg *c, const char *name)
{
	struct xrl_http_rule *r = &c->rules[c->n_rules++];
	char err[128];

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->key_kind = XRL_KEY_HEADER;
	snprintf(r->header, sizeof(r->header), "X-Api-Key");
	xrl_rate_parse("1000000/s", &r->rate, err, sizeof(err));
	r->burst = 1000000;
	r->cost = 1;
	r->on_backend_error = XRL_BE_OPEN;
	r->on_missing_key = XRL_MISSING_REFUSE;
}

/* ns per decision of n rules, penalties on or off. */
static double run1(int n, bool pen, long iters)
{
	struct xrl_http_cfg *c = calloc(1, sizeof(*c));
	const struct xrl_http_rule *rs[3];
	const char *ks[3];
	struct xrl_limiter *l = NULL;
	struct xrl_decision d;
	char err[256];
	__u64 t0;

	xrl_http_cfg_init(c);
	c->memory_max_keys = 1000000;
	for (int i = 0; i < n; i++)
		rule(c, i == 0 ? "login" : i == 1 ? "api" : "user");
	if (pen) {
		c->penalty.enabled = true;
		c->penalty.strikes = 3;
		c->penalty.window_ns = 10000000000ULL;
		c->penalty.base_ns = 60000000000ULL;
		c->penalty.max_ns = 600000000000ULL;
	}
	if (xrl_http_cfg_finish(c, err, sizeof(err)) || xrl_limiter_new(c, &l)) {
		fprintf(stderr, "couldn't make a limiter: %s\n", err);
		exit(1);
	}
	for (int i = 0; i < n; i++)
		rs[i] = &c->rules[i];
	for (long i = 0; i < POOL; i++) { /* warm: every bucket made */
		for (int j = 0; j < n; j++)
			ks[j] = keys[i];
		xrl_limiter_decide(l, rs, ks, NULL, n, &d);
	}
	t0 = now_ns();
	for (long i = 0; i < iters; i++) {
		for (int j = 0; j < n; j++)
			ks[j] = keys[(i * 7919 + j) % POOL];
		xrl_limiter_decide(l, rs, ks, NULL, n, &d);
	}
	t0 = now_ns() - t0;
	xrl_limiter_free(l);
	free(c);
	return (double)t0 / (double)iters;
}

/* The best of 5 runs: this machine is shared, the minimum is the cost. */
static double run(int n, bool pen, long iters)
{
	double best = 1e18;

	for (int k = 0; k < 5; k++) {
		double v = run1(n, pen, iters);

		best = v < best ? v : best;
	}
	return best;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 1000000;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;
	EVP_MD *sha;
	__u64 t0;

	for (long i = 0; i < POOL; i++)
		snprintf(keys[i], sizeof(keys[i]), "sk_live_%08ld_buyer@example.com", i);
	if (argc > 3) { /* one case, once: for perf stat -e instructions */
		printf("%.0f ns\n", run1(atoi(argv[2]), atoi(argv[3]), iters));
		return 0;
	}
	t0 = now_ns();
	for (long i = 0; i < iters; i++)
		EVP_Digest(keys[i % POOL], strlen(keys[i % POOL]), md, &mdlen, EVP_sha256(), NULL);
	printf("SHA-256 of one key, EVP_Digest(EVP_sha256()): %.0f ns\n",
	       (double)(now_ns() - t0) / iters);
	sha = EVP_MD_fetch(NULL, "SHA256", NULL);
	t0 = now_ns();
	for (long i = 0; i < iters; i++)
		EVP_Digest(keys[i % POOL], strlen(keys[i % POOL]), md, &mdlen, sha, NULL);
	printf("SHA-256 of one key, EVP_Digest(fetched once): %.0f ns\n",
	       (double)(now_ns() - t0) / iters);
	EVP_MD_free(sha);
	for (int n = 1; n <= 3; n += 2) {
		double off = run(n, false, iters), on = run(n, true, iters);

		printf("%d rule%s: penalties off %.0f ns, on %.0f ns a decision (+%.0f ns)\n", n,
		       n == 1 ? "" : "s", off, on, on - off);
	}
	return 0;
}
