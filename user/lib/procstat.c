// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * procstat.c - process_* as the Prometheus client libraries define them
 * (client_golang's process collector, prometheus_client's in Python): CPU
 * seconds, resident and virtual memory, start time, open and maximum file
 * descriptors, read from /proc the way they read it (stat, limits, fd/,
 * and /proc/stat's btime for the start). Library code: nothing printed,
 * nothing exits.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"
#include "report.h"

int xrl_proc_parse_stat(const char *text, __u64 *ticks, __u64 *start_ticks, __u64 *vsize,
			__u64 *rss_pages)
{
	/* after "pid (comm) ": state, then utime and stime are fields 14 and
	 * 15, starttime 22, vsize 23, rss 24 (proc(5)) */
	const char *p = strrchr(text, ')');
	unsigned long long ut, stime, start, vs, rss;

	if (!p || p[1] != ' ' ||
	    sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d "
		   "%llu %llu %llu",
		   &ut, &stime, &start, &vs, &rss) != 5)
		return -EINVAL;
	*ticks = ut + stime;
	*start_ticks = start;
	*vsize = vs;
	*rss_pages = rss;
	return 0;
}

int xrl_proc_parse_max_fds(const char *text, __u64 *max)
{
	const char *p = strstr(text, "\nMax open files");

	if (!p && !strncmp(text, "Max open files", 14))
		p = text - 1;
	if (!p)
		return -ENOENT;
	p += 15;
	while (*p == ' ')
		p++;
	if (!strncmp(p, "unlimited", 9)) {
		*max = UINT64_MAX;
		return 0;
	}
	if (*p < '0' || *p > '9')
		return -EINVAL;
	*max = strtoull(p, NULL, 10);
	return 0;
}

int xrl_proc_parse_btime(const char *text, __u64 *btime)
{
	const char *p = strstr(text, "\nbtime ");

	if (!p)
		return -ENOENT;
	*btime = strtoull(p + 7, NULL, 10);
	return 0;
}

/* File name under dirfd into buf (NUL-terminated): its length, or -errno. */
static ssize_t read_at(int dirfd, const char *name, char *buf, size_t len)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t r = 0;

	if (fd < 0)
		return -errno;
	while (n + 1 < len && (r = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)r;
	if (r < 0)
		r = -errno;
	close(fd);
	buf[n] = '\0';
	return r < 0 ? r : (ssize_t)n;
}

/* /proc/stat's btime, read once: the boot does not move. */
static __u64 boot_time(void)
{
	static _Atomic __u64 bt;
	char *buf;
	__u64 v = bt;

	if (v)
		return v;
	buf = malloc(64 * 1024); /* /proc/stat grows with the CPUs */
	if (buf && read_at(AT_FDCWD, "/proc/stat", buf, 64 * 1024) > 0 &&
	    !xrl_proc_parse_btime(buf, &v))
		bt = v;
	free(buf);
	return v;
}

/* Entries of dirfd's fd/, the walk's own descriptor not counted when the
 * directory is this process's (self). */
static int count_fds(int dirfd, bool self, __u64 *n)
{
	int fd = openat(dirfd, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;
	struct dirent *e;
	DIR *dir;

	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		err = -errno;
		close(fd);
		return err;
	}
	*n = 0;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			(*n)++;
	if (self && *n)
		(*n)--; /* the walk's own */
	closedir(dir);
	return 0;
}

void xrl_proc_read(int dirfd, bool self, struct xrl_proc_stat *st)
{
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	__u64 ticks, start, vsize, rss;
	char buf[4096];

	memset(st, 0, sizeof(*st));
	if (tck <= 0)
		tck = 100;
	if (read_at(dirfd, "stat", buf, sizeof(buf)) > 0 &&
	    !xrl_proc_parse_stat(buf, &ticks, &start, &vsize, &rss)) {
		st->cpu_s = (double)ticks / (double)tck;
		st->start_s = (double)boot_time() + (double)start / (double)tck;
		st->vm_bytes = vsize;
		st->rss_bytes = rss * (__u64)page;
		st->has_stat = true;
	}
	st->has_fds = !count_fds(dirfd, self, &st->open_fds);
	st->has_max_fds = read_at(dirfd, "limits", buf, sizeof(buf)) > 0 &&
			  !xrl_proc_parse_max_fds(buf, &st->max_fds);
}

void xrl_proc_metrics(struct xrl_buf *b, const struct xrl_proc_stat *st, const char *const *label,
		      int n)
{
	/* the client libraries' names, types and HELP texts */
	static const struct {
		const char *name, *type, *help;
	} fam[] = {
		{ "process_cpu_seconds_total", "counter",
		  "Total user and system CPU time spent in seconds." },
		{ "process_resident_memory_bytes", "gauge", "Resident memory size in bytes." },
		{ "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes." },
		{ "process_start_time_seconds", "gauge",
		  "Start time of the process since unix epoch in seconds." },
		{ "process_open_fds", "gauge", "Number of open file descriptors." },
		{ "process_max_fds", "gauge", "Maximum number of open file descriptors." },
	};

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		xrl_prom_family(b, fam[f].name, fam[f].type, fam[f].help);
		for (int i = 0; i < n; i++) {
			const struct xrl_proc_stat *s = &st[i];
			bool lab = label[i] && label[i][0];

			if ((f < 4 && !s->has_stat) || (f == 4 && !s->has_fds) ||
			    (f == 5 && !s->has_max_fds))
				continue;
			xrl_buf_printf(b, "%s%s%s%s ", fam[f].name, lab ? "{" : "",
				       lab ? label[i] : "", lab ? "}" : "");
			/* every value fits a double exactly: bytes and counts stay
			 * far below 2^53 */
			const double v[] = { s->cpu_s,	 (double)s->rss_bytes, (double)s->vm_bytes,
					     s->start_s, (double)s->open_fds,  (double)s->max_fds };

			xrl_buf_printf(b, f == 0 || f == 3 ? "%.2f\n" : "%.0f\n", v[f]);
		}
	}
}
