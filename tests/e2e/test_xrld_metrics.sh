#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_metrics.sh - end to end: /metrics by the book. xrld runs with an
# interface in a lab (rule syn, 50/s burst 20, drop) and an http: section
# (rule api: header:X-Key, 1/min burst 2; rule trial: the same, shadow).
#
#   1. a SYN flood from one source; 5 requests of one key to each http rule
#   2. `promtool check metrics` of the scrape: no problem reported
#   3. a parser check: every family has HELP and TYPE before its samples,
#      every sample belongs to a family, no family mixes units (no label that
#      names other counters, no label value naming another unit), one
#      namespace (xrl_; process_* are the client libraries'), the old names gone
#   4. values: xrl_build_info{version,commit} 1; packets by rule and verdict
#      (allowed/refused) = xrlctl's; identity-tier verdicts per rule:
#      api allowed 2 refused 3, trial allowed 2 shadow_refused 3; the latency
#      histogram counts the 10 decisions; the SYN-cookie family has its eight
#      series; every global counter of the program is in exactly one family
#   5. reloads: a refused apply sets xrl_config_last_reload_successful 0 and
#      counts a failure; a good one sets it back to 1 and moves the
#      success timestamp
#   6. the cookie counters in `xrlctl stats` (table line "syn cookies:",
#      --json global.cookies_*)
#   7. process_* as the client libraries define them, for xrld (no label)
#      and its identity process (process="identity"): start time within
#      this test's run, resident memory and open fds > 0, open fds <=
#      max fds, CPU seconds growing under scrapes
#   8. the HTTP status label is code (as the client libraries name it): 7
#      answers 200, 3 answers 429; no status label left
#   9. counters survive reloads by rule name: an apply that puts a new
#      packet rule and a new http rule first and drops trial keeps syn's
#      and api's counts, trial's series gone, the new rules at 0; then a
#      SIGHUP back to the first file: the same again, trial back at 0
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2119,SC2317
set -u
XRL_TEST_NAME=test_xrld_metrics
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

RATE=50
BURST=20
SRC=198.51.100.1
HP=18231

require_xrld ss curl promtool
xrld_lab xm$$
start_server
write_config "$XRLD_CONF" "$RATE" "$BURST"
cat >>"$XRLD_CONF" <<EOF
$(http_yaml "$HP" traefik)
  rules:
$(yaml_rule api '{ path_prefix: /api/ }' header:X-Key 1/min 2)
$(yaml_rule trial '{ path_prefix: /trial/ }' header:X-Key 1/min 2 'shadow: true')
EOF

scrape() { in_prot curl -s --max-time 5 http://127.0.0.1:9101/metrics; }
# series NAME{LABELS}: its value in $M
series() { awk -v k="$1" '$1 == k { print $2 }' <<<"$M"; }

log "1. xrld with $LAB_PROT_IF and an http: section; a flood; 10 http decisions"
T0=$(date +%s)
xrld_start
T1=$(date +%s)
flood_measure "$SRC/32" --threads 1 --cpus 0 --duration 1
check_ge "xrlctl stats: syn dropped" "$XD" 1
for p in api trial; do
	for _ in 1 2 3 4 5; do
		in_prot curl -s -o /dev/null -w '%{http_code} ' -H 'X-Forwarded-Method: GET' \
			-H "X-Forwarded-Uri: /$p/x" -H 'X-Key: k1' "http://127.0.0.1:$HP/v1/auth"
	done
	echo
done | while read -r l; do info "answers: $l"; done
sleep 0.3
M=$(scrape) || fatal "curl /metrics failed"
printf '%s\n' "$M" >"$LAB_TMP/metrics.txt"
info "$(wc -l <"$LAB_TMP/metrics.txt") lines"

log "2. promtool check metrics"
out=$(promtool check metrics <"$LAB_TMP/metrics.txt" 2>&1); rc=$?
[ -n "$out" ] && info "promtool: $out"
check_rc "promtool check metrics" "$rc" 0
check_eq "promtool: problems reported" "$(printf '%s' "$out" | grep -c .)" 0

log "3. parser: HELP and TYPE, one unit per family, one namespace"
out=$("$XRL_PY" - "$LAB_TMP/metrics.txt" <<'PY'
import re, sys
help_, type_, order, bad = {}, {}, [], []
units = ("packets", "bytes", "seconds", "decisions", "buckets", "samples", "events",
         "entries", "reloads", "penalties", "keys", "calls", "requests")
fams = {}
for n, line in enumerate(open(sys.argv[1]), 1):
    line = line.rstrip("\n")
    if not line:
        continue
    m = re.match(r"# (HELP|TYPE) (\S+) (.*)", line)
    if m:
        (help_ if m.group(1) == "HELP" else type_)[m.group(2)] = m.group(3)
        continue
    if line.startswith("#"):
        bad.append("line %d: stray comment" % n); continue
    m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$", line)
    if not m:
        bad.append("line %d: unparsable: %s" % (n, line)); continue
    name, labels = m.group(1), m.group(3) or ""
    fam = name
    for suf in ("_bucket", "_sum", "_count"):
        base = name[: -len(suf)]
        if name.endswith(suf) and type_.get(base) == "histogram":
            fam = base
    if fam not in type_ or fam not in help_:
        bad.append("%s: sample before its HELP and TYPE" % fam)
    fams.setdefault(fam, set())
    for k, v in re.findall(r'(\w+)="([^"]*)"', labels):
        fams[fam].add((k, v))
for fam, lv in sorted(fams.items()):
    if not fam.startswith("xrl_") and not fam.startswith("process_"):
        bad.append("%s: not in the xrl_ namespace" % fam)
    if fam.startswith("xrld_"):
        bad.append("%s: the old xrld_ prefix" % fam)
    if not help_.get(fam, "").strip():
        bad.append("%s: empty HELP" % fam)
    mine = [u for u in units if u in fam]
    for k, v in lv:
        if k in ("counter", "metric", "name"):
            bad.append("%s: label %s names other counters (%s)" % (fam, k, v))
        for u in units:
            if u not in mine and re.search(r"(^|_)%s($|_)" % u, v) and k not in ("rule", "interface"):
                bad.append("%s: label %s=%s names another unit (%s)" % (fam, k, v, u))
    if type_.get(fam) == "counter" and not fam.endswith("_total"):
        bad.append("%s: a counter without _total" % fam)
for fam in ("xrl_packets_total", "xrl_events_lost_total"):
    if fam in fams:
        bad.append("%s: an old family still served" % fam)
print("families=%d" % len(fams))
for b in bad:
    print("BAD " + b)
PY
)
info "$(grep -v '^BAD' <<<"$out")"
grep '^BAD' <<<"$out" | head -n 20 | while read -r l; do info "$l"; done
check_eq "parser: problems" "$(grep -c '^BAD' <<<"$out")" 0
check_ge "parser: families" "$(sed -n 's/^families=//p' <<<"$out")" 25

log "4. values"
check_eq "xrl_build_info has version and commit, value 1" \
	"$(grep -cE '^xrl_build_info\{version="[^"]+",commit="[0-9a-f]+|unknown"\} 1$' <<<"$M")" 1
IF=$LAB_PROT_IF
read -r passed dropped _ <<<"$(rule_counts)"
check_eq "rule packets, verdict allowed = xrlctl passed" \
	"$(series "xrl_rule_packets_total{interface=\"$IF\",rule=\"syn\",verdict=\"allowed\"}")" "$passed"
check_eq "rule packets, verdict refused = xrlctl dropped" \
	"$(series "xrl_rule_packets_total{interface=\"$IF\",rule=\"syn\",verdict=\"refused\"}")" "$dropped"
check_ge "rule bytes, verdict refused >= 54 x packets" \
	"$(series "xrl_rule_bytes_total{interface=\"$IF\",rule=\"syn\",verdict=\"refused\"}")" $((dropped * 54))
check_eq "verdict words of both tiers" \
	"$(grep -oE 'verdict="[a-z_]+"' <<<"$M" | sort -u | tr '\n' ' ')" \
	'verdict="allowed" verdict="refused" verdict="shadow_refused" '
d() { series "xrl_http_rule_decisions_total{rule=\"$1\",verdict=\"$2\"}"; }
check_eq "http api: allowed" "$(d api allowed)" 2
check_eq "http api: refused" "$(d api refused)" 3
check_eq "http trial (shadow): allowed" "$(d trial allowed)" 2
check_eq "http trial (shadow): shadow_refused" "$(d trial shadow_refused)" 3
check_eq "http trial (shadow): refused" "$(d trial refused)" 0
check_eq "latency histogram: count = 10 decisions" \
	"$(series xrl_http_decision_duration_seconds_count)" 10
check_eq "latency histogram: +Inf bucket = count" \
	"$(series 'xrl_http_decision_duration_seconds_bucket{le="+Inf"}')" 10
check_eq "latency histogram: buckets" \
	"$(grep -c '^xrl_http_decision_duration_seconds_bucket' <<<"$M")" 16
check_eq "syncookie family: eight series for $IF" \
	"$(grep -c "^xrl_syncookie_packets_total{interface=\"$IF\"," <<<"$M")" 8
# every counter of the program once: the global families' series of $IF
nglob=$(grep -cE "^xrl_(seen_packets|packets_by_reason|bucket_events|fast_path_packets|denylist_expired_hits|samples|syncookie_packets|aggregate_packets)_total\{interface=\"$IF\"" <<<"$M")
check_eq "program counters in the global families" "$nglob" \
	"$(ctl --json stats | jq_py "len(d['global'])")"
# the lab's own traffic (neighbour discovery) may move it between the reads
seen=$(global_count seen)
check_range "seen packets = xrlctl seen (+-10)" \
	"$(series "xrl_seen_packets_total{interface=\"$IF\"}")" $((seen - 10)) "$seen"
check_eq "xrl_config_last_reload_successful at start" "$(series xrl_config_last_reload_successful)" 1
ts0=$(series xrl_config_last_reload_success_timestamp_seconds)
check_range "last reload success timestamp: about now" "$ts0" $(($(date +%s) - 60)) $(($(date +%s) + 1))

log "5. reload results"
printf 'xdp:\n  rules: [ { name: bad, rate: nonsense } ]\n' >"$LAB_TMP/bad.yaml"
ctl policy apply "$LAB_TMP/bad.yaml" >/dev/null 2>&1
check_rc "policy apply of a bad file" "$?" 1
M=$(scrape)
check_eq "after a refused apply: last_reload_successful" "$(series xrl_config_last_reload_successful)" 0
check_eq "after a refused apply: failures" "$(series 'xrl_config_reloads_total{result="failure"}')" 1
check_eq "after a refused apply: timestamp unchanged" \
	"$(series xrl_config_last_reload_success_timestamp_seconds)" "$ts0"
sleep 1.1
ctl policy apply "$XRLD_CONF" >/dev/null
check_rc "policy apply of the good file" "$?" 0
M=$(scrape)
check_eq "after a good apply: last_reload_successful" "$(series xrl_config_last_reload_successful)" 1
check_eq "after a good apply: successes" "$(series 'xrl_config_reloads_total{result="success"}')" 1
check_ge "after a good apply: timestamp moved" \
	"$(series xrl_config_last_reload_success_timestamp_seconds)" $((ts0 + 1))

log "6. cookie counters in xrlctl stats"
txt=$(ctl stats)
check_match "stats table: syn cookies line" "$txt" "^  syn cookies:"
check_match "stats table: cookies_sent" "$txt" "cookies_sent +[0-9]+"
js=$(ctl --json stats)
check_eq "stats --json: cookie counters" \
	"$(jq_py "sorted(k for k in d['global'] if k.startswith('cookie'))" <<<"$js")" \
	"cookie_fallback cookie_no_meta cookie_primers cookie_reqsk cookie_reqsk_fail cookies_bad cookies_sent cookies_valid"

log "7. process_*: xrld's own and the identity process's"
M=$(scrape)
for l in '' '{process="identity"}'; do
	who=${l:+identity}
	who=${who:-xrld}
	for fam in process_cpu_seconds_total process_resident_memory_bytes \
		process_virtual_memory_bytes process_start_time_seconds process_open_fds process_max_fds; do
		check_eq "$who: $fam, one series" "$(grep -c "^$fam$l " <<<"$M")" 1
	done
	check_float "$who: start time within this run" "$(series "process_start_time_seconds$l")" \
		$((T0 - 2)) $((T1 + 2))
	check_ge "$who: resident memory > 0" "$(series "process_resident_memory_bytes$l")" 1
	check_ge "$who: virtual >= resident" "$(series "process_virtual_memory_bytes$l")" \
		"$(series "process_resident_memory_bytes$l")"
	check_ge "$who: open fds > 0" "$(series "process_open_fds$l")" 1
	check_ge "$who: max fds >= open fds" "$(series "process_max_fds$l")" "$(series "process_open_fds$l")"
done
for fam in process_cpu_seconds_total process_start_time_seconds; do
	check_eq "$fam: HELP and TYPE once" "$(grep -cE "^# (HELP|TYPE) $fam " <<<"$M")" 2
done
check_eq "process_cpu_seconds_total is a counter" \
	"$(grep '^# TYPE process_cpu_seconds_total ' <<<"$M")" "# TYPE process_cpu_seconds_total counter"
cpu0=$(series process_cpu_seconds_total)
# each scrape counts the bucket table and writes the page: xrld's CPU
grows() {
	M=$(scrape)
	awk -v a="$cpu0" -v b="$(series process_cpu_seconds_total)" 'BEGIN { exit !(b > a) }'
}
wait_for 20 grows
check_float "cpu seconds grow under scrapes (from $cpu0)" "$(series process_cpu_seconds_total)" \
	"$(awk -v a="$cpu0" 'BEGIN { printf "%.2f", a + 0.01 }')" 100000

log "8. the HTTP status label: code"
check_eq "xrl_http_responses_total{code=\"200\"}" "$(series 'xrl_http_responses_total{code="200"}')" 7
check_eq "xrl_http_responses_total{code=\"429\"}" "$(series 'xrl_http_responses_total{code="429"}')" 3
check_nomatch "no status label" "$M" '[{,]status="'

log "9. counters survive reloads by rule name"
M=$(scrape)
syn_ref=$(series "xrl_rule_packets_total{interface=\"$IF\",rule=\"syn\",verdict=\"refused\"}")
syn_syns=$(series "xrl_rule_syns_total{interface=\"$IF\",rule=\"syn\"}")
info "before: syn refused $syn_ref, its SYNs $syn_syns"
# a new packet rule and a new http rule first (every index moves), trial gone
cat >"$LAB_TMP/moved.yaml" <<EOF
interfaces:
  - name: $LAB_PROT_IF
    mode: native
xdp:
  rules:
    - name: dns
      match: { proto: udp, dst_ports: [53] }
      rate: 10/s
      burst: 10
    - name: syn
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: $RATE/s
      burst: $BURST
      action: drop
metrics: 127.0.0.1:9101
$(http_yaml "$HP" traefik)
  rules:
$(yaml_rule fresh '{ path_prefix: /fresh/ }' header:X-Key 1/min 2)
$(yaml_rule api '{ path_prefix: /api/ }' header:X-Key 1/min 2)
EOF
ctl policy apply "$LAB_TMP/moved.yaml" >/dev/null
check_rc "policy apply: rules added first, trial removed" "$?" 0
M=$(scrape)
srf() { series "xrl_rule_packets_total{interface=\"$IF\",rule=\"$1\",verdict=\"refused\"}"; }
check_range "after apply: syn refused kept (no flood since)" "$(srf syn)" "$syn_ref" $((syn_ref + 10))
check_ge "after apply: syn's SYNs kept" "$(series "xrl_rule_syns_total{interface=\"$IF\",rule=\"syn\"}")" \
	"$syn_syns"
check_eq "after apply: the new rule dns starts at 0" "$(srf dns)" 0
check_eq "after apply: http api allowed kept" "$(d api allowed)" 2
check_eq "after apply: http api refused kept" "$(d api refused)" 3
check_eq "after apply: http fresh (new, first) at 0" "$(d fresh allowed)" 0
check_eq "after apply: http trial (removed) has no series" "$(grep -c 'rule="trial"' <<<"$M")" 0
# one more of api after the apply: counted on what was carried
in_prot curl -s -o /dev/null -H 'X-Forwarded-Method: GET' -H 'X-Forwarded-Uri: /api/x' \
	-H 'X-Key: k1' "http://127.0.0.1:$HP/v1/auth"
M=$(scrape)
check_eq "after apply: http api refused, one more" "$(d api refused)" 4
ok0=$(series 'xrl_config_reloads_total{result="success"}')
kill -HUP "$XRLD_PID"
reloaded() {
	M=$(scrape)
	[ "$(series 'xrl_config_reloads_total{result="success"}')" -gt "$ok0" ]
}
wait_for 10 reloaded
check_eq "SIGHUP: a reload counted" "$(series 'xrl_config_reloads_total{result="success"}')" $((ok0 + 1))
sleep 0.3
M=$(scrape)
check_range "after SIGHUP: syn refused kept" "$(srf syn)" "$syn_ref" $((syn_ref + 10))
check_eq "after SIGHUP: dns (removed) has no series" "$(grep -c 'rule="dns"' <<<"$M")" 0
check_eq "after SIGHUP: http api allowed kept" "$(d api allowed)" 2
check_eq "after SIGHUP: http api refused kept" "$(d api refused)" 4
check_eq "after SIGHUP: http trial (back) starts at 0" "$(d trial shadow_refused)" 0
check_eq "after SIGHUP: http fresh (removed) has no series" "$(grep -c 'rule="fresh"' <<<"$M")" 0
check_eq "xrlctl stats --json: api refused kept" \
	"$(ctl --json stats | jq_py "[r['refused'] for r in d['http']['rules'] if r['name'] == 'api'][0]")" 4
out=$(promtool check metrics <<<"$M" 2>&1)
[ -n "$out" ] && info "promtool: $out"
check_eq "promtool check metrics after the reloads: problems" "$(printf '%s' "$out" | grep -c .)" 0

finish
