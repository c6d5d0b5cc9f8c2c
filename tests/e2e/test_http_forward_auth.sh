#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_forward_auth.sh - end to end: the identity tier's forward-auth
# endpoint (/v1/auth, Traefik/Caddy style, and /v1/auth/nginx) counts exactly,
# answers refusals with the headers and the problem body the issue asks for,
# and a client that honours Retry-After is admitted.
#
#   1. rule holds {POST /api/holds, key header:X-User-Id, 1/6s, burst 10},
#      memory backend: 10 requests of one user (X-Forwarded-Method/-Uri) are
#      200 with the quota headers (X-RateLimit-Remaining 9..0), the 11th is 429
#      with Retry-After (integer >= 1), RateLimit-Policy, RateLimit,
#      X-RateLimit-*, application/problem+json naming the rule in a sentence
#   2. another user, GET on the route, another path, no identity: 200
#   3. forwarded_from traefik, 127.0.0.1 trusted: X-Original-* beside
#      X-Forwarded-* change nothing, alone they are 400, as are a repeated
#      X-Forwarded-Uri and a bad escape; "post" is not POST; /v1/auth/nginx
#      says 403 for the refusal
#   4. rule quick {POST /api/quick, 1/2s, burst 2}: after a 429, sleeping
#      exactly Retry-After seconds admits the next request
#   5. a refusal keeps the keep-alive connection (two requests, one connect)
#   6. an untrusted peer (trusted_proxies 10.9.9.9): its X-Forwarded-* are
#      not believed, rules see GET /v1/auth, and xrld says so in its log
#   7. Envoy's ext_authz request replayed byte for byte under forwarded_from
#      traefik: POST /v1/auth/api/holds/1 with the client's headers and no
#      X-Forwarded-*: the holds rule counts it; the path after /v1/auth is
#      normalised (/v1/auth/api/./x/../holds/1 is /api/holds/1); the trusted
#      proxy's X-Forwarded-* still win over the path; %00 is 400
#   8. answers: a missing identity under on_missing_key: refuse is 401 with
#      problem+json naming the header and no Retry-After (a bearer rule:
#      WWW-Authenticate: Bearer); a key under penalty has RateLimit t= equal
#      to Retry-After; GET /v1/check is 405 with Allow: POST
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_forward_auth
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_begin
xrld_http_rules xrld traefik <<EOF
  backend: memory
  rules:
$(yaml_rule holds '{ method: POST, path_prefix: /api/holds }' header:X-User-Id 1/6s 10)
$(yaml_rule quick '{ method: POST, path_prefix: /api/quick }' header:X-User-Id 1/2s 2)
EOF
P=${HT_PORT[xrld]}
AUTH=http://127.0.0.1:$P/v1/auth
NGX=http://127.0.0.1:$P/v1/auth/nginx

# fwd USER METHOD URI [URL]: Traefik-style forward-auth headers
fwd() { hreq "${4:-$AUTH}" -H "X-Forwarded-Method: $2" -H "X-Forwarded-Uri: $3" -H "X-User-Id: $1"; }
# orig USER METHOD URI [URL]: nginx-style
orig() { hreq "${4:-$AUTH}" -H "X-Original-Method: $2" -H "X-Original-URI: $3" -H "X-User-Id: $1"; }

log "1. holds (1/6s, burst 10): 10 requests of user u1, then the 11th"
got=() rem=() c=()
for i in $(seq 10); do
	fwd u1 POST "/api/holds/$i"
	got+=("$H_CODE")
	rem+=("$(hdr X-RateLimit-Remaining)")
	[ "$i" = 1 ] && check_quota_headers "allowed answer #1" holds 10
done
check_eq "10 requests of u1: statuses" "${got[*]}" "200 200 200 200 200 200 200 200 200 200"
check_eq "10 requests of u1: X-RateLimit-Remaining" "${rem[*]}" "9 8 7 6 5 4 3 2 1 0"
fwd u1 POST /api/holds/11
check_eq "11th request of u1: status" "$H_CODE" 429
ra=$(hdr Retry-After)
check_match "11th: Retry-After is an integer" "$ra" '^[0-9]+$'
check_range "11th: Retry-After (s), 1/6s" "${ra:-0}" 1 6
check_quota_headers "11th" holds 10
check_eq "11th: X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" 0
check_match "11th: Content-Type" "$(hdr Content-Type)" '^application/problem\+json'
check_eq "11th: body .rule" "$(jget "d['rule']" <<<"$H_BODY")" holds
check_eq "11th: body .status" "$(jget "d['status']" <<<"$H_BODY")" 429
check_eq "11th: body .retry_after = Retry-After" "$(jget "d['retry_after']" <<<"$H_BODY")" "$ra"
detail=$(jget "d['detail']" <<<"$H_BODY")
check_match "11th: body .detail is a sentence naming the rule" "$detail" \
	'^[A-Z].*"holds".*[0-9]+ seconds?\.$'
info "detail: $detail"

log "2. the others are unaffected"
fwd u2 POST /api/holds/1
check_eq "another user (u2), same route" "$H_CODE" 200
check_eq "u2: X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" 9
fwd u1 GET /api/holds/1
check_eq "u1, GET on the route (rule is POST only)" "$H_CODE" 200
check_eq "u1, GET: no quota headers (no rule matched)" "$(hdr X-RateLimit-Limit)" ""
fwd u1 POST /api/other
check_eq "u1, POST /api/other (another path)" "$H_CODE" 200
hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/1"
check_eq "no X-User-Id (on_missing_key skip)" "$H_CODE" 200
fwd u1 POST /api/holds/12
check_eq "u1 is still refused" "$H_CODE" 429

log "3. forwarded_from traefik: only X-Forwarded-*, once, from the trusted proxy"
c=()
for i in $(seq 11); do
	hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/$i?x=1&y=2" \
		-H "X-Original-Method: GET" -H "X-Original-URI: /elsewhere" -H "X-User-Id: u3"
	c+=("$H_CODE")
done
check_eq "u3 with X-Original-* beside X-Forwarded-*: 11 requests" "${c[*]}" \
	"200 200 200 200 200 200 200 200 200 200 429"
orig u3 POST /api/holds/1
check_eq "X-Original-* alone: 400 (the trusted proxy sent no X-Forwarded-*)" "$H_CODE" 400
check_match "  detail" "$(jget "d['detail']" <<<"$H_BODY")" 'forwarded_from'
hreq "$AUTH" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /x" -H "X-Forwarded-Uri: /api/holds/1" \
	-H "X-User-Id: u3"
check_eq "X-Forwarded-Uri twice: 400" "$H_CODE" 400
fwd u3 POST "/api/%zz"
check_eq "a bad %XX escape: 400" "$H_CODE" 400
fwd u3 post /api/holds/1
check_eq "method post (not POST: RFC 9110 methods are case-sensitive)" "$H_CODE" 200
c=()
for i in $(seq 11); do fwd u4 POST "/api/holds/$i" "$NGX"; c+=("$H_CODE"); done
check_eq "u4 via /v1/auth/nginx: 11 requests" "${c[*]}" "200 200 200 200 200 200 200 200 200 200 403"
check_match "/v1/auth/nginx refusal: Retry-After" "$(hdr Retry-After)" '^[1-9][0-9]*$'
check_quota_headers "/v1/auth/nginx refusal" holds 10
check_eq "/v1/auth/nginx refusal: body .rule" "$(jget "d['rule']" <<<"$H_BODY")" holds

log "4. quick (1/2s, burst 2): honour Retry-After"
c=()
for i in 1 2 3; do fwd u5 POST /api/quick; c+=("$H_CODE"); done
check_eq "u5: 3 requests" "${c[*]}" "200 200 429"
ra=$(hdr Retry-After)
check_range "u5: Retry-After (s)" "${ra:-0}" 1 2
sleep "${ra:-1}"
fwd u5 POST /api/quick
check_eq "u5 after sleeping Retry-After=${ra}s" "$H_CODE" 200
fwd u5 POST /api/quick
check_eq "u5 at once again" "$H_CODE" 429

log "5. a refusal keeps the connection alive"
# a user drained here: u1's bucket earns a token every 6 s, and the steps
# before take about that long on a slow machine
for i in $(seq 10); do fwd u1b POST "/api/holds/$i"; done
out=$(curl -s -o /dev/null -o /dev/null -w '%{http_code}/%{num_connects} ' \
	-H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/1" -H "X-User-Id: u1b" \
	"$AUTH" "$AUTH")
check_eq "two refusals on one curl: status/connects" "${out% }" "429/1 429/0"


log "6. an untrusted peer's X-Forwarded-* are not believed"
PU=$(free_port)
sed -e "s|listen: 127.0.0.1:$P|listen: 127.0.0.1:$PU|" -e "s|trusted_proxies: \[127.0.0.1\]|trusted_proxies: [10.9.9.9]|" \
	"$HT_TMP/xrld.yaml" >"$HT_TMP/untrusted.yaml"
xrld_http_start untrusted "$HT_TMP/untrusted.yaml" "$PU"
c=()
for i in $(seq 11); do fwd u1 POST "/api/holds/$i" "http://127.0.0.1:$PU/v1/auth"; c+=("$H_CODE"); done
check_eq "11 POSTs of u1 named only by X-Forwarded-*: no rule matches GET /v1/auth" "$(count 200 "${c[@]}")" 11
check_match "xrld logs it once" "$(cat "${HT_LOG[untrusted]}")" 'X-Forwarded-Uri from 127.0.0.1 is ignored'

log "7. Envoy's ext_authz form, forwarded_from traefik: the path after /v1/auth"
# the check request Envoy's HTTP ext_authz sends (path_prefix /v1/auth): the
# client's method, path_prefix + its path, its allowed headers, x-envoy-*, no
# X-Forwarded-Method/-Uri; --path-as-is: curl sends the path unnormalised
envoy() {
	local m=$1 p=$2
	shift 2
	hreq "$AUTH$p" --path-as-is -X "$m" -H 'content-length: 0' -H 'x-request-id: 7e1f00d' \
		-H 'x-envoy-expected-rq-timeout-ms: 200' -H 'x-envoy-internal: true' \
		-H 'x-forwarded-for: 198.51.100.7' "$@"
}
c=()
for i in $(seq 11); do envoy POST "/api/holds/$i" -H "X-User-Id: e1"; c+=("$H_CODE"); done
check_eq "e1: 11 POST /v1/auth/api/holds/N (was 404)" "${c[*]}" \
	"200 200 200 200 200 200 200 200 200 200 429"
check_eq "the 11th names the rule" "$(hdr X-XRL-Rule)" holds
envoy POST "/api/./x/../holds/1" -H "X-User-Id: e1"
check_eq "/v1/auth/api/./x/../holds/1 is /api/holds/1 (refused)" "$H_CODE" 429
envoy POST "/api/%68olds//1" -H "X-User-Id: e1"
check_eq "/v1/auth/api/%68olds//1 is /api/holds/1 (refused)" "$H_CODE" 429
envoy GET "/api/holds/1" -H "X-User-Id: e1"
check_eq "GET: the POST rule does not apply" "$H_CODE" 200
envoy POST "/api/%00" -H "X-User-Id: e1"
check_eq "%00 after /v1/auth: 400" "$H_CODE" 400
envoy POST "/public" -H "X-User-Id: e1" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/2"
check_eq "a trusted proxy's X-Forwarded-* win over the path (refused)" "$H_CODE" 429
envoy POST "/api/holds/2" -H "X-User-Id: e1" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /public"
check_eq "... either way (GET /public: 200)" "$H_CODE" 200
envoy POST "/api/holds/2" -H "X-User-Id: e1" -H "X-Forwarded-Uri: /public"
check_eq "one forwarded header alone: 400" "$H_CODE" 400

log "8. answers: a missing identity, a penalty, a wrong method"
PA=$(free_port)
cat >"$HT_TMP/answers.yaml" <<EOF
$(http_yaml "$PA" traefik)
  penalty: { strikes: 2, window: 1s, base: 6s, max: 12s }
  rules:
$(yaml_rule who '{ path_prefix: /who/ }' header:X-User-Id 1/min 5 'on_missing_key: refuse')
$(yaml_rule tok '{ path_prefix: /tok/ }' bearer 1/min 5 'on_missing_key: refuse')
$(yaml_rule pen '{ path_prefix: /pen/ }' header:X-User-Id 1/min 1)
EOF
xrld_http_start answers "$HT_TMP/answers.yaml" "$PA"
A2=http://127.0.0.1:$PA/v1/auth
hreq "$A2" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /who/1"
check_eq "no X-User-Id, on_missing_key refuse: 401" "$H_CODE" 401
check_eq "  no Retry-After" "$(hdr Retry-After)" ""
check_match "  problem+json" "$(hdr Content-Type)" '^application/problem\+json'
check_eq "  body .missing_header" "$(jget "d['missing_header']" <<<"$H_BODY")" X-User-Id
check_eq "  body .status" "$(jget "d['status']" <<<"$H_BODY")" 401
check_match "  body .detail names the header" "$(jget "d['detail']" <<<"$H_BODY")" 'X-User-Id'
check_match "  WWW-Authenticate" "$(hdr WWW-Authenticate)" '^XRL-Identity '
hreq "$A2" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /tok/1"
check_eq "no bearer token, on_missing_key refuse: 401" "$H_CODE" 401
check_eq "  body .missing_header" "$(jget "d['missing_header']" <<<"$H_BODY")" Authorization
check_match "  WWW-Authenticate: Bearer" "$(hdr WWW-Authenticate)" '^Bearer realm='
check_eq "  no Retry-After" "$(hdr Retry-After)" ""
hreq "$A2" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /who/1" -H "X-User-Id: w1"
check_eq "with X-User-Id: 200" "$H_CODE" 200
hreq "$A2/nginx" -H "X-Original-Method: GET" -H "X-Original-URI: /who/1" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /who/1"
check_eq "/v1/auth/nginx, no identity: 403 (401 is nginx's shedding)" "$H_CODE" 403
check_eq "  no Retry-After" "$(hdr Retry-After)" ""

# two strikes in two 1 s windows: a 6 s block
penreq() { hreq "$A2" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /pen/1" -H "X-User-Id: p1"; }
penreq
check_eq "pen: the burst of p1" "$H_CODE" 200
penreq
check_eq "pen: strike 1" "$H_CODE" 429
sleep 1.1
penreq
check_eq "pen: strike 2 (the penalty starts)" "$H_CODE" 429
penreq
check_eq "pen: under penalty" "$H_CODE" 429
ra=$(hdr Retry-After)
rl=$(hdr RateLimit)
info "Retry-After $ra, RateLimit $rl"
check_range "  Retry-After (s) of a 6 s block" "${ra:-0}" 5 6
check_eq "  RateLimit t= is Retry-After, r=0" "$rl" "\"pen\";r=0;t=$ra"
check_match "  body says blocked" "$(jget "d['detail']" <<<"$H_BODY")" 'blocked'

hreq "http://127.0.0.1:$PA/v1/check"
check_eq "GET /v1/check: 405" "$H_CODE" 405
check_eq "  Allow" "$(hdr Allow)" POST
check_match "  problem+json" "$(hdr Content-Type)" '^application/problem\+json'

finish
