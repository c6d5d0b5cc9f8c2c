// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * bucket_count.c - how long counting the shared bucket table takes, the
 * way xrld does it (xrl_bucket_count: BPF_MAP_LOOKUP_BATCH, 8192 keys a
 * call) against one key a system call (bpf_map_get_next_key), side by side
 * on one table filled with distinct sources (a flood of spoofed ones).
 *
 *   sudo build/bench/bucket_count [--entries N] [--rounds R]
 *
 * Loads xrl's program without attaching it (a table of N buckets, default
 * 2^20, the production default), fills every bucket from userspace, then
 * times R rounds (default 5) of both ways in turn, and prints the medians.
 * Both must count the same. Last line: batch_vs_walk=X (time of the
 * batched count over the walk's; lower is better).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl.h"

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static long walk(int fd)
{
	struct xrl_bucket_key k, nk;
	void *prev = NULL;
	long n = 0;

	while (!bpf_map_get_next_key(fd, prev, &nk)) {
		k = nk;
		prev = &k;
		n++;
	}
	return n;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "entries", required_argument, NULL, 'n' },
		{ "rounds", required_argument, NULL, 'r' },
		{ 0 }
	};
	long entries = 1L << 20, rounds = 5, nb = 0, nw = 0;
	struct xrl_handle *h = NULL;
	struct xrl_bucket_key k = { .family = 1, .plen = 32 };
	__u64 tat = 1, *tb, *tw;
	int c, fd, rc;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		char *end;
		long v;

		if (c != 'n' && c != 'r') {
			fprintf(stderr, "usage: %s [--entries N] [--rounds R]\n", argv[0]);
			return 2;
		}
		errno = 0;
		v = strtol(optarg, &end, 10);
		if (errno || *end || v < 1 || v > (c == 'n' ? 1L << 24 : 101)) {
			fprintf(stderr, "bucket_count: --%s: expected a number from 1 to %ld, got '%s'\n",
				c == 'n' ? "entries" : "rounds", c == 'n' ? 1L << 24 : 101, optarg);
			return 2;
		}
		*(c == 'n' ? &entries : &rounds) = v;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "bucket_count: needs root (BPF maps): sudo %s\n", argv[0]);
		return 2;
	}
	libbpf_set_print(quiet);
	rc = xrl_open(&(struct xrl_open_opts){ .buckets_max = (__u32)entries, .refused_max = 4096 }, &h);
	if (rc) {
		fprintf(stderr, "bucket_count: loading xrl: %s\n", strerror(-rc));
		return 2;
	}
	fd = xrl_map_fd(h, XRL_MAP_BUCKETS);
	for (long i = 0; i < entries; i++) {
		k.addr[0] = htonl((__u32)(0x0b000000u + (__u32)i)); /* 11.0.0.0/8 onwards */
		if (bpf_map_update_elem(fd, &k, &tat, BPF_ANY)) {
			fprintf(stderr, "bucket_count: filling the table: %s\n", strerror(errno));
			return 2;
		}
	}
	tb = calloc((size_t)rounds, sizeof(*tb));
	tw = calloc((size_t)rounds, sizeof(*tw));
	if (!tb || !tw)
		return 2;
	for (long r = 0; r < rounds; r++) {
		__u64 t0 = mono_ns();

		nb = xrl_bucket_count(h);
		tb[r] = mono_ns() - t0;
		t0 = mono_ns();
		nw = walk(fd);
		tw[r] = mono_ns() - t0;
		if (nb != nw) {
			fprintf(stderr, "bucket_count: batched count %ld, walk %ld\n", nb, nw);
			return 1;
		}
	}
	qsort(tb, (size_t)rounds, sizeof(*tb), cmp_u64);
	qsort(tw, (size_t)rounds, sizeof(*tw), cmp_u64);
	printf("%ld buckets filled, %ld counted; median of %ld rounds:\n", entries, nb, rounds);
	printf("  batched (xrl_bucket_count)  %8.1f ms\n", (double)tb[rounds / 2] / 1e6);
	printf("  one key a call (walk)       %8.1f ms\n", (double)tw[rounds / 2] / 1e6);
	printf("batch_vs_walk=%.3f\n", (double)tb[rounds / 2] / (double)tw[rounds / 2]);
	xrl_close(h);
	return 0;
}
