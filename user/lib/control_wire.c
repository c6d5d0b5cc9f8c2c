// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * control_wire.c - the control socket's frames (control_wire.h): a request
 * encoded and decoded, and xrlctl's call of xrld, from connect to the
 * whole answer.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control_wire.h"

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

/*
 * A decimal number at *p, made of digits only and ended by '\n' before end,
 * at most max. Reads nothing at or past end (the buffer is not NUL-terminated:
 * it is what the client sent). On success *p points past the '\n'.
 */
static int ctl_number(const char **p, const char *end, size_t max, size_t *out)
{
	const char *s = *p;
	size_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EPROTO;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (size_t)(*s - '0');
		/* checked per digit, so v never overflows: max <= XRL_CTL_MAX */
		if (v > max)
			return -EPROTO;
	}
	if (s >= end || *s != '\n')
		return -EPROTO;
	*p = s + 1;
	*out = v;
	return 0;
}

/*
 * Decode a request in place. Every byte read is inside [buf, buf + len);
 * lengths and the count are plain decimal digits ("+1", " 1", "-0" are
 * refused). Each argument is moved one byte left, over its length's '\n',
 * so a NUL fits after it.
 */
int xrl_ctl_decode(char *buf, size_t len, int *argc, char **argv)
{
	const char *p = buf, *end = buf + len;
	size_t n, l;

	if (len < 5 || memcmp(buf, "XRL1 ", 5))
		return -EPROTO;
	p += 5;
	if (ctl_number(&p, end, XRL_CTL_MAXARGS, &n))
		return -EPROTO;
	for (size_t i = 0; i < n; i++) {
		char *arg;

		if (ctl_number(&p, end, (size_t)(end - p), &l))
			return -EPROTO;
		if (l > (size_t)(end - p))
			return -EPROTO;
		arg = buf + (p - buf) - 1;
		memmove(arg, p, l);
		arg[l] = '\0';
		argv[i] = arg;
		p += l;
	}
	argv[n] = NULL;
	*argc = (int)n;
	return p == end ? 0 : -EPROTO;
}

int xrl_ctl_call(const char *sock, int argc, const char *const *argv, char **payload,
		 int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t cap = 4096, len = 0;
	char *req = NULL, *resp = NULL, *nl;
	long rl;
	int fd, err, werr, code;

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
	werr = 0;
	for (long off = 0; off < rl;) {
		/* MSG_NOSIGNAL: a closed socket is an error here, not SIGPIPE */
		ssize_t w = send(fd, req + off, (size_t)(rl - off), MSG_NOSIGNAL);

		if (w < 0) {
			/* xrld may answer without reading (busy): read what it said */
			werr = -errno;
			break;
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
		if (r < 0 && len && errno == ECONNRESET)
			break; /* xrld closed with our request unread, after its answer */
		if (r < 0) {
			err = werr ? werr : -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	resp[len] = '\0';
	code = (int)strtol(resp, &nl, 10);
	if (nl == resp || *nl != '\n') {
		err = werr ? werr : -EPROTO;
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
