#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_recommend.sh - end to end: limits from evidence on the identity
# tier (issue 25). A rule in shadow under a guessed limit (10/s, burst 20)
# while tests/e2e/population.py plays 100 keys at 5/s, 10 at 50/s and one
# NAT-like key at 400/s in bursts of 200, for 6 s; then:
#
#   1. `xrlctl recommend api --json`: the NAT key is the maximum (rate
#      within a bin of 400, burst at least 200), and the proposal at the
#      default 0.1 % (which is 0 of ~111 callers) admits every caller;
#      the shadow limit would have refused the 50/s and NAT keys
#   2. `--refuse-at-most 1%`: a proposal below the NAT key's rate, above
#      the 50/s keys' (with the headroom)
#   3. each proposal, written into the rule with shadow off and played
#      again: at 0.1 %, no key is refused; at 1 %, the NAT key alone is
#   4. the evidence outlives a restart (STATE_DIR/peaks.json), and a
#      corrupted file is moved aside with a warning, never written over
#   5. bad input: no such rule, a rule without evidence, --refuse-at-most
#      101%, --headroom 0.5
#   6. the same population with buckets in a real redis-server: the same
#      maximum and proposal (the depth is Redis's TAT, the counts this
#      instance's decisions)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_recommend
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_begin redis-server redis-cli
XRLCTL=$XRL_ROOT/build/xrlctl
STATE=$HT_TMP/state
P=$(free_port)
POP="100x5 10x50 1x400@200"

# policy RATE BURST [LINE...]: the policy with rule api at RATE and BURST
policy() {
	local rate=$1 burst=$2
	shift 2
	http_yaml "$P" none
	[ -z "${BACKEND:-}" ] || printf '  backend: %s\n' "$BACKEND"
	printf '  rules:\n'
	yaml_rule api '' header:X-Key "$rate" "$burst" "$@"
	yaml_rule idle '{ path_prefix: /idle }' header:X-Key 1/s 1
}
rec() { "$XRLCTL" --socket "$HT_TMP/xrld.sock" recommend "$@"; }
play() { "$XRL_PY" "$XRL_ROOT/tests/e2e/population.py" --port "$P" --duration 6 $POP; }
# refused JSON GROUP: the requests refused to the keys of group GROUP
refused() { jget "sum(v['refused'] for k, v in d['keys'].items() if k.startswith('g$2-'))" <<<"$1"; }
others() { jget "sum(v['other'] for v in d['keys'].values())" <<<"$1"; }

policy 10/s 20 "shadow: true" >"$HT_TMP/xrld.yaml"
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P" --state-dir "$STATE"

log "1. the population under a shadow rule, then recommend"
out=$(play)
check_eq "shadow: nothing refused" "$(refused "$out" 0)$(refused "$out" 1)$(refused "$out" 2)" 000
check_eq "every request answered" "$(others "$out")" 0
j=$(rec api --json) || fatal "recommend failed: $j"
info "$(rec api)"
check_range "callers (caller-epochs)" "$(jget "d['callers']" <<<"$j")" 111 222
check_range "max rate (the NAT key, 400/s)" "$(jget "d['rate_per_s']['max']" <<<"$j")" 370 440
check_range "max burst (the NAT key's 200 at once)" "$(jget "d['burst']['max']" <<<"$j")" 200 700
check_range "p50 rate (the 5/s keys)" "$(jget "d['rate_per_s']['p50']" <<<"$j")" 4 7
check_ge "the shadow limit would have refused callers" \
	"$(jget "d['current']['refused_callers']" <<<"$j")" 11
R0=$(jget "d['proposal']['rate_per_s']" <<<"$j")
B0=$(jget "d['proposal']['burst']" <<<"$j")
check_range "0.1%: rate admits the NAT key with 2x headroom" "$R0" 740 900
check_ge "0.1%: burst admits its bursts" "$B0" 400
check_eq "0.1%: refuses no caller" "$(jget "d['proposal']['refused_callers']" <<<"$j")" 0
check_ge "a table of candidates" "$(jget "len(d['candidates'])" <<<"$j")" 3

log "2. at most 1 % of callers refused"
j1=$(rec api --refuse-at-most 1% --json) || fatal "recommend failed: $j1"
R1=$(jget "d['proposal']['rate_per_s']" <<<"$j1")
B1=$(jget "d['proposal']['burst']" <<<"$j1")
check_range "1%: rate above the 50/s keys' (x2), below the NAT key" "$R1" 100 300
check_range "1%: refuses the NAT key's caller-epochs only" \
	"$(jget "d['proposal']['refused_callers']" <<<"$j1")" 1 2

log "3. the proposals enforced"
policy "$R0/s" "$B0" >"$HT_TMP/xrld.yaml"
"$XRLCTL" --socket "$HT_TMP/xrld.sock" policy apply "$HT_TMP/xrld.yaml" >/dev/null ||
	fatal "couldn't apply the 0.1% proposal"
# a bucket kept by name keeps its TAT: the shadow limit's (burst 20 at
# 10/s) is at most 2 s ahead; wait it out
sleep 2.5
out=$(play)
check_eq "0.1% proposal: no key refused" \
	"$(refused "$out" 0) $(refused "$out" 1) $(refused "$out" 2)" "0 0 0"
policy "$R1/s" "$B1" >"$HT_TMP/xrld.yaml"
"$XRLCTL" --socket "$HT_TMP/xrld.sock" policy apply "$HT_TMP/xrld.yaml" >/dev/null ||
	fatal "couldn't apply the 1% proposal"
sleep 1
out=$(play)
check_eq "1% proposal: the 5/s and 50/s keys served" "$(refused "$out" 0) $(refused "$out" 1)" "0 0"
check_ge "1% proposal: the NAT key refused" "$(refused "$out" 2)" 500

log "4. a restart keeps the evidence"
n=$(jget "d['callers']" <<<"$(rec api --json)")
proc_stop xrld
check_eq "peaks.json written at stop" "$([ -s "$STATE/peaks.json" ] && echo yes)" yes
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P" --state-dir "$STATE"
check_eq "the same callers after the restart" "$(jget "d['callers']" <<<"$(rec api --json)")" "$n"
proc_stop xrld
cp "$STATE/peaks.json" "$HT_TMP/good.json"
printf '{"version":1,"hours":[{"rule":"api","hour":1,"callers":{"cells":"x"}}]}' >"$STATE/peaks.json"
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P" --state-dir "$STATE"
check_match "a bad file: said" "$(cat "${HT_LOG[xrld]}")" "couldn't read .*peaks.json.*moved to"
check_eq "a bad file: kept aside" "$(grep -c cells "$STATE/peaks.json.bad")" 1
msg=$(rec api 2>&1)
check_match "a bad file: no evidence, said" "$msg" "no evidence for 'api'"

log "5. bad input"
msg=$(rec nosuch 2>&1); rc=$?
check_eq "no such rule: exit" "$rc" 1
check_match "no such rule: said" "$msg" "no http rule named 'nosuch'"
msg=$(rec idle 2>&1)
check_match "no evidence: said" "$msg" "no evidence for 'idle'"
msg=$(rec api --refuse-at-most 101% 2>&1); rc=$?
check_eq "101%: usage" "$rc" 2
check_match "101%: said" "$msg" "percentage from 0 to 100"
msg=$(rec api --headroom 0.5 2>&1); rc=$?
check_eq "headroom 0.5: usage" "$rc" 2
check_match "headroom 0.5: said" "$msg" "factor from 1"

log "6. buckets in Redis"
proc_stop xrld
redis_start redis
BACKEND=redis://127.0.0.1:${HT_PORT[redis]}
policy 10/s 20 "shadow: true" >"$HT_TMP/xrld.yaml"
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P" --state-dir "$HT_TMP/state-redis"
out=$(play)
check_eq "redis: every request answered" "$(others "$out")" 0
j=$(rec api --json) || fatal "recommend failed: $j"
check_range "redis: callers" "$(jget "d['callers']" <<<"$j")" 111 222
check_range "redis: max rate (the NAT key)" "$(jget "d['rate_per_s']['max']" <<<"$j")" 370 440
check_range "redis: 0.1% rate" "$(jget "d['proposal']['rate_per_s']" <<<"$j")" 740 900
check_ge "redis: 0.1% burst" "$(jget "d['proposal']['burst']" <<<"$j")" 400
calls=$(redis-cli -p "${HT_PORT[redis]}" info commandstats |
	sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')
check_ge "redis: Redis decided (EVALSHA calls)" "${calls:-0}" 10

finish
