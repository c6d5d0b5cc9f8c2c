/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * control_wire.h - the xrld control socket's wire format, shared by xrld and
 * xrlctl.
 *
 * Request:  "XRL1 <argc>\n" then, per argument, "<len>\n<len bytes>".
 *           The client then shuts down its write side.
 * Response: "<exit code>\n<payload>" and the server closes. The exit code is
 *           what xrlctl exits with (0 ok, 1 error, 2 usage); the payload is
 *           printed to stdout on 0 and to stderr otherwise.
 * Requests are capped at XRL_CTL_MAX bytes (a policy file travels inside).
 */
#ifndef XRL_CONTROL_WIRE_H
#define XRL_CONTROL_WIRE_H

#include <stddef.h>

#include "util.h"

#define XRL_CTL_MAX	   (1 << 20)
#define XRL_CTL_MAXARGS	   64
#define XRL_SOCKET_DEFAULT "/run/xrl/xrld.sock"
/* The group whose members may read through xrld's socket (changes stay root's). */
#define XRL_READ_GROUP "xrl"

/* The getopt_long options xrld and xrlctl share, spelled once: where the
 * socket and the pins are, help and version (short names s, p, h, V). */
#define XRL_CTL_LONGOPTS                                                         \
	{ "socket", required_argument, NULL, 's' }, XRL_OPT_PIN_DIR, XRL_OPT_HELP, \
		{ "version", no_argument, NULL, 'V' }

/* Encode argv into a newly allocated request; returns its length or -errno. */
long xrl_ctl_encode(int argc, const char *const *argv, char **out);
/* Decode in place (buf is modified: arguments become NUL-terminated). Reads
 * only [buf, buf + len): buf need not be NUL-terminated. 0 or -EPROTO. */
int xrl_ctl_decode(char *buf, size_t len, int *argc, char **argv);
/* Connect, send, read the whole answer. Returns the exit code, or -errno
 * when xrld cannot be reached. *payload is malloc'd and NUL-terminated. */
int xrl_ctl_call(const char *sock, int argc, const char *const *argv, char **payload,
		 int timeout_ms);

#endif /* XRL_CONTROL_WIRE_H */
