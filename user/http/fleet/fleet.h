/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * fleet.h - the instances of one fleet meet in Redis (fleet.c): each writes
 * a heartbeat and counts the live ones (NODE_SHARE), and what one of them
 * denies or penalises reaches the others: a hash of the active entries
 * (for an instance that starts later, or comes back) and a stream of the
 * changes (for the ones that are up). One thread, its own connection; the
 * callers only queue (xrl_fleet_publish never blocks) and read counters.
 *
 * Redis keys, all under one hash tag so that a Redis Cluster keeps a
 * fleet on one slot: xrl:{fleet:NAME}:live (sorted set: instance id ->
 * expiry, ms since the epoch), :deny and :pen (hashes: entry -> "UNTIL_MS
 * LEVEL", UNTIL_MS 0 = no expiry), :log (stream, about 10000 entries).
 */
#ifndef XRL_FLEET_H
#define XRL_FLEET_H

#include <stdbool.h>

#include "config.h"

enum xrl_fleet_kind { XRL_FLEET_DENY = 0, XRL_FLEET_PEN, XRL_FLEET_KINDS };
/* To the deny kind's taker only: SYNC_BEGIN and SYNC_END (no field) bracket
 * a whole read of the deny hash at a (re)connect (a deny entry of the fleet
 * applied there that the read did not name was deleted while that instance
 * was cut off); PEER (field: "ADDR/32" or "ADDR/128") names a Redis node
 * the fleet connected to, which no entry may deny. */
enum xrl_fleet_op {
	XRL_FLEET_ADD = 0,
	XRL_FLEET_DEL,
	XRL_FLEET_SYNC_BEGIN,
	XRL_FLEET_SYNC_END,
	XRL_FLEET_PEER
};

/* One entry: a deny ("198.51.100.0/24") or a key penalty ("RULE HASH", the
 * hash 32 hex digits of SHA-256 of the key: never the key itself). */
struct xrl_fleet_entry {
	__u8 op, kind;
	char field[96];
	__u64 until_ms; /* CLOCK_REALTIME ms; 0: until removed */
	__u32 level;	/* a penalty's offence count */
};

/* Called on the fleet's thread for each entry of another instance (and,
 * at a (re)connect, for every active entry of the hash). */
typedef void (*xrl_fleet_apply_fn)(void *arg, const struct xrl_fleet_entry *e);

/* The fleet's counters, one list: the fields of xrl_fleet_stats beside live,
 * the fleet's atomics (fleet.c) and the copy between them. */
#define XRL_FLEET_COUNTERS(X)                                                        \
	X(connected)  /* 1: Redis answers */                                          \
	X(published)  /* entries this instance sent */                                \
	X(applied)    /* entries of others handed to the tiers */                     \
	X(errors)     /* failed connects and commands */                              \
	X(dropped)    /* entries not sent: the queue was full */                      \
	X(heartbeats) /* heartbeats written */                                        \
	X(redirects)  /* cluster: MOVED followed */                                   \
	X(pruned)     /* expired hash entries deleted */                              \
	X(refused)    /* entries read and refused (malformed, absurd expiry) */       \
	X(live_read)  /* the live count Redis answered last (before the cap) */       \
	X(live_over)  /* heartbeats that counted more than max_members */             \
	X(log_reset)  /* the stream's ids went back (recreated): read again */
#define XRL_FLEET_STAT_FIELD(name) __u64 name;

struct xrl_fleet_stats {
	__u64 live; /* instances with a heartbeat, this one included */
	XRL_FLEET_COUNTERS(XRL_FLEET_STAT_FIELD)
};

struct xrl_fleet;

/* A fleet for c (enabled); nothing runs until xrl_fleet_run. */
int xrl_fleet_new(const struct xrl_fleet_cfg *c, struct xrl_fleet **out);
void xrl_fleet_on(struct xrl_fleet *f, enum xrl_fleet_kind k, xrl_fleet_apply_fn fn, void *arg);
int xrl_fleet_run(struct xrl_fleet *f);
/* Stop the thread (its heartbeat is taken out of the live set), free. */
void xrl_fleet_free(struct xrl_fleet *f);
/* Queue e for the fleet: 0, or -ENOBUFS when the queue is full (counted). */
int xrl_fleet_publish(struct xrl_fleet *f, const struct xrl_fleet_entry *e);
/* The live count in use: the last known while Redis is away; >= 1. */
__u32 xrl_fleet_live(const struct xrl_fleet *f);
void xrl_fleet_get_stats(const struct xrl_fleet *f, struct xrl_fleet_stats *s);
const char *xrl_fleet_id(const struct xrl_fleet *f);

#endif /* XRL_FLEET_H */
