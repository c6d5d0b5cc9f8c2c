#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_failstatic.sh - end to end: the data plane does not need xrld.
#
#   1. xrld up (rule syn: 50/s, burst 20); a 6 s SYN flood from one spoofed
#      source; `kill -9` xrld 2 s into it. While the flood goes on: ip link
#      still shows the same program, `xrlctl status` (from the pins) says
#      not running / attached. Over the whole flood the admitted count (Tcp
#      InSegs) = burst + rate * 6 s +-10 %, and xrlctl stats (from the pins)
#      agrees with the kernel.
#   2. restart xrld with the same config and pins: same prog id (xrlctl
#      status and ip link), counters continue (>= before the restart), and
#      a new flood is still limited (+-10 %).
#   3. stop xrld (SIGTERM): it exits 0 and leaves the program attached;
#      `xrlctl stats --json` still returns the counters, `xrlctl status`
#      says not running but shows the interface attached, `deny list` reads
#      the pins.
#   4. `xrlctl detach IFACE` with xrld down: no XDP program on ip link, the
#      pins are gone, traffic is no longer limited.
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2119,SC2317  # helpers with optional arguments; functions run through wait_for
set -u
XRL_TEST_NAME=test_xrld_failstatic
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

RATE=50
BURST=20
TOL=10

require_xrld ss
xrld_lab fs$$
start_server
write_config "$XRLD_CONF" "$RATE" "$BURST"

log "1. xrld up; flood 198.51.100.2 for 6 s; kill -9 xrld at 2 s"
xrld_start
id0=$(ctl --json status | jq_py "d['interfaces'][0]['prog_id']")
info "xrld pid $XRLD_PID, prog id $id0 (ip link: $(xdp_prog_id "$LAB_PROT_IF"))"
check_eq "prog id: xrlctl status = ip link" "$id0" "$(xdp_prog_id "$LAB_PROT_IF")"
seg0=$(snmp prot Tcp InSegs)
read -r p0 d0 _ <<<"$(rule_counts)"
flood_bg "$LAB_TMP/flood1.out" --dst "$LAB_PROT_IP" --dport 80 --sources 198.51.100.2/32 \
	--threads 1 --cpus 0 --duration 6
sleep 2
old_pid=$XRLD_PID
xrld_kill KILL
check_eq "xrld killed by SIGKILL (wait status)" "$XRLD_RC" 137
sleep 0.5
kill -0 "$FLOOD_PID" 2>/dev/null
check_eq "flood still running after the kill" "$?" 0
check_eq "ip link: same program still attached" "$(xdp_prog_id "$LAB_PROT_IF")" "$id0"
st=$(ctl status 2>&1)
check_match "xrlctl status (xrld killed): not running" "$st" "not running"
check_match "xrlctl status (xrld killed): attached" "$st" "^$LAB_PROT_IF +$id0 +native +yes"
read -r pm _ _ <<<"$(rule_counts)"
info "passed so far, read from the pins mid-flood: $((pm - p0))"
flood_wait "$LAB_TMP/flood1.out"
sleep 0.3
adm=$(( $(snmp prot Tcp InSegs) - seg0 ))
read -r p1 d1 _ <<<"$(rule_counts)"
exp=$(expected_admits "$RATE" "$BURST" "$FLOOD_MS")
info "flood: sent $FLOOD_SENT in $FLOOD_MS ms; admitted $adm; xrl passed +$((p1 - p0)) dropped +$((d1 - d0)); expected $exp"
check_expect "admitted over the whole flood (Tcp InSegs delta)" "$adm" "$exp" "$TOL"
check_eq "xrlctl stats (pins): passed = InSegs delta" "$((p1 - p0))" "$adm"
check_eq "xrlctl stats (pins): passed + dropped = sent" "$((p1 - p0 + d1 - d0))" "$FLOOD_SENT"
check_eq "ip link: same program after the flood" "$(xdp_prog_id "$LAB_PROT_IF")" "$id0"
R1="kill -9 at 2 s of a ${FLOOD_MS} ms flood: admitted $adm, expected $exp"

log "2. restart xrld with the same config and pins"
xrld_start
check_eq "a new xrld" "$([ "$XRLD_PID" != "$old_pid" ] && echo new || echo same)" new
id1=$(ctl --json status | jq_py "d['interfaces'][0]['prog_id']")
check_eq "xrlctl status: same prog id after restart" "$id1" "$id0"
check_eq "ip link: same prog id after restart" "$(xdp_prog_id "$LAB_PROT_IF")" "$id0"
read -r p2 d2 _ <<<"$(rule_counts)"
info "counters before the restart: passed $p1 dropped $d1; after: passed $p2 dropped $d2"
check_range "passed not reset by the restart" "$p2" "$p1" "$((p1 + 5))"
check_range "dropped not reset by the restart" "$d2" "$d1" "$((d1 + 5))"
flood_measure 198.51.100.3/32 --threads 1 --cpus 0 --duration 2
check_expect "after restart: admitted from a new source (InSegs)" "$ADM" "$EXP" "$TOL"
check_eq "after restart: passed = InSegs delta" "$XP" "$ADM"
check_ge "after restart: dropped" "$XD" 1
R2="after restart, 2 s flood: admitted $ADM, expected $EXP"

log "3. stop xrld (SIGTERM): the program stays; xrlctl reads the pins"
read -r p3 d3 s3 <<<"$(rule_counts)"
xrld_kill TERM
check_eq "xrld exit status after SIGTERM" "$XRLD_RC" 0
check_match "xrld log: stays attached" "$(tail -n 3 "$XRLD_LOG")" "stays attached"
check_eq "ip link: program still attached" "$(xdp_prog_id "$LAB_PROT_IF")" "$id0"
js=$(ctl --json stats); rc=$?
check_rc "xrlctl --json stats, xrld down" "$rc" 0
check_eq "stats, xrld down: syn passed dropped shadow" \
	"$(jq_py "[(r['passed'], r['dropped'], r['shadow_dropped']) for r in d['rules'] if r['name'] == 'syn'][0]" <<<"$js")" \
	"$p3 $d3 $s3"
st=$(ctl status); rc=$?
info "$(tr '\n' '|' <<<"$st")"
check_rc "xrlctl status, xrld down" "$rc" 0
check_match "status, xrld down: not running" "$st" "^xrld: not running"
check_match "status, xrld down: interface attached" "$st" "^$LAB_PROT_IF +$id0 +native +yes \(enforcing\)"
sj=$(ctl --json status)
check_eq "status --json, xrld down: daemon" "$(jq_py "d['daemon']" <<<"$sj")" null
check_eq "status --json, xrld down: attached" "$(jq_py "d['interfaces'][0]['attached']" <<<"$sj")" true
check_eq "status --json, xrld down: prog_id" "$(jq_py "d['interfaces'][0]['prog_id']" <<<"$sj")" "$id0"
ctl deny list >/dev/null 2>&1
check_rc "xrlctl deny list, xrld down" "$?" 0
out=$(ctl deny add 198.51.100.99/32 2>&1); rc=$?
check_rc "xrlctl deny add, xrld down" "$rc" 1
check_match "deny add, xrld down: message" "$out" "is xrld running"

log "4. xrlctl detach $LAB_PROT_IF with xrld down"
out=$(ctl detach "$LAB_PROT_IF" 2>&1); rc=$?
info "$out"
check_rc "xrlctl detach, xrld down" "$rc" 0
check_eq "ip link: XDP programs" "$(ip -n "$LAB_PROT" -d link show dev "$LAB_PROT_IF" | grep -c 'prog/xdp')" 0
check_eq "pins of $LAB_PROT_IF" "$([ -e "$PIN_DIR/$LAB_PROT_IF" ] && echo present || echo absent)" absent
ctl stats >/dev/null 2>&1
check_rc "xrlctl stats after detach (no state)" "$?" 1
seg0=$(snmp prot Tcp InSegs)
flood --dst "$LAB_PROT_IP" --dport 80 --sources 198.51.100.4/32 --rate 4000 --duration 0.5
sleep 0.3
check_eq "after detach: every SYN admitted (InSegs delta = sent)" "$(( $(snmp prot Tcp InSegs) - seg0 ))" "$FLOOD_SENT"

log "summary: $R1; $R2"
finish
