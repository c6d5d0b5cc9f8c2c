#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_concurrency_redis.sh - end to end: concurrency slots kept in
# Redis, shared by two xrld instances (A and B on one redis-server).
#
#   1. rule checkout {key global, concurrency 20}: 60 requests start at
#      once, alternately on A and B, and hold their slot 2 s
#      (conc_client.py, client-side timestamps): 20 admitted, 40 refused
#      with 503, never more than 20 inside across both; then 20 again
#   2. a holder on A killed without releasing: B refuses its slot until
#      lease_ttl (2 s), then admits; the set lives in Redis
#      (xrl:{solo:*}:c, a sorted set with an expiry)
#   3. post-paid cost over Redis: a check on A takes a slot and a token,
#      a release on B with cost 5 takes 5 more: the next RateLimit on A
#      shows r=3
#   4. a release whose client goes away while Redis is paused (SIGSTOP,
#      longer than redis_timeout): xrld answers nothing to it, stays up, and
#      decides again once Redis is back (the lease runs out by lease_ttl)
#   5. Redis gone: a rule with on_backend_error closed refuses (503), one
#      with local keeps its bound in this instance's memory
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_concurrency_redis
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http redis-server redis-cli
http_setup

redis_start redis
RP=${HT_PORT[redis]}
PA=$(free_port)
PB=$(free_port)
for n in A B; do
	p=PA; [ "$n" = B ] && p=PB
	cat >"$HT_TMP/$n.yaml" <<YAML
http:
  listen: 127.0.0.1:${!p}
  forwarded_from: traefik
  trusted_proxies: [127.0.0.1]
  backend: redis://127.0.0.1:$RP
  redis_timeout: 200ms
  threads: 4
  rules:
$(conc_rules)
    - name: shut
      match: { path_prefix: /api/shut }
      key: global
      concurrency: 3
      on_backend_error: closed
    - name: loc
      match: { path_prefix: /api/loc }
      key: global
      concurrency: 2
      on_backend_error: local
YAML
	xrld_http_start "$n" "$HT_TMP/$n.yaml" "${!p}"
done
info "redis on $RP, xrld A on $PA, B on $PB"
A=http://127.0.0.1:$PA
B=http://127.0.0.1:$PB
rcli() { redis-cli -h 127.0.0.1 -p "$RP" "$@"; }

info "1. 60 at once over A and B against concurrency 20, each holding 2 s"
check_conc_60 "$PA,$PB" ", both instances"
check_eq "every slot given back: the set is gone" "$(rcli exists 'xrl:{checkout:*}:c')" 0
conc_burst "$PA,$PB" 20 0
check_eq "all 20 slots free: 20 admitted again" "$admitted" 20

info "2. a holder on A killed without releasing"
solo_holder_killed "$PA" " on A"
check_eq "the slot set is a sorted set in Redis" "$(rcli type 'xrl:{solo:*}:c')" zset
check_range "it has an expiry (ms)" "$(rcli pttl 'xrl:{solo:*}:c')" 1 2001
hreq "$B/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/solo"
check_eq "B: the slot is still held after the kill" "$H_CODE" 503
check_solo_freed "$B" "B: "
solo=$(hdr X-XRL-Lease)
hreq "$A/v1/lease/$solo" -X DELETE
check_eq "A: DELETE of B's lease" "$H_CODE" 204
hreq "$A/v1/lease/$solo" -X DELETE
check_eq "A: DELETE it again" "$H_CODE" 404

info "3. post-paid cost over Redis"
check_post_paid "$A" "$B" "A: "

info "4. a release abandoned while Redis is paused"
hreq "$A/v1/check" -X POST -d '{"rule":"report","key":"u2"}'
check_eq "A: check admitted" "$H_CODE" 200
lease=$(hdr X-XRL-Lease)
kill -STOP "${HT_PID[redis]}"
code=$(curl -s -m 0.05 -o /dev/null -w '%{http_code}' -X POST -H "X-XRL-Lease: $lease" "$A/v1/release")
check_eq "the release's client gave up (no answer in 50 ms)" "$code" 000
sleep 0.4
kill -CONT "${HT_PID[redis]}"
check_eq "xrld A still runs" "$(kill -0 "${HT_PID[A]}" 2>/dev/null && echo yes)" yes
for _ in $(seq 30); do
	hreq "$A/v1/check" -X POST -d '{"rule":"report","key":"u3"}'
	[ "$H_CODE" = 200 ] && [ -n "$(hdr X-XRL-Lease)" ] && break
	sleep 0.1
done
check_eq "A decides in Redis again (a lease)" "$H_CODE $([ -n "$(hdr X-XRL-Lease)" ] && echo lease)" "200 lease"

info "5. Redis gone: closed refuses, local bounds per instance"
proc_stop redis
for i in 1 2; do
	hreq "$A/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/shut"
	check_eq "shut $i: on_backend_error closed" "$H_CODE" 503
done
codes=""
for i in 1 2 3; do
	hreq "$A/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/loc"
	codes="$codes$H_CODE "
done
check_eq "loc: local slots, concurrency 2 (none released)" "$codes" "200 200 503 "
finish
