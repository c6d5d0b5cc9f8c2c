// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * reload.c - a new configuration into a running tier, once: what the
 * running server was started with is kept (and said), xrlctl's shadow
 * switches carried over, the configuration swapped in under the write
 * lock and handed to the limiter; the per-rule counters carried by rule
 * name (a rule kept keeps counting), the top-k started again (it is by
 * rule index).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http.h"
#include "log.h"
#include "server_int.h"

int xrl_http_cfg_restart_diff(const struct xrl_http_cfg *run, const struct xrl_http_cfg *next,
			      char *out, size_t outlen)
{
	const struct {
		const char *name;
		bool differs;
	} f[] = {
		{ "listen", strcmp(run->listen, next->listen) != 0 },
		{ "idle_timeout", run->idle_timeout_ns != next->idle_timeout_ns },
		{ "max_connections", run->max_connections != next->max_connections },
		{ "max_header_bytes", run->max_header_bytes != next->max_header_bytes },
		{ "max_connections_per_peer", run->max_conn_per_peer != next->max_conn_per_peer },
		{ "max_keys", run->memory_max_keys != next->memory_max_keys },
		{ "threads", run->threads != next->threads },
		{ "fleet", strcmp(run->fleet, next->fleet) != 0 },
		/* a pipe is a cluster's or one server's for its life */
		{ "backend kind", run->redis_cluster != next->redis_cluster },
	};
	size_t o = 0;
	int n = 0;

	if (outlen)
		out[0] = '\0';
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		if (!f[i].differs)
			continue;
		if (o < outlen)
			o += (size_t)snprintf(out + o, outlen - o, "%s%s", n ? ", " : "",
					      f[i].name);
		n++;
	}
	return n;
}

/*
 * What libmicrohttpd, the loops and the pipes were started with, which a
 * reload cannot change: when any of it differs, n keeps run's (the backend
 * too when its kind would change: a pipe is one kind or the other), and
 * the names of what differed are in out. Returns how many differed.
 */
int xrl_http_cfg_keep_running(const struct xrl_http_cfg *run, struct xrl_http_cfg *n, char *out,
			       size_t outlen)
{
	int k = xrl_http_cfg_restart_diff(run, n, out, outlen);

	if (!k)
		return 0;
	snprintf(n->listen, sizeof(n->listen), "%s", run->listen);
	n->listen_port = run->listen_port;
	n->listen_addr = run->listen_addr;
	n->listen_addrlen = run->listen_addrlen;
	n->idle_timeout_ns = run->idle_timeout_ns;
	n->max_connections = run->max_connections;
	n->max_header_bytes = run->max_header_bytes;
	n->max_conn_per_peer = run->max_conn_per_peer;
	n->memory_max_keys = run->memory_max_keys;
	n->threads = run->threads;
	if (n->redis_cluster != run->redis_cluster) {
		/* the pipes are one kind or the other: the backend stays */
		n->redis = run->redis;
		n->redis_cluster = run->redis_cluster;
		memcpy(n->redis_host, run->redis_host, sizeof(n->redis_host));
		n->redis_port = run->redis_port;
		n->redis_db = run->redis_db;
		memcpy(n->redis_seeds, run->redis_seeds, sizeof(n->redis_seeds));
	}
	return k;
}

/* xrlctl's shadow switches onto c (they outlive a reload). */
void xrl_srv_shadow_apply(struct xrl_http_server *s, struct xrl_http_cfg *c)
{
	for (int k = 0; k < s->n_shadow; k++)
		for (__u32 i = 0; i < c->n_rules; i++)
			if (!strcmp(c->rules[i].name, s->shadow_name[k]))
				c->rules[i].shadow = s->shadow_on[k];
}

/* Counted where no scrape reads: a rule whose counters could not be had. */
static struct xrl_srv_rule_ctr ctr_spare;

int xrl_srv_cfg_counters(struct xrl_srv_cfg *n, const struct xrl_srv_cfg *from)
{
	int spare = 0;

	for (__u32 i = 0; i < n->c.n_rules; i++) {
		struct xrl_srv_rule_ctr *k = NULL;

		for (__u32 j = 0; from && !k && j < from->c.n_rules; j++)
			if (from->ctr[j] && from->ctr[j] != &ctr_spare &&
			    !strcmp(from->c.rules[j].name, n->c.rules[i].name))
				k = from->ctr[j];
		if (!k)
			k = calloc(1, sizeof(*k));
		if (!k) {
			n->ctr[i] = &ctr_spare;
			spare++;
			continue;
		}
		k->refs++;
		n->ctr[i] = k;
	}
	return spare;
}

void xrl_srv_cfg_free(struct xrl_srv_cfg *x)
{
	if (!x)
		return;
	for (__u32 i = 0; i < x->c.n_rules; i++) {
		struct xrl_srv_rule_ctr *k = x->ctr[i];

		if (k && k != &ctr_spare && !--k->refs)
			free(k);
	}
	free(x);
}

/*
 * n becomes the configuration in force (write lock held): the shadow
 * switches of xrlctl carried over, the old one retired, and every retired
 * one no request holds any more freed. No request in a handler holds one
 * (we have the write lock); those waiting for Redis count theirs.
 */
void xrl_srv_cfg_swap(struct xrl_http_server *s, struct xrl_srv_cfg *n)
{
	struct xrl_srv_cfg **pp, *x;

	xrl_srv_shadow_apply(s, &n->c); /* xrlctl shadow outlives a reload */
	if (n->c.n_rules && !n->ctr[0] && xrl_srv_cfg_counters(n, s->cfg))
		log_warnx("http: out of memory: a new rule's decisions go uncounted");
	s->cfg->next = s->retired;
	s->retired = s->cfg;
	s->cfg = n;
	for (pp = &s->retired; (x = *pp);) {
		if (atomic_load(&x->held)) {
			pp = &x->next;
		} else {
			*pp = x->next;
			xrl_srv_cfg_free(x);
		}
	}
	atomic_fetch_add(&s->gen, 1);
	xrl_limiter_set_cfg(s->lim, &n->c);
}

int xrl_http_reload_check(struct xrl_http_server *s, const struct xrl_http_cfg *c, char *err,
			  size_t errlen)
{
	/* a backend of the other kind is not applied on reload (the pipes
	 * are one kind or the other); every rule works on each kind, so
	 * none needs a restart today */
	(void)s;
	(void)c;
	(void)err;
	(void)errlen;
	return 0;
}

int xrl_http_reload(struct xrl_http_server *s, const struct xrl_http_cfg *c)
{
	struct xrl_srv_cfg *n = calloc(1, sizeof(*n));
	char changed[160];

	if (!n)
		return -ENOMEM;
	n->c = *c;
	pthread_rwlock_wrlock(&s->mu);
	/* libmicrohttpd was started with these: they stay as they run, and the
	 * configuration in force says so */
	xrl_http_cfg_keep_running(&s->cfg->c, &n->c, changed, sizeof(changed));
	xrl_srv_cfg_swap(s, n);	 /* the counters carried by rule name */
	xrl_topk_reset(s->topk); /* by rule index */
	pthread_rwlock_unlock(&s->mu);
	if (changed[0])
		log_warnx("http: couldn't apply %s on reload: the server keeps running as started "
			  "(restart xrld for the change)",
			  changed);
	return 0;
}
