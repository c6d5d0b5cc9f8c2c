#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_fleet_cluster.sh - end to end: a fleet (http.fleet) whose
# Redis is a Redis Cluster (backend redis-cluster://, two seeds) of 3
# masters and 3 replicas started here. The fleet's name is chosen so that
# its slot ({fleet:NAME}) is NOT served by the first seed: the fleet's
# connection must find the slot's master (CLUSTER SLOTS), not talk to the
# first seed (which answers every command MOVED).
#
#   1. heartbeats: A, B and C each count 3 live (NODE_SHARE's divisor),
#      the fleet's keys are on the slot's master, no fleet errors
#   2. a key penalised through A is refused through B
#   3. the master of the fleet's slot is killed (SIGKILL): once its replica
#      is promoted, without restarting xrld, every instance's fleet is up
#      again within a few seconds, heartbeats go on, the live count is
#      exact (C stopped: A and B count 2), and a penalty earned through B
#      is refused through A
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_fleet_cluster
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

XRLCTL=${XRLCTL:-$XRL_ROOT/build/xrlctl}
require_http redis-server redis-cli
http_setup

# ---- the cluster -----------------------------------------------------------
redis_cluster_start 6
for k in $(seq 50); do
	FL=fc$$-$k
	FO=$(owner "${RC_PORTS[0]}" "xrl:{fleet:$FL}:live")
	[ -n "$FO" ] && [ "$FO" != "${RC_PORTS[0]}" ] && break
done
[ "$FO" != "${RC_PORTS[0]}" ] || fatal "no fleet name off the first seed"
info "cluster on ${RC_PORTS[*]}; fleet $FL on master $FO (first seed ${RC_PORTS[0]})"

# ---- three xrld --------------------------------------------------------------
fleet_http() {
	cat <<EOF
  backend: redis-cluster://127.0.0.1:${RC_PORTS[0]},127.0.0.1:${RC_PORTS[1]}
  redis_timeout: 300ms
  breaker_cooldown: 500ms
  fleet: $FL
  penalty: { strikes: 2, window: 1s, base: 60s, max: 120s }
  rules:
$(yaml_rule login '{ path_prefix: /login/ }' header:X-User-Id 4/s 2 'on_backend_error: local')
EOF
}
declare -A P M
xrld_http_fleet fleet_http
info "xrld A ${P[A]}, B ${P[B]}, C ${P[C]}"

ctl() { local n=$1; shift; "$XRLCTL" --socket "$HT_TMP/$n.sock" "$@"; }
ask() {
	hreq "http://127.0.0.1:${P[$1]}/v1/auth" -H "X-Forwarded-Method: GET" \
		-H "X-Forwarded-Uri: /$2/x" -H "X-User-Id: $3"
}
live_is() { [ "$(metric "${M[$1]}" xrl_fleet_live_instances)" = "$2" ]; }
up_is() { [ "$(metric "${M[$1]}" xrl_fleet_redis_up)" = "$2" ]; }
# penalise NAME USER: two windows of refusals through NAME (strikes 2)
penalise() {
	local i
	for i in 1 2 3 4; do ask "$1" login "$2"; done
	sleep 1.1
	for i in 1 2 3 4; do ask "$1" login "$2"; done
	sleep 0.6 # the login bucket is full again (4/s): only a penalty refuses now
}
refused_on() { ask "$1" login "$2"; [ "$H_CODE" = 429 ]; }

log "1. heartbeats over the cluster"
for n in A B C; do
	wait_for 6 live_is "$n" 3 || fatal "$n: live instances $(metric "${M[$n]}" xrl_fleet_live_instances), want 3: $(grep -m 3 fleet "${HT_LOG[$n]}")"
	check_eq "$n: xrl_fleet_redis_up" "$(metric "${M[$n]}" xrl_fleet_redis_up)" 1
done
check_match "xrlctl status on B" "$(ctl B status)" "fleet $FL: 3 live instances .*redis up"
check_eq "the live set is on the slot's master (ZCARD on $FO)" \
	"$(redis-cli -p "$FO" zcard "xrl:{fleet:$FL}:live")" 3
check_eq "A: fleet redis errors" "$(metric "${M[A]}" xrl_fleet_redis_errors_total)" 0

log "2. a penalty earned through A is refused through B"
penalise A bad
ask A login good
check_eq "A: another user" "$H_CODE" 200
wait_for 2 refused_on B bad || true
check_eq "B refuses 'bad' (penalised through A)" "$H_CODE" 429
check_match "B's answer says blocked" "$H_BODY" "repeatedly and are blocked"
check_ge "penalty entries in the cluster's hash" "$(redis-cli -p "$FO" hlen "xrl:{fleet:$FL}:pen")" 1

log "3. failover of the fleet's master"
fi=-1
for i in 0 1 2 3 4 5; do [ "${RC_PORTS[$i]}" = "$FO" ] && fi=$i; done
live=${RC_PORTS[$(((fi + 1) % 6))]}
hb0=$(metric "${M[A]}" xrl_fleet_heartbeats_total)
proc_stop "rc$fi" KILL
t0=$(date +%s.%N)
promoted() { local o; o=$(owner "$live" "xrl:{fleet:$FL}:live"); [ -n "$o" ] && [ "$o" != "$FO" ]; }
wait_for 20 promoted || fatal "no replica took the fleet's slot over within 20 s"
NO=$(owner "$live" "xrl:{fleet:$FL}:live")
tp=$(date +%s.%N)
info "replica $NO is master after $(awk -v a="$t0" -v b="$tp" 'BEGIN { printf "%.1f", b - a }') s"
for n in A B C; do
	wait_for 6 up_is "$n" 1 || fatal "$n: the fleet did not reconnect: $(grep fleet "${HT_LOG[$n]}" | tail -n 3)"
done
info "every fleet up again $(awk -v a="$tp" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the promotion"
sleep 1.2
check_ge "A: heartbeats written since the kill" "$(($(metric "${M[A]}" xrl_fleet_heartbeats_total) - hb0))" 1
check_match "A's log: the fleet on the promoted master" "$(grep 'fleet [^ ]*: member ' "${HT_LOG[A]}" | tail -n 1)" "127.0.0.1:$NO"
proc_stop C
for n in A B; do
	wait_for 8 live_is "$n" 2 || fatal "$n: live instances $(metric "${M[$n]}" xrl_fleet_live_instances), want 2"
	check_eq "$n: live instances after C stopped (counted on the new master)" \
		"$(metric "${M[$n]}" xrl_fleet_live_instances)" 2
done
penalise B bad2
wait_for 2 refused_on A bad2 || true
check_eq "A refuses 'bad2' (penalised through B after the failover)" "$H_CODE" 429
for n in A B; do
	kill -0 "${HT_PID[$n]}" 2>/dev/null
	check_eq "xrld $n still the one started" "$?" 0
done

finish
