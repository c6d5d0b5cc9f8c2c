/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cluster.h - what cluster.c offers beyond the backend's parts
 * (redis.h): a refresh on demand, and its Prometheus families.
 */
#ifndef XRL_REDIS_CLUSTER_H
#define XRL_REDIS_CLUSTER_H

struct xrl_cluster;
struct xrl_redis;
struct xrl_buf;

/* Ask the refresher for a new slot map (at most one per 100 ms). */
void xrl_cluster_want_refresh(struct xrl_cluster *cl);
/* The cluster's families (nothing unless the backend is redis-cluster://). */
void xrl_cluster_metrics(struct xrl_redis *rd, struct xrl_buf *b);

#endif /* XRL_REDIS_CLUSTER_H */
