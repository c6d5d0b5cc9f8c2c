// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * listenq.c - the accept queues of the TCP listeners (see listenq.h).
 *
 * For a socket in LISTEN, inet_diag's idiag_rqueue is the accept queue's
 * length and idiag_wqueue the backlog it may reach (inet_diag.c,
 * inet_sk_diag_fill): `ss -ltn`'s Recv-Q and Send-Q. Cost: one dump per
 * family, a few hundred bytes a listener; xrld asks once a second, only
 * while a rule is in `syn_cookies: auto`. Runs in xrld's namespace, the one
 * of its interfaces.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include "listenq.h"
#include "sockdiag.h"

#define TCP_LISTEN_STATE 10 /* linux/tcp_states.h */

static int dump_family(int fd, int family, struct xrl_listenq *out, size_t max, size_t *n)
{
	union {
		struct nlmsghdr nh;
		char buf[16384];
	} rep;
	int err = xrl_sockdiag_send(fd, family, 1u << TCP_LISTEN_STATE, NULL, (__u32)family);

	if (err)
		return err;
	for (;;) {
		ssize_t len = recv(fd, &rep, sizeof(rep), 0);
		struct nlmsghdr *h = &rep.nh;

		if (len < 0)
			return errno == EINTR ? -EAGAIN : -errno;
		for (; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			const struct inet_diag_msg *m = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				return e->error ? e->error : -EIO;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)) || *n >= max)
				continue;
			out[*n].port = ntohs(m->id.idiag_sport);
			out[*n].queued = m->idiag_rqueue;
			out[*n].backlog = m->idiag_wqueue;
			out[*n].inode = m->idiag_inode;
			(*n)++;
		}
	}
}

int xrl_listen_queues(struct xrl_listenq *out, size_t max, size_t *n)
{
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG), err;

	*n = 0;
	if (fd < 0)
		return -errno;
	err = dump_family(fd, AF_INET, out, max, n);
	if (!err)
		err = dump_family(fd, AF_INET6, out, max, n);
	close(fd);
	return err;
}

unsigned xrl_listen_pct(const struct xrl_listenq *q, size_t n, const struct xrl_port_range *r,
			size_t nr)
{
	unsigned best = 0;

	for (size_t i = 0; i < n; i++) {
		bool hit = !nr;
		unsigned pct;

		for (size_t k = 0; k < nr && !hit; k++)
			hit = q[i].port >= r[k].lo && q[i].port <= r[k].hi;
		if (!hit)
			continue;
		/* backlog 0 (listen(fd, 0)) still takes one connection */
		pct = (unsigned)((__u64)q[i].queued * 100 / (q[i].backlog ? q[i].backlog : 1));
		if (pct > best)
			best = pct;
	}
	return best;
}
