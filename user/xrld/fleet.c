// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * fleet.c - xrld in a fleet (http/fleet.c keeps the Redis side, in the
 * identity process: idproc.h). The denials of other instances arrive as
 * checked events on the main loop (xrld_fleet_in) and are written to the
 * XDP denylists here, with the time they have left, so no bpf() call
 * happens off the loop and the loop never waits for Redis. What this host
 * denies (an operator's deny add/del, a penalty of a `penalty: verified`
 * rule) is handed to the identity process for the fleet.
 *
 * What a host keeps for itself: its allowlist wins in the program (checked
 * before the denylist), and an entry that would deny a prefix holding a
 * source this host vouches for (a cookie-verified one) is not applied here
 * (counted, xrl_fleet_entries_skipped_total).
 *
 * Nor is a denial wider than this host's penalty floor (/24 and /48 unless
 * penalty.floor_v4/v6 say otherwise): whoever can write the fleet's Redis,
 * or a corrupted entry, must not deny 0.0.0.0/0 on every host. An
 * operator's wider deny add stays on the host it was made on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "http/fleet.h"
#include "http/http.h"
#include "log.h"
#include "xrld.h"

struct xrld_fleet {
	__u64 applied, skipped, failed; /* deny entries, on this loop */
	__u64 wide;			/* wider than the floor: not applied */
	__u64 local;			/* this host has its own entry: kept */
	__u64 refused;			/* deny entries that are no prefix */
};

/* The shortest prefix the fleet denies: the penalty floor, also when
 * penalties are off (then the default floor). */
static bool too_wide(const struct xrld *d, const struct xrl_prefix *p)
{
	const struct xrl_penalty_cfg *pc = &d->cfg->penalty;
	__u8 f4 = pc->floor4 ? pc->floor4 : 24, f6 = pc->floor6 ? pc->floor6 : 48;

	return p->plen < (p->family == XRL_AF_INET ? f4 : f6);
}

static __u64 real_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * 1000 + (__u64)ts.tv_nsec / 1000000;
}

/* One entry to every interface's denylist. */
static void deny_apply(struct xrld *d, struct xrld_fleet *x, const struct xrl_fleet_entry *e)
{
	char err[XRL_ERRLEN];
	struct xrl_prefix p;
	__u64 ttl = 0, now = real_ms();

	if (xrl_prefix_parse(e->field, &p, err, sizeof(err))) {
		COUNT(x->refused);
		return;
	}
	if (e->op == XRL_FLEET_ADD && e->until_ms) {
		if (e->until_ms <= now)
			return; /* over already */
		ttl = (e->until_ms - now) * 1000000ULL;
	}
	if (e->op == XRL_FLEET_ADD && too_wide(d, &p)) {
		COUNT(x->wide);
		log_agg(XRL_LOG_WARN, "fleet: wide", "fleet entries wider than the floor",
			"fleet: not denying %s: wider than the penalty floor", e->field);
		return;
	}
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_handle *h = d->ifs[i].h;
		__u32 origin;
		int rc;

		/* This host's own entry for the prefix (its policy's, its
		 * operator's, its penalty's) is never replaced or lifted by
		 * the fleet: another host's TTL must not shorten it, and
		 * whoever can write the fleet's Redis must not lift it. */
		if (!xrl_deny_origin(h, &p, &origin) && origin != XRL_ORIGIN_FLEET) {
			COUNT(x->local);
			continue;
		}
		if (e->op == XRL_FLEET_DEL) {
			rc = xrl_deny_del(h, &p);
			if (rc && rc != -ENOENT)
				COUNT(x->failed);
			continue;
		}
		if (xrl_vouched(h, &p)) {
			COUNT(x->skipped);
			continue;
		}
		rc = xrl_deny_add(h, &p, ttl, XRL_ORIGIN_FLEET);
		if (rc) {
			COUNT(x->failed);
			log_agg(XRL_LOG_WARN, "fleet: deny", "fleet entries not applied",
				"%s: couldn't deny %s from the fleet: %s", d->ifs[i].name, e->field,
				strerror(-rc));
			continue;
		}
		COUNT(x->applied);
	}
}

void xrld_fleet_in(struct xrld *d, const struct xrl_fleet_entry *e)
{
	if (d->fleet && d->cfg->fleet.packet)
		deny_apply(d, d->fleet, e);
}

int xrld_fleet_start(struct xrld *d)
{
	const struct xrl_fleet_cfg *c = &d->cfg->fleet;

	if (!c->enabled)
		return 0;
	d->fleet = calloc(1, sizeof(*d->fleet));
	if (!d->fleet)
		return -ENOMEM;
	log_info("fleet %s: %s%s", c->name, c->packet ? "packet-tier denials shared" : "",
		 d->http && d->cfg->http.fleet[0]
			 ? (c->packet ? ", identity tier in (NODE_SHARE, penalties)"
				      : "identity tier in (NODE_SHARE, penalties)")
			 : "");
	return 0;
}

void xrld_fleet_stop(struct xrld *d)
{
	free(d->fleet);
	d->fleet = NULL;
}

/* The fleet's counters, from the identity process (false: it does not answer). */
static bool fleet_stats(struct xrld *d, struct xrl_fleet_stats *st, char *id, size_t idlen)
{
	char err[XRL_ERRLEN];
	json_t *r = xrld_idp_call(d, json_pack("{s:s}", "op", "fleet_stats"), NULL, 0, NULL, err,
				  sizeof(err));
	const char *s;

	memset(st, 0, sizeof(*st));
	if (!json_is_object(r)) {
		json_decref(r);
		if (id)
			snprintf(id, idlen, "-");
		return false;
	}
#define F(n) st->n = (__u64)json_integer_value(json_object_get(r, #n))
	F(live);
	F(connected);
	F(published);
	F(applied);
	F(errors);
	F(dropped);
	F(heartbeats);
	F(redirects);
	F(pruned);
	F(refused);
#undef F
	s = json_string_value(json_object_get(r, "id"));
	if (id)
		snprintf(id, idlen, "%s", s ? s : "-");
	json_decref(r);
	return true;
}

int xrld_fleet_deny_out(struct xrld *d, const struct xrl_prefix *p, __u64 ttl_ns, bool add)
{
	struct xrl_fleet_entry e = { .op = add ? XRL_FLEET_ADD : XRL_FLEET_DEL,
				     .kind = XRL_FLEET_DENY };

	if (!d->fleet || !d->cfg->fleet.packet)
		return 0;
	if (add && too_wide(d, p))
		return -ERANGE; /* the others would not apply it */
	xrl_prefix_str(p, e.field, sizeof(e.field));
	if (add && ttl_ns)
		e.until_ms = real_ms() + (ttl_ns + 999999) / 1000000;
	{
		char err[XRL_ERRLEN];
		json_t *r = xrld_idp_call(d,
					  json_pack("{s:s,s:i,s:i,s:s,s:I,s:i}", "op",
						    "fleet_publish", "fop", e.op, "kind", e.kind,
						    "field", e.field, "until_ms",
						    (json_int_t)e.until_ms, "level", (int)e.level),
					  NULL, 0, NULL, err, sizeof(err));

		if (!r)
			log_agg(XRL_LOG_WARN, "fleet: queue", "fleet entries dropped",
				"fleet %s: %s stays local: %s", d->cfg->fleet.name, e.field, err);
		json_decref(r);
	}
	return 0;
}

void xrld_fleet_status(struct xrld *d, struct xrl_buf *b, json_t *o)
{
	struct xrl_fleet_stats st;
	char id[128];

	if (!d->fleet)
		return;
	fleet_stats(d, &st, id, sizeof(id));
	if (o) {
		json_object_set_new(o, "fleet",
				    json_pack("{s:s,s:s,s:b,s:I,s:b,s:b,s:I,s:I,s:I}", "name",
					      d->cfg->fleet.name, "member", id, "redis_connected",
					      (int)st.connected, "live_instances",
					      (json_int_t)st.live, "denials_shared",
					      d->cfg->fleet.packet, "identity_tier",
					      d->http && d->cfg->http.fleet[0], "published",
					      (json_int_t)st.published, "applied",
					      (json_int_t)READ(d->fleet->applied), "errors",
					      (json_int_t)st.errors));
		return;
	}
	xrl_buf_printf(b,
		       "fleet %s: %llu live instance%s%s (NODE_SHARE divides by this), "
		       "redis %s; entries published %llu, applied %llu\n",
		       d->cfg->fleet.name, (unsigned long long)st.live, st.live == 1 ? "" : "s",
		       st.connected ? "" : " (last known)", st.connected ? "up" : "DOWN",
		       (unsigned long long)st.published,
		       (unsigned long long)READ(d->fleet->applied));
}

static void one(struct xrl_buf *b, const char *name, const char *type, const char *help,
		const char *labels, __u64 v)
{
	xrl_prom_family(b, name, type, help);
	xrl_buf_printf(b, "%s%s %llu\n", name, labels, (unsigned long long)v);
}

void xrld_fleet_metrics(struct xrld *d, struct xrl_buf *b)
{
	struct xrl_fleet_stats st;
	struct xrld_fleet *x = d->fleet;

	if (!x)
		return;
	fleet_stats(d, &st, NULL, 0);
	one(b, "xrl_fleet_live_instances", "gauge",
	    "Instances of the fleet with a live heartbeat (the last known while Redis is "
	    "down); NODE_SHARE divides rate and burst by it",
	    "", st.live);
	one(b, "xrl_fleet_redis_up", "gauge", "1 when the fleet's Redis answers", "", st.connected);
	one(b, "xrl_fleet_entries_published_total", "counter",
	    "Denials and penalties this instance sent to the fleet", "", st.published);
	xrl_prom_family(b, "xrl_fleet_entries_applied_total", "counter",
			"Entries of other instances applied here (deny: per interface)");
	xrl_prom_u64(b, "xrl_fleet_entries_applied_total", "tier", "packet", READ(x->applied));
	xrl_prom_u64(b, "xrl_fleet_entries_applied_total", "tier", "all", st.applied);
	xrl_prom_family(b, "xrl_fleet_entries_skipped_total", "counter",
			"Fleet entries not applied or not sent, by reason");
	xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", "vouched", READ(x->skipped));
	xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", "failed", READ(x->failed));
	xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", "wide", READ(x->wide));
	xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", "local", READ(x->local));
	xrl_prom_u64(b, "xrl_fleet_entries_skipped_total", "reason", "queue_full", st.dropped);
	one(b, "xrl_fleet_redis_errors_total", "counter",
	    "Failed connects and commands of the fleet's Redis connection", "", st.errors);
	one(b, "xrl_fleet_heartbeats_total", "counter", "Heartbeats written", "", st.heartbeats);
	one(b, "xrl_fleet_redirects_total", "counter",
	    "Redis Cluster MOVED answers followed (the fleet's slot changed master)", "",
	    st.redirects);
	one(b, "xrl_fleet_entries_pruned_total", "counter",
	    "Expired deny and penalty entries deleted from the fleet's hashes", "", st.pruned);
	one(b, "xrl_fleet_entries_refused_total", "counter",
	    "Entries read from the fleet and refused (malformed, absurd expiry, a deny "
	    "shorter than the penalty floor)",
	    "", st.refused + READ(x->refused));
}
