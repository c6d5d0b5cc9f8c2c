// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cluster_lease.c - concurrency leases on Redis Cluster: releases, and the
 * give-back of leases a decision of several slots took before a later
 * part refused.
 *
 * A lease's set "xrl:{RULE:KEY}:c" has its rule's bucket's hash tag, so a
 * set and the bucket a post-paid cost goes to are in one slot, and
 * gcra.lua takes a slot, or releases one and charges its cost, in one call
 * as on one Redis (cluster.c sends a part with sets in calls of its
 * own slot). A release of several leases is a call per slot, answered
 * once all are; they need not be atomic together. A give-back is a
 * release nobody waits for: best effort, as a refund of tokens is; one
 * that fails leaves that slot held until its lease_ttl.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "redis_int.h"
#include "slots.h"

/* A release on a cluster: its calls, one a slot, and who waits for them. */
struct xrl_crel {
	struct xrl_release own;	  /* a give-back's answer (nobody reads it) */
	struct xrl_release *res;  /* the caller's, or &own */
	struct xrl_limiter_wait w; /* decided NULL: a give-back */
	int left;		  /* calls not answered yet */
};

/* The slot of lease c's set "xrl:{RULE:KEY}:c" (rule named rule), as
 * Redis hashes it. */
static int lease_slot(const char *rule, const struct xrl_conc_item *c)
{
	char key[5 + XRL_RULE_NAME_LEN + 1 + XRL_REDIS_KEY_LITERAL + 3];
	size_t nl = strnlen(rule, XRL_RULE_NAME_LEN), n = 5;

	memcpy(key, "xrl:{", 5);
	memcpy(key + n, rule, nl);
	n += nl;
	key[n++] = ':';
	memcpy(key + n, c->kn, c->knl);
	n += c->knl;
	memcpy(key + n, "}:c", 3);
	return (int)xrl_key_slot(key, n + 3);
}

/* One call releasing ci[0..nc) (all of slot), their rules named by rules[]
 * onto its node: 0, or -ENOMEM. */
static int rel_job(struct xrl_cpipe *cp, struct xrl_crel *rel, int slot,
		   const struct xrl_conc_item *ci, int nc, const char *const *rules)
{
	struct xrl_redis_job *j = xrl_cpipe_job_get(cp);

	if (!j)
		return -ENOMEM;
	memcpy(j->ci, ci, sizeof(ci[0]) * (size_t)nc);
	j->nc = nc;
	j->res = rel->res;
	j->crel = rel;
	j->slot = slot;
	j->one_slot = true;
	xrl_redis_release_format(j, rules);
	rel->left++;
	if (xrl_cpipe_job_send(cp, j, -1)) {
		rel->left--;
		xrl_cpipe_job_put(cp, j);
		return -ENOMEM;
	}
	return 0;
}

/* cost: a small allocation, and per slot a job formatted (RESP, no
 * syscall); the node pipes' next runs write them */
int xrl_cpipe_queue_release(struct xrl_cpipe *cp, struct xrl_conc_item *ci, int nc,
			    const char *const *rules, struct xrl_release *res,
			    const struct xrl_limiter_wait *w)
{
	struct xrl_crel *rel = calloc(1, sizeof(*rel));
	int slot[XRL_HTTP_MAX_MATCH];
	bool sent[XRL_HTTP_MAX_MATCH] = { false };

	if (!rel)
		return 0;
	rel->res = res;
	rel->w = *w;
	for (int i = 0; i < nc; i++)
		slot[i] = lease_slot(rules[i], &ci[i]);
	/* left counts from 1 until every call is out: an answer cannot end
	 * the release while more are to go */
	rel->left = 1;
	for (int i = 0; i < nc; i++) {
		struct xrl_conc_item g[XRL_HTTP_MAX_MATCH];
		const char *gr[XRL_HTTP_MAX_MATCH];
		int k = 0;

		if (sent[i])
			continue;
		for (int q = i; q < nc; q++)
			if (!sent[q] && slot[q] == slot[i]) {
				sent[q] = true;
				gr[k] = rules[q];
				g[k++] = ci[q];
			}
		if (rel_job(cp, rel, slot[i], g, k, gr))
			res->backend_error = true; /* those wait out their lease_ttl */
	}
	if (rel->left == 1) { /* none went */
		free(rel);
		return 0;
	}
	rel->left--;
	xrl_cpipe_track(cp, true);
	if (w->queued)
		w->queued(w->arg);
	return 1;
}

/* cost: as a release of one slot; only after a refusal by a later part */
void xrl_clease_give_back(struct xrl_cpipe *cp, const struct xrl_redis_job *part)
{
	struct xrl_conc_item ci[XRL_HTTP_MAX_MATCH];
	const char *rules[XRL_HTTP_MAX_MATCH];
	struct xrl_crel *rel;
	int k = 0;

	for (int q = 0; q < part->nc; q++)
		if (part->ci[q].taken) {
			ci[k] = part->ci[q];
			ci[k].idx = (__u8)k;
			ci[k].tau = ci[k].inc = 0; /* no cost: nothing was done */
			rules[k++] = part->ci[q].r->name;
		}
	if (!k)
		return;
	rel = calloc(1, sizeof(*rel));
	if (rel) {
		rel->res = &rel->own;
		if (!rel_job(cp, rel, part->slot, ci, k, rules)) {
			xrl_cpipe_giveback(cp, true);
			return;
		}
		free(rel);
	}
	xrl_cpipe_giveback(cp, false);
}

void xrl_clease_job_done(struct xrl_cpipe *cp, struct xrl_redis_job *j, int st)
{
	struct xrl_crel *rel = j->crel;

	/* not answered: the slots wait out their lease_ttl */
	if (st != J_OK)
		rel->res->backend_error = true;
	xrl_cpipe_job_put(cp, j);
	if (--rel->left)
		return;
	if (rel->w.decided) {
		rel->w.decided(rel->w.arg);
		xrl_cpipe_track(cp, false);
	} else if (rel->own.backend_error) {
		xrl_cpipe_giveback(cp, false);
	}
	free(rel);
}
