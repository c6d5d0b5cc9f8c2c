/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stats_http.h - `xrlctl stats`' identity-tier part (stats_http.c). */
#ifndef XRLCTL_STATS_HTTP_H
#define XRLCTL_STATS_HTTP_H

#include <jansson.h>

struct xrl_buf;

/* xrld's "http" counters; NULL: xrld is not reachable or has no http: section. */
json_t *xrlctl_http_stats(const char *sock);
/* Add "<counter>_per_s" to each rule of cur against prev, dt seconds before. */
void xrlctl_http_rates(json_t *cur, json_t *prev, double dt);
/* The rules' table (with the rates when cur has them). */
void xrlctl_http_text(struct xrl_buf *b, json_t *cur);

#endif /* XRLCTL_STATS_HTTP_H */
