#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_redis_shared.sh - end to end: two xrld instances sharing one Redis
# (backend redis://127.0.0.1:P) enforce one limit between them, exactly, under
# concurrency.
#
#   1. rule holds {key header:X-User-Id, 1/min, burst 10} on instances A and
#      B: 40 curls at once, 20 to each, for one user: exactly 10 are 200 and
#      30 are 429 (three rounds, a new user each round)
#   2. sequentially: a user who spent the burst via A is refused via B (429
#      with Retry-After), and the other way round
#   3. the bucket lives in Redis under a hash-tagged key with an expiry
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_redis_shared
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_redis_begin

PA=$(free_port)
PB=$(free_port)
for n in A B; do
	p=PA; [ "$n" = B ] && p=PB
	cat >"$HT_TMP/$n.yaml" <<EOF
$(http_yaml "${!p}" traefik)
  backend: redis://127.0.0.1:$RP
  redis_timeout: 200ms
  threads: 4
  rules:
$(yaml_rule holds '{ method: POST, path_prefix: /api/holds }' header:X-User-Id 1/min 10)
EOF
	xrld_http_start "$n" "$HT_TMP/$n.yaml" "${!p}"
done
info "redis on $RP, xrld A on $PA, B on $PB"

# burst40 USER: 40 curls started together, even ones to A, odd ones to B;
# sets N200, N429, NOTHER and the codes of A and B.
burst40() {
	local user=$1 i pids=() port
	rm -f "$HT_TMP"/c.*
	for i in $(seq 0 39); do
		port=$PA; [ $((i % 2)) = 1 ] && port=$PB
		curl -s -m 5 -o /dev/null -w '%{http_code}' -H "X-Forwarded-Method: POST" \
			-H "X-Forwarded-Uri: /api/holds/$i" -H "X-User-Id: $user" \
			"http://127.0.0.1:$port/v1/auth" >"$HT_TMP/c.$i" &
		pids+=("$!")
	done
	for i in "${pids[@]}"; do wait "$i"; done
	local all=() a=() b=()
	for i in $(seq 0 39); do
		all+=("$(cat "$HT_TMP/c.$i")")
		if [ $((i % 2)) = 0 ]; then a+=("$(cat "$HT_TMP/c.$i")"); else b+=("$(cat "$HT_TMP/c.$i")"); fi
	done
	N200=$(count 200 "${all[@]}")
	N429=$(count 429 "${all[@]}")
	NOTHER=$((40 - N200 - N429))
	A200=$(count 200 "${a[@]}")
	B200=$(count 200 "${b[@]}")
}

log "1. 40 concurrent requests for one user, 20 via A and 20 via B (burst 10)"
for round in 1 2 3; do
	burst40 "conc$round-$$"
	info "round $round: 200s via A $A200, via B $B200"
	check_eq "round $round: 200 answers (= burst)" "$N200" 10
	check_eq "round $round: 429 answers" "$N429" 30
	check_eq "round $round: other answers" "$NOTHER" 0
done

log "2. spent via one instance, refused via the other"
# hold PORT USER: one POST /api/holds of USER via the xrld on PORT
hold() {
	hreq "http://127.0.0.1:$1/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds" \
		-H "X-User-Id: $2"
}
codes 10 hold "$PA" "seq-$$"
check_eq "10 requests via A" "$(count 200 "${CODES[@]}")" 10
hold "$PB" "seq-$$"
check_eq "the 11th, via B" "$H_CODE" 429
check_match "its Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
check_eq "its X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" 0
codes 10 hold "$PB" "seq2-$$"
check_eq "10 requests of another user via B" "$(count 200 "${CODES[@]}")" 10
hold "$PA" "seq2-$$"
check_eq "the 11th, via A" "$H_CODE" 429

log "3. the bucket in Redis"
keys=$(redis-cli -h 127.0.0.1 -p "$RP" --scan --pattern 'xrl:*' | sort)
check_match "Redis keys" "$keys" "^xrl:\{holds:seq-$$\}$"
ttl=$(redis-cli -h 127.0.0.1 -p "$RP" pttl "xrl:{holds:seq-$$}")
check_range "PTTL of a spent bucket (ms; ~10 min to refill)" "$ttl" 500000 600100

finish
