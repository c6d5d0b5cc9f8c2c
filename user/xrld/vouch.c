// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * vouch.c - the identity tier's vouches into the packet tier's xrl_vouch
 * map. A request admitted by an http rule with vouch: true hands the
 * client's address to the identity process's event socket (idproc.c),
 * whose handler on the main loop queues it here; the main loop writes it
 * on every interface (origin identity), into the automatic space
 * (xrl_vouch) alone: an operator's vouch (xrl_vouch_op) is out of this
 * path's reach.
 *
 * Bounded work under a flood of admitted clients: a prefix (/24, /48)
 * written less than half its ttl ago (at least one second) is skipped
 * before it is queued, by a direct-mapped table of recent writes (a
 * collision costs one more write, never a missed one); the queue holds
 * VQ_SLOTS prefixes and drops, counted, beyond that; the main loop drains
 * it once per wake-up. So at most one map write per prefix per half ttl,
 * and at most VQ_SLOTS writes a wake-up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "http/http.h"
#include "idproc.h"
#include "log.h"
#include "xrld.h"

#define VQ_SLOTS  4096
#define VQ_RECENT (1u << 16) /* recent writes remembered, power of 2 */

struct vq_item {
	struct xrl_prefix p; /* widened to /24 or /48 */
	__u64 ttl_ns;
};

struct vq_recent {
	struct xrl_prefix p;
	__u64 until_ns; /* skip the same prefix until then */
};

struct xrld_vouchq {
	pthread_mutex_t mu;
	struct vq_item q[VQ_SLOTS];
	unsigned n;
	struct vq_recent recent[VQ_RECENT];
	int efd;	   /* the eventfd */
	bool warned;	   /* no interface to write to: said once */
};

static void widen(struct xrl_prefix *p)
{
	__u32 m[4];

	p->plen = p->family == XRL_AF_INET ? XRL_VOUCH_PLEN4 : XRL_VOUCH_PLEN6;
	xrl_prefix_mask(p->family, p->plen, m);
	for (int i = 0; i < 4; i++)
		p->addr[i] &= m[i];
}

/* Queue client's prefix unless it was written lately (the main loop, from
 * the identity process's events). */
static void on_vouch(void *arg, const struct xrl_prefix *client, __u64 ttl_ns)
{
	struct xrld *d = arg;
	struct xrld_vouchq *v = d->vq;
	struct xrl_prefix p = *client;
	__u64 now = xrl_now_ns(), skip = ttl_ns / 2;
	struct vq_recent *r;
	bool wake = false;

	widen(&p);
	if (skip < XRL_NSEC_PER_SEC)
		skip = XRL_NSEC_PER_SEC;
	r = &v->recent[xrl_fnv1a64(&p, sizeof(p)) & (VQ_RECENT - 1)];
	pthread_mutex_lock(&v->mu);
	if (!memcmp(&r->p, &p, sizeof(p)) && now < r->until_ns) {
		pthread_mutex_unlock(&v->mu);
		COUNT(d->vouch_skipped);
		return;
	}
	if (v->n < VQ_SLOTS) {
		r->p = p;
		r->until_ns = now + skip;
		v->q[v->n++] = (struct vq_item){ .p = p, .ttl_ns = ttl_ns };
		wake = v->n == 1;
	} else {
		COUNT(d->vouch_dropped);
	}
	pthread_mutex_unlock(&v->mu);
	if (wake && eventfd_write(v->efd, 1))
		log_warn("couldn't wake the main loop for a vouch");
}

/* A vouch the identity process sent (checked there): queued for the maps. */
static void vouch_in(struct xrld *d, const struct xrl_idev *e)
{
	if (d->vq)
		on_vouch(d, &e->vouch.p, e->vouch.ttl_ns);
}

/* The main loop: write what was queued. */
static void on_queue(int fd, unsigned events, void *ctx)
{
	struct xrld *d = ctx;
	static struct vq_item batch[VQ_SLOTS];
	struct xrld_vouchq *v = d->vq;
	eventfd_t n;
	unsigned m;

	eventfd_read(fd, &n);
	pthread_mutex_lock(&v->mu);
	m = v->n;
	memcpy(batch, v->q, m * sizeof(batch[0]));
	v->n = 0;
	pthread_mutex_unlock(&v->mu);
	if (m && !d->n_ifs && !v->warned) {
		log_warnx(
			"vouch: true admitted clients, but no interface is attached: not vouched");
		v->warned = true;
	}
	for (unsigned i = 0; i < m; i++) {
		int err = 0;

		/* the automatic space only: an operator's vouch of the same
		 * prefix stays as it is (lib's xrl_vouch_auto) */
		for (int k = 0; k < d->n_ifs && (!err || err == -EEXIST); k++)
			err = xrl_vouch_auto(d->ifs[k].h, &batch[i].p, batch[i].ttl_ns,
					     XRL_ORIGIN_IDENTITY);
		if (err == -EEXIST) {
			COUNT(d->vouch_skipped);
			continue;
		}
		if (err || !d->n_ifs) {
			COUNT(d->vouch_dropped);
			continue;
		}
		COUNT(d->vouched_identity);
	}
}

int xrld_vouch_start(struct xrld *d)
{
	/* only an identity tier vouches (without one there is nothing to queue) */
	struct xrld_vouchq *v = d->http ? calloc(1, sizeof(*v)) : NULL;
	int err;

	if (!v)
		return d->http ? -ENOMEM : 0;
	pthread_mutex_init(&v->mu, NULL);
	v->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (v->efd < 0 || (err = xrld_fd_add(d->loop, v->efd, EPOLLIN, on_queue, d))) {
		err = v->efd < 0 ? -errno : err;
		if (v->efd >= 0)
			close(v->efd);
		free(v);
		return err;
	}
	d->vq = v;
	xrld_idp_take(d, XRL_IDEV_VOUCH, vouch_in);
	return 0;
}

/*
 * Per interface i: how full the operators' space is (a walk of at most
 * XRL_VOUCH_OP_MAX keys), and whether a program from before it makes
 * operator vouches ride in the automatic one. b: a text line; o: fields
 * into the interface's JSON object.
 */
void xrld_vouch_status(struct xrld *d, int i, struct xrl_buf *b, json_t *o)
{
	const struct xrl_attach_info *in = xrl_info(d->ifs[i].h);
	__u32 used, cap;

	if (xrl_vouch_op_room(d->ifs[i].h, &used, &cap))
		return;
	if (o) {
		json_object_set_new(o, "vouches",
				    json_pack("{s:I,s:I,s:b}", "operator", (json_int_t)used,
					      "operator_max", (json_int_t)cap, "mirrored",
					      in->vouch_mirror));
		return;
	}
	xrl_buf_printf(b, "  %s vouches: operator %u of %u (never evicted)%s\n", d->ifs[i].name,
		       used, cap,
		       in->vouch_mirror ? "; MIRRORED into the automatic space: the attached "
					  "program predates the operator map (detach and attach)"
					: "");
}

void xrld_vouch_metrics(struct xrld *d, struct xrl_buf *b)
{
	xrl_prom_family(b, "xrl_operator_vouches", "gauge",
			"Prefixes vouched for by an operator (xrlctl vouch add), in their own "
			"map that no automatic vouch can shorten or evict; at most "
			"xrl_operator_vouches_max (a full map refuses the add).");
	for (int i = 0; i < d->n_ifs; i++) {
		__u32 used, cap;

		if (!xrl_vouch_op_room(d->ifs[i].h, &used, &cap))
			xrl_prom_u64(b, "xrl_operator_vouches", "interface", d->ifs[i].name, used);
	}
	xrl_prom_family(b, "xrl_operator_vouches_max", "gauge",
			"Capacity of the operators' vouch map, per interface.");
	for (int i = 0; i < d->n_ifs; i++)
		xrl_prom_u64(b, "xrl_operator_vouches_max", "interface", d->ifs[i].name,
			     XRL_VOUCH_OP_MAX);
	xrl_prom_family(b, "xrl_identity_vouches_total", "counter",
			"Client prefixes the identity tier vouched for in the packet tier (an "
			"admit by an http rule with vouch: true), by outcome: written, skipped "
			"(written less than half its ttl ago, or an operator's vouch mirrored "
			"into the automatic map for an old program), dropped (queue full or no "
			"interface). An operator's vouch is in its own map, which these writes "
			"never touch.");
	xrl_prom_u64(b, "xrl_identity_vouches_total", "outcome", "written",
		     READ(d->vouched_identity));
	xrl_prom_u64(b, "xrl_identity_vouches_total", "outcome", "skipped", READ(d->vouch_skipped));
	xrl_prom_u64(b, "xrl_identity_vouches_total", "outcome", "dropped", READ(d->vouch_dropped));
}
