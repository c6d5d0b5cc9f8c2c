#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_concurrency.sh - end to end: concurrency rules, post-paid cost,
# exempt routes and shedding per route, on one xrld (memory backend).
#
#   1. rule checkout {key global, concurrency 20}: 60 requests start at
#      once and hold their slot 2 s (conc_client.py, timestamps on the
#      client side): 20 admitted, 40 refused with 503 and Retry-After, never
#      more than 20 inside; then all 20 slots are free again
#   2. a holder killed (SIGKILL) without releasing: its slot is refused to
#      others until lease_ttl (2 s), then free
#   3. post-paid cost: /v1/check takes a slot and a token, /v1/release
#      cost=5 takes 5 more: the next decision's RateLimit shows r=3
#   4. exempt: GET /healthz gets 200 through a shed bucket and a rule that
#      refuse; GET /healthy (not exempt) gets 429 from the rule, then 503
#   5. shed per route: checkout sheds (503) while holds keep flowing (200)
#   6. DELETE /v1/lease/ID: 204, then 404; a bad release body: 400; 405
#      with Allow; costs out of range (1e99, -5, 2^64) 400; a forged
#      nonce frees nothing; crafted ids (1000 bytes, dots, %2e, %00) 404
#   7. xrlctl --json policy show has concurrency, lease_ttl, exempt and the
#      shed routes (a concurrency-only rule's rate and burst: null)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_concurrency
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http
http_setup

P=$(free_port)
cat >"$HT_TMP/a.yaml" <<YAML
http:
  listen: 127.0.0.1:$P
  forwarded_from: traefik
  trusted_proxies: [127.0.0.1]
  threads: 4
  exempt:
    - { method: GET, path_prefix: /healthz }
  shed:
    - { match: { path_prefix: /api/checkout-shed }, rate: 1/min, burst: 1 }
    - { match: { method: GET, path_prefix: /health }, rate: 1/min, burst: 2 }
  rules:
$(conc_rules)
    - name: probes
      match: { method: GET, path_prefix: /health }
      key: client_ip
      rate: 1/h
      burst: 1
YAML
xrld_http_start a "$HT_TMP/a.yaml" "$P"
URL=http://127.0.0.1:$P

info "1. 60 at once against concurrency 20, each holding 2 s"
check_conc_60 "$P" ""
conc_burst "$P" 20 0
check_eq "all 20 slots given back: 20 admitted again" "$admitted" 20

info "2. a holder killed without releasing"
solo_holder_killed "$P" ""
hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/solo"
check_eq "its slot is still held after the kill" "$H_CODE" 503
check_solo_freed "$URL" ""
solo_lease=$(hdr X-XRL-Lease)

info "3. post-paid cost"
check_post_paid "$URL" "$URL" ""
check_eq "check: the lease is in the body too" "$(jget "d['leases'][0]" <<<"$LEASE_BODY")" "$LEASE"

info "4. exempt probes (shed GET /health*: burst 2; rule probes: burst 1)"
hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /healthy"
check_eq "GET /healthy 1: the rule's one token" "$H_CODE" 200
hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /healthy"
check_eq "GET /healthy 2, not exempt: the rule refuses" "$H_CODE" 429
hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /healthy"
check_eq "GET /healthy 3, not exempt: shed" "$H_CODE" 503
for i in 1 2 3 4; do
	hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /healthz"
	check_eq "GET /healthz $i: exempt, through both" "$H_CODE" 200
	check_eq "GET /healthz $i: no quota headers (not counted)" "$(hdr RateLimit)" ""
done

# an exemption covers whole segments of the normalised path: /healthz/live
# is exempt; /healthzX, /healthz.php and a dot-segment walk out of it are
# not (they meet the rule, whose token is spent)
hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /healthz/live"
check_eq "GET /healthz/live: exempt" "$H_CODE" 200
for u in /healthzX /healthz.php /healthz/../healthy /healthz/%2e%2e/healthy; do
	hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: $u"
	check_eq "GET $u: not exempt (refused)" "$([ "$H_CODE" = 200 ] && echo admitted || echo refused)" refused
done

info "5. shedding per route"
hreq "$URL/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/checkout-shed"
hreq "$URL/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/checkout-shed"
check_eq "checkout sheds" "$H_CODE" 503
for i in 1 2 3; do
	hreq "$URL/v1/auth" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/$i"
	check_eq "holds $i keep flowing" "$H_CODE" 200
done

info "6. DELETE /v1/lease/ID and bad releases"
hreq "$URL/v1/lease/$solo_lease" -X DELETE
check_eq "DELETE a held lease" "$H_CODE" 204
hreq "$URL/v1/lease/$solo_lease" -X DELETE
check_eq "DELETE it again" "$H_CODE" 404
hreq "$URL/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/solo"
check_eq "the slot is free after the DELETE" "$H_CODE" 200
hreq "$URL/v1/release" -X POST -d '{"lease":5}'
check_eq "a release body that is not one" "$H_CODE" 400
hreq "$URL/v1/release" -X GET
check_eq "GET /v1/release" "$H_CODE" 405
check_eq "  Allow" "$(hdr Allow)" POST
hreq "$URL/v1/lease/$solo_lease" -X GET
check_eq "GET /v1/lease/ID" "$H_CODE" 405
check_eq "  Allow" "$(hdr Allow)" DELETE
for c in 1e99 -5 18446744073709551616 100000001; do
	hreq "$URL/v1/release" -X POST -H "X-XRL-Lease: $solo_lease" -H "X-XRL-Cost: $c"
	check_eq "X-XRL-Cost: '$c' refused" "$H_CODE" 400
	hreq "$URL/v1/release" -X POST -H 'Content-Type: application/json' \
		-d "{\"lease\":\"$solo_lease\",\"cost\":$c}"
	check_eq "{\"cost\":$c} refused" "$H_CODE" 400
done
forged=${solo_lease%.*}
forged="${forged%.*}.0123456789abcdef.${solo_lease##*.}"
hreq "$URL/v1/release" -X POST -d "lease=$forged"
check_eq "a forged nonce releases nothing" "$H_BODY" '{"released":0,"unknown":1,"charged":0}'
for id in "$(printf 'a%.0s' $(seq 1000))" ... "a.b.c" "%2e%2e" "x.0123456789abcdef.%00"; do
	hreq "$URL/v1/lease/$id" -X DELETE
	check_eq "DELETE /v1/lease/${id:0:20}: 404" "$H_CODE" 404
done

info "7. the policy as JSON"
pj=$("$XRL_ROOT/build/xrlctl" --socket "$HT_TMP/a.sock" --json policy show 2>&1)
pjget() { jget "$1" <<<"$pj"; }
check_eq "checkout: concurrency, lease_ttl" \
	"$(pjget "[(r['concurrency'], r['lease_ttl'], r['rate'], r['burst']) for r in d['policy']['http']['rules'] if r['name'] == 'checkout'][0]")" \
	"(20, '30s', None, None)"
check_eq "report: rate and concurrency" \
	"$(pjget "[(r['rate'], r['burst'], r['concurrency']) for r in d['policy']['http']['rules'] if r['name'] == 'report'][0]")" \
	"('1/h', 10, 5)"
check_eq "exempt" "$(pjget "d['policy']['http']['exempt']")" "[{'method': 'GET', 'path_prefix': '/healthz'}]"
check_eq "shed per route" "$(pjget "[(x['match']['path_prefix'], x['rate'], x['burst']) for x in d['policy']['http']['shed']]")" \
	"[('/api/checkout-shed', '1/min', 1), ('/health', '1/min', 2)]"

finish
