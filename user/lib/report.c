// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "report.h"

void xrl_buf_printf(struct xrl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap ? b->cap * 2 : 4096;

		while (ncap < b->len + (size_t)n + 1)
			ncap *= 2;
		char *np = realloc(b->p, ncap);

		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

/* n bytes as they are (no format string to parse). */
static void buf_add(struct xrl_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->cap - b->len < n + 1) {
		size_t ncap = b->cap ? b->cap * 2 : 4096;
		char *np;

		while (ncap < b->len + n + 1)
			ncap *= 2;
		np = realloc(b->p, ncap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Runs of plain characters are copied whole; only escapes are formatted. */
void xrl_buf_json_str(struct xrl_buf *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;

	buf_add(b, "\"", 1);
	for (;; p++) {
		if (*p && *p != '"' && *p != '\\' && *p >= 0x20)
			continue;
		buf_add(b, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		if (*p == '"' || *p == '\\') {
			char e[2] = { '\\', (char)*p };

			buf_add(b, e, 2);
		} else {
			xrl_buf_printf(b, "\\u%04x", *p);
		}
		run = p + 1;
	}
	buf_add(b, "\"", 1);
}

void xrl_buf_free(struct xrl_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int xrl_read_rule_names(struct xrl_handle *h, struct xrl_ruleset_meta *meta)
{
	struct xrl_config cfg;
	__u32 zero = 0;

	memset(meta, 0, sizeof(*meta));
	if (bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_CONFIG), &zero, &cfg) ||
	    bpf_map_lookup_elem(xrl_map_fd(h, XRL_MAP_META), &cfg.active_ruleset, meta))
		return -errno;
	return 0;
}

static const char *const verdict_names[XRL_V_MAX] = { "passed", "dropped", "shadow_dropped" };

void xrl_report_stats(struct xrl_buf *b, const char *ifname, const struct xrl_stats *st,
		      const struct xrl_ruleset_meta *meta, long buckets,
		      const struct xrl_stats *prev, double dt_s, int json)
{
	bool rates = prev && dt_s > 0;

	if (json) {
		xrl_buf_printf(b, "{\"interface\":");
		xrl_buf_json_str(b, ifname);
		xrl_buf_printf(b, ",\"rules\":[");
		for (__u32 r = 0; r < st->n_rules; r++) {
			xrl_buf_printf(b, "%s{\"name\":", r ? "," : "");
			xrl_buf_json_str(b, meta->names[r]);
			for (int v = 0; v < XRL_V_MAX; v++)
				xrl_buf_printf(b, ",\"%s\":%llu,\"%s_bytes\":%llu", verdict_names[v],
					       (unsigned long long)st->rules[r].pkts[v], verdict_names[v],
					       (unsigned long long)st->rules[r].bytes[v]);
			if (rates)
				for (int v = 0; v < XRL_V_MAX; v++)
					xrl_buf_printf(b, ",\"%s_per_s\":%.1f", verdict_names[v],
						       (double)(st->rules[r].pkts[v] - prev->rules[r].pkts[v]) / dt_s);
			xrl_buf_printf(b, "}");
		}
		xrl_buf_printf(b, "],\"global\":{");
		for (int i = 0; i < XRL_G_MAX; i++)
			xrl_buf_printf(b, "%s\"%s\":%llu", i ? "," : "", xrl_global_name(i),
				       (unsigned long long)st->global.c[i]);
		xrl_buf_printf(b, "},\"buckets\":%ld}", buckets);
		return;
	}

	xrl_buf_printf(b, "%s\n", ifname);
	xrl_buf_printf(b, "  %-20s %14s %14s %14s", "RULE", "PASSED", "DROPPED", "SHADOW");
	if (rates)
		xrl_buf_printf(b, " %12s %12s", "PASSED/s", "DROPPED/s");
	xrl_buf_printf(b, "\n");
	for (__u32 r = 0; r < st->n_rules; r++) {
		xrl_buf_printf(b, "  %-20s %14llu %14llu %14llu", meta->names[r],
			       (unsigned long long)st->rules[r].pkts[XRL_V_PASSED],
			       (unsigned long long)st->rules[r].pkts[XRL_V_DROPPED],
			       (unsigned long long)st->rules[r].pkts[XRL_V_SHADOW_DROPPED]);
		if (rates)
			xrl_buf_printf(b, " %12.1f %12.1f",
				       (double)(st->rules[r].pkts[XRL_V_PASSED] -
						prev->rules[r].pkts[XRL_V_PASSED]) / dt_s,
				       (double)(st->rules[r].pkts[XRL_V_DROPPED] -
						prev->rules[r].pkts[XRL_V_DROPPED]) / dt_s);
		xrl_buf_printf(b, "\n");
	}
	xrl_buf_printf(b, "  global:");
	for (int i = 0; i < XRL_G_MAX; i++) {
		if (i % 4 == 0)
			xrl_buf_printf(b, "\n   ");
		xrl_buf_printf(b, " %-18s %-12llu", xrl_global_name(i),
			       (unsigned long long)st->global.c[i]);
	}
	xrl_buf_printf(b, "\n  buckets in use: %ld\n", buckets);
}

int xrl_report_list(struct xrl_buf *b, struct xrl_handle *h, int deny, int json)
{
	static const char *origin[] = { "policy", "runtime", "penalty" };
	__u64 now = xrl_now_ns();
	int first = 1;

	if (json)
		xrl_buf_printf(b, "[");
	else
		xrl_buf_printf(b, "%-44s %-8s %s\n", "PREFIX", "ORIGIN", deny ? "EXPIRES IN" : "");
	for (int fam = 0; fam < 2; fam++) {
		const char *name = deny ? (fam ? XRL_MAP_DENY_V6 : XRL_MAP_DENY_V4)
					: (fam ? XRL_MAP_ALLOW_V6 : XRL_MAP_ALLOW_V4);
		int fd = xrl_map_fd(h, name);
		struct xrl_lpm_v6 k6, n6;
		struct xrl_lpm_v4 k4, n4;
		void *prev = NULL, *next = fam ? (void *)&n6 : (void *)&n4;

		while (!bpf_map_get_next_key(fd, prev, next)) {
			struct xrl_prefix p = { .family = fam ? XRL_AF_INET6 : XRL_AF_INET };
			union { struct xrl_deny_val d; struct xrl_allow_val a; } v;
			char buf[64];
			__u32 org = 0;
			__u64 exp = 0;

			if (fam) {
				k6 = n6;
				prev = &k6;
				p.plen = (__u8)k6.prefixlen;
				memcpy(p.addr, k6.addr, 16);
			} else {
				k4 = n4;
				prev = &k4;
				p.plen = (__u8)k4.prefixlen;
				p.addr[0] = k4.addr;
			}
			if (bpf_map_lookup_elem(fd, prev, &v))
				continue;
			if (deny) {
				org = v.d.origin;
				exp = v.d.expires_ns;
			} else {
				org = v.a.origin;
			}
			xrl_prefix_str(&p, buf, sizeof(buf));
			if (json) {
				xrl_buf_printf(b, "%s{\"prefix\":\"%s\",\"origin\":\"%s\"", first ? "" : ",",
					       buf, org < 3 ? origin[org] : "?");
				if (deny && exp)
					xrl_buf_printf(b, ",\"expires_in_s\":%.1f",
						       exp > now ? (double)(exp - now) / 1e9 : 0.0);
				else if (deny)
					xrl_buf_printf(b, ",\"expires_in_s\":null");
				xrl_buf_printf(b, "}");
			} else {
				xrl_buf_printf(b, "%-44s %-8s ", buf, org < 3 ? origin[org] : "?");
				if (deny && exp)
					xrl_buf_printf(b, "%.1fs%s", exp > now ? (double)(exp - now) / 1e9 : 0.0,
						       exp > now ? "" : " (expired)");
				else if (deny)
					xrl_buf_printf(b, "never");
				xrl_buf_printf(b, "\n");
			}
			first = 0;
		}
	}
	if (json)
		xrl_buf_printf(b, "]");
	return 0;
}
