// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * metrics.c - Prometheus text for /metrics, served by libmicrohttpd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <microhttpd.h>

#include "http/http.h"
#include "log.h"
#include "privs.h"
#include "xrld.h"

/* A metric's HELP and TYPE lines: every family is written through here. */
static void family(struct xrl_buf *b, const char *name, const char *type, const char *help)
{
	xrl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* One unlabelled counter of xrld's own. */
static void own_counter(struct xrl_buf *b, const char *name, const char *help, __u64 v)
{
	family(b, name, "counter", help);
	xrl_buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* Per interface, rule and verdict: packets, or bytes. */
static void rule_series(struct xrld *d, struct xrl_buf *b, bool bytes)
{
	static struct xrl_stats st;
	struct xrl_ruleset_meta meta;
	const char *name = bytes ? "xrl_rule_bytes_total" : "xrl_rule_packets_total";

	family(b, name, "counter",
	       bytes ? "Bytes per rule and verdict." : "Packets per rule and verdict.");
	for (int i = 0; i < d->n_ifs; i++) {
		if (xrl_read_stats(d->ifs[i].h, &st) || xrl_read_rule_names(d->ifs[i].h, &meta))
			continue;
		for (__u32 r = 0; r < st.n_rules; r++)
			for (int v = 0; v < XRL_V_MAX; v++)
				xrl_buf_printf(b,
					       "%s{interface=\"%s\",rule=\"%s\",verdict=\"%s\"} %llu\n",
					       name, d->ifs[i].name, meta.names[r],
					       xrl_verdict_name(v),
					       (unsigned long long)(bytes ? st.rules[r].bytes[v]
									  : st.rules[r].pkts[v]));
	}
}

/* The program's global counters, bucket table and lists, per interface. */
static void global_series(struct xrld *d, struct xrl_buf *b)
{
	static struct xrl_stats st;

	family(b, "xrl_packets_total", "counter", "Global packet counters of the XDP program.");
	for (int i = 0; i < d->n_ifs; i++) {
		if (xrl_read_stats(d->ifs[i].h, &st))
			continue;
		for (int g = 0; g < XRL_G_MAX; g++)
			xrl_buf_printf(b,
				       "xrl_packets_total{interface=\"%s\",counter=\"%s\"} %llu\n",
				       d->ifs[i].name, xrl_global_name(g),
				       (unsigned long long)st.global.c[g]);
	}
	family(b, "xrl_buckets", "gauge", "Source buckets in the shared table.");
	for (int i = 0; i < d->n_ifs; i++)
		xrl_buf_printf(b, "xrl_buckets{interface=\"%s\"} %ld\n", d->ifs[i].name,
			       xrl_bucket_count(d->ifs[i].h));
	family(b, "xrl_bucket_evictions_total", "counter",
	       "Buckets evicted from the full LRU table (new - in use).");
	for (int i = 0; i < d->n_ifs; i++) {
		long long n = xrl_bucket_count(d->ifs[i].h), made;

		if (xrl_read_stats(d->ifs[i].h, &st))
			continue;
		made = (long long)st.global.c[XRL_G_BUCKET_NEW];
		xrl_buf_printf(b, "xrl_bucket_evictions_total{interface=\"%s\"} %lld\n",
			       d->ifs[i].name, made > n ? made - n : 0LL);
	}
	family(b, "xrl_denylist_entries", "gauge", "Entries on the denylist.");
	for (int i = 0; i < d->n_ifs; i++) {
		struct xrl_config c;
		__u32 zero = 0;

		if (!bpf_map_lookup_elem(xrl_map_fd(d->ifs[i].h, XRL_MAP_CONFIG), &zero, &c))
			xrl_buf_printf(b, "xrl_denylist_entries{interface=\"%s\"} %u\n",
				       d->ifs[i].name, c.deny_v4_n + c.deny_v6_n);
	}
	family(b, "xrl_events_lost_total", "counter", "Refusal samples lost (ring buffer full).");
	for (int i = 0; i < d->n_ifs; i++)
		if (!xrl_read_stats(d->ifs[i].h, &st))
			xrl_buf_printf(b, "xrl_events_lost_total{interface=\"%s\"} %llu\n",
				       d->ifs[i].name,
				       (unsigned long long)st.global.c[XRL_G_EVENTS_LOST]);
}

static void metrics_text(struct xrld *d, struct xrl_buf *b)
{
	pthread_mutex_lock(&d->lock);
	rule_series(d, b, false);
	rule_series(d, b, true);
	global_series(d, b);
	own_counter(b, "xrld_events_total", "Refusal samples read.", READ(d->events_seen));
	own_counter(b, "xrld_penalties_total", "Penalties put on the denylist.", READ(d->penalties));
	own_counter(b, "xrld_reloads_total", "Policies installed by reload or apply.", READ(d->reloads));
	own_counter(b, "xrld_reload_failures_total", "Policies refused.", READ(d->reload_failures));
	own_counter(b, "xrld_top_dropped_total", "Samples the top table had no room for.",
		    READ(d->top_dropped));
	family(b, "xrld_penalties_skipped_total", "counter",
	       "Refusal samples that earned no strike, and due penalties not made, by reason.");
	for (int i = 0; i < PEN_SKIP_MAX; i++)
		xrl_buf_printf(b, "xrld_penalties_skipped_total{reason=\"%s\"} %llu\n",
			       pen_skip_name[i], (unsigned long long)READ(d->pen_skipped[i]));
	if (d->http)
		xrl_http_metrics(d->http, b);
	pthread_mutex_unlock(&d->lock);
}

/*
 * The metrics server's thread (libmicrohttpd's own) parses what scrapers
 * send: before the first connection's first byte, it gives up every
 * capability. It keeps bpf() on xrld's descriptors, which needs none.
 */
static void metrics_thread_caps(void *cls, struct MHD_Connection *c, void **socket_context,
				enum MHD_ConnectionNotificationCode toe)
{
	static __thread bool dropped;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED && !dropped) {
		if (xrl_thread_drop_caps())
			log_warnx("couldn't drop the metrics thread's capabilities");
		dropped = true;
	}
}

static enum MHD_Result on_metrics(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct xrld *d = cls;
	struct MHD_Response *r;
	struct xrl_buf b = {};
	enum MHD_Result ret;
	int status = MHD_HTTP_OK;

	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		xrl_buf_printf(&b, "GET only\n");
	} else if (!strcmp(url, "/metrics")) {
		metrics_text(d, &b);
	} else if (!strcmp(url, "/healthz")) {
		xrl_buf_printf(&b, "ok\n");
	} else {
		status = MHD_HTTP_NOT_FOUND;
		xrl_buf_printf(&b, "not found; try /metrics\n");
	}
	r = MHD_create_response_from_buffer(b.len, b.p ? b.p : (char *)"", MHD_RESPMEM_MUST_COPY);
	xrl_buf_free(&b);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4");
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

/* HOST:PORT or [V6]:PORT; a host name is resolved once, at start. */
int xrld_metrics_start(struct xrld *d, const char *hostport)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *ai;
	char host[80], port_s[8];
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
	int port;

	if (xrl_hostport_parse(hostport, strlen(hostport), host, sizeof(host), &port))
		return -EINVAL;
	snprintf(port_s, sizeof(port_s), "%d", port);
	if (getaddrinfo(host, port_s, &hints, &ai) || !ai)
		return -EINVAL;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	d->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_metrics, d, MHD_OPTION_SOCK_ADDR,
				  ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, 64U,
				  MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_NOTIFY_CONNECTION,
				  metrics_thread_caps, NULL, MHD_OPTION_END);
	freeaddrinfo(ai);
	return d->mhd ? 0 : -EADDRINUSE;
}
