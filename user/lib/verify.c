// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * verify.c - did a refused packet prove its source?
 *
 * A source address is the one field of a packet an off-path attacker can
 * set to anything. What it cannot do is complete a TCP handshake from an
 * address it does not receive at: it never sees the host's SYN-ACK. So a
 * refused packet that belongs to a connection the host has established (or
 * has just closed) came from where it says. xrld asks the kernel, with one
 * exact sock_diag lookup of the sampled packet's 4-tuple, only for refusal
 * samples that may earn a penalty (a few a second at most): no cost on the
 * packet path. Known limits: a spoofer that knows a live connection's
 * 4-tuple (both ports) can still pass; a connection closed and reaped
 * before the sample is read proves nothing (a missed strike, never a false
 * one). A proven sample only says that this packet came from its source:
 * forged packets "from" the same source share its bucket and can get its
 * real packets refused, which is why xrld counts a window only when every
 * sample in it was proven (xrld.c, penalty_note). Needs no capability; runs in xrld's network namespace, which is
 * the one its interfaces and their sockets live in.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "sockdiag.h"
#include "verify.h"

/* TCP states that only a completed handshake reaches (linux/tcp_states.h). */
enum {
	ST_ESTABLISHED = 1,
	ST_FIN_WAIT1 = 4,
	ST_FIN_WAIT2 = 5,
	ST_TIME_WAIT = 6,
	ST_CLOSE_WAIT = 8,
	ST_LAST_ACK = 9,
	ST_CLOSING = 11,
};

static bool proven_state(__u8 st)
{
	return st == ST_ESTABLISHED || st == ST_FIN_WAIT1 || st == ST_FIN_WAIT2 ||
	       st == ST_TIME_WAIT || st == ST_CLOSE_WAIT || st == ST_LAST_ACK || st == ST_CLOSING;
}

/* One exact lookup (not a dump): local = the packet's destination. */
static int diag_ask(int fd, const struct xrl_event *e, __u32 seq)
{
	struct inet_diag_sockid id = {
		.idiag_sport = e->dport,
		.idiag_dport = e->sport,
		.idiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE },
	};

	memcpy(id.idiag_src, e->dst, 16);
	memcpy(id.idiag_dst, e->src, 16);
	return xrl_sockdiag_send(fd, e->family == XRL_AF_INET ? AF_INET : AF_INET6, ~0u, &id, seq);
}

/*
 * The answer to request seq: sock_diag answers an exact lookup while the
 * request is being sent, so it is queued by the time sendto returns and is
 * read without waiting; answers to older requests (none, normally) are
 * skipped. 1: proven, 0: not, -errno.
 */
static int diag_answer(int fd, __u32 seq)
{
	union {
		struct nlmsghdr nh;
		char buf[1024];
	} rep;

	for (int tries = 0; tries < 8; tries++) {
		ssize_t n = recv(fd, &rep, sizeof(rep), MSG_DONTWAIT);

		if (n < 0)
			return -errno;
		if (!NLMSG_OK(&rep.nh, (size_t)n) || rep.nh.nlmsg_seq != seq)
			continue;
		/* found: one inet_diag_msg; not found: NLMSG_ERROR (-ENOENT) */
		if (rep.nh.nlmsg_type == SOCK_DIAG_BY_FAMILY &&
		    rep.nh.nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
			return proven_state(((const struct inet_diag_msg *)NLMSG_DATA(&rep.nh))->idiag_state);
		return 0;
	}
	return -EAGAIN;
}

/*
 * One netlink socket, opened at the first question and kept: a question
 * costs a sendto and a recv, no socket set-up. Not thread-safe: xrld asks
 * from its main thread only.
 */
int xrl_event_proven(const struct xrl_event *e)
{
	static int fd = -1;
	static __u32 seq;
	int err;

	/* a cookie ACK: the program saw the proof (penalty: verified on a
	 * cookie rule, whose refused ACKs never have a socket) */
	if (e->proof & XRL_EV_PROOF_COOKIE)
		return 1;
	if (e->proto != IPPROTO_TCP || !e->has_ports || (e->tcp_flags & 0x02 /* SYN */))
		return 0;
	if (e->family != XRL_AF_INET && e->family != XRL_AF_INET6)
		return -EAFNOSUPPORT;
	if (fd < 0) {
		fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
		if (fd < 0)
			return -errno;
	}
	err = diag_ask(fd, e, ++seq);
	if (!err)
		err = diag_answer(fd, seq);
	if (err < 0) {
		/* a socket in an unknown state is not reused */
		close(fd);
		fd = -1;
	}
	return err;
}
