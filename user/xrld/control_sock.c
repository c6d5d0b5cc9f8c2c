// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * control_sock.c - the control socket, xrlctl's way in: clients served
 * from the event loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/epoll.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "control_wire.h"
#include "log.h"
#include "xrld.h"

/* ---- control socket clients -------------------------------------------- */

#define CTL_CLIENTS	16		    /* control connections open at once */
#define CTL_ROOT_SLOTS	4		    /* of them, kept for root's */
#define CTL_DEADLINE_NS (2 * 1000000000ULL) /* to send the request; to take the answer */

/*
 * A control client, served from the event loop without blocking it: the
 * request is read as it arrives, handled when the client shuts down its
 * write side, and the answer written as the socket takes it. Each phase has
 * CTL_DEADLINE_NS in total, however the client dribbles its bytes, so no
 * client holds the loop or a slot for longer. The socket is root's (0600),
 * or, when a group XRL_READ_GROUP exists, 0660 and that group's: its members
 * read (status, stats, top, the lists) and every change stays root's
 * (xrld_handle), so the slots bound mistakes more than attacks.
 */
struct ctl_client {
	struct xrld *d;
	bool used;
	bool answering; /* the request was handled; writing hdr + out */
	int fd;
	char *buf; /* the request so far, not NUL-terminated */
	size_t len, cap;
	char hdr[16]; /* "<exit code>\n" */
	size_t hdr_len;
	struct xrl_buf out; /* the payload */
	size_t off;	    /* bytes of hdr + out written */
	__u64 deadline;	    /* CLOCK_MONOTONIC ns */
	struct ucred cred;  /* the caller (SO_PEERCRED); pid 0: unknown */
};

static struct ctl_client ctl_cl[CTL_CLIENTS];
static int ctl_listen_fd = -1;
static struct xrld_timer *ctl_timer; /* due at the earliest client deadline */
static __u64 ctl_timer_when;	     /* what it was set to; 0: not due */

/* A client's deadline was set: the timer is due by then. */
static void ctl_deadline(struct ctl_client *c, __u64 deadline)
{
	c->deadline = deadline;
	if (!ctl_timer_when || deadline < ctl_timer_when) {
		ctl_timer_when = deadline;
		xrld_timer_at(ctl_timer, deadline);
	}
}

static void ctl_close(struct ctl_client *c)
{
	xrld_fd_del(c->d->loop, c->fd);
	close(c->fd);
	free(c->buf);
	xrl_buf_free(&c->out);
	*c = (struct ctl_client){ .fd = -1 };
}

/* Write what the socket takes of hdr + out; close when all is out. */
static void ctl_write(struct ctl_client *c)
{
	size_t total = c->hdr_len + c->out.len;

	while (c->off < total) {
		struct iovec iov[2];
		int n = 0;
		ssize_t w;

		if (c->off < c->hdr_len)
			iov[n++] = (struct iovec){ c->hdr + c->off, c->hdr_len - c->off };
		if (c->out.len) {
			size_t o = c->off > c->hdr_len ? c->off - c->hdr_len : 0;

			iov[n++] = (struct iovec){ c->out.p + o, c->out.len - o };
		}
		w = writev(c->fd, iov, n);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (w <= 0)
			break;
		c->off += (size_t)w;
	}
	ctl_close(c);
}

/* The whole request is in: handle it and start the answer. */
static void ctl_answer(struct ctl_client *c)
{
	char *argv[XRL_CTL_MAXARGS + 1];
	int code, argc;

	if (xrl_ctl_decode(c->buf, c->len, &argc, argv)) {
		xrl_buf_printf(&c->out, "malformed request\n");
		code = 2;
	} else {
		code = xrld_handle(c->d, c->cred.pid ? &c->cred : NULL, argc, argv, &c->out);
	}
	if (c->out.oom)
		code = 1;
	c->hdr_len = (size_t)snprintf(c->hdr, sizeof(c->hdr), "%d\n", code);
	c->answering = true;
	ctl_deadline(c, xrl_now_ns() + CTL_DEADLINE_NS);
	if (xrld_fd_mod(c->d->loop, c->fd, EPOLLOUT)) {
		ctl_close(c);
		return;
	}
	ctl_write(c);
}

/* Read what has arrived; the client's shutdown (EOF) ends the request. */
static void ctl_read(struct ctl_client *c)
{
	for (;;) {
		ssize_t r;

		if (c->len == c->cap) {
			/* one byte past the limit tells a full request from a larger one */
			size_t cap = c->cap ? c->cap * 2 : 4096;
			char *np;

			if (c->len > XRL_CTL_MAX) {
				log_warnx("control client dropped: request larger than %d bytes",
					  XRL_CTL_MAX);
				ctl_close(c);
				return;
			}
			if (cap > XRL_CTL_MAX + 1)
				cap = XRL_CTL_MAX + 1;
			np = realloc(c->buf, cap);
			if (!np) {
				ctl_close(c);
				return;
			}
			c->buf = np;
			c->cap = cap;
		}
		r = read(c->fd, c->buf + c->len, c->cap - c->len);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r < 0) {
			ctl_close(c);
			return;
		}
		if (r == 0)
			break;
		c->len += (size_t)r;
	}
	ctl_answer(c);
}

/* The loop's handler of a client's socket. */
static void ctl_event(int fd, unsigned events, void *ctx)
{
	struct ctl_client *c = ctx;

	if (!c->used)
		return;
	if (c->answering)
		ctl_write(c);
	else
		ctl_read(c);
}

/* The loop's handler of the listening socket. */
static void ctl_accept(int lfd, unsigned events, void *ctx)
{
	struct xrld *d = ctx;
	static const char busy[] = "1\nxrld is busy: too many control connections, try again\n";
	int fd, i;

	struct ucred cred = { 0 };
	int others = 0;

	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	/* who asked, for the log of changes: the kernel's word, not the client's */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &(socklen_t){ sizeof(cred) }))
		cred = (struct ucred){ 0 };
	for (int k = 0; k < CTL_CLIENTS; k++)
		others += ctl_cl[k].used && ctl_cl[k].cred.uid != 0;
	for (i = 0; i < CTL_CLIENTS && ctl_cl[i].used; i++)
		;
	/* the read-only group shares what root does not keep: slow clients of
	 * that group never hold the slots root's deny add needs */
	if (i == CTL_CLIENTS || (cred.uid != 0 && others >= CTL_CLIENTS - CTL_ROOT_SLOTS)) {
		/* best effort: an empty socket buffer takes one line without blocking */
		if (write(fd, busy, sizeof(busy) - 1) < 0)
			log_debug("couldn't tell a control client that xrld is busy");
		close(fd);
		return;
	}
	ctl_cl[i] = (struct ctl_client){ .used = true, .fd = fd, .d = d, .cred = cred };
	ctl_deadline(&ctl_cl[i], xrl_now_ns() + CTL_DEADLINE_NS);
	if (xrld_fd_add(d->loop, fd, EPOLLIN, ctl_event, &ctl_cl[i])) {
		ctl_close(&ctl_cl[i]);
		return;
	}
	ctl_read(&ctl_cl[i]);
}

/* The timer's handler: clients past their deadline dropped, and the
 * timer due again at the earliest deadline left. */
static void ctl_expire(void *ctx)
{
	__u64 now = xrl_now_ns(), next = 0;

	for (int i = 0; i < CTL_CLIENTS; i++) {
		struct ctl_client *c = &ctl_cl[i];

		if (!c->used)
			continue;
		if (c->deadline <= now) {
			log_warnx("control client dropped: %s not done within %llu s",
				  c->answering ? "answer" : "request",
				  CTL_DEADLINE_NS / 1000000000ULL);
			ctl_close(c);
			continue;
		}
		if (!next || c->deadline < next)
			next = c->deadline;
	}
	ctl_timer_when = next;
	xrld_timer_at(ctl_timer, next);
}

/*
 * The new socket (made 0660 by bind under the umask) to XRL_READ_GROUP.
 * Under the unit xrld has no CAP_CHOWN, but an owner may give a file to a
 * group it is in, and CAP_SETGID (kept for the identity process) puts xrld
 * in it. lchown and fchmodat never follow a link put in the socket's place.
 * A failure leaves the socket root's (0600), said; it never stops the start.
 */
static int sock_group(const char *path, const struct group *g)
{
	gid_t gs[NGROUPS_MAX + 1];
	int rc, n;

	rc = lchown(path, (uid_t)-1, g->gr_gid);
	if (rc && errno == EPERM && (n = getgroups(NGROUPS_MAX, gs)) >= 0) {
		gs[n++] = g->gr_gid;
		rc = setgroups((size_t)n, gs) ? -1 : lchown(path, (uid_t)-1, g->gr_gid);
	}
	if (rc) {
		log_warn("control socket %s stays root's alone: couldn't give it to group %s", path,
			 XRL_READ_GROUP);
		return fchmodat(AT_FDCWD, path, 0600, AT_SYMLINK_NOFOLLOW);
	}
	log_info("control socket %s: members of group %s may read", path, XRL_READ_GROUP);
	return 0;
}

static int listen_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[PATH_MAX], *slash;
	const struct group *g;
	mode_t old;
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return -errno;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* someone answering there means another xrld: refuse to start */
	if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -EADDRINUSE;
	}
	unlink(path);
	/* the socket is made with its mode (bind under the umask), never
	 * chmod-ed by path: 0600 root's, or 0660 when the read-only group
	 * exists (then given to it) */
	g = getgrnam(XRL_READ_GROUP);
	old = umask(g ? 0117 : 0177);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (err || (g && sock_group(path, g)) || listen(fd, 16)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Listen on d->sock_path and serve clients from d's loop. */
int xrld_control_listen(struct xrld *d)
{
	int fd, err;

	ctl_timer = xrld_timer_add(d->loop, 0, ctl_expire, NULL);
	if (!ctl_timer)
		return -ENOMEM;
	fd = listen_socket(d->sock_path);
	if (fd < 0)
		return fd;
	err = xrld_fd_add(d->loop, fd, EPOLLIN, ctl_accept, d);
	if (err) {
		close(fd);
		return err;
	}
	ctl_listen_fd = fd;
	return 0;
}

void xrld_control_close(struct xrld *d)
{
	if (ctl_listen_fd >= 0)
		close(ctl_listen_fd);
	ctl_listen_fd = -1;
	unlink(d->sock_path);
}
