/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * log.h - levels, stderr in the foreground and syslog otherwise. When
 * stderr is journald's stream (JOURNAL_STREAM matches it), each line
 * starts with its sd-daemon priority, "<3>" for an error, so
 * `journalctl -p err` finds errors.
 * log_warn() appends strerror(errno); log_warnx() does not (OpenBSD style).
 * libbpf's and libxdp's own output is routed here at debug level: their
 * warnings are often expected (probing features) and would alarm operators.
 */
#ifndef XRL_LOG_H
#define XRL_LOG_H

#include <stdbool.h>

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

/*
 * Aggregated lines, for events a flood can multiply (a penalty per forged
 * source): at most one line per (what, key) per interval (10 s unless
 * set). The first event of a quiet key is written at once, as
 * "KEY: EXAMPLE"; later ones are counted, with the first 3 examples kept,
 * and written as "KEY: N WHAT in T s, e.g. EX1; EX2; EX3" once the
 * interval since the key's last line has passed: at the next event or at
 * log_agg_flush(), which xrld calls every second. Thread-safe; 128 keys
 * with pending lines at once, more are counted and said so at a flush.
 */
void log_agg(int level, const char *key, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* log_agg with its time given (CLOCK_MONOTONIC ns) and the example made. */
void log_agg_at(unsigned long long now_ns, int level, const char *key, const char *what,
		const char *example);
/* Write the lines whose interval has passed (all: every pending one). */
void log_agg_flush(unsigned long long now_ns, bool all);
void log_agg_set_interval(unsigned long long ns);

#endif
