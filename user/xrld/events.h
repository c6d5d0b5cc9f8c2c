/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * events.h - xrld's event loop, on redis ae.c's model: each part registers
 * its own descriptors (the epoll events it waits for, a handler and its
 * context) and its own timers (a period, a handler and its context), and
 * the loop calls what it stored. Nothing here knows the daemon's parts.
 * One thread: every call below is made from the loop's own thread.
 */
#ifndef XRLD_EVENTS_H
#define XRLD_EVENTS_H

#include <linux/types.h>

struct xrld_loop;
struct xrld_timer;

/* fd is ready: events is what epoll said (EPOLLIN, EPOLLOUT, EPOLLHUP...). */
typedef void xrld_fd_fn(int fd, unsigned events, void *ctx);
typedef void xrld_timer_fn(void *ctx);

/* A loop whose periodic timers count their periods from now. NULL: errno. */
struct xrld_loop *xrld_loop_new(void);

/* Wait on fd for events (epoll's EPOLLIN, EPOLLOUT, EPOLLRDHUP), calling
 * fn(fd, events, ctx). 0 or -errno. One handler per fd. */
int xrld_fd_add(struct xrld_loop *l, int fd, unsigned events, xrld_fd_fn *fn, void *ctx);
/* The same handler, other events. 0 or -errno. */
int xrld_fd_mod(struct xrld_loop *l, int fd, unsigned events);
/* Before fd is closed. A handler deleted while the loop dispatches a round
 * is not called for what that round still holds of its fd (nor is a new
 * handler of a reused fd number). */
void xrld_fd_del(struct xrld_loop *l, int fd);

/*
 * A timer: every period_ns, at the loop's birth + k * period_ns, as a
 * timerfd with that interval would fire (a late round runs it once, not
 * once per period missed); period_ns 0: when armed, once. Timers due in
 * the same round run in the order they were added. NULL: out of memory.
 */
struct xrld_timer *xrld_timer_add(struct xrld_loop *l, __u64 period_ns, xrld_timer_fn *fn,
				  void *ctx);
/* A one-shot timer due at when_ns (CLOCK_MONOTONIC); 0: not due at all. */
void xrld_timer_at(struct xrld_timer *t, __u64 when_ns);

/* Run until *stop is set (by a handler); -errno if epoll fails. */
int xrld_loop_run(struct xrld_loop *l, volatile int *stop);

#endif /* XRLD_EVENTS_H */
