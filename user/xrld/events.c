// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * events.c - xrld's event loop (redis ae.c's model): descriptors and timers
 * registered by their owners, one epoll set, and the timers' deadlines as
 * its timeout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "events.h"
#include "util.h"

/* What the loop stored for one fd: its handler, and the generation that
 * tells this registration's events from those of an fd deleted since. */
struct fd_slot {
	xrld_fd_fn *fn; /* NULL: nothing registered */
	void *ctx;
	__u32 gen;
};

struct xrld_timer {
	__u64 when;   /* CLOCK_MONOTONIC ns; 0: not due */
	__u64 period; /* ns; 0: one-shot */
	xrld_timer_fn *fn;
	void *ctx;
};

struct xrld_loop {
	int epfd;
	__u64 birth; /* periodic timers count their periods from here */
	struct fd_slot *fds;
	int n_fds; /* fds[] slots, indexed by fd */
	struct xrld_timer **timers;
	int n_timers; /* in the order they were added */
};

struct xrld_loop *xrld_loop_new(void)
{
	struct xrld_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		int err = errno;

		free(l);
		errno = err;
		return NULL;
	}
	l->birth = xrl_now_ns();
	return l;
}

/* epoll's data: the fd, and its slot's generation above it. */
static __u64 fd_tag(const struct xrld_loop *l, int fd)
{
	return (__u64)l->fds[fd].gen << 32 | (__u32)fd;
}

int xrld_fd_add(struct xrld_loop *l, int fd, unsigned events, xrld_fd_fn *fn, void *ctx)
{
	struct epoll_event ev = { .events = events };

	if (fd < 0)
		return -EBADF;
	if (fd >= l->n_fds) {
		int n = l->n_fds ? l->n_fds : 64;
		struct fd_slot *s;

		while (n <= fd)
			n *= 2;
		s = realloc(l->fds, (size_t)n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s + l->n_fds, 0, (size_t)(n - l->n_fds) * sizeof(*s));
		l->fds = s;
		l->n_fds = n;
	}
	l->fds[fd].gen++;
	ev.data.u64 = fd_tag(l, fd);
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev))
		return -errno;
	l->fds[fd].fn = fn;
	l->fds[fd].ctx = ctx;
	return 0;
}

int xrld_fd_mod(struct xrld_loop *l, int fd, unsigned events)
{
	struct epoll_event ev = { .events = events };

	if (fd < 0 || fd >= l->n_fds || !l->fds[fd].fn)
		return -ENOENT;
	ev.data.u64 = fd_tag(l, fd);
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) ? -errno : 0;
}

void xrld_fd_del(struct xrld_loop *l, int fd)
{
	if (fd < 0 || fd >= l->n_fds || !l->fds[fd].fn)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->fds[fd].fn = NULL;
	l->fds[fd].gen++;
}

/* The first due time of a period after now: birth + k * period. */
static __u64 next_due(const struct xrld_loop *l, __u64 period, __u64 now)
{
	return l->birth + ((now - l->birth) / period + 1) * period;
}

struct xrld_timer *xrld_timer_add(struct xrld_loop *l, __u64 period_ns, xrld_timer_fn *fn,
				  void *ctx)
{
	struct xrld_timer *t = calloc(1, sizeof(*t)), **ts;

	if (!t)
		return NULL;
	ts = realloc(l->timers, (size_t)(l->n_timers + 1) * sizeof(*ts));
	if (!ts) {
		free(t);
		return NULL;
	}
	*t = (struct xrld_timer){ .period = period_ns, .fn = fn, .ctx = ctx };
	if (period_ns)
		t->when = next_due(l, period_ns, xrl_now_ns());
	l->timers = ts;
	l->timers[l->n_timers++] = t;
	return t;
}

void xrld_timer_at(struct xrld_timer *t, __u64 when_ns)
{
	t->when = when_ns;
}

/*
 * Run the timers that are due, in the order they were added, each once
 * however late; then the epoll timeout (ms, rounded up so the loop does
 * not wake just before a deadline) until the next one, -1 for none.
 */
static int run_timers(struct xrld_loop *l)
{
	__u64 now = xrl_now_ns(), next = 0;

	for (int i = 0; i < l->n_timers; i++) {
		struct xrld_timer *t = l->timers[i];

		if (!t->when || t->when > now)
			continue;
		/* rescheduled first: a one-shot's handler may arm it again */
		t->when = t->period ? next_due(l, t->period, now) : 0;
		t->fn(t->ctx);
	}
	now = xrl_now_ns();
	for (int i = 0; i < l->n_timers; i++) {
		__u64 w = l->timers[i]->when;

		if (w && (!next || w < next))
			next = w;
	}
	if (!next)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

/*
 * The loop. Cost per round: one walk of the timers (a handful, so a list
 * in the order added, not a heap: O(timers)), one epoll_wait for at most
 * 16 ready fds, and per ready fd one array index (the fd), a generation
 * compare and an indirect call. No allocation unless a handler adds an fd
 * past the table's end (it doubles). A handler that blocks holds every
 * other one: handlers read and write without blocking, and bound their
 * own work per call.
 */
int xrld_loop_run(struct xrld_loop *l, volatile int *stop)
{
	while (!*stop) {
		struct epoll_event evs[16];
		int n = epoll_wait(l->epfd, evs, 16, run_timers(l));

		if (n < 0 && errno != EINTR)
			return -errno;
		for (int i = 0; i < n; i++) {
			int fd = (int)(__u32)evs[i].data.u64;
			__u32 gen = (__u32)(evs[i].data.u64 >> 32);

			/* deleted (perhaps added again) by an earlier handler of this round */
			if (fd >= l->n_fds || !l->fds[fd].fn || l->fds[fd].gen != gen)
				continue;
			l->fds[fd].fn(fd, evs[i].events, l->fds[fd].ctx);
		}
	}
	return 0;
}
