/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * listenq.h - the accept queues of this network namespace's TCP listeners,
 * as `ss -ltn` shows them (Recv-Q of Send-Q): what `syn_cookies: auto`
 * watches besides a rule's SYN rate.
 */
#ifndef XRL_LISTENQ_H
#define XRL_LISTENQ_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#include "xrl_abi.h"

struct xrl_listenq {
	__u16 port;    /* local port, host order */
	__u32 queued;  /* connections waiting for accept() (sk_ack_backlog) */
	__u32 backlog; /* the listen() backlog (sk_max_ack_backlog) */
	__u32 inode;   /* the socket's: a restarted service has a new one */
};

/* Every TCP listener (IPv4 and IPv6) into out, at most max (*n of them).
 * One sock_diag dump per family; needs no capability. 0 or -errno. */
int xrl_listen_queues(struct xrl_listenq *out, size_t max, size_t *n);

/* The fullest of the listeners q[0..n) on a port of the nr ranges r (none:
 * every port), in percent of its backlog; 0 if none. */
unsigned xrl_listen_pct(const struct xrl_listenq *q, size_t n, const struct xrl_port_range *r,
			size_t nr);

#endif /* XRL_LISTENQ_H */
