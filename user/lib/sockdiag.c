// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * sockdiag.c - one inet_diag request to the kernel (see sockdiag.h).
 */
#include <errno.h>
#include <sys/socket.h>

#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include "sockdiag.h"

int xrl_sockdiag_send(int fd, int family, __u32 states, const struct inet_diag_sockid *id,
		      __u32 seq)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = { .nlmsg_len = sizeof(req),
			.nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | (id ? 0 : NLM_F_DUMP),
			.nlmsg_seq = seq },
		.r = { .sdiag_family = (__u8)family,
		       .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = states },
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };

	if (id)
		req.r.id = *id;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return 0;
}
