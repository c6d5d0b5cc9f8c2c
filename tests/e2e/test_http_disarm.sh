#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_disarm.sh - end to end: a rule that refuses its own callers is
# disarmed, a flood never disarms one (issue 25, "never refuse everyone").
#
#   1. a rule mistakenly at 1/s (burst 2) with disarm { refused_sources:
#      20%, window: 30s } against 100 keys at 5/s, 10 at 50/s and one at
#      400/s (tests/e2e/population.py): within its window xrld turns it to
#      shadow, logs a warning, `xrlctl status` names it disarmed with the
#      reason, xrl_http_rule_disarmed{rule} is 1; then the same callers are
#      served (no 429)
#   2. `xrlctl shadow api off` re-arms it (status, metric)
#   3. a rule at 2/s (burst 5) with the same disarm, 50 keys at 1/s and a
#      flood of 64 keys at 25/s each (12.5x the rate) for 25 s: the flood is
#      refused, the keys served, and the rule is never disarmed
#   4. a policy with a bad disarm is refused, naming the field; disarm on a
#      shadow rule is a warning of xrld --check
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_disarm
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_begin
XRLCTL=$XRL_ROOT/build/xrlctl
P=$(free_port)
MP=$(free_port)
DISARM="disarm: { refused_sources: 20%, window: 30s }"

policy() {
	local rate=$1 burst=$2
	shift 2
	printf 'metrics: 127.0.0.1:%s\n' "$MP"
	http_yaml "$P" none
	printf '  rules:\n'
	yaml_rule api '' header:X-Key "$rate" "$burst" "$@"
}
ctl() { "$XRLCTL" --socket "$HT_TMP/xrld.sock" "$@"; }
play() {
	local dur=$1
	shift
	"$XRL_PY" "$XRL_ROOT/tests/e2e/population.py" --port "$P" --duration "$dur" "$@"
}
refused() { jget "sum(v['refused'] for k, v in d['keys'].items() if k.startswith('g$2-'))" <<<"$1"; }
disarmed() { metric "$MP" "xrl_http_rule_disarmed{rule=\"api\"}"; }

log "1. a rule at 1/s against callers at 5/s and more"
policy 1/s 2 "$DISARM" >"$HT_TMP/xrld.yaml"
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P" --state-dir "$HT_TMP/state"
check_eq "armed at start" "$(disarmed)" 0
out=$(play 12 100x5 10x50 1x400@200)
check_ge "it refused them at first" "$(refused "$out" 0)" 100
check_eq "disarmed within its window (metric)" "$(disarmed)" 1
st=$(ctl status)
check_match "status: disarmed, with the reason" "$st" \
	"disarmed: api \(shadow now\): refused [0-9]+ of the [0-9]+ callers it saw in 30s"
check_match "status: the rule in shadow" "$(grep '^api ' <<<"$st")" " yes "
check_match "a warning in the log" "$(cat "${HT_LOG[xrld]}")" "warning: http rule api disarmed"
check_eq "disarms counted" "$(metric "$MP" "xrl_http_rule_disarms_total{rule=\"api\"}")" 1
out=$(play 4 100x5 10x50 1x400@200)
check_eq "then served: 5/s, 50/s and NAT keys" \
	"$(refused "$out" 0) $(refused "$out" 1) $(refused "$out" 2)" "0 0 0"

log "2. shadow off re-arms it"
ctl shadow api off >/dev/null || fatal "shadow off failed"
check_eq "re-armed (metric)" "$(disarmed)" 0
check_nomatch "re-armed (status)" "$(ctl status)" "disarmed: api"

log "3. a flood of 64 keys far over the rate never disarms the rule"
proc_stop xrld
policy 2/s 5 "$DISARM" >"$HT_TMP/xrld.yaml"
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P" --state-dir "$HT_TMP/state"
out=$(play 25 50x1 64x25)
check_eq "the keys at 1/s served" "$(refused "$out" 0)" 0
check_ge "the flood refused" "$(refused "$out" 1)" 20000
check_eq "never disarmed" "$(disarmed)" 0
check_eq "no disarm counted" "$(metric "$MP" "xrl_http_rule_disarms_total{rule=\"api\"}")" 0

log "4. bad input"
for bad in "{ refused_sources: 0%, window: 30s }|percentage from 1% to 100%" \
	"{ refused_sources: 20, window: 5s }|expected 20s to 1h" \
	"{ refused_sources: 20%% }|needs refused_sources and window" \
	"{ refused_sources: x, window: 30s }|percentage from 1% to 100%"; do
	policy 2/s 5 "disarm: ${bad%%|*}" >"$HT_TMP/bad.yaml"
	msg=$("$XRLD" --check "$HT_TMP/bad.yaml" 2>&1)
	check_match "disarm ${bad%%|*}" "$msg" "http.rules\[0\].disarm.*${bad##*|}"
done
policy 2/s 5 "$DISARM" "shadow: true" >"$HT_TMP/shadow.yaml"
check_match "disarm on a shadow rule: warned" "$("$XRLD" --check "$HT_TMP/shadow.yaml" 2>&1)" \
	"warning: http.rules\[0\] \(api\) has disarm: but shadow: true"

finish
