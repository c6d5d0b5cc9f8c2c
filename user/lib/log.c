// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "log.h"

static int cur_level = XRL_LOG_WARN;
static int to_syslog;
static const char *log_ident = "xrl";

void log_init(const char *ident, int level, int use_syslog)
{
	log_ident = ident;
	cur_level = level;
	to_syslog = use_syslog;
	if (use_syslog)
		openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_set_level(int level)
{
	cur_level = level;
}
int log_get_level(void)
{
	return cur_level;
}

static void vlog(int level, const char *suffix, const char *fmt, va_list ap)
{
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	static const char *tag[] = { "error", "warning", "info", "debug" };
	char buf[1024];
	size_t n;

	if (level > cur_level)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (to_syslog) {
		syslog(prio[level], "%s%s%s", buf, suffix ? ": " : "", suffix ? suffix : "");
		return;
	}
	fprintf(stderr, "%s: %s: %s%s%s\n", log_ident, tag[level], buf, suffix ? ": " : "",
		suffix ? suffix : "");
}

#define LOG_FN(fn, lvl, with_errno) \
	void fn(const char *fmt, ...) \
	{ \
		int saved = errno; \
		va_list ap; \
		va_start(ap, fmt); \
		vlog(lvl, with_errno ? strerror(saved) : NULL, fmt, ap); \
		va_end(ap); \
		errno = saved; \
	}

LOG_FN(log_err, XRL_LOG_ERR, 0)
LOG_FN(log_warn, XRL_LOG_WARN, 1)
LOG_FN(log_warnx, XRL_LOG_WARN, 0)
LOG_FN(log_info, XRL_LOG_INFO, 0)
LOG_FN(log_debug, XRL_LOG_DEBUG, 0)

/*
 * Library output is demoted to debug: libxdp probes its dispatcher on every
 * attach and libbpf then prints an alarming "permission error" that is
 * expected here (see docs/design.md); our own messages state every outcome
 * with its reason. -vv shows the libraries' words, verifier logs included.
 */
static int lib_print(enum libbpf_print_level level __attribute__((unused)), const char *fmt,
		     va_list ap)
{
	vlog(XRL_LOG_DEBUG, NULL, fmt, ap);
	return 0;
}

static int xdp_print(enum libxdp_print_level level __attribute__((unused)), const char *fmt,
		     va_list ap)
{
	vlog(XRL_LOG_DEBUG, NULL, fmt, ap);
	return 0;
}

void log_hook_libs(void)
{
	libbpf_set_print(lib_print);
	libxdp_set_print(xdp_print);
}
