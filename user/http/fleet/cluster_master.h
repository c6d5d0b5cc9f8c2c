/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * cluster_master.h - where a fleet meets on a Redis Cluster
 * (cluster_master.c): fleet.c asks at every (re)connect, admin.c for the
 * overrides' hash.
 */
#ifndef XRL_FLEET_CLUSTER_MASTER_H
#define XRL_FLEET_CLUSTER_MASTER_H

#include <linux/types.h>

struct xrl_fleet_cfg;
/* The master that serves key's slot, asked of c's seeds
 * (CLUSTER SLOTS); 0, or -errno when no seed answered with one. */
struct xrl_node_addr;
int xrl_fleet_cluster_owner(const struct xrl_fleet_cfg *c, const char *key,
			    struct xrl_node_addr *out);
/* The same, each seed given cto_us to connect and to_us a command. */
int xrl_fleet_cluster_owner_to(const struct xrl_fleet_cfg *c, const char *key,
			       struct xrl_node_addr *out, __u64 cto_us, __u64 to_us);

#endif /* XRL_FLEET_CLUSTER_MASTER_H */
