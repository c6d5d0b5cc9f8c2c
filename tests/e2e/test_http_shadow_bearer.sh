#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_shadow_bearer.sh - end to end: a shadow rule counts the refusals
# it would make and allows everything; bearer-token keys give each token its
# own bucket and the raw token is never written anywhere (xrld's log at
# debug level, metrics, answers, Redis).
#
# The same policy on two xrld instances, M (memory backend) and R (Redis),
# each with a metrics listener and -v (debug log):
#   try-holds {path /shadow/, header:X-User-Id, 1/min, burst 2, shadow: true}
#   api       {path /api/, key bearer, 1/min, burst 3}
#
#   1. 6 requests of one user on the shadow rule: all 200;
#      xrl_http_shadow_refusals_total = 4 (6 - burst), no 429 counted
#   2. bearer: token A x4 -> 200 200 200 429; token B x4 -> the same (its own
#      bucket); "bearer" in lower case is the same token; no Authorization
#      header -> the rule does not apply (200)
#   3. the tokens appear in no log line, metrics line, answer, or Redis key
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_shadow_bearer
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_redis_begin

TOK_A="tokA-$$-s3cr3t-$RANDOM$RANDOM"
TOK_B="tokB-$$-s3cr3t-$RANDOM$RANDOM"
for n in M R; do
	p=$(free_port); m=$(free_port)
	declare "P_$n=$p" "MP_$n=$m"
	be=memory; [ "$n" = R ] && be=redis://127.0.0.1:$RP
	cat >"$HT_TMP/$n.yaml" <<EOF
metrics: 127.0.0.1:$m
log_level: debug
$(http_yaml "$p" traefik)
  backend: $be
  rules:
$(yaml_rule try-holds '{ path_prefix: /shadow/ }' header:X-User-Id 1/min 2 'shadow: true')
$(yaml_rule api '{ path_prefix: /api/ }' bearer 1/min 3)
EOF
	xrld_http_start "$n" "$HT_TMP/$n.yaml" "$p" -v
done

answers=
for n in M R; do
	pv=P_$n; mv=MP_$n; P=${!pv}; MP=${!mv}
	log "[$n] 1. shadow rule try-holds (burst 2): 6 requests of user u1"
	codes 6 hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /shadow/{i}" -H "X-User-Id: u1"
	check_eq "[$n] statuses" "${CODES[*]}" "200 200 200 200 200 200"
	check_eq "[$n] the 6th has no Retry-After" "$(hdr Retry-After)" ""
	check_eq "[$n] metrics: xrl_http_shadow_refusals_total" \
		"$(metric "$MP" xrl_http_shadow_refusals_total)" 4
	check_eq "[$n] metrics: responses 429" \
		"$(metric "$MP" 'xrl_http_responses_total{code="429"}')" 0
	check_eq "[$n] metrics: try-holds refused" \
		"$(metric "$MP" 'xrl_http_rule_decisions_total{rule="try-holds",verdict="refused"}')" 0

	log "[$n] 2. bearer keys (api: burst 3)"
	for t in A B; do
		tv=TOK_$t
		CODES=()
		for i in 1 2 3 4; do
			hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: Bearer ${!tv}"
			CODES+=("$H_CODE")
			answers+="$(cat "$HT_TMP/last.hdr") $H_BODY"
		done
		check_eq "[$n] token $t x4" "${CODES[*]}" "200 200 200 429"
	done
	hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: bearer $TOK_A"
	check_eq "[$n] \"bearer\" in lower case, token A" "$H_CODE" 429
	hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: Bearer  $TOK_B"
	check_eq "[$n] two spaces before token B" "$H_CODE" 429
	hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: Bearer other-$$"
	check_eq "[$n] a third token" "$H_CODE" 200
	hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x"
	check_eq "[$n] no Authorization (on_missing_key skip)" "$H_CODE" 200
	hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: Basic dXNlcjpwdw=="
	check_eq "[$n] Basic credentials are not a bearer key" "$H_CODE" 200
	answers+=$(curl -s -m 2 "http://127.0.0.1:$MP/metrics")
done

log "3. the raw tokens are nowhere"
# answers that make libmicrohttpd log (debug): a 431 and a malformed header
big=$(printf '%*s' 20000 '' | tr ' ' a)
hreq "http://127.0.0.1:$P_M/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: Bearer $TOK_A" -H "X-Big: $big"
check_eq "a 20 KB header with token A" "$H_CODE" 431
"$XRL_PY" - "$P_M" "$TOK_B" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
s.sendall(b"GET /v1/auth HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + sys.argv[2].encode() +
          b"\r\nbroken header line\r\n\r\n")
s.settimeout(2)
try:
    s.recv(1000)
except Exception:
    pass
PY
sleep 0.2
logs=$(cat "${HT_LOG[M]}" "${HT_LOG[R]}")
check_ge "xrld logs (debug) have lines" "$(wc -l <<<"$logs")" 2
keys=$(redis-cli -h 127.0.0.1 -p "$RP" --scan --pattern '*')
info "redis keys: $(tr '\n' ' ' <<<"$keys")"
check_match "Redis: the api buckets are keyed by a hash" "$keys" '^xrl:\{api:[0-9a-f]{32}\}$'
for t in A B; do
	tv=TOK_$t
	check_nomatch "token $t in xrld's logs" "$logs" "${!tv}"
	check_nomatch "token $t in answers and metrics" "$answers" "${!tv}"
	check_nomatch "token $t in Redis keys" "$keys" "${!tv}"
done
check_nomatch "any token in Redis values" "$(redis-cli -h 127.0.0.1 -p "$RP" --scan --pattern '*' |
	while read -r k; do redis-cli -h 127.0.0.1 -p "$RP" get "$k"; done)" 's3cr3t'

finish
