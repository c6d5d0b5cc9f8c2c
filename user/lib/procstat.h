/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * procstat.h - what the Prometheus client libraries export as process_*,
 * read from a process's /proc directory (procstat.c).
 */
#ifndef XRL_PROCSTAT_H
#define XRL_PROCSTAT_H

#include <stdbool.h>
#include <linux/types.h>

struct xrl_buf;

/* One process, as the client libraries report it; a field that could not
 * be read is marked so (has_*), and its series is left out. */
struct xrl_proc_stat {
	double cpu_s;	  /* user + system CPU time, s */
	double start_s;	  /* start, Unix time, s */
	__u64 rss_bytes;  /* resident set */
	__u64 vm_bytes;	  /* virtual memory size */
	__u64 open_fds;	  /* entries of fd/ (the reader's own excluded) */
	__u64 max_fds;	  /* soft RLIMIT_NOFILE; UINT64_MAX: unlimited */
	bool has_stat;	  /* cpu_s, start_s, rss_bytes, vm_bytes */
	bool has_fds;	  /* open_fds */
	bool has_max_fds; /* max_fds */
};

/*
 * The fields of a /proc/PID/stat line (text, NUL-terminated): CPU time and
 * start in clock ticks (tck a second), vsize in bytes, rss in pages. The
 * command is skipped to its last ')', so one with spaces or ')' in its
 * name is read right. 0, or -EINVAL for a line that is not one.
 */
int xrl_proc_parse_stat(const char *text, __u64 *ticks, __u64 *start_ticks, __u64 *vsize,
			__u64 *rss_pages);
/* "Max open files" of a /proc/PID/limits text: the soft limit (UINT64_MAX
 * for unlimited). 0, or -ENOENT when the line is missing. */
int xrl_proc_parse_max_fds(const char *text, __u64 *max);
/* "btime" of /proc/stat's text: the boot time, Unix s. 0 or -ENOENT. */
int xrl_proc_parse_btime(const char *text, __u64 *btime);

/*
 * The process whose /proc directory is open at dirfd (/proc/self, or
 * /proc/PID: stat and limits are readable by anyone, fd/ by the owner of
 * the directory; self: it is this process's, whose walk of fd/ is not
 * counted). What cannot be read is left out (has_*). Cost: three small
 * files and one directory walk, a few tens of us.
 */
void xrl_proc_read(int dirfd, bool self, struct xrl_proc_stat *st);

/*
 * The process_* families of the client libraries over n processes: st[i]
 * labelled with label[i] ("" for none, else e.g. `process="identity"`).
 * Each family's HELP and TYPE once, its series then, as the text format
 * wants.
 */
void xrl_proc_metrics(struct xrl_buf *b, const struct xrl_proc_stat *st, const char *const *label,
		      int n);

#endif /* XRL_PROCSTAT_H */
