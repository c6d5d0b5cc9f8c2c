// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * cookies.c - `syn_cookies: auto`. Once a second xrld reads each auto
 * rule's SYN counter (xrl_rule_ctr.syns, counted by the program whatever
 * became of the SYN) and, when a rule watches it, the accept queues of the
 * listeners on its ports (listenq.c). Over on_rate, or a queue at
 * queue_pct % of its backlog, the rule's cookies are engaged: one byte of
 * the rule in force is flipped (xrl_rule_cookies_set), no reload. Once the
 * rule has stayed under off_rate and under that queue share for `hold`,
 * they are let go. Every transition is logged and counted. The state is
 * the map's: a restarted xrld goes on from what the program does now.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <sys/socket.h>
#include <linux/if_link.h>
#include <stdlib.h>
#include <string.h>

#include "listenq.h"
#include "log.h"
#include "report.h"
#include "xrld.h"

#define LISTENQ_MAX 4096

const char *xrld_cookies_word(__u8 mode)
{
	return mode == XRL_COOKIES_AUTO	     ? "auto (off)"
	       : mode == XRL_COOKIES_AUTO_ON ? "auto (on)"
					     : xrl_cookies_name(mode);
}

/* The policy's thresholds for rule name (defaults when the policy has no
 * such rule, e.g. one made auto by xrlctl on a rule since renamed). */
static void spec_of(struct xrld *d, const char *name, struct xrl_rule_spec *out)
{
	for (__u32 i = 0; i < d->cfg->policy.n_rules; i++)
		if (!strcmp(d->cfg->policy.rules[i].name, name)) {
			*out = d->cfg->policy.rules[i];
			return;
		}
	xrl_rule_spec_init(out, name);
}

static struct xrld_auto *auto_slot(struct xrld *d, int i, const char *name)
{
	struct xrld_auto *free_slot = NULL;

	for (int k = 0; k < XRL_MAX_RULES; k++) {
		struct xrld_auto *a = &d->autos[i][k];

		if (!strncmp(a->rule, name, XRL_RULE_NAME_LEN))
			return a;
		if (!a->rule[0] && !free_slot)
			free_slot = a;
	}
	if (!free_slot)
		return NULL;
	pthread_mutex_lock(&d->lock); /* the metrics thread reads the names */
	memset(free_slot, 0, sizeof(*free_slot));
	snprintf(free_slot->rule, sizeof(free_slot->rule), "%s", name);
	pthread_mutex_unlock(&d->lock);
	return free_slot;
}

/*
 * Interface i's auto slots of rules no longer in its ruleset (meta) let go:
 * their transition counters leave /metrics with the rule (one kept by name
 * keeps its slot and counts), and the slots are free for rules to come
 * (they are XRL_MAX_RULES an interface: never freed, renames would use them
 * up and leave new auto rules unwatched).
 */
static void autos_forget(struct xrld *d, int i, const struct xrl_ruleset_meta *meta, __u32 n)
{
	for (int k = 0; k < XRL_MAX_RULES; k++) {
		struct xrld_auto *a = &d->autos[i][k];
		bool kept = false;

		for (__u32 r = 0; a->rule[0] && !kept && r < n && r < XRL_MAX_RULES; r++)
			kept = !strncmp(a->rule, meta->names[r], XRL_RULE_NAME_LEN);
		if (!a->rule[0] || kept)
			continue;
		pthread_mutex_lock(&d->lock); /* the metrics thread reads the names */
		memset(a, 0, sizeof(*a));
		pthread_mutex_unlock(&d->lock);
	}
}

/* Flip rule name on interface f to mode; logs why. */
static void transition(struct xrld *d, struct xrld_iface *f, struct xrld_auto *a,
		       const struct xrl_rule_spec *sp, __u8 mode)
{
	bool on = mode == XRL_COOKIES_AUTO_ON;
	int err = xrl_rule_cookies_set(f->h, a->rule, mode, NULL);

	if (err) {
		log_warnx("%s: couldn't turn SYN cookies %s for rule %s: %s", f->name,
			  on ? "on" : "off", a->rule, strerror(-err));
		return;
	}
	if (on) {
		COUNT(a->engaged);
		log_info("%s: rule %s: SYN cookies on (auto): %llu SYN/s (on_rate %llu/s), "
			 "accept queue %u%% (queue_pct %u%%)",
			 f->name, a->rule, (unsigned long long)a->rate,
			 (unsigned long long)sp->auto_on_rate, a->queue_pct, sp->auto_queue_pct);
	} else {
		COUNT(a->released);
		log_info("%s: rule %s: SYN cookies off (auto): %llu SYN/s (off_rate %llu/s) and "
			 "accept queue %u%% for %llu s",
			 f->name, a->rule, (unsigned long long)a->rate,
			 (unsigned long long)sp->auto_off_rate, a->queue_pct,
			 (unsigned long long)(sp->auto_hold_ns / XRL_NSEC_PER_SEC));
	}
}

/* One rule's decision at now: its counter syns, its current mode. */
static void decide(struct xrld *d, struct xrld_iface *f, struct xrld_auto *a, __u64 syns, __u8 mode,
		   const struct xrl_listenq *q, size_t nq, __u64 now)
{
	struct xrl_rule_spec sp;
	bool over, under;

	spec_of(d, a->rule, &sp);
	if (!a->seen_ns || syns < a->syns || now <= a->seen_ns) {
		/* the first reading, or a rule whose counters restarted */
		a->syns = syns;
		a->seen_ns = now;
		return;
	}
	a->rate = (syns - a->syns) * XRL_NSEC_PER_SEC / (now - a->seen_ns);
	a->syns = syns;
	a->seen_ns = now;
	a->queue_pct = sp.auto_queue_pct ? xrl_listen_pct(q, nq, sp.ports, sp.n_ports) : 0;
	over = a->rate >= sp.auto_on_rate ||
	       (sp.auto_queue_pct && a->queue_pct >= sp.auto_queue_pct);
	under = a->rate < sp.auto_off_rate &&
		(!sp.auto_queue_pct || a->queue_pct < sp.auto_queue_pct);
	if (mode == XRL_COOKIES_AUTO) {
		a->below_ns = 0;
		a->on_ns = 0;
		if (over) {
			transition(d, f, a, &sp, XRL_COOKIES_AUTO_ON);
			a->on_ns = now;
		}
		return;
	}
	if (!a->on_ns)
		a->on_ns = now; /* engaged before this xrld: its minimum starts now */
	if (!under) {
		a->below_ns = 0;
		return;
	}
	if (!a->below_ns)
		a->below_ns = now;
	if (now - a->below_ns >= sp.auto_hold_ns && now - a->on_ns >= sp.auto_min_on_ns) {
		a->below_ns = 0;
		transition(d, f, a, &sp, XRL_COOKIES_AUTO);
	}
}

/* The interface's TX drop counter, or 0. Through netlink (getifaddrs), not
 * /sys/class/net: a process that only entered the interface's network
 * namespace still sees the /sys of another. */
static __u64 tx_dropped(const char *ifname)
{
	struct ifaddrs *all, *a;
	__u64 v = 0;

	if (getifaddrs(&all))
		return 0;
	for (a = all; a; a = a->ifa_next)
		if (a->ifa_addr && a->ifa_addr->sa_family == AF_PACKET && a->ifa_data &&
		    !strcmp(a->ifa_name, ifname)) {
			v = ((const struct rtnl_link_stats *)a->ifa_data)->tx_dropped;
			break;
		}
	freeifaddrs(all);
	return v;
}

/*
 * Keep xrl_cookie current (MTU, sysctls, key rotation, the TC program
 * still attached), and on a veth, see whether the SYN-ACKs sent leave: a
 * veth counts the XDP_TX frames its peer cannot take as its own TX drops.
 */
static void iface_tick(struct xrld_iface *f, const struct xrl_stats *st, __u64 now)
{
	__u64 drops, sent, ds, dd;
	int err = xrl_cookie_refresh(f->h);

	if (err)
		log_debug("%s: couldn't refresh the SYN-cookie settings: %s", f->name,
			  strerror(-err));
	if (!f->veth)
		return;
	drops = tx_dropped(f->name);
	sent = st->global.c[XRL_G_COOKIES_SENT];
	ds = sent - f->synacks;
	dd = drops - f->tx_dropped;
	if (f->veth_read && ds && dd) {
		__u64 lost = dd < ds ? dd : ds;

		__atomic_fetch_add(&f->synacks_lost, lost, __ATOMIC_RELAXED);
		if (now - f->warned_ns >= 60 * XRL_NSEC_PER_SEC) {
			log_warnx("%s: %llu of %llu cookie SYN-ACKs in the last second were dropped by "
				  "the veth (its peer runs no XDP program?); see xrlctl status",
				  f->name, (unsigned long long)lost, (unsigned long long)ds);
			f->warned_ns = now;
		}
	}
	f->synacks = sent;
	f->tx_dropped = drops;
	f->veth_read = true;
}

/*
 * The kernel's cookie path takes a cookie ACK only on a listener that sent a
 * cookie itself lately, and a restarted service's listener has not: when
 * the listeners on a live cookie rule's ports change (their inodes), every
 * port's next good SYN becomes a primer, within a second of the restart
 * rather than within the primer interval.
 */
static void listeners_tick(struct xrld *d, struct xrld_iface *f, const struct xrl_stats *st,
			   const struct xrl_listenq *q, size_t nq)
{
	__u32 now[64], n = 0;
	bool fresh = false;

	for (__u32 r = 0; r < st->n_rules && r < d->cfg->policy.n_rules; r++) {
		const struct xrl_rule_spec *sp = &d->cfg->policy.rules[r];

		if (!(st->cookies[r] & XRL_COOKIES_LIVE))
			continue;
		for (size_t i = 0; i < nq && n < 64; i++)
			for (__u8 k = 0; k < sp->n_ports; k++)
				if (q[i].port >= sp->ports[k].lo && q[i].port <= sp->ports[k].hi) {
					now[n++] = q[i].inode;
					break;
				}
	}
	/* a listener that came since the last tick; one that went needs nothing.
	 * At the first reading every listener counts as new: one restarted
	 * between the attach and this tick would otherwise wait for the
	 * primer interval */
	fresh = !f->listen_read && n;
	for (__u32 i = 0; f->listen_read && i < n && !fresh; i++) {
		bool known = false;

		for (__u32 k = 0; k < f->n_listen && !known; k++)
			known = f->listen_ino[k] == now[i];
		fresh = !known;
	}
	if (fresh) {
		int err = xrl_cookie_prime_bump(f->h);

		if (err)
			log_warnx("%s: couldn't ask for new primers: %s", f->name, strerror(-err));
		else
			log_info("%s: a listener on a cookie port is new: its next SYN primes it",
				 f->name);
	}
	memcpy(f->listen_ino, now, n * sizeof(now[0]));
	f->n_listen = n;
	f->listen_read = true;
}

/* The host's listeners and their accept queues into q, read once a tick
 * (*dumped: read already), for the first interface or rule that asks. */
static void listen_queues_once(struct xrl_listenq *q, size_t *nq, bool *dumped, const char *what)
{
	int err;

	if (*dumped)
		return;
	err = xrl_listen_queues(q, LISTENQ_MAX, nq);
	if (err)
		log_debug("couldn't read %s: %s", what, strerror(-err));
	*dumped = true;
}

/* Once a second: measure each auto rule, engage or let go of its cookies. */
static void cookies_tick(void *ctx)
{
	struct xrld *d = ctx;
	static struct xrl_stats st;
	static struct xrl_listenq q[LISTENQ_MAX];
	struct xrl_ruleset_meta meta;
	size_t nq = 0;
	bool dumped = false;

	for (int i = 0; i < d->n_ifs; i++) {
		struct xrld_iface *f = &d->ifs[i];
		__u64 now;

		if (xrl_read_stats_named(f->h, &st, &meta))
			continue;
		autos_forget(d, i, &meta, st.n_rules);
		now = xrl_now_ns();
		iface_tick(f, &st, now);
		if (!xrl_info(f->h)->own_cookies) {
			listen_queues_once(q, &nq, &dumped, "the listeners");
			listeners_tick(d, f, &st, q, nq);
		}
		for (__u32 r = 0; r < st.n_rules; r++) {
			struct xrld_auto *a;

			if (st.cookies[r] < XRL_COOKIES_AUTO)
				continue;
			a = auto_slot(d, i, meta.names[r]);
			if (!a)
				continue;
			listen_queues_once(q, &nq, &dumped, "the listeners' accept queues");
			decide(d, f, a, st.rules[r].syns, st.cookies[r], q, nq, now);
		}
	}
}

int xrld_cookies_start(struct xrld *d)
{
	return xrld_timer_add(d->loop, XRL_NSEC_PER_SEC, cookies_tick, d) ? 0 : -ENOMEM;
}

/* Family name's line for each rule of each interface read (ok[i]): the
 * SYNs it matched, or (mode) its cookie mode and 1 while cookies answer. */
static void rule_lines(struct xrld *d, struct xrl_buf *b, const char *name, bool mode,
		       const struct xrl_stats *st, const struct xrl_ruleset_meta *meta,
		       const bool *ok)
{
	for (int i = 0; i < d->n_ifs; i++)
		for (__u32 r = 0; ok[i] && r < st[i].n_rules; r++) {
			xrl_buf_printf(b, "%s{interface=\"%s\",rule=\"%s\"", name,
				       d->ifs[i].name, meta[i].names[r]);
			if (mode)
				xrl_buf_printf(b, ",mode=\"%s\"} %d\n",
					       xrl_cookies_name(st[i].cookies[r]),
					       st[i].cookies[r] & XRL_COOKIES_LIVE);
			else
				xrl_buf_printf(b, "} %llu\n",
					       (unsigned long long)st[i].rules[r].syns);
		}
}

/*
 * Metrics (called with d->lock held): per rule, the SYNs it matched, its
 * cookie mode with 1 while cookies answer, and auto's transitions.
 */
void xrld_cookies_metrics(struct xrld *d, struct xrl_buf *b)
{
	static struct xrl_stats st[MAX_IFACES];
	static struct xrl_ruleset_meta meta[MAX_IFACES];
	bool ok[MAX_IFACES];

	for (int i = 0; i < d->n_ifs; i++)
		ok[i] = !xrl_read_stats_named(d->ifs[i].h, &st[i], &meta[i]);
	xrl_prom_family(b, "xrl_rule_syns_total", "counter",
			"SYNs (no ACK) a rule matched, whatever became of them: the rate "
			"syn_cookies auto watches.");
	rule_lines(d, b, "xrl_rule_syns_total", false, st, meta, ok);
	xrl_prom_family(b, "xrl_syn_cookies_active", "gauge",
			"1 while a rule answers SYNs with cookies, 0 if not; mode is the rule's "
			"setting (off, on, auto).");
	rule_lines(d, b, "xrl_syn_cookies_active", true, st, meta, ok);
	xrl_prom_family(b, "xrl_syn_cookie_path", "gauge",
			"1 for the SYN-cookie path an interface runs: xrl (xrl's own cookies, "
			"completed by the TC program; no sysctl) or kernel (the kernel's cookies, "
			"tcp_syncookies=2 and primers).");
	for (int i = 0; i < d->n_ifs; i++)
		xrl_buf_printf(b, "xrl_syn_cookie_path{interface=\"%s\",path=\"%s\"} 1\n",
			       d->ifs[i].name,
			       xrl_info(d->ifs[i].h)->own_cookies ? "xrl" : "kernel");
	xrl_prom_family(b, "xrl_veth_synacks_dropped_total", "counter",
			"Cookie SYN-ACKs a veth dropped (its TX drops while they were sent): its peer "
			"runs no XDP program.");
	for (int i = 0; i < d->n_ifs; i++)
		if (d->ifs[i].veth)
			xrl_buf_printf(b, "xrl_veth_synacks_dropped_total{interface=\"%s\"} %llu\n",
				       d->ifs[i].name,
				       (unsigned long long)READ(d->ifs[i].synacks_lost));
	xrl_prom_family(b, "xrl_syn_cookies_auto_transitions_total", "counter",
			"Times syn_cookies auto turned a rule's cookies on or off.");
	for (int i = 0; i < d->n_ifs; i++)
		for (int k = 0; k < XRL_MAX_RULES; k++) {
			const struct xrld_auto *a = &d->autos[i][k];

			if (!a->rule[0])
				continue;
			xrl_buf_printf(b,
				       "xrl_syn_cookies_auto_transitions_total{interface=\"%s\","
				       "rule=\"%s\",to=\"on\"} %llu\n",
				       d->ifs[i].name, a->rule,
				       (unsigned long long)READ(a->engaged));
			xrl_buf_printf(b,
				       "xrl_syn_cookies_auto_transitions_total{interface=\"%s\","
				       "rule=\"%s\",to=\"off\"} %llu\n",
				       d->ifs[i].name, a->rule,
				       (unsigned long long)READ(a->released));
		}
}

/* Which cookie path interface i runs, and a veth's lost SYN-ACKs. */
json_t *xrld_cookie_path_json(struct xrld *d, int i)
{
	const struct xrld_iface *f = &d->ifs[i];
	const struct xrl_attach_info *in = xrl_info(f->h);

	return json_pack("{s:s,s:b,s:b,s:I}", "path", in->own_cookies ? "xrl" : "kernel",
			 "tc_attached", in->tc_attached, "veth", f->veth, "veth_synacks_lost",
			 (json_int_t)f->synacks_lost);
}

static void cookie_path_status(struct xrld_iface *f, struct xrl_buf *b)
{
	const struct xrl_attach_info *in = xrl_info(f->h);

	xrl_buf_printf(b, "  %s SYN-cookie path: %s", f->name,
		       in->own_cookies
			       ? "xrl's own (TC request sockets, no sysctl)"
			       : "the kernel's (tcp_syncookies=2, tcp_timestamps=2, primers)");
	if (in->own_cookies && !in->tc_attached)
		xrl_buf_printf(b, ", TC program MISSING");
	if (f->veth)
		xrl_buf_printf(b, "; veth: %llu SYN-ACKs dropped by its peer%s",
			       (unsigned long long)f->synacks_lost,
			       f->synacks_lost ? " (run an XDP program on the peer)" : "");
	xrl_buf_printf(b, "\n");
}

void xrld_cookies_status(struct xrld *d, int i, struct xrl_buf *b, json_t *o)
{
	struct xrl_stats *st = malloc(sizeof(*st)); /* per-rule counters: not on a stack */
	struct xrl_ruleset_meta meta;

	if (!st || xrl_read_stats_named(d->ifs[i].h, st, &meta)) {
		if (b)
			xrl_buf_printf(b, "  %s: couldn't read the rules' SYN-cookie modes\n",
				       d->ifs[i].name);
		free(st);
		return;
	}
	if (b && st->n_rules)
		xrl_buf_printf(b, "  %s SYN cookies:", d->ifs[i].name);
	for (__u32 r = 0; r < st->n_rules; r++) {
		if (o)
			json_object_set_new(o, meta.names[r],
					    json_string(xrld_cookies_word(st->cookies[r])));
		else
			xrl_buf_printf(b, "%s %s %s", r ? "," : "", meta.names[r],
				       xrld_cookies_word(st->cookies[r]));
	}
	if (b && st->n_rules)
		xrl_buf_printf(b, "\n");
	free(st);
	if (b)
		cookie_path_status(&d->ifs[i], b);
}
