/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * util.h - the small helpers every part of user/ shares, one copy each:
 * the monotonic clock, a non-cryptographic hash for table slots, reading a
 * whole file, walking a BPF map's keys, the growable text buffer, and
 * stopping a worker thread.
 */
#ifndef XRL_UTIL_H
#define XRL_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

/*
 * Stop a worker thread thr that waits on cv under mu until *stop: *stop set
 * under mu, thr woken and joined. mu and cv stay the caller's to destroy.
 */
void xrl_thread_stop(pthread_mutex_t *mu, pthread_cond_t *cv, bool *stop, pthread_t thr);

/* CLOCK_MONOTONIC (the XDP program's clock) in ns. */
__u64 xrl_now_ns(void);

/*
 * FNV-1a, 64 bits, of n bytes at p: slot indices of xrld's own tables (not
 * for keys an attacker can choose to collide where that matters: those use
 * SipHash, in the identity tier).
 */
__u64 xrl_fnv1a64(const void *p, size_t n);

/*
 * The whole file at path into a new NUL-terminated buffer (*out, *len bytes
 * without the NUL). -EFBIG when it is longer than max bytes, -errno else.
 */
int xrl_read_all(const char *path, size_t max, char **out, size_t *len);

/*
 * Every key of a BPF map, as xdp-tools' FOR_EACH_MAP_KEY: key and prev are
 * variables of the map's key type, err an int (-1 with errno ENOENT at the
 * end). A key deleted during the walk may restart it (the kernel's rule).
 */
#define XRL_FOR_EACH_MAP_KEY(err, fd, key, prev) \
	for (err = bpf_map_get_next_key(fd, NULL, &(key)); !err; \
	     prev = key, err = bpf_map_get_next_key(fd, &(prev), &(key)))

/* A growing text buffer: out of memory sets oom, and later writes do nothing. */
struct xrl_buf {
	char *p;
	size_t len, cap;
	int oom;
};

void xrl_buf_printf(struct xrl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* n bytes as they are (no format string to parse). */
void xrl_buf_add(struct xrl_buf *b, const char *s, size_t n);
void xrl_buf_free(struct xrl_buf *b);

/* getopt_long options that xrld, xrlctl and xrl-load spell alike (the
 * program includes <getopt.h>). */
#define XRL_OPT_PIN_DIR { "pin-dir", required_argument, NULL, 'p' }
#define XRL_OPT_VERBOSE { "verbose", no_argument, NULL, 'v' }
#define XRL_OPT_HELP	{ "help", no_argument, NULL, 'h' }

#endif /* XRL_UTIL_H */
