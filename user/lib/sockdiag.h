/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * sockdiag.h - one inet_diag request to the kernel (listenq.c, verify.c).
 */
#ifndef XRL_SOCKDIAG_H
#define XRL_SOCKDIAG_H

#include <linux/inet_diag.h>
#include <linux/types.h>

/*
 * Send a SOCK_DIAG_BY_FAMILY request for TCP sockets of family (AF_INET or
 * AF_INET6) in states (a bit per linux/tcp_states.h state) on the
 * NETLINK_SOCK_DIAG socket fd: a dump (NLM_F_DUMP) when id is NULL, else an
 * exact lookup of id. seq tags the answers. 0 or -errno.
 */
int xrl_sockdiag_send(int fd, int family, __u32 states, const struct inet_diag_sockid *id,
		      __u32 seq);

#endif
