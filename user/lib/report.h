/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * report.h - human tables and JSON for what xrld and xrlctl print, written
 * into a growing buffer so the daemon can send it over its socket and the
 * CLI can print it when it reads the pinned maps itself.
 */
#ifndef XRL_REPORT_H
#define XRL_REPORT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util.h"
#include "xrl.h"

/* j as one line of compact JSON and a newline; takes j's reference. */
void xrl_buf_json(struct xrl_buf *b, json_t *j);
/* {"error":"msg"} */
void xrl_buf_json_error(struct xrl_buf *b, const char *msg);

/* Rule names of the ruleset in force (from the xrl_meta map). */
int xrl_read_rule_names(struct xrl_handle *h, struct xrl_ruleset_meta *meta);

/*
 * One interface's counters, as a table or as JSON. `prev` and `dt_s`
 * (optional) add per-second rates for watch mode: PASSED/s, DROPPED/s and
 * SHADOW/s per rule, and one per global counter (the SYN-cookie counters
 * on a line of their own). Numbers are human-readable (1.2M) in the table.
 * JSON shape:
 * {"interface":"eth0","rules":[{"name":"syn","passed":N,"dropped":N,
 *   "shadow_dropped":N,"passed_bytes":N,...[,"passed_per_s":R,...]}],
 *  "global":{"seen":N,...,"cookies_sent":N,...},"buckets":N
 *  [,"global_per_s":{"seen":R,...}]}
 */
void xrl_report_stats(struct xrl_buf *b, const char *ifname, const struct xrl_stats *st,
		      const struct xrl_ruleset_meta *meta, long buckets,
		      const struct xrl_stats *prev, double dt_s, unsigned flags);
enum {
	XRL_REPORT_HUMAN = 1 << 0, /* numbers as 1.2M */
	XRL_REPORT_RATES = 1 << 1, /* rate columns even without prev ("-"),
				    * so a live view keeps its layout */
};
json_t *xrl_report_stats_json(const char *ifname, const struct xrl_stats *st,
			      const struct xrl_ruleset_meta *meta, long buckets,
			      const struct xrl_stats *prev, double dt_s);
/* The global counters as {"seen":N,...}. */
json_t *xrl_global_json(const struct xrl_global_ctr *g);

/*
 * Prometheus text: a family's HELP and TYPE lines. Every family xrld
 * serves is opened through here, so none goes without them. help must not
 * hold a newline or a backslash (the exposition format escapes them).
 */
void xrl_prom_family(struct xrl_buf *b, const char *name, const char *type, const char *help);

/* One sample of a family with a single label: name{label="value"} v. */
void xrl_prom_u64(struct xrl_buf *b, const char *name, const char *label, const char *value,
		  __u64 v);

/* v as an operator reads it at a glance: "999", "1.2k", "12.3M", "4.0G"
 * (SI, three significant figures at most); out holds at least 8 bytes. */
void xrl_human(double v, char *out, size_t len);

/* Allow or deny list entries of one interface: a table, or an array of
 * {"prefix":..,"origin":..[,"expires_in_s":S|null]} ([] when empty). */
void xrl_report_list(struct xrl_buf *b, struct xrl_handle *h, int deny);
json_t *xrl_report_list_json(struct xrl_handle *h, int deny);

/* report_vouch.c: the vouched sources (`xrlctl vouch list`), a table or
 * [{"prefix","origin","expires_in_s"(null: never)}]; 0 or -errno. */
int xrl_report_vouch(struct xrl_buf *b, struct xrl_handle *h);
json_t *xrl_report_vouch_json(struct xrl_handle *h);
/* "policy", "runtime", "penalty", "cookie", "fleet", "identity" (enum xrl_origin). */
const char *xrl_origin_name(__u32 origin);

#endif
