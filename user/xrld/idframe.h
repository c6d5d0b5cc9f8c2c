/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * idframe.h - the frames of the calls socket between xrld and the identity
 * process (idproc.h says what they carry): a __u32 length of the JSON, a
 * __u32 length of the payload, the JSON, the payload.
 */
#ifndef XRLD_IDFRAME_H
#define XRLD_IDFRAME_H

#include <stddef.h>

#include <linux/types.h>

/* The largest frame either side takes (a policy is 1 MiB at most; a top,
 * a penalties list or the metrics text far less). */
#define XRL_IDP_FRAME_MAX (4u << 20)

/* Frames on fd, whole, by deadline (CLOCK_MONOTONIC ns; 0: blocking). 0 or
 * -errno (-EPIPE: the other side is gone, -ETIMEDOUT). */
int xrl_idp_send(int fd, const char *json, size_t jlen, const void *payload, size_t plen,
		 __u64 deadline);
/* One frame of at most max bytes; *json and *payload malloc'd and
 * NUL-terminated (free both). */
int xrl_idp_recv(int fd, char **json, size_t *jlen, char **payload, size_t *plen, size_t max,
		 __u64 deadline);

#endif /* XRLD_IDFRAME_H */
