/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * slots.h - Redis Cluster routing, pure functions: a key's slot
 * (CRC16 of its hash tag), the slot map from CLUSTER SLOTS, MOVED and ASK
 * answers. No connection, no lock: cluster.c owns those.
 */
#ifndef XRL_REDIS_SLOTS_H
#define XRL_REDIS_SLOTS_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#define XRL_CLUSTER_SLOTS     16384
#define XRL_CLUSTER_NODES_MAX 64     /* masters and replicas ever seen */
#define XRL_CLUSTER_NO_NODE   0xffff /* a slot no master serves (yet) */

struct redisReply;

/* One node's address, as CLUSTER SLOTS or a redirect names it. */
struct xrl_node_addr {
	char host[128];
	int port;
};

/*
 * A slot map: the master of each slot, as an index into a node table that
 * only ever grows (an index, once given, names one address for the life of
 * the table, so a connection kept per index is never misdirected).
 */
struct xrl_slot_map {
	__u16 master[XRL_CLUSTER_SLOTS];
	__u32 n_nodes;
	struct xrl_node_addr node[XRL_CLUSTER_NODES_MAX];
};

/* CRC16-CCITT (XMODEM: poly 0x1021, init 0), as Redis Cluster uses. */
__u16 xrl_crc16(const char *s, size_t n);
/* The slot of a key: CRC16 of the first non-empty {...} in it, or of the
 * whole key when there is none, mod 16384. */
unsigned xrl_key_slot(const char *key, size_t n);
/* The index of addr in m's node table, added if new; -ENOSPC when full. */
int xrl_slot_map_node(struct xrl_slot_map *m, const char *host, int port);
/*
 * Fill m->master from a CLUSTER SLOTS reply r (every slot first set to
 * XRL_CLUSTER_NO_NODE; nodes added to m's table). An empty host in the
 * reply means the node that answered: asked_host. Returns the number of
 * slots served, or -EBADMSG when r is not the shape of that reply.
 */
int xrl_slot_map_parse(struct xrl_slot_map *m, const struct redisReply *r, const char *asked_host);
/*
 * A redirect: "MOVED SLOT HOST:PORT" or "ASK SLOT HOST:PORT" (the host
 * may be empty: the node that answered; or an IPv6 address without
 * brackets). 0 with *ask, *slot, host and *port; -EINVAL for anything
 * else.
 */
int xrl_redirect_parse(const char *err, size_t n, bool *ask, unsigned *slot, char *host,
		       size_t hostlen, int *port);

#endif /* XRL_REDIS_SLOTS_H */
