#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_concurrency_cluster.sh - end to end: concurrency slots kept in
# a Redis Cluster of 3 masters and 3 replicas (backend redis-cluster://,
# two seeds; redis_cluster_start), shared by two xrld instances A and B.
# A set "xrl:{RULE:KEY}:c" has its rule's bucket's hash tag: a key's slots
# and tokens are in one slot, taken in one script call.
#
#   1. rule checkout {key global, concurrency 20}: 60 requests start at
#      once, alternately on A and B, and hold their slot 2 s: 20 admitted,
#      40 refused with 503, never more than 20 inside; then 20 again
#   2. a holder on A killed without releasing: B refuses its slot until
#      lease_ttl (2 s), then admits; the set is a sorted set with an expiry
#      on the master of its slot
#   3. post-paid cost: a check on A takes a slot and a token, a release on
#      B with cost 5 takes 5 more: the next RateLimit on A shows r=3
#   3b. two concurrency rules in two slots (pa global 3, pb per user 1):
#      a request that pa admits and pb refuses gives pa's slot back (the
#      slots of several slots are taken in turn, as tokens are)
#   4. a release whose client goes away while the master of its slot is
#      paused (SIGSTOP): xrld stays up and decides there again
#   5. failover: 5 leases of checkout held, the master of checkout's slot
#      killed (SIGKILL). What happens to the leases it held: Redis
#      replicates each ZADD to the replica as it is written (asynchronously;
#      the test waits until the replica has all 5, as a master that lives a
#      few ms past its writes would have sent them), so once the replica is
#      promoted the 5 are there and still count, until released or
#      lease_ttl. A lease written in the last ms before a master dies, not
#      yet on its replica, is lost with it: the set then holds fewer than
#      were handed out, so the bound can be passed by those few, and their
#      release finds nothing (released 0). Until the promotion, checkout
#      decides per on_backend_error (open: admitted, no slot), and a
#      release to that slot is lost (answered released 0, unknown 1): the
#      lease stays held on the replica until released again or lease_ttl
#      (checked: the promoted replica holds all 5). After it,
#      without restarting xrld: 60 at once get exactly 15 (20 - 5), the 5
#      are released through B, and 20 at once get 20
#   6. the cluster gone: a rule with on_backend_error closed refuses (503),
#      one with local keeps its bound in this instance's memory
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_concurrency_cluster
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http redis-server redis-cli
http_setup

redis_cluster_start 6
LIVE=${RC_PORTS[0]} # a node that stays (refreshed after the failover)
pair_rules() {
	cat <<'YAML'
    - name: pa
      match: { path_prefix: /api/pair }
      key: global
      concurrency: 3
    - name: pb
      match: { path_prefix: /api/pair }
      key: header:X-User-Id
      concurrency: 1
YAML
}
conc_pair "redis-cluster://127.0.0.1:${RC_PORTS[0]},127.0.0.1:${RC_PORTS[1]}" pair_rules
info "cluster on ${RC_PORTS[*]}, xrld A on $PA, B on $PB"
# on KEY CMD...: CMD on the master of KEY's slot now
on() {
	local k=$1
	shift
	redis-cli -p "$(owner "$LIVE" "$k")" "$@" "$k"
}

info "1. 60 at once over A and B against concurrency 20, each holding 2 s"
check_conc_60 "$PA,$PB" ", both instances"
check_eq "every slot given back: the set is gone" "$(on 'xrl:{checkout:*}:c' exists)" 0
conc_burst "$PA,$PB" 20 0
check_eq "all 20 slots free: 20 admitted again" "$admitted" 20

info "2. a holder on A killed without releasing"
solo_holder_killed "$PA" " on A"
check_eq "the slot set is a sorted set on its master" "$(on 'xrl:{solo:*}:c' type)" zset
check_range "it has an expiry (ms)" "$(on 'xrl:{solo:*}:c' pttl)" 1 2001
check_solo_taken_over B A

info "3. post-paid cost over the cluster"
check_post_paid "$A" "$B" "A: "

info "3b. two concurrency rules in two slots: a refusal by the second gives the first's slot back"
for k in $(seq 50); do
	U=u$k-$$
	[ "$(redis-cli -p "$LIVE" cluster keyslot "pb:$U")" != "$(redis-cli -p "$LIVE" cluster keyslot 'pa:*')" ] && break
done
pair() { hreq "$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/pair" -H "X-User-Id: $2"; }
pair "$A" "$U"
check_eq "$U's first request: both slots" "$H_CODE" 200
codes 4 pair "$B" "$U"
check_eq "$U's next 4 via B: refused by pb (429)" "${CODES[*]}" "429 429 429 429"
pa_held() { [ "$(on 'xrl:{pa:*}:c' zcard)" = "$1" ]; }
wait_for 2 pa_held 1
check_eq "pa's set holds the one lease still in use" "$(on 'xrl:{pa:*}:c' zcard)" 1
check_eq "B: give-backs sent" "$(metric "$MB" 'xrl_http_redis_lease_givebacks_total{result="sent"}')" 4
check_eq "B: give-backs that failed" "$(metric "$MB" 'xrl_http_redis_lease_givebacks_total{result="error"}')" 0
pair "$A" "other1-$$"
o1=$H_CODE
pair "$B" "other2-$$"
check_eq "two other users: pa's 2 free slots" "$o1 $H_CODE" "200 200"
pair "$A" "other3-$$"
check_eq "a third: pa full (global: 503)" "$H_CODE" 503

info "4. a release abandoned while the master of its slot is paused"
rm=$(owner "$LIVE" 'xrl:{report:u2}:c')
check_release_paused A "rc$(rc_index "$rm")"

info "5. failover: 5 leases held, the master of checkout's slot killed"
vm=$(owner "$LIVE" 'xrl:{checkout:*}:c')
vr=$(replica_of "$LIVE" "$vm")
[ "$vm" != "$LIVE" ] || LIVE=${RC_PORTS[1]}
[ "$vm" != "$LIVE" ] || LIVE=${RC_PORTS[2]}
[ -n "$vr" ] || fatal "no replica of master $vm"
held=()
for i in 1 2 3 4 5; do
	base=$A
	[ $((i % 2)) = 0 ] && base=$B
	hreq "$base/v1/check" -X POST -d '{"rule":"checkout","key":"*"}'
	[ "$H_CODE" = 200 ] || fatal "check $i of checkout: $H_CODE $H_BODY"
	held+=("$(hdr X-XRL-Lease)")
done
# a replica answers reads of its master's slots after READONLY
on_replica() { printf 'READONLY\nZCARD xrl:{checkout:*}:c\n' | redis-cli -p "$vr" | tail -n 1; }
replicated() { [ "$(on_replica)" = 5 ]; }
wait_for 5 replicated || fatal "the replica $vr has $(on_replica) leases, want 5"
info "killing master rc$(rc_index "$vm") (port $vm); its replica is on $vr"
proc_stop "rc$(rc_index "$vm")" KILL
hreq "$A/v1/check" -X POST -d '{"rule":"checkout","key":"*"}'
info "during the failover: checkout via A $H_CODE in $H_TIME s"
check_eq "... answered (on_backend_error open)" "$H_CODE" 200
check_range "... within redis_timeout + margin (ms)" "$(awk -v t="$H_TIME" 'BEGIN { printf "%d", t * 1000 }')" 0 800
hreq "$A/v1/lease/$(hdr X-XRL-Lease)" -X DELETE
hreq "$A/v1/release" -X POST -d "lease=${held[0]}"
check_eq "a held lease's release while its master is dead: not given back" "$H_CODE $H_BODY" \
	'200 {"released":0,"unknown":1,"charged":0}'
promoted() { [ "$(owner "$LIVE" 'xrl:{checkout:*}:c')" = "$vr" ]; }
wait_for 20 promoted || fatal "the replica $vr did not take checkout's slot over within 20 s"
check_eq "the promoted replica holds the 5 leases (that release was lost)" "$(on 'xrl:{checkout:*}:c' zcard)" 5
# both instances decide on the promoted master again: a lease of each
# shows in its set (a failed node asked for a refresh; at the latest 5 s)
on_redis() {
	local n
	hreq "$1/v1/check" -X POST -d '{"rule":"checkout","key":"*"}'
	n=$(on 'xrl:{checkout:*}:c' zcard)
	hreq "$1/v1/lease/$(hdr X-XRL-Lease)" -X DELETE
	[ "$n" = 6 ]
}
wait_for 10 on_redis "$A" || fatal "A does not decide on the promoted master"
wait_for 10 on_redis "$B" || fatal "B does not decide on the promoted master"
conc_burst "$PA,$PB" 60 2
info "   $CONC_OUT"
check_eq "60 at once after the failover: admitted (20 - 5 held)" "$admitted" 15
check_eq "... refused with 503" "$refused" 45
check_range "... at most 15 inside at any moment" "$max_inside" 1 15
ids=$(IFS=,; echo "${held[*]}")
hreq "$B/v1/release" -X POST -d "lease=$ids"
check_eq "the 5 held leases released through B" "$H_CODE $H_BODY" '200 {"released":5,"unknown":0,"charged":0}'
conc_burst "$PA,$PB" 20 0
check_eq "then 20 at once: 20 admitted" "$admitted" 20
for n in A B; do
	kill -0 "${HT_PID[$n]}" 2>/dev/null
	check_eq "xrld $n still the one started" "$?" 0
done

info "6. the cluster gone: closed refuses, local bounds per instance"
for i in "${!RC_PORTS[@]}"; do
	[ "${RC_PORTS[$i]}" = "$vm" ] || proc_stop "rc$i" KILL
done
check_backend_gone "$A"
finish
