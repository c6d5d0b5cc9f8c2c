#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_malformed.sh - end to end: oversized and malformed requests get a
# 4xx, and the identity tier keeps serving after each (/healthz 200).
#
#   1. a 20 KB header -> 431; 2000 small headers -> 431; a 6 KB header
#      (under max_header_bytes 8192) -> 200
#   2. garbage request lines ("HELLO WORLD", binary junk) -> 400; a one-word
#      line, a request split forever: no 2xx, and the server survives
#   3. /v1/check: bad JSON, not an object, no key, negative cost -> 400
#      problem+json; an unknown rule -> 404; a body over 16 KiB -> 413;
#      GET -> 405; an unknown path -> 404
#   4. a connection that sends half a request is closed after idle_timeout
#      (2 s)
#   after every step: /healthz 200, and a normal decision still works
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_malformed
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http
http_setup

P=$(free_port)
xrld_http_run xrld "$P" <<EOF
$(http_yaml "$P")
  idle_timeout: 2s
  max_header_bytes: 8192
  rules:
    - name: login-account
      key: header:X-Login
      rate: 1/min
      burst: 100
EOF
BASE=http://127.0.0.1:$P

# alive AFTER: /healthz 200 and a decision 200
alive() {
	local h d
	h=$(curl -s -m 3 -o /dev/null -w '%{http_code}' "$BASE/healthz")
	d=$(curl -s -m 3 -o /dev/null -w '%{http_code}' -H "X-Login: alive" "$BASE/v1/auth")
	check_eq "  still serving after $1 (healthz, decision)" "$h $d" "200 200"
}

# raw BYTES-AS-PYTHON-LITERAL: send them on a new connection; prints the
# status line of the answer, or "closed" / "timeout"
raw() {
	"$XRL_PY" - "$P" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
s.settimeout(3)
s.sendall(eval(sys.argv[2]))  # the test's own literal
try:
    d = s.recv(4096)
    print(d.split(b"\r\n")[0].decode("latin-1") if d else "closed")
except socket.timeout:
    print("timeout")
PY
}

log "1. header sizes (max_header_bytes 8192)"
big=$(printf '%*s' 20480 '' | tr ' ' a)
hreq "$BASE/v1/auth" -H "X-Login: u1" -H "X-Big: $big"
check_eq "a 20 KB header" "$H_CODE" 431
alive "a 20 KB header"
check_eq "2000 small headers" "$(raw 'b"GET /healthz HTTP/1.1\r\nHost: a\r\n" + b"X-A: b\r\n" * 2000 + b"\r\n"')" \
	"HTTP/1.1 431 Request Header Fields Too Large"
alive "2000 headers"
hreq "$BASE/v1/auth" -H "X-Login: u1" -H "X-Big: ${big:0:6144}"
check_eq "a 6 KB header" "$H_CODE" 200

log "2. garbage"
check_eq "request line \"HELLO WORLD\"" "$(raw 'b"HELLO WORLD\r\n\r\n"')" "HTTP/1.1 400 Bad Request"
alive "HELLO WORLD"
check_eq "request line of binary junk" "$(raw 'b"\x01\x02\x03 \xff\xfe\r\n\r\n"')" "HTTP/1.1 400 Bad Request"
alive "binary junk"
check_eq "request line \"GET / HTTP/9.9 x\"" "$(raw 'b"GET / HTTP/9.9 x\r\n\r\n"')" "HTTP/1.1 400 Bad Request"
check_eq "a header line without a colon" "$(raw 'b"GET /healthz HTTP/1.1\r\nHost: a\r\nno colon here\r\n\r\n"')" \
	"HTTP/1.1 400 Bad Request"
check_eq "Content-Length: abc" "$(raw 'b"POST /v1/check HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n"')" \
	"HTTP/1.1 400 Bad Request"
out=$(raw 'b"GARBAGE\r\n\r\n"')
check_match "a one-word request line: no 2xx" "$out" '^(closed|HTTP/1\.1 4[0-9][0-9] .*)$'
alive "a one-word line"
out=$(raw 'b"\x00" * 5000 + b"\r\n\r\n"')
check_match "5000 NUL bytes: no 2xx" "$out" '^(closed|HTTP/1\.1 4[0-9][0-9] .*)$'
alive "NUL bytes"

log "3. /v1/check"
# post BODY: POST to /v1/check
post() { hreq "$BASE/v1/check" -X POST -H "Content-Type: application/json" --data-binary "$1"; }
for body in '{bad' '[1,2]' '{"rule":"login-account"}' '{"rule":"login-account","key":""}' \
	'{"rule":"login-account","key":"k","cost":-1}' '{"rule":"login-account","key":"k","cost":"1"}' \
	'{"rule":7,"key":"k"}'; do
	post "$body"
	check_eq "$body: status" "$H_CODE" 400
	check_match "$body: problem+json" "$(hdr Content-Type)" '^application/problem\+json'
	check_eq "$body: .status" "$(jget "d['status']" <<<"$H_BODY")" 400
done
alive "bad JSON"
post '{"rule":"no-such-rule","key":"k"}'
check_eq "unknown rule: status" "$H_CODE" 404
check_match "unknown rule: detail names it" "$(jget "d['detail']" <<<"$H_BODY")" 'no-such-rule'
check_match "unknown rule: problem+json" "$(hdr Content-Type)" '^application/problem\+json'
alive "an unknown rule"
post "{\"rule\":\"login-account\",\"key\":\"$(printf '%*s' 20000 '' | tr ' ' k)\"}"
check_eq "a 20 KB body: status" "$H_CODE" 413
alive "a 20 KB body"
hreq "$BASE/v1/check"
check_eq "GET /v1/check" "$H_CODE" 405
hreq "$BASE/nowhere"
check_eq "GET /nowhere" "$H_CODE" 404
check_match "GET /nowhere: problem+json" "$(hdr Content-Type)" '^application/problem\+json'
alive "404s"

log "4. idle_timeout 2s"
t=$("$XRL_PY" - "$P" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\n")
t = time.time()
s.settimeout(10)
try:
    d = s.recv(4096)
except Exception:
    d = b"?"
print("%.1f" % (time.time() - t) if d == b"" else "answered %r" % d[:40])
PY
)
check_float "a half-sent request is closed after (s)" "$t" 1.5 4
alive "an idle connection"

finish
