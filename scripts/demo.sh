#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# scripts/demo.sh - `sudo make demo`: xrld and xrlctl against a SYN flood, in
# a lab of two network namespaces joined by a veth pair (tests/e2e/lib.sh),
# with a web server on the protected side and a legitimate client next to
# the attacker. xrld runs in the protected namespace (tests/e2e/lib_xrld.sh).
#
#   1. 2 s of SYN flood with no protection: every SYN reaches the TCP stack
#   2. a policy file (per-source SYN limit on port 80, penalty escalation,
#      metrics on the namespace's loopback): `xrld --check`, xrld started
#      with it, `xrlctl status`; a real Prometheus scraping it every second
#      with the shipped alerting rules (their for: cut to 0 s)
#   3. flood from 64 spoofed sources while a client fetches the page every
#      0.2 s; `xrlctl stats --watch 1` runs in the foreground meanwhile
#   4. `xrlctl top`, `xrlctl deny list` (the penalty denials), the alerts
#      Prometheus's rules fired (XrlFloodInProgress), a summary (admitted
#      vs the budget, refused, how the client fared)
#   5. a spoofed flood (every SYN from a new address of 100.64.0.0/10),
#      2 s before and 2 s after `syn_cookies: on` is added to the rule
#      (SIGHUP): what the buckets admitted, new buckets, cookies made by
#      xrl and validated, cookies made by the kernel, the client; then
#      `xrlctl detach`
#
# Builds nothing (make demo has built build/). Exits 0 when the client was
# served throughout, the flood was refused, an alert fired and xrl made the
# spoofed flood's cookies, 1 otherwise. The lab (xrld
# included) is torn down on exit, on failure and on Ctrl-C.
# Knobs: DEMO_SECS (5), DEMO_RATE (20), DEMO_BURST (10).
set -u
XRL_TEST_NAME=demo
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/../tests/e2e/lib_xrld.sh"

SECS=${DEMO_SECS:-5}
RATE=${DEMO_RATE:-20}
BURST=${DEMO_BURST:-10}
NSRC=64
SOURCES=198.51.100.0/26
METRICS=127.0.0.1:8434

die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

for v in SECS RATE BURST; do
	[[ "${!v}" =~ ^[1-9][0-9]*$ ]] || die "DEMO_$v must be a positive whole number, got '${!v}'"
done
if [ "$(id -u)" -ne 0 ]; then
	die "needs root for network namespaces and XDP: sudo make demo"
fi
for t in ip nsenter curl ss awk timeout prometheus "$XRL_PY"; do
	command -v "$t" >/dev/null 2>&1 || die "'$t' is missing: sudo make deps"
done
for b in "$XRL_LOAD" "$XRL_FLOOD" "$XRLD" "$XRLCTL"; do
	[ -x "$b" ] || die "$b is missing: run make first"
done
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf ||
	die "couldn't mount a bpffs on /sys/fs/bpf"
CPUS=0
[ "$(nproc)" -ge 2 ] && CPUS=0,1
NTHR=$(( $(tr -cd ',' <<<"$CPUS" | wc -c) + 1 ))
# penalty denials must outlast the flood, to be seen in `deny list` after it
BASE=$(( SECS < 5 ? 10 : 2 * SECS ))
MAX=$(( 6 * BASE ))

hr() { printf '%s\n' "------------------------------------------------------------------------"; }
say() { printf '%s\n' "$*"; }
num() { sed ':a; s/\B[0-9]\{3\}\>/,&/; ta' <<<"$1"; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f%%", a * 100 / b; else print "-" }'; }
# cmd TEXT: show the command an operator would type
cmd() { printf '  $ %s\n' "$*"; }
# out: indent a command's output, wrapped at 80 columns
out() { fold -s -w 76 | sed 's/^/    /; s/ *$//'; }
row() { printf '  %-40s %s\n' "$1" "$2"; }

T0=$(date +%s%N)
hr
say "xrl demo: xrld + xrlctl against a SYN flood (per-source limit in XDP)"
hr
xrld_lab demo$$ # the lab, a native XDP probe; xrld and the lab go on exit
# Ctrl-C: xrld's log is no diagnosis then. Long steps run in the background
# and are waited for: bash defers a trap while a foreground child runs, and
# skips it if that child handles SIGINT itself (xrl-synflood, xrlctl --watch)
trap 'printf "\ndemo: interrupted, tearing the lab down\n" >&2; XRLD_LOG=; exit 130' INT
trap 'printf "demo: terminated, tearing the lab down\n" >&2; XRLD_LOG=; exit 143' TERM
start_server
say "lab:    attacker netns $LAB_ATK ($LAB_ATK_IF $LAB_ATK_IP)"
say "          --veth-->  protected netns $LAB_PROT"
say "                     ($LAB_PROT_IF $LAB_PROT_IP, web server on :80)"
say "flood:  TCP SYNs to :80 from $NSRC spoofed sources in $SOURCES,"
say "        $NTHR sender thread(s) on CPU $CPUS"
say "client: curl http://$LAB_PROT_IP/ from $LAB_ATK_IP every 0.2 s"
say

# ---- 1. no protection -----------------------------------------------------------
say "[1/5] 2 s of flood, no protection ..."
seg0=$(snmp prot Tcp InSegs)
flood_bg "$LAB_TMP/flood0.out" --dst "$LAB_PROT_IP" --dport 80 --sources "$SOURCES" \
	--nsrc "$NSRC" --threads "$NTHR" --cpus "$CPUS" --duration 2
flood_wait "$LAB_TMP/flood0.out"
sleep 0.3
un_sent=$FLOOD_SENT un_ms=$FLOOD_MS
un_stack=$(( $(snmp prot Tcp InSegs) - seg0 ))
say "      sent $(num "$un_sent") SYNs; $(num "$un_stack") reached the TCP stack ($(pct "$un_stack" "$un_sent"))"
say

# ---- 2. the policy and xrld ---------------------------------------------------------
say "[2/5] the policy, checked, and xrld started with it (in $LAB_PROT)"
cat >"$XRLD_CONF" <<EOF
$(xrld_yaml_head)
    - name: syn           # SYNs to :80, one bucket per source /32
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: $RATE/s
      burst: $BURST
      action: drop
      penalty: unverified # the lab's sources are its own: trust a SYN's
                          # source (the default, verified, never does)
penalty:                  # refused in 2 separate 1 s windows: denied
  strikes: 2              # for ${BASE} s, then $((2 * BASE)) s, ... at most ${MAX} s
  window: 1s
  base: ${BASE}s
  max: ${MAX}s
metrics: $METRICS  # Prometheus, on the namespace's loopback
EOF
cmd "cat xrld.yaml"
out <"$XRLD_CONF"
cmd "xrld --check xrld.yaml"
chk=$(cd "$LAB_TMP" && "$XRLD" --check xrld.yaml 2>&1) || fatal "xrld --check refused the policy: $chk"
out <<<"$chk"
xrld_start # xrld --config xrld.yaml --foreground, waits until it answers
cmd "xrld --config xrld.yaml &            # then:"
cmd "xrlctl status"
st=$(ctl status 2>&1) || fatal "xrlctl status failed: $st"
out <<<"$st"
grep -Eq "^$LAB_PROT_IF +[0-9]+ +native +yes" <<<"$st" ||
	fatal "xrld did not attach $LAB_PROT_IF in native mode"
# A real Prometheus scrapes xrld every second with the shipped alerting
# rules (scripts/prometheus/xrl.rules.yml), their for: cut to 0 s for a
# demo of seconds; step 4 asks it which alerts fired.
PROM=127.0.0.1:19390
sed -E 's/^( *)for: .*/\1for: 0s/' "$XRL_ROOT/scripts/prometheus/xrl.rules.yml" >"$LAB_TMP/xrl.rules.yml"
prom_start "$LAB_TMP/xrl.rules.yml" "$METRICS" "$PROM" 1s
prom_up() {
	prom_get /api/v1/targets | jq_py "[t['health'] for t in d['data']['activeTargets']]" 2>/dev/null |
		grep -qx up
}
wait_for 30 prom_up || fatal "Prometheus did not scrape xrld: $(tail -n 3 "$LAB_TMP/prometheus.log")"
cmd "prometheus --config.file=prometheus.yml   # scrapes $METRICS, rules: xrl.rules.yml"
say

# ---- 3. protected flood ---------------------------------------------------------------
legit_client() { # FLOOD_PID: one request every 0.2 s while the flood runs
	local r
	sleep 0.3
	while kill -0 "$1" 2>/dev/null; do
		r=$(in_atk curl -s -o /dev/null -w '%{http_code} %{time_total}' --connect-timeout 3 \
			--max-time 5 "http://$LAB_PROT_IP/") || true
		echo "${r:-000 0}" >>"$LAB_TMP/client"
		sleep 0.2
	done
}

# one line per `stats --watch` snapshot: rule syn's rates and totals, and
# the deny list's drops (global denylisted) since the previous snapshot.
# In bash, not awk: mawk reads a pipe in blocks, the lines would come late.
commas() {
	local s=${1%.*} r=
	while [ ${#s} -gt 3 ]; do r=,${s: -3}$r; s=${s:0:${#s}-3}; done
	printf '%s' "$s$r"
}
watch_fmt() {
	local line f t='' p='' d='' ps='' ds='' den=0 den0=0 g=0 i fmt='    %-8s %9s %10s %10s |%7s %10s %10s\n'
	# shellcheck disable=SC2059
	printf "$fmt" TIME PASSED/s DROPPED/s DENIED/s PASSED DROPPED DENIED
	while IFS= read -r line; do
		read -ra f <<<"$line"
		case $line in
		'--- '*) t=${f[1]} ;;
		'  global:'*) g=1 ;;
		*'buckets in use:'*)
			g=0
			# the first snapshot has no rates
			# shellcheck disable=SC2059
			if [ -n "$ps" ]; then
				printf "$fmt" "$t" "$(commas "$ps")" "$(commas "$ds")" \
					"$(commas $((den - den0)))" "$(commas "$p")" "$(commas "$d")" "$(commas "$den")"
			else
				printf "$fmt" "$(date +%T)" - - - "$(commas "$p")" "$(commas "$d")" "$(commas "$den")"
			fi
			den0=$den ;;
		*)
			if [ "${f[0]:-}" = syn ] && [ "${f[1]:-}" != cookies: ]; then
				p=${f[1]} d=${f[2]} ps=${f[4]:-} ds=${f[5]:-}
			elif [ "$g" = 1 ]; then
				# "name total" cells, and "rate/s" after each when watching
				for ((i = 0; i + 1 < ${#f[@]}; i++)); do
					[ "${f[i]}" = denylisted ] && den=${f[i + 1]}
				done
			fi ;;
		esac
	done
}

say "[3/5] ${SECS} s of flood from $NSRC sources; the client fetches every 0.2 s."
say "      Live, one line a second from 0.5 s before the flood to 1 s after it:"
say "      rule syn's rates and totals; DENIED: dropped by the deny list, where"
say "      the penalty puts persistent flooders."
cmd "xrlctl stats --watch 1"
seg0=$(snmp prot Tcp InSegs)
: >"$LAB_TMP/client"
# the watch is the demo's foreground, but waited for (see the traps); it
# ends on the timeout (xrlctl stops on SIGTERM): status 124
{
	timeout --foreground "$((SECS + 1)).4" nsenter --net="/run/netns/$LAB_PROT" -- \
		"$XRLCTL" --socket "$XRLD_SOCK" --pin-dir "$PIN_DIR" \
		stats --iface "$LAB_PROT_IF" --watch 1 2>"$LAB_TMP/watch.err" | watch_fmt
	exit "${PIPESTATUS[0]}"
} &
wpid=$!
lab_bg "$wpid"
sleep 0.5
flood_bg "$LAB_TMP/flood.out" --dst "$LAB_PROT_IP" --dport 80 --sources "$SOURCES" \
	--nsrc "$NSRC" --threads "$NTHR" --cpus "$CPUS" --duration "$SECS"
fpid=$FLOOD_PID
legit_client "$fpid" &
cpid=$!
lab_bg "$cpid"
wait "$wpid"
wrc=$?
[ "$wrc" -eq 0 ] || [ "$wrc" -eq 124 ] || fatal "xrlctl stats --watch failed: $(cat "$LAB_TMP/watch.err")"
flood_wait "$LAB_TMP/flood.out"
wait "$cpid"
sleep 0.3
kill -0 "$XRLD_PID" 2>/dev/null || fatal "xrld died during the flood"
sent=$FLOOD_SENT ms=$FLOOD_MS pps=$FLOOD_PPS
stack=$(( $(snmp prot Tcp InSegs) - seg0 ))
js=$(ctl --json stats --iface "$LAB_PROT_IF") || fatal "xrlctl --json stats failed"
read -r passed dropped <<<"$(jq_py "[(r['passed'], r['dropped']) for r in d['rules'] if r['name'] == 'syn'][0]" <<<"$js")"
read -r denied cached <<<"$(jq_py "(d['global']['denylisted'], d['global']['refused_cached'])" <<<"$js")"
if [ -z "$passed" ] || [ -z "$denied" ]; then fatal "couldn't read the counters from xrlctl --json stats"; fi
penalties=$(ctl --json status | jq_py "d['daemon']['penalties']")
penalties=${penalties:-?}
say

# ---- 4. what xrld saw ----------------------------------------------------------------
say "[4/5] after the flood"
cmd "xrlctl top -n 5"
top=$(ctl top -n 5 2>&1) || fatal "xrlctl top failed: $top"
# the same table, narrower
while read -r src ifc rule refused last; do
	if [ "$src" = SOURCE ]; then refused=REFUSED last="LAST (s)"; else refused=$(commas "$refused"); fi
	printf '    %-20s %-10s %-6s %12s %9s\n' "$src" "$ifc" "$rule" "$refused" "$last"
done <<<"$top"

cmd "xrlctl deny list"
dl=$(ctl deny list 2>&1) || fatal "xrlctl deny list failed: $dl"
ndeny=$(awk 'NR > 1 && $2 == "penalty"' <<<"$dl" | wc -l)
head -n 7 <<<"$dl" | sed 's/ *$//' | out
[ "$ndeny" -gt 5 ] && say "    ... $ndeny entries in all, origin penalty"
line=$(grep -m1 'denied for' "$XRLD_LOG" | sed 's/^xrld: info: //')
if [ -n "$line" ]; then
	say "  xrld's log, first penalty:"
	out <<<"$line"
fi
cmd "curl -s http://$METRICS/metrics   # in $LAB_PROT"
in_prot curl -s --max-time 3 "http://$METRICS/metrics" |
	grep -E '^(xrl_penalties_total|xrl_denylist_entries)' | out
cmd "curl -s http://$PROM/api/v1/alerts   # what Prometheus's rules made of it"
fired() {
	prom_get /api/v1/alerts | jq_py "'\\n'.join(sorted('%s %s{%s}: %s' % (a['state'], a['labels']['alertname'], ','.join('%s=%s' % (k, v) for k, v in sorted(a['labels'].items()) if k in ('rule', 'interface')), a['annotations'].get('summary', '')) for a in d['data']['alerts'] if a['state'] == 'firing'))"
}
wait_for 10 eval '[ -n "$(fired)" ]'
alerts=$(fired)
[ -n "$alerts" ] || fatal "no alert fired in Prometheus: $(prom_get /api/v1/alerts | head -c 300)"
out <<<"$alerts"

tries=$(wc -l <"$LAB_TMP/client")
ok=$(grep -c '^200 ' "$LAB_TMP/client")
lat=$(awk '$1 == 200 { print $2 }' "$LAB_TMP/client" | sort -n |
	awk '{ a[NR] = $1 } END { if (NR) printf "median %.1f ms, max %.1f ms", a[int((NR + 1) / 2)] * 1000, a[NR] * 1000 }')
budget=$(awk -v n=$NSRC -v b="$BURST" -v r="$RATE" -v ms="$ms" 'BEGIN { printf "%d", n * (b + r * ms / 1000) }')
secs() { awk -v ms="$1" 'BEGIN { printf "%.1f s", ms / 1000 }'; }
say
hr
say "summary"
hr
say "unprotected, $(secs "$un_ms"):"
row "SYNs sent" "$(num "$un_sent")"
row "SYNs reaching the TCP stack" "$(num "$un_stack") ($(pct "$un_stack" "$un_sent"))"
say "with xrld (rule syn $RATE/s burst $BURST, penalty), $(secs "$ms"):"
row "SYNs sent" "$(num "$sent") ($(num "${pps:-0}") pps)"
row "admitted by rule syn (passed)" "$(num "$passed") ($(pct "$passed" "$sent"))"
row "  budget: $NSRC x ($BURST + $RATE/s x t)" "$(num "$budget") (+ client), without penalty"
row "refused by rule syn (dropped)" "$(num "$dropped") ($(pct "$dropped" "$sent"))"
row "  of which from the per-CPU cache" "$(num "$cached")"
row "refused by the deny list (penalty)" "$(num "$denied") ($(pct "$denied" "$sent"))"
row "sources denied by penalty" "$ndeny of $NSRC (xrld: $penalties penalties)"
row "TCP segments reaching the stack" "$(num "$stack")"
say "legitimate client ($LAB_ATK_IP):"
row "requests answered 200" "$ok of $tries${lat:+ ($lat)}"
hr

fail=
[ "$tries" -gt 0 ] || fail="the legitimate client made no request"
[ "$ok" -eq "$tries" ] || fail="$((tries - ok)) of $tries legitimate requests failed (HTTP codes: $(awk '{ print $1 }' "$LAB_TMP/client" | sort | uniq -c | awk '{ printf "%s%s x %s", NR > 1 ? ", " : "", $1, $2 }'); 000: no answer)"
[ $((dropped + denied)) -gt 0 ] || fail="xrl refused nothing"
[ "$passed" -le $((budget + tries + 5)) ] || fail="admitted $passed SYNs, above the budget $budget"

# ---- 5. a spoofed flood: every SYN from a new address ----------------------------------
# A per-source bucket never refuses a source that sends once: such a flood
# passes whole, takes a bucket per SYN and leaves the kernel's SYN cookies
# to answer it. `syn_cookies: on` answers it in XDP and stores nothing.
# sp_snap: "passed bucket_new cookies_sent cookies_valid SyncookiesSent client_ok client_tries"
sp_snap() {
	local js
	js=$(ctl --json stats --iface "$LAB_PROT_IF") || fatal "xrlctl --json stats failed"
	printf '%s %s %s\n' "$(jq_py "' '.join(str(x) for x in ([r['passed'] for r in d['rules'] if r['name'] == 'syn'][0],
		d['global']['bucket_new'], d['global']['cookies_sent'], d['global']['cookies_valid']))" <<<"$js")" \
		"$(snmp prot TcpExt SyncookiesSent)" "$(grep -c '^200 ' "$LAB_TMP/client")"
}
# sp_flood LABEL: SP_SECS s from random sources of SP_NET, the client
# meanwhile; SP_D: the deltas of sp_snap, SP_TRIES/SP_OK: the client's.
sp_flood() {
	local a b cpid
	: >"$LAB_TMP/client"
	a=$(sp_snap)
	flood_bg "$LAB_TMP/sp.$1.out" --dst "$LAB_PROT_IP" --dport 80 --sources "$SP_NET" \
		--threads "$NTHR" --cpus "$CPUS" --duration "$SP_SECS"
	legit_client "$FLOOD_PID" &
	cpid=$!
	lab_bg "$cpid"
	flood_wait "$LAB_TMP/sp.$1.out"
	wait "$cpid"
	sleep 0.3
	b=$(sp_snap)
	read -r -a SP_D <<<"$(awk -v a="$a" -v b="$b" 'BEGIN { n = split(a, x, " "); split(b, y, " ")
		for (i = 1; i <= n; i++) printf "%d ", y[i] - x[i] }')"
	SP_TRIES=$(wc -l <"$LAB_TMP/client")
	SP_OK=$(grep -c '^200 ' "$LAB_TMP/client")
	row "SYNs sent (every one from a new source)" "$(num "$FLOOD_SENT") ($(num "${FLOOD_PPS:-0}") pps)"
	row "admitted by rule syn's buckets (passed)" "$(num "${SP_D[0]}")"
	row "new buckets" "$(num "${SP_D[1]}")"
	row "SYN-ACKs with a cookie made by xrl" "$(num "${SP_D[2]}")"
	row "  cookies validated (handshakes done)" "$(num "${SP_D[3]}")"
	row "SYN cookies made by the kernel" "$(num "${SP_D[4]}") (TcpExtSyncookiesSent)"
	row "client requests answered 200" "$SP_OK of $SP_TRIES"
	if [ "$SP_TRIES" -eq 0 ] || [ "$SP_OK" -ne "$SP_TRIES" ]; then
		fail="${fail:-spoofed flood ($1): $((SP_TRIES - SP_OK)) of $SP_TRIES legitimate requests failed}"
	fi
}
SP_NET=100.64.0.0/10
SP_SECS=2
say
say "[5/5] a spoofed flood: ${SP_SECS} s of SYNs from random sources of $SP_NET"
say "  before: rule syn as above (a bucket per source)"
sp_flood before
# a veth drops what XDP sends back (XDP_TX) unless its peer runs XDP too
# (a real NIC has no such need): the attacker's end passes everything
ip -n "$LAB_ATK" link set dev "$LAB_ATK_IF" xdpdrv obj "$XRL_ROOT/build/xrl.bpf.o" sec xdp ||
	fatal "couldn't attach a pass-through XDP program to $LAB_ATK_IF"
sed -i 's/^\(      action: drop\)$/\1\n      syn_cookies: on       # answer SYNs with a cookie in XDP: a bucket only for proven sources/' "$XRLD_CONF"
grep -q 'syn_cookies: on' "$XRLD_CONF" || fatal "couldn't add syn_cookies to $XRLD_CONF"
r0=$(ctl --json status | jq_py "d['daemon']['reloads']")
cmd "sed -i 's/^      action: drop\$/&\\n      syn_cookies: on/' xrld.yaml; kill -HUP \$(pidof xrld)"
kill -HUP "$XRLD_PID"
wait_for 5 sh -c "[ \"\$(nsenter --net=/run/netns/$LAB_PROT $XRLCTL --socket $XRLD_SOCK --json status | $XRL_PY -c 'import json,sys; print(json.load(sys.stdin)[\"daemon\"][\"reloads\"])')\" -gt ${r0:-0} ]" ||
	fatal "xrld did not reload: $(tail -n 3 "$XRLD_LOG")"
grep -m2 -E 'tcp_syncookies|tcp_timestamps' "$XRLD_LOG" | sed 's/^xrld: info: //' | out
# the primer: the first SYN per port goes to the kernel (docs/design.md)
in_atk curl -s -o /dev/null --max-time 3 "http://$LAB_PROT_IP/"
say "  after: rule syn with syn_cookies: on"
sp_flood after
[ "${SP_D[2]}" -ge $((FLOOD_SENT * 9 / 10)) ] ||
	fail="${fail:-xrl answered ${SP_D[2]} of $FLOOD_SENT spoofed SYNs with a cookie}"
[ "${SP_D[4]}" -le 10 ] || fail="${fail:-the kernel made ${SP_D[4]} SYN cookies beside xrl}"
hr

cmd "xrlctl detach $LAB_PROT_IF"
dt=$(ctl detach "$LAB_PROT_IF" 2>&1) || fatal "xrlctl detach failed: $dt"
out <<<"$dt"
[ -z "$(xdp_prog_id "$LAB_PROT_IF")" ] || fatal "an XDP program is still attached to $LAB_PROT_IF"
hr
[ -z "$fail" ] || fatal "$fail"
say "Every legitimate request was served while $(pct $((dropped + denied)) "$sent") of the flood"
say "was dropped in XDP; xrld's penalty denied $penalties flooding sources."
say "Stopping xrld and tearing the lab down ($(( ($(date +%s%N) - T0) / 1000000000 )) s so far)."
