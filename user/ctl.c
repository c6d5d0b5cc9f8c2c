// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"

long xrl_ctl_encode(int argc, const char *const *argv, char **out)
{
	size_t cap = 32, len;
	char *p;

	for (int i = 0; i < argc; i++)
		cap += strlen(argv[i]) + 24;
	if (argc > XRL_CTL_MAXARGS || cap > XRL_CTL_MAX)
		return -E2BIG;
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	len = (size_t)snprintf(p, cap, "XRL1 %d\n", argc);
	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]);

		len += (size_t)snprintf(p + len, cap - len, "%zu\n", n);
		memcpy(p + len, argv[i], n);
		len += n;
	}
	*out = p;
	return (long)len;
}

int xrl_ctl_decode(char *buf, size_t len, int *argc, char **argv)
{
	char *p = buf, *end = buf + len, *nl;
	long n;

	if (len < 7 || strncmp(buf, "XRL1 ", 5))
		return -EPROTO;
	n = strtol(buf + 5, &nl, 10);
	if (*nl != '\n' || n < 0 || n > XRL_CTL_MAXARGS)
		return -EPROTO;
	p = nl + 1;
	*argc = (int)n;
	for (int i = 0; i < *argc; i++) {
		long l;

		if (p >= end)
			return -EPROTO;
		l = strtol(p, &nl, 10);
		if (nl >= end || *nl != '\n' || l < 0 || l > end - nl - 1)
			return -EPROTO;
		/* shift the bytes left by one over the '\n' so a NUL fits after */
		memmove(nl, nl + 1, (size_t)l);
		nl[l] = '\0';
		argv[i] = nl;
		p = nl + l + 1;
	}
	argv[*argc] = NULL;
	return p == end ? 0 : -EPROTO;
}

int xrl_ctl_call(const char *sock, int argc, const char *const *argv, char **payload,
		 int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t cap = 4096, len = 0;
	char *req = NULL, *resp = NULL, *nl;
	long rl;
	int fd, err, code;

	*payload = NULL;
	if (strlen(sock) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, sock);
	rl = xrl_ctl_encode(argc, argv, &req);
	if (rl < 0)
		return (int)rl;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto out;
	}
	for (long off = 0; off < rl;) {
		ssize_t w = write(fd, req + off, (size_t)(rl - off));

		if (w < 0) {
			err = -errno;
			goto out;
		}
		off += w;
	}
	shutdown(fd, SHUT_WR);
	resp = malloc(cap);
	if (!resp) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pfd, 1, timeout_ms) <= 0) {
			err = -ETIMEDOUT;
			goto out;
		}
		if (len + 1 >= cap) {
			char *np = realloc(resp, cap * 2);

			if (!np) {
				err = -ENOMEM;
				goto out;
			}
			resp = np;
			cap *= 2;
		}
		r = read(fd, resp + len, cap - len - 1);
		if (r < 0) {
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	resp[len] = '\0';
	code = (int)strtol(resp, &nl, 10);
	if (nl == resp || *nl != '\n') {
		err = -EPROTO;
		goto out;
	}
	memmove(resp, nl + 1, len - (size_t)(nl + 1 - resp) + 1);
	*payload = resp;
	resp = NULL;
	err = code;
out:
	if (fd >= 0)
		close(fd);
	free(req);
	free(resp);
	return err;
}
