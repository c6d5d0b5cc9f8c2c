#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_client_ip.sh - end to end: key client_ip and X-Forwarded-For. A
# peer that is not a trusted proxy cannot choose its bucket with a spoofed
# X-Forwarded-For; behind a trusted proxy the header is walked right to left
# and the first untrusted address is the client.
#
# Rule per-ip {key client_ip, 1/min, burst 3} on two xrld instances:
#   U: trusted_proxies [10.9.9.9/32]  (curl from 127.0.0.1 is not trusted)
#   T: trusted_proxies [127.0.0.1/32] (curl from 127.0.0.1 is a proxy)
#
#   1. U: 3 requests with X-Forwarded-For 1.2.3.1..3 are 200, then 8 more
#      with new X-Forwarded-For values and one without: all 429 (one bucket,
#      127.0.0.1's)
#   2. T: "1.2.3.4, 127.0.0.1" x3 -> 200, the 4th 429; "1.2.3.5, 127.0.0.1"
#      -> 200 (a new bucket); 10 rotating addresses -> all 200; an IPv6 client
#      has its own bucket
#   3. T: a client at 1.2.3.4 that prepends a fake address
#      ("6.6.6.6, 1.2.3.4, 127.0.0.1") is still 1.2.3.4: 429; rotating junk
#      in X-Forwarded-For falls back to the peer's bucket (limited)
#   4. T: a client's own X-Forwarded-For field line followed by the proxy's,
#      and an X-Forwarded-For longer than 1 KiB: the proxy's entry (the
#      last) decides, so neither gives the client a new bucket
#   5. T: entries with a port, brackets or quotes ("203.0.113.1:1111",
#      "[2001:db8::1]:3333", "\"[2001:db8::1]\"") are their client's address:
#      the port does not make a new bucket, and clients do not share the
#      proxy's (issue 11, finding 9)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_client_ip
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http
http_setup

PU=$(free_port)
PT=$(free_port)
for n in U T; do
	if [ "$n" = U ]; then p=$PU tp=10.9.9.9/32; else p=$PT tp=127.0.0.1/32; fi
	cat >"$HT_TMP/$n.yaml" <<EOF
http:
  listen: 127.0.0.1:$p
  forwarded_from: traefik
  trusted_proxies: [$tp]
  rules:
    - name: per-ip
      key: client_ip
      rate: 1/min
      burst: 3
EOF
	xrld_http_start "$n" "$HT_TMP/$n.yaml" "$p"
done

# xff PORT VALUE: a forward-auth request with that X-Forwarded-For (none if
# VALUE is empty); sets H_CODE
xff() {
	if [ -n "$2" ]; then
		hreq "http://127.0.0.1:$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /x" \
			-H "X-Forwarded-For: $2"
	else
		hreq "http://127.0.0.1:$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /x"
	fi
}

log "1. untrusted peer (U, trusted_proxies 10.9.9.9/32): X-Forwarded-For is ignored"
codes 3 xff "$PU" "1.2.3.{i}"
check_eq "XFF 1.2.3.1..3" "${CODES[*]}" "200 200 200"
CODES=()
for i in $(seq 4 11); do xff "$PU" "1.2.3.$i"; CODES+=("$H_CODE"); done
check_eq "8 more, XFF rotating 1.2.3.4..11" "${CODES[*]}" "429 429 429 429 429 429 429 429"
xff "$PU" "9.9.9.9, 10.9.9.9"
check_eq "XFF naming the trusted proxy itself" "$H_CODE" 429
xff "$PU" ""
check_eq "no XFF (127.0.0.1's bucket, spent)" "$H_CODE" 429

log "2. trusted peer (T, trusted_proxies 127.0.0.1/32): walked right to left"
codes 4 xff "$PT" "1.2.3.4, 127.0.0.1"
check_eq "XFF \"1.2.3.4, 127.0.0.1\" x4" "${CODES[*]}" "200 200 200 429"
xff "$PT" "1.2.3.5, 127.0.0.1"
check_eq "XFF \"1.2.3.5, 127.0.0.1\" (new bucket)" "$H_CODE" 200
check_eq "  its X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" 2
codes 10 xff "$PT" "203.0.113.{i}"
check_eq "10 rotating clients 203.0.113.1..10" "$(count 200 "${CODES[@]}")" 10
codes 4 xff "$PT" "2001:db8::7, 127.0.0.1"
check_eq "IPv6 client 2001:db8::7 x4" "${CODES[*]}" "200 200 200 429"
xff "$PT" "1.2.3.4"
check_eq "XFF \"1.2.3.4\" (same client, spent)" "$H_CODE" 429

log "3. trusted peer: spoofing behind the proxy"
xff "$PT" "6.6.6.6, 1.2.3.4, 127.0.0.1"
check_eq "client 1.2.3.4 prepending 6.6.6.6" "$H_CODE" 429
xff "$PT" "6.6.6.7, 1.2.3.4"
check_eq "client 1.2.3.4 prepending 6.6.6.7" "$H_CODE" 429
codes 6 xff "$PT" "junk{i}"
check_eq "XFF junk1..6 (peer 127.0.0.1's bucket)" "${CODES[*]}" "200 200 200 429 429 429"
xff "$PT" "5.5.5.5, junk, 127.0.0.1"
check_eq "XFF with a junk hop: stops at the last vouched address" "$H_CODE" 429

log "4. trusted peer: the whole header counts"
# a proxy that adds its own field line (HAProxy's option forwardfor) after
# the client's: the fields are one list, the proxy's entry is the last
codes 5 hreq "http://127.0.0.1:$PT/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /x" \
	-H "X-Forwarded-For: 7.7.7.{i}" \
	-H "X-Forwarded-For: 1.2.3.4"
check_eq "two XFF lines, client's 7.7.7.1..5 then 1.2.3.4 (spent)" "${CODES[*]}" "429 429 429 429 429"
# a long header whose first KiB ends with an address the client chose
CODES=()
for i in $(seq 5); do
	long=$("$XRL_PY" -c '
import sys
tail = "7.7.8.%s" % sys.argv[1]
s = ""
while len(s) < 1023 - len(tail) - 20:
    s += "10.1.1.1, "
s += "1" * (1023 - len(tail) - 2 - len(s)) + ", " + tail
print(s + ", 1.2.3.4")' "$i")
	xff "$PT" "$long"
	CODES+=("$H_CODE")
done
check_eq "XFF of ${#long} bytes ending in 1.2.3.4 (spent), x5" "${CODES[*]}" "429 429 429 429 429"

log "5. trusted peer: entries with a port, brackets or quotes"
codes 4 xff "$PT" "198.51.100.1:111{i}"
check_eq "198.51.100.1 with ports 1111..1114: one bucket" "${CODES[*]}" "200 200 200 429"
xff "$PT" "198.51.100.1"
check_eq "198.51.100.1 without a port: the same bucket" "$H_CODE" 429
CODES=()
for e in "[2001:db8:1::1]:3333" "[2001:db8:1::1]:3334" '"[2001:db8:1::1]"' "2001:db8:1::1"; do
	xff "$PT" "$e"; CODES+=("$H_CODE")
done
check_eq "2001:db8:1::1 (its /64) as [..]:3333, [..]:3334, \"[..]\", bare: one bucket" "${CODES[*]}" "200 200 200 429"
codes 5 xff "$PT" "198.51.100.1{i}:4444"
check_eq "5 clients with ports: not the proxy's bucket (all 200)" "${CODES[*]}" "200 200 200 200 200"

finish
