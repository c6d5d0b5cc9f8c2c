/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * idproc.h - the wall between xrld and the parts that talk to the network
 * at large: the identity tier (HTTP requests from proxies), the overrides
 * sync and the fleet (replies from a Redis that others can write). They
 * run in a child process of their own (idchild.c): another uid, no
 * capability, a seccomp filter, no BPF descriptor. xrld (idproc.c) keeps
 * the listening socket and the maps, and the two speak over two sockets:
 *
 *  - calls, xrld -> child, on a stream: a frame is a __u32 length of the
 *    JSON that follows, a __u32 length of a payload after it (the policy
 *    text for start and reload), the JSON, the payload. The child answers
 *    each with one frame: {"r": RESULT} or {"errno": N, "err": "why"}.
 *  - events, child -> xrld, on a SOCK_SEQPACKET: fixed structs (below), a
 *    vouch or a fleet entry. xrld checks every field: the child is the
 *    side that parses what an attacker sends.
 */
#ifndef XRLD_IDPROC_H
#define XRLD_IDPROC_H

#include <linux/types.h>

#include "http/fleet/fleet.h"
#include "idframe.h"
#include "xrl.h"

/* The child's descriptors, as exec leaves them. */
#define XRL_IDP_FD_CALL	  3
#define XRL_IDP_FD_EVENT  4
#define XRL_IDP_FD_LISTEN 5

/* child -> xrld: VOUCH, FLEET (an entry for the denylists), ALIVE (every
 * XRL_IDP_ALIVE_MS from its main loop); xrld -> child: PUBLISH (an entry
 * this host sends to the fleet; never waited for). */
enum xrl_idev_type {
	XRL_IDEV_VOUCH = 1,
	XRL_IDEV_FLEET = 2,
	XRL_IDEV_PUBLISH = 3,
	XRL_IDEV_ALIVE = 4,
};
#define XRL_IDP_ALIVE_MS 500
/* No ALIVE for this long: the child is stopped or wedged, and is killed. */
#define XRL_IDP_DEAD_MS 3000

struct xrl_idev {
	__u32 type;
	__u32 pad;
	union {
		struct {
			struct xrl_prefix p;
			__u64 ttl_ns;
		} vouch;
		struct xrl_fleet_entry fleet;
	};
};

/* A checked event of the child's, for the part that takes its type. */
struct xrld;
typedef void xrld_idev_fn(struct xrld *d, const struct xrl_idev *e);
/* At its start, a part takes the child's events of a type (XRL_IDEV_VOUCH,
 * XRL_IDEV_FLEET); those no part takes are dropped, as is every event
 * when no identity process runs. */
void xrld_idp_take(struct xrld *d, enum xrl_idev_type type, xrld_idev_fn *fn);


/* The child's main: argv after "--identity-process". */
int xrld_identity_main(int verbose, int use_syslog);

#endif /* XRLD_IDPROC_H */
