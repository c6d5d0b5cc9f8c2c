#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_stats.sh - end to end: xrld started from a policy file on a veth
# lab limits a SYN flood, and what xrlctl and the metrics endpoint report
# about it agrees with the kernel.
#
#   1. xrld --config (rule syn: 50/s, burst 20) in the protected namespace;
#      `xrlctl --json status`: pid, interface, native, attached, prog id = ip link
#   2. flood SYNs from one spoofed source for 3 s: admitted (Tcp InSegs in
#      the protected namespace) = burst + rate * t +-10 %, xrlctl stats:
#      dropped > 0, passed = InSegs delta, passed + dropped = frames sent
#   3. `xrlctl --json top`: the flooder's /32 listed with rule syn and
#      0 < refused <= dropped; --rule syn -n 1 puts it first
#   4. metrics (curl 127.0.0.1:9101/metrics in the protected namespace):
#      xrl_rule_packets_total{...,rule="syn",verdict="refused"} > 0 and equal
#      to xrlctl's dropped count (allowed: passed); /healthz
#   5. exit codes: unknown verb 2, bad CIDR in deny add 2, bad --ttl 2,
#      deny del of an absent prefix 1, shadow of an unknown rule 1
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2119,SC2317  # helpers with optional arguments; functions run through wait_for
set -u
XRL_TEST_NAME=test_xrld_stats
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

RATE=50
BURST=20
SECS=3
TOL=10
SRC=198.51.100.1

require_xrld ss curl
xrld_lab xs$$
start_server
write_config "$XRLD_CONF" "$RATE" "$BURST"

log "1. xrld --config (rule syn $RATE/s burst $BURST) on $LAB_PROT_IF"
xrld_start
st=$(ctl --json status) || fatal "xrlctl --json status failed"
info "$st"
check_eq "status: daemon.pid" "$(jq_py "d['daemon']['pid']" <<<"$st")" "$XRLD_PID"
check_eq "status: interfaces" "$(jq_py "[i['name'] for i in d['interfaces']]" <<<"$st")" "$LAB_PROT_IF"
check_eq "status: attached" "$(jq_py "d['interfaces'][0]['attached']" <<<"$st")" true
check_eq "status: mode" "$(jq_py "d['interfaces'][0]['mode']" <<<"$st")" native
check_eq "status: prog_id = ip link's" "$(jq_py "d['interfaces'][0]['prog_id']" <<<"$st")" \
	"$(xdp_prog_id "$LAB_PROT_IF")"
ip -n "$LAB_PROT" link show dev "$LAB_PROT_IF" | grep -q 'prog/xdp' &&
	! ip -n "$LAB_PROT" link show dev "$LAB_PROT_IF" | grep -q xdpgeneric
check_eq "ip link shows a native (xdpdrv) program" "$?" 0

log "2. flood SYNs from $SRC for ${SECS}s (1 sender on CPU 0)"
flood_measure "$SRC/32" --threads 1 --cpus 0 --duration "$SECS"
check_ge "xrlctl stats: syn dropped" "$XD" 1
check_expect "admitted (Tcp InSegs delta)" "$ADM" "$EXP" "$TOL"
check_expect "xrlctl stats: syn passed" "$XP" "$EXP" "$TOL"
check_eq "xrlctl stats: passed = Tcp InSegs delta" "$XP" "$ADM"
check_eq "xrlctl stats: passed + dropped = frames sent" "$((XP + XD))" "$FLOOD_SENT"
txt=$(ctl stats) || fatal "xrlctl stats failed"
check_match "xrlctl stats (table) has the syn rule" "$txt" "^ +syn +[0-9]+ +[0-9]+ +[0-9]+"
ctl stats --iface nosuch >/dev/null 2>&1
check_rc "xrlctl stats --iface nosuch" "$?" 1

log "2b. xrlctl --json stats --watch 0.5 during a flood from 198.51.100.5"
flood_bg "$LAB_TMP/flood_w.out" --dst "$LAB_PROT_IP" --dport 80 --sources 198.51.100.5/32 \
	--threads 1 --cpus 0 --duration 2.5
sleep 0.3
# nsenter execs xrlctl, so timeout's SIGINT reaches it: it stops cleanly
w=$(timeout --preserve-status -s INT 1.8 nsenter --net="/run/netns/$LAB_PROT" -- "$XRLCTL" --socket "$XRLD_SOCK" \
	--pin-dir "$PIN_DIR" --json stats --watch 0.5); rc=$?
flood_wait "$LAB_TMP/flood_w.out"
check_rc "stats --watch 0.5 stopped by SIGINT" "$rc" 0
check_range "stats --watch: JSON documents in 1.8 s" "$(grep -c '^{' <<<"$w")" 3 4
last=$(grep '^{' <<<"$w" | tail -n 1)
info "last: $(jq_py "[(k, v) for k, v in d['rules'][0].items() if k.endswith('_per_s')]" <<<"$last")"
check_ge "stats --watch: syn dropped_per_s" \
	"$(jq_py "int(d['rules'][0]['dropped_per_s'])" <<<"$last")" 1000
check_range "stats --watch: syn passed_per_s (rate $RATE/s)" \
	"$(jq_py "int(round(d['rules'][0]['passed_per_s']))" <<<"$last")" $((RATE * 8 / 10)) $((RATE * 12 / 10))
sleep 0.3
passed_now=$(rule_counts | awk '{ print $1 }')
dropped_now=$(rule_counts | awk '{ print $2 }')

log "3. xrlctl top"
top=$(ctl --json top) || fatal "xrlctl --json top failed"
info "top: $top"
ent="[e for e in d if e['source'] == '$SRC/32']"
check_eq "top: $SRC/32 listed" "$(jq_py "len($ent)" <<<"$top")" 1
check_eq "top: its rule" "$(jq_py "${ent}[0]['rule']" <<<"$top")" syn
check_eq "top: its interface" "$(jq_py "${ent}[0]['interface']" <<<"$top")" "$LAB_PROT_IF"
check_range "top: refused (sampled, <= dropped)" "$(jq_py "${ent}[0]['refused']" <<<"$top")" 1 "$XD"
top1=$(ctl --json top --rule syn -n 1) || fatal "xrlctl --json top --rule syn -n 1 failed"
check_eq "top --rule syn -n 1: one entry, the top one" "$(jq_py "[e['source'] for e in d]" <<<"$top1")" \
	"$(jq_py "max(d, key=lambda e: e['refused'])['source']" <<<"$top")"
check_eq "top: sorted by refused, descending" \
	"$(jq_py "[e['refused'] for e in d] == sorted([e['refused'] for e in d], reverse=True)" <<<"$top")" true
out=$(ctl top --rule nosuch 2>&1); rc=$?
check_rc "top --rule nosuch" "$rc" 1
check_match "top --rule nosuch: message" "$out" "no rule named 'nosuch'"

log "4. metrics on 127.0.0.1:9101 (protected namespace)"
m=$(in_prot curl -s --max-time 5 http://127.0.0.1:9101/metrics) || fatal "curl /metrics failed"
mdrop=$(awk -v k="xrl_rule_packets_total{interface=\"$LAB_PROT_IF\",rule=\"syn\",verdict=\"refused\"}" \
	'$1 == k { print $2 }' <<<"$m")
mpass=$(awk -v k="xrl_rule_packets_total{interface=\"$LAB_PROT_IF\",rule=\"syn\",verdict=\"allowed\"}" \
	'$1 == k { print $2 }' <<<"$m")
info "$(grep 'rule="syn"' <<<"$m" | grep packets | tr '\n' ' ')"
check_ge "metrics: syn dropped" "${mdrop:-none}" 1
check_eq "metrics: syn dropped = xrlctl stats" "$mdrop" "$dropped_now"
check_eq "metrics: syn passed = xrlctl stats" "$mpass" "$passed_now"
check_ge "metrics: xrl_samples_read_total" "$(awk '$1 == "xrl_samples_read_total" { print $2 }' <<<"$m")" 1
check_eq "metrics: /healthz" "$(in_prot curl -s --max-time 5 http://127.0.0.1:9101/healthz)" ok

log "5. exit codes"
ctl nosuchverb >/dev/null 2>&1
check_rc "xrlctl nosuchverb" "$?" 2
out=$(ctl deny add 198.51.100.0/33 2>&1); rc=$?
check_rc "deny add 198.51.100.0/33" "$rc" 2
info "  message: $out"
ctl deny add 300.1.2.3 >/dev/null 2>&1
check_rc "deny add 300.1.2.3" "$?" 2
ctl deny add 198.51.100.9/32 --ttl soon >/dev/null 2>&1
check_rc "deny add ... --ttl soon" "$?" 2
out=$(ctl deny del 192.0.2.77/32 2>&1); rc=$?
check_rc "deny del 192.0.2.77/32 (not on the list)" "$rc" 1
check_match "deny del: message" "$out" "not on the deny list"
ctl shadow nosuch on >/dev/null 2>&1
check_rc "shadow nosuch on" "$?" 1
check_eq "deny list still empty" "$(ctl --json deny list | jq_py 'len(d)')" 0

finish
