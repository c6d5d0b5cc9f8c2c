#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_check_api.sh - end to end: the decision API POST /v1/check, which
# an application calls itself (e.g. per login account, a key that only the
# application knows once it has parsed the body).
#
# Rule login-account {key header:X-Login, 5/min, burst 5}, memory backend,
# penalty {strikes 2, window 1s, base 3s, max 10s}.
#
#   1. {"rule":"login-account","key":"a@b.c","cost":1} -> 200
#      {"allowed":true,"limit":5,"remaining":4,"retry_after":0,"reset":>0},
#      application/json, with the quota headers
#   2. cost 6 (> burst 5) -> 400 problem+json; cost omitted = the rule's cost
#      (1); cost 0 is allowed and spends nothing
#   3. cost 2 -> remaining 0; the next -> 429 {"allowed":false,
#      "retry_after">=1, "detail":...} with Retry-After = retry_after
#   4. the same bucket as /v1/auth with X-Login: a@b.c (refused there too);
#      another key is independent
#   5. penalty: a key refused in 2 windows is blocked: 429 with a Retry-After
#      of the block (<= 3 s) even though its bucket has refilled a token
#   6. keys are used whole: 4 KiB keys that differ in their last byte, and
#      their first 256 bytes, are three buckets (via /v1/check and /v1/auth)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_check_api
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_begin
xrld_http_rules xrld traefik <<EOF
  penalty: { strikes: 2, window: 1s, base: 3s, max: 10s }
  rules:
$(yaml_rule login-account '{ method: POST, path_prefix: /login }' header:X-Login 5/min 5)
$(yaml_rule fast '' header:X-Fast 2/s 2)
EOF
P=${HT_PORT[xrld]}
CHECK=http://127.0.0.1:$P/v1/check

# check JSON: POST it to /v1/check
check() { hreq "$CHECK" -X POST -H "Content-Type: application/json" --data-binary "$1"; }

log "1. one login attempt for a@b.c"
check '{"rule":"login-account","key":"a@b.c","cost":1}'
check_eq "status" "$H_CODE" 200
check_match "Content-Type" "$(hdr Content-Type)" '^application/json'
check_eq "allowed" "$(jget "d['allowed']" <<<"$H_BODY")" true
check_eq "rule" "$(jget "d['rule']" <<<"$H_BODY")" login-account
check_eq "limit" "$(jget "d['limit']" <<<"$H_BODY")" 5
check_eq "remaining" "$(jget "d['remaining']" <<<"$H_BODY")" 4
check_eq "retry_after" "$(jget "d['retry_after']" <<<"$H_BODY")" 0
check_range "reset (s; one token at 5/min)" "$(jget "d['reset']" <<<"$H_BODY")" 1 12
check_quota_headers "answer" login-account 5
check_eq "no Retry-After on an admit" "$(hdr Retry-After)" ""

log "2. cost"
check '{"rule":"login-account","key":"a@b.c","cost":6}'
check_eq "cost 6 > burst 5: status" "$H_CODE" 400
check_match "cost 6: Content-Type" "$(hdr Content-Type)" '^application/problem\+json'
check_match "cost 6: detail" "$(jget "d['detail']" <<<"$H_BODY")" 'cost 6.*burst 5'
check '{"rule":"login-account","key":"a@b.c"}'
check_eq "cost omitted: remaining" "$(jget "d['remaining']" <<<"$H_BODY")" 3
check '{"rule":"login-account","key":"a@b.c","cost":0}'
check_eq "cost 0: status" "$H_CODE" 200
check_eq "cost 0: allowed" "$(jget "d['allowed']" <<<"$H_BODY")" true
# cost 0 neither spends nor reads the bucket (it answers the rule's burst):
# shown, not checked
info "cost 0 answers remaining $(jget "d['remaining']" <<<"$H_BODY") (the bucket holds 3)"
check '{"rule":"login-account","key":"a@b.c","cost":1}'
check_eq "cost 1 after cost 0: remaining (cost 0 spent nothing)" "$(jget "d['remaining']" <<<"$H_BODY")" 2

log "3. spend the rest, then refused"
check '{"rule":"login-account","key":"a@b.c","cost":2}'
check_eq "cost 2: allowed, remaining" "$(jget "d['allowed'], d['remaining']" <<<"$H_BODY")" "(True, 0)"
check '{"rule":"login-account","key":"a@b.c","cost":1}'
check_eq "next: status" "$H_CODE" 429
check_eq "next: allowed" "$(jget "d['allowed']" <<<"$H_BODY")" false
ra=$(jget "d['retry_after']" <<<"$H_BODY")
check_range "next: retry_after (s; a token per 12 s)" "$ra" 1 12
check_eq "next: Retry-After header = retry_after" "$(hdr Retry-After)" "$ra"
check_eq "next: remaining" "$(jget "d['remaining']" <<<"$H_BODY")" 0
check_match "next: detail" "$(jget "d['detail']" <<<"$H_BODY")" 'login-account.*[Tt]ry again in [0-9]+ seconds?'
check_quota_headers "refusal" login-account 5

log "4. the same bucket as /v1/auth; other keys independent"
hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /login" -H "X-Login: a@b.c"
check_eq "/v1/auth with X-Login: a@b.c" "$H_CODE" 429
hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /login" -H "X-Login: c@d.e"
check_eq "/v1/auth with X-Login: c@d.e" "$H_CODE" 200
check '{"rule":"login-account","key":"c@d.e"}'
check_eq "/v1/check for c@d.e: remaining (one spent via /v1/auth)" "$(jget "d['remaining']" <<<"$H_BODY")" 3

log "5. penalty (strikes 2, window 1s, base 3s) on rule fast (2/s, burst 2)"
c=()
for _ in 1 2 3; do check '{"rule":"fast","key":"p1"}'; c+=("$H_CODE"); done
check_eq "p1: 3 at once" "${c[*]}" "200 200 429"
sleep 1.1
# a token has refilled (2/s): the first is allowed, then refused again in a
# new window: the second strike
c=()
for _ in 1 2 3 4; do check '{"rule":"fast","key":"p1"}'; c+=("$H_CODE"); done
check_match "p1: 1.1 s later" "${c[*]}" '^200 (200 )?429'
sleep 1.1
check '{"rule":"fast","key":"p1"}'
check_eq "p1 after its bucket refilled: blocked" "$H_CODE" 429
check_range "p1 blocked: Retry-After (s)" "$(hdr Retry-After)" 1 3
check_match "p1 blocked: detail" "$(jget "d['detail']" <<<"$H_BODY")" 'blocked'
check '{"rule":"fast","key":"p2"}'
check_eq "another key p2" "$H_CODE" 200

log "6. keys are used whole: 4 KiB keys that share their first 4095 bytes (JWT-like)"
long=$(head -c 4095 /dev/zero | tr '\0' x)
c=()
for _ in 1 2 3; do check "{\"rule\":\"login-account\",\"key\":\"${long}A\",\"cost\":2}"; c+=("$H_CODE"); done
check_eq "${long:0:8}...A: cost 2 x 3 of burst 5" "${c[*]}" "200 200 429"
check "{\"rule\":\"login-account\",\"key\":\"${long}B\",\"cost\":5}"
check_eq "${long:0:8}...B: a bucket of its own, all 5" "$H_CODE" 200
check "{\"rule\":\"login-account\",\"key\":\"${long:0:256}\",\"cost\":5}"
check_eq "its first 256 bytes: a bucket of their own, all 5" "$H_CODE" 200
hreq "http://127.0.0.1:$P/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /login" \
	-H "X-Login: ${long}C"
check_eq "/v1/auth, X-Login ${long:0:8}...C: not the spent bucket of its first 256 bytes" "$H_CODE" 200

finish
