#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_nginx.sh - end to end: nginx with the shipped snippet
# docs/examples/nginx-xrl.conf (auth_request to xrld's /v1/auth/nginx) in front
# of an upstream: admitted requests reach the application with the quota
# headers; refusals come back as 429 with Retry-After and the quota headers;
# shedding as 503 with Retry-After.
#
# The snippet is rendered twice, with this test's ports, into one nginx.conf
# (daemon off, pid and logs in a temporary directory):
#   server 1 -> xrld 1: rule holds {POST /api/holds, bearer, 1/6s, burst 5};
#               nginx (127.0.0.1) is its trusted proxy, forwarded_from nginx
#   server 2 -> xrld 2: the same rule plus http.shed {1/min, burst 2}
# and a third server block is the upstream (200 "upstream ok <uri>", and 403
# on /api/forbidden).
#
#   1. 5 POSTs of one user through nginx: 200 from the upstream, with
#      X-RateLimit-Remaining 4..0, RateLimit, RateLimit-Policy
#   2. the 6th: 429, Retry-After (integer >= 1), the quota headers, a JSON
#      problem body naming the rule; the upstream did not see it
#   3. another user, a GET: 200; the upstream's own 403 stays a 403
#   4. shedding (server 2): the 3rd request is 503 with Retry-After
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_nginx
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_nginx
http_setup

X1=$(free_port); X2=$(free_port); N1=$(free_port); N2=$(free_port); UP=$(free_port)
rule='    - name: holds
      match: { method: POST, path_prefix: /api/holds }
      key: bearer
      rate: 1/6s
      burst: 5'
trust='  forwarded_from: nginx\n  trusted_proxies: [127.0.0.1]\n'
printf "http:\n  listen: 127.0.0.1:%s\n$trust  rules:\n%s\n" "$X1" "$rule" >"$HT_TMP/x1.yaml"
printf "http:\n  listen: 127.0.0.1:%s\n$trust  shed: { rate: 1/min, burst: 2 }\n  rules:\n%s\n" "$X2" "$rule" \
	>"$HT_TMP/x2.yaml"
xrld_http_start xrld1 "$HT_TMP/x1.yaml" "$X1"
xrld_http_start xrld2 "$HT_TMP/x2.yaml" "$X2"

nginx_render "$SNIPPET" "$N1" "$X1" "$UP" "$HT_TMP/xrl1.conf"
nginx_render "$SNIPPET" "$N2" "$X2" "$UP" "$HT_TMP/xrl2.conf"
T=$HT_TMP
nginx_start "$T" "$UP" "$N2" '        location /api/forbidden { return 403 "the application says no\n"; }' \
	"$T/xrl1.conf" "$T/xrl2.conf"
info "nginx on $N1 (-> xrld $X1) and $N2 (-> xrld $X2, shed 1/min burst 2), upstream $UP"

log "1. 5 POSTs of user u1 through nginx (burst 5)"
c=() rem=() bodies=()
for i in $(seq 5); do
	hreq "http://127.0.0.1:$N1/api/holds/$i?q=1" -X POST -H "Authorization: Bearer u1"
	c+=("$H_CODE")
	rem+=("$(hdr X-RateLimit-Remaining)")
	bodies+=("$H_BODY")
done
check_eq "statuses" "${c[*]}" "200 200 200 200 200"
check_eq "X-RateLimit-Remaining" "${rem[*]}" "4 3 2 1 0"
check_eq "the upstream answered (last body)" "${bodies[4]}" "upstream ok POST /api/holds/5?q=1"
check_quota_headers "allowed answer" holds 5

log "2. the 6th"
hreq "http://127.0.0.1:$N1/api/holds/6" -X POST -H "Authorization: Bearer u1"
check_eq "status" "$H_CODE" 429
ra=$(hdr Retry-After)
check_match "Retry-After is an integer" "$ra" '^[0-9]+$'
check_range "Retry-After (s), 1/6s" "${ra:-0}" 1 6
check_quota_headers "refusal" holds 5
check_eq "refusal: X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" 0
check_match "refusal: Content-Type" "$(hdr Content-Type)" '^application/problem\+json'
check_eq "refusal: body .status" "$(jget "d['status']" <<<"$H_BODY")" 429
check_eq "refusal: body .rule" "$(jget "d['rule']" <<<"$H_BODY")" holds
check_match "refusal: body .detail" "$(jget "d['detail']" <<<"$H_BODY")" "holds.*try again in $ra seconds"
check_eq "the upstream saw the 5 admitted POSTs, not the 6th" \
	"$(grep -Eo 'POST /api/holds/[0-9]+' "$T/upstream-access.log" | awk '{ print $2 }' | tr '\n' ' ')" \
	"/api/holds/1 /api/holds/2 /api/holds/3 /api/holds/4 /api/holds/5 "

log "3. others"
hreq "http://127.0.0.1:$N1/api/holds/1" -X POST -H "Authorization: Bearer u2"
check_eq "user u2" "$H_CODE" 200
check_eq "u2: X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" 4
hreq "http://127.0.0.1:$N1/api/holds/1" -H "Authorization: Bearer u1"
check_eq "u1, GET" "$H_CODE" 200
check_eq "u1, GET: the upstream's body" "$H_BODY" "upstream ok GET /api/holds/1"
hreq "http://127.0.0.1:$N1/api/forbidden" -H "Authorization: Bearer u1"
check_eq "the upstream's own 403 passes unchanged" "$H_CODE $H_BODY" "403 the application says no"
hreq "http://127.0.0.1:$N1/api/holds/7" -X POST -H "Authorization: Bearer u1"
check_eq "u1 POST still refused" "$H_CODE" 429

log "4. shedding (server 2: capacity 1/min, burst 2)"
c=()
for i in 1 2 3; do
	hreq "http://127.0.0.1:$N2/api/other/$i" -H "Authorization: Bearer s$i"
	c+=("$H_CODE")
done
check_eq "3 requests" "${c[*]}" "200 200 503"
check_match "503: Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
check_match "503: Content-Type" "$(hdr Content-Type)" '^application/problem\+json'
check_eq "503: body .status" "$(jget "d['status']" <<<"$H_BODY")" 503
check_nomatch "nginx error log: no auth request errors" "$(cat "$T/nginx-error.log")" \
	'auth request unexpected status|upstream prematurely closed|connect\(\) failed'

finish
