// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * test_procstat.c - what procstat.c reads for process_*: a /proc/PID/stat
 * line (a command with spaces and ')' in it included), limits' "Max open
 * files" (a number, unlimited), /proc/stat's btime; this process read
 * through /proc/self (plausible values, its own walk of fd/ not counted);
 * and the text: each family's HELP and TYPE once, the series unlabelled or
 * labelled, a field not read left out. No root needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "procstat.h"
#include "report.h"

typedef unsigned long long ull;

static void parse_stat_line(void **state)
{
	/* utime 7 stime 5, starttime 4242, vsize 123456789, rss 300 */
	static const char line[] =
		"1234 (x) (y) z) S 1 1234 1234 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 3 0 4242 "
		"123456789 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
	__u64 ticks = 0, start = 0, vs = 0, rss = 0;

	(void)state;
	CTX("a command with spaces and ')' in its name");
	EQ(xrl_proc_parse_stat(line, &ticks, &start, &vs, &rss), 0);
	EQ(ticks, 12);
	EQ(start, 4242);
	EQ(vs, 123456789);
	EQ(rss, 300);
	CTX("not a stat line");
	EQ(xrl_proc_parse_stat("1234 (x", &ticks, &start, &vs, &rss), (ull)-EINVAL);
	EQ(xrl_proc_parse_stat("1234 (x) S 1 2", &ticks, &start, &vs, &rss), (ull)-EINVAL);
}

static void parse_limits_btime(void **state)
{
	static const char lim[] =
		"Limit                     Soft Limit           Hard Limit           Units     \n"
		"Max cpu time              unlimited            unlimited            seconds   \n"
		"Max open files            1024                 524288               files     \n";
	static const char unl[] =
		"Limit  Soft Limit Hard Limit Units\n"
		"Max open files            unlimited            unlimited            files     \n";
	__u64 v = 0;

	(void)state;
	CTX("limits: the soft limit");
	EQ(xrl_proc_parse_max_fds(lim, &v), 0);
	EQ(v, 1024);
	EQ(xrl_proc_parse_max_fds(unl, &v), 0);
	EQ(v, UINT64_MAX);
	EQ(xrl_proc_parse_max_fds("Limit\nMax processes 1 1 processes\n", &v), (ull)-ENOENT);
	CTX("/proc/stat: btime");
	EQ(xrl_proc_parse_btime("cpu  1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n", &v), 0);
	EQ(v, 1700000000);
	EQ(xrl_proc_parse_btime("cpu  1 2 3\n", &v), (ull)-ENOENT);
}

static void read_self(void **state)
{
	int fd = open("/proc/self", O_RDONLY | O_DIRECTORY | O_CLOEXEC), extra;
	struct xrl_proc_stat a, b;
	double now = (double)time(NULL);

	(void)state;
	CTX("this process through /proc/self");
	assert_true(fd >= 0);
	xrl_proc_read(fd, true, &a);
	EQ(a.has_stat, true);
	EQ(a.has_fds, true);
	EQ(a.has_max_fds, true);
	GE(a.rss_bytes, 4096);
	GE(a.vm_bytes, a.rss_bytes);
	CHECK_(a.start_s > now - 600 && a.start_s <= now + 2, "start %.2f, now %.0f\n", a.start_s,
	       now);
	GE(a.open_fds, 4); /* 0-2 and fd */
	LE(a.open_fds, a.max_fds);
	CTX("one more descriptor open: one more counted, the walk's own never");
	extra = dup(fd);
	xrl_proc_read(fd, true, &b);
	EQ(b.open_fds, a.open_fds + 1);
	close(extra);
	close(fd);
}

/* A process that is gone (its /proc directory of no use): nothing read, so
 * no series is made up for it. */
static void read_gone(void **state)
{
	static const char *const not_procs[] = { "/", "/proc/sys" };

	(void)state;
	for (size_t i = 0; i < sizeof(not_procs) / sizeof(not_procs[0]); i++) {
		int fd = open(not_procs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct xrl_proc_stat st;

		CTX("%s, a directory that is not a process's", not_procs[i]);
		assert_true(fd >= 0);
		xrl_proc_read(fd, false, &st);
		EQ(st.has_stat || st.has_max_fds, false);
		close(fd);
	}
}

static void text(void **state)
{
	static const char *const label[] = { "", "process=\"identity\"" };
	struct xrl_proc_stat st[2] = {
		{ .cpu_s = 1.5,
		  .start_s = 1700000000.25,
		  .rss_bytes = 4096,
		  .vm_bytes = 8192,
		  .open_fds = 7,
		  .max_fds = 1024,
		  .has_stat = true,
		  .has_fds = true,
		  .has_max_fds = true },
		{ .cpu_s = 0.25,
		  .start_s = 1700000001,
		  .rss_bytes = 1,
		  .vm_bytes = 2,
		  .has_stat = true,
		  .has_max_fds = true,
		  .max_fds = 2048 },
	};
	struct xrl_buf b = {};

	(void)state;
	CTX("two processes, the second without fds");
	xrl_proc_metrics(&b, st, label, 2);
	HAS(b.p, "# HELP process_cpu_seconds_total Total user and system CPU time spent in "
		 "seconds.\n# TYPE process_cpu_seconds_total counter\n"
		 "process_cpu_seconds_total 1.50\n"
		 "process_cpu_seconds_total{process=\"identity\"} 0.25\n");
	HAS(b.p, "# TYPE process_start_time_seconds gauge\n"
		 "process_start_time_seconds 1700000000.25\n");
	HAS(b.p, "# TYPE process_open_fds gauge\nprocess_open_fds 7\n# HELP process_max_fds");
	HAS(b.p, "process_max_fds{process=\"identity\"} 2048\n");
	HAS(b.p, "process_resident_memory_bytes 4096\n");
	HAS(b.p, "process_virtual_memory_bytes{process=\"identity\"} 2\n");
	xrl_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_stat_line),
		cmocka_unit_test(parse_limits_btime),
		cmocka_unit_test(read_self),
		cmocka_unit_test(read_gone),
		cmocka_unit_test(text),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
