#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_nginx_release.sh - end to end: the shipped snippet
# docs/examples/nginx-xrl-concurrency.conf on the real nginx gives a
# concurrency slot back when the request is over (post_action ->
# POST /v1/release with the lease from auth_request_set), long before
# lease_ttl.
#
# xrld: rule slow {GET /api/slow, key global, concurrency 1, lease_ttl 30s}.
# The application (a python server) answers /api/slow after 1 s.
#   1. request A through nginx holds the slot while the application sleeps:
#      request B, 0.3 s later, gets 503 (xrld's 401 -> @xrl_shed)
#   2. A gets its 200 after ~1 s; within 0.5 s of that the slot is free
#      again (C gets 200): given back, not run out (lease_ttl is 30 s)
#   3. no release subrequest failed in nginx's error log (B, refused, had
#      no lease: the release location answered 204 itself); C's slot came
#      back too (D admitted)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_nginx_release
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_nginx
SNIPPET=$XRL_ROOT/docs/examples/nginx-xrl-concurrency.conf
[ -r "$SNIPPET" ] || fatal "$SNIPPET is missing"
http_setup

X=$(free_port); N=$(free_port); APP=$(free_port); NUP=$(free_port)
cat >"$HT_TMP/x.yaml" <<YAML
http:
  listen: 127.0.0.1:$X
  forwarded_from: nginx
  trusted_proxies: [127.0.0.1]
  rules:
    - name: slow
      match: { method: GET, path_prefix: /api/slow }
      key: global
      concurrency: 1
      lease_ttl: 30s
YAML
xrld_http_start xrld "$HT_TMP/x.yaml" "$X"

"$XRL_PY" - "$APP" >"$HT_TMP/app.log" 2>&1 <<'PY' &
import http.server, sys, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(1)
        b = b"slow ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
HT_PIDS+=("$!")
wait_for 10 port_listens "$APP" || fatal "the application did not start: $(cat "$HT_TMP/app.log")"

nginx_render "$SNIPPET" "$N" "$X" "$APP" "$HT_TMP/xrl.conf"
nginx_start "$HT_TMP" "$NUP" "$N" "" "$HT_TMP/xrl.conf"
info "nginx on $N -> xrld $X, application $APP (1 s per request)"
U=http://127.0.0.1:$N

log "1. A holds the slot while the application sleeps"
t0=$(date +%s%N)
curl -s -m 5 -o "$HT_TMP/a.body" -w '%{http_code}' "$U/api/slow/a" >"$HT_TMP/a.code" &
AP=$!
sleep 0.3
hreq "$U/api/slow/b"
check_eq "B, 0.3 s later: at capacity" "$H_CODE" 503
wait "$AP"
ta=$(date +%s%N)
check_eq "A: the application's answer" "$(cat "$HT_TMP/a.code") $(cat "$HT_TMP/a.body")" "200 slow ok"
check_range "A took (ms)" $(((ta - t0) / 1000000)) 950 2500

log "2. the slot comes back when A is over"
while :; do
	hreq "$U/api/slow/c" -m 3
	[ "$H_CODE" = 200 ] && break
	[ $(($(date +%s%N) - ta)) -gt 3000000000 ] && break
	sleep 0.05
done
tc=$(date +%s%N)
check_eq "C after A: admitted" "$H_CODE" 200
check_range "C admitted within (ms of A's end; lease_ttl is 30 s)" \
	$(((tc - ta) / 1000000 - 1000)) -1000 500

log "3. releases"
sleep 0.3
check_eq "nginx's error log: no failed release subrequest" \
	"$(grep -c 'xrl_release\|/v1/release' "$HT_TMP/nginx-error.log" || true)" 0
hreq "http://127.0.0.1:$X/v1/release" -X POST -H "X-XRL-Lease: slow.0000000000000000.Kg"
check_eq "a lease not held: reported, not an error" "$H_BODY" '{"released":0,"unknown":1,"charged":0}'
hreq "$U/api/slow/d" -m 3
check_eq "D after C's release: admitted" "$H_CODE" 200
finish
