/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * xrl_gcra.h - the one token-bucket arithmetic of xrl.
 *
 * Compiled into the XDP program and into userspace alike, integer only (the
 * BPF target has no floating point), and unit-tested with a simulated clock.
 *
 * The bucket is kept as GCRA (the generic cell rate algorithm), which is a
 * token bucket written as a single number: the theoretical arrival time TAT,
 * the moment at which the bucket would be full again. With emit = ns per
 * token and tau = emit * burst:
 *
 *   base    = max(TAT, now)
 *   new_tat = base + cost * emit
 *   admit   iff new_tat - now <= tau        (then TAT := new_tat)
 *
 * An idle bucket (TAT in the past) is a full one, so nothing ever has to
 * refill it and long idle periods cannot overflow anything. A clock that
 * does not advance admits exactly `burst` and then refuses. A single 64-bit
 * state is what lets concurrent CPUs share one bucket with compare-and-swap.
 *
 * Units: all times are CLOCK_MONOTONIC nanoseconds. emit is rounded to the
 * nearest ns, so the long-run rate is exact to within 0.5 ns per token: at
 * most 0.5 % at 10 million per second (emit = 100 ns), 0.005 % at 100,000/s.
 *
 * Ranges (checked by xrl_gcra_init): emit in [1, 2^52] ns (1 per 52 days),
 * tau <= 2^62 ns, so with now < 2^62 (146 years of uptime) every sum below
 * fits in 64 bits: base - now <= tau and cost * emit <= tau (a cost above the
 * burst can never be admitted and is refused up front).
 */
#ifndef XRL_GCRA_H
#define XRL_GCRA_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define XRL_NSEC_PER_SEC   1000000000ULL
#define XRL_GCRA_EMIT_MAX  (1ULL << 52)
#define XRL_GCRA_TAU_MAX   (1ULL << 62)
#define XRL_GCRA_BURST_MAX 100000000U

#ifndef XRL_GCRA_INLINE
#define XRL_GCRA_INLINE static inline __attribute__((always_inline))
#endif

/*
 * Decide one request of `cost` tokens (cost already multiplied by emit:
 * inc = cost * emit_ns). Returns 1 and sets *new_tat on admit; returns 0 on
 * refusal and leaves *new_tat = the TAT an admit would have produced, from
 * which the caller derives how long to wait (xrl_gcra_wait).
 */
XRL_GCRA_INLINE int xrl_gcra_decide(__u64 tat, __u64 now, __u64 inc, __u64 tau,
				    __u64 *new_tat)
{
	__u64 base = tat > now ? tat : now;

	*new_tat = base + inc;
	return *new_tat - now <= tau;
}

/*
 * The first moment at which a refused request would be admitted, given the
 * TAT it was refused against: max(TAT, t) + inc - t <= tau holds from
 * t = TAT + inc - tau on. Used for the per-CPU "refused until" state and for
 * Retry-After; a caller that waits until then is admitted (if nobody else
 * spent the tokens meanwhile).
 */
XRL_GCRA_INLINE __u64 xrl_gcra_conform_at(__u64 tat, __u64 inc, __u64 tau)
{
	return tat + inc > tau ? tat + inc - tau : 0;
}

/* Nanoseconds to wait from now until a refused request would be admitted. */
XRL_GCRA_INLINE __u64 xrl_gcra_wait(__u64 tat, __u64 now, __u64 inc, __u64 tau)
{
	__u64 t = xrl_gcra_conform_at(tat, inc, tau);

	return t > now ? t - now : 0;
}

/* Whole tokens left in the bucket at `now` for a bucket at `tat`. */
XRL_GCRA_INLINE __u64 xrl_gcra_remaining(__u64 tat, __u64 now, __u64 emit,
					 __u64 tau)
{
	__u64 used = tat > now ? tat - now : 0;

	if (used >= tau || emit == 0)
		return 0;
	return (tau - used) / emit;
}

/* Nanoseconds from now until the bucket is full again. */
XRL_GCRA_INLINE __u64 xrl_gcra_reset(__u64 tat, __u64 now)
{
	return tat > now ? tat - now : 0;
}

#ifndef __bpf__
#include <errno.h>

struct xrl_gcra_params {
	__u64 emit_ns;   /* ns per token */
	__u64 tau_ns;    /* emit_ns * burst */
	__u32 burst;     /* tokens */
};

/*
 * Convert "tokens per period_ns, burst" into GCRA parameters.
 * Returns 0, -EINVAL for a zero field, -ERANGE when the rate is below one
 * token per 2^52 ns or above one per ns, or burst * emit exceeds 2^62 ns.
 */
static inline int xrl_gcra_init(__u64 tokens, __u64 period_ns, __u32 burst,
				struct xrl_gcra_params *p)
{
	unsigned __int128 emit;

	if (!tokens || !period_ns || !burst)
		return -EINVAL;
	if (burst > XRL_GCRA_BURST_MAX)
		return -ERANGE;
	/* the rate as asked, before rounding: 2/ns must not become 1/ns */
	if (tokens > period_ns ||
	    (unsigned __int128)period_ns > (unsigned __int128)tokens * XRL_GCRA_EMIT_MAX)
		return -ERANGE;
	/* round to nearest: the long-run error is then at most 0.5 ns a token */
	emit = ((unsigned __int128)period_ns * 2 + tokens) / (2 * (unsigned __int128)tokens);
	if (emit < 1 || emit > XRL_GCRA_EMIT_MAX)
		return -ERANGE;
	if (emit * burst > XRL_GCRA_TAU_MAX)
		return -ERANGE;
	p->emit_ns = (__u64)emit;
	p->tau_ns = (__u64)emit * burst;
	p->burst = burst;
	return 0;
}

/*
 * Userspace convenience: take `cost` tokens from the bucket whose state is
 * *tat. Returns 1 (admitted, *tat advanced) or 0 (refused, *tat untouched,
 * *wait_ns = time until the same request would be admitted). A cost above
 * the burst can never be admitted: refused with *wait_ns = UINT64_MAX.
 * A cost of 0 is admitted without touching the bucket.
 */
static inline int xrl_gcra_take(const struct xrl_gcra_params *p, __u64 *tat,
				__u64 now, __u32 cost, __u64 *wait_ns)
{
	__u64 inc, nt;

	*wait_ns = 0;
	if (cost == 0)
		return 1;
	if (cost > p->burst) {
		*wait_ns = ~0ULL;
		return 0;
	}
	inc = (__u64)cost * p->emit_ns;
	if (xrl_gcra_decide(*tat, now, inc, p->tau_ns, &nt)) {
		*tat = nt;
		return 1;
	}
	*wait_ns = xrl_gcra_wait(*tat, now, inc, p->tau_ns);
	return 0;
}
#endif /* !__bpf__ */

#endif /* XRL_GCRA_H */
