#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrlctl_http.sh - end to end: xrlctl against an HTTP-only xrld (no
# interface, no XDP program), each verb's text, --json (errors too, [] for
# an empty list) and exit code (0 ok, 1 error, 2 usage).
#
# M: memory backend, rules holds {POST /api/holds, header:X-User-Id, 1/min,
# burst 3}, api {/api/, bearer, 1/min, burst 2}, flood {/flood/,
# header:X-User-Id, 1/min, burst 1}. A and B: the same rules on one Redis.
#
#   1. VERB --help for every verb, with no xrld: exit 0, its usage
#   2. status: the listener, the backend, the rules, "packet tier is not
#      loaded"; --json .http
#   2b. G: a rule of key: global with concurrency alone, one of rate and
#      concurrency with cost and lease_ttl, exempt, shed per route, trusted
#      proxies: status, policy show, policy check and --json of each show
#      them in full (a concurrency-only rule read "0/0ns 0" before, and
#      policy show "http: present")
#   3. stats: allowed/refused per HTTP rule next to "packet tier: not
#      loaded" (it failed "no xrl state" before); --json .http.rules,
#      .packet_tier_loaded; --watch: per-second rates
#   4. top --http: the most refused keys; bearer keys as their SHA-256
#      prefix, the token in no output and no log line; 600 unique refused
#      keys leave at most 32 counters and the heavy key on top; errors
#   5. shadow RULE on|off for an HTTP rule (was "no rule named"); logged
#      with the caller's uid
#   6. override RULE KEY --rate --burst --ttl: raise and lower one key;
#      list, del, errors, usage; logged with the uid
#   7. Redis: an override set on A is followed by B within a second
#      (xrl:overrides hash, with an expiry); del too; also with 600 expired
#      overrides in the hash (a set prunes them); a hash of 9001 fields is
#      read as far as it fits and said once, the override in force stays
#      (test_fleet_bounds.sh 6 has the rest); Redis down: the change fails
#      and nothing changes
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_xrlctl_http
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

XRLCTL=${XRLCTL:-$XRL_ROOT/build/xrlctl}
require_http redis-server redis-cli
[ -x "$XRLCTL" ] || fatal "$XRLCTL is missing: make build/xrlctl"
http_setup

# xc NAME ARGS...: xrlctl on xrld NAME's socket and pins; sets XC_OUT, XC_RC
xc() {
	local n=$1
	shift
	XC_OUT=$("$XRLCTL" --socket "$HT_TMP/$n.sock" --pin-dir "/sys/fs/bpf/xrl-http-$$-$n" "$@" 2>&1)
	XC_RC=$?
}

conf() { # conf PORT BACKEND
	cat <<EOF
log_level: info
$(http_yaml "$1" traefik)
  backend: $2
  rules:
$(yaml_rule holds '{ method: POST, path_prefix: /api/holds }' header:X-User-Id 1/min 3)
$(yaml_rule api '{ path_prefix: /api/ }' bearer 1/min 2)
$(yaml_rule flood '{ path_prefix: /flood/ }' header:X-User-Id 1/min 1)
EOF
}

redis_start redis
RP=${HT_PORT[redis]}
P=$(free_port)
conf "$P" memory >"$HT_TMP/M.yaml"
xrld_http_start M "$HT_TMP/M.yaml" "$P" -v # debug: the token must not show there either
AUTH=http://127.0.0.1:$P/v1/auth
holds() { hreq "${2:-$AUTH}" -H "X-Forwarded-Method: POST" -H "X-Forwarded-Uri: /api/holds/1" -H "X-User-Id: $1"; }

log "1. --help without a daemon"
for v in status stats top shadow override "override list" "override del" deny allow; do
	# shellcheck disable=SC2086 # the verb's words
	out=$("$XRLCTL" --socket "$HT_TMP/none.sock" $v --help 2>&1)
	rc=$?
	check_eq "xrlctl $v --help: exit" "$rc" 0
	check_match "xrlctl $v --help: usage" "$out" "^usage: xrlctl .*${v%% *}"
done
out=$("$XRLCTL" --socket "$HT_TMP/none.sock" override --help)
check_match "override --help names all three forms" "$out" 'override list.*'$'\n''.*override del RULE KEY'

log "2. status"
xc M status
check_eq "status: exit" "$XC_RC" 0
check_match "status: the listener and backend" "$XC_OUT" "identity tier: listening on 127.0.0.1:$P, backend memory"
check_match "status: rule holds" "$XC_OUT" '^holds +POST +/api/holds +header:X-User-Id +1/min +3 +1 +- +- +no +skip +open'
check_match "status: rule api" "$XC_OUT" '^api +\* +/api/ +bearer'
check_match "status: the packet tier" "$XC_OUT" 'packet tier is not loaded'
xc M status --json
check_eq "status --json: exit" "$XC_RC" 0
check_eq "status --json: .http.listen" "$(jget "d['http']['listen']" <<<"$XC_OUT")" "127.0.0.1:$P"
check_eq "status --json: .http.backend" "$(jget "d['http']['backend']" <<<"$XC_OUT")" memory
check_eq "status --json: .http.rules names" "$(jq_py "[r['name'] for r in d['http']['rules']]" <<<"$XC_OUT")" "holds api flood"
check_eq "status --json: .interfaces" "$(jget "d['interfaces']" <<<"$XC_OUT")" "[]"

log "2b. the policy in full: key global, concurrency, shed, exempt"
PG=$(free_port)
cat >"$HT_TMP/G.yaml" <<EOF
$(http_yaml "$PG" nginx)
  exempt: [{method: GET, path_prefix: /healthz}]
  shed:
    - {match: {method: POST, path_prefix: /api/checkout}, rate: 200/s, burst: 50}
  rules:
    - {name: checkout, match: {method: POST, path_prefix: /api/checkout}, key: global, concurrency: 2}
    - {name: holds, match: {path_prefix: /api/holds}, key: "header:X-User-Id", rate: 10/s, burst: 5, cost: 2, concurrency: 3, lease_ttl: 30s, on_missing_key: refuse, on_backend_error: closed}
EOF
xrld_http_start G "$HT_TMP/G.yaml" "$PG"
row_checkout='checkout +POST +/api/checkout +global +- +- +1 +2 +1min +no +skip +open'
row_holds='holds +\* +/api/holds +header:X-User-Id +10/s +5 +2 +3 +30s +no +refuse +closed'
xc G status
check_eq "G status: exit" "$XC_RC" 0
check_match "G status: checkout (global, concurrency 2, no rate)" "$XC_OUT" "^$row_checkout"
check_match "G status: holds (rate, cost, concurrency, lease)" "$XC_OUT" "^$row_holds"
check_match "G status: trusted proxies" "$XC_OUT" "trusted proxies: 127.0.0.1/32 \(forwarded_from nginx\)"
check_match "G status: exempt" "$XC_OUT" "exempt: GET /healthz"
check_match "G status: shed" "$XC_OUT" "shed: POST /api/checkout, 200/s burst 50"
xc G --json status
jr() { jq_py "[r['$1'] for r in d['http']['rules'] if r['name'] == '$2'][0]" <<<"$XC_OUT"; }
check_eq "G status --json: checkout key" "$(jr key checkout)" global
check_eq "G status --json: checkout rate, burst" "$(jr rate checkout) $(jr burst checkout)" "null null"
check_eq "G status --json: checkout concurrency, lease_ttl" "$(jr concurrency checkout) $(jr lease_ttl checkout)" "2 1min"
check_eq "G status --json: holds cost, on_missing_key" "$(jr cost holds) $(jr on_missing_key holds)" "2 refuse"
check_eq "G status --json: exempt" "$(jq_py "[e['method'] + ' ' + e['path_prefix'] for e in d['http']['exempt']]" <<<"$XC_OUT")" "GET /healthz"
check_eq "G status --json: shed" \
	"$(jq_py "['%s %s %s' % (x['match']['path_prefix'], x['rate'], x['burst']) for x in d['http']['shed']]" <<<"$XC_OUT")" \
	"/api/checkout 200/s 50"
check_eq "G status --json: trusted_proxies, forwarded_from" \
	"$(jq_py "d['http']['trusted_proxies'] + [d['http']['forwarded_from']]" <<<"$XC_OUT")" "127.0.0.1/32 nginx"
xc G policy show
check_eq "G policy show: exit" "$XC_RC" 0
check_match "G policy show: the listener" "$XC_OUT" "http: listening on 127.0.0.1:$PG, backend memory"
check_match "G policy show: checkout" "$XC_OUT" "^ +$row_checkout"
check_match "G policy show: holds" "$XC_OUT" "^ +$row_holds"
check_match "G policy show: exempt" "$XC_OUT" "exempt: GET /healthz"
check_match "G policy show: shed" "$XC_OUT" "shed: POST /api/checkout, 200/s burst 50"
shown=$(sed -n '/^http:/,/^[a-z]/p' <<<"$XC_OUT" | grep -v '^[a-z]' )
xc G policy check "$HT_TMP/G.yaml"
check_eq "G policy check: exit" "$XC_RC" 0
check_eq "G policy check: its http lines are policy show's" \
	"$(sed -n '/^http:/,/^[a-z]/p' <<<"$XC_OUT" | grep -v '^[a-z]')" "$shown"
xc G --json policy show
pr() { jq_py "[r['$1'] for r in d['policy']['http']['rules'] if r['name'] == '$2'][0]" <<<"$XC_OUT"; }
check_eq "G policy show --json: checkout key, concurrency" "$(pr key checkout) $(pr concurrency checkout)" "global 2"
check_eq "G policy show --json: holds key, on_missing_key, on_backend_error" \
	"$(pr key holds) $(pr on_missing_key holds) $(pr on_backend_error holds)" "header:X-User-Id refuse closed"
check_eq "G policy show --json: trusted_proxies" "$(jq_py "d['policy']['http']['trusted_proxies']" <<<"$XC_OUT")" "127.0.0.1/32"
xc G --json policy check "$HT_TMP/G.yaml"
check_eq "G --json policy check: holds key" \
	"$(jq_py "[r['key'] for r in d['policy']['http']['rules'] if r['name'] == 'holds'][0]" <<<"$XC_OUT")" "header:X-User-Id"

log "3. stats"
c=()
for _ in 1 2 3 4 5; do holds u1; c+=("$H_CODE"); done
check_eq "u1 x5 on holds" "${c[*]}" "200 200 200 429 429"
xc M stats
check_eq "stats: exit (was 1: no xrl state)" "$XC_RC" 0
check_match "stats: the packet tier" "$XC_OUT" 'packet tier: not loaded'
check_match "stats: holds 3 allowed, 2 refused" "$XC_OUT" '^holds +3 +2 +0 +0$'
xc M stats --json
check_eq "stats --json: exit" "$XC_RC" 0
check_eq "stats --json: .packet_tier_loaded" "$(jget "d['packet_tier_loaded']" <<<"$XC_OUT")" false
check_eq "stats --json: holds allowed refused shadow_refused fallbacks" \
	"$(jq_py "[[r['allowed'], r['refused'], r['shadow_refused'], r['fallbacks']] for r in d['http']['rules'] if r['name'] == 'holds'][0]" <<<"$XC_OUT")" "3 2 0 0"
# --watch 1 while u2..u9 are refused: the second screen has rates
( for i in $(seq 2 9); do holds "w$i"; holds "w$i"; holds "w$i"; holds "w$i"; sleep 0.1; done ) &
wp=$!
out=$(timeout -s INT 2.6 "$XRLCTL" --socket "$HT_TMP/M.sock" --pin-dir /nonexistent stats --watch 1)
wait "$wp"
check_match "stats --watch: the rate columns" "$out" 'REFUSED/s'
check_eq "stats --watch: every line fits 80 columns (was 116)" "$(awk 'length > 80' <<<"$out" | wc -l)" 0
check_match "stats --watch: a refusal rate above 0 on holds" "$out" '^holds( +[0-9]+){4}( +[0-9.]+){0} +[0-9.]*[1-9][0-9.]* +[0-9.]*[1-9]'
out=$(timeout -s INT 2.6 "$XRLCTL" --socket "$HT_TMP/M.sock" --pin-dir /nonexistent --json stats --watch 1)
check_match "stats --watch --json: refused_per_s" "$out" '"refused_per_s"'
out=$("$XRLCTL" --socket "$HT_TMP/none.sock" --pin-dir /nonexistent --json stats)
check_eq "stats, no xrld, no pins: exit" "$?" 1
check_match "  --json error" "$(jget "d['error']" <<<"$out")" 'no xrl state'

log "4. top --http"
TOK="tok-$$-s3cr3t-$RANDOM$RANDOM"
HASH=$(printf %s "$TOK" | sha256sum | cut -c1-32)
for _ in 1 2 3 4 5; do
	hreq "$AUTH" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/x" -H "Authorization: Bearer $TOK"
done
check_eq "token: the 5th" "$H_CODE" 429
xc M top --http api
check_eq "top --http api: exit" "$XC_RC" 0
check_match "top --http api: the token's hash prefix, 3 refusals" "$XC_OUT" "^$HASH +3 +0 "
top_api=$XC_OUT
xc M top --http api --json
check_eq "top --http api --json: key" "$(jget "d[0]['key']" <<<"$XC_OUT")" "$HASH"
top_api+=$XC_OUT
xc M top --http holds -n 1
check_match "top --http holds -n 1: u1 or a w key" "$XC_OUT" '^(u1|w[0-9]) +2 '
check_eq "top --http holds -n 1: one row" "$(($(wc -l <<<"$XC_OUT") - 1))" 1
xc M top --http flood --json
check_eq "top --http flood --json: no refusals yet" "$XC_OUT" "[]"
# 600 unique keys refused once each, a heavy one 50 times, over keep-alive
"$XRL_PY" - "$P" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
def ask(k):
    c.request("GET", "/v1/auth", headers={"X-Forwarded-Method": "GET",
              "X-Forwarded-Uri": "/flood/x", "X-User-Id": k})
    c.getresponse().read()
for i in range(600):
    ask("k%d" % i); ask("k%d" % i)
for i in range(51):
    ask("heavy")
PY
xc M top --http flood -n 1000
check_eq "top --http flood: at most 32 counters" "$(($(wc -l <<<"$XC_OUT") - 1))" 32
check_match "top --http flood: heavy on top with >= 50" "$(sed -n 2p <<<"$XC_OUT")" '^heavy +(5[0-9]|[6-9][0-9]|[0-9]{3,}) '
xc M top --http nosuch
check_eq "top --http nosuch: exit" "$XC_RC" 1
xc M --json top --http nosuch
check_match "top --http nosuch --json: error" "$(jget "d['error']" <<<"$XC_OUT")" "no http rule named 'nosuch'"
xc M top --http holds --rule x
check_eq "top --http with --rule: exit 2" "$XC_RC" 2
check_nomatch "the token in top's output" "$top_api" "$TOK"
check_nomatch "the token in xrld's log" "$(cat "${HT_LOG[M]}")" "$TOK"

log "5. shadow for an HTTP rule"
xc M shadow holds on
check_eq "shadow holds on: exit (was 1: no rule named)" "$XC_RC" 0
check_match "shadow holds on: message" "$XC_OUT" 'HTTP rule holds: shadow on'
c=()
for _ in 1 2 3 4; do holds s1; c+=("$H_CODE"); done
check_eq "s1 x4 under shadow" "${c[*]}" "200 200 200 200"
xc M stats --json
check_ge "stats: holds shadow_refused" \
	"$(jq_py "[r['shadow_refused'] for r in d['http']['rules'] if r['name'] == 'holds'][0]" <<<"$XC_OUT")" 1
xc M status
check_match "status: holds SHADOW yes" "$XC_OUT" '^holds +POST +/api/holds +header:X-User-Id +1/min +3 +1 +- +- +yes'
xc M shadow holds off
check_eq "shadow holds off: exit" "$XC_RC" 0
holds s1
check_eq "s1 after shadow off" "$H_CODE" 429
xc M shadow nosuch on
check_eq "shadow nosuch on: exit" "$XC_RC" 1
xc M --json shadow nosuch on
check_eq "shadow nosuch on --json: error, naming the rules" "$(jget "d['error']" <<<"$XC_OUT")" \
	"no rule named 'nosuch' (HTTP rules: holds, api, flood)"
xc M shadow holds maybe
check_eq "shadow holds maybe: exit 2" "$XC_RC" 2
check_match "xrld logs the change with the caller's uid" "$(cat "${HT_LOG[M]}")" \
	"change: \`shadow holds on\` by uid $(id -u) \\(pid [0-9]+\\)"

log "6. override"
xc M override holds vip --rate 1/min --burst 6 --ttl 1h
check_eq "override holds vip --burst 6: exit" "$XC_RC" 0
c=()
for _ in $(seq 7); do holds vip; c+=("$H_CODE"); done
check_eq "vip x7" "${c[*]}" "200 200 200 200 200 200 429"
check_eq "vip's X-RateLimit-Limit" "$(hdr X-RateLimit-Limit)" 6
xc M override holds low --rate 1/min --burst 1 --ttl 10m
c=()
for _ in 1 2; do holds low; c+=("$H_CODE"); done
check_eq "low (burst 1) x2" "${c[*]}" "200 429"
xc M override list
check_eq "override list: exit" "$XC_RC" 0
check_match "override list: vip" "$XC_OUT" '^holds +vip +1/min +6 +3[0-9]{3} *$'
xc M --json override list
check_eq "override list --json: keys" "$(jq_py "[o['key'] for o in d]" <<<"$XC_OUT")" "low vip"
check_eq "override list --json: vip burst" "$(jget "d[1]['burst']" <<<"$XC_OUT")" 6
xc M override del holds vip
check_eq "override del holds vip: exit" "$XC_RC" 0
xc M override del holds vip
check_eq "override del again: exit 1" "$XC_RC" 1
xc M override del holds low
xc M --json override list
check_eq "override list --json, empty" "$XC_OUT" "[]"
xc M override nosuch k --rate 1/s --burst 1 --ttl 1m
check_eq "override of no rule: exit 1" "$XC_RC" 1
xc M --json override nosuch k --rate 1/s --burst 1 --ttl 1m
check_match "  --json error" "$(jget "d['error']" <<<"$XC_OUT")" "no http rule named 'nosuch'"
xc M override holds k --rate 1/s --burst 1
check_eq "override without --ttl: exit 2" "$XC_RC" 2
xc M override holds k --rate fast --burst 1 --ttl 1m
check_eq "override --rate fast: exit 2" "$XC_RC" 2
xc M override holds k --rate 1/s --burst 0 --ttl 1m
check_eq "override --burst 0: exit 2" "$XC_RC" 2
check_match "xrld logs the override with the caller's uid" "$(cat "${HT_LOG[M]}")" \
	"change: \`override holds vip --rate 1/min --burst 6 --ttl 1h\` by uid $(id -u)"
check_match "xrld logs the del" "$(cat "${HT_LOG[M]}")" "change: \`override del holds vip\` by uid"

log "7. overrides shared through Redis"
PA=$(free_port)
PB=$(free_port)
conf "$PA" "redis://127.0.0.1:$RP" >"$HT_TMP/A.yaml"
conf "$PB" "redis://127.0.0.1:$RP" >"$HT_TMP/B.yaml"
xrld_http_start A "$HT_TMP/A.yaml" "$PA"
xrld_http_start B "$HT_TMP/B.yaml" "$PB"
xc A status
check_match "status A: redis backend, breaker" "$XC_OUT" "backend redis://127.0.0.1:$RP/0 \\(breaker closed\\)"
xc A override holds partner --rate 1/min --burst 5 --ttl 1h
check_eq "override on A: exit" "$XC_RC" 0
check_match "Redis holds it" "$(redis-cli -p "$RP" hgetall xrl:overrides | tr '\n' ' ')" 'holds:partner 1 60000000000 5 [0-9]+'
check_range "the hash expires (PTTL ms)" "$(redis-cli -p "$RP" pttl xrl:overrides)" 3500000 3600000
b_has() { xc B --json override list; [ "$(jq_py "[o['key'] for o in d]" <<<"$XC_OUT")" = "${1-partner}" ]; }
t0=$(date +%s%N)
wait_for 5 b_has
check_eq "B lists partner" "$(jq_py "[o['key'] for o in d]" <<<"$XC_OUT")" partner
info "B followed in $((($(date +%s%N) - t0) / 1000000)) ms"
c=()
for _ in $(seq 6); do holds partner "http://127.0.0.1:$PB/v1/auth"; c+=("$H_CODE"); done
check_eq "partner via B x6" "${c[*]}" "200 200 200 200 200 429"
xc A override del holds partner
check_eq "del on A: exit" "$XC_RC" 0
wait_for 5 b_has ""
check_eq "B lists nothing" "$XC_OUT" "[]"
# overrides that ran out stay in the hash while its expiry moves on: 600 of
# them (more than XRL_OVR_MAX) must not hide the one in force
fill='for i = 1, tonumber(ARGV[1]) do redis.call("HSET", KEYS[1], "holds:old" .. i, ARGV[2]) end'
redis-cli -p "$RP" EVAL "$fill" 1 xrl:overrides 600 "1 60000000000 5 1000" >/dev/null
xc A override holds partner3 --rate 1/min --burst 5 --ttl 1h
check_eq "override with 600 expired ones in the hash: exit" "$XC_RC" 0
check_eq "  the expired ones are pruned (HLEN)" "$(redis-cli -p "$RP" hlen xrl:overrides)" 1
wait_for 5 b_has partner3
check_eq "  B lists partner3" "$(jq_py "[o['key'] for o in d]" <<<"$XC_OUT")" partner3
# a hash filled by someone else is read as far as it fits, and said once:
# updates are not frozen by it (before issue 22 it was not read at all)
redis-cli -p "$RP" EVAL "$fill" 1 xrl:overrides 9000 "junk" >/dev/null
sleep 1.2
check_match "B: a hash of 9001 fields is said once" "$(cat "${HT_LOG[B]}")" \
	'xrl:overrides holds 9001 fields, more than 8192: 1 overrides in force applied'
xc B --json override list
check_eq "  B keeps the one in force" "$(jq_py "[o['key'] for o in d]" <<<"$XC_OUT")" partner3
redis-cli -p "$RP" del xrl:overrides >/dev/null
a_empty() { xc A --json override list; [ "$XC_OUT" = "[]" ]; }
wait_for 5 a_empty
wait_for 5 b_has ""
proc_stop redis KILL
xc A override holds p2 --rate 1/min --burst 5 --ttl 1h
check_eq "Redis down: override fails" "$XC_RC" 1
check_match "  saying why" "$XC_OUT" 'Redis'
xc A --json override list
check_eq "  and changes nothing" "$XC_OUT" "[]"

finish
