// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * notify.c - systemd's readiness protocol (sd_notify(3)) by hand, without
 * libsystemd: one datagram of "KEY=VALUE" lines to the unix socket named
 * by $NOTIFY_SOCKET. Under Type=notify, systemctl start returns once xrld
 * says READY=1 (after every interface is attached), and a reload is framed
 * by RELOADING=1 and READY=1, so `systemctl reload` waits for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "xrld.h"

int xrld_notify(const char *fmt, ...)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t salen;
	char msg[512];
	va_list ap;
	size_t n;
	int fd, err = 0;

	if (!path || !path[0])
		return 0; /* not started by systemd (or not as Type=notify) */
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path))
		return -EINVAL;
	memcpy(sa.sun_path, path, n);
	/* "@name" is the abstract name "\0name": its length counts, no NUL */
	if (path[0] == '@')
		sa.sun_path[0] = '\0';
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (path[0] == '/'));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		err = -errno;
	close(fd);
	if (err)
		log_warnx("couldn't tell systemd \"%.*s\": %s", (int)strcspn(msg, "\n"), msg,
			  strerror(-err));
	return err;
}

/*
 * xrld_reload framed for systemd: RELOADING=1 with MONOTONIC_USEC (systemd
 * 253 wants the time of the reload's start, to tell this reload from an
 * older one; earlier versions ignore it), then READY=1 whether the new
 * policy was taken or refused: either way a policy is in force, and STATUS
 * says which.
 */
int xrld_reload_notified(struct xrld *d, const char *text, size_t len, const char *name, char *err,
			 size_t errlen)
{
	int rc;

	xrld_notify("RELOADING=1\nMONOTONIC_USEC=%llu\nSTATUS=reloading %s",
		    (unsigned long long)(xrl_now_ns() / 1000), name);
	rc = xrld_reload(d, text, len, name, err, errlen);
	if (rc)
		xrld_notify("READY=1\nSTATUS=reload of %s refused, the running policy stays: %.300s",
			    name, err);
	else
		xrld_notify("READY=1\nSTATUS=enforcing the policy from %s on %d interface(s)", name,
			    d->n_ifs);
	return rc;
}
