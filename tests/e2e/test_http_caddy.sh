#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_caddy.sh - end to end through the real Caddy (Debian's caddy 2.6)
# with the shipped docs/examples/caddy-xrl.Caddyfile: forward_auth to
# xrld's /v1/auth, a backend behind it.
#
# xrld: forwarded_from caddy, trusted_proxies [127.0.0.1], rule
#   holds {POST /api/holds, bearer, 1/min, burst 3}
#
#   1. 4 POSTs of one token: the client sees 200 200 200 429; the 200s are
#      the backend's answers (no quota headers reach the client on a 200,
#      as the Caddyfile says); the 429 is xrld's as the client sees it:
#      Retry-After (whole seconds, > 0), RateLimit-Policy, RateLimit,
#      X-RateLimit-*, a problem+json body naming the rule; the backend did
#      not see the refused request
#   2. another token has its own bucket; GET is not limited
#   3. a client's own X-Forwarded-Uri / X-Forwarded-Method change nothing
#      (Caddy sets them)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_caddy
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

SNIPPET=$XRL_ROOT/docs/examples/caddy-xrl.Caddyfile
CADDY=${CADDY:-$(command -v caddy || echo /usr/bin/caddy)}
[ -x "$CADDY" ] || skip "needs caddy"
http_begin
[ -r "$SNIPPET" ] || fatal "$SNIPPET is missing"

xrld_http_rules xrld caddy <<EOF
  rules:
$(yaml_rule holds '{ method: POST, path_prefix: /api/holds }' bearer 1/min 3)
EOF
X=${HT_PORT[xrld]}; C=$(free_port); UP=$(free_port)
T=$HT_TMP

# the backend: answers 200 and logs every request it sees
"$XRL_PY" - "$UP" "$T/backend.log" <<'PY' >/dev/null 2>&1 &
import http.server, sys
log = open(sys.argv[2], "a", buffering=1)
class H(http.server.BaseHTTPRequestHandler):
    def handle_one(self):
        pass
    def do_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        log.write("%s %s\n" % (self.command, self.path))
        body = b"backend ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = do_any
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
HT_PIDS+=("$!")
wait_for 10 port_listens "$UP" || fatal "the backend did not start"

for ph in 'http://:8080 {' 'forward_auth 127.0.0.1:8433 {' 'reverse_proxy 127.0.0.1:8000'; do
	grep -qF -- "$ph" "$SNIPPET" || fatal "the Caddyfile no longer has '$ph'"
done
sed -e "s|^http://:8080 {|http://127.0.0.1:$C {|" -e "s|forward_auth 127.0.0.1:8433 {|forward_auth 127.0.0.1:$X {|" \
	-e "s|reverse_proxy 127.0.0.1:8000|reverse_proxy 127.0.0.1:$UP|" "$SNIPPET" >"$T/Caddyfile"
HOME=$T XDG_DATA_HOME=$T XDG_CONFIG_HOME=$T "$CADDY" run --config "$T/Caddyfile" --adapter caddyfile \
	>"$T/caddy.log" 2>&1 &
HT_PID[caddy]=$!
HT_PIDS+=("$!")
HT_LOG[caddy]=$T/caddy.log
wait_for 10 port_listens "$C" || fatal "caddy did not start: $(tail -n 5 "$T/caddy.log")"
info "caddy on $C (the shipped Caddyfile) -> xrld $X, backend $UP"
BASE=http://127.0.0.1:$C

log "1. 4 POSTs of one token through Caddy"
codes=()
for i in 1 2 3 4; do
	hreq "$BASE/api/holds/1" -X POST -H "Authorization: Bearer tok-a"
	codes+=("$H_CODE")
	if [ "$i" = 1 ]; then
		check_eq "an allowed request: the backend's answer" "$H_BODY" "backend ok"
		check_eq "an allowed request: no quota header reaches the client" "$(hdr RateLimit)" ""
	fi
done
check_eq "statuses" "${codes[*]}" "200 200 200 429"
check_match "429: Retry-After, whole seconds > 0" "$(hdr Retry-After)" '^[1-9][0-9]*$'
check_quota_headers "429" holds 3
check_match "429: problem+json" "$(hdr Content-Type)" '^application/problem\+json'
check_eq "429: the body names the rule" "$(jget "d.get('rule') or d.get('limit') and d['rule']" <<<"$H_BODY")" holds
check_eq "the backend saw the 3 allowed POSTs only" "$(grep -c '^POST /api/holds/1' "$T/backend.log")" 3

log "2. another token, and a GET"
hreq "$BASE/api/holds/1" -X POST -H "Authorization: Bearer tok-b"
check_eq "another token: its own bucket" "$H_CODE" 200
hreq "$BASE/api/holds/1" -H "Authorization: Bearer tok-a"
check_eq "GET is not limited by a POST rule" "$H_CODE" 200

log "3. the client's own forwarded headers"
hreq "$BASE/api/holds/1" -X POST -H "Authorization: Bearer tok-a" -H "X-Forwarded-Uri: /x"
check_eq "X-Forwarded-Uri: /x from the client: still refused" "$H_CODE" 429
hreq "$BASE/api/holds/1" -X POST -H "Authorization: Bearer tok-a" -H "X-Forwarded-Method: GET"
check_eq "X-Forwarded-Method: GET from the client: still refused" "$H_CODE" 429
finish
