/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * gen.h - what xrl-gen's XDP program (gen.bpf.c) and its userspace (gen.c)
 * share: the read-only configuration and the per-CPU counters.
 *
 * Checksum convention: every "sum" here is a ones' complement sum of the
 * packet's bytes read as raw 16-bit words in the machine's byte order and
 * folded to 16 bits. Ones' complement addition does not care about byte
 * order as long as the words are read and written back the same way, so
 * the program adds raw loads of the fields it rewrites and stores the
 * folded complement without any byte swapping.
 */
#ifndef XRL_GEN_H
#define XRL_GEN_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Bytes of the template frame the program writes back into every frame:
 * a receiver may rewrite a frame in place (an XDP_TX answer) and the page
 * comes back to the generator as it left (see gen.bpf.c). Covers every
 * header the generator builds (Ethernet, a tag, IPv6, TCP: 78 bytes). */
#define XRL_GEN_TMPL 128

enum xrl_gen_mode {
	XRL_GEN_ONE    = 0, /* every frame from src */
	XRL_GEN_SEQ    = 1, /* src + 0 .. src + nsrc - 1, round robin per CPU */
	XRL_GEN_RANDOM = 2, /* src | (random & hostmask) */
};

struct xrl_gen_cfg {
	__u32 ifindex;      /* the sending device: frames of any other are
	                     * passed untouched (see gen.c, the keeper) */
	__u32 family;       /* 4 or 6 */
	__u32 mode;         /* enum xrl_gen_mode */
	__u32 l3_off;       /* bytes from the frame's start to the IP header */
	__u32 l4_off;       /* ... to the TCP/UDP header */
	__u32 udp;          /* 1: UDP datagrams, 0: TCP SYNs */
	__u32 rand_dport;   /* 1: a random destination port per frame */
	__u32 nsrc;         /* XRL_GEN_SEQ: number of sources, >= 1 */
	__u32 base4;        /* XRL_GEN_SEQ, v4: first source, host order */
	__u32 pad;
	__u64 base6_hi;     /* XRL_GEN_SEQ, v6: first source, host order */
	__u64 base6_lo;
	__u32 src[4];       /* ONE and RANDOM: the source (RANDOM: host bits
	                     * zero), network order, v4 in [0] */
	__u32 hostmask[4];  /* RANDOM: the bits to draw, network order */
	__u32 ip_sum;       /* v4: sum of the IP header with saddr and check
	                     * zeroed (see the convention above) */
	__u32 l4_sum;       /* sum of the pseudo header and the L4 segment with
	                     * the source address, sport, seq (TCP), dport (if
	                     * rand_dport) and the checksum zeroed */
	__u32 tmpl_len;     /* bytes of tmpl: the frame's first bytes, at most
	                     * XRL_GEN_TMPL */
	__u32 tmpl[XRL_GEN_TMPL / 4]; /* the template frame's first tmpl_len
	                     * bytes, as they are in the frame */
};

struct xrl_gen_ctr {
	__u64 tx;           /* frames the program returned XDP_TX for */
	__u64 bad;          /* frames too short for the configured headers */
	__u32 next;         /* XRL_GEN_SEQ: index of the next source */
	__u32 pad;
};

#endif /* XRL_GEN_H */
