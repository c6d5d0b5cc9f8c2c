#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# tests/lint/flood_report.sh - scripts/bench/flood/report.py on made-up
# results (no root, no lab): the spoofed-source verdict is judged the way
# docs/benchmarks.md says.
#   1. a defence's spoofed capacity is its highest *paced* step that kept
#      the clients: a flat-out step that passed after a paced one failed
#      does not count (the kernel's lucky 202k of the first run);
#   2. the spoofed scenario alone (no step-flood defences) is judged on X,
#      Y, E2 only, and exits 0 when they are met;
#   3. --update-docs with only spoofed.md rewrites only the spoofed block.
set -u
cd "$(dirname "$0")/../.." || exit 2
REPORT=scripts/bench/flood/report.py
T=$(mktemp -d /tmp/xrl-flood-report.XXXXXX)
trap 'rm -rf "$T"' EXIT
fails=0
check() {
	if [ "$2" = "$3" ]; then
		printf '  ok   %s\n' "$1"
	else
		printf '  FAIL %s: got %s, want %s\n' "$1" "$2" "$3"
		fails=$((fails + 1))
	fi
}

# row DEFENCE STEP RX_PPS NS CONTROL: one line of results.tsv
row() {
	printf '%s\t%s\t%s\t%s\t0.00\t10\t0\t%s\t1200\t0\t0.00\t1.0\t2.0\t%s\tx\n' "$1" "$2" "$3" "$3" "$4" "$5"
}
{
	printf 'defence\tstep\tgen_pps\trx_pps\tring_drop_pct\tbusy_pct\tothers_pct\tns_per_pkt\tlegit_req\tlegit_err\tlegit_err_pct\tp50_ms\tp99_ms\tcontrol\tlegit_detail\n'
	for d in sp_none sp_nft sp_xrl; do
		printf '%s\tidle\t0\t0\t0\t0\t0\t0\t3600\t0\t0.00\t1.0\t2.0\tyes\truns=3\n' "$d"
	done
	row sp_none 100000 100000 4000 yes
	row sp_none 200000 190000 4000 "no:legit p99 150ms>2x idle"
	row sp_none 0 202000 4000 yes
	row sp_nft 100000 100000 4000 yes
	row sp_xrl 100000 100000 900 yes
	row sp_xrl 600000 595000 800 yes
	row sp_xrl 0 800000 700 yes
} >"$T/results.tsv"
printf 'round\tdefence\trx_pps\tbusy_pct\tothers_pct\tns_per_pkt\n1\tsp_none\t1\t1\t0\t4000\n1\tsp_nft\t1\t1\t0\t4000\n1\tsp_xrl\t1\t1\t0\t800\n' \
	>"$T/cost.tsv"

python3 "$REPORT" --results "$T/results.tsv" --spoofed-cost "$T/cost.tsv" --out "$T" >"$T/summary.txt"
rc=$?
last=$(tail -n 1 "$T/summary.txt")
echo "report: $last"
# 1: 595k / 100k (the kernel's flat-out 202k and xrl's 800k do not count)
check "X from paced steps only" "$(sed -n 's/.*spoofed_capacity_vs_kernel=\([^ ]*\).*/\1/p' <<<"$last")" 5.95
check "Y" "$(sed -n 's/.*spoofed_cost_vs_nft_synproxy=\([^ ]*\).*/\1/p' <<<"$last")" 0.20
# 2: no R/E/P verdict without the step floods
check "exit status, the spoofed scenario alone" "$rc" 0
check "no step-flood table written" "$([ -e "$T/table.md" ] && echo yes || echo no)" no

# 3: only the spoofed block of the docs changes
printf 'head\n<!-- flood-table:begin -->\nold steps\n<!-- flood-table:end -->\nmiddle\n<!-- flood-spoofed:begin -->\nold spoofed\n<!-- flood-spoofed:end -->\ntail\n' \
	>"$T/doc.md"
python3 "$REPORT" --update-docs "$T/doc.md" --out "$T"
check "step-flood block kept" "$(sed -n '/flood-table:begin/,/flood-table:end/p' "$T/doc.md" | sed -n 2p)" "old steps"
check "spoofed block rewritten" "$(grep -c 'old spoofed' "$T/doc.md")" 0
check "its new verdict line" "$(grep -c '^spoofed_capacity_vs_kernel=5.95 ' "$T/doc.md")" 1
check "text around the blocks kept" "$(grep -cx 'head\|middle\|tail' "$T/doc.md")" 3

[ "$fails" -eq 0 ] || { echo "flood_report: $fails failed"; exit 1; }
echo "flood_report: PASS"
