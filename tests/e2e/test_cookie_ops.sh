#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_cookie_ops.sh - end to end, xrld on a veth with native XDP: the
# operator's side of SYN cookies (issue 12).
#
#   1. xrlctl vouch: list --json is [] when empty; add widens to the /24
#      and shows origin and time left; a prefix wider than /24 and a bad
#      one are refused with exit 2; del empties it; del again is exit 1
#   2. syn_cookies: auto: idle before the flood (stats --json, metrics,
#      status and status --json: every rule's mode, "auto (off)" idle,
#      "auto (on)" engaged, "on", "off");
#      a spoofed SYN flood above on_rate turns cookies on (logged, counted);
#      while they are on xrl makes the cookies, so the kernel's
#      TcpExtSyncookiesSent in the protected namespace does not rise; after
#      the flood they stay on for the hold time and at least min_on since
#      they engaged (a pulsing flood cannot toggle them), then go off;
#      xrlctl status, --json and the metrics name the cookie path (xrl's own)
#   0. on a veth whose peer runs no XDP program: the warning at apply, the
#      SYN-ACKs it dropped in status, --json and metrics; then the fix
#   3. xrlctl cookies RULE on|auto|off: --help without xrld; switches the
#      mode at run time (logged with the uid); a bad rule is exit 1, a bad
#      mode exit 2, both clear under --json; the next policy apply puts the
#      policy's mode back
#   4. the identity tier vouches: /v1/auth admitting a request of an http
#      rule with vouch: true vouches the client's /24 (from a trusted
#      proxy's X-Forwarded-For), origin identity; a refused request does
#      not; 200 admits from one /24 cost one map write; an xrld without
#      interfaces refuses vouch: true
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_cookie_ops
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

HOLD=3
MIN_ON=20 # longer than the flood ($((HOLD + 9)) s) and its hold
require_xrld curl
xrld_lab co$$
start_server

HP=$(free_port)
write_policy() {
	cat >"$XRLD_CONF" <<EOF
$(vouch_policy "$HP" 'syn_cookies: auto' \
	"syn_cookies_auto: { on_rate: 2000/s, off_rate: 500/s, hold: ${HOLD}s, min_on: ${MIN_ON}s, queue_pct: 90 }")
    - name: api
      match: { path_prefix: /api }
      key: header:X-Key
      rate: 1/min
      burst: 1
      vouch: true
EOF
}
write_policy
SYNCOOKIES0=$(in_prot cat /proc/sys/net/ipv4/tcp_syncookies)
xrld_start

# web FIELD: a field of rule web in `xrlctl --json stats`.
web() { ctl --json stats | jq_py "[r for r in d['interfaces'][0]['rules'] if r['name'] == 'web'][0]['$1']"; }
live_is() { [ "$(web syn_cookies_live)" = "$1" ]; }
ksent() { snmp prot TcpExt SyncookiesSent; }

log "0. a veth whose peer runs no XDP program drops the cookie SYN-ACKs: said"
check_match "xrld warned at the apply, with the fix" "$(cat "$XRLD_LOG")" \
	"$LAB_PROT_IF is a veth: its cookie SYN-ACKs \\(XDP_TX\\) are dropped unless the peer runs an XDP program; .*ip link set dev PEER xdpdrv obj"
ctl cookies web on >/dev/null
for _ in 1 2 3; do in_atk curl -s -o /dev/null --max-time 1 "http://$LAB_PROT_IP/" ; done
lost() { ctl --json status | jq_py "d['interfaces'][0]['syn_cookie_path']['veth_synacks_lost']"; }
lost_some() { [ "$(lost)" -gt 0 ]; }
wait_for 3 lost_some
check_ge "xrlctl status --json: SYN-ACKs the veth dropped" "$(lost)" 1
check_match "xrlctl status says so, with the fix" "$(ctl status)" \
	"veth: [1-9][0-9]* SYN-ACKs dropped by its peer \\(run an XDP program on the peer\\)"
check_ge "metric xrl_veth_synacks_dropped_total" \
	"$(xrld_metric 'xrl_veth_synacks_dropped_total{interface="'"$LAB_PROT_IF"'"}')" 1
# the fix: a program that passes everything on the peer; then connections work
atk_pass_xdp
check_rc "with XDP on the peer a client connects through the cookie path" \
	"$(in_atk curl -s -o /dev/null --max-time 3 "http://$LAB_PROT_IP/"; echo $?)" 0
ctl cookies web auto >/dev/null
ctl vouch del "${LAB_ATK_IP%.*}.0/24" >/dev/null # the handshake vouched for it

log "1. xrlctl vouch list|add|del"
check_eq "vouch list --json, empty" "$(ctl --json vouch list)" "[]"
out=$(ctl vouch add 192.0.2.7 --ttl 1m); rc=$?
check_rc "vouch add 192.0.2.7 --ttl 1m" "$rc" 0
check_match "... answers the /24 it vouched" "$out" "vouched for 192.0.2.0/24 for 1m"
check_match "... and says it widened the address" "$out" "192.0.2.7 widened to its /24: a vouch covers one /24 of IPv4"
check_eq "vouch list --json: the /24, runtime" \
	"$(ctl --json vouch list | jq_py "[len(d), d[0]['prefix'], d[0]['origin']]")" \
	"1 192.0.2.0/24 runtime"
check_range "... with about 60 s left" \
	"$(ctl --json vouch list | jq_py "int(d[0]['expires_in_s'])")" 55 60
check_match "vouch list (table)" "$(ctl vouch list)" "192.0.2.0/24 +runtime +[0-9.]+s"
out=$(ctl vouch add 10.0.0.0/8 2>&1); rc=$?
check_rc "vouch add 10.0.0.0/8 (wider than a /24)" "$rc" 2
check_match "... says why" "$out" "a vouch covers one /24 \\(IPv4\\) or /48 \\(IPv6\\); '10.0.0.0/8' is wider"
out=$(ctl --json vouch add 300.1.2.3); rc=$?
check_rc "vouch add 300.1.2.3 --json" "$rc" 2
check_match "... an error document" "$out" '^\{"error": ?".+"\}$'
check_rc "vouch del 192.0.2.0/24" "$(ctl vouch del 192.0.2.0/24 >/dev/null; echo $?)" 0
check_eq "vouch list --json after del" "$(ctl --json vouch list)" "[]"
out=$(ctl vouch del 192.0.2.0/24 2>&1); rc=$?
check_rc "vouch del of what is not vouched" "$rc" 1
check_match "... says so" "$out" "192.0.2.0/24 is not vouched for"
check_match "xrld logged the change with the uid" "$(cat "$XRLD_LOG")" \
	'change: `vouch add 192.0.2.7 --ttl 1m` by uid 0'

log "2. syn_cookies: auto, on_rate 2000/s, off_rate 500/s, hold ${HOLD}s"
check_eq "web is auto" "$(web syn_cookies)" "auto"
check_eq "web's cookies are idle" "$(web syn_cookies_live)" "false"
sck() { ctl --json status | jq_py "d['interfaces'][0]['syn_cookies']['web']"; }
check_match "xrlctl status: idle" "$(ctl status)" "$LAB_PROT_IF SYN cookies: web auto \\(off\\)"
check_eq "xrlctl status --json: idle" "$(sck)" "auto (off)"
check_eq "metric xrl_syn_cookies_active, idle" \
	"$(xrld_metric 'xrl_syn_cookies_active{interface="'"$LAB_PROT_IF"'",rule="web",mode="auto"}')" 0
syns0=$(web syns)
flood_bg "$LAB_TMP/flood.out" --dst "$LAB_PROT_IP" --dport 80 --sources 10.128.0.0/9 \
	--duration $((HOLD + 9)) --threads 1
wait_for 6 live_is true
check_eq "the flood turned web's cookies on" "$(web syn_cookies_live)" "true"
check_match "xrlctl status: engaged" "$(ctl status)" "SYN cookies: web auto \\(on\\)"
check_eq "xrlctl status --json: engaged" "$(sck)" "auto (on)"
check_match "xrld logged it" "$(cat "$XRLD_LOG")" "rule web: SYN cookies on \\(auto\\): [0-9]+ SYN/s \\(on_rate 2000/s\\)"
sleep 1 # the SYNs the kernel had queued before are answered
k0=$(ksent); c0=$(ctl --json stats | jq_py "d['interfaces'][0]['global']['cookies_sent']")
sleep 3
k1=$(ksent); c1=$(ctl --json stats | jq_py "d['interfaces'][0]['global']['cookies_sent']")
info "in 3 s with cookies on: xrl sent $((c1 - c0)) cookies, the kernel $((k1 - k0))"
check_ge "xrl made the cookies" $((c1 - c0)) 3000
check_range "the kernel's SyncookiesSent did not rise (a primer at most)" $((k1 - k0)) 0 2
check_ge "the rule counted the SYNs" $(( $(web syns) - syns0 )) 3000
flood_wait "$LAB_TMP/flood.out"
ends=$(date +%s.%N)
info "flood: sent $FLOOD_SENT SYNs in $FLOOD_MS ms"
sleep 1
check_eq "1 s after the flood web's cookies are still on (hold)" "$(web syn_cookies_live)" "true"
sleep $((HOLD + 1))
check_eq "after the hold web's cookies are still on (min_on ${MIN_ON}s)" "$(web syn_cookies_live)" "true"
wait_for $((MIN_ON - HOLD)) live_is false
check_eq "after min_on web's cookies are off" "$(web syn_cookies_live)" "false"
check_match "xrld logged it" "$(cat "$XRLD_LOG")" "rule web: SYN cookies off \\(auto\\): [0-9]+ SYN/s \\(off_rate 500/s\\)"
info "off $(awk -v a="$ends" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after the flood's last SYN"
check_eq "metric: one transition to on" \
	"$(xrld_metric 'xrl_syn_cookies_auto_transitions_total{interface="'"$LAB_PROT_IF"'",rule="web",to="on"}')" 1
check_eq "metric: one transition to off" \
	"$(xrld_metric 'xrl_syn_cookies_auto_transitions_total{interface="'"$LAB_PROT_IF"'",rule="web",to="off"}')" 1
check_ge "metric xrl_rule_syns_total" \
	"$(xrld_metric 'xrl_rule_syns_total{interface="'"$LAB_PROT_IF"'",rule="web"}')" 3000

log "3. xrlctl cookies RULE on|auto|off"
out=$("$XRLCTL" --socket /nonexistent cookies --help); rc=$?
check_rc "cookies --help without xrld" "$rc" 0
check_match "... names the modes" "$out" "cookies RULE on\\|auto\\|off"
check_match "... and how long" "$out" "until the next policy apply"
out=$(ctl --json cookies web on); rc=$?
check_rc "cookies web on --json" "$rc" 0
check_match "... a JSON answer" "$out" '"ok": ?true'
check_eq "web is on" "$(web syn_cookies) $(web syn_cookies_live)" "on true"
check_match "the stats table says so" "$(ctl stats)" "SYN cookies: web on"
check_match "xrlctl status says so" "$(ctl status)" "SYN cookies: web on$"
check_eq "xrl's own cookies left tcp_syncookies as it was" \
	"$(in_prot cat /proc/sys/net/ipv4/tcp_syncookies)" "$SYNCOOKIES0"
check_match "xrlctl status names the cookie path" "$(ctl status)" \
	"$LAB_PROT_IF SYN-cookie path: xrl's own \\(TC request sockets, no sysctl\\)"
check_eq "xrlctl status --json: the path" \
	"$(ctl --json status | jq_py "d['interfaces'][0]['syn_cookie_path']['path']")" "xrl"
check_eq "metric xrl_syn_cookie_path" \
	"$(xrld_metric 'xrl_syn_cookie_path{interface="'"$LAB_PROT_IF"'",path="xrl"}')" 1
out=$(ctl cookies nope on 2>&1); rc=$?
check_rc "cookies nope on" "$rc" 1
check_match "... says so, naming the rules there are" "$out" "no rule named 'nope' \\(packet rules: [a-z]"
out=$(ctl --json cookies nope on); rc=$?
check_rc "cookies nope on --json" "$rc" 1
check_match "... an error document" "$out" "\"error\": ?\"no rule named 'nope' \\(packet rules: "
out=$(ctl cookies web maybe 2>&1); rc=$?
check_rc "cookies web maybe" "$rc" 2
check_match "... says what it wants" "$out" "want on, auto or off, got 'maybe'"
check_rc "cookies web off" "$(ctl cookies web off >/dev/null; echo $?)" 0
check_eq "web is off" "$(web syn_cookies) $(web syn_cookies_live)" "off false"
check_match "xrlctl status says so" "$(ctl status)" "SYN cookies: web off$"
check_eq "xrlctl status --json: off" "$(sck)" "off"
check_match "xrld logged it with the uid" "$(cat "$XRLD_LOG")" \
	'change: `cookies web off` by uid 0 \(pid [0-9]+\): rule web: SYN cookies off \(were on;'
ctl policy apply "$XRLD_CONF" >/dev/null || fatal "policy apply failed"
check_eq "the next policy apply puts auto back" "$(web syn_cookies)" "auto"

log "4. the identity tier vouches (http rules with vouch: true)"
# auth URI XFF [KEY]: /v1/auth as nginx asks it; prints the status code.
auth() { id_auth "$HP" "$@"; }
# vouch_of PREFIX: "ORIGIN SECONDS-LEFT" of PREFIX in vouch list, or absent.
vouch_of() { ctl --json vouch list | jq_py "([e['origin'] + ' ' + str(int(e['expires_in_s'] or 0)) for e in d if e['prefix'] == '$1'] + ['absent'])[0]"; }
vouched() { [ "$(vouch_of "$1")" != absent ]; }
check_eq "login admits 198.51.100.23" "$(auth /login 198.51.100.23)" 200
wait_for 3 vouched 198.51.100.0/24
check_match "198.51.100.0/24 is vouched, origin identity, ttl 2m" "$(vouch_of 198.51.100.0/24)" "^identity 1(19|20)$"
check_eq "api admits key k1 from 192.0.2.50" "$(auth /api 192.0.2.50 k1)" 200
wait_for 3 vouched 192.0.2.0/24
check_match "192.0.2.0/24 is vouched (default ttl 600 s)" "$(vouch_of 192.0.2.0/24)" "^identity 59[0-9]$"
ctl vouch del 192.0.2.0/24 >/dev/null
check_eq "api refuses key k1 again, from 192.0.2.51" "$(auth /api 192.0.2.51 k1)" 429
sleep 1
check_eq "a refused request vouches for nobody" "$(vouch_of 192.0.2.0/24)" "absent"
w0=$(xrld_metric 'xrl_identity_vouches_total{outcome="written"}')
s0=$(xrld_metric 'xrl_identity_vouches_total{outcome="skipped"}')
for i in $(seq 1 200); do auth /login "203.0.113.$((i % 250 + 1))" >/dev/null; done
sleep 1
check_eq "200 admits from 203.0.113.0/24: one map write" \
	$(( $(xrld_metric 'xrl_identity_vouches_total{outcome="written"}') - w0 )) 1
check_eq "... the other 199 skipped before the queue" \
	$(( $(xrld_metric 'xrl_identity_vouches_total{outcome="skipped"}') - s0 )) 199
check_match "203.0.113.0/24 is vouched" "$(vouch_of 203.0.113.0/24)" "^identity "
cat >"$LAB_TMP/http-only.yaml" <<EOF
http:
  listen: 127.0.0.1:$HP
  rules:
    - { name: login, rate: 10/s, burst: 10, vouch: true }
EOF
out=$("$XRLD" --check "$LAB_TMP/http-only.yaml" 2>&1); rc=$?
check_rc "xrld --check: vouch: true without interfaces" "$rc" 1
check_match "... says why" "$out" "http.rules\\[0\\].vouch: vouch: true needs the packet tier in this xrld"

finish
