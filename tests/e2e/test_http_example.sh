#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_example.sh - end to end: the shipped docs/examples/identity-tier.yaml
# is accepted by `xrld --check`, and run (with this test's ports and its own
# Redis) it does what its comments say.
#
#   1. xrld --check: exit 0
#   2. holds: 10 POSTs of a user, the 11th 429; no X-User-Id -> 401 naming
#      the missing identity (on_missing_key refuse)
#   3. login-account through /v1/check: 5 allowed, the 6th 429; forward-auth
#      POST /login without X-Login-Account is not limited by it
#   4. api-key: 150 requests of one bearer token at once are allowed (burst
#      200); per-ip (shadow, burst 100) counts refusals but refuses nothing
#   5. Redis down: login-account fails closed (503), holds limits locally
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_example
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

EXAMPLE=$XRL_ROOT/docs/examples/identity-tier.yaml
require_http redis-server redis-cli
[ -r "$EXAMPLE" ] || fatal "$EXAMPLE is missing"
http_setup

log "1. xrld --check"
out=$("$XRLD" --check "$EXAMPLE" 2>&1)
check_eq "xrld --check $(basename "$EXAMPLE")" "$?" 0
check_match "  it says" "$out" ': ok$'

redis_start redis
P=$(free_port)
M=$(free_port)
render_checked example "$EXAMPLE" "$HT_TMP/xrld.yaml" \
	'listen: 127.0.0.1:8433' "listen: 127.0.0.1:$P" \
	'backend: redis://127.0.0.1:6379/0' "backend: redis://127.0.0.1:${HT_PORT[redis]}/0" \
	'metrics: 127.0.0.1:8434' "metrics: 127.0.0.1:$M"
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P"
AUTH=http://127.0.0.1:$P/v1/auth

log "2. holds"
codes 11 hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/{i}" -H "X-User-Id: u1"
check_eq "11 POSTs of u1" "${CODES[*]}" "200 200 200 200 200 200 200 200 200 200 429"
hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/1"
check_eq "no X-User-Id (401: no wait brings an identity)" "$H_CODE" 401
check_match "  detail" "$(jget "d['detail']" <<<"$H_BODY")" 'did not say who the caller is'

log "3. login-account via /v1/check"
codes 6 hreq "http://127.0.0.1:$P/v1/check" -X POST --data-binary '{"rule":"login-account","key":"a@b.c","cost":1}'
check_eq "6 checks for a@b.c" "${CODES[*]}" "200 200 200 200 200 429"
codes 6 hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /login"
check_eq "6 forward-auth POST /login without the header" "${CODES[*]}" "200 200 200 200 200 200"

log "4. api-key and the shadow per-ip"
s0=$(metric "$M" xrl_http_shadow_refusals_total)
# one curl, one keep-alive connection: 150 requests in well under a second
urls=()
for i in $(seq 150); do urls+=("$AUTH"); done
mapfile -t CODES < <(curl -s -m 20 -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/v1/x" -H "Authorization: Bearer tok-$$" \
	-w '%{http_code}\n' -o /dev/null "${urls[@]}")
check_eq "150 requests with one token at once (burst 200)" "$(count 200 "${CODES[@]}")" 150
hreq "$AUTH" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/v1/x" -H "Authorization: Bearer tok-$$"
check_eq "  quota headers from api-key" "$(hdr RateLimit-Policy)" '"api-key";q=200;w=2'
s1=$(metric "$M" xrl_http_shadow_refusals_total)
check_ge "per-ip (shadow, burst 100) refusals counted" "$((s1 - s0))" 1

log "5. Redis down"
proc_stop redis KILL
hreq "http://127.0.0.1:$P/v1/check" -X POST --data-binary '{"rule":"login-account","key":"x@y.z"}'
check_eq "login-account (closed)" "$H_CODE" 503
check_match "  Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
codes 11 hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/{i}" -H "X-User-Id: u9"
check_eq "holds (local): 11 POSTs of u9" "${CODES[*]}" "200 200 200 200 200 200 200 200 200 200 429"

finish
