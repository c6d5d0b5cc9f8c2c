// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * decide.c - a request's decision, post-paid charge or release: at once
 * off the loops (or when the backend answers in the call), else queued on
 * the loop's pipe, the request waiting (RQ_WAITING) until the backend
 * answers; the refused keys noted for `top --http`.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http/http.h"
#include "server_int.h"

/* Waiting for Redis: called before the decision is queued. */
static void rq_wait(void *arg)
{
	struct xrl_srv_req *rq = arg;

	atomic_fetch_add(&rq->cfg->held, 1);
	rq->phase = RQ_WAITING;
	xrl_srv_tl_loop->waiting++;
}

/* From the loop's pipe: rq->d is the decision; the next pass answers it. */
static void rq_decided(void *arg)
{
	struct xrl_srv_req *rq = arg;

	rq->phase = RQ_DECIDED;
	if (rq->orphan) {
		atomic_fetch_sub(&rq->cfg->held, 1);
		free(rq->body);
		free(rq);
	}
}

void xrl_srv_rq_release(struct xrl_srv_req *rq)
{
	if (rq->cfg && rq->phase != RQ_NEW)
		atomic_fetch_sub(&rq->cfg->held, 1);
	rq->cfg = NULL;
	rq->phase = RQ_NEW;
}

void xrl_srv_note_refused(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
			  const struct xrl_decision *d, const struct xrl_http_rule *const *rules,
			  const struct xrl_topk_key *tk, int n)
{
	/* no key refused: admitted, shed, or no identity; counters are by the
	 * rule's index in the configuration in force */
	if (d->allowed || d->shed || d->missing_key || !d->rule || sc != s->cfg)
		return;
	for (int i = 0; i < n; i++)
		if (rules[i] == d->rule && tk[i].h) {
			/* this loop's shard, or the shared last one off the loops */
			unsigned sh = xrl_srv_tl_loop && xrl_srv_tl_loop->s == s
					      ? (unsigned)(xrl_srv_tl_loop - s->loops)
					      : s->n_loops;

			xrl_topk_note(s->topk, sh, (unsigned)(d->rule - sc->c.rules), &tk[i],
				      (__u64)time(NULL));
			return;
		}
}

/* A decision made at once: its refused key, if any, to the top-k. */
static void note_now(struct xrl_http_server *s, const struct xrl_srv_cfg *sc,
		     const struct xrl_decision *d, const struct xrl_http_rule *const *rules,
		     const char *const *keys, int n)
{
	struct xrl_topk_key tk[XRL_HTTP_MAX_MATCH] = {};

	if (d->allowed || d->shed || d->missing_key || !d->rule)
		return;
	for (int i = 0; i < n && i < XRL_HTTP_MAX_MATCH; i++)
		if (rules[i] == d->rule && keys[i]) {
			xrl_topk_key(s->topk, keys[i], &tk[i]);
			xrl_srv_note_refused(s, sc, d, rules, tk, i + 1);
			return;
		}
}

/*
 * Decide into rq->d: 0 decided (or -E2BIG), 1 when it waits for Redis
 * (answered on a later call). The rules are of sc (s->mu held).
 */
int xrl_srv_decide(struct xrl_http_server *s, struct xrl_srv_cfg *sc, struct xrl_srv_req *rq,
		   const struct xrl_http_rule *const *rules, const char *const *keys,
		   const __u32 *costs, int n)
{
	struct xrl_limiter_wait w = { .queued = rq_wait, .decided = rq_decided, .arg = rq };
	int rc;

	if (!xrl_srv_tl_loop || xrl_srv_tl_loop->s != s) {
		rc = xrl_limiter_decide(s->lim, rules, keys, costs, n, &rq->d);
		rq->timed = rc >= 0;
		if (!rc)
			note_now(s, sc, &rq->d, rules, keys, n);
		return rc;
	}
	/* the keys may be gone once Redis answers: their top-k form now */
	for (int i = 0; i < n && i < XRL_HTTP_MAX_MATCH; i++)
		if (keys[i])
			xrl_topk_key(s->topk, keys[i], &rq->tk[i]);
		else
			rq->tk[i].h = 0;
	rq->cfg = sc;
	rq->n = n;
	memcpy(rq->rules, rules, sizeof(rules[0]) * (size_t)n);
	rc = xrl_limiter_decide_async(s->lim, xrl_srv_tl_loop->pipe, rules, keys, costs, n, &rq->d,
				      &w);
	if (rc != 1)
		rq->cfg = NULL;
	if (!rc)
		note_now(s, sc, &rq->d, rules, keys, n);
	rq->timed = rc >= 0;
	return rc;
}

int xrl_srv_charge_start(struct xrl_http_server *s, struct xrl_srv_req *rq,
			 const struct xrl_http_rule *r, const char *key, __u32 cost)
{
	struct xrl_limiter_wait w = { .queued = rq_wait, .decided = rq_decided, .arg = rq };
	int rc;

	if (!xrl_srv_tl_loop || xrl_srv_tl_loop->s != s) {
		/* off the loops (never a request's handler): in memory */
		rq->d = (struct xrl_decision){ .allowed = !xrl_limiter_charge(s->lim, r, key, cost) };
		return 0;
	}
	rq->cfg = s->cfg; /* s->mu held: r is of it */
	rq->n = 1;
	rq->rules[0] = r;
	rc = xrl_limiter_charge_async(s->lim, xrl_srv_tl_loop->pipe, r, key, cost, &rq->d, &w);
	if (rc != 1)
		rq->cfg = NULL;
	return rc < 0 ? 0 : rc;
}

int xrl_srv_release_start(struct xrl_http_server *s, struct xrl_srv_req *rq, const char *const *ids,
			  int n, __u32 cost)
{
	struct xrl_limiter_wait w = { .queued = rq_wait, .decided = rq_decided, .arg = rq };
	int rc;

	if (!xrl_srv_tl_loop || xrl_srv_tl_loop->s != s)
		return xrl_limiter_release(s->lim, ids, n, cost, &rq->rel) < 0 ? -1 : 0;
	rq->cfg = s->cfg; /* s->mu held */
	rc = xrl_limiter_release_async(s->lim, xrl_srv_tl_loop->pipe, ids, n, cost, &rq->rel, &w);
	if (rc != 1)
		rq->cfg = NULL;
	return rc;
}
