#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# scripts/demo.sh - `sudo make demo`: xrl against a SYN flood, in a lab of two
# network namespaces joined by a veth pair (tests/e2e/lib.sh), with a web
# server on the protected side and a legitimate client next to the attacker.
#
#   1. 2 s of SYN flood with no protection: every SYN reaches the TCP stack
#   2. xrl attached (native XDP) with a per-source SYN limit, 5 s of flood
#      from 64 spoofed sources while a client fetches the page every 0.2 s
#   3. what was admitted and refused, from `xrl-load stats` and the kernel's
#      counters, and how the legitimate client fared
#
# Builds nothing (make demo has built build/). The lab is torn down on exit,
# on failure and on Ctrl-C. Knobs: DEMO_SECS (5), DEMO_RATE (20), DEMO_BURST (10).
set -u
XRL_TEST_NAME=demo
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/../tests/e2e/lib.sh"

SECS=${DEMO_SECS:-5}
RATE=${DEMO_RATE:-20}
BURST=${DEMO_BURST:-10}
NSRC=64
SOURCES=198.51.100.0/26

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: needs root for network namespaces and XDP: sudo make demo" >&2
	exit 1
fi
for t in ip nsenter curl ss awk "$XRL_PY"; do
	command -v "$t" >/dev/null 2>&1 || { echo "demo: '$t' is missing: sudo make deps" >&2; exit 1; }
done
for b in "$XRL_LOAD" "$XRL_FLOOD"; do
	[ -x "$b" ] || { echo "demo: $b is missing: run make first" >&2; exit 1; }
done
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf ||
	{ echo "demo: couldn't mount a bpffs on /sys/fs/bpf" >&2; exit 1; }
CPUS=0
[ "$(nproc)" -ge 2 ] && CPUS=0,1
NTHR=$(( $(tr -cd ',' <<<"$CPUS" | wc -c) + 1 ))

hr() { printf '%s\n' "------------------------------------------------------------------------"; }
say() { printf '%s\n' "$*"; }
num() { sed ':a; s/\B[0-9]\{3\}\>/,&/; ta' <<<"$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f%%", a * 100 / b; else print "-" }'; }

hr
say "xrl demo: per-source SYN rate limiting in XDP"
hr
lab_up demo$$
start_server
say "lab:       attacker netns $LAB_ATK ($LAB_ATK_IF $LAB_ATK_IP)"
say "             --veth-->  protected netns $LAB_PROT ($LAB_PROT_IF $LAB_PROT_IP, web server on :80)"
say "flood:     TCP SYNs from $NSRC spoofed sources in $SOURCES, $NTHR sender thread(s) on CPU $CPUS"
say "client:    curl http://$LAB_PROT_IP/ from $LAB_ATK_IP every 0.2 s during the protected flood"
say

# ---- 1. no protection ---------------------------------------------------------
say "[1/3] 2 s of flood, no protection ..."
seg0=$(snmp prot Tcp InSegs)
flood --dst "$LAB_PROT_IP" --dport 80 --sources "$SOURCES" --nsrc "$NSRC" --threads "$NTHR" \
	--cpus "$CPUS" --duration 2
sleep 0.3
un_sent=$FLOOD_SENT
un_stack=$(( $(snmp prot Tcp InSegs) - seg0 ))
say "      sent $(num "$un_sent") SYNs; $(num "$un_stack") reached the TCP stack ($(pct "$un_stack" "$un_sent"))"
say

# ---- 2. protected -----------------------------------------------------------------
RULE="name=syn,proto=tcp,flags=syn,ports=80,rate=$RATE/s,burst=$BURST,action=drop"
say "[2/3] attaching xrl: rule $RULE"
status=$(xrl attach "$LAB_PROT_IF" --mode native --rule "$RULE") || fatal "xrl-load attach failed"
say "      $status"
say "      $(ip -n "$LAB_PROT" -d link show dev "$LAB_PROT_IF" | grep -o 'prog/xdp.*' | head -n1)"
say "      ${SECS} s of flood while the client keeps fetching ..."
seg0=$(snmp prot Tcp InSegs)
bg_atk "$XRL_FLOOD" --dev "$LAB_ATK_IF" --dst-mac "$LAB_PROT_MAC" --dst "$LAB_PROT_IP" --dport 80 \
	--sources "$SOURCES" --nsrc "$NSRC" --threads "$NTHR" --cpus "$CPUS" --duration "$SECS" \
	>"$LAB_TMP/flood.out" 2>&1
fpid=$BG_PID
tries=0 ok=0
: >"$LAB_TMP/times"
sleep 0.3
while kill -0 "$fpid" 2>/dev/null && [ "$tries" -lt 200 ]; do
	tries=$((tries + 1))
	r=$(in_atk curl -s -o /dev/null -w '%{http_code} %{time_total}' --connect-timeout 3 \
		--max-time 5 "http://$LAB_PROT_IP/") || true
	if [ "${r%% *}" = 200 ]; then
		ok=$((ok + 1))
		echo "${r#* }" >>"$LAB_TMP/times"
	fi
	sleep 0.2
done
wait "$fpid" || fatal "the flood failed: $(cat "$LAB_TMP/flood.out")"
sleep 0.3
out=$(cat "$LAB_TMP/flood.out")
sent=$(sed -n 's/.*sent=\([0-9]*\).*/\1/p' <<<"$out")
ms=$(sed -n 's/.*duration_ms=\([0-9]*\).*/\1/p' <<<"$out")
pps=$(sed -n 's/.*pps=\([0-9]*\).*/\1/p' <<<"$out")
stack=$(( $(snmp prot Tcp InSegs) - seg0 ))
xrl_snap
passed=$(snap_get rule.syn.passed)
dropped=$(snap_get rule.syn.dropped)
cached=$(snap_get global.refused_cached)
buckets=$(snap_get buckets)
lat=$(sort -n "$LAB_TMP/times" | awk '{ a[NR] = $1 } END { if (NR) printf "median %.1f ms, max %.1f ms", a[int((NR + 1) / 2)] * 1000, a[NR] * 1000 }')
budget=$(awk -v n=$NSRC -v b="$BURST" -v r="$RATE" -v ms="${ms:-0}" 'BEGIN { printf "%d", n * (b + r * ms / 1000) }')
say

# ---- 3. summary ---------------------------------------------------------------------
say "[3/3] summary"
hr
printf '%s\n' "unprotected, 2 s:"
printf '  %-38s %s\n' "SYNs sent" "$(num "$un_sent")"
printf '  %-38s %s (%s)\n' "SYNs reaching the TCP stack" "$(num "$un_stack")" "$(pct "$un_stack" "$un_sent")"
printf '%s\n' "with xrl, $((${ms:-0} / 1000)).$(( (${ms:-0} % 1000) / 100 )) s:"
printf '  %-38s %s (%s pps)\n' "SYNs sent" "$(num "${sent:-0}")" "$(num "${pps:-0}")"
printf '  %-38s %s (%s)\n' "refused in XDP (rule syn, dropped)" "$(num "$dropped")" "$(pct "$dropped" "${sent:-0}")"
printf '  %-38s %s\n' "  of which answered per-CPU cache" "$(num "$cached")"
printf '  %-38s %s (%s)\n' "admitted by xrl (rule syn, passed)" "$(num "$passed")" "$(pct "$passed" "${sent:-0}")"
printf '  %-38s %s\n' "  budget: $NSRC x ($BURST + $RATE/s x t)" "$(num "$budget") (+ the client's own SYNs)"
printf '  %-38s %s\n' "TCP segments reaching the stack" "$(num "$stack")"
printf '  %-38s %s\n' "source buckets in use" "$buckets"
printf '%s\n' "legitimate client:"
printf '  %-38s %s\n' "requests answered 200" "$ok of $tries${lat:+ ($lat)}"
hr
if [ "$tries" -gt 0 ] && [ "$ok" -eq "$tries" ]; then
	say "Every legitimate request was served while $(pct "$dropped" "${sent:-0}") of the flood was dropped at the NIC."
else
	say "WARNING: $((tries - ok)) of $tries legitimate requests failed."
fi
say "Full counters: xrl-load stats (below). Tearing the lab down."
hr
grep -Ev ' 0$| 0 0$' <<<"$XRL_SNAP" | sed 's/^/  /'
xrl detach "$LAB_PROT_IF" >/dev/null
