// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * metrics.c - the identity tier's Prometheus families, appended to xrld's
 * /metrics, and its decision-latency histogram. Every family opens with
 * xrl_prom_family (HELP and TYPE); the names are in docs/operations.md,
 * "Metrics".
 */
#include <stdatomic.h>
#include <stdio.h>

#include "http/http.h"
#include "report.h"
#include "server_int.h"

/* Upper bounds of the latency buckets, ns, and as Prometheus reads them (s):
 * 10 us (a decision in memory) to 1 s (a Redis timeout). */
static const __u64 lat_le_ns[XRL_LAT_BUCKETS] = {
	10000,	 25000,	   50000,    100000,   250000,	  500000,    1000000,	 2500000,
	5000000, 10000000, 25000000, 50000000, 100000000, 250000000, 1000000000,
};
static const char *const lat_le_s[XRL_LAT_BUCKETS] = {
	"0.00001", "0.000025", "0.00005", "0.0001", "0.00025", "0.0005", "0.001", "0.0025",
	"0.005",   "0.01",     "0.025",	  "0.05",   "0.1",     "0.25",	 "1",
};

/*
 * The request path's cost: one compare walk and two relaxed stores to this
 * thread's own cache lines (a loop thread is the only writer of its
 * xrl_srv_lat; the scrape only loads). Off the loops, one shared entry
 * takes atomic adds.
 */
void xrl_srv_lat_observe(struct xrl_http_server *s, __u64 ns)
{
	struct xrl_srv_lat *l;
	int b = 0;

	while (b < XRL_LAT_BUCKETS && ns > lat_le_ns[b])
		b++;
	if (xrl_srv_tl_loop && xrl_srv_tl_loop->s == s) {
		l = &s->lat[xrl_srv_tl_loop - s->loops];
		atomic_store_explicit(&l->n[b],
				      atomic_load_explicit(&l->n[b], memory_order_relaxed) + 1,
				      memory_order_relaxed);
		atomic_store_explicit(&l->sum_ns,
				      atomic_load_explicit(&l->sum_ns, memory_order_relaxed) + ns,
				      memory_order_relaxed);
		return;
	}
	l = &s->lat[s->n_loops];
	atomic_fetch_add_explicit(&l->n[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&l->sum_ns, ns, memory_order_relaxed);
}

static void latency_histogram(struct xrl_http_server *s, struct xrl_buf *b)
{
	const char *name = "xrl_http_decision_duration_seconds";
	__u64 n[XRL_LAT_BUCKETS + 1] = {}, sum_ns = 0, cum = 0;

	for (unsigned t = 0; t <= s->n_loops; t++) {
		for (int k = 0; k <= XRL_LAT_BUCKETS; k++)
			n[k] += atomic_load_explicit(&s->lat[t].n[k], memory_order_relaxed);
		sum_ns += atomic_load_explicit(&s->lat[t].sum_ns, memory_order_relaxed);
	}
	xrl_prom_family(b, name, "histogram",
			"Time from a request read whole to its decision answered (Redis "
			"included), /v1/auth and /v1/check.");
	for (int k = 0; k < XRL_LAT_BUCKETS; k++) {
		cum += n[k];
		xrl_buf_printf(b, "%s_bucket{le=\"%s\"} %llu\n", name, lat_le_s[k],
			       (unsigned long long)cum);
	}
	cum += n[XRL_LAT_BUCKETS];
	xrl_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9f\n%s_count %llu\n", name,
		       (unsigned long long)cum, name, (double)sum_ns / 1e9, name,
		       (unsigned long long)cum);
}

/* Per rule: allowed, refused, shadow_refused (the packet tier's words). */
static void rule_decisions(struct xrl_http_server *s, struct xrl_buf *b)
{
	static const char *const verdict[] = { "allowed", "refused", "shadow_refused" };

	xrl_prom_family(b, "xrl_http_rule_decisions_total", "counter",
			"Identity-tier decisions per rule and verdict (a rule's counts carried "
			"across reloads by its name).");
	pthread_rwlock_rdlock(&s->mu);
	for (__u32 i = 0; i < s->cfg->c.n_rules; i++) {
		struct xrl_srv_rule_ctr *k = s->cfg->ctr[i];
		_Atomic __u64 *v[] = { &k->allowed, &k->refused, &k->shadow };

		for (int k = 0; k < 3; k++)
			xrl_buf_printf(b,
				       "xrl_http_rule_decisions_total{rule=\"%s\",verdict=\"%s\"} "
				       "%llu\n",
				       s->cfg->c.rules[i].name, verdict[k],
				       (unsigned long long)atomic_load(v[k]));
	}
	pthread_rwlock_unlock(&s->mu);
}

/* One unlabelled series, or one of a family already opened. */
static void one(struct xrl_buf *b, const char *name, const char *type, const char *help, __u64 v)
{
	xrl_prom_family(b, name, type, help);
	xrl_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void limiter_series(struct xrl_http_server *s, struct xrl_buf *b)
{
	struct xrl_limiter_stats st;

	xrl_limiter_get_stats(s->lim, &st);
	one(b, "xrl_http_decisions_total", "counter", "Identity-tier decisions made.",
	    st.decisions);
	one(b, "xrl_http_shadow_refusals_total", "counter",
	    "Refusals of shadow rules, counted and not enforced (all rules).", st.shadow_refused);
	one(b, "xrl_http_backend_errors_total", "counter", "Decisions the backend failed.",
	    st.backend_errors);
	one(b, "xrl_http_breaker_skips_total", "counter",
	    "Decisions not sent to Redis: its breaker was open.", st.breaker_open_skips);
	one(b, "xrl_http_overlimit_cache_hits_total", "counter",
	    "Refusals answered from the over-limit cache, without Redis.", st.overlimit_cache_hits);
	xrl_prom_family(b, "xrl_http_fallback_total", "counter",
			"What on_backend_error decided when the backend failed a decision, by "
			"mode: open counts each rule let through, local each decision made in "
			"this instance's memory, closed each decision answered 503.");
	xrl_buf_printf(b,
		       "xrl_http_fallback_total{mode=\"open\"} %llu\n"
		       "xrl_http_fallback_total{mode=\"closed\"} %llu\n"
		       "xrl_http_fallback_total{mode=\"local\"} %llu\n",
		       (unsigned long long)st.fallback_open, (unsigned long long)st.fallback_closed,
		       (unsigned long long)st.fallback_local);
	one(b, "xrl_http_keys", "gauge", "Keys in the in-process bucket table.", st.keys);
	xrl_prom_family(b, "xrl_http_key_evictions_total", "counter",
			"Keys evicted from the full table, by state (idle: bucket full again).");
	xrl_buf_printf(b,
		       "xrl_http_key_evictions_total{state=\"idle\"} %llu\n"
		       "xrl_http_key_evictions_total{state=\"active\"} %llu\n",
		       (unsigned long long)st.evictions_idle,
		       (unsigned long long)st.evictions_active);
	one(b, "xrl_http_penalties_total", "counter", "Key penalties given (identity tier).",
	    st.penalties);
	one(b, "xrl_http_lease_table_full_total", "counter",
	    "Concurrency slots not taken because the in-process lease table (max_keys / 16 "
	    "keys, at least 1024) was full: a new key's request was admitted without a slot "
	    "or a lease id, not refused.",
	    st.leases_full);
	one(b, "xrl_http_redis_breaker_open", "gauge",
	    "1 while the Redis breaker is open or half-open.",
	    xrl_limiter_breaker_state(s->lim) != 0);
	one(b, "xrl_http_redis_round_trips_total", "counter", "Batches written to Redis.",
	    st.redis_round_trips);
	one(b, "xrl_http_redis_calls_total", "counter", "Script calls sent to Redis.",
	    st.redis_calls);
	one(b, "xrl_http_redis_decisions_total", "counter",
	    "Decisions sent to Redis in those calls.", st.redis_decisions);
}

/* The counter families of two series by reason: a row each. */
static void by_reason(struct xrl_http_server *s, struct xrl_buf *b)
{
	const struct {
		const char *name, *help, *reason[2];
		_Atomic __u64 *n;
	} fam[] = {
		{ "xrl_http_callers_refused_total",
		  "Requests refused (403) before any decision: the peer is not loopback, a "
		  "trusted proxy or in http.callers (address), or sent no right caller "
		  "secret (secret).",
		  { [XRL_CALLER_ADDRESS] = "address", [XRL_CALLER_SECRET] = "secret" },
		  s->callers_refused },
		{ "xrl_http_connections_closed_total",
		  "Connections xrld closed: no whole request head within http.head_timeout "
		  "(head_timeout), or the oldest waiting for its head while every slot was "
		  "taken and another waited to be accepted (evicted).",
		  { [XRL_CONN_HEAD_TIMEOUT] = "head_timeout", [XRL_CONN_EVICTED] = "evicted" },
		  s->conn_closed },
	};
	_Static_assert(XRL_CALLER_MAX == 2 && XRL_CONN_MAX == 2, "two reasons a family");

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		xrl_prom_family(b, fam[f].name, "counter", fam[f].help);
		for (int r = 0; r < 2; r++)
			xrl_prom_u64(b, fam[f].name, "reason", fam[f].reason[r],
				     atomic_load(&fam[f].n[r]));
	}
}

void xrl_http_metrics(struct xrl_http_server *s, struct xrl_buf *b)
{
	static const char *sn[ST_MAX] = { "200", "400", "401", "403", "404", "405",
					  "413", "414", "429", "503", "431" };

	xrl_prom_family(b, "xrl_http_responses_total", "counter",
			"Identity-tier answers by HTTP status code.");
	for (int i = 0; i < ST_MAX; i++)
		xrl_buf_printf(b, "xrl_http_responses_total{code=\"%s\"} %llu\n", sn[i],
			       (unsigned long long)atomic_load(&s->status[i]));
	by_reason(s, b);
	rule_decisions(s, b);
	latency_histogram(s, b);
	limiter_series(s, b);
	xrl_limiter_backend_metrics(s->lim, b);
	xrl_srv_ovr_metrics(s, b);
}
