#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_pins.sh - end to end: a second `xrl-load attach` on an interface that
# already runs xrl (what a restart or a redeploy does) keeps the program, its
# counters and its buckets; `xrl-load detach` removes program and pins, and a
# later attach starts from scratch.
#
#   1. attach natively, flood one spoofed source for 1 s
#   2. attach again: same program id (ip link and the status line), status
#      says the pins were reused, counters not reset
#   3. flood the same source again at once: its bucket was kept, so it gets
#      only what refilled meanwhile, not a fresh burst
#   4. counters continued: rule.syn.passed = before + Tcp InSegs delta
#   5. detach: no XDP program, pins gone; attach again: new pins, zeroed
#      counters; detach
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_pins
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

# A slow refill makes a kept bucket visible: 5/s with a burst of 100 needs
# 20 s to refill, and a reset would hand out the whole burst again.
RATE=5
BURST=100
RULE="name=syn,proto=tcp,flags=syn,ports=80,rate=$RATE/s,burst=$BURST"
SRC=198.51.100.7

require_env ss
lab_up pin$$
require_native_xdp
start_server

log "1. attach natively on $LAB_PROT_IF, rule $RULE; flood $SRC for 1 s"
st1=$(xrl attach "$LAB_PROT_IF" --mode native --rule "$RULE") || fatal "xrl-load attach failed"
info "$st1"
id1=$(xdp_prog_id "$LAB_PROT_IF")
check_eq "a program is attached (ip link)" "$([ -n "$id1" ] && echo yes || echo no)" yes
check_eq "first attach created the pins" "$(grep -o 'pins new' <<<"$st1")" "pins new"
for m in xrl_buckets xrl_rule_stats xrl_global_stats xrl_rulesets xrl_config; do
	check_eq "pinned $m" "$([ -e "$PIN_DIR/$LAB_PROT_IF/$m" ] && echo present || echo absent)" present
done

seg0=$(snmp prot Tcp InSegs)
flood --dst "$LAB_PROT_IP" --sources "$SRC/32" --threads 1 --cpus 0 --duration 1
t_end1=$(date +%s%N)
sleep 0.2
adm1=$(( $(snmp prot Tcp InSegs) - seg0 ))
exp1=$(expected_admits "$RATE" "$BURST" "$FLOOD_MS")
check_expect "first flood admitted (Tcp InSegs delta)" "$adm1" "$exp1" 10
xrl_snap
pass1=$(snap_get rule.syn.passed)
drop1=$(snap_get rule.syn.dropped)
seen1=$(snap_get global.seen)
info "before the restart: passed $pass1, dropped $drop1, seen $seen1"

log "2. attach again (a restart): the program and its state must be kept"
st2=$(xrl attach "$LAB_PROT_IF" --mode native --rule "$RULE") || fatal "second xrl-load attach failed"
info "$st2"
id2=$(xdp_prog_id "$LAB_PROT_IF")
check_eq "program id unchanged (ip link)" "$id2" "$id1"
check_eq "status line names the same program" "$(sed -n 's/.*prog \([0-9]*\).*/\1/p' <<<"$st2")" "$id1"
check_eq "status line: pins reused" "$(grep -o 'pins reused' <<<"$st2")" "pins reused"
xrl_snap
check_eq "rule.syn.passed not reset" "$(snap_get rule.syn.passed)" "$pass1"
check_eq "rule.syn.dropped not reset" "$(snap_get rule.syn.dropped)" "$drop1"
check_range "global.seen not reset (+ND traffic)" "$(snap_get global.seen)" "$seen1" $((seen1 + 20))

log "3. flood $SRC again at once: its bucket must be the one left half-empty"
seg0=$(snmp prot Tcp InSegs)
t_start2=$(date +%s%N)
flood --dst "$LAB_PROT_IP" --sources "$SRC/32" --threads 1 --cpus 0 --duration 1
sleep 0.2
adm2=$(( $(snmp prot Tcp InSegs) - seg0 ))
gap_ms=$(( (t_start2 - t_end1) / 1000000 ))
# Kept: what refilled during the gap plus the rate during the flood. The
# shell's gap is a lower bound of the packets' gap; allow 300 ms more.
lo=$(awk -v r=$RATE -v ms="$FLOOD_MS" 'BEGIN { printf "%d", r * ms / 1000 * 0.9 }')
hi=$(awk -v r=$RATE -v b=$BURST -v g="$gap_ms" -v ms="$FLOOD_MS" \
	'BEGIN { v = r * (g + 300 + ms) / 1000 * 1.1 + 2; if (v > b + r * ms / 1000) v = b + r * ms / 1000; printf "%d", v }')
reset=$(expected_admits "$RATE" "$BURST" "$FLOOD_MS")
info "gap between the floods >= $gap_ms ms; a reset bucket would admit $reset"
check_range "second flood admitted (bucket kept)" "$adm2" "$lo" "$hi"
check_range "second flood admitted well below a fresh burst" "$adm2" 0 $((reset * 7 / 10))

log "4. counters continued across the restart"
xrl_snap
check_eq "rule.syn.passed = before + Tcp InSegs delta" "$(snap_get rule.syn.passed)" $((pass1 + adm2))
check_eq "rule.syn.dropped = before + (sent - admitted)" "$(snap_get rule.syn.dropped)" \
	$((drop1 + FLOOD_SENT - adm2))
check_eq "program id still unchanged" "$(xdp_prog_id "$LAB_PROT_IF")" "$id1"

log "5. detach removes program and pins; a new attach starts from scratch"
xrl detach "$LAB_PROT_IF" >/dev/null || fatal "xrl-load detach failed"
check_eq "no XDP program after detach (ip link)" "$(xdp_prog_id "$LAB_PROT_IF")" ""
check_eq "pin directory $PIN_DIR/$LAB_PROT_IF removed" \
	"$([ -e "$PIN_DIR/$LAB_PROT_IF" ] && echo present || echo absent)" absent
st3=$(xrl attach "$LAB_PROT_IF" --mode native --rule "$RULE") || fatal "third xrl-load attach failed"
info "$st3"
check_eq "attach after detach: pins new" "$(grep -o 'pins new' <<<"$st3")" "pins new"
check_eq "attach after detach: rule.syn.passed from zero" "$(xrl_stat rule.syn.passed)" 0
id3=$(xdp_prog_id "$LAB_PROT_IF")
check_eq "attach after detach: a new program" "$([ -n "$id3" ] && [ "$id3" != "$id1" ] && echo new || echo "same ($id3)")" new
xrl detach "$LAB_PROT_IF" >/dev/null || fatal "final xrl-load detach failed"
check_eq "no XDP program after the final detach" "$(xdp_prog_id "$LAB_PROT_IF")" ""
finish
