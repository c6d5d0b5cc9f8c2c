/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * peaks.h - what callers of a rule really used, as a distribution, and the
 * limit that evidence recommends (issue 25).
 *
 * A caller's use over one epoch is two numbers: its peak sustained rate
 * (the most requests it sent in one 1-s window, per second) and its peak
 * burst (the deepest it went into a bucket's burst: for GCRA the largest
 * (TAT - now) / emit at an admit, in requests). A rule's histogram counts
 * caller-epochs in a two-dimensional grid of log-spaced bins (HDR-style:
 * values below 16 exact, above them 16 bins an octave, so a bin is at most
 * 1/16 = 6.25 % of its value wide). The grid is sparse: the cells a
 * population fills, sorted by (rate bin, burst bin), so a merge is a walk
 * and the size follows the population's spread, not the value range.
 *
 * Each cell carries the caller-epochs in it and their requests. A caller
 * active in several epochs is counted once in each: a share "of callers"
 * is a share of caller-epochs, which weighs a caller by how long it was
 * seen.
 *
 * A candidate (rate R, burst B) refuses a caller-epoch when its peak rate
 * is above R or its peak burst above B. A cell is judged by its bin's
 * upper value (clamped to the largest value seen), so the count errs on
 * the side of refusing, by at most a bin's width. Requests refused are an
 * estimate: a caller over the rate loses the share (r - R) / r of its
 * requests, one only over the burst loses its excess over B.
 *
 * No locking: the owner serialises. No function here prints or exits.
 */
#ifndef XRL_PEAKS_H
#define XRL_PEAKS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define XRL_PEAKS_SUB_BITS   4		  /* 2^4 bins an octave */
#define XRL_PEAKS_VALUE_MAX  (1ULL << 40) /* larger values count as this */
#define XRL_PEAKS_CELLS_MAX  65536	  /* a histogram's cells at most: -E2BIG past it */
#define XRL_PEAKS_BINS	     593	  /* an axis: xrl_peaks_bin(XRL_PEAKS_VALUE_MAX) + 1 */
#define XRL_PEAKS_CANDIDATES 5

/* One cell: caller-epochs whose peaks fell in these bins, and their requests. */
struct xrl_peaks_cell {
	uint32_t rate_bin, burst_bin;
	uint64_t callers;
	uint64_t requests;
};

/* A rule's distribution. Zero it to start; xrl_peaks_free when done. */
struct xrl_peaks {
	struct xrl_peaks_cell *cells; /* sorted by (rate_bin, burst_bin) */
	size_t n, cap;
	uint64_t callers, requests;   /* sums over the cells */
	uint64_t max_rate, max_burst; /* exact largest values seen */
	/* what the rule's own limit refused (or would have, in shadow) */
	uint64_t refused_callers, refused_requests;
};

enum xrl_peaks_axis { XRL_PEAKS_RATE, XRL_PEAKS_BURST };

/* The bin of value v, and the smallest and largest value that bin holds.
 * The last bin holds XRL_PEAKS_VALUE_MAX alone (larger values count as
 * it); a bin past the last is taken as the last. */
uint32_t xrl_peaks_bin(uint64_t v);
uint64_t xrl_peaks_bin_low(uint32_t bin);
uint64_t xrl_peaks_bin_high(uint32_t bin);

/*
 * Count `callers` caller-epochs at (rate, burst) that sent `requests`.
 * O(cells) when it opens a new cell (a sorted insert), O(log cells) else.
 * -ENOMEM, or -E2BIG when the histogram already has XRL_PEAKS_CELLS_MAX,
 * or -EOVERFLOW when h's callers or requests would pass INT64_MAX (so any
 * histogram has a JSON form); a failed add changes nothing. No callers
 * counts nothing (-EINVAL if there are requests).
 */
int xrl_peaks_add(struct xrl_peaks *h, uint64_t rate, uint64_t burst, uint64_t callers,
		  uint64_t requests);
/* Count what the rule's own limit refused: callers with a refusal, requests
 * refused. Saturates at INT64_MAX. */
void xrl_peaks_add_refused(struct xrl_peaks *h, uint64_t callers, uint64_t requests);
/* dst += src, O(cells of both). -ENOMEM, -E2BIG or -EOVERFLOW (as add's)
 * leave dst unchanged. */
int xrl_peaks_merge(struct xrl_peaks *dst, const struct xrl_peaks *src);
/* Empty h, keeping its buffer. */
void xrl_peaks_reset(struct xrl_peaks *h);
void xrl_peaks_free(struct xrl_peaks *h);

/*
 * The q-quantile (0 <= q <= 1) of one axis over caller-epochs: the upper
 * value of the bin where the ceil(q * callers)-th caller-epoch lies,
 * clamped to the exact maximum (q = 1 gives the maximum). 0 when empty.
 * The rank is at least 1, so q = 0 gives the least bin's upper value;
 * q below 0 (or NaN) is taken as 0, above 1 as 1.
 */
uint64_t xrl_peaks_quantile(const struct xrl_peaks *h, enum xrl_peaks_axis axis, double q);

/* What a candidate limit would have refused. */
struct xrl_peaks_refusal {
	uint64_t callers;  /* caller-epochs over the rate or the burst */
	uint64_t requests; /* an estimate, see above */
};

void xrl_peaks_refused(const struct xrl_peaks *h, uint64_t rate, uint64_t burst,
		       struct xrl_peaks_refusal *out);

/* One limit and what it would have refused. */
struct xrl_peaks_limit {
	double share;	/* the share of caller-epochs it was asked to refuse at most */
	uint64_t rate;	/* requests a second */
	uint64_t burst; /* requests */
	struct xrl_peaks_refusal refused;
};

/* The recommendation: the proposal and a few candidates around it. */
struct xrl_peaks_advice {
	struct xrl_peaks_limit proposal;
	struct xrl_peaks_limit cand[XRL_PEAKS_CANDIDATES];
	size_t ncand;
};

/*
 * The least (rate, burst) that refuses at most the share `refuse` (0..1)
 * of caller-epochs, each multiplied by `headroom` (>= 1) and rounded up.
 * "Least" is the smallest rate + burst (what a new caller may send in its
 * first second) over the pairs that keep within the share, then the
 * smaller rate. The candidates are the same at the shares 0, 0.1 %, 1 %
 * and 5 % and the one asked, without repeats (an asked share that is one
 * of those is there once), in increasing share; the proposal is the
 * candidate at the asked share. A limit's `refused` is what the scaled
 * limit would refuse, so at most the share. The rounding up takes a
 * product within 1e-12 of an integer as it (400 * 1.1 is 440), and a
 * limit past UINT64_MAX as UINT64_MAX. The share 1 gives (0, 0).
 * -EINVAL for a share outside [0, 1] or a headroom below 1 or not finite,
 * -ENODATA for an empty histogram.
 */
int xrl_peaks_recommend(const struct xrl_peaks *h, double refuse, double headroom,
			struct xrl_peaks_advice *out);

/*
 * The histogram as JSON (xrl_peaks_to_json: a new object; NULL when out of
 * memory) and back (xrl_peaks_from_json: into a zeroed h, or one whose
 * cells it frees first; -EINVAL for an object that is not one, -ENOMEM,
 * with h left empty). Not one: a key missing or unknown, a value not a
 * non-negative integer, a cell not four of them, a bin out of range, a
 * cell of no callers, cells out of order or repeated, more than
 * XRL_PEAKS_CELLS_MAX of them, sums that are not the cells' or pass
 * INT64_MAX, maxima not in the top bins the cells fill (0 with no cells).
 *   {"callers":N,"requests":N,"max_rate":N,"max_burst":N,
 *    "refused_callers":N,"refused_requests":N,
 *    "cells":[[rate_bin,burst_bin,callers,requests],...]}
 */
json_t *xrl_peaks_to_json(const struct xrl_peaks *h);
int xrl_peaks_from_json(const json_t *j, struct xrl_peaks *h);

#endif /* XRL_PEAKS_H */
