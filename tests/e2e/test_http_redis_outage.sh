#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_redis_outage.sh - end to end: when the shared Redis hangs or dies,
# every rule falls back per its on_backend_error, no answer waits longer than
# redis_timeout (plus a margin), the breaker keeps answers fast, and when
# Redis is back both instances share limits again within a few seconds.
#
# Two xrld instances A and B on one redis-server (redis_timeout 100ms,
# breaker_cooldown 1s), rules open, closed and local (each 1/min, burst 3).
#
#   1. Redis up: a user spent via A is refused via B (shared)
#   2. Redis hung (SIGSTOP) for 2.5 s of sequential requests: all answered
#      (open rule: 200) in < 0.5 s; at most one slow answer (>= 80 ms) per
#      breaker cooldown; breaker open in the metrics
#   3. Redis killed (SIGKILL): open -> 200, closed -> 503 with Retry-After and
#      a problem body, local -> exactly burst 200s then 429 (per instance);
#      every answer < 0.5 s; /healthz says redis is down; fallback counters
#   4. Redis restarted on the same port: both instances use it again within
#      3 s; a user spent via A is refused via B; the connections A's 4 server
#      threads held before the outage cause no backend error afterwards
#   5. Redis restarted (SIGTERM, start) with no request in between: the next
#      64 requests at once on the fail-closed rule are all 200, no backend
#      error (a connection Redis closed while idle is not an outage)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_redis_outage
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http redis-server redis-cli
http_setup

TIMEOUT_MS=100
MAX_S=0.5          # redis_timeout + margin
redis_start redis
RP=${HT_PORT[redis]}
PA=$(free_port)
PB=$(free_port)
MA=$(free_port)
for n in A B; do
	p=PA; [ "$n" = B ] && p=PB
	{
		[ "$n" = A ] && echo "metrics: 127.0.0.1:$MA"
		cat <<EOF
http:
  listen: 127.0.0.1:${!p}
  forwarded_from: traefik
  trusted_proxies: [127.0.0.1]
  backend: redis://127.0.0.1:$RP
  redis_timeout: ${TIMEOUT_MS}ms
  breaker_cooldown: 1s
  threads: 4
  rules:
EOF
		for mode in open closed local; do
			cat <<EOF
    - name: $mode
      match: { path_prefix: /$mode/ }
      key: header:X-User-Id
      rate: 1/min
      burst: 3
      on_backend_error: $mode
EOF
		done
	} >"$HT_TMP/$n.yaml"
	xrld_http_start "$n" "$HT_TMP/$n.yaml" "${!p}"
done
info "redis on $RP, xrld A on $PA (metrics $MA), B on $PB"

TIMES=()
# ask PORT RULE USER: one forward-auth request; sets H_CODE, H_TIME, and
# appends the time to TIMES
ask() {
	hreq "http://127.0.0.1:$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /$2/x" \
		-H "X-User-Id: $3"
	TIMES+=("$H_TIME")
}
# series PORT RULE USER N: N asks; prints the statuses
series() {
	local out=() i
	for i in $(seq "$4"); do ask "$1" "$2" "$3"; out+=("$H_CODE"); done
	SERIES="${out[*]}"
}
maxtime() { printf '%s\n' "$@" | sort -g | tail -n 1; }
# wave PORT TAG [RULE]: 4 rounds of 16 requests at once (rule open by
# default, new users), so that every server thread answers some; sets WAVE
# (the statuses)
wave() {
	local r i pids=() out=() rule=${3:-open}
	rm -f "$HT_TMP"/w.*
	for r in 1 2 3 4; do
		pids=()
		for i in $(seq 16); do
			curl -s -m 5 -o /dev/null -w '%{http_code}' -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /$rule/x" \
				-H "X-User-Id: $2-$r-$i" "http://127.0.0.1:$1/v1/auth" >"$HT_TMP/w.$r.$i" &
			pids+=("$!")
		done
		for i in "${pids[@]}"; do wait "$i"; done
		for i in $(seq 16); do out+=("$(cat "$HT_TMP/w.$r.$i")"); done
	done
	WAVE=("${out[@]}")
}

log "1. Redis up: limits are shared"
series "$PA" closed up1 3
check_eq "closed rule, user up1 via A" "$SERIES" "200 200 200"
series "$PB" closed up1 1
check_eq "up1 via B" "$SERIES" "429"
hreq "http://127.0.0.1:$PA/healthz"
check_eq "A /healthz" "$H_BODY" "ok (redis: up)"
# every server thread of A opens its Redis connection: 4 x 16 requests at once
wave "$PA" warm
check_eq "A: backend errors so far" "$(metric "$MA" xrl_http_backend_errors_total)" 0

log "2. Redis hung (SIGSTOP): requests for 2.5 s"
kill -STOP "${HT_PID[redis]}"
TIMES=() codes_=() slow=0 i=0
t_end=$(( $(date +%s%N) + 2500000000 ))
while [ "$(date +%s%N)" -lt "$t_end" ]; do
	i=$((i + 1))
	ask "$PA" open "hang$i"
	codes_+=("$H_CODE")
	awk -v t="$H_TIME" 'BEGIN { exit !(t >= 0.08) }' && slow=$((slow + 1))
done
mx=$(maxtime "${TIMES[@]}")
info "$i requests; slowest ${mx}s; $slow took >= 80 ms"
check_eq "open rule while Redis hangs: 200 answers" "$(count 200 "${codes_[@]}")" "$i"
check_float "slowest answer (s), redis_timeout ${TIMEOUT_MS}ms" "$mx" 0 "$MAX_S"
check_range "answers >= 80 ms (one per 1 s cooldown)" "$slow" 1 4
check_ge "requests answered in 2.5 s (breaker: fast)" "$i" 20
check_eq "metrics: xrl_http_redis_breaker_open" "$(metric "$MA" xrl_http_redis_breaker_open)" 1
check_ge "metrics: xrl_http_breaker_skips_total" "$(metric "$MA" xrl_http_breaker_skips_total)" 10

log "3. Redis killed"
proc_stop redis KILL
TIMES=()
series "$PA" open o1 6
check_eq "open rule via A: 6 requests (burst 3)" "$SERIES" "200 200 200 200 200 200"
series "$PB" open o1 2
check_eq "open rule via B" "$SERIES" "200 200"
ask "$PA" closed c1
check_eq "closed rule via A" "$H_CODE" 503
check_match "closed: Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
check_match "closed: Content-Type" "$(hdr Content-Type)" '^application/problem\+json'
check_match "closed: body .detail" "$(jget "d['detail']" <<<"$H_BODY")" 'unavailable'
check_eq "closed: body .rule" "$(jget "d['rule']" <<<"$H_BODY")" closed
series "$PB" closed c1 2
check_eq "closed rule via B" "$SERIES" "503 503"
hreq "http://127.0.0.1:$PA/v1/auth/nginx" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /closed/x" \
	-H "X-User-Id: c1"
check_eq "closed rule via A's /v1/auth/nginx (shed = 401)" "$H_CODE" 401
series "$PA" local l1 5
check_eq "local rule via A: 5 requests (burst 3)" "$SERIES" "200 200 200 429 429"
check_match "local refusal: Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
series "$PB" local l1 4
check_eq "local rule via B (its own bucket)" "$SERIES" "200 200 200 429"
mx=$(maxtime "${TIMES[@]}")
info "${#TIMES[@]} requests with Redis dead: slowest ${mx}s"
check_float "slowest answer with Redis dead (s)" "$mx" 0 "$MAX_S"
hreq "http://127.0.0.1:$PA/healthz"
check_match "A /healthz" "$H_BODY" 'redis: down'
check_ge "metrics: fallback open" "$(metric "$MA" 'xrl_http_fallback_total{mode="open"}')" 6
check_ge "metrics: fallback closed" "$(metric "$MA" 'xrl_http_fallback_total{mode="closed"}')" 1
check_ge "metrics: fallback local" "$(metric "$MA" 'xrl_http_fallback_total{mode="local"}')" 5

log "4. Redis restarted on port $RP"
redis_start redis "$RP"
t0=$(date +%s%N)
up=no
for i in $(seq 40); do
	ask "$PA" open "probe$i"
	ask "$PB" open "probe$i"
	a=$(curl -s -m 1 "http://127.0.0.1:$PA/healthz")
	b=$(curl -s -m 1 "http://127.0.0.1:$PB/healthz")
	if [ "$a" = "ok (redis: up)" ] && [ "$b" = "ok (redis: up)" ]; then up=yes; break; fi
	sleep 0.1
done
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
info "both instances on Redis again after $ms ms"
check_eq "both /healthz say redis: up" "$up" yes
check_range "time to shared limits again (ms)" "$ms" 0 3000
series "$PA" local back1 3
check_eq "local rule, new user via A" "$SERIES" "200 200 200"
series "$PB" local back1 1
check_eq "same user via B" "$SERIES" "429"
series "$PB" closed back2 3
check_eq "closed rule, new user via B" "$SERIES" "200 200 200"
series "$PA" closed back2 1
check_eq "same user via A" "$SERIES" "429"
check_eq "metrics: xrl_http_redis_breaker_open" "$(metric "$MA" xrl_http_redis_breaker_open)" 0
# the connections every thread held before the outage are dead: none of them
# may fail a request (and open the breaker again) now that Redis is back
e0=$(metric "$MA" xrl_http_backend_errors_total)
wave "$PA" after
check_eq "64 requests at once via A after the recovery: 200s" "$(count 200 "${WAVE[@]}")" 64
check_eq "A: backend errors during them (stale connections)" \
	"$(( $(metric "$MA" xrl_http_backend_errors_total) - e0 ))" 0
check_eq "A: breaker still closed" "$(metric "$MA" xrl_http_redis_breaker_open)" 0

log "5. Redis restarted while nobody asked (a routine restart)"
proc_stop redis TERM
redis_start redis "$RP"
e0=$(metric "$MA" xrl_http_backend_errors_total)
wave "$PA" quiet closed
check_eq "64 requests at once via A, rule closed: 200s" "$(count 200 "${WAVE[@]}")" 64
check_eq "A: backend errors (every thread's connection died)" \
	"$(( $(metric "$MA" xrl_http_backend_errors_total) - e0 ))" 0

finish
