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
#define START_TIMEOUT_MS 10000
#define EVENTS_PER_WAKE	 1024

struct xrld_idp {
	pthread_mutex_t mu; /* one call at a time (main loop, metrics thread) */
	pid_t pid;	    /* 0: not running */
	int call_fd;
	struct xrld_io ev;     /* the events socket */
	struct xrld_io pid_io; /* pidfd: readable when the child exits */
	int listen_fd;	       /* -1: no http: section */
	uid_t uid;
	gid_t gid;
	char user[32];
	bool stopping;
	char *text; /* the policy in force, as the child parses it */
	size_t len;
	__u64 started_ns;      /* of the running child */
	__u64 respawn_ns;      /* down: start again at (0: at once) */
	unsigned quick_deaths; /* in a row, each within 2 s of its start */
	__u64 restarts, events, events_bad, calls_failed;
};

static void set_timeout(int fd, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
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

static void child_gone(struct xrld *d, struct xrld_idp *p)
{
	if (p->ev.fd >= 0) {
		xrld_io_del(d, &p->ev);
		close(p->ev.fd);
		p->ev.fd = -1;
	}
	if (p->pid_io.fd >= 0) {
		xrld_io_del(d, &p->pid_io);
		close(p->pid_io.fd);
		p->pid_io.fd = -1;
	}
	pthread_mutex_lock(&p->mu);
	if (p->call_fd >= 0)
		close(p->call_fd);
	p->call_fd = -1;
	pthread_mutex_unlock(&p->mu);
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
	set_timeout(p->call_fd, timeout_ms);
	*rc = xrl_idp_send(p->call_fd, json, strlen(json), payload, plen);
	if (!*rc)
		*rc = xrl_idp_recv(p->call_fd, &aj, &al, &ap, &apl);
	if (*rc) {
		/* a child that does not answer within the timeout is wedged:
		 * it goes, and the loop starts another */
		snprintf(err, errlen, "the identity process did not answer (%s): it is restarted",
			 strerror(-*rc));
		COUNT(p->calls_failed);
		if (p->pid > 0)
			kill(p->pid, SIGKILL);
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
	struct xrld_idp *p = d->idp;
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

	if (a->family == XRL_AF_INET)
		return a->plen <= 32 && e->vouch.ttl_ns <= 86400 * XRL_NSEC_PER_SEC;
	if (a->family == XRL_AF_INET6)
		return a->plen <= 128 && e->vouch.ttl_ns <= 86400 * XRL_NSEC_PER_SEC;
	return false;
}

static void on_events(struct xrld *d, struct xrld_io *io, unsigned events)
{
	struct xrld_idp *p = io->arg;

	for (int i = 0; i < EVENTS_PER_WAKE; i++) {
		struct xrl_idev e;
		ssize_t n = recv(io->fd, &e, sizeof(e), MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			/* the child is gone; its pidfd says so too */
			xrld_io_del(d, io);
			close(io->fd);
			io->fd = -1;
			return;
		}
		COUNT(p->events);
		if (n != sizeof(e)) {
			COUNT(p->events_bad);
			continue;
		}
		if (e.type == XRL_IDEV_VOUCH && vouch_ok(&e)) {
			xrld_vouch_in(d, &e.vouch.p, e.vouch.ttl_ns);
		} else if (e.type == XRL_IDEV_FLEET && e.fleet.kind == XRL_FLEET_DENY &&
			   e.fleet.op <= XRL_FLEET_PEER) {
			e.fleet.field[sizeof(e.fleet.field) - 1] = 0;
			xrld_fleet_in(d, &e.fleet);
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

static void on_exit_child(struct xrld *d, struct xrld_io *io, unsigned events)
{
	struct xrld_idp *p = io->arg;
	__u64 now = xrl_now_ns(), ran = now - p->started_ns;
	char err[XRL_ERRLEN];
	int st = 0;

	if (waitpid(p->pid, &st, WNOHANG) <= 0 && kill(p->pid, 0) == 0)
		return;
	child_gone(d, p);
	p->pid = 0;
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

/* The 1 s tick: a child that is down and due is started. */
void xrld_idp_tick(struct xrld *d)
{
	struct xrld_idp *p = d->idp;
	char err[XRL_ERRLEN];

	if (!p || p->pid || p->stopping || xrl_now_ns() < p->respawn_ns)
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

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dup2(call, XRL_IDP_FD_CALL) < 0 || dup2(ev, XRL_IDP_FD_EVENT) < 0 ||
	    (lfd >= 0 ? dup2(lfd, XRL_IDP_FD_LISTEN) < 0 : close(XRL_IDP_FD_LISTEN) < -1))
		_exit(126);
	syscall(SYS_close_range, XRL_IDP_FD_LISTEN + 1, ~0U, 0);
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

static int spawn(struct xrld *d, struct xrld_idp *p, char *err, size_t errlen)
{
	int call[2] = { -1, -1 }, ev[2] = { -1, -1 }, lfd = -1, pidfd, rc = 0, sb = 4 << 20;
	char *const argv_fg[] = { "xrld", "--identity-process", "--foreground",
				  log_get_level() >= XRL_LOG_DEBUG ? "-vv" : NULL, NULL };
	char *const argv_bg[] = { "xrld", "--identity-process",
				  log_get_level() >= XRL_LOG_DEBUG ? "-vv" : NULL, NULL };
	char *const *argv = d->foreground ? argv_fg : argv_bg;
	bool root = geteuid() == 0;
	json_t *a;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, call) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ev)) {
		rc = -errno;
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		goto fail;
	}
	/* room for a burst of vouches and a fleet's whole hash in flight */
	setsockopt(ev[1], SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
	setsockopt(ev[0], SOL_SOCKET, SO_RCVBUF, &sb, sizeof(sb));
	call[1] = high(call[1]);
	ev[1] = high(ev[1]);
	if (p->listen_fd >= 0 && (lfd = fcntl(p->listen_fd, F_DUPFD_CLOEXEC, 10)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "dup: %s", strerror(errno));
		goto fail;
	}
	if (call[1] < 0 || ev[1] < 0) {
		rc = -EMFILE;
		snprintf(err, errlen, "out of descriptors");
		goto fail;
	}
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
	p->pid = pid;
	p->started_ns = xrl_now_ns();
	p->respawn_ns = 0;
	pthread_mutex_lock(&p->mu);
	p->call_fd = call[0];
	pthread_mutex_unlock(&p->mu);
	call[0] = -1;
	p->ev = (struct xrld_io){ .fd = ev[0], .fn = on_events, .arg = p };
	ev[0] = -1;
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	p->pid_io = (struct xrld_io){ .fd = pidfd, .fn = on_exit_child, .arg = p };
	if (pidfd < 0 || xrld_io_add(d, &p->ev, EPOLLIN) || xrld_io_add(d, &p->pid_io, EPOLLIN)) {
		rc = -errno;
		snprintf(err, errlen, "couldn't watch the identity process: %s", strerror(errno));
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		p->pid = 0;
		child_gone(d, p);
		return rc;
	}
	/* start: the policy, and the child's answer once it listens */
	pthread_mutex_lock(&p->mu);
	a = start_call(d, p, &rc, err, errlen);
	pthread_mutex_unlock(&p->mu);
	json_decref(a);
	if (rc) {
		if (p->pid > 0)
			kill(p->pid, SIGKILL);
		/* its exit is reaped by on_exit_child, or below at the start */
		return rc;
	}
	log_info("identity process %d running as %s: no capability, seccomp, no BPF descriptor",
		 (int)pid, root ? p->user : "this user");
	return 0;
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

int xrld_idp_start(struct xrld *d, const char *text, size_t len, char *err, size_t errlen)
{
	const struct xrld_config *c = d->cfg;
	struct xrld_idp *p;
	int rc;

	if (!c->has_http && !c->fleet.enabled)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->text = malloc(len + 1))) {
		free(p);
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	}
	memcpy(p->text, text, len);
	p->text[len] = 0;
	p->len = len;
	pthread_mutex_init(&p->mu, NULL);
	p->call_fd = p->ev.fd = p->pid_io.fd = p->listen_fd = -1;
	pick_user(p);
	if (c->has_http &&
	    (p->listen_fd = xrl_http_listen_socket(c->http.listen, err, errlen)) < 0) {
		rc = p->listen_fd;
		goto fail;
	}
	d->idp = p;
	if ((rc = spawn(d, p, err, errlen))) {
		/* reap it: a start that fails stops xrld */
		p->stopping = true;
		if (p->pid > 0)
			waitpid(p->pid, NULL, 0);
		child_gone(d, p);
		d->idp = NULL;
		goto fail;
	}
	pthread_mutex_lock(&d->lock);
	d->http = c->has_http ? p : NULL;
	pthread_mutex_unlock(&d->lock);
	return 0;
fail:
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	free(p->text);
	free(p);
	return rc;
}

static void reap(struct xrld *d, struct xrld_idp *p)
{
	if (!p->pid)
		return;
	pthread_mutex_lock(&p->mu);
	if (p->call_fd >= 0) {
		/* stop: the fleet's heartbeat goes out; a second, then -9 */
		const char *q = "{\"op\":\"stop\"}";

		set_timeout(p->call_fd, 1000);
		xrl_idp_send(p->call_fd, q, strlen(q), NULL, 0);
	}
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < 300; i++) {
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid) {
			p->pid = 0;
			break;
		}
		usleep(10000);
	}
	if (p->pid) {
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
	}
	child_gone(d, p);
}

void xrld_idp_stop(struct xrld *d)
{
	struct xrld_idp *p = d->idp;

	if (!p)
		return;
	p->stopping = true;
	pthread_mutex_lock(&d->lock);
	d->http = NULL;
	d->idp = NULL;
	pthread_mutex_unlock(&d->lock);
	reap(d, p);
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	free(p->text);
	free(p);
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
	char *t;
	int rc;

	if (!p) {
		if ((c->has_http || c->fleet.enabled) &&
		    xrld_idp_start(d, text, len, err, sizeof(err)))
			log_err("%s", err);
		return;
	}
	if (!c->has_http && !c->fleet.enabled) {
		log_warnx("the http: and fleet: sections are gone: the identity process stops");
		xrld_idp_stop(d);
		return;
	}
	t = malloc(len + 1);
	if (!t) {
		log_err("reload: out of memory for the identity process's policy");
		return;
	}
	memcpy(t, text, len);
	t[len] = 0;
	free(p->text);
	p->text = t;
	p->len = len;
	if (c->has_http == old->has_http && !memcmp(&c->fleet, &old->fleet, sizeof(c->fleet)) &&
	    (!c->has_http || !strcmp(c->http.fleet, old->http.fleet))) {
		json_t *r = c->has_http ? reload_call(d, "reload", c, text, len, &rc, err,
						      sizeof(err))
					: NULL;

		json_decref(r);
		if (c->has_http && rc && rc != -ESRCH)
			log_err("the identity tier kept its rules: %s", err);
		return;
	}
	log_info("the identity process restarts for the new policy (the http: or fleet: "
		 "section changed what it runs)");
	if (c->has_http && p->listen_fd < 0 &&
	    (p->listen_fd = xrl_http_listen_socket(c->http.listen, err, sizeof(err))) < 0) {
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
	d->http = c->has_http && p->listen_fd >= 0 ? p : NULL;
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

	if (!p)
		return json_null();
	return json_pack("{s:i,s:s,s:b,s:I,s:f}", "pid", (int)p->pid, "user", p->user, "up",
			 p->pid && p->call_fd >= 0, "restarts", (json_int_t)READ(p->restarts),
			 "uptime_s", p->pid ? (double)(xrl_now_ns() - p->started_ns) / 1e9 : 0.0);
}

void xrld_idp_metrics(struct xrld *d, struct xrl_buf *b)
{
	struct xrld_idp *p = d->idp;
	char err[XRL_ERRLEN];
	json_t *r;

	if (!p)
		return;
	xrl_prom_family(b, "xrl_identity_process_up", "gauge",
			"1 while the identity process (identity tier, overrides sync, fleet) "
			"answers xrld");
	xrl_buf_printf(b, "xrl_identity_process_up %d\n", p->pid && p->call_fd >= 0);
	xrl_prom_family(b, "xrl_identity_process_restarts_total", "counter",
			"Times xrld started the identity process again after it died");
	xrl_buf_printf(b, "xrl_identity_process_restarts_total %llu\n",
		       (unsigned long long)READ(p->restarts));
	xrl_prom_family(b, "xrl_identity_process_events_refused_total", "counter",
			"Events from the identity process that xrld refused (malformed)");
	xrl_buf_printf(b, "xrl_identity_process_events_refused_total %llu\n",
		       (unsigned long long)READ(p->events_bad));
	if (!d->http)
		return;
	r = xrld_idp_call(d, json_pack("{s:s}", "op", "metrics"), NULL, 0, NULL, err, sizeof(err));
	if (json_is_string(r))
		xrl_buf_add(b, json_string_value(r), json_string_length(r));
	json_decref(r);
}
