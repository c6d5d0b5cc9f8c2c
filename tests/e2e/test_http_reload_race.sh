#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_reload_race.sh - end to end: reloads that drop and bring back the
# http: section while the metrics listener is scraped without pause.
#
# The metrics thread reads the identity tier, the policy and the daemon's
# counters while the main loop replaces or bumps them; the first two must be
# swapped under the lock the scrape holds, the counters be atomic (a reload
# that dropped http: used to free the tier under a scrape). `make test` runs
# this on a ThreadSanitizer xrld (tests/run.sh group tsan), which reported 16
# races on the old code and none now; on a plain or ASan build the window is
# too narrow to hit reliably. 20 reloads alternate between a policy with
# http: and one without, while two scrapers loop.
#
#   1. xrld is alive after the reloads, and reports 20 of them, 0 failed
#   2. its log has no sanitizer report
#   3. the last policy (with http:) answers: 200 on POST /v1/check
#   4. counters carried by rule name under load: 300 checks of rule api
#      while 6 reloads keep the http: section but move api behind a new
#      rule and back; xrl_http_rule_decisions_total{rule="api"} allowed
#      and xrl_http_responses_total{code="200"} equal the 200s the client
#      got (no count lost or doubled across a reload), and the moving
#      rule's series comes and goes; `promtool check metrics` of the
#      scrapes in the middle and at the end finds no problem
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_reload_race
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http promtool
http_setup

P=$(free_port)
M=$(free_port)
write_policy() {
	printf 'metrics: 127.0.0.1:%s\n' "$M" >"$HT_TMP/x.yaml.new"
	if [ "$1" = with ]; then
		cat >>"$HT_TMP/x.yaml.new" <<EOF
$(http_yaml "$P")
  rules:
$(yaml_rule api '{ path_prefix: /api/ }' header:X-User-Id 100/s 100)
EOF
	elif [ "$1" = moved ]; then # api's index moves behind a new rule
		cat >>"$HT_TMP/x.yaml.new" <<EOF
$(http_yaml "$P")
  rules:
$(yaml_rule first '{ path_prefix: /first/ }' header:X-User-Id 100/s 100)
$(yaml_rule api '{ path_prefix: /api/ }' header:X-User-Id 100/s 100)
EOF
	fi
	mv "$HT_TMP/x.yaml.new" "$HT_TMP/x.yaml"
}
write_policy with
xrld_http_start x "$HT_TMP/x.yaml" "$P"

scrape() {
	while :; do curl -s -m 1 -o /dev/null "http://127.0.0.1:$M/metrics"; done
}
scrape & HT_PIDS+=("$!")
scrape & HT_PIDS+=("$!")

log "1. 20 reloads, alternating without and with http:, under two scrapers"
# each reload is waited for (its log line) before the next signal: one
# that adds the http: section starts an identity process, which takes
# longer than 0.15 s under ThreadSanitizer, and signals sent meanwhile
# would merge into one
n=0
# reload_to WHICH: the policy WHICH, SIGHUP, and xrld's log line of it (up
# to 5 s); n counts the reloads sent
reload_to() {
	write_policy "$1"
	kill -HUP "${HT_PID[x]}"
	n=$((n + 1))
	for _ in $(seq 100); do
		[ "$(grep -c '^xrld: info: reloaded ' "${HT_LOG[x]}")" -ge "$n" ] && break
		sleep 0.05
	done
}
for i in $(seq 10); do
	for w in without with; do
		reload_to "$w"
		sleep 0.15
	done
done
sleep 0.5
kill -0 "${HT_PID[x]}" 2>/dev/null
check_eq "xrld alive after the reloads" "$?" 0
st=$(curl -s -m 2 "http://127.0.0.1:$M/metrics")
check_eq "reloads counted" "$(awk '$1 == "xrl_config_reloads_total{result=\"success\"}" { print $2 }' <<<"$st")" 20
check_eq "reload failures" "$(awk '$1 == "xrl_config_reloads_total{result=\"failure\"}" { print $2 }' <<<"$st")" 0

log "2. no sanitizer report in xrld's log"
check_eq "AddressSanitizer / runtime error lines" \
	"$(grep -cE 'AddressSanitizer|ThreadSanitizer|runtime error:' "${HT_LOG[x]}")" 0

log "3. the identity tier answers after the last reload"
code=$(curl -s -o /dev/null -w '%{http_code}' -m 2 -X POST -H 'Content-Type: application/json' \
	--data-binary '{"rule":"api","key":"u1","cost":1}' "http://127.0.0.1:$P/v1/check")
check_eq "a check answered" "$code" 200

log "4. counters carried by rule name: 300 checks while 6 reloads move rule api"
checks() {
	for i in $(seq 300); do
		curl -s -o /dev/null -w '%{http_code}\n' -m 2 -X POST -H 'Content-Type: application/json' \
			--data-binary "{\"rule\":\"api\",\"key\":\"k$i\",\"cost\":1}" \
			"http://127.0.0.1:$P/v1/check"
	done >"$HT_TMP/codes.txt"
}
checks &
CHECKS=$!
for w in moved with moved with moved with; do
	reload_to "$w"
	[ "$w" = moved ] && mid=$(curl -s -m 2 "http://127.0.0.1:$M/metrics")
	sleep 0.2
done
wait "$CHECKS"
st=$(curl -s -m 2 "http://127.0.0.1:$M/metrics")
ok=$(grep -c '^200$' "$HT_TMP/codes.txt")
info "answers: $(sort "$HT_TMP/codes.txt" | uniq -c | tr '\n' ' ')"
check_eq "the client's checks: all 200" "$ok" 300
check_eq "reloads counted" "$(awk '$1 == "xrl_config_reloads_total{result=\"success\"}" { print $2 }' <<<"$st")" 26
check_eq "api allowed = the 200s (and step 3's), across 6 reloads" \
	"$(awk '$1 == "xrl_http_rule_decisions_total{rule=\"api\",verdict=\"allowed\"}" { print $2 }' <<<"$st")" \
	$((ok + 1))
check_eq "xrl_http_responses_total{code=\"200\"} = the 200s" \
	"$(awk '$1 == "xrl_http_responses_total{code=\"200\"}" { print $2 }' <<<"$st")" $((ok + 1))
check_eq "with rule first in force: its series" "$(grep -c '^xrl_http_rule_decisions_total{rule="first"' <<<"$mid")" 3
check_eq "after it went: no series of rule first" "$(grep -c 'rule="first"' <<<"$st")" 0
for w in mid st; do
	out=$(promtool check metrics <<<"${!w}" 2>&1)
	[ -n "$out" ] && info "promtool ($w): $out"
	check_eq "promtool check metrics ($w): problems" "$(printf '%s' "$out" | grep -c .)" 0
done
finish
