/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * log.h - levels, stderr in the foreground and syslog otherwise.
 * log_warn() appends strerror(errno); log_warnx() does not (OpenBSD style).
 * libbpf's and libxdp's own output is routed here at debug level: their
 * warnings are often expected (probing features) and would alarm operators.
 */
#ifndef XRL_LOG_H
#define XRL_LOG_H

enum xrl_log_level {
	XRL_LOG_ERR = 0,
	XRL_LOG_WARN,
	XRL_LOG_INFO,
	XRL_LOG_DEBUG,
};

void log_init(const char *ident, int level, int use_syslog);
void log_set_level(int level);
int log_get_level(void);
/* Route libbpf and libxdp messages through log_*, all at debug (see log.c). */
void log_hook_libs(void);

void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
