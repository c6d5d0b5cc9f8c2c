// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * idframe.c - the frames xrld and the identity process exchange on the
 * calls socket, sent and read whole by a deadline; both sides use them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "idframe.h"
#include "util.h"

/* Until fd is ready for ev, or deadline (CLOCK_MONOTONIC ns; 0: none):
 * 0 or -ETIMEDOUT. */
static int wait_fd(int fd, short ev, __u64 deadline)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = ev };
		__u64 now;
		int r;

		if (!deadline)
			return 0;
		now = xrl_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)((deadline - now + 999999) / 1000000));
		if (r > 0)
			return 0;
		if (!r)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* The whole of n bytes, sent (out) or received, by deadline: a peer
 * trickling a frame a byte at a time does not hold the reader past it. */
static int full_io(int fd, char *c, size_t n, __u64 deadline, bool out)
{
	while (n) {
		ssize_t k;
		int rc = wait_fd(fd, out ? POLLOUT : POLLIN, deadline);

		if (rc)
			return rc;
		k = out ? send(fd, c, n, MSG_NOSIGNAL | (deadline ? MSG_DONTWAIT : 0))
			: recv(fd, c, n, deadline ? MSG_DONTWAIT : 0);
		if (k < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (k <= 0)
			return k < 0 ? -errno : -EPIPE;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

static int full_write(int fd, const void *p, size_t n, __u64 deadline)
{
	return full_io(fd, (char *)p, n, deadline, true); /* send() only reads it */
}

static int full_read(int fd, void *p, size_t n, __u64 deadline)
{
	return full_io(fd, p, n, deadline, false);
}

int xrl_idp_send(int fd, const char *json, size_t jlen, const void *payload, size_t plen,
		 __u64 deadline)
{
	__u32 h[2] = { (__u32)jlen, (__u32)plen };
	int rc;

	if (jlen > XRL_IDP_FRAME_MAX || plen > XRL_IDP_FRAME_MAX)
		return -E2BIG;
	if ((rc = full_write(fd, h, sizeof(h), deadline)) ||
	    (rc = full_write(fd, json, jlen, deadline)))
		return rc;
	return plen ? full_write(fd, payload, plen, deadline) : 0;
}

int xrl_idp_recv(int fd, char **json, size_t *jlen, char **payload, size_t *plen, size_t max,
		 __u64 deadline)
{
	__u32 h[2];
	char *j = NULL, *p = NULL;
	int rc;

	*json = *payload = NULL;
	if ((rc = full_read(fd, h, sizeof(h), deadline)))
		return rc;
	if (h[0] > max || h[1] > max || (size_t)h[0] + h[1] > max)
		return -EBADMSG;
	j = malloc(h[0] + 1);
	p = malloc(h[1] + 1);
	if (!j || !p) {
		free(j);
		free(p);
		return -ENOMEM;
	}
	if ((rc = full_read(fd, j, h[0], deadline)) ||
	    (h[1] && (rc = full_read(fd, p, h[1], deadline)))) {
		free(j);
		free(p);
		return rc;
	}
	j[h[0]] = p[h[1]] = 0;
	*json = j;
	*jlen = h[0];
	*payload = p;
	*plen = h[1];
	return 0;
}
