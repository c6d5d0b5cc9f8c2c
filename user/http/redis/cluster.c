// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cluster.c - the identity tier on Redis Cluster (backend:
 * redis-cluster://): the slot map and the nodes, shared by a limiter's
 * threads; per server thread, a pipe per node (pipe.c's, one
 * connection each) behind one face that the event loop sees as one pipe.
 *
 * A decision's keys are grouped by slot ("parts"); one slot's keys go in
 * one script call, atomically, as on one Redis. A decision of several
 * slots takes from them in turn: a part goes out only once the one before
 * it admitted, and a refusal (or a failure) refunds the parts before it
 * (refund.lua: the TAT moved back by what was added; the leases they took
 * given back, cluster_lease.c). A crash between a take and its refund
 * costs at most one request's cost per rule; see docs/design.md, "Redis
 * Cluster". A part with slot sets goes in calls of its own slot (gcra.lua).
 *
 * MOVED updates the map at once and asks the refresher for the whole map;
 * ASK sends that call alone, after ASKING, to the node named, once. Five
 * redirects of one call in a row fail it (a map in flux). The breaker is
 * per node; a failed node also asks for a refresh, so a promoted replica
 * is found without a MOVED (its old master answers nothing).
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "cluster.h"
#include "log.h"
#include "redis_int.h"
#include "report.h"
#include "slots.h"
#include "util.h"

#define HOPS_MAX	 5
#define REFRESH_GAP_NS	 (100 * 1000000ULL) /* refreshes at most 10/s */
#define REFRESH_PERIOD_S 5		    /* and at least every 5 s */
#define CPIPE_FREE_MAX	 256
#define SERIAL_NS	 1000000ULL /* start_next: 1 ms */

/*
 * The node script (gcra_node.lua): one call for a node's decisions of
 * several slots, a GET a key (a command may not name two slots), every key
 * read before anything is written.
 */
#include "gcra_node.lua.h"

struct xrl_cnode {
	struct xrl_cluster *cl;
	struct xrl_node_addr a; /* set once, before n_nodes counts it */
	struct xrl_brk brk;
	_Atomic __u64 batches, errors, lat_ns;
};

struct xrl_cluster {
	struct xrl_redis *rd;
	pthread_rwlock_t mu; /* map */
	struct xrl_slot_map map;
	struct xrl_slot_map tmp; /* the refresher's, under mu */
	struct xrl_cnode node[XRL_CLUSTER_NODES_MAX];
	_Atomic __u32 n_nodes;
	pthread_t thr;
	bool thr_ok;
	pthread_mutex_t rmu;
	pthread_cond_t rcv;
	bool want, stop;
	_Atomic __u64 refreshes, refresh_errors, moved, ask, refunds, refund_errors;
	_Atomic __u64 givebacks, giveback_errors; /* cluster_lease.c's */
	char node_sha[41]; /* the node script's SHA1 */
	char *node_load;   /* its SCRIPT LOAD, formatted */
	size_t node_load_len;
};

/* One decision on a cluster: its items and slot sets, grouped in parts of
 * one slot each. */
struct xrl_creq {
	struct xrl_creq *next;
	struct xrl_limiter_wait w;
	struct xrl_backend_done done; /* how its decision goes back */
	struct xrl_decision *d;
	struct xrl_lim_item it[XRL_HTTP_MAX_MATCH];
	int m, nc, np, cur;
	struct xrl_redis_job *part[XRL_HTTP_MAX_MATCH * 2];
	__u8 pitem[XRL_HTTP_MAX_MATCH * 2][XRL_HTTP_MAX_MATCH]; /* part's item q: it[pitem] */
	__u8 pci[XRL_HTTP_MAX_MATCH * 2][XRL_HTTP_MAX_MATCH];	/* part's set q: ci[pci] */
	struct xrl_conc_item ci[XRL_HTTP_MAX_MATCH];
};

struct xrl_cpipe {
	struct xrl_redis *rd;
	const struct xrl_lease_hooks *lh; /* its leases' give-backs and releases */
	struct xrl_cluster *cl;
	int ep; /* the node pipes' fds; the loop polls this one */
	struct xrl_redis_pipe *np[XRL_CLUSTER_NODES_MAX];
	int reg_fd[XRL_CLUSTER_NODES_MAX];
	__u32 reg_gen[XRL_CLUSTER_NODES_MAX];
	short reg_ev[XRL_CLUSTER_NODES_MAX];
	unsigned handed;
	unsigned rr;	/* the node whose batch went last */
	__u32 inflight; /* requests not yet decided */
	bool closing;
	struct xrl_freelist spare_cr, spare_j;
};

static const struct xrl_node_hooks node_hooks; /* what its node pipes ask of it */

/* ---- nodes and the map -------------------------------------------------------- */

const char *xrl_cnode_name(const struct xrl_cnode *n, int *port)
{
	*port = n->a.port;
	return n->a.host;
}

const char *xrl_cnode_script(struct xrl_cnode *n, const char **cmd, size_t *len)
{
	*cmd = n->cl->node_load;
	*len = n->cl->node_load_len;
	return n->cl->node_sha;
}

/* The node script's SHA1 and its SCRIPT LOAD. */
static int node_script(struct xrl_cluster *cl)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	const char *argv[3] = { "SCRIPT", "LOAD", xrl_lua_gcra_node };
	size_t argl[3] = { 6, 4, xrl_lua_gcra_node_len };
	int len;

	if (!EVP_Digest(xrl_lua_gcra_node, xrl_lua_gcra_node_len, md, &mdlen, EVP_sha1(), NULL) ||
	    mdlen != 20)
		return -EINVAL;
	for (int i = 0; i < 20; i++)
		snprintf(cl->node_sha + 2 * i, 3, "%02x", md[i]);
	len = redisFormatCommandArgv(&cl->node_load, 3, argv, argl);
	if (len < 0)
		return -ENOMEM;
	cl->node_load_len = (size_t)len;
	return 0;
}

struct xrl_brk *xrl_cnode_brk(struct xrl_cnode *n)
{
	return &n->brk;
}

void xrl_cnode_batch(struct xrl_cnode *n, __u64 ns, bool ok)
{
	atomic_fetch_add_explicit(&n->batches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&n->lat_ns, ns, memory_order_relaxed);
	if (!ok) {
		atomic_fetch_add_explicit(&n->errors, 1, memory_order_relaxed);
		xrl_cluster_want_refresh(n->cl); /* a failover? */
	}
}

/* Nodes m's table gained since n_nodes last counted (mu held for write). */
static void nodes_publish(struct xrl_cluster *cl, const struct xrl_slot_map *m)
{
	for (__u32 i = atomic_load(&cl->n_nodes); i < m->n_nodes; i++) {
		cl->node[i].cl = cl;
		cl->node[i].a = m->node[i];
	}
	atomic_store(&cl->n_nodes, m->n_nodes);
}

int xrl_cnode_redirect(struct xrl_cnode *from, const char *err, size_t n, __u16 *to)
{
	struct xrl_cluster *cl = from->cl;
	char host[128];
	unsigned slot;
	bool ask;
	int port, idx;

	if (xrl_redirect_parse(err, n, &ask, &slot, host, sizeof(host), &port))
		return 0;
	if (!host[0]) /* the node that answered, on another port */
		snprintf(host, sizeof(host), "%s", from->a.host);
	pthread_rwlock_wrlock(&cl->mu);
	idx = xrl_slot_map_node(&cl->map, host, port);
	if (idx >= 0) {
		nodes_publish(cl, &cl->map);
		if (!ask)
			cl->map.master[slot] = (__u16)idx;
	}
	pthread_rwlock_unlock(&cl->mu);
	if (idx < 0)
		return 0; /* a table full of nodes: an error answer like another */
	*to = (__u16)idx;
	atomic_fetch_add(ask ? &cl->ask : &cl->moved, 1);
	if (!ask)
		xrl_cluster_want_refresh(cl);
	return ask ? J_ASK : J_MOVED;
}

/* The node serving slot now: the map's master, or the first seed (its
 * MOVED tells) while the map has none. */
static __u16 route(struct xrl_cluster *cl, unsigned slot)
{
	__u16 i;

	pthread_rwlock_rdlock(&cl->mu);
	i = cl->map.master[slot];
	pthread_rwlock_unlock(&cl->mu);
	return i == XRL_CLUSTER_NO_NODE ? 0 : i;
}

void xrl_cluster_want_refresh(struct xrl_cluster *cl)
{
	pthread_mutex_lock(&cl->rmu);
	cl->want = true;
	pthread_cond_signal(&cl->rcv);
	pthread_mutex_unlock(&cl->rmu);
}

/* One node asked for CLUSTER SLOTS, blocking up to the timeout (the
 * refresher's thread only). 0 and the map installed, or -errno. */
static int refresh_from(struct xrl_cluster *cl, const struct xrl_node_addr *a,
			const struct xrl_http_cfg *c)
{
	struct timeval tv = { .tv_sec = (time_t)(c->redis_timeout_ns / 1000000000ULL),
			      .tv_usec =
				      (suseconds_t)(c->redis_timeout_ns % 1000000000ULL / 1000) };
	redisContext *ctx = redisConnectWithTimeout(a->host, a->port, tv);
	redisReply *r = NULL;
	int rc = -EIO;

	if (!ctx || ctx->err || redisSetTimeout(ctx, tv) != REDIS_OK)
		goto out;
	if (c->redis_pass[0]) {
		r = c->redis_user[0] ? redisCommand(ctx, "AUTH %s %s", c->redis_user, c->redis_pass)
				     : redisCommand(ctx, "AUTH %s", c->redis_pass);
		if (!r || r->type == REDIS_REPLY_ERROR)
			goto out;
		freeReplyObject(r);
	}
	r = redisCommand(ctx, "CLUSTER SLOTS");
	if (!r || r->type != REDIS_REPLY_ARRAY)
		goto out;
	pthread_rwlock_wrlock(&cl->mu);
	memcpy(cl->tmp.node, cl->map.node, sizeof(cl->map.node));
	cl->tmp.n_nodes = cl->map.n_nodes;
	rc = xrl_slot_map_parse(&cl->tmp, r, a->host);
	/* a map that serves no slot (a node just restarted) is no news */
	if (rc > 0) {
		memcpy(&cl->map, &cl->tmp, sizeof(cl->map));
		nodes_publish(cl, &cl->map);
		rc = 0;
	} else {
		rc = -EBADMSG;
	}
	pthread_rwlock_unlock(&cl->mu);
out:
	if (r)
		freeReplyObject(r);
	if (ctx)
		redisFree(ctx);
	return rc;
}

/* The map from the first node that gives it: known nodes, then the seeds. */
static void refresh(struct xrl_cluster *cl)
{
	static __thread struct xrl_http_cfg c; /* 40 kB: not on the stack */
	struct xrl_node_addr cand[XRL_CLUSTER_NODES_MAX];
	__u32 n;

	pthread_rwlock_rdlock(cl->rd->env.cfg_mu);
	c = *cl->rd->env.cfg;
	pthread_rwlock_unlock(cl->rd->env.cfg_mu);
	n = atomic_load(&cl->n_nodes);
	for (__u32 i = 0; i < n; i++)
		cand[i] = cl->node[i].a;
	for (__u32 i = 0; i < n; i++)
		if (!refresh_from(cl, &cand[i], &c)) {
			atomic_fetch_add(&cl->refreshes, 1);
			explicit_bzero(&c, sizeof(c));
			return;
		}
	atomic_fetch_add(&cl->refresh_errors, 1);
	explicit_bzero(&c, sizeof(c));
}

static void *refresher(void *arg)
{
	struct xrl_cluster *cl = arg;
	struct timespec ts;

	pthread_mutex_lock(&cl->rmu);
	while (!cl->stop) {
		if (!cl->want) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += REFRESH_PERIOD_S;
			pthread_cond_timedwait(&cl->rcv, &cl->rmu, &ts);
			if (cl->stop)
				break;
		}
		cl->want = false;
		pthread_mutex_unlock(&cl->rmu);
		refresh(cl);
		nanosleep(&(struct timespec){ .tv_nsec = REFRESH_GAP_NS }, NULL);
		pthread_mutex_lock(&cl->rmu);
	}
	pthread_mutex_unlock(&cl->rmu);
	return NULL;
}

/* The seeds, as the first nodes (the map's node 0 is the first seed). */
static int add_seeds(struct xrl_cluster *cl, const char *seeds)
{
	char host[128];
	int port;

	for (const char *q = seeds, *e; *q; q = *e ? e + 1 : e) {
		e = strchr(q, ',');
		if (!e)
			e = q + strlen(q);
		if (xrl_hostport_parse(q, (size_t)(e - q), host, sizeof(host), &port) ||
		    xrl_slot_map_node(&cl->map, host, port) < 0)
			return -EINVAL;
	}
	nodes_publish(cl, &cl->map);
	return cl->map.n_nodes ? 0 : -EINVAL;
}

int xrl_cluster_new(struct xrl_redis *rd)
{
	struct xrl_cluster *cl = calloc(1, sizeof(*cl));
	int rc;

	if (!cl)
		return -ENOMEM;
	cl->rd = rd;
	pthread_rwlock_init(&cl->mu, NULL);
	pthread_mutex_init(&cl->rmu, NULL);
	pthread_cond_init(&cl->rcv, NULL);
	for (unsigned s = 0; s < XRL_CLUSTER_SLOTS; s++)
		cl->map.master[s] = XRL_CLUSTER_NO_NODE;
	rc = add_seeds(cl, rd->env.cfg->redis_seeds);
	if (!rc)
		rc = node_script(cl);
	if (rc) {
		redisFreeCommand(cl->node_load);
		free(cl);
		return rc;
	}
	/* the first map before the first decision, if the cluster answers */
	refresh(cl);
	rc = -pthread_create(&cl->thr, NULL, refresher, cl);
	if (rc) {
		redisFreeCommand(cl->node_load);
		free(cl);
		return rc;
	}
	cl->thr_ok = true;
	rd->cl = cl;
	return 0;
}

void xrl_cluster_free(struct xrl_cluster *cl)
{
	if (!cl)
		return;
	if (cl->thr_ok)
		xrl_thread_stop(&cl->rmu, &cl->rcv, &cl->stop, cl->thr);
	pthread_rwlock_destroy(&cl->mu);
	redisFreeCommand(cl->node_load);
	free(cl);
}

/* ---- the per-thread face ---------------------------------------------------- */

static struct xrl_redis_job *job_get(struct xrl_cpipe *cp)
{
	struct xrl_redis_job *j = xrl_fl_get(&cp->spare_j, sizeof(*j));

	if (j) {
		memset(j, 0, offsetof(struct xrl_redis_job, klen));
		j->slot = -1;
	}
	return j;
}

static void job_put(struct xrl_cpipe *cp, struct xrl_redis_job *j)
{
	if (j)
		xrl_fl_put(&cp->spare_j, j, CPIPE_FREE_MAX);
}

/* Onto the queue of the node that serves j's slot (or that a redirect
 * named): 0, or -ENOMEM (no pipe for it). */
static int job_send(struct xrl_cpipe *cp, struct xrl_redis_job *j, int to)
{
	__u16 i = to >= 0 ? (__u16)to : route(cp->cl, (unsigned)j->slot);

	if (i >= atomic_load(&cp->cl->n_nodes))
		i = 0;
	if (!cp->np[i]) {
		cp->np[i] = xrl_redis_node_pipe_new(cp->rd, &cp->cl->node[i], cp, &node_hooks);
		if (!cp->np[i])
			return -ENOMEM;
		cp->reg_fd[i] = -1;
	}
	xrl_redis_pipe_push(cp->np[i], j);
	return 0;
}

/* What cluster_lease.c makes its calls with. */
struct xrl_redis_job *xrl_cpipe_job_get(struct xrl_cpipe *cp)
{
	return job_get(cp);
}

void xrl_cpipe_job_put(struct xrl_cpipe *cp, struct xrl_redis_job *j)
{
	job_put(cp, j);
}

int xrl_cpipe_job_send(struct xrl_cpipe *cp, struct xrl_redis_job *j, int to)
{
	return job_send(cp, j, to);
}

void xrl_cpipe_giveback(struct xrl_cpipe *cp, bool ok)
{
	atomic_fetch_add(ok ? &cp->cl->givebacks : &cp->cl->giveback_errors, 1);
}

void xrl_cpipe_track(struct xrl_cpipe *cp, bool started)
{
	if (started) {
		cp->inflight++;
	} else {
		cp->inflight--;
		cp->handed++;
	}
}

/* The length of the RESP bulk string at s ("$N\r\n...\r\n"), and its text. */
static size_t bulk(const char *s, const char **text, size_t *tlen)
{
	size_t n = 0;
	const char *p = s + 1;

	while (*p >= '0' && *p <= '9')
		n = n * 10 + (size_t)(*p++ - '0');
	*text = p + 2;
	*tlen = n;
	return (size_t)(p + 2 + n + 2 - s);
}

/* Refund what parts [0, k) of cr took: one refund job a part. Best
 * effort: a refund that fails leaves those tokens spent (counted). */
static void refund(struct xrl_cpipe *cp, struct xrl_creq *cr, int k)
{
	for (int p = 0; p < k; p++) {
		struct xrl_redis_job *pj = cr->part[p], *r;
		const char *kb = pj->kb, *t;
		size_t tl;
		char num[32], *e;

		if (pj->nc && !cp->closing)
			cp->lh->give_back(cp, pj); /* cluster_lease.c */
		if (!pj->m)
			continue;
		if (cp->closing || !(r = job_get(cp))) {
			atomic_fetch_add(&cp->cl->refund_errors, 1);
			continue;
		}
		r->kind = JK_REFUND;
		r->slot = pj->slot;
		r->klen = r->alen = 0;
		for (int q = 0; q < pj->m; q++) {
			size_t n = bulk(kb, &t, &tl);

			if (pj->it[q].ok) { /* 'A': the script wrote it */
				memcpy(r->kb + r->klen, kb, n);
				r->klen += n;
				e = xrl_redis_put_us(num, pj->it[q].inc);
				r->alen = (size_t)(xrl_redis_put_bulk(r->ab + r->alen, num,
								      (size_t)(e - num)) -
						   r->ab);
				r->it[r->m++] = pj->it[q];
			}
			kb += n;
		}
		if (!r->m || job_send(cp, r, -1)) {
			job_put(cp, r);
			continue;
		}
		atomic_fetch_add(&cp->cl->refunds, 1);
	}
}

static void creq_finish(struct xrl_cpipe *cp, struct xrl_creq *cr, int st, int upto)
{
	struct xrl_lim_item it[XRL_HTTP_MAX_MATCH];
	struct xrl_conc_item ci[XRL_HTTP_MAX_MATCH];
	int k = 0, kc = 0;

	/* a refusal: the items and sets of the parts asked (later ones were not) */
	for (int p = 0; p < upto; p++) {
		for (int q = 0; q < cr->part[p]->m; q++)
			it[k++] = cr->it[cr->pitem[p][q]];
		for (int q = 0; q < cr->part[p]->nc; q++)
			ci[kc++] = cr->ci[cr->pci[p][q]];
	}
	pthread_rwlock_rdlock(cp->rd->env.cfg_mu);
	cr->done.fn(cr->done.ctx, it, k, ci, kc, st, rd_now(cp->rd), cr->d);
	pthread_rwlock_unlock(cp->rd->env.cfg_mu);
	cr->w.decided(cr->w.arg);
	cp->handed++;
	cp->inflight--;
	for (int p = 0; p < cr->np; p++)
		job_put(cp, cr->part[p]);
	xrl_fl_put(&cp->spare_cr, cr, CPIPE_FREE_MAX);
}

/* A part answered (J_OK): its items into the request; the next part, or
 * the decision (a refusal refunds the parts before). */
static void part_done(struct xrl_cpipe *cp, struct xrl_creq *cr, struct xrl_redis_job *j)
{
	bool refused = false;

	for (int q = 0; q < j->m; q++) {
		cr->it[cr->pitem[cr->cur][q]] = j->it[q];
		refused |= !j->it[q].ok && !j->it[q].r->shadow;
	}
	for (int q = 0; q < j->nc; q++) {
		cr->ci[cr->pci[cr->cur][q]] = j->ci[q];
		refused |= !j->ci[q].ok && !j->ci[q].r->shadow;
	}
	if (refused) {
		refund(cp, cr, cr->cur);
		creq_finish(cp, cr, J_OK, cr->cur + 1);
	} else if (cr->cur + 1 < cr->np) {
		cr->cur++;
		if (job_send(cp, cr->part[cr->cur], -1)) {
			refund(cp, cr, cr->cur);
			creq_finish(cp, cr, J_FAIL, cr->np);
		}
	} else {
		creq_finish(cp, cr, J_OK, cr->np);
	}
}

void xrl_cpipe_job_done(struct xrl_cpipe *cp, struct xrl_redis_job *j)
{
	struct xrl_creq *cr = j->cr;
	int st = j->st;

	if ((st == J_MOVED || st == J_ASK) && !cp->closing && ++j->hops <= HOPS_MAX) {
		j->asking = st == J_ASK;
		/* MOVED updated the map: each job by its own slot (a node's call
		 * holds several); ASK: the node named */
		if (!job_send(cp, j, st == J_ASK ? j->redir : -1))
			return;
		st = J_FAIL;
	}
	j->asking = false;
	if (j->kind == JK_REFUND) {
		if (st != J_OK)
			atomic_fetch_add(&cp->cl->refund_errors, 1);
		job_put(cp, j);
		return;
	}
	if (j->res) { /* a release, or a give-back (cluster_lease.c) */
		cp->lh->job_done(cp, j, st);
		return;
	}
	if (st == J_MOVED || st == J_ASK)
		st = J_FAIL; /* redirected too often */
	if (st == J_OK) {
		part_done(cp, cr, j);
		return;
	}
	/* the node failed, or its breaker is open: the parts taken go back, and
	 * every rule of the request decides per its on_backend_error */
	refund(cp, cr, cr->cur);
	creq_finish(cp, cr, st, cr->np);
}

/* Part p of cr for slot (made if new), or NULL: out of memory. */
static struct xrl_redis_job *part_of(struct xrl_cpipe *cp, struct xrl_creq *cr, int slot, int *pp)
{
	int p;

	for (p = 0; p < cr->np && cr->part[p]->slot != slot; p++)
		;
	if (p == cr->np) {
		cr->part[p] = job_get(cp);
		if (!cr->part[p])
			return NULL;
		cr->part[p]->slot = slot;
		cr->part[p]->klen = cr->part[p]->alen = 0;
		cr->np++;
	}
	*pp = p;
	return cr->part[p];
}

/*
 * The parts of a decision: its items and slot sets grouped by the slot of
 * their key names (a set has its bucket's hash tag), each part's keys and
 * arguments cut from j0 (formatted whole: buckets, then sets, as each
 * part's are). A part with sets goes in calls of its own slot (one_slot):
 * the node script decides rates only.
 */
static int split_parts(struct xrl_cpipe *cp, struct xrl_creq *cr, struct xrl_redis_job *j0)
{
	enum { N = 2 * XRL_HTTP_MAX_MATCH };
	const char *kb = j0->kb, *ab = j0->ab, *t;
	size_t kn[N], an[N], tl;
	const char *ks[N], *as[N];
	int slot[N], p, n = cr->m + cr->nc;

	for (int i = 0; i < n; i++) {
		ks[i] = kb;
		kn[i] = bulk(kb, &t, &tl);
		slot[i] = (int)xrl_key_slot(t, tl);
		kb += kn[i];
		as[i] = ab;
		an[i] = 0;
		for (int a = 0; a < (i < cr->m ? 2 : 3); a++)
			an[i] += bulk(ab + an[i], &t, &tl);
		ab += an[i];
	}
	for (p = 1; p < n && slot[p] == slot[0]; p++)
		;
	if (p == n) { /* the common case: one slot, j0 is the part */
		j0->slot = slot[0];
		j0->one_slot = cr->nc > 0;
		cr->part[cr->np++] = j0;
		for (int k = 0; k < cr->m; k++)
			cr->pitem[0][k] = (__u8)k;
		for (int k = 0; k < cr->nc; k++)
			cr->pci[0][k] = (__u8)k;
		return 0;
	}
	for (int i = 0; i < n; i++) {
		struct xrl_redis_job *pj = part_of(cp, cr, slot[i], &p);

		if (!pj)
			return -ENOMEM;
		if (i < cr->m) {
			cr->pitem[p][pj->m] = (__u8)i;
			pj->it[pj->m++] = cr->it[i];
		} else {
			cr->pci[p][pj->nc] = (__u8)(i - cr->m);
			pj->ci[pj->nc++] = cr->ci[i - cr->m];
			pj->one_slot = true;
		}
		memcpy(pj->kb + pj->klen, ks[i], kn[i]);
		pj->klen += kn[i];
		memcpy(pj->ab + pj->alen, as[i], an[i]);
		pj->alen += an[i];
	}
	job_put(cp, j0);
	return 0;
}

int xrl_cpipe_queue(struct xrl_cpipe *cp, struct xrl_lim_item *it, int m,
		    struct xrl_conc_item *ci, int nc, struct xrl_decision *d,
		    const struct xrl_limiter_wait *w, const struct xrl_backend_done *done)
{
	const char *ik[XRL_HTTP_MAX_MATCH];
	struct xrl_redis_job *j0 = job_get(cp);
	struct xrl_creq *cr = xrl_fl_get(&cp->spare_cr, sizeof(*cr));

	if (!cr || !j0)
		goto oom;
	memset(cr, 0, offsetof(struct xrl_creq, pitem));
	for (int i = 0; i < m; i++) {
		ik[i] = it[i].key;
		it[i].key = NULL; /* the caller's: gone once we return */
	}
	memcpy(cr->it, it, sizeof(it[0]) * (size_t)m);
	memcpy(j0->it, it, sizeof(it[0]) * (size_t)m);
	if (nc) {
		memcpy(cr->ci, ci, sizeof(ci[0]) * (size_t)nc);
		memcpy(j0->ci, ci, sizeof(ci[0]) * (size_t)nc);
	}
	cr->m = j0->m = m;
	cr->nc = j0->nc = nc;
	cr->d = d;
	cr->w = *w;
	cr->done = *done;
	xrl_redis_job_format(j0, ik);
	if (split_parts(cp, cr, j0)) { /* the parts made, j0 apart from them */
		for (int p = 0; p < cr->np; p++)
			job_put(cp, cr->part[p]);
		goto oom;
	}
	for (int p = 0; p < cr->np; p++)
		cr->part[p]->cr = cr;
	if (job_send(cp, cr->part[0], -1)) {
		for (int p = 0; p < cr->np; p++)
			job_put(cp, cr->part[p]);
		j0 = NULL;
		goto oom;
	}
	cp->inflight++;
	if (w->queued)
		w->queued(w->arg);
	return 1;
oom:
	job_put(cp, j0);
	free(cr);
	pthread_rwlock_rdlock(cp->rd->env.cfg_mu);
	done->fn(done->ctx, it, m, ci, nc, J_FAIL, rd_now(cp->rd), d);
	pthread_rwlock_unlock(cp->rd->env.cfg_mu);
	return 0;
}

struct xrl_cpipe *xrl_cpipe_new(struct xrl_redis *rd, const struct xrl_lease_hooks *lh)
{
	struct xrl_cpipe *cp = calloc(1, sizeof(*cp));

	if (!cp)
		return NULL;
	cp->rd = rd;
	cp->lh = lh;
	cp->cl = rd->cl;
	cp->ep = epoll_create1(EPOLL_CLOEXEC);
	if (cp->ep < 0) {
		free(cp);
		return NULL;
	}
	return cp;
}

void xrl_cpipe_abort(struct xrl_cpipe *cp)
{
	/* a node's failed jobs may queue refunds on another: twice round */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < XRL_CLUSTER_NODES_MAX; i++)
			if (cp->np[i])
				xrl_redis_pipe_abort(cp->np[i]);
}

void xrl_cpipe_free(struct xrl_cpipe *cp)
{
	if (!cp)
		return;
	xrl_cpipe_abort(cp);
	cp->closing = true;
	for (int i = 0; i < XRL_CLUSTER_NODES_MAX; i++)
		xrl_redis_pipe_free(cp->np[i]);
	xrl_fl_drain(&cp->spare_cr);
	xrl_fl_drain(&cp->spare_j);
	close(cp->ep);
	free(cp);
}

int xrl_cpipe_poll(struct xrl_cpipe *cp, short *events, __u64 *timeout_ns, __u32 *gen)
{
	bool waiting = false;
	__u64 out = 0;

	*timeout_ns = UINT64_MAX;
	for (int i = 0; i < XRL_CLUSTER_NODES_MAX; i++) {
		short ev = 0;
		__u64 to;
		__u32 g;
		int fd;

		if (!cp->np[i])
			continue;
		fd = xrl_redis_pipe_poll(cp->np[i], &ev, &to, &g);
		if (to < *timeout_ns)
			*timeout_ns = to;
		waiting |= xrl_redis_pipe_waiting(cp->np[i]);
		if (xrl_redis_pipe_out(cp->np[i]) > out)
			out = xrl_redis_pipe_out(cp->np[i]);
		if (fd != cp->reg_fd[i] || g != cp->reg_gen[i] || ev != cp->reg_ev[i]) {
			/* as loop.c's: a new connection is a new fd; a closed one
			 * left the set when it was closed */
			struct epoll_event e = { .events = (ev & POLLIN ? EPOLLIN : 0u) |
							   (ev & POLLOUT ? EPOLLOUT : 0u),
						 .data.u32 = (__u32)i };

			if (fd >= 0 && fd == cp->reg_fd[i] && g == cp->reg_gen[i])
				epoll_ctl(cp->ep, EPOLL_CTL_MOD, fd, &e);
			else if (fd >= 0 && epoll_ctl(cp->ep, EPOLL_CTL_ADD, fd, &e) &&
				 errno == EEXIST)
				epoll_ctl(cp->ep, EPOLL_CTL_MOD, fd, &e);
			cp->reg_fd[i] = fd;
			cp->reg_gen[i] = g;
			cp->reg_ev[i] = ev;
		}
	}
	if (waiting) { /* start_next's turn, at the latest (now: none is out) */
		__u64 now = rd_now(cp->rd), to = out + SERIAL_NS > now ? out + SERIAL_NS - now : 0;

		if (to < *timeout_ns)
			*timeout_ns = to;
	}
	*events = POLLIN;
	*gen = 0;
	return cp->ep;
}

/*
 * Start a node's queued batch: one node's batch out at a time, the nodes in
 * turn, unless the one out has been out SERIAL_NS already. Why: a node's
 * call costs Redis a wake-up, a read, a write and a replication
 * transaction whatever its size, and with every node's batch out at once a
 * node's batch is a third of one Redis's (three masters); in turn, each
 * node's queue fills while the others' calls are out, and a call carries
 * about what one Redis's would (docs/benchmarks.md, "Redis Cluster"). A
 * decision waits at most SERIAL_NS more than on one Redis before its call
 * goes; a node that stops answering holds the others that long only.
 */
static void start_next(struct xrl_cpipe *cp)
{
	__u64 now = rd_now(cp->rd), out = 0;

	for (int i = 0; i < XRL_CLUSTER_NODES_MAX; i++) {
		__u64 t = cp->np[i] ? xrl_redis_pipe_out(cp->np[i]) : 0;

		if (t && (!out || t > out))
			out = t; /* the latest batch out */
	}
	if (out && now - out < SERIAL_NS)
		return;
	for (int k = 0; k < XRL_CLUSTER_NODES_MAX; k++) {
		int i = (int)((cp->rr + 1 + (unsigned)k) % XRL_CLUSTER_NODES_MAX);

		if (cp->np[i] && xrl_redis_pipe_waiting(cp->np[i])) {
			cp->rr = (unsigned)i;
			xrl_redis_pipe_run(cp->np[i], 0);
			if (xrl_redis_pipe_out(cp->np[i]))
				return;
		}
	}
}

int xrl_cpipe_run(struct xrl_cpipe *cp, short revents)
{
	short rev[XRL_CLUSTER_NODES_MAX] = { 0 };
	struct epoll_event ev[16];
	int n;

	cp->handed = 0;
	if (revents) {
		n = epoll_wait(cp->ep, ev, 16, 0);
		for (int k = 0; k < n; k++)
			rev[ev[k].data.u32] |= (short)((ev[k].events & EPOLLIN ? POLLIN : 0) |
						       (ev[k].events & EPOLLOUT ? POLLOUT : 0) |
						       (ev[k].events & EPOLLERR ? POLLERR : 0) |
						       (ev[k].events & EPOLLHUP ? POLLHUP : 0));
	}
	/* replies, writes and deadlines first, no batch started: a node's
	 * answers may queue work on another (the next part, a redirect, a
	 * refund); then the next batch, start_next's way */
	for (int i = 0; i < XRL_CLUSTER_NODES_MAX; i++)
		if (cp->np[i] && (rev[i] || xrl_redis_pipe_busy(cp->np[i]))) {
			xrl_redis_pipe_hold(cp->np[i], true);
			xrl_redis_pipe_run(cp->np[i], rev[i]);
			xrl_redis_pipe_hold(cp->np[i], false);
		}
	start_next(cp);
	return (int)cp->handed;
}

bool xrl_cpipe_busy(const struct xrl_cpipe *cp)
{
	if (cp->inflight)
		return true;
	for (int i = 0; i < XRL_CLUSTER_NODES_MAX; i++)
		if (cp->np[i] && xrl_redis_pipe_busy(cp->np[i]))
			return true;
	return false;
}

/* ---- metrics ------------------------------------------------------------------ */

/* What a per-node family reports: a count, the batch time in seconds, or
 * the breaker as 0 (closed) or 1 (open or half-open). */
enum xrl_node_stat { NODE_BATCHES, NODE_ERRORS, NODE_SECONDS, NODE_BREAKER };

static void node_family(struct xrl_buf *b, struct xrl_cluster *cl, __u32 n, const char *name,
			const char *type, const char *help, enum xrl_node_stat what)
{
	xrl_prom_family(b, name, type, help);
	for (__u32 i = 0; i < n; i++) {
		struct xrl_cnode *nd = &cl->node[i];

		xrl_buf_printf(b, "%s{node=\"%s:%d\"} ", name, nd->a.host, nd->a.port);
		if (what == NODE_SECONDS)
			xrl_buf_printf(b, "%.9f\n", (double)atomic_load(&nd->lat_ns) / 1e9);
		else if (what == NODE_BREAKER)
			xrl_buf_printf(b, "%d\n", atomic_load(&nd->brk.state) != BRK_CLOSED);
		else
			xrl_buf_printf(b, "%llu\n",
				       (unsigned long long)atomic_load(
					       what == NODE_BATCHES ? &nd->batches : &nd->errors));
	}
}

/* A family with two samples, label=v1 and label=v2. */
static void two_family(struct xrl_buf *b, const char *name, const char *help, const char *label,
		       const char *v1, __u64 n1, const char *v2, __u64 n2)
{
	xrl_prom_family(b, name, "counter", help);
	xrl_prom_u64(b, name, label, v1, n1);
	xrl_prom_u64(b, name, label, v2, n2);
}

void xrl_cluster_metrics(struct xrl_redis *rd, struct xrl_buf *b)
{
	struct xrl_cluster *cl = rd->cl;
	__u32 n;

	if (!cl)
		return;
	n = atomic_load(&cl->n_nodes);
	node_family(b, cl, n, "xrl_http_redis_node_batches_total", "counter",
		    "Batches a Redis Cluster node answered or failed, per node.", NODE_BATCHES);
	node_family(b, cl, n, "xrl_http_redis_node_errors_total", "counter",
		    "Batches a Redis Cluster node failed (timeout, error, closed), per node.",
		    NODE_ERRORS);
	node_family(b, cl, n, "xrl_http_redis_node_batch_seconds_total", "counter",
		    "Time batches spent on a Redis Cluster node, write to last reply, per "
		    "node (over batches_total: the mean latency).",
		    NODE_SECONDS);
	node_family(b, cl, n, "xrl_http_redis_node_breaker_open", "gauge",
		    "1 while a Redis Cluster node's breaker is open or half-open.", NODE_BREAKER);
	two_family(b, "xrl_http_redis_slot_map_refreshes_total",
		   "Redis Cluster slot maps read (CLUSTER SLOTS), by result.", "result", "ok",
		   atomic_load(&cl->refreshes), "error", atomic_load(&cl->refresh_errors));
	two_family(b, "xrl_http_redis_redirects_total",
		   "Redis Cluster redirects followed, by kind.", "kind", "moved",
		   atomic_load(&cl->moved), "ask", atomic_load(&cl->ask));
	two_family(b, "xrl_http_redis_refunds_total",
		   "Parts of a multi-slot decision refunded after a later part refused or "
		   "failed, by result (error: those tokens stay spent).",
		   "result", "sent", atomic_load(&cl->refunds), "error",
		   atomic_load(&cl->refund_errors));
	two_family(b, "xrl_http_redis_lease_givebacks_total",
		   "Parts of a multi-slot decision whose leases were given back after a later "
		   "part refused or failed, by result (error: those slots stay held until "
		   "lease_ttl).",
		   "result", "sent", atomic_load(&cl->givebacks), "error",
		   atomic_load(&cl->giveback_errors));
}

static const struct xrl_node_hooks node_hooks = {
	.name = xrl_cnode_name,
	.brk = xrl_cnode_brk,
	.batch = xrl_cnode_batch,
	.script = xrl_cnode_script,
	.redirect = xrl_cnode_redirect,
	.job_done = xrl_cpipe_job_done,
};
