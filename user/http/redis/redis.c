// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * redis.c - the Redis backend as the limiter sees it: its state (the
 * script's SHA1 and SCRIPT LOAD, the breaker, a cluster's slot map and
 * nodes), and the operations of backend.h for a standalone Redis and for a
 * Redis Cluster. Decisions go back through the completion each call hands
 * in, never by a name of the limiter's.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "cluster.h"
#include "redis_int.h"

int xrl_redis_new(const struct xrl_lim_env *env, struct xrl_redis **out)
{
	struct xrl_redis *rd = calloc(1, sizeof(*rd));
	const char *argv[3] = { "SCRIPT", "LOAD", xrl_lua_gcra };
	size_t argl[3] = { 6, 4, xrl_lua_gcra_len };
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int len, rc = 0;

	if (!rd)
		return -ENOMEM;
	rd->env = *env;
	rd->auth = xrl_redis_auth_tag(env->cfg);
	if (!EVP_Digest(xrl_lua_gcra, xrl_lua_gcra_len, md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != 20) {
		free(rd);
		return -EINVAL;
	}
	for (int i = 0; i < 20; i++)
		snprintf(rd->sha + 2 * i, 3, "%02x", md[i]);
	len = redisFormatCommandArgv(&rd->load_cmd, 3, argv, argl);
	if (len < 0) {
		free(rd);
		return -ENOMEM;
	}
	rd->load_len = (size_t)len;
	if (env->cfg->redis_cluster)
		rc = xrl_cluster_new(rd);
	if (rc)
		xrl_redis_free(rd);
	else
		*out = rd;
	return rc;
}

void xrl_redis_free(struct xrl_redis *rd)
{
	if (!rd)
		return;
	xrl_cluster_free(rd->cl);
	redisFreeCommand(rd->load_cmd);
	free(rd);
}

void xrl_redis_set_cfg(struct xrl_redis *rd)
{
	rd->auth = xrl_redis_auth_tag(rd->env.cfg);
}

static int redis_health(void *be)
{
	const struct xrl_redis *rd = be;

	return atomic_load(&rd->brk.state);
}

/* One Redis or a Redis Cluster, one table: a cluster's decision split by
 * slot, a part's slot sets taken in its own call (cluster.c), its release a
 * call per slot (cluster_lease.c). Cost: xrl_redis_pipe_queue's (a job
 * formatted, no syscall), or xrl_cpipe_queue's (a job a slot). */
static int redis_decide(void *be, struct xrl_redis_pipe *p, struct xrl_lim_item *it, int m,
			struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
			const struct xrl_limiter_wait *w, const struct xrl_backend_done *done)
{
	const struct xrl_redis *rd = be;

	if (rd->cl)
		return xrl_cpipe_queue(xrl_redis_pipe_face(p), it, m, ci, nc, d, w, done);
	return xrl_redis_pipe_queue(p, it, m, ci, nc, d, w, done);
}

static int redis_charge(void *be, struct xrl_redis_pipe *p, struct xrl_lim_item *it,
			struct xrl_decision *d, const struct xrl_limiter_wait *w,
			const struct xrl_backend_done *done)
{
	return redis_decide(be, p, it, 1, NULL, 0, d, w, done);
}

static int redis_release(void *be, struct xrl_redis_pipe *p, struct xrl_conc_item *ci, int nc,
			 const char *const *rules, struct xrl_release *res,
			 const struct xrl_limiter_wait *w)
{
	const struct xrl_redis *rd = be;

	if (rd->cl)
		return xrl_cpipe_queue_release(xrl_redis_pipe_face(p), ci, nc, rules, res, w);
	return xrl_redis_pipe_queue_release(p, ci, nc, rules, res, w);
}

const struct xrl_backend_ops xrl_redis_ops = {
	.name = "redis",
	.decide = redis_decide,
	.charge = redis_charge,
	.release = redis_release,
	.health = redis_health,
};

/* ---- the loops' pipes: one Redis's, or the face of a cluster's ---------------- */

static const struct xrl_lease_hooks lease_hooks = {
	.give_back = xrl_clease_give_back,
	.job_done = xrl_clease_job_done,
};

struct xrl_redis_pipe *xrl_redis_pipe_new(struct xrl_redis *rd)
{
	struct xrl_redis_pipe *p = xrl_redis_pipe_alloc(rd);
	struct xrl_cpipe *cp;

	if (!p || !rd->cl)
		return p;
	/* a cluster: this pipe is the face of one per node */
	cp = xrl_cpipe_new(rd, &lease_hooks);
	if (!cp) {
		xrl_redis_pipe_free(p);
		return NULL;
	}
	xrl_redis_pipe_set_face(p, cp);
	return p;
}

void xrl_limiter_pipe_abort(struct xrl_redis_pipe *p)
{
	struct xrl_cpipe *cp = xrl_redis_pipe_face(p);

	if (cp)
		xrl_cpipe_abort(cp);
	else
		xrl_redis_pipe_abort(p);
}

void xrl_limiter_pipe_free(struct xrl_redis_pipe *p)
{
	if (p && xrl_redis_pipe_face(p)) {
		xrl_cpipe_free(xrl_redis_pipe_face(p));
		free(p);
		return;
	}
	xrl_redis_pipe_free(p);
}

int xrl_limiter_pipe_poll(struct xrl_redis_pipe *p, short *events, __u64 *timeout_ns, __u32 *gen)
{
	struct xrl_cpipe *cp = xrl_redis_pipe_face(p);

	return cp ? xrl_cpipe_poll(cp, events, timeout_ns, gen)
		  : xrl_redis_pipe_poll(p, events, timeout_ns, gen);
}

int xrl_limiter_pipe_run(struct xrl_redis_pipe *p, short revents)
{
	struct xrl_cpipe *cp = xrl_redis_pipe_face(p);

	return cp ? xrl_cpipe_run(cp, revents) : xrl_redis_pipe_run(p, revents);
}

bool xrl_limiter_pipe_busy(const struct xrl_redis_pipe *p)
{
	struct xrl_cpipe *cp = xrl_redis_pipe_face(p);

	return cp ? xrl_cpipe_busy(cp) : xrl_redis_pipe_busy(p);
}

/* Drive p with poll() until *done (sync_mu held). */
void xrl_redis_pipe_sync_wait(struct xrl_redis_pipe *p, const bool *done)
{
	xrl_redis_pipe_run(p, 0);
	while (!*done) {
		struct pollfd pfd = { .fd = -1 };
		__u64 left;
		__u32 gen;
		int ms;

		pfd.fd = xrl_redis_pipe_poll(p, &pfd.events, &left, &gen);
		if (pfd.fd < 0) {
			xrl_redis_pipe_abort(p); /* nothing to wait for */
			break;
		}
		ms = left == UINT64_MAX ? -1 : (int)((left + 999999) / 1000000);
		if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
			pfd.revents = POLLERR;
		xrl_redis_pipe_run(p, pfd.revents);
	}
}
