#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# xdp-cost.sh - per-packet cost of xrl's XDP program, by BPF_PROG_TEST_RUN.
#
#   sudo scripts/bench/xdp-cost.sh [xdp_cost options, e.g. --rounds 9]
#
# Builds build/bench/xdp_cost, the floor program and the references
# (ref.bpf.c: the least programs that do each path's necessary work), then
# measures in one run (1,000,000 repeats per timed run, interleaved rounds,
# medians) a bare XDP_DROP program, xrl's refusal, lease admit, allowlisted
# and IPv6 refusal paths each beside its reference, and the admits that ask
# the shared bucket. docs/benchmarks.md explains how to read the figures.
#
# The last line is always
# `refuse_vs_ref=X allow_vs_ref=Y admit_vs_ref=Z floor_ns=F` (X the worse
# of IPv4 and IPv6; each the median of per-round ratios). The exit status
# is 0 only if X <= 1.3, Y <= 1.3 and Z <= 1.4 (the project's targets); a
# miss is explained on the lines before it.
set -euo pipefail

REFUSE_MAX=1.3   # refusal, times its reference
ALLOW_MAX=1.3    # allowlisted, times its reference
ADMIT_MAX=1.4    # admit from a lease, times its reference

cd "$(dirname "$(readlink -f "$0")")/../.."

die() {
	echo "xdp-cost: $*" >&2
	exit 2
}

[ "$(id -u)" -eq 0 ] || die "needs root (BPF_PROG_TEST_RUN and map creation): sudo $0"

if ! mountpoint -q /sys/fs/bpf; then
	mkdir -p /sys/fs/bpf
	mount -t bpf bpf /sys/fs/bpf || die "cannot mount bpffs on /sys/fs/bpf"
fi

make -s build/bench/xdp_cost build/bench/floor.bpf.o build/bench/ref.bpf.o || die "build failed"

out=$(mktemp)
trap 'rm -f "$out"' EXIT

if ! build/bench/xdp_cost --floor-obj build/bench/floor.bpf.o --ref-obj build/bench/ref.bpf.o "$@" >"$out"; then
	cat "$out"
	die "measurement failed (see the messages above)"
fi

last=$(tail -n 1 "$out")
num='([0-9]+\.[0-9]{2})'
if ! [[ $last =~ ^refuse_vs_ref=$num\ allow_vs_ref=$num\ admit_vs_ref=$num\ floor_ns=$num$ ]]; then
	cat "$out"
	die "unexpected last line from xdp_cost: '$last'"
fi
refuse=${BASH_REMATCH[1]}
allow=${BASH_REMATCH[2]}
admit=${BASH_REMATCH[3]}

head -n -1 "$out"

rc=0
miss() { # NAME VALUE MAX
	if awk -v x="$2" -v m="$3" 'BEGIN { exit !(x > m) }'; then
		echo "MISS: $1 costs ${2}x its reference; the target is <= ${3}x"
		rc=1
	fi
}
miss refusal "$refuse" "$REFUSE_MAX"
miss allowlisted "$allow" "$ALLOW_MAX"
miss "lease admit" "$admit" "$ADMIT_MAX"
[ "$rc" -eq 0 ] && echo "OK: refusal <= ${REFUSE_MAX}x, allowlisted <= ${ALLOW_MAX}x, lease admit <= ${ADMIT_MAX}x their references"

echo "$last"
exit "$rc"
