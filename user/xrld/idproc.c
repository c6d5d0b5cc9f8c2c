// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * idproc.c - xrld's side of the wall (idproc.h): it starts the identity
 * process, restarts it when it dies, makes the calls the control verbs and
 * the metrics need, and takes the child's events (vouches, fleet entries)
 * on the main loop, where they are checked and written to the maps.
 *
 * The listening socket is xrld's: a child that dies leaves it open, so
 * connections made while the next one starts wait in its backlog instead
 * of being refused. The child is exec'd from xrld's own binary as the
 * user `xrl` where there is one (else `nobody`), with no capability (a
 * non-root uid keeps none across exec, and no_new_privs is set), and only
 * descriptors 0-2 and the three of idproc.h.
 *
 * What a restart loses: buckets and penalties held in process memory (a
 * Redis backend keeps them), and the fleet's connection (it re-reads the
 * fleet's hash). The packet tier never waits for the child.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "http/http.h"
#include "idproc.h"
#include "log.h"
#include "xrld.h"

#define CALL_TIMEOUT_MS	 2000
#define START_TIMEOUT_MS 5000
#define EVENTS_PER_WAKE	 1024
#define METRICS_MAX	 (1u << 20) /* the child's metrics text, at most */

/*
 * Lives from the first start to xrld's exit (a reload that drops the
 * sections stops the child and keeps this), so the metrics thread may use
 * it without d->lock. mu orders the calls and guards call_fd and the
 * pidfd: a signal goes through the pidfd of the child it was meant for,
 * never to a pid that may have been reused.
 */
struct xrld_idp {
	pthread_mutex_t mu; /* one call at a time (main loop, metrics thread) */
	pid_t pid;	    /* 0: not running */
	int call_fd;
	struct xrld *d;
	int ev_fd;  /* the events socket */
	int pid_fd; /* pidfd: readable when the child exits */
	xrld_idev_fn *take[XRL_IDEV_ALIVE + 1]; /* who takes each type of event */
	bool off;	       /* the policy runs no child (sections gone) */
	int listen_fd;	       /* -1: no http: section */
	uid_t uid;
	gid_t gid;
	char user[32];
	bool stopping;
	char *text; /* the policy in force, as the child parses it */
	size_t len;
	__u64 started_ns;      /* of the running child */
	__u64 alive_ns;	       /* its last ALIVE (or its start) */
	__u64 respawn_ns;      /* down: start again at (0: at once) */
	unsigned quick_deaths; /* in a row, each within 2 s of its start */
	__u64 restarts, events, events_bad, calls_failed, metrics_dropped;
};

/* SIGKILL through the child's pidfd (mu held); xrld keeps CAP_KILL for it,
 * as the child runs as another uid. */
static void kill_child(struct xrld_idp *p)
{
	if (p->pid_fd >= 0 && syscall(SYS_pidfd_send_signal, p->pid_fd, SIGKILL, NULL, 0) &&
	    errno != ESRCH)
		log_warn("couldn't stop the identity process %d", (int)p->pid);
}

/* The uid the child runs as: xrl's own user, else nobody. */
static void pick_user(struct xrld_idp *p)
{
	static const char *const names[] = { "xrl", "nobody" };
	struct passwd *pw = NULL;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !pw; i++)
		pw = getpwnam(names[i]);
	p->uid = pw ? pw->pw_uid : 65534;
	p->gid = pw ? pw->pw_gid : 65534;
	snprintf(p->user, sizeof(p->user), "%s", pw ? pw->pw_name : "65534");
}

bool xrld_idp_user(const struct xrld *d, const struct ucred *who)
{
	/* its pid whatever uid it runs as (an xrld not started as root keeps
	 * its own for the child), and its user when xrld gave it one */
	return d->idp && ((d->idp->pid && who->pid == d->idp->pid) ||
			  (!geteuid() && who->uid && d->idp->uid == who->uid));
}

/* The child's sockets and pidfd closed (it is reaped, or is to be). */
static void child_gone(struct xrld *d, struct xrld_idp *p)
{
	if (p->ev_fd >= 0) {
		xrld_fd_del(d->loop, p->ev_fd);
		close(p->ev_fd);
		p->ev_fd = -1;
	}
	pthread_mutex_lock(&p->mu);
	if (p->pid_fd >= 0) {
		xrld_fd_del(d->loop, p->pid_fd);
		close(p->pid_fd);
		p->pid_fd = -1;
	}
	if (p->call_fd >= 0)
		close(p->call_fd);
	p->call_fd = -1;
	p->pid = 0;
	pthread_mutex_unlock(&p->mu);
}

/* Has the child behind the pidfd exited? Reaped if so; *st its status. */
static bool reaped(struct xrld_idp *p, int *st)
{
	siginfo_t si = { 0 };

	if (p->pid_fd < 0)
		return true;
	if (waitid(P_PIDFD, (id_t)p->pid_fd, &si, WEXITED | WNOHANG))
		return errno == ECHILD; /* reaped already */
	if (!si.si_pid)
		return false; /* running: errno is not this call's */
	if (st)
		*st = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8 : si.si_status & 0x7f;
	return true;
}

/* Wait up to ms for the child to exit (it was told to, or killed). */
static bool reaped_within(struct xrld_idp *p, int ms, int *st)
{
	struct pollfd pfd = { .fd = p->pid_fd, .events = POLLIN };
	__u64 until = xrl_now_ns() + (__u64)ms * 1000000;

	while (!reaped(p, st)) {
		__u64 now = xrl_now_ns();

		if (now >= until)
			return false;
		poll(&pfd, 1, (int)((until - now) / 1000000) + 1);
	}
	return true;
}

/* A call on the child's socket (p->mu held): its result, or NULL with err. */
static json_t *call_locked(struct xrld_idp *p, const char *json, const char *payload, size_t plen,
			   unsigned timeout_ms, int *rc, char *err, size_t errlen)
{
	char *aj = NULL, *ap = NULL;
	size_t al, apl;
	json_error_t je;
	json_t *a, *r;

	if (p->call_fd < 0) {
		*rc = -ESRCH;
		snprintf(err, errlen, "the identity process is restarting");
		return NULL;
	}
	{
		/* the whole call by one deadline: a child that trickles its
		 * answer a byte at a time is as wedged as a silent one */
		__u64 until = xrl_now_ns() + (__u64)timeout_ms * 1000000;

		*rc = xrl_idp_send(p->call_fd, json, strlen(json), payload, plen, until);
		if (!*rc)
			*rc = xrl_idp_recv(p->call_fd, &aj, &al, &ap, &apl, XRL_IDP_FRAME_MAX,
					   until);
	}
	if (*rc) {
		/* a child that does not answer within the timeout is wedged:
		 * it goes, and the loop starts another */
		snprintf(err, errlen, "the identity process did not answer (%s): it is restarted",
			 strerror(-*rc));
		COUNT(p->calls_failed);
		kill_child(p);
		close(p->call_fd);
		p->call_fd = -1;
		free(aj);
		free(ap);
		*rc = -ESRCH;
		return NULL;
	}
	a = json_loadb(aj, al, 0, &je);
	free(aj);
	free(ap);
	if (!json_is_object(a)) {
		json_decref(a);
		*rc = -EBADMSG;
		snprintf(err, errlen, "the identity process answered garbage");
		return NULL;
	}
	if (json_object_get(a, "errno")) {
		json_int_t e = json_integer_value(json_object_get(a, "errno"));
		const char *why = json_string_value(json_object_get(a, "err"));

		*rc = e > 0 && e < 4096 ? -(int)e : -EIO;
		snprintf(err, errlen, "%s", why ? why : strerror(-*rc));
		json_decref(a);
		return NULL;
	}
	r = json_incref(json_object_get(a, "r"));
	json_decref(a);
	*rc = 0;
	return r ? r : json_null();
}

/*
 * A start or reload call's JSON for policy c: the op, and the caller secret
 * xrld read from http.caller_secret_file (the child runs as another user
 * and does not read it). Malloc'd; wipe it once sent.
 */
static char *op_json(const char *op, const struct xrld_config *c)
{
	json_t *q = c->has_http && c->http.caller_secret_len
			    ? json_pack("{s:s,s:s%}", "op", op, "caller_secret",
					c->http.caller_secret, (size_t)c->http.caller_secret_len)
			    : json_pack("{s:s}", "op", op);
	char *j = q ? json_dumps(q, JSON_COMPACT) : NULL;

	json_decref(q);
	return j;
}

/* A reload call (op_json's): like xrld_idp_call, the JSON wiped once sent. */
static json_t *reload_call(struct xrld *d, const char *op, const struct xrld_config *c,
			   const char *text, size_t len, int *rc, char *err, size_t errlen)
{
	struct xrld_idp *p = d->idp;
	char *j;
	json_t *r;

	if (!p) {
		*rc = -ENOENT;
		snprintf(err, errlen, "the identity tier is not configured (no http: section)");
		return NULL;
	}
	if (!(j = op_json(op, c))) {
		*rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&p->mu);
	r = call_locked(p, j, text, len, CALL_TIMEOUT_MS, rc, err, errlen);
	pthread_mutex_unlock(&p->mu);
	explicit_bzero(j, strlen(j));
	free(j);
	return r;
}

json_t *xrld_idp_call(struct xrld *d, json_t *q, const char *payload, size_t plen, int *rc,
		      char *err, size_t errlen)
{
	/* the main loop or the metrics thread */
	struct xrld_idp *p = __atomic_load_n(&d->idp, __ATOMIC_ACQUIRE);
	char *j;
	json_t *r;
	int rc0;

	if (!rc)
		rc = &rc0;
	if (!p) {
		json_decref(q);
		*rc = -ENOENT;
		snprintf(err, errlen, "the identity tier is not configured (no http: section)");
		return NULL;
	}
	j = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	if (!j) {
		*rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_lock(&p->mu);
	r = call_locked(p, j, payload, plen, CALL_TIMEOUT_MS, rc, err, errlen);
	pthread_mutex_unlock(&p->mu);
	free(j);
	return r;
}

/* ---- events ------------------------------------------------------------------ */

/* A vouch from the child: an address of a family, a ttl within a day. */
static bool vouch_ok(const struct xrl_idev *e)
{
	const struct xrl_prefix *a = &e->vouch.p;

	/* a ttl of 0 would be a vouch for ever */
	if (e->vouch.ttl_ns < XRL_NSEC_PER_SEC || e->vouch.ttl_ns > 86400 * XRL_NSEC_PER_SEC)
		return false;
	if (a->family == XRL_AF_INET)
		return a->plen <= 32;
	if (a->family == XRL_AF_INET6)
		return a->plen <= 128;
	return false;
}

static void on_events(int fd, unsigned events, void *ctx)
{
	struct xrld_idp *p = ctx;
	struct xrld *d = p->d;

	for (int i = 0; i < EVENTS_PER_WAKE; i++) {
		struct xrl_idev e;
		ssize_t n = recv(fd, &e, sizeof(e), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (!n && !(events & (EPOLLHUP | EPOLLRDHUP))) {
			COUNT(p->events_bad); /* an empty message, not the end */
			continue;
		}
		if (n <= 0) {
			/* the child is gone; its pidfd says so too */
			xrld_fd_del(d->loop, fd);
			close(fd);
			p->ev_fd = -1;
			return;
		}
		COUNT(p->events);
		if (n != sizeof(e)) {
			COUNT(p->events_bad);
			continue;
		}
		if (e.type == XRL_IDEV_ALIVE) {
			p->alive_ns = xrl_now_ns();
		} else if ((e.type == XRL_IDEV_VOUCH && vouch_ok(&e)) ||
			   (e.type == XRL_IDEV_FLEET && e.fleet.kind == XRL_FLEET_DENY &&
			    e.fleet.op <= XRL_FLEET_PEER)) {
			if (e.type == XRL_IDEV_FLEET)
				e.fleet.field[sizeof(e.fleet.field) - 1] = 0;
			/* checked: to its taker (none: this xrld does not take it) */
			if (p->take[e.type])
				p->take[e.type](d, &e);
		} else {
			COUNT(p->events_bad);
			log_agg(XRL_LOG_WARN, "idp: event", "bad events from the identity process",
				"the identity process sent an event xrld does not take (type %u)",
				e.type);
		}
	}
}

/* ---- the child's life ---------------------------------------------------------- */

static int spawn(struct xrld *d, struct xrld_idp *p, char *err, size_t errlen);
static void replay_shadows(struct xrld *d);

static void on_exit_child(int fd, unsigned events, void *ctx)
{
	struct xrld_idp *p = ctx;
	struct xrld *d = p->d;
	__u64 now = xrl_now_ns(), ran = now - p->started_ns;
	char err[XRL_ERRLEN];
	int st = 0;

	/* the pidfd of the child this handler watches: an event left over
	 * from one reaped before finds the new child running, and returns */
	if (fd != p->pid_fd || !reaped(p, &st))
		return;
	child_gone(d, p);
	if (p->stopping)
		return;
	COUNT(p->restarts);
	if (WIFSIGNALED(st))
		log_warnx("the identity process died (signal %d) after %.1f s: restarting it; "
			  "the packet tier never stopped",
			  WTERMSIG(st), (double)ran / 1e9);
	else
		log_warnx("the identity process exited (status %d) after %.1f s: restarting it",
			  WEXITSTATUS(st), (double)ran / 1e9);
	/* at once the first time; a child that keeps dying young waits
	 * 1, 2, 4 ... 30 s (a crash loop must not spin xrld) */
	p->quick_deaths = ran < 2 * XRL_NSEC_PER_SEC ? p->quick_deaths + 1 : 0;
	if (p->quick_deaths > 1) {
		unsigned s = 1u << (p->quick_deaths - 2 < 5 ? p->quick_deaths - 2 : 5);

		p->respawn_ns = now + (__u64)(s > 30 ? 30 : s) * XRL_NSEC_PER_SEC;
		return;
	}
	if (spawn(d, p, err, sizeof(err)))
		log_err("couldn't restart the identity process: %s (trying again in 1 s)", err);
}

/* Once a second: a child that is down and due is started. */
static void idp_tick(void *ctx)
{
	struct xrld *d = ctx;
	struct xrld_idp *p = d->idp;
	char err[XRL_ERRLEN];

	if (!p || p->off || p->stopping)
		return;
	if (p->pid) {
		/* stopped (SIGSTOP from another process of its uid) or
		 * wedged: no ALIVE for XRL_IDP_DEAD_MS, and it goes */
		if (xrl_now_ns() - p->alive_ns > XRL_IDP_DEAD_MS * 1000000ULL) {
			log_warnx("the identity process %d sent no sign of life for %d ms: "
				  "killing it",
				  (int)p->pid, XRL_IDP_DEAD_MS);
			p->alive_ns = xrl_now_ns();
			pthread_mutex_lock(&p->mu);
			kill_child(p);
			pthread_mutex_unlock(&p->mu);
		}
		return;
	}
	if (xrl_now_ns() < p->respawn_ns)
		return;
	if (spawn(d, p, err, sizeof(err))) {
		log_err("couldn't restart the identity process: %s (trying again in 1 s)", err);
		p->respawn_ns = xrl_now_ns() + XRL_NSEC_PER_SEC;
	}
}

/* fd to a number >= 10 that is not one of the child's (dup2 onto 3-5
 * must not find its own source there). */
static int high(int fd)
{
	int h = fcntl(fd, F_DUPFD_CLOEXEC, 10);

	close(fd);
	return h;
}

/* After fork, in the child: async-signal-safe calls only, until exec. */
static __attribute__((noreturn)) void exec_child(const struct xrld_idp *p, int call, int ev,
						 int lfd, char *const *argv, bool root)
{
	sigset_t none;
	int null;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* a session of its own: no terminal of xrld's to type into */
	setsid();
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null < 0 || dup2(null, 0) < 0 || dup2(call, XRL_IDP_FD_CALL) < 0 ||
	    dup2(ev, XRL_IDP_FD_EVENT) < 0 ||
	    (lfd >= 0 ? dup2(lfd, XRL_IDP_FD_LISTEN) < 0 : close(XRL_IDP_FD_LISTEN) < -1))
		_exit(126);
	if (syscall(SYS_close_range, XRL_IDP_FD_LISTEN + 1, ~0U, 0))
		for (int fd = XRL_IDP_FD_LISTEN + 1; fd < 65536; fd++)
			close(fd);
	if (root && (setgroups(0, NULL) || setresgid(p->gid, p->gid, p->gid) ||
		     setresuid(p->uid, p->uid, p->uid)))
		_exit(125);
	execv("/proc/self/exe", argv);
	_exit(127);
}

/* The start call (p->mu held): the policy, with the caller secret as xrld
 * read it (the child's user may not read http.caller_secret_file). */
static json_t *start_call(struct xrld *d, struct xrld_idp *p, int *rc, char *err, size_t errlen)
{
	char *q = op_json("start", d->cfg);
	json_t *a;

	if (!q) {
		*rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	a = call_locked(p, q, p->text, p->len, START_TIMEOUT_MS, rc, err, errlen);
	explicit_bzero(q, strlen(q));
	free(q);
	return a;
}

/* The child's ends (>= 10, see high) and xrld's: call and events sockets,
 * a copy of the listening socket. 0, or -errno with err (what was made is
 * left in the arrays for the caller to close). */
static int child_fds(struct xrld_idp *p, int call[2], int ev[2], int *lfdp, char *err,
		     size_t errlen)
{
	int sb = 4 << 20, rc = 0, lfd = -1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, call) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ev)) {
		rc = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		return rc;
	}
	/* room for a burst of vouches and a fleet's whole hash in flight */
	setsockopt(ev[1], SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	setsockopt(ev[0], SOL_SOCKET, SO_RCVBUF, &sb, sizeof(sb));
	call[1] = high(call[1]);
	ev[1] = high(ev[1]);
	if (p->listen_fd >= 0 && (lfd = *lfdp = fcntl(p->listen_fd, F_DUPFD_CLOEXEC, 10)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "dup: %s", strerror(errno));
		return rc;
	}
	if (call[1] < 0 || ev[1] < 0) {
		rc = -EMFILE;
		snprintf(err, errlen, "out of descriptors");
		return rc;
	}
	return 0;
}

static int spawn(struct xrld *d, struct xrld_idp *p, char *err, size_t errlen)
{
	int call[2] = { -1, -1 }, ev[2] = { -1, -1 }, lfd = -1, pidfd, rc = 0;
	char *const argv_fg[] = { "xrld", "--identity-process", "--foreground",
				  log_get_level() >= XRL_LOG_DEBUG ? "-vv" : NULL, NULL };
	char *const argv_bg[] = { "xrld", "--identity-process",
				  log_get_level() >= XRL_LOG_DEBUG ? "-vv" : NULL, NULL };
	char *const *argv = d->foreground ? argv_fg : argv_bg;
	bool root = geteuid() == 0;
	json_t *a;
	pid_t pid;

	if ((rc = child_fds(p, call, ev, &lfd, err, errlen)))
		goto fail;
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		snprintf(err, errlen, "fork: %s", strerror(errno));
		goto fail;
	}
	if (!pid)
		exec_child(p, call[1], ev[1], lfd, argv, root);
	close(call[1]);
	close(ev[1]);
	if (lfd >= 0)
		close(lfd);
	call[1] = ev[1] = lfd = -1;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0) {
		/* no pidfd, no way to watch it: it goes now (the plain kill
		 * needs xrld's CAP_KILL) */
		rc = -errno;
		snprintf(err, errlen, "couldn't watch the identity process: %s", strerror(errno));
		close(call[0]);
		close(ev[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return rc;
	}
	pthread_mutex_lock(&p->mu);
	p->pid = pid;
	p->call_fd = call[0];
	p->pid_fd = pidfd;
	pthread_mutex_unlock(&p->mu);
	p->started_ns = p->alive_ns = xrl_now_ns();
	p->respawn_ns = 0;
	call[0] = -1;
	p->ev_fd = ev[0];
	ev[0] = -1;
	if ((rc = xrld_fd_add(d->loop, p->ev_fd, EPOLLIN | EPOLLRDHUP, on_events, p)) ||
	    (rc = xrld_fd_add(d->loop, p->pid_fd, EPOLLIN, on_exit_child, p))) {
		snprintf(err, errlen, "couldn't watch the identity process: %s", strerror(-rc));
		goto kill;
	}
	/* start: the policy, and the child's answer once it listens */
	pthread_mutex_lock(&p->mu);
	a = start_call(d, p, &rc, err, errlen);
	pthread_mutex_unlock(&p->mu);
	json_decref(a);
	if (rc)
		goto kill;
	replay_shadows(d);
	log_info("identity process %d running as %s: no capability, seccomp, no BPF descriptor",
		 (int)pid, root ? p->user : "this user");
	return 0;
kill:
	/* sockets first, so a child blocked on them runs on to its end */
	pthread_mutex_lock(&p->mu);
	kill_child(p);
	pthread_mutex_unlock(&p->mu);
	if (p->ev_fd >= 0) {
		xrld_fd_del(d->loop, p->ev_fd);
		close(p->ev_fd);
		p->ev_fd = -1;
	}
	if (!reaped_within(p, 1000, NULL))
		log_warnx("the identity process %d did not go within 1 s of SIGKILL", (int)pid);
	child_gone(d, p);
	return rc;
fail:
	for (int i = 0; i < 2; i++) {
		if (call[i] >= 0)
			close(call[i]);
		if (ev[i] >= 0)
			close(ev[i]);
	}
	if (lfd >= 0)
		close(lfd);
	return rc;
}

/* ---- start, reload, stop ------------------------------------------------------ */

/* p's copy of the policy text: text. */
static int keep_text(struct xrld_idp *p, const char *text, size_t len)
{
	char *t = malloc(len + 1);

	if (!t)
		return -ENOMEM;
	memcpy(t, text, len);
	t[len] = 0;
	free(p->text);
	p->text = t;
	p->len = len;
	return 0;
}

/* The child for d->cfg's sections (none: nothing), at xrld's start or a
 * reload that brings them. */
static int idp_run(struct xrld *d, const char *text, size_t len, char *err, size_t errlen)
{
	const struct xrld_config *c = d->cfg;
	struct xrld_idp *p = d->idp;
	bool fresh = !p;
	int rc;

	if (!c->has_http && !c->fleet.enabled)
		return 0;
	if (fresh) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return snprintf(err, errlen, "out of memory"), -ENOMEM;
		pthread_mutex_init(&p->mu, NULL);
		p->d = d;
		p->call_fd = p->ev_fd = p->pid_fd = p->listen_fd = -1;
		pick_user(p);
	}
	__atomic_store_n(&p->off, false, __ATOMIC_RELEASE);
	p->stopping = false;
	if (keep_text(p, text, len)) {
		rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (c->has_http && p->listen_fd < 0 &&
	    (p->listen_fd = xrl_http_listen_socket(&c->http, err, errlen)) < 0) {
		rc = p->listen_fd;
		p->listen_fd = -1;
		goto fail;
	}
	if ((rc = spawn(d, p, err, errlen)))
		goto fail; /* spawn reaped it */
	/* published once it runs: the metrics thread reads d->idp unlocked */
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->idp, p, __ATOMIC_RELEASE);
	__atomic_store_n(&d->http, c->has_http ? p : NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->lock);
	return 0;
fail:
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	p->listen_fd = -1;
	__atomic_store_n(&p->off, true, __ATOMIC_RELEASE);
	if (fresh) {
		free(p->text);
		free(p);
	}
	return rc;
}

int xrld_idp_start(struct xrld *d, const char *text, size_t len, char *err, size_t errlen)
{
	/* the watch runs from the start, for a child a reload brings too */
	if (!xrld_timer_add(d->loop, XRL_NSEC_PER_SEC, idp_tick, d))
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	return idp_run(d, text, len, err, errlen);
}

void xrld_idp_take(struct xrld *d, enum xrl_idev_type type, xrld_idev_fn *fn)
{
	if (d->idp && (type == XRL_IDEV_VOUCH || type == XRL_IDEV_FLEET))
		d->idp->take[type] = fn;
}

/* The child told to stop (its fleet heartbeat goes out), 3 s, then -9. */
static void reap(struct xrld *d, struct xrld_idp *p)
{
	const char *q = "{\"op\":\"stop\"}";

	if (!p->pid)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->call_fd >= 0)
		xrl_idp_send(p->call_fd, q, strlen(q), NULL, 0, xrl_now_ns() + 500000000ULL);
	pthread_mutex_unlock(&p->mu);
	if (!reaped_within(p, 3000, NULL)) {
		pthread_mutex_lock(&p->mu);
		kill_child(p);
		pthread_mutex_unlock(&p->mu);
		if (!reaped_within(p, 1000, NULL))
			log_warnx("the identity process %d did not go within 1 s of SIGKILL",
				  (int)p->pid);
	}
	child_gone(d, p);
}

/* At xrld's exit. */
void xrld_idp_stop(struct xrld *d)
{
	struct xrld_idp *p = d->idp;

	if (!p)
		return;
	p->stopping = true;
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->http, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&d->idp, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->lock);
	reap(d, p);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	free(p->text);
	free(p);
}

/* A reload without http: or fleet: the child stops; p stays for the
 * metrics thread, which may hold it. */
static void idp_off(struct xrld *d, struct xrld_idp *p)
{
	p->stopping = true;
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->http, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->lock);
	reap(d, p);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	p->listen_fd = -1;
	__atomic_store_n(&p->off, true, __ATOMIC_RELEASE);
	p->stopping = false;
}

int xrld_idp_reload_check(struct xrld *d, const struct xrld_config *next, const char *text,
			  size_t len, char *err, size_t errlen)
{
	json_t *r;
	int rc;

	if (!d->http || !next->has_http)
		return 0;
	r = reload_call(d, "reload_check", next, text, len, &rc, err, errlen);
	json_decref(r);
	/* a child restarting takes the new text when it starts: check it then */
	return rc == -ESRCH ? 0 : rc;
}

/*
 * After next is installed: the child reloads it, or (the http: section or
 * the fleet came or went, which changes what the child runs) a new child
 * takes it.
 */
void xrld_idp_reload(struct xrld *d, const struct xrld_config *old, const char *text, size_t len)
{
	const struct xrld_config *c = d->cfg;
	struct xrld_idp *p = d->idp;
	char err[XRL_ERRLEN];
	int rc;

	if (!p || p->off) {
		if ((c->has_http || c->fleet.enabled) &&
		    idp_run(d, text, len, err, sizeof(err)))
			log_err("%s", err);
		return;
	}
	if (!c->has_http && !c->fleet.enabled) {
		log_warnx("the http: and fleet: sections are gone: the identity process stops");
		idp_off(d, p);
		return;
	}
	if (keep_text(p, text, len)) {
		log_err("reload: out of memory for the identity process's policy");
		return;
	}
	if (c->has_http == old->has_http && !memcmp(&c->fleet, &old->fleet, sizeof(c->fleet)) &&
	    (!c->has_http || !strcmp(c->http.fleet, old->http.fleet))) {
		json_t *r = c->has_http
				    ? reload_call(d, "reload", c, text, len, &rc, err, sizeof(err))
				    : NULL;

		json_decref(r);
		if (c->has_http && rc && rc != -ESRCH)
			log_err("the identity tier kept its rules: %s", err);
		return;
	}
	log_info("the identity process restarts for the new policy (the http: or fleet: "
		 "section changed what it runs)");
	if (c->has_http && p->listen_fd < 0 &&
	    (p->listen_fd = xrl_http_listen_socket(&c->http, err, sizeof(err))) < 0) {
		log_err("%s", err);
		p->listen_fd = -1;
	}
	if (!c->has_http && p->listen_fd >= 0) {
		close(p->listen_fd);
		p->listen_fd = -1;
	}
	p->stopping = true;
	reap(d, p);
	p->stopping = false;
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->http, c->has_http && p->listen_fd >= 0 ? p : NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&d->lock);
	if (spawn(d, p, err, sizeof(err))) {
		log_err("couldn't start the identity process: %s (trying again in 1 s)", err);
		p->respawn_ns = xrl_now_ns() + XRL_NSEC_PER_SEC;
	}
}

/* ---- status and metrics ---------------------------------------------------------- */

json_t *xrld_idp_status_json(struct xrld *d)
{
	struct xrld_idp *p = d->idp;

	if (!p || p->off)
		return json_null();
	return json_pack("{s:i,s:s,s:b,s:I,s:f}", "pid", (int)p->pid, "user", p->user, "up",
			 p->pid && p->call_fd >= 0, "restarts", (json_int_t)READ(p->restarts),
			 "uptime_s", p->pid ? (double)(xrl_now_ns() - p->started_ns) / 1e9 : 0.0);
}

/*
 * The child's metrics text, as xrld passes it on: lines of the tier's own
 * families (xrl_http_*, and their HELP and TYPE), printable, 1 MiB in all.
 * Anything else is dropped and counted: a child taken over must not spoof
 * xrld's families or break the page for the scraper.
 */
static void child_metrics(struct xrld_idp *p, struct xrl_buf *b, const char *t, size_t n)
{
	static const char fam[] = "xrl_http_", help[] = "# HELP xrl_http_",
			  type[] = "# TYPE xrl_http_";
	const char *end = t + (n > METRICS_MAX ? METRICS_MAX : n);

	while (t < end) {
		const char *nl = memchr(t, '\n', (size_t)(end - t));
		size_t len = nl ? (size_t)(nl - t) : (size_t)(end - t);
		bool ok = len && (!strncmp(t, fam, sizeof(fam) - 1) ||
				  !strncmp(t, help, sizeof(help) - 1) ||
				  !strncmp(t, type, sizeof(type) - 1));

		for (size_t i = 0; ok && i < len; i++)
			ok = t[i] >= ' ' && t[i] < 0x7f;
		if (ok && nl) {
			xrl_buf_add(b, t, len + 1);
		} else if (len) {
			COUNT(p->metrics_dropped);
		}
		if (!nl)
			break;
		t = nl + 1;
	}
}

void xrld_idp_metrics(struct xrld *d, struct xrl_buf *b)
{
	struct xrld_idp *p = __atomic_load_n(&d->idp, __ATOMIC_ACQUIRE);
	char err[XRL_ERRLEN];
	json_t *r;
	bool up;

	if (!p || __atomic_load_n(&p->off, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&p->mu);
	up = p->pid && p->call_fd >= 0;
	pthread_mutex_unlock(&p->mu);
	xrl_prom_family(b, "xrl_identity_process_up", "gauge",
			"1 while the identity process (identity tier, overrides sync, fleet) "
			"runs and xrld holds its call socket (one without a sign of life for 3 s "
			"is killed and started again)");
	_Static_assert(XRL_IDP_DEAD_MS == 3000, "the HELP of xrl_identity_process_up says 3 s");
	xrl_buf_printf(b, "xrl_identity_process_up %d\n", up);
	xrl_prom_family(b, "xrl_identity_process_restarts_total", "counter",
			"Times xrld started the identity process again after it died");
	xrl_buf_printf(b, "xrl_identity_process_restarts_total %llu\n",
		       (unsigned long long)READ(p->restarts));
	xrl_prom_family(b, "xrl_identity_process_events_refused_total", "counter",
			"Events from the identity process that xrld refused (malformed)");
	xrl_buf_printf(b, "xrl_identity_process_events_refused_total %llu\n",
		       (unsigned long long)READ(p->events_bad));
	xrl_prom_family(b, "xrl_identity_process_metrics_dropped_total", "counter",
			"Lines of the identity process's metrics that xrld did not pass on (not "
			"of an xrl_http_ family, or not printable)");
	xrl_buf_printf(b, "xrl_identity_process_metrics_dropped_total %llu\n",
		       (unsigned long long)READ(p->metrics_dropped));
	if (!__atomic_load_n(&d->http, __ATOMIC_ACQUIRE))
		return;
	r = xrld_idp_call(d, json_pack("{s:s}", "op", "metrics"), NULL, 0, NULL, err, sizeof(err));
	if (json_is_string(r))
		child_metrics(p, b, json_string_value(r), json_string_length(r));
	json_decref(r);
}

/*
 * For process_*{process="identity"} (metrics.c): the pid is read under mu,
 * and the directory opened for it is checked against the pidfd afterwards,
 * so a child reaped meanwhile, whose pid another process may have taken,
 * gives -1. Signal 0 through the pidfd says ESRCH once the child is
 * reaped, EPERM while it lives (the metrics thread holds no CAP_KILL).
 */
int xrld_idp_proc_dir(struct xrld *d)
{
	struct xrld_idp *p = __atomic_load_n(&d->idp, __ATOMIC_ACQUIRE);
	char path[32];
	int fd = -1;

	if (!p || __atomic_load_n(&p->off, __ATOMIC_ACQUIRE))
		return -1;
	pthread_mutex_lock(&p->mu);
	if (p->pid && p->pid_fd >= 0) {
		snprintf(path, sizeof(path), "/proc/%d", (int)p->pid);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0 && syscall(SYS_pidfd_send_signal, p->pid_fd, 0, NULL, 0) &&
		    errno == ESRCH) {
			close(fd);
			fd = -1;
		}
	}
	pthread_mutex_unlock(&p->mu);
	return fd;
}

/* A deny entry of this host's for the fleet: on the events socket, never
 * waited for (a full socket drops it, counted by the caller). */
int xrld_idp_publish(struct xrld *d, const struct xrl_fleet_entry *e)
{
	struct xrld_idp *p = d->idp;
	struct xrl_idev ev = { .type = XRL_IDEV_PUBLISH };

	if (!p || p->ev_fd < 0)
		return -ESRCH;
	ev.fleet = *e;
	return send(p->ev_fd, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL) == sizeof(ev) ? 0
											  : -errno;
}

/* After a start: the shadow switches xrlctl made (xrld holds them) to the
 * new child, which began with the policy's own. */
static void replay_shadows(struct xrld *d)
{
	for (int k = 0; k < d->n_override; k++) {
		char err[XRL_ERRLEN];
		json_t *r =
			xrld_idp_call(d,
				      json_pack("{s:s,s:s,s:b}", "op", "shadow", "rule",
						d->shadow_override[k], "on", d->shadow_val[k] != 0),
				      NULL, 0, NULL, err, sizeof(err));

		json_decref(r); /* a packet rule's name: not the tier's, refused */
	}
	xrld_evidence_replay(d);
}
