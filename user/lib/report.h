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

#include "xrl.h"

struct xrl_buf {
	char  *p;
	size_t len, cap;
	int    oom;
};

void xrl_buf_printf(struct xrl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void xrl_buf_json_str(struct xrl_buf *b, const char *s);   /* quoted, escaped */
void xrl_buf_free(struct xrl_buf *b);

/* Rule names of the ruleset in force (from the xrl_meta map). */
int xrl_read_rule_names(struct xrl_handle *h, struct xrl_ruleset_meta *meta);

/*
 * One interface's counters. `prev` and `dt_s` (optional) add per-second
 * rates for watch mode. JSON shape:
 * {"rules":[{"name":"syn","passed":N,"dropped":N,"shadow_dropped":N,
 *   "passed_bytes":N,...}],"global":{"seen":N,...},"buckets":N}
 */
void xrl_report_stats(struct xrl_buf *b, const char *ifname, const struct xrl_stats *st,
		      const struct xrl_ruleset_meta *meta, long buckets,
		      const struct xrl_stats *prev, double dt_s, int json);

/* Allow or deny list entries of one interface. */
int xrl_report_list(struct xrl_buf *b, struct xrl_handle *h, int deny, int json);

#endif
