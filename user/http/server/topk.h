/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * topk.h - the most refused keys per HTTP rule (topk.c), bounded: at most
 * XRL_TOPK_K counters a rule, whatever the number of keys refused.
 */
#ifndef XRL_TOPK_H
#define XRL_TOPK_H

#include <pthread.h>

#include "http/http.h"

#define XRL_TOPK_K    32 /* counters per rule */
#define XRL_TOPK_SHOW 64 /* bytes of a key kept for display */

/* A key as counted: its keyed hash (identity) and a printable form. */
struct xrl_topk_key {
	__u64 h;
	char show[XRL_TOPK_SHOW + 4]; /* "..." when cut, and the NUL */
};

struct xrl_topk_ent {
	__u64 h;
	__u64 count;  /* refusals counted (an upper bound) */
	__u64 err;    /* of which possibly another key's (space-saving) */
	__u64 last_s; /* CLOCK_REALTIME s of the last */
	char show[XRL_TOPK_SHOW + 4];
};

struct xrl_topk;
/* shards: one per writer thread (+1 for the others), each written by one. */
struct xrl_topk *xrl_topk_new(unsigned shards);
void xrl_topk_free(struct xrl_topk *t);
/* Forget every rule's keys (a reload renumbers the rules). */
void xrl_topk_reset(struct xrl_topk *t);
/* The hash and printable form of key (the limiter's: bearer ones hashed). */
void xrl_topk_key(const struct xrl_topk *t, const char *key, struct xrl_topk_key *out);
/* One refusal of k by the rule of index rule, counted in shard (the
 * caller's thread's; beyond the last: the last). */
void xrl_topk_note(struct xrl_topk *t, unsigned shard, unsigned rule, const struct xrl_topk_key *k,
		   __u64 now_s);
/* Rule's counters, most refused first, into out; returns how many. */
int xrl_topk_read(struct xrl_topk *t, unsigned rule, struct xrl_topk_ent *out, int max);

#endif /* XRL_TOPK_H */
