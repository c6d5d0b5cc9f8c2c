// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * util.c - one copy of each small helper (util.h says what each is for).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

__u64 xrl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
}

__u64 xrl_fnv1a64(const void *p, size_t n)
{
	const unsigned char *b = p;
	__u64 h = 1469598103934665603ULL; /* offset basis */

	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 1099511628211ULL; /* FNV prime */
	}
	return h;
}

int xrl_read_all(const char *path, size_t max, char **out, size_t *len)
{
	size_t n = 0, cap = 4096;
	char *buf;
	int fd, rc = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	while (buf) {
		ssize_t r;

		if (n + 1 >= cap) {
			/* one byte past the limit tells a file at the limit from a larger one */
			char *nb = n > max ? NULL : realloc(buf, cap * 2);

			if (!nb) {
				rc = n > max ? -EFBIG : -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (!buf)
		return -ENOMEM;
	if (!rc && n > max)
		rc = -EFBIG;
	if (rc) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

void xrl_buf_printf(struct xrl_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t ncap = b->cap ? b->cap * 2 : 4096;

		while (ncap < b->len + (size_t)n + 1)
			ncap *= 2;
		char *np = realloc(b->p, ncap);

		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
}

void xrl_buf_add(struct xrl_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->cap - b->len < n + 1) {
		size_t ncap = b->cap ? b->cap * 2 : 4096;
		char *np;

		while (ncap < b->len + n + 1)
			ncap *= 2;
		np = realloc(b->p, ncap);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

void xrl_buf_free(struct xrl_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void xrl_thread_stop(pthread_mutex_t *mu, pthread_cond_t *cv, bool *stop, pthread_t thr)
{
	pthread_mutex_lock(mu);
	*stop = true;
	pthread_cond_signal(cv);
	pthread_mutex_unlock(mu);
	pthread_join(thr, NULL);
}
