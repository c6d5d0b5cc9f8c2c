# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
# SC2034: globals set for the tests; SC2119/SC2120: optional arguments;
# SC2153: RATE and BURST are the caller's.
# shellcheck disable=SC2034,SC2119,SC2120,SC2153
#
# tests/e2e/lib_xrld.sh - helpers for the end-to-end tests of the daemon
# (xrld) and its command line (xrlctl), on top of lib.sh's lab.
#
# Sourced, not run; it sources lib.sh. Everything runs in the lab of lib.sh:
# xrld and xrlctl run in the protected namespace through nsenter --net (so
# they see the interface and the pins under /sys/fs/bpf), with a socket and
# a pin directory of their own per test (/run/xrl-test-<tag>.sock,
# /sys/fs/bpf/xrl-test-<tag>).
#
# xrld_lab TAG replaces lib.sh's EXIT trap by xrld_cleanup, which stops the
# xrld processes we started, removes the socket, prints the tail of xrld's
# log when the test failed, then runs lib.sh's lab_cleanup (processes,
# detach, pins, namespaces, temporary files).

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRLD=${XRLD:-$XRL_ROOT/build/xrld}
XRLCTL=${XRLCTL:-$XRL_ROOT/build/xrlctl}

XRLD_SOCK=
XRLD_CONF=
XRLD_LOG=
XRLD_PID=
XRLD_PIDS=()

# require_xrld TOOL...: lib.sh's require_env plus the daemon and the CLI.
require_xrld() {
	require_env python3 "$@"
	[ -x "$XRLD" ] || fatal "$XRLD is missing: make build/xrld"
	[ -x "$XRLCTL" ] || fatal "$XRLCTL is missing: make build/xrlctl"
}

# xrld_lab TAG: the lab (lab_up), a native XDP probe, and the names of this
# test's socket, config file and xrld log.
xrld_lab() {
	lab_up "$1"
	XRLD_SOCK=/run/xrl-test-$1.sock
	XRLD_CONF=$LAB_TMP/xrld.yaml
	XRLD_LOG=$LAB_TMP/xrld.log
	: >"$XRLD_LOG"
	rm -f "$XRLD_SOCK"
	trap xrld_cleanup EXIT
	require_native_xdp
}

# fleet_lab TAG: xrld_lab TAG for a test of the fleet, which needs
# redis-server and redis-cli; sets FLEET (the fleet's name, TAG) and RP (a
# free port for the fleet's Redis).
fleet_lab() {
	require_xrld redis-server redis-cli
	xrld_lab "$1"
	FLEET=$1
	RP=$(free_port)
}

xrld_cleanup() {
	local rc=$?
	trap - EXIT
	stop_pids "${XRLD_PIDS[@]}"
	if [ "$rc" -ne 0 ] && [ -n "$XRLD_LOG" ] && [ -s "$XRLD_LOG" ]; then
		printf '[%s] xrld log (last 30 lines):\n' "$_xrl_name" >&2
		tail -n 30 "$XRLD_LOG" | sed 's/^/    /' >&2
	fi
	[ -n "$XRLD_SOCK" ] && rm -f "$XRLD_SOCK"
	(exit "$rc")
	lab_cleanup
}

# ---- the policy file ---------------------------------------------------------

# write_config FILE RATE BURST [ACTION [PENALTY-YAML [MORE-INTERFACES]]]: a policy
# (MORE-INTERFACES: YAML list items after the lab's interface) with one rule
# `syn` (TCP SYNs to port 80) on the lab's protected interface, metrics on
# 127.0.0.1:9101 (the protected namespace's own loopback).
write_config() {
	local file=$1 rate=$2 burst=$3 action=${4:-drop} penalty=${5:-} more_ifaces=${6:-}
	cat >"$file" <<EOF
interfaces:
  - name: $LAB_PROT_IF
    mode: native
$more_ifaces
xdp:
  rules:
    - name: syn
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: $rate/s
      burst: $burst
      action: $action
EOF
	# The lab's flood is spoofed SYNs, which never prove their source: a
	# test of escalation says it trusts them (penalty: unverified).
	[ -n "$penalty" ] && printf '      penalty: unverified\npenalty: %s\n' "$penalty" >>"$file"
	printf 'metrics: 127.0.0.1:9101\n' >>"$file"
	return 0
}

# xrld_yaml_head [XDP-LINE...]: the head of a policy on stdout: the lab's
# protected interface (native XDP), then xdp: with each XDP-LINE one field
# of it ("allow: [192.0.2.1/32]") and the start of its rules: list. For a
# here-document: $(xrld_yaml_head), then the rules.
xrld_yaml_head() {
	local l
	printf 'interfaces:\n  - name: %s\n    mode: native\nxdp:\n' "$LAB_PROT_IF"
	for l in "$@"; do printf '  %s\n' "$l"; done
	printf '  rules:\n'
}

# vouch_policy PORT [WEB-LINE...]: the policy of a test of vouches on
# stdout: xrld_yaml_head, one rule web (TCP SYNs to port 80, 100/s, burst
# 100; each WEB-LINE one more field of it), metrics on 127.0.0.1:9101 and
# an http: section on 127.0.0.1:PORT behind a trusted proxy on 127.0.0.1,
# whose first rule, login (/login, 1000/s), vouches for 2 minutes. More
# http rules may follow it in the here-document.
vouch_policy() {
	local port=$1 l
	shift
	xrld_yaml_head
	printf '    - name: web\n      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }\n'
	printf '      rate: 100/s\n      burst: 100\n'
	for l in "$@"; do printf '      %s\n' "$l"; done
	cat <<EOF
metrics: 127.0.0.1:9101
http:
  listen: 127.0.0.1:$port
  trusted_proxies: [127.0.0.1/32]
  rules:
    - name: login
      match: { path_prefix: /login }
      rate: 1000/s
      burst: 1000
      vouch: true
      vouch_ttl: 2m
EOF
}

# ---- the daemon ----------------------------------------------------------------

# ctl ARGS...: xrlctl in the protected namespace, on this test's socket and pins.
ctl() { in_prot "$XRLCTL" --socket "$XRLD_SOCK" --pin-dir "$PIN_DIR" "$@"; }

# xrld_start [ARGS...]: xrld in the foreground (in the background of the
# test) in the protected namespace; waits until it answers on its socket.
# Sets XRLD_PID (xrld itself: nsenter execs it).
xrld_start() {
	nsenter --net="/run/netns/$LAB_PROT" -- "$XRLD" --config "$XRLD_CONF" --foreground \
		--socket "$XRLD_SOCK" --pin-dir "$PIN_DIR" "$@" >>"$XRLD_LOG" 2>&1 &
	XRLD_PID=$!
	XRLD_PIDS+=("$XRLD_PID")
	lab_bg "$XRLD_PID"
	for _ in $(seq 100); do
		if ! kill -0 "$XRLD_PID" 2>/dev/null; then
			fatal "xrld exited at start: $(tail -n 5 "$XRLD_LOG")"
		fi
		if ctl status 2>/dev/null | grep -q "^xrld pid $XRLD_PID"; then
			return 0
		fi
		sleep 0.1
	done
	fatal "xrld did not answer on $XRLD_SOCK within 10 s: $(tail -n 5 "$XRLD_LOG")"
}

# xrld_kill SIGNAL: signal xrld and wait for it to go.
xrld_kill() {
	kill "-$1" "$XRLD_PID" 2>/dev/null || fatal "xrld ($XRLD_PID) was not running"
	for _ in $(seq 50); do
		kill -0 "$XRLD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$XRLD_PID" 2>/dev/null && fatal "xrld ($XRLD_PID) still runs after SIG$1"
	wait "$XRLD_PID" 2>/dev/null
	XRLD_RC=$?
}

# id_auth PORT URI XFF [KEY]: /v1/auth on 127.0.0.1:PORT in the protected
# namespace as nginx asks it (X-Original-Method GET, X-Original-URI URI,
# X-Forwarded-For XFF, X-Key KEY if given); prints the status code.
id_auth() {
	in_prot curl -s -o /dev/null -w '%{http_code}' -H "X-Original-Method: GET" \
		-H "X-Original-URI: $2" -H "X-Forwarded-For: $3" ${4:+-H "X-Key: $4"} \
		"http://127.0.0.1:$1/v1/auth"
}

# ---- JSON and counters -------------------------------------------------------

# xrld_metric NAME: the value of the metrics line whose name (with its
# labels, all of them) is NAME, from 127.0.0.1:9101 in the protected
# namespace; empty if there is none.
xrld_metric() {
	in_prot curl -s http://127.0.0.1:9101/metrics | awk -v k="$1" '$1 == k { print $2; exit }'
}

# rule_counts [RULE]: "passed dropped shadow_dropped" of RULE (syn) on the
# lab interface, from `xrlctl --json stats` (read from the pins).
rule_counts() {
	ctl --json stats | jq_py "[(r['passed'], r['dropped'], r['shadow_dropped']) for r in d['rules'] if r['name'] == '${1:-syn}' and r['interface'] == '$LAB_PROT_IF'][0]"
}

# global_count NAME: one global counter from `xrlctl --json stats`.
global_count() {
	ctl --json stats | jq_py "d['global']['$1']"
}

# flood_measure SRC FLOOD-ARGS...: flood SYNs to port 80 from SRC, then set
# ADM (Tcp InSegs delta in the protected namespace), XP, XD, XS (deltas of
# the syn rule's passed, dropped, shadow_dropped from xrlctl) and EXP
# (burst + rate * t for RATE and BURST of the caller).
flood_measure() {
	local src=$1 seg0 c0 c1 p0 d0 s0 p1 d1 s1
	shift
	seg0=$(snmp prot Tcp InSegs)
	c0=$(rule_counts) || fatal "xrlctl --json stats failed"
	flood --dst "$LAB_PROT_IP" --dport 80 --sources "$src" "$@"
	sleep 0.3
	ADM=$(( $(snmp prot Tcp InSegs) - seg0 ))
	c1=$(rule_counts) || fatal "xrlctl --json stats failed"
	read -r p0 d0 s0 <<<"$c0"
	read -r p1 d1 s1 <<<"$c1"
	XP=$((p1 - p0)); XD=$((d1 - d0)); XS=$((s1 - s0))
	EXP=$(expected_admits "$RATE" "$BURST" "$FLOOD_MS")
	info "flood from $src: sent $FLOOD_SENT in $FLOOD_MS ms ($FLOOD_PPS pps); admitted (InSegs) $ADM;" \
		"xrl passed +$XP dropped +$XD shadow +$XS; burst + rate*t = $BURST + $RATE/s * ${FLOOD_MS}ms = $EXP"
}

# flood_bg OUTFILE FLOOD-ARGS...: a flood in the background (sets FLOOD_PID).
flood_bg() {
	local out=$1
	shift
	bg_atk "$XRL_FLOOD" --dev "$LAB_ATK_IF" --dst-mac "$LAB_PROT_MAC" "$@" >"$out" 2>&1
	FLOOD_PID=$BG_PID
}

# flood_wait OUTFILE: wait for flood_bg's flood; sets FLOOD_SENT, FLOOD_MS.
flood_wait() {
	wait "$FLOOD_PID"
	flood_result "$(cat "$1")"
}

# deny_field PREFIX FIELD: FIELD (origin, expires_in_s) of PREFIX in
# `xrlctl --json deny list`, or "absent".
deny_field() {
	ctl --json deny list | jq_py "([e['$2'] for e in d if e['prefix'] == '$1'] + ['absent'])[0]"
}


# check_rc WHAT GOT WANT: an exit status.
check_rc() { check_eq "$1 (exit status)" "$2" "$3"; }

# prom_start RULES TARGET LISTEN EVERY: a real Prometheus in the protected
# namespace, scraping xrld's metrics at TARGET (HOST:PORT) every EVERY
# ("1s") and evaluating RULES every second, its HTTP API on LISTEN
# (HOST:PORT); prom_get PATH asks that API (what the test and the demo
# read the rules' alerts with).
prom_start() {
	PROM_LISTEN=$3
	mkdir -p "$LAB_TMP/prom"
	printf '%s\n' "global: { scrape_interval: $4, scrape_timeout: $4, evaluation_interval: 1s }" \
		"rule_files: [ \"$1\" ]" "scrape_configs:" "  - job_name: xrl" \
		"    static_configs: [ { targets: [ \"$2\" ] } ]" >"$LAB_TMP/prometheus.yml"
	bg_prot prometheus --config.file="$LAB_TMP/prometheus.yml" --storage.tsdb.path="$LAB_TMP/prom" \
		--web.listen-address="$3" >"$LAB_TMP/prometheus.log" 2>&1
}
prom_get() { in_prot curl -s --max-time 5 "http://$PROM_LISTEN$1"; }
