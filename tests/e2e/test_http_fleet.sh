#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_fleet.sh - end to end: three identity-tier instances of one
# fleet (http.fleet) on one redis-server.
#
#   1. heartbeats: each instance counts 3 live (metrics, xrlctl status); a
#      member scored a year ahead is not counted
#   2. a key penalised through A is refused through B (penalties in
#      Redis); `xrlctl penalty list` on B shows rule, key hash (not the
#      key), level; `xrlctl penalty del KEY` on A lifts it on A and B;
#      a ten-year penalty written into Redis's stream is refused
#   2b. hashes pruned while connected: entries with a 1.5-s expiry
#      written to :deny and :pen are gone from Redis within 4 s, with no
#      reconnect; a penalty read from the stream that ends in 100 years is
#      refused (counted) and not enforced; one of 10 days is enforced for
#      at most this instance's penalty.max
#   3. NODE_SHARE: Redis killed; a rule with on_backend_error: local and
#      burst 30 admits 30/3 = 10 (+-1) for one key on each instance
#   4. Redis back, B stopped (TERM) and C killed (its heartbeat lapses): A
#      counts 1 live; Redis killed again: A admits the full burst (30)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_fleet
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

XRLCTL=${XRLCTL:-$XRL_ROOT/build/xrlctl}
http_redis_begin

BURST=30
fleet_http() {
	cat <<EOF
  backend: redis://127.0.0.1:$RP
  redis_timeout: 100ms
  breaker_cooldown: 1s
  fleet: ft$$
  penalty: { strikes: 2, window: 1s, base: 60s, max: 120s }
  rules:
$(yaml_rule local '{ path_prefix: /local/ }' header:X-User-Id 1/min "$BURST" 'on_backend_error: local')
$(yaml_rule login '{ path_prefix: /login/ }' header:X-User-Id 4/s 2)
EOF
}
declare -A P M
xrld_http_fleet fleet_http
info "redis on $RP; xrld A ${P[A]}, B ${P[B]}, C ${P[C]}"

ctl() { local n=$1; shift; "$XRLCTL" --socket "$HT_TMP/$n.sock" "$@"; }
# ask NAME RULE USER: one forward-auth request through instance NAME
ask() {
	hreq "http://127.0.0.1:${P[$1]}/v1/auth" -H "X-Forwarded-Method: GET" \
		-H "X-Forwarded-Uri: /$2/x" -H "X-User-Id: $3"
}
# admits NAME RULE USER N: how many of N requests were 200
admits() {
	local i ok=0
	for i in $(seq "$4"); do
		ask "$1" "$2" "$3"
		[ "$H_CODE" = 200 ] && ok=$((ok + 1))
	done
	echo "$ok"
}
live_is() { [ "$(metric "${M[$1]}" xrl_fleet_live_instances)" = "$2" ]; }

log "1. heartbeats"
for n in A B C; do
	wait_for 5 live_is "$n" 3 || fatal "$n: live instances $(metric "${M[$n]}" xrl_fleet_live_instances), want 3"
done
check_eq "A: xrl_fleet_live_instances" "$(metric "${M[A]}" xrl_fleet_live_instances)" 3
check_match "xrlctl status on B" "$(ctl B status)" "fleet ft$$: 3 live instances .*redis up"
# a member scored a year ahead (a forged one, or a host whose clock ran
# ahead) is no instance: it goes at the next heartbeat, on Redis's clock
redis-cli -p "$RP" ZADD "xrl:{fleet:ft$$}:live" $(( $(date +%s%3N) + 31536000000 )) ghost >/dev/null
sleep 2.2
check_eq "A: a member a year ahead is not counted" "$(metric "${M[A]}" xrl_fleet_live_instances)" 3

log "2. a penalty earned through A is refused through B"
for i in 1 2 3 4; do ask A login bad; done
sleep 1.1
for i in 1 2 3 4; do ask A login bad; done
check_eq "A: the 8th request of 'bad' (two windows of refusals)" "$H_CODE" 429
sleep 0.6 # the login bucket is full again (4/s): only a penalty refuses now
ask A login good
check_eq "A: another user" "$H_CODE" 200
sleep 0.3 # the stream's news reach B (XREAD BLOCK 100ms)
ask B login bad
check_eq "B refuses 'bad' (penalised through A)" "$H_CODE" 429
check_match "B's answer says blocked" "$H_BODY" "repeatedly and are blocked"
ask B login good2
check_eq "B: another user" "$H_CODE" 200
kh=$(printf %s bad | sha256sum | cut -c1-12)
lst=$(ctl B penalty list)
info "B: penalty list: $(echo "$lst" | tail -n +2)"
check_match "B: penalty list shows rule, hash, level" "$lst" "login +$kh +1 +[0-9]+"
check_nomatch "B: penalty list never shows the key" "$lst" " bad( |$)"
check_eq "A: penalty del bad (exit status)" "$(ctl A penalty del bad >/dev/null; echo $?)" 0
grep -q "change: \`penalty del ${kh}" "${HT_LOG[A]}"
check_eq "A's log of the change names the hash, not the key" "$?" 0
lifted_on_b() { ask B login bad; [ "$H_CODE" = 200 ]; }
wait_for 2 lifted_on_b || true
check_eq "B admits 'bad' again" "$H_CODE" 200
ask A login bad
check_eq "A admits 'bad' again" "$H_CODE" 200
check_eq "B: penalty list empty" "$(ctl B --json penalty list)" "[]"
# an entry anyone with Redis wrote for ten years is no penalty xrl makes:
# refused, not enforced (2b: 10 days is held for at most penalty.max)
fh=$(printf %s forged | sha256sum | cut -c1-32)
redis-cli -p "$RP" XADD "xrl:{fleet:ft$$}:log" '*' op add kind pen f "login $fh" \
	v "$(( $(date +%s%3N) + 315360000000 )) 1" src elsewhere >/dev/null
sleep 0.5
check_eq "B: a ten-year penalty from Redis is not held" \
	"$(ctl B --json penalty list | jq_py "len([e for e in d if e['key_hash'] == '$fh'])")" 0

log "2b. expired entries pruned while connected; an absurd expiry refused"
K=xrl:{fleet:ft$$}
soon=$(($(date +%s%3N) + 1500))
redis-cli -p "$RP" hset "$K:deny" 203.0.113.0/24 "$soon 0" >/dev/null
redis-cli -p "$RP" hset "$K:pen" "login $(printf %032d 99)" "$soon 1" >/dev/null
for i in $(seq 20); do redis-cli -p "$RP" hset "$K:pen" "login $(printf %032d "$i")" "1 1" >/dev/null; done
gone() { [ "$(redis-cli -p "$RP" hexists "$K:deny" 203.0.113.0/24)$(redis-cli -p "$RP" hexists "$K:pen" "login $(printf %032d 99)")" = 00 ]; }
wait_for 4 gone || true
check_eq "entries 1.5 s from expiry still in the hashes 4 s later (deny, pen)" \
	"$(redis-cli -p "$RP" hexists "$K:deny" 203.0.113.0/24)$(redis-cli -p "$RP" hexists "$K:pen" "login $(printf %032d 99)")" 00
check_eq "expired penalty entries left" "$(redis-cli -p "$RP" hlen "$K:pen")" 0
pr=0
for n in A B C; do
	pr=$((pr + $(metric "${M[$n]}" xrl_fleet_entries_pruned_total)))
	check_eq "$n: connects to the fleet's Redis (no reconnect)" "$(grep -c 'fleet [^ ]*: member ' "${HT_LOG[$n]}")" 1
done
check_eq "entries pruned (A + B + C): each once" "$pr" 22
redis-cli -p "$RP" xadd "$K:log" '*' op add kind pen f "login $(printf %s absurd | sha256sum | cut -c1-32)" \
	v "$(($(date +%s%3N) + 100 * 365 * 86400000)) 1" src someone >/dev/null
sleep 0.4
ask B login absurd
check_eq "B: a key penalised for 100 years through the stream" "$H_CODE" 200
check_ge "B: entries refused" "$(metric "${M[B]}" xrl_fleet_entries_refused_total)" 1
kl=$(printf %s long | sha256sum | cut -c1-32)
redis-cli -p "$RP" xadd "$K:log" '*' op add kind pen f "login $kl" \
	v "$(($(date +%s%3N) + 10 * 86400000)) 1" src someone >/dev/null
sleep 0.4
ask B login long
check_eq "B: a key penalised for 10 days through the stream is refused" "$H_CODE" 429
left=$(ctl B penalty list | awk -v h="${kl:0:12}" '$2 == h { print $4 }')
check_range "B: ... for no longer than its penalty.max (120 s)" "${left:-none}" 1 120
ctl A penalty del long >/dev/null

log "3. NODE_SHARE: Redis down, three live instances"
proc_stop redis KILL
for n in A B C; do
	got=$(admits "$n" local share1 $((BURST / 3 + 5)))
	info "$n admitted $got of $((BURST / 3 + 5)) for one key (burst $BURST / 3 live)"
	check_range "$n: admitted for one key" "$got" $((BURST / 3 - 1)) $((BURST / 3 + 1))
done
check_match "xrlctl status on A: the last known count" "$(ctl A status)" "3 live instances \\(last known\\).*redis DOWN"

log "4. one instance left: the full burst"
redis_start redis "$RP"
proc_stop B
proc_stop C KILL
wait_for 8 live_is A 1 || fatal "A: live instances $(metric "${M[A]}" xrl_fleet_live_instances), want 1"
check_eq "A: live instances after B stopped and C's heartbeat lapsed" "$(metric "${M[A]}" xrl_fleet_live_instances)" 1
proc_stop redis KILL
got=$(admits A local share2 $((BURST + 5)))
info "A admitted $got of $((BURST + 5)) for one key (burst $BURST, 1 live)"
check_range "A alone: admitted for one key" "$got" $((BURST - 1)) $((BURST + 1))

finish
