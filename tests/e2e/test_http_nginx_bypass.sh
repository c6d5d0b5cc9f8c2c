#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_nginx_bypass.sh - end to end, through the real nginx with the
# shipped docs/examples/nginx-xrl.conf: nothing a client adds to its request
# changes which rules apply to it (issue 11, finding 4).
#
# xrld: forwarded_from nginx, trusted_proxies [127.0.0.1] (nginx), rules
#   holds   {POST /api/holds, bearer, 1/min, burst 3}
#   guarded {POST /api/guarded, bearer, on_missing_key: refuse}
#
#   1. for each variant, its own token, 4 POSTs: 200 200 200 429, as plain:
#      the client's X-Forwarded-Uri: /x, X-Forwarded-Method: GET,
#      X-Original-URI: /x, X-Original-Method: GET, X-User-Id; paths
#      //api/holds, /api/./holds, /api/x/../holds, /api/%68olds, %2F,
#      ;params, a query with dot segments
#   2. one token, each request a different variant: one bucket, 429 at the 4th
#   3. X-Forwarded-Method: GET without a token on the refuse rule: 429
#   4. what nginx itself keeps away: /API/holds (no location), /%2e%2e/...
#      (400): never 200 from the upstream
#   5. the client's X-User-Id never reaches xrld (the example clears it)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_nginx_bypass
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_nginx
http_setup

xrld_http_rules xrld nginx <<EOF
  rules:
$(yaml_rule holds '{ method: POST, path_prefix: /api/holds }' bearer 1/min 3)
$(yaml_rule guarded '{ method: POST, path_prefix: /api/guarded }' bearer 1/min 3 'on_missing_key: refuse')
$(yaml_rule by-user '{ method: PUT, path_prefix: /api/profile }' header:X-User-Id 1/min 3 'on_missing_key: refuse')
EOF
X=${HT_PORT[xrld]}; N=$(free_port); UP=$(free_port)
T=$HT_TMP

nginx_render "$SNIPPET" "$N" "$X" "$UP" "$T/xrl.conf"
nginx_start "$T" "$UP" "$N" "" "$T/xrl.conf"
info "nginx on $N (the shipped snippet) -> xrld $X, upstream $UP"
BASE=http://127.0.0.1:$N

# post4 TOKEN PATH [CURL-ARGS...]: 4 POSTs of TOKEN to PATH; the statuses
post4() {
	local tok=$1 path=$2 c=()
	shift 2
	for _ in 1 2 3 4; do
		hreq "$BASE$path" --path-as-is -X POST -H "Authorization: Bearer $tok" "$@"
		c+=("$H_CODE")
	done
	echo "${c[*]}"
}

log "1. each variant with its own token: 429 at the 4th, as plain"
check_eq "plain /api/holds/1" "$(post4 t-plain /api/holds/1)" "200 200 200 429"
i=0
for h in "X-Forwarded-Uri: /x" "X-Forwarded-Method: GET" "X-Original-URI: /x" \
	"X-Original-Method: GET" "X-Forwarded-Uri: /x?a" "X-User-Id: someone"; do
	i=$((i + 1))
	check_eq "header '$h'" "$(post4 "t-h$i" /api/holds/1 -H "$h")" "200 200 200 429"
done
check_eq "all four forwarded headers at once" \
	"$(post4 t-h-all /api/holds/1 -H "X-Forwarded-Uri: /x" -H "X-Forwarded-Method: GET" \
		-H "X-Original-URI: /x" -H "X-Original-Method: GET")" "200 200 200 429"
for p in //api/holds/1 /api//holds /api/./holds/1 /api/x/../holds/1 /api/%68olds/1 \
	/api/holds%2F1 "/api/holds;x=1" "/api/holds/1?x=/../../y"; do
	i=$((i + 1))
	check_eq "path $p" "$(post4 "t-p$i" "$p")" "200 200 200 429"
done
check_eq "the upstream saw the 3 admitted of a variant, as sent" \
	"$(grep -c 'POST /api/%68olds/1 ' "$T/upstream-access.log")" 3

log "2. one token, a different variant each time: one bucket"
c=()
for args in "/api/holds/1" "//api/holds/2|X-Forwarded-Uri: /x" "/api/%68olds/3|X-Original-URI: /y" \
	"/api/x/../holds/4|X-Forwarded-Method: GET"; do
	p=${args%%|*} h=${args#*|}
	[ "$h" = "$args" ] && h="X-Nothing: 1"
	hreq "$BASE$p" --path-as-is -X POST -H "Authorization: Bearer t-mix" -H "$h"
	c+=("$H_CODE")
done
check_eq "4 variants of t-mix" "${c[*]}" "200 200 200 429"

log "3. on_missing_key: refuse is not defeated by a forwarded method"
hreq "$BASE/api/guarded" -X POST -H "X-Forwarded-Method: GET"
check_eq "POST /api/guarded, no token, X-Forwarded-Method: GET" "$H_CODE" 429
hreq "$BASE/api/guarded" -X POST -H "X-Original-Method: GET"
check_eq "POST /api/guarded, no token, X-Original-Method: GET" "$H_CODE" 429
hreq "$BASE/api/guarded" -X POST -H "X-Forwarded-Uri: /x" -H "X-Original-URI: /x"
check_eq "POST /api/guarded, no token, X-Forwarded-Uri and X-Original-URI" "$H_CODE" 429

log "4. what nginx keeps away itself"
hreq "$BASE/API/holds/1" --path-as-is -X POST -H "Authorization: Bearer t-case"
check_eq "/API/holds (no such location; paths are case-sensitive)" "$H_CODE" 404
hreq "$BASE/%2e%2e/api/holds/1" --path-as-is -X POST -H "Authorization: Bearer t-dots"
check_eq "/%2e%2e/api/holds (above the root)" "$H_CODE" 400

log "5. the client's X-User-Id is not an identity"
c=()
for _ in 1 2; do
	hreq "$BASE/api/profile" -X PUT -H "X-User-Id: u$RANDOM"
	c+=("$H_CODE")
done
check_eq "PUT /api/profile with the client's X-User-Id: missing identity" "${c[*]}" "429 429"
check_match "  detail" "$(jget "d['detail']" <<<"$H_BODY")" 'by-user'
check_nomatch "nginx error log: no auth request errors" "$(cat "$T/nginx-error.log")" \
	'auth request unexpected status|upstream prematurely closed|connect\(\) failed'

finish
