#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_envoy_replay.sh - end to end: the request Envoy's HTTP ext_authz
# filter sends (Envoy is not packaged here, so its request is replayed
# byte for byte as its documentation and source describe it).
#
# Envoy, with http_service { server_uri: xrld, path_prefix: /v1/auth } and
# authorization_request { allowed_headers: authorization }, asks with the
# client's own method and path_prefix + the original path, no body, the
# allowed headers, x-forwarded-for (appended by Envoy), x-envoy-* and
# x-request-id. xrld: forwarded_from envoy, trusted_proxies [127.0.0.1].
#
#   1. POST /v1/auth/api/holds/1 x4 of one token: 200 200 200 429 (not the
#      404 xrld gave before issue 11: the path after the prefix is the
#      original path), Retry-After and the quota headers on the 429
#   2. GET of the same path is not limited by a POST rule
#   3. x-forwarded-for is walked: two clients behind Envoy, distinct buckets
#      on a client_ip rule
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_envoy_replay
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http
http_setup
X=$(free_port)
xrld_http_run xrld "$X" <<YAML
$(http_yaml "$X" envoy)
  rules:
$(yaml_rule holds '{ method: POST, path_prefix: /api/holds }' bearer 1/min 3)
$(yaml_rule per-ip '{ path_prefix: /ip/ }' client_ip 1/min 1)
YAML
B=http://127.0.0.1:$X/v1/auth

# envoy METHOD PATH [CURL-ARGS...]: the ext_authz check request for PATH
envoy() {
	local m=$1 p=$2
	shift 2
	hreq "$B$p" -X "$m" -H 'content-length: 0' -H "x-envoy-expected-rq-timeout-ms: 200" \
		-H "x-request-id: 3f2c$RANDOM" -H 'x-envoy-internal: true' "$@"
}

log "1. POST /api/holds/1 x4 through Envoy's check request"
codes=()
for _ in 1 2 3 4; do
	envoy POST /api/holds/1 -H 'authorization: Bearer tok-e' -H 'x-forwarded-for: 198.51.100.7'
	codes+=("$H_CODE")
done
check_eq "statuses" "${codes[*]}" "200 200 200 429"
check_match "429: Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
check_quota_headers "429" holds 3

log "2. GET is not limited by a POST rule"
envoy GET /api/holds/1 -H 'authorization: Bearer tok-e' -H 'x-forwarded-for: 198.51.100.7'
check_eq "GET" "$H_CODE" 200

log "3. x-forwarded-for from Envoy: one bucket per client"
envoy GET /ip/x -H 'x-forwarded-for: 198.51.100.8'
a1=$H_CODE
envoy GET /ip/x -H 'x-forwarded-for: 198.51.100.8'
a2=$H_CODE
envoy GET /ip/x -H 'x-forwarded-for: 198.51.100.9'
check_eq "client .8: 200 then 429; client .9: 200" "$a1 $a2 $H_CODE" "200 429 200"
finish
