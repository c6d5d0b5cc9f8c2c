#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_policy.sh - end to end: changing xrld's policy at run time.
#
#   1. invalid `xrlctl policy apply` (rate without unit, unknown key, YAML
#      syntax error): exit 1, the message names FILE:LINE:COL of the fault,
#      xrld counts the failures, `policy show` is unchanged, and a flood from
#      a new source is still limited at the old rate (+-10 %)
#   2. SIGHUP after editing the file (50/s -> 200/s): xrld reloads, the
#      counters are not reset, a flood from a new source sees 200/s (+-10 %);
#      a broken file and SIGHUP: refused, 200/s stays in force
#   3. a valid `xrlctl policy apply` (100/s): exit 0, a new source sees 100/s;
#      one that also changes xdp.buckets and metrics (restart-only) is
#      applied saying those two wait for a restart, and policy show and
#      the metrics listener show what runs (was: "applied", and policy
#      show printed the new buckets while the maps kept the old size)
#   4. `xrlctl shadow syn on`: a flood is fully admitted (Tcp InSegs delta =
#      frames sent), shadow_dropped > 0, dropped unchanged, passed still
#      burst + rate * t; `shadow syn off` restores refusals
#   5. xrld's log has each change above with the caller's uid: the refused
#      applies (with their reason), the applied one, shadow on and off
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2119,SC2317  # helpers with optional arguments; functions run through wait_for
set -u
XRL_TEST_NAME=test_xrld_policy
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

RATE=50
BURST=20
TOL=10

require_xrld ss
xrld_lab po$$
start_server
write_config "$XRLD_CONF" "$RATE" "$BURST"
xrld_start
RES=()

# json_status FIELD: a field of the daemon object of `xrlctl --json status`.
json_status() { ctl --json status | jq_py "d['daemon']['$1']"; }
status_is() { [ "$(json_status "$1")" = "$2" ]; }

# rate_shown: the rate of rule syn in `xrlctl policy show`.
rate_shown() { ctl policy show | grep -Eo '[0-9.]+/(s|min|h)' | head -n 1; }

# bad_apply LABEL FILE LINE REGEX: apply FILE, expect exit 1 and a message
# naming FILE:LINE:COL and matching REGEX.
bad_apply() {
	local label=$1 file=$2 line=$3 re=$4 out rc
	out=$(ctl policy apply "$file" 2>&1); rc=$?
	info "$label: $(tr '\n' ' ' <<<"$out")"
	check_rc "$label: policy apply" "$rc" 1
	check_match "$label: names $(basename "$file"):$line:COL" "$out" "$(basename "$file"):$line:[0-9]+: "
	check_match "$label: says what is wrong" "$out" "$re"
	check_match "$label: says the old policy stays" "$out" "running policy stays in force"
	out=$(ctl policy check "$file" 2>&1); rc=$?
	check_rc "$label: policy check" "$rc" 1
	check_match "$label: policy check names FILE:$line:COL" "$out" "$(basename "$file"):$line:[0-9]+: "
}

log "1. invalid policy apply: refused, enforcement unchanged (rule syn $RATE/s burst $BURST)"
shown0=$(rate_shown)
check_eq "policy show: rate in force" "$shown0" "$RATE/s"
bad1=$LAB_TMP/bad_rate.yaml
sed "s|rate: $RATE/s|rate: 100|" "$XRLD_CONF" >"$bad1"
bad_apply "rate without unit" "$bad1" "$(grep -n 'rate: 100$' "$bad1" | cut -d: -f1)" "rate: expected COUNT/PERIOD"
# the column: where the value starts
col=$(awk '/rate: 100$/ { print index($0, "100") }' "$bad1")
check_match "rate without unit: column of the value" "$(ctl policy apply "$bad1" 2>&1)" \
	"bad_rate.yaml:[0-9]+:$col: "
bad2=$LAB_TMP/bad_key.yaml
sed "s|burst: $BURST|bursts: $BURST|" "$XRLD_CONF" >"$bad2"
bad_apply "unknown key" "$bad2" "$(grep -n 'bursts:' "$bad2" | cut -d: -f1)" "unknown key 'bursts'.*did you mean 'burst'"
bad3=$LAB_TMP/bad_syntax.yaml
sed "s|match: { proto: tcp,|match: { proto: tcp, [|" "$XRLD_CONF" >"$bad3"
bad_apply "YAML syntax error" "$bad3" "$(grep -n 'tcp, \[' "$bad3" | cut -d: -f1)" "YAML syntax error"
st=$(ctl --json status)
check_eq "status: reload_failures" "$(jq_py "d['daemon']['reload_failures']" <<<"$st")" 4
check_eq "status: reloads" "$(jq_py "d['daemon']['reloads']" <<<"$st")" 0
check_eq "policy show: rate unchanged" "$(rate_shown)" "$RATE/s"
flood_measure 198.51.100.20/32 --threads 1 --cpus 0 --duration 2
check_expect "after the refused applies: admitted (InSegs)" "$ADM" "$EXP" "$TOL"
check_eq "xrlctl: passed = InSegs delta" "$XP" "$ADM"
RES+=("old rate kept after bad apply: admitted $ADM, expected $EXP")

log "2. SIGHUP reload: $RATE/s -> 200/s"
read -r pb db _ <<<"$(rule_counts)"
sed -i "s|rate: $RATE/s|rate: 200/s|" "$XRLD_CONF"
kill -HUP "$XRLD_PID"
wait_for 5 status_is reloads 1
check_eq "status: reloads after SIGHUP" "$(json_status reloads)" 1
check_match "xrld log: reloaded" "$(cat "$XRLD_LOG")" "reloaded .*xrld.yaml"
check_eq "policy show: new rate" "$(rate_shown)" 200/s
read -r pa da _ <<<"$(rule_counts)"
check_range "reload kept syn passed" "$pa" "$pb" "$((pb + 5))"
check_range "reload kept syn dropped" "$da" "$db" "$((db + 5))"
RATE=200
flood_measure 198.51.100.21/32 --threads 1 --cpus 0 --duration 2
check_expect "after SIGHUP: admitted at 200/s (InSegs)" "$ADM" "$EXP" "$TOL"
check_eq "xrlctl: passed = InSegs delta" "$XP" "$ADM"
RES+=("SIGHUP 50/s -> 200/s: admitted $ADM, expected $EXP")

log "2b. SIGHUP with a broken file: refused, 200/s stays"
cp "$XRLD_CONF" "$LAB_TMP/good.yaml"
sed -i "s|rate: 200/s|rate: 10/s|; s|burst: $BURST|burst: -3|" "$XRLD_CONF"
kill -HUP "$XRLD_PID"
wait_for 5 status_is reload_failures 5
check_eq "status: reload_failures after a bad SIGHUP" "$(json_status reload_failures)" 5
check_match "xrld log: reload refused, names the file" "$(tail -n 3 "$XRLD_LOG")" \
	"reload refused.*xrld.yaml:[0-9]+:[0-9]+: "
check_eq "policy show: rate still" "$(rate_shown)" 200/s
flood_measure 198.51.100.22/32 --threads 1 --cpus 0 --duration 1
check_expect "after a refused SIGHUP: admitted at 200/s (InSegs)" "$ADM" "$EXP" "$TOL"
cp "$LAB_TMP/good.yaml" "$XRLD_CONF"

log "3. valid policy apply: 100/s"
good=$LAB_TMP/rate100.yaml
sed "s|rate: 200/s|rate: 100/s|" "$XRLD_CONF" >"$good"
out=$(ctl policy apply "$good" 2>&1); rc=$?
info "$out"
check_rc "policy apply rate100.yaml" "$rc" 0
check_eq "policy show: applied rate" "$(rate_shown)" 100/s
RATE=100
flood_measure 198.51.100.23/32 --threads 1 --cpus 0 --duration 1
check_expect "after apply: admitted at 100/s (InSegs)" "$ADM" "$EXP" "$TOL"
RES+=("apply 100/s: admitted $ADM, expected $EXP")
ro=$LAB_TMP/restart-only.yaml
sed "s|^metrics: .*|metrics: 127.0.0.1:9202|" "$good" >"$ro"
sed -i 's|^xdp:$|xdp:\n  buckets: 4096|' "$ro"
info "$(grep -n 'buckets\|metrics' "$ro")"
out=$(ctl policy apply "$ro" 2>&1); rc=$?
info "$out"
check_rc "policy apply, buckets and metrics changed" "$rc" 0
check_match "apply: says what waits for a restart" "$out" \
	"applied to 1 interface\(s\), but for xdp.buckets 4096, metrics 127.0.0.1:9202: that takes effect at the next restart"
check_match "policy show: the running buckets" "$(ctl policy show)" "buckets: 1048576 \(default\)"
check_match "policy show: the running metrics" "$(ctl policy show)" "metrics: 127.0.0.1:9101"
check_eq "the metrics listener stays" "$(in_prot curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9101/metrics)" 200
check_match "log: the warning" "$(cat "$XRLD_LOG")" "warning: policy: xdp.buckets 4096, metrics 127.0.0.1:9202: that takes effect at the next restart"

log "4. shadow syn on: nothing refused, would-be refusals counted"
out=$(ctl shadow syn on 2>&1); rc=$?
info "$out"
check_rc "shadow syn on" "$rc" 0
check_eq "policy show --json: shadow override" \
	"$(ctl --json policy show | jq_py "d['shadow_overrides'].get('syn')")" true
flood_measure 198.51.100.24/32 --threads 1 --cpus 0 --rate 20000 --duration 1
check_eq "shadow on: every SYN admitted (InSegs delta = sent)" "$ADM" "$FLOOD_SENT"
check_ge "shadow on: shadow_dropped" "$XS" 1
check_eq "shadow on: dropped unchanged" "$XD" 0
check_eq "shadow on: passed + shadow_dropped = sent" "$((XP + XS))" "$FLOOD_SENT"
check_expect "shadow on: passed (bucket still spent)" "$XP" "$EXP" "$TOL"
RES+=("shadow on: admitted $ADM of $FLOOD_SENT, shadow_dropped $XS")
out=$(ctl shadow syn off 2>&1); rc=$?
check_rc "shadow syn off" "$rc" 0
flood_measure 198.51.100.25/32 --threads 1 --cpus 0 --duration 1
check_ge "shadow off: dropped" "$XD" 1
check_eq "shadow off: shadow_dropped unchanged" "$XS" 0
check_expect "shadow off: admitted (InSegs)" "$ADM" "$EXP" "$TOL"
RES+=("shadow off: admitted $ADM, expected $EXP")

log "5. the log of changes"
lg=$(cat "$XRLD_LOG")
grep 'change' "$XRLD_LOG" | cut -c1-160 | sed 's/^/    /'
check_eq "log: refused applies, by uid 0" \
	"$(grep -c 'warning: change refused: .policy apply .*. by uid 0 (pid [0-9]*): policy refused' "$XRLD_LOG")" 4
check_match "log: a refused apply says why" "$lg" \
	"change refused: \`policy apply .*bad_key.yaml\` by uid 0 .*unknown key 'bursts'"
check_match "log: the applied policy, by uid 0" "$lg" \
	"info: change: \`policy apply .*rate100.yaml\` by uid 0 \(pid [0-9]+\): policy from .*rate100.yaml applied"
check_match "log: shadow on, by uid 0" "$lg" "info: change: \`shadow syn on\` by uid 0 \(pid [0-9]+\)"
check_match "log: shadow off, by uid 0" "$lg" "info: change: \`shadow syn off\` by uid 0 \(pid [0-9]+\)"

log "summary:"
for r in "${RES[@]}"; do info "$r"; done
finish
