/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * report.h - human tables and JSON for what xrld and xrlctl print, written
 * into a growing buffer so the daemon can send it over its socket and the
 * CLI can print it when it reads the pinned maps itself.
 */
#ifndef XRL_REPORT_H
#define XRL_REPORT_H

#include <stdarg.h>
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
 * (optional) add per-second rates for watch mode. JSON shape:
 * {"interface":"eth0","rules":[{"name":"syn","passed":N,"dropped":N,
 *   "shadow_dropped":N,"passed_bytes":N,...}],"global":{"seen":N,...},"buckets":N}
 */
void xrl_report_stats(struct xrl_buf *b, const char *ifname, const struct xrl_stats *st,
		      const struct xrl_ruleset_meta *meta, long buckets,
		      const struct xrl_stats *prev, double dt_s);
json_t *xrl_report_stats_json(const char *ifname, const struct xrl_stats *st,
			      const struct xrl_ruleset_meta *meta, long buckets,
			      const struct xrl_stats *prev, double dt_s);
/* The global counters as {"seen":N,...}. */
json_t *xrl_global_json(const struct xrl_global_ctr *g);

/* Allow or deny list entries of one interface: a table, or an array of
 * {"prefix":..,"origin":..[,"expires_in_s":S|null]} ([] when empty). */
void xrl_report_list(struct xrl_buf *b, struct xrl_handle *h, int deny);
json_t *xrl_report_list_json(struct xrl_handle *h, int deny);

#endif
