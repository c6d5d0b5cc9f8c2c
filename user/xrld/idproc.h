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

#include "http/fleet.h"
#include "xrl.h"

/* The child's descriptors, as exec leaves them. */
#define XRL_IDP_FD_CALL	  3
#define XRL_IDP_FD_EVENT  4
#define XRL_IDP_FD_LISTEN 5

/* The largest frame either side takes (a top, a penalties list, metrics). */
#define XRL_IDP_FRAME_MAX (16u << 20)

enum xrl_idev_type { XRL_IDEV_VOUCH = 1, XRL_IDEV_FLEET = 2 };

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

/* Frames on fd (blocking, whole). 0 or -errno (-EPIPE: the other side is gone). */
int xrl_idp_send(int fd, const char *json, size_t jlen, const void *payload, size_t plen);
/* One frame; *json and *payload malloc'd and NUL-terminated (free both). */
int xrl_idp_recv(int fd, char **json, size_t *jlen, char **payload, size_t *plen);

/* The child's main: argv after "--identity-process". */
int xrld_identity_main(int verbose, int use_syslog);

#endif /* XRLD_IDPROC_H */
