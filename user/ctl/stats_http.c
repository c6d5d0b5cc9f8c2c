// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * stats_http.c - `xrlctl stats`' identity-tier part: the HTTP rules'
 * counters, which live in xrld's memory (not in pinned maps), asked of
 * xrld with `stats --json`; per-second rates between two screens under
 * --watch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "control_wire.h"
#include "report.h"
#include "stats_http.h"

json_t *xrlctl_http_stats(const char *sock)
{
	const char *argv[] = { "stats", "--json" };
	char *payload = NULL;
	json_t *j, *h = NULL;
	int rc = xrl_ctl_call(sock, 2, argv, &payload, 3000);

	if (rc)
		goto out;
	j = json_loads(payload, 0, NULL);
	h = json_object_get(j, "http");
	if (json_is_object(h))
		json_incref(h);
	else
		h = NULL;
	json_decref(j);
out:
	free(payload);
	return h;
}

static json_t *rule_of(json_t *stats, const char *name)
{
	json_t *r;
	size_t i;

	json_array_foreach (json_object_get(stats, "rules"), i, r)
		if (!strcmp(json_string_value(json_object_get(r, "name")) ?: "", name))
			return r;
	return NULL;
}

static const char *const cols[] = { "allowed", "refused", "shadow_refused", "fallbacks" };

/* Per-second rates of each rule against prev (the same rule by name; a
 * reload resets the counters: no rate across it), dt seconds before. */
void xrlctl_http_rates(json_t *cur, json_t *prev, double dt)
{
	json_t *r;
	size_t i;

	if (!prev || dt <= 0)
		return;
	json_array_foreach (json_object_get(cur, "rules"), i, r) {
		json_t *p = rule_of(prev, json_string_value(json_object_get(r, "name")) ?: "");

		for (int k = 0; p && k < 4; k++) {
			json_int_t a = json_integer_value(json_object_get(r, cols[k]));
			json_int_t b = json_integer_value(json_object_get(p, cols[k]));
			char name[40];

			snprintf(name, sizeof(name), "%s_per_s", cols[k]);
			json_object_set_new(r, name, json_real(a >= b ? (double)(a - b) / dt : 0));
		}
	}
}

/* n in at most 7 characters: as it is, or 123.4k, 12.3M, 1.2G. */
static const char *compact(char *buf, size_t len, long long n)
{
	static const char unit[] = { 'k', 'M', 'G', 'T' };
	double v = (double)n;
	int u = -1;

	if (n < 1000000) {
		snprintf(buf, len, "%lld", n);
		return buf;
	}
	while (v >= 1000 && u < 3) {
		v /= 1000;
		u++;
	}
	snprintf(buf, len, "%.1f%c", v, unit[u]);
	return buf;
}

/*
 * The identity tier's rules: totals, and with rates (stats --watch) the
 * three that move per second; 80 columns either way (a rule name longer
 * than 16 pushes its own row only).
 */
void xrlctl_http_text(struct xrl_buf *b, json_t *cur)
{
	bool rates = false;
	json_t *r;
	size_t i;

	json_array_foreach (json_object_get(cur, "rules"), i, r)
		rates |= json_object_get(r, "allowed_per_s") != NULL;
	xrl_buf_printf(b, "identity tier (HTTP rules, since the identity process started):\n");
	if (rates)
		xrl_buf_printf(b, "%-16s %7s %7s %7s %7s %10s %10s %9s\n", "RULE", "ALLOWED",
			       "REFUSED", "SHADOW", "FALLBK", "ALLOWED/s", "REFUSED/s", "SHADOW/s");
	else
		xrl_buf_printf(b, "%-16s %12s %12s %14s %10s\n", "RULE", "ALLOWED", "REFUSED",
			       "SHADOW-REFUSED", "FALLBACKS");
	json_array_foreach (json_object_get(cur, "rules"), i, r) {
		const char *name = json_string_value(json_object_get(r, "name"));
		long long v[4];
		char c[4][24];

		for (int k = 0; k < 4; k++)
			v[k] = (long long)json_integer_value(json_object_get(r, cols[k]));
		if (!rates) {
			xrl_buf_printf(b, "%-16s %12lld %12lld %14lld %10lld\n", name, v[0], v[1], v[2],
				       v[3]);
			continue;
		}
		for (int k = 0; k < 4; k++)
			compact(c[k], sizeof(c[k]), v[k]);
		xrl_buf_printf(b, "%-16s %7s %7s %7s %7s", name, c[0], c[1], c[2], c[3]);
		for (int k = 0; k < 3; k++) {
			char nm[40];

			snprintf(nm, sizeof(nm), "%s_per_s", cols[k]);
			xrl_buf_printf(b, " %*.1f", k == 2 ? 9 : 10,
				       json_real_value(json_object_get(r, nm)));
		}
		xrl_buf_printf(b, "\n");
	}
}
