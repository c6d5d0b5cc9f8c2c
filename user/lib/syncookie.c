// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * syncookie.c - what the XDP program's cookie SYN-ACKs must offer to agree
 * with the kernel that completes the connection (bpf/xrl_cookie.h).
 */
#include <stdio.h>

#include "xrl.h"

/*
 * The window scale the kernel gives a connection it creates from a cookie:
 * tcp_select_initial_window takes the largest of the listener's buffer,
 * tcp_rmem[2] and rmem_max and shifts it until it fits 16 bits (ilog2 - 15,
 * at most 14). A listener whose SO_RCVBUF exceeds both gets a larger one
 * than this: a known limit (docs/design.md, "SYN cookies").
 */
__u8 xrl_syn_wscale_of(__u64 tcp_rmem_max, __u64 rmem_max)
{
	__u64 space = tcp_rmem_max > rmem_max ? tcp_rmem_max : rmem_max;
	int log = -1;

	while (space) {
		space >>= 1;
		log++;
	}
	if (log <= 15)
		return 0;
	return log - 15 > 14 ? 14 : (__u8)(log - 15);
}

/* The same from this network namespace's sysctls; 7 if they can't be read. */
__u8 xrl_syn_wscale(void)
{
	unsigned long long lo, def, max = 0, rmax = 0;
	FILE *f;
	int n = 0;

	f = fopen("/proc/sys/net/ipv4/tcp_rmem", "r");
	if (f) {
		n += fscanf(f, "%llu %llu %llu", &lo, &def, &max) == 3;
		fclose(f);
	}
	f = fopen("/proc/sys/net/core/rmem_max", "r");
	if (f) {
		n += fscanf(f, "%llu", &rmax) == 1;
		fclose(f);
	}
	return n == 2 ? xrl_syn_wscale_of(max, rmax) : 7;
}
