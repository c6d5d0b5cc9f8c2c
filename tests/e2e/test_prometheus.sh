#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_prometheus.sh - end to end: the alerting rules
# (scripts/prometheus/xrl.rules.yml) and the Grafana dashboard
# (scripts/grafana/xrl.json) against a real xrld, through a real
# Prometheus. xrld runs on the lab's interface (rule syn, 50/s burst 20,
# drop; rule web on port 8080 with syn_cookies auto, never flooded) with an
# http: section on Redis (rule api, header:X-Key, 1/min burst 2,
# redis_timeout 100ms) and a fleet on the same Redis; Prometheus scrapes it
# every 2 s and evaluates the rules every second.
#
#   1. rule api answers on Redis (200 200 429 for one key); the scrape
#      holds every metric name the rules and the dashboard use but the
#      Redis Cluster backend's, and none of those (so the exemption names
#      only families this backend does not write)
#   2. Prometheus loads the rules: all of the file's alerts, each evaluated
#      without error; its target is up
#   3. every expression of the rules and every query of the dashboard
#      (Grafana's variables replaced) is accepted by the query API, and each
#      dashboard query returns series, but the Redis Cluster panels'
#   4. a SYN flood of more than 130k refused packets puts
#      XrlFloodInProgress{rule="syn"} pending (its rate over 2m passes 1000/s)
#   5. a refused policy apply puts XrlReloadFailed pending; a good apply
#      takes it away again
#   6. Redis killed, with requests coming: XrlRedisBreakerOpen and
#      XrlFleetCutOff pending; the pending alerts' annotations expand, with
#      every label they name
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2317 # functions run through wait_for
set -u
XRL_TEST_NAME=test_prometheus
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

RATE=50
BURST=20
SRC=198.51.100.1
HP=18251        # the identity tier, in the protected namespace
RP=16391        # its Redis and the fleet's
PP=19391        # Prometheus
RULES=$XRL_ROOT/scripts/prometheus/xrl.rules.yml
CHECK=$XRL_ROOT/tests/lint/prometheus.py
# families only a Redis Cluster backend writes (user/http/redis/cluster.c)
CLUSTER_ONLY='^xrl_http_redis_(node_[a-z_]+|slot_map_refreshes_total|redirects_total|refunds_total|lease_givebacks_total)$'

require_xrld ss curl promtool prometheus redis-server redis-cli
xrld_lab pm$$

bg_prot redis-server --port "$RP" --bind 127.0.0.1 --save "" --appendonly no --dir "$LAB_TMP" \
	>"$LAB_TMP/redis.log" 2>&1
REDIS_PID=$BG_PID
redis_up() { in_prot redis-cli -h 127.0.0.1 -p "$RP" ping >/dev/null 2>&1; }
wait_for 10 redis_up || fatal "redis-server did not start: $(tail -n 5 "$LAB_TMP/redis.log")"

cat >"$XRLD_CONF" <<EOF
$(xrld_yaml_head)
    - name: syn
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: $RATE/s
      burst: $BURST
    - name: web
      match: { proto: tcp, tcp_flags: syn, dst_ports: [8080] }
      rate: 1000/s
      burst: 1000
      syn_cookies: auto
metrics: 127.0.0.1:9101
fleet: { name: pm$$, redis: "redis://127.0.0.1:$RP" }
$(http_yaml "$HP" traefik)
  backend: redis://127.0.0.1:$RP
  redis_timeout: 100ms
  breaker_cooldown: 1s
  rules:
$(yaml_rule api '{ path_prefix: /api/ }' header:X-Key 1/min 2)
EOF
BAD_CONF=$LAB_TMP/bad.yaml
sed "s|rate: $RATE/s|rate: fifty|" "$XRLD_CONF" >"$BAD_CONF"

# api KEY: one decision of rule api; prints the status
api() {
	in_prot curl -s -o /dev/null -w '%{http_code}' --max-time 2 -H 'X-Forwarded-Method: GET' \
		-H 'X-Forwarded-Uri: /api/x' -H "X-Key: $1" "http://127.0.0.1:$HP/v1/auth"
}
# prom_get PATH: Prometheus's HTTP API
# pending ALERT [LABEL=VALUE]: ALERT is pending or firing (with that label)
pending() {
	local l=${2:-=}
	prom_get "/api/v1/alerts" | jq_py "any(a['labels']['alertname'] == '$1' and a['labels'].get('${l%%=*}', '') == '${l#*=}' for a in d['data']['alerts'])" |
		grep -qx true
}
# scrapes N: Prometheus holds at least N samples of xrl_build_info (its
# discovery hands the scrapers their target about 5 s after the start)
scrapes() {
	local got
	got=$(prom_get "/api/v1/query?query=count_over_time(xrl_build_info%5B5m%5D)" |
		jq_py "int(float(d['data']['result'][0]['value'][1])) if d['data']['result'] else 0" 2>/dev/null)
	[ "${got:-0}" -ge "$1" ]
}

log "1. xrld with an http: section and a fleet on Redis; the scrape"
xrld_start
fleet_up() { ctl status 2>/dev/null | grep -q 'redis up'; }
wait_for 10 fleet_up || fatal "the fleet's Redis is not up: $(ctl status)"
check_eq "rule api on Redis: answers to k1 k1 k1 k2" "$(for k in k1 k1 k1 k2; do api "$k"; printf ' '; done)" \
	"200 200 429 200 "
# auto's transitions have a series once its first tick (1 s) took the rule on
auto_seen() { [ -n "$(xrld_metric "xrl_syn_cookies_auto_transitions_total{interface=\"$LAB_PROT_IF\",rule=\"web\",to=\"on\"}")" ]; }
wait_for 5 auto_seen || info "no auto transitions series after 5 s"
M=$(in_prot curl -s --max-time 5 http://127.0.0.1:9101/metrics) || fatal "curl /metrics failed"
printf '%s\n' "$M" >"$LAB_TMP/metrics.txt"
served=$(grep -v '^#' "$LAB_TMP/metrics.txt" | sed -n 's/^\([a-zA-Z_:][a-zA-Z0-9_:]*\).*/\1/p' | sort -u)
used=$("$XRL_PY" "$CHECK" names) || fatal "prometheus.py names failed"
info "$(wc -l <<<"$used") names used, $(wc -l <<<"$served") served"
missing=$(comm -23 <(sort -u <<<"$used") <(printf '%s\n' "$served") | grep -Ev "$CLUSTER_ONLY")
check_eq "names used that the scrape lacks (but Redis Cluster's)" "$(echo $missing)" ""
cluster=$(grep -E "$CLUSTER_ONLY" <<<"$used" | tr '\n' ' ')
info "Redis Cluster only: $cluster"
check_eq "Redis Cluster names the scrape has anyway" \
	"$(grep -E "$CLUSTER_ONLY" <<<"$served" | tr '\n' ' ')" ""

log "2. Prometheus loads the rules and scrapes xrld"
prom_start "$RULES" 127.0.0.1:9101 "127.0.0.1:$PP" 2s
wait_for 30 scrapes 3 || fatal "Prometheus did not scrape xrld 3 times: $(tail -n 5 "$LAB_TMP/prometheus.log")"
check_eq "Prometheus's target: health" \
	"$(prom_get /api/v1/targets | jq_py "[t['health'] for t in d['data']['activeTargets']]")" up
info "its last scrape: $(prom_get /api/v1/targets | jq_py "[(t['lastScrapeDuration'], t['lastError']) for t in d['data']['activeTargets']]")"
want=$(grep -c '^ *- alert:' "$RULES")
rules_ok() {
	prom_get /api/v1/rules | jq_py "sum(1 for g in d['data']['groups'] for r in g['rules'] if r['type'] == 'alerting' and r['health'] == 'ok')" |
		grep -qx "$want"
}
wait_for 10 rules_ok
check_eq "alerting rules loaded and evaluated without error (of $want)" \
	"$(prom_get /api/v1/rules | jq_py "sum(1 for g in d['data']['groups'] for r in g['rules'] if r['type'] == 'alerting' and r['health'] == 'ok')")" "$want"
prom_get /api/v1/rules | jq_py "'\\n'.join(r['name'] + ': ' + r.get('lastError', '') for g in d['data']['groups'] for r in g['rules'] if r['health'] != 'ok')" |
	while read -r l; do [ -n "$l" ] && info "not ok: $l"; done

log "3. every expression and query through the query API"
"$XRL_PY" "$CHECK" exprs >"$LAB_TMP/exprs.json" || fatal "prometheus.py exprs failed"
out=$(in_prot "$XRL_PY" - "$LAB_TMP/exprs.json" "$PP" "$CLUSTER_ONLY" "$CHECK" <<'PY'
import json, re, sys, urllib.parse, urllib.request
sys.path.insert(0, sys.argv[4].rsplit("/", 1)[0])
import prometheus as p
exprs, port, cluster = json.load(open(sys.argv[1])), sys.argv[2], re.compile(sys.argv[3])
n = 0
for where, e in exprs:
    data = urllib.parse.urlencode({"query": e}).encode()
    try:
        r = json.load(urllib.request.urlopen("http://127.0.0.1:%s/api/v1/query" % port, data, 5))
    except Exception as ex:
        print("BAD %s: %s (%s)" % (where, ex, e)); continue
    n += 1
    if r.get("status") != "success":
        print("BAD %s: %s (%s)" % (where, r.get("error"), e)); continue
    if where.startswith("alert "):
        continue
    names = p.metric_names(e)
    if not r["data"]["result"] and not (names and all(cluster.match(x) for x in names)):
        print("BAD %s: no series (%s)" % (where, e))
print("queries=%d" % n)
PY
)
grep '^BAD' <<<"$out" | head -n 20 | while read -r l; do info "$l"; done
check_eq "queries answered" "$(sed -n 's/^queries=//p' <<<"$out")" "$(jq_py 'len(d)' <"$LAB_TMP/exprs.json")"
check_eq "queries refused, or empty on this xrld" "$(grep -c '^BAD' <<<"$out")" 0

log "4. a flood: XrlFloodInProgress pending"
flood_measure "$SRC/32" --threads 1 --cpus 0 --duration 2
check_ge "refused by syn (enough for 1000/s over 2m)" "$XD" 130000
wait_for 10 pending XrlFloodInProgress rule=syn
check_eq "XrlFloodInProgress{rule=\"syn\"} pending" "$(pending XrlFloodInProgress rule=syn && echo yes || echo no)" yes

log "5. a refused apply: XrlReloadFailed pending, then gone"
ctl policy apply "$BAD_CONF" >/dev/null 2>&1
check_eq "xrl_config_last_reload_successful after a refused apply" \
	"$(xrld_metric xrl_config_last_reload_successful)" 0
wait_for 10 pending XrlReloadFailed
check_eq "XrlReloadFailed pending" "$(pending XrlReloadFailed && echo yes || echo no)" yes
ctl policy apply "$XRLD_CONF" >/dev/null || fatal "the good policy was refused"
not_pending() { ! pending "$1"; }
wait_for 10 not_pending XrlReloadFailed
check_eq "XrlReloadFailed after a good apply" "$(pending XrlReloadFailed && echo pending || echo gone)" gone

log "6. Redis killed: XrlRedisBreakerOpen and XrlFleetCutOff pending"
{ kill -KILL "$REDIS_PID" && wait "$REDIS_PID"; } 2>/dev/null
both() { api k3 >/dev/null; pending XrlRedisBreakerOpen && pending XrlFleetCutOff; }
wait_for 20 both
check_eq "XrlRedisBreakerOpen pending" "$(pending XrlRedisBreakerOpen && echo yes || echo no)" yes
check_eq "XrlFleetCutOff pending" "$(pending XrlFleetCutOff && echo yes || echo no)" yes
info "alerts now: $(prom_get /api/v1/alerts | jq_py "sorted(a['labels']['alertname'] + '/' + a['state'] for a in d['data']['alerts'])")"
bad=$(prom_get /api/v1/alerts | jq_py "[a['labels']['alertname'] + '.' + k for a in d['data']['alerts'] for k, v in a['annotations'].items() if '<no value>' in v or 'error expanding' in v or not v.strip()]")
check_eq "their annotations expanded, every label they name present" "$bad" ""
prom_get /api/v1/alerts | jq_py "'\\n'.join(a['annotations']['summary'] for a in d['data']['alerts'])" |
	while read -r l; do info "summary: $l"; done

finish
