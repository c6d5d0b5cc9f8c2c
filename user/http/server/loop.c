// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * loop.c - the identity tier's event loops: one thread each, with its own
 * libmicrohttpd daemon (external epoll) and Redis pipe (http_tier.c's
 * opening comment, now server.c's, says why).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>
#include <openssl/evp.h>

#include "privs.h"
#include "http/http.h"
#include "log.h"
#include "report.h"
#include "server_int.h"

__thread struct xrl_srv_loop *xrl_srv_tl_loop;

static int loop_io_ctl(struct xrl_srv_loop *lp, int op, struct xrl_srv_io *io, unsigned events)
{
	struct epoll_event e = { .events = events, .data.ptr = io };

	return epoll_ctl(lp->ep, op, io->fd, &e) ? -errno : 0;
}

/* The pipe's fd in the loop's epoll, as it is now (a new connection is a
 * new fd; a closed one left the epoll set when it was closed). */
static void loop_pipe_reg(struct xrl_srv_loop *lp, int fd, short ev, __u32 gen)
{
	unsigned e = (ev & POLLIN ? EPOLLIN : 0u) | (ev & POLLOUT ? EPOLLOUT : 0u);
	bool same = fd == lp->pipe_io.fd && gen == lp->pipe_gen;

	if (same && ev == lp->pipe_ev)
		return;
	lp->pipe_io.fd = fd;
	if (fd >= 0) {
		if (same)
			loop_io_ctl(lp, EPOLL_CTL_MOD, &lp->pipe_io, e);
		else if (loop_io_ctl(lp, EPOLL_CTL_ADD, &lp->pipe_io, e) == -EEXIST)
			loop_io_ctl(lp, EPOLL_CTL_MOD, &lp->pipe_io, e);
	}
	lp->pipe_gen = gen;
	lp->pipe_ev = ev;
}

/* The daemon's epoll fd: libmicrohttpd has work (a connection, a request). */
static void on_mhd(struct xrl_srv_loop *lp, struct xrl_srv_io *io, unsigned events)
{
	lp->run_mhd = true;
}

/* stop_fd: xrl_srv_loops_stop wants the thread back; the pass ends at once. */
static void on_stop(struct xrl_srv_loop *lp, struct xrl_srv_io *io, unsigned events)
{
	lp->stop = true;
}

/* The Redis pipe's fd: its epoll events as poll events, for the pipe's run. */
static void on_pipe(struct xrl_srv_loop *lp, struct xrl_srv_io *io, unsigned events)
{
	lp->pipe_rev =
		(short)((events & EPOLLIN ? POLLIN : 0) | (events & EPOLLOUT ? POLLOUT : 0) |
			(events & EPOLLERR ? POLLERR : 0) | (events & EPOLLHUP ? POLLHUP : 0));
}

void *xrl_srv_loop_main(void *arg)
{
	struct xrl_srv_loop *lp = arg;
	struct epoll_event ev[8];
	sigset_t all;

	/* signals are for the main thread */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	xrl_srv_tl_loop = lp;
	/* this thread parses what clients send: no capability, no bpf() */
	prctl(PR_SET_NAME, "xrld-http", 0, 0, 0);
	if (xrl_thread_confine())
		log_warnx(
			"couldn't confine an identity-tier thread (seccomp): it runs with xrld's privileges");
	lp->run_mhd = true;
	lp->stop = false;
	for (;;) {
		MHD_UNSIGNED_LONG_LONG mto;
		__u64 pto;
		short pev = 0;
		__u32 gen;
		int fd, n, cto, ms = -1;

		if (lp->run_mhd)
			MHD_run(lp->d);
		/* every ready connection is served: what they queued for Redis
		 * goes out now, if the pipe is free (else with the next batch).
		 * Decided at once (the breaker is open): answer them first */
		lp->run_mhd = xrl_limiter_pipe_run(lp->pipe, 0) > 0;
		if (lp->run_mhd)
			continue;
		fd = xrl_limiter_pipe_poll(lp->pipe, &pev, &pto, &gen);
		loop_pipe_reg(lp, fd, pev, gen);
		if (MHD_get_timeout(lp->d, &mto) == MHD_YES)
			ms = mto > INT_MAX ? INT_MAX : (int)mto;
		/* heads past their deadline, room when full (conn.c) */
		cto = xrl_srv_conn_tick(lp);
		if (cto >= 0 && (ms < 0 || cto < ms))
			ms = cto;
		if (lp->run_soon) {
			lp->run_soon = false;
			ms = 0;
		}
		/* "now" is (also) the handlers waiting for Redis: within 1 ms */
		if (ms == 0 && lp->waiting > 0)
			ms = 1;
		if (pto != UINT64_MAX) {
			__u64 pms = (pto + 999999) / 1000000;

			if (ms < 0 || pms < (__u64)ms)
				ms = (int)pms;
		}
		n = epoll_wait(lp->ep, ev, 8, ms);
		lp->run_mhd = n <= 0; /* a timeout: libmicrohttpd's idle connections */
		lp->pipe_rev = 0;
		for (int i = 0; i < n; i++) {
			struct xrl_srv_io *io = ev[i].data.ptr;

			io->fn(lp, io, ev[i].events);
		}
		if (lp->stop)
			break;
		/* replies, or the batch's timeout: libmicrohttpd's next pass
		 * answers the decided */
		if ((lp->pipe_rev || pto != UINT64_MAX) &&
		    xrl_limiter_pipe_run(lp->pipe, lp->pipe_rev) > 0)
			lp->run_mhd = true;
	}
	/* whatever still waits for Redis falls back (the daemon closes
	 * those connections as it stops) */
	xrl_limiter_pipe_abort(lp->pipe);
	xrl_srv_refusal_drop();
	return NULL;
}

void xrl_srv_loops_stop(struct xrl_http_server *s)
{
	for (unsigned i = 0; i < s->n_loops; i++) {
		__u64 one = 1;

		if (s->loops[i].started &&
		    write(s->loops[i].stop_fd, &one, sizeof(one)) != sizeof(one))
			log_warnx("http: couldn't stop server thread %u", i);
	}
	for (unsigned i = 0; i < s->n_loops; i++)
		if (s->loops[i].started)
			pthread_join(s->loops[i].thr, NULL);
	/* the others share the first one's listening socket: only it closes it */
	for (unsigned i = s->n_loops; i-- > 0;) {
		struct xrl_srv_loop *lp = &s->loops[i];

		if (lp->d) {
			if (i > 0)
				MHD_quiesce_daemon(lp->d);
			MHD_stop_daemon(lp->d);
		}
		xrl_limiter_pipe_free(lp->pipe);
		if (lp->ep >= 0)
			close(lp->ep);
		if (lp->stop_fd >= 0)
			close(lp->stop_fd);
	}
	free(s->loops);
	s->loops = NULL;
	s->n_loops = 0;
}

/* The loop's epoll set: its daemon's epoll fd, its stop eventfd; its pipe. */
int xrl_srv_loop_init(struct xrl_srv_loop *lp)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_EPOLL_FD);
	int rc;

	lp->ep = epoll_create1(EPOLL_CLOEXEC);
	lp->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	lp->pipe = xrl_limiter_pipe_new(lp->s->lim);
	if (!di || lp->ep < 0 || lp->stop_fd < 0 || !lp->pipe)
		return -ENOMEM;
	lp->mhd_io = (struct xrl_srv_io){ .fd = di->epoll_fd, .fn = on_mhd };
	di = MHD_get_daemon_info(lp->d, MHD_DAEMON_INFO_LISTEN_FD);
	lp->lfd = di ? di->listen_fd : -1; /* its backlog: conn.c's room when full */
	lp->stop_io = (struct xrl_srv_io){ .fd = lp->stop_fd, .fn = on_stop };
	lp->pipe_io = (struct xrl_srv_io){ .fd = -1, .fn = on_pipe };
	rc = loop_io_ctl(lp, EPOLL_CTL_ADD, &lp->mhd_io, EPOLLIN);
	return rc ? rc : loop_io_ctl(lp, EPOLL_CTL_ADD, &lp->stop_io, EPOLLIN);
}
