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
conc_pair "redis://127.0.0.1:$RP"
info "redis on $RP, xrld A on $PA, B on $PB"
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
check_solo_taken_over B A

info "3. post-paid cost over Redis"
check_post_paid "$A" "$B" "A: "

info "4. a release abandoned while Redis is paused"
check_release_paused A redis

info "5. Redis gone: closed refuses, local bounds per instance"
proc_stop redis
check_backend_gone "$A"
finish
