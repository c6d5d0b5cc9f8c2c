#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# scripts/bench/http-ab.sh - the identity tier before and after a change, in
# one run: scripts/bench/http.sh's cases e_allowed, a, f and c (nginx
# limit_req, xrld's memory backend, redis-benchmark of the limiter's script,
# xrld's Redis backend), once with the tree at REV and once with this tree,
# alternated RUNS times (before, after, before, after, ...), so a neighbour
# or a thermal drift moves both sides alike.
#
#   sudo scripts/bench/http-ab.sh REV [RUNS]
#
# REV is built in a temporary git worktree and measured with its own
# http.sh and gcra.lua (a change may touch the script). Each run is one
# round (ROUNDS=1) of DUR seconds a case. Printed: each run's
# memory_vs_nginx (a / e_allowed) and redis_vs_redisbench (c / f), by
# decisions/s and by server CPU time a decision (http.sh's figures in
# brackets), the medians of each side, and after / before of each median.
# The last line:
#   before_memory_vs_nginx=A after_memory_vs_nginx=B before_redis_vs_redisbench=C
#     after_redis_vs_redisbench=D memory_after_vs_before=B/A redis_after_vs_before=D/C
# Environment: RUNS (5, or the second argument), DUR (6), and http.sh's.
# Exit: 0, or 2 when a run failed to produce its figures.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
REV=${1:?usage: http-ab.sh REV [RUNS]}
RUNS=${2:-${RUNS:-5}}
TMP=$(mktemp -d /tmp/xrl-http-ab.XXXXXX)
BEFORE=$TMP/before

cleanup() {
	git -C "$ROOT" worktree remove --force "$BEFORE" >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT

git -C "$ROOT" worktree add --detach "$BEFORE" "$REV" >/dev/null 2>&1 ||
	{ echo "http-ab: couldn't check out $REV" >&2; exit 2; }
echo "http-ab: building $REV ($(git -C "$BEFORE" log -1 --format=%h))"
make -C "$BEFORE" -j"$(nproc)" build/xrld >"$TMP/build-before.log" 2>&1 ||
	{ tail -n 20 "$TMP/build-before.log" >&2; exit 2; }
make -C "$ROOT" -j"$(nproc)" build/xrld >"$TMP/build-after.log" 2>&1 ||
	{ tail -n 20 "$TMP/build-after.log" >&2; exit 2; }
echo "http-ab: CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
	"$(nproc) CPUs; $RUNS runs a side, alternated"

declare -a MB MA RB RA MCB MCA RCB RCA
one() { # TREE SIDE
	local out line
	out=$TMP/$2-$i.log
	CASES="e_allowed a f c" ROUNDS=1 bash "$1/scripts/bench/http.sh" >"$out" 2>&1 || true
	line=$(grep -o 'memory_vs_nginx=[0-9.]* redis_vs_redisbench=[0-9.]*' "$out" | tail -n 1)
	if [ -z "$line" ]; then
		echo "http-ab: the $2 run $i gave no figures:" >&2
		tail -n 20 "$out" >&2
		exit 2
	fi
	m=${line#memory_vs_nginx=}
	m=${m%% *}
	r=${line##*redis_vs_redisbench=}
	# the same ratios by server CPU time per decision (steadier than
	# decisions/s on a shared machine): http.sh's table of medians
	mc=$(awk '$1 == "memory_allowed_vs_nginx" { print $4 }' "$out" | tail -n 1)
	rc=$(awk '$1 == "redis_allowed_vs_redis_benchmark" { print $4 }' "$out" | tail -n 1)
	echo "  run $i $2: memory_vs_nginx=$m ($mc by CPU) redis_vs_redisbench=$r ($rc by CPU)"
}
for i in $(seq "$RUNS"); do
	# even runs in the other order: neither side always goes first
	if [ $((i % 2)) -eq 1 ]; then
		one "$BEFORE" before; MB+=("$m"); RB+=("$r"); MCB+=("$mc"); RCB+=("$rc")
		one "$ROOT" after; MA+=("$m"); RA+=("$r"); MCA+=("$mc"); RCA+=("$rc")
	else
		one "$ROOT" after; MA+=("$m"); RA+=("$r"); MCA+=("$mc"); RCA+=("$rc")
		one "$BEFORE" before; MB+=("$m"); RB+=("$r"); MCB+=("$mc"); RCB+=("$rc")
	fi
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mb=$(median "${MB[@]}") ma=$(median "${MA[@]}") rb=$(median "${RB[@]}") ra=$(median "${RA[@]}")
rm_=$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", a / b }')
rr=$(awk -v a="$ra" -v b="$rb" 'BEGIN { printf "%.2f", a / b }')
mcb=$(median "${MCB[@]}") mca=$(median "${MCA[@]}") rcb=$(median "${RCB[@]}") rca=$(median "${RCA[@]}")
rmc=$(awk -v a="$mca" -v b="$mcb" 'BEGIN { printf "%.2f", a / b }')
rrc=$(awk -v a="$rca" -v b="$rcb" 'BEGIN { printf "%.2f", a / b }')
echo "| | before ($REV) | after | after / before |"
echo "| --- | ---: | ---: | ---: |"
echo "| memory_vs_nginx (a / e_allowed), decisions/s | $mb | $ma | $rm_ |"
echo "| memory_vs_nginx, by CPU time a decision | $mcb | $mca | $rmc |"
echo "| redis_vs_redisbench (c / f), decisions/s | $rb | $ra | $rr |"
echo "| redis_vs_redisbench, by CPU time a decision | $rcb | $rca | $rrc |"
echo "before_memory_vs_nginx=$mb after_memory_vs_nginx=$ma before_redis_vs_redisbench=$rb" \
	"after_redis_vs_redisbench=$ra memory_after_vs_before=$rm_ redis_after_vs_before=$rr"
