// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * main.c - xrld's options, its start and stop, and the run of its event
 * loop. xrld, the xrl daemon, attaches the packet tier to the configured
 * interfaces, pushes policy, reads refusal samples, escalates penalties,
 * serves metrics and answers xrlctl over a unix socket.
 *
 * One event loop (events.c): each part registers its own descriptors and
 * timers at its start, and main.c runs it. Signals arrive through a
 * signalfd, so no handler does anything but wake the loop. The data plane never depends on this process:
 * kill -9 leaves the program attached and enforcing with its pinned maps,
 * and a restarted xrld picks the same maps up (see loader.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <microhttpd.h>

#include "http/http.h"
#include "idproc.h"
#include "log.h"
#include "privs.h"
#include "xrl_version.h"
#include "xrld.h"

static struct xrld D = { .sock_path = XRL_SOCKET_DEFAULT,
			 .pin_root = XRL_PIN_ROOT_DEFAULT,
			 .pin_lock_fd = -1,
			 .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- the daemon's own events ------------------------------------------------ */

/* SIGHUP reloads the policy file; SIGTERM and SIGINT stop the loop. */
static void on_signal(int fd, unsigned events, void *ctx)
{
	struct xrld *d = ctx;
	struct signalfd_siginfo si;
	char err[XRL_ERRLEN];

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo != SIGHUP) {
		d->stop = 1;
		return;
	}
	if (xrld_reload_notified(d, NULL, 0, d->config_path, err, sizeof(err)))
		log_err("reload refused, the running policy stays in force: %s", err);
	else
		log_info("reloaded %s", d->config_path);
}

/* Once a second, after the parts' own 1 s timers of the same round (added
 * before this one): the aggregated log lines whose interval has passed. */
static void flush_logs(void *ctx)
{
	log_agg_flush(xrl_now_ns(), false);
}

/* The loop, and signals through a signalfd (no handler runs). */
static int loop_open(struct xrld *d)
{
	sigset_t mask;
	int fd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->loop = xrld_loop_new();
	if (!d->loop)
		return -errno;
	fd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	return xrld_fd_add(d->loop, fd, EPOLLIN, on_signal, d);
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: xrld --config FILE [--foreground] [--socket PATH] [--pin-dir DIR] "
		   "[--state-dir DIR] [-v]\n"
		   "       xrld --check FILE\n"
		   "       xrld --version\n");
	if (f != stdout)
		return; /* a usage error: the lines above; --help: what each is */
	fprintf(f,
		"\n"
		"  -c, --config FILE   the policy to enforce (required to run; see xrl-policy(5));\n"
		"                      SIGHUP or `xrlctl policy apply` reloads it\n"
		"  -n, --check FILE    parse and validate FILE, print what it would do and the\n"
		"                      warnings, then exit: 0 valid, 1 not (nothing is touched)\n"
		"  -f, --foreground    stay in the foreground and log to stderr (as under\n"
		"                      systemd); without it xrld detaches and logs to syslog\n"
		"  -s, --socket PATH   the control socket xrlctl talks to (default %s)\n"
		"  -p, --pin-dir DIR   where the XDP maps are pinned, one xrld a directory\n"
		"                      (default %s)\n"
		"      --state-dir DIR what outlives a restart: the callers' peaks that\n"
		"                      `xrlctl recommend` reads (default %s)\n"
		"  -v, --verbose       log info lines whatever log_level says; -vv: debug too\n"
		"      --version       print the version and exit\n"
		"  -h, --help          this help\n",
		XRL_SOCKET_DEFAULT, XRL_PIN_ROOT_DEFAULT, XRLD_STATE_DIR_DEFAULT);
}

/*
 * After the interfaces are attached and before any thread starts: keep
 * what a reload needs to attach or detach an interface, CAP_BPF and
 * CAP_NET_ADMIN (an XDP program takes both) and CAP_PERFMON (measured:
 * without it the verifier refuses xrl's program with EPERM), and
 * CAP_NET_BIND_SERVICE only for a configured port below 1024. Everything
 * else goes for good, CAP_SYS_ADMIN first among them: map reads and writes,
 * the ring buffer and the pins need no capability on descriptors xrld holds.
 */
static int drop_privileges(struct xrld *d)
{
	__u64 keep = XRL_CAP(CAP_BPF) | XRL_CAP(CAP_NET_ADMIN) | XRL_CAP(CAP_PERFMON);

	/* the identity process is started (and restarted, and killed when
	 * it hangs) as another uid */
	if (d->cfg->has_http || d->cfg->fleet.enabled)
		keep |= XRL_CAP(CAP_SETUID) | XRL_CAP(CAP_SETGID) | XRL_CAP(CAP_KILL);
	__u64 eff, prm;
	int err;

	/* a port below 1024 needs CAP_NET_BIND_SERVICE to be bound */
	if ((d->cfg->has_http && d->cfg->http.listen_port < 1024) ||
	    (d->cfg->metrics[0] && d->cfg->metrics_port < 1024))
		keep |= XRL_CAP(CAP_NET_BIND_SERVICE);
	err = xrl_caps_limit(keep);
	if (err)
		return err;
	if (!xrl_caps_get(&eff, &prm))
		log_debug("capabilities now 0x%llx (permitted 0x%llx)", (unsigned long long)eff,
			  (unsigned long long)prm);
	return 0;
}

/* A sysctl's value, or -1. */
static int sysctl_int(const char *path)
{
	FILE *f = fopen(path, "r");
	int v = -1;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/*
 * The SYN-cookie path this host would run for c, said before a flood, not
 * during one: xrl's own needs nothing; the kernel's needs two sysctls at 2,
 * which a read-only /proc/sys (ProtectKernelTunables=yes) forbids unless
 * they already are. Returns 0, or 1 when the policy could not start here.
 */
static int check_cookie_path(const struct xrld_config *c)
{
	static const char sc[] = "/proc/sys/net/ipv4/tcp_syncookies",
			  ts[] = "/proc/sys/net/ipv4/tcp_timestamps";
	bool any = false;

	for (__u32 i = 0; i < c->policy.n_rules; i++)
		any |= c->policy.rules[i].syn_cookies != XRL_COOKIES_OFF;
	if (!any)
		return 0;
	if (!c->kernel_cookies && xrl_own_cookies_supported()) {
		printf("SYN cookies: xrl's own on this host (the kernel has "
		       "bpf_sk_assign_tcp_reqsk): no sysctl is changed%s\n",
		       sysctl_int(sc) == 0 ? "; but net.ipv4.tcp_syncookies is 0 here, and the "
					     "kernel then takes no cookie ACK: set it to 1"
					   : "");
		return 0;
	}
	printf("SYN cookies: the kernel's on this host (%s): xrl sets net.ipv4.tcp_syncookies "
	       "and tcp_timestamps to 2\n",
	       c->kernel_cookies ? "cookie_path: kernel" : "no bpf_sk_assign_tcp_reqsk before 6.9");
	if (sysctl_int(sc) == 2 && sysctl_int(ts) == 2)
		return 0;
	if (access(sc, W_OK) || access(ts, W_OK)) {
		log_err("SYN cookies on the kernel's path need net.ipv4.tcp_syncookies=2 and "
			"tcp_timestamps=2, and /proc/sys is read-only here (%s; the unit's "
			"ProtectKernelTunables=yes?): set both before xrld starts, or run a kernel "
			"with bpf_sk_assign_tcp_reqsk (6.9+)",
			strerror(errno));
		return 1;
	}
	return 0;
}

/* --check FILE: parse, summarise, exit. */
static int check_only(const char *path)
{
	struct xrld_config *c;
	char err[XRL_ERRLEN], *sum;
	int rc;

	if (xrl_config_check(path, &c, &sum, err, sizeof(err))) {
		/* through the log: under systemd it carries the journal's priority 3 */
		log_err("%s", err);
		return 1;
	}
	printf("%s: ok\n%s", path, sum);
	if (c->has_http || c->fleet.enabled) {
		struct passwd *pw = getpwnam("xrl");

		if (pw)
			printf("identity process: runs as xrl (uid %u), no capability, seccomp\n",
			       (unsigned)pw->pw_uid);
		else
			printf("identity process: runs as nobody: no user xrl here, and nobody may be "
			       "shared with other services (`useradd --system --user-group xrl` "
			       "gives it a uid of its own)\n");
	}
	rc = check_cookie_path(c);
	free(sum);
	free(c);
	return rc;
}

/* Options into d; returns -1 to go on, or the exit code. */
static int parse_options(struct xrld *d, int argc, char **argv, const char **check, int *verbose,
			 bool *identity)
{
	static const struct option lo[] = {
		XRL_CTL_LONGOPTS, /* as xrlctl's */
		XRL_OPT_VERBOSE,
		{ "config", required_argument, NULL, 'c' },
		{ "check", required_argument, NULL, 'n' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "identity-process", no_argument, NULL, 'I' },
		{ "state-dir", required_argument, NULL, 'S' },
		{},
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:n:fs:p:vh", lo, NULL)) != -1) {
		switch (c) {
		case 'c':
			d->config_path = optarg;
			break;
		case 'n':
			*check = optarg;
			break;
		case 'f':
			d->foreground = true;
			break;
		case 'I':
			*identity = true;
			break;
		case 'S':
			if (optarg[0] != '/') {
				fprintf(stderr, "xrld: --state-dir wants an absolute path, got '%s'\n",
					optarg);
				return 2;
			}
			d->state_dir = optarg;
			break;
		case 's':
			d->sock_path = optarg;
			break;
		case 'p':
			if (optarg[0] != '/') {
				fprintf(stderr, "xrld: --pin-dir wants an absolute path, got '%s'\n",
					optarg);
				return 2;
			}
			d->pin_root = optarg;
			break;
		case 'v':
			(*verbose)++;
			break;
		case 'V':
			printf("xrld %s\n", XRL_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || (!*check && !d->config_path && !*identity)) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/*
 * Everything before the loop: the config, the tables, the loop's fds, the
 * control socket, the interfaces, the privileges, the identity tier and
 * the metrics. 0, or the exit code (the socket file removed).
 */
static int start(struct xrld *d, int verbose)
{
	char err[XRL_ERRLEN], *text = NULL;
	size_t len = 0;
	int rc;

	d->cfg = calloc(1, sizeof(*d->cfg));
	d->top = calloc(TOP_SLOTS, sizeof(*d->top));
	d->pen = calloc(PEN_SLOTS, sizeof(*d->pen));
	if (!d->cfg || !d->top || !d->pen)
		return 1;
	if (xrl_config_load_text(d->config_path, d->cfg, &text, &len, err, sizeof(err))) {
		log_err("%s", err);
		return 1;
	}
	if (d->cfg->log_level >= 0 && !verbose)
		log_set_level(d->cfg->log_level);
	/* the pins are taken by the first interface (here, or a later attach):
	 * an identity tier alone keeps none, and starts without bpffs (said) */
	xrld_bpffs_ensure(d);
	if (d->cfg->n_ifaces && xrld_pins_claim(d, err, sizeof(err))) {
		log_err("%s", err);
		return 1;
	}
	if ((rc = loop_open(d))) {
		errno = -rc;
		log_warn("couldn't set up the event loop");
		return 1;
	}
	rc = xrld_control_listen(d);
	if (rc < 0) {
		log_err("couldn't listen on %s: %s", d->sock_path,
			rc == -EADDRINUSE ? "another xrld answers there" : strerror(-rc));
		return 1;
	}
	/* the parts' 1 s timers run in the order added: the interfaces'
	 * expired deny entries, syn_cookies auto, the identity process's
	 * watch, then the log lines (flush_logs) */
	if ((rc = xrld_iface_start(d)) || (rc = xrld_cookies_start(d))) {
		log_err("couldn't set up the timers: %s", strerror(-rc));
		goto fail;
	}
	for (__u32 i = 0; i < d->cfg->n_ifaces; i++) {
		if (xrld_iface_attach(d, d->cfg->ifaces[i].name, d->cfg->ifaces[i].mode, true, err,
				      sizeof(err))) {
			log_err("%s", err);
			goto fail;
		}
		log_info("%s: enforcing %u rules", d->cfg->ifaces[i].name, d->cfg->policy.n_rules);
	}
	/* before any thread starts: a thread does not survive fork() */
	if (!d->foreground && daemon(0, 0)) {
		log_warn("couldn't go to the background");
		goto fail;
	}
	if ((rc = drop_privileges(d))) {
		log_err("couldn't drop privileges: %s", strerror(-rc));
		goto fail;
	}
	/* the identity tier, the overrides sync and the fleet: a child */
	rc = xrld_idp_start(d, text, len, err, sizeof(err));
	free(text);
	text = NULL;
	if (rc) {
		log_err("%s", err);
		goto fail;
	}
	if (d->http && (rc = xrld_evidence_start(d, d->state_dir ? d->state_dir
							       : XRLD_STATE_DIR_DEFAULT,
						 XRLD_EV_WINDOW_S))) {
		log_err("couldn't keep the callers' peaks: %s", strerror(-rc));
		goto fail;
	}
	if ((rc = xrld_fleet_start(d))) {
		log_err("couldn't join the fleet %s: %s", d->cfg->fleet.name, strerror(-rc));
		goto fail;
	}
	if ((rc = xrld_vouch_start(d))) {
		log_err("couldn't set up the identity tier's vouches: %s", strerror(-rc));
		goto fail;
	}
	if (d->cfg->metrics[0] && (rc = xrld_metrics_start(d, d->cfg->metrics_host, d->cfg->metrics_port))) {
		log_err("couldn't serve metrics on %s: %s", d->cfg->metrics, strerror(-rc));
		goto fail;
	}
	if (!xrld_timer_add(d->loop, XRL_NSEC_PER_SEC, flush_logs, NULL)) {
		log_err("couldn't set up the timers: %s", strerror(ENOMEM));
		goto fail;
	}
	return 0;
fail:
	free(text);
	unlink(d->sock_path);
	return 1;
}

static void stop(struct xrld *d)
{
	xrld_notify("STOPPING=1");
	log_info("stopping; %s", d->cfg->on_exit_detach
					 ? "detaching (on_exit: detach)"
					 : "the program stays attached and enforcing");
	if (d->mhd)
		MHD_stop_daemon(d->mhd);
	xrld_evidence_stop(d); /* the last epoch, from the running tier */
	xrld_idp_stop(d);      /* first: it sends fleet entries and vouches */
	xrld_fleet_stop(d);
	log_agg_flush(xrl_now_ns(), true);
	while (d->n_ifs)
		xrld_iface_remove(d, d->n_ifs - 1, d->cfg->on_exit_detach);
	xrld_control_close(d);
}

int main(int argc, char **argv)
{
	const char *check = NULL;
	bool identity = false;
	int verbose = 0, rc;

	rc = parse_options(&D, argc, argv, &check, &verbose, &identity);
	if (rc >= 0)
		return rc;
	if (identity)
		return xrld_identity_main(verbose, !D.foreground);
	log_init("xrld", verbose > 1 ? XRL_LOG_DEBUG : XRL_LOG_INFO, !(D.foreground || check));
	log_hook_libs();
	if (check)
		return check_only(check);
	rc = start(&D, verbose);
	if (rc)
		return rc;
	log_info("ready: %d interface(s), socket %s, pins under %s", D.n_ifs, D.sock_path,
		 D.pin_root);
	/* every interface is attached: systemctl start may return (MAINPID:
	 * without --foreground this is daemon()'s child) */
	xrld_notify("READY=1\nMAINPID=%d\nSTATUS=enforcing on %d interface(s)", (int)getpid(),
		    D.n_ifs);
	rc = xrld_loop_run(D.loop, &D.stop);
	if (rc) {
		errno = -rc;
		log_warn("epoll_wait");
	}
	stop(&D);
	return 0;
}
