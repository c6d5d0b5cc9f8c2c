#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_million_keys.sh - end to end: a million unique keys do not grow
# the identity tier's memory: the in-process buckets are a table of a fixed
# size (http.max_keys), and keys that still hold state survive the flood.
#
# Rule flood {key header:X-K, 1/min, burst 5}, memory backend, max_keys
# 100000, metrics on.
#
#   1. before: keys "victim" and "dormant" spend their burst (6th: 429); RSS
#      (VmRSS) after a warm-up
#   2. wrk (2 threads, 32 connections, a Lua script giving every request a
#      new key) sends /v1/check until xrld has decided 1,000,000 of them
#      (at most FLOOD_MAX_S seconds); meanwhile "victim" keeps asking (every
#      0.3 s) and is refused every time: a key in use keeps its state
#   3. after: all flood keys 200; RSS grew < 64 MiB (also at its peak);
#      xrl_http_keys <= max_keys rounded up to the table (131072); evictions
#      counted
#   4. "victim" is still refused, a new key has its burst; whether "dormant"
#      (not asked during the flood) kept its state is printed, not checked:
#      the table evicts the least recently used key when full
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_million_keys
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

KEYS=${KEYS:-1000000}
MAX_KEYS=100000
FLOOD_MAX_S=${FLOOD_MAX_S:-50}
RSS_GROWTH_MAX_KIB=$((64 * 1024))

require_http wrk
http_setup

P=$(free_port)
M=$(free_port)
xrld_http_run xrld "$P" <<EOF
metrics: 127.0.0.1:$M
$(http_yaml "$P")
  max_keys: $MAX_KEYS
  threads: 2
  rules:
    - name: flood
      key: header:X-K
      rate: 1/min
      burst: 5
EOF
PID=${HT_PID[xrld]}
CHECK=http://127.0.0.1:$P/v1/check
post() { hreq "$CHECK" -X POST -H "Content-Type: application/json" --data-binary "$1"; }

# the table: 64 shards of a power of two >= 16 slots, max_keys at least
per=16
while [ $((per * 64)) -lt "$MAX_KEYS" ]; do per=$((per * 2)); done
TABLE=$((per * 64))

cat >"$HT_TMP/flood.lua" <<'EOF'
-- every request a new key: "k<prefix><thread>-<n>"
local threads = {}
local prefix = os.getenv("XRL_PREFIX") or ""
function setup(thread)
	thread:set("tid", #threads)
	table.insert(threads, thread)
end
function init(args)
	n = 0
end
function request()
	n = n + 1
	return wrk.format("POST", "/v1/check", { ["Content-Type"] = "application/json" },
		'{"rule":"flood","key":"k' .. prefix .. tid .. '-' .. n .. '"}')
end
EOF

log "1. before the flood"
for k in victim dormant; do
	c=()
	for _ in $(seq 6); do post "{\"rule\":\"flood\",\"key\":\"$k\"}"; c+=("$H_CODE"); done
	check_eq "$k: 6 requests (burst 5)" "${c[*]}" "200 200 200 200 200 429"
done
# warm-up: connections, pools and the first pages of the table in use
XRL_PREFIX=warm- timeout 10 wrk -t2 -c32 -d2s -s "$HT_TMP/flood.lua" "http://127.0.0.1:$P/" >/dev/null 2>&1
sleep 0.5
rss0=$(rss_kib "$PID")
d0=$(metric "$M" xrl_http_decisions_total)
ok0=$(metric "$M" 'xrl_http_responses_total{code="200"}')
info "RSS before: $rss0 KiB; decisions so far: $d0; table: $TABLE slots"

log "2. $KEYS unique keys via /v1/check (wrk, at most ${FLOOD_MAX_S}s)"
XRL_PREFIX=flood- wrk -t2 -c32 -d$((FLOOD_MAX_S + 10))s -s "$HT_TMP/flood.lua" "http://127.0.0.1:$P/" \
	>"$HT_TMP/wrk.out" 2>&1 &
WRK=$!
HT_PIDS+=("$WRK")
t0=$(date +%s%N)
rss_peak=$rss0
victim=()
while :; do
	sleep 0.3
	victim+=("$(curl -s -m 2 -o /dev/null -w '%{http_code}' -X POST \
		--data-binary '{"rule":"flood","key":"victim"}' "$CHECK")")
	d=$(metric "$M" xrl_http_decisions_total)
	r=$(rss_kib "$PID")
	[ "${r:-0}" -gt "$rss_peak" ] && rss_peak=$r
	[ $((${d:-0} - d0 - ${#victim[@]})) -ge "$KEYS" ] && break
	[ $(($(date +%s%N) - t0)) -ge $((FLOOD_MAX_S * 1000000000)) ] && break
	kill -0 "$WRK" 2>/dev/null || break
done
kill -TERM "$WRK" 2>/dev/null
wait "$WRK" 2>/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
sleep 0.3
d1=$(metric "$M" xrl_http_decisions_total)
ok1=$(metric "$M" 'xrl_http_responses_total{code="200"}')
n=$((d1 - d0 - ${#victim[@]}))
info "$n flood decisions in $ms ms ($((n * 1000 / (ms > 0 ? ms : 1))) per second)"
check_ge "unique keys decided" "$n" "$KEYS"
check_eq "all of them 200" "$((ok1 - ok0))" "$n"
check_eq "victim, asked ${#victim[@]} times during the flood: 429s" "$(count 429 "${victim[@]}")" "${#victim[@]}"

log "3. memory"
rss1=$(rss_kib "$PID")
info "RSS before $rss0 KiB, peak $rss_peak KiB, after $rss1 KiB (+$((rss1 - rss0)) KiB)"
check_range "RSS growth after the flood (KiB)" "$((rss1 - rss0))" -1000000 "$RSS_GROWTH_MAX_KIB"
check_range "RSS growth at its peak (KiB)" "$((rss_peak - rss0))" -1000000 "$RSS_GROWTH_MAX_KIB"
keys=$(metric "$M" xrl_http_keys)
check_range "xrl_http_keys (table of $TABLE for max_keys $MAX_KEYS)" "$keys" 1 "$TABLE"
ev=$(( $(metric "$M" 'xrl_http_key_evictions_total{state="idle"}') + \
	$(metric "$M" 'xrl_http_key_evictions_total{state="active"}') ))
check_ge "evictions (idle + active)" "$ev" $((n - TABLE))

log "4. keys with state survived"
post '{"rule":"flood","key":"victim"}'
check_eq "victim after the flood" "$H_CODE" 429
post '{"rule":"flood","key":"dormant"}'
if [ "$H_CODE" = 429 ]; then
	info "dormant (drained, not asked during the flood): still refused"
else
	info "dormant (drained, not asked during the flood): $H_CODE, remaining $(jget "d['remaining']" <<<"$H_BODY") - its bucket was evicted and is full again"
fi
post '{"rule":"flood","key":"new-after-flood"}'
check_eq "a new key: remaining" "$(jget "d['remaining']" <<<"$H_BODY")" 4
hreq "http://127.0.0.1:$P/healthz"
check_eq "/healthz" "$H_CODE" 200

finish
