# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# tests/e2e/lib.sh - the lab the end-to-end tests and the demo run in.
#
# Sourced, not run. A lab is two network namespaces joined by one veth pair:
#
#   xrl-<tag>-atk  [xrla0 10.200.0.2/24 2001:db8:200::2/64]
#        |  veth
#   xrl-<tag>-prot [xrlp0 10.200.0.1/24 2001:db8:200::1/64]  <- xrl attached here
#
# Commands run in a namespace through nsenter --net, never `ip netns exec`:
# the latter remounts /sys, which hides the pins under /sys/fs/bpf.
#
# Spoofed sources come from 198.51.100.0/24 and 2001:db8:5::/48, which exist
# only as source addresses inside the lab. The protected namespace routes
# everything back to the attacker namespace, which does not forward, so its
# SYN-ACKs to spoofed sources die there and nothing leaves the lab.
#
# Exit codes of a test: 0 pass, 1 fail, 77 skip. With CI=true a skip is a
# failure: CI must never go green by skipping.
#
# Every lab_up registers lab_cleanup on EXIT (and INT/TERM exit through it),
# which stops the background processes we started, removes the pins and
# deletes the namespaces, whatever state the test died in.

XRL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
XRL_LOAD=${XRL_LOAD:-$XRL_ROOT/build/xrl-load}
XRL_FLOOD=${XRL_FLOOD:-$XRL_ROOT/build/xrl-synflood}
# stop_pids, free_port, jq_py/jget and XRL_PY
# shellcheck source=scripts/lib/common.sh
. "$XRL_ROOT/scripts/lib/common.sh"

LAB_PROT_IF=xrlp0
LAB_ATK_IF=xrla0
LAB_PROT_IP=10.200.0.1
LAB_ATK_IP=10.200.0.2
LAB_PROT_IP6=2001:db8:200::1
LAB_ATK_IP6=2001:db8:200::2

LAB_PROT=
LAB_ATK=
LAB_PROT_MAC=
PIN_DIR=
LAB_PIDS=()
LAB_TMP=
XRL_FAILS=0
XRL_CHECKS=0
_xrl_name=${XRL_TEST_NAME:-$(basename "$0" .sh)}

# ---- reporting -------------------------------------------------------------

log()  { printf '[%s] %s\n' "$_xrl_name" "$*"; }
info() { printf '[%s]   %s\n' "$_xrl_name" "$*"; }

# Exit 77, or 1 under CI=true.
skip() {
	if [ "${CI:-}" = "true" ]; then
		printf '[%s] FAIL: would skip, but CI=true: %s\n' "$_xrl_name" "$*" >&2
		exit 1
	fi
	printf '[%s] SKIP: %s\n' "$_xrl_name" "$*" >&2
	exit 77
}

# Stop now with a failure (a broken lab, a tool that failed).
fatal() {
	printf '[%s] FAIL: %s\n' "$_xrl_name" "$*" >&2
	exit 1
}

# check_range WHAT GOT LO HI: LO <= GOT <= HI, integers.
check_range() {
	local what=$1 got=$2 lo=$3 hi=$4
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if [[ "$got" =~ ^-?[0-9]+$ ]] && [ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ]; then
		printf '[%s]   ok   %-52s got %s, want %s..%s\n' "$_xrl_name" "$what" "$got" "$lo" "$hi"
	else
		printf '[%s]   FAIL %-52s got %s, want %s..%s\n' "$_xrl_name" "$what" "$got" "$lo" "$hi"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# check_eq WHAT GOT WANT (string compare).
check_eq() {
	local what=$1 got=$2 want=$3
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if [ "$got" = "$want" ]; then
		printf '[%s]   ok   %-52s got %s\n' "$_xrl_name" "$what" "$got"
	else
		printf '[%s]   FAIL %-52s got %s, want %s\n' "$_xrl_name" "$what" "$got" "$want"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# check_ge WHAT GOT MIN
check_ge() {
	local what=$1 got=$2 min=$3
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if [[ "$got" =~ ^-?[0-9]+$ ]] && [ "$got" -ge "$min" ]; then
		printf '[%s]   ok   %-52s got %s, want >= %s\n' "$_xrl_name" "$what" "$got" "$min"
	else
		printf '[%s]   FAIL %-52s got %s, want >= %s\n' "$_xrl_name" "$what" "$got" "$min"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# check_expect WHAT GOT EXPECTED PCT: GOT within +-PCT% of EXPECTED (rounded
# outward to integers), printing the deviation.
check_expect() {
	local what=$1 got=$2 exp=$3 pct=$4 lo hi dev
	lo=$(awk -v e="$exp" -v p="$pct" 'BEGIN { v = e * (1 - p / 100); printf "%d", v }')
	hi=$(awk -v e="$exp" -v p="$pct" 'BEGIN { v = e * (1 + p / 100); i = int(v); if (i < v) i++; printf "%d", i }')
	dev=$(awk -v g="$got" -v e="$exp" 'BEGIN { if (e > 0) printf "%+.1f%%", (g - e) * 100 / e; else print "n/a" }')
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if [[ "$got" =~ ^-?[0-9]+$ ]] && [ "$got" -ge "$lo" ] && [ "$got" -le "$hi" ]; then
		printf '[%s]   ok   %-52s got %s, want %s +-%s%% (%s..%s), %s\n' \
			"$_xrl_name" "$what" "$got" "$exp" "$pct" "$lo" "$hi" "$dev"
	else
		printf '[%s]   FAIL %-52s got %s, want %s +-%s%% (%s..%s), %s\n' \
			"$_xrl_name" "$what" "$got" "$exp" "$pct" "$lo" "$hi" "$dev"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# Print the verdict and exit 0 or 1.
finish() {
	if [ "$XRL_FAILS" -eq 0 ]; then
		printf '[%s] PASS (%d checks)\n' "$_xrl_name" "$XRL_CHECKS"
		exit 0
	fi
	printf '[%s] FAIL (%d of %d checks failed)\n' "$_xrl_name" "$XRL_FAILS" "$XRL_CHECKS"
	exit 1
}

# ---- preconditions -----------------------------------------------------------

# require_env TOOL...: root, the binaries, bpffs, the tools named.
require_env() {
	local t
	[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, XDP)"
	for t in ip nsenter awk "$@"; do
		command -v "$t" >/dev/null 2>&1 || skip "needs '$t' (scripts/install-deps.sh)"
	done
	[ -x "$XRL_LOAD" ] || fatal "$XRL_LOAD is missing: run make first"
	[ -x "$XRL_FLOOD" ] || fatal "$XRL_FLOOD is missing: run make first"
	if ! mountpoint -q /sys/fs/bpf; then
		mount -t bpf bpf /sys/fs/bpf 2>/dev/null || skip "couldn't mount a bpffs on /sys/fs/bpf"
	fi
}

# ---- namespaces --------------------------------------------------------------

in_prot() { nsenter --net="/run/netns/$LAB_PROT" -- "$@"; }
in_atk()  { nsenter --net="/run/netns/$LAB_ATK" -- "$@"; }

# xrl VERB ARGS...: xrl-load inside the protected namespace, on the lab's pins.
xrl() { in_prot "$XRL_LOAD" --pin-dir "$PIN_DIR" "$@"; }

# Remember a background process to stop at cleanup. Start it with
# `nsenter ... &` (bg_prot / bg_atk), not with in_prot in the background:
# that would fork a subshell, and $! would be the subshell, not the process.
lab_bg() { LAB_PIDS+=("$1"); }

# bg_prot CMD... / bg_atk CMD...: CMD in the background in a namespace;
# sets BG_PID and registers it for cleanup.
bg_prot() { nsenter --net="/run/netns/$LAB_PROT" -- "$@" & BG_PID=$!; lab_bg "$BG_PID"; }
bg_atk()  { nsenter --net="/run/netns/$LAB_ATK" -- "$@" & BG_PID=$!; lab_bg "$BG_PID"; }

lab_cleanup() {
	local rc=$? pid ns
	trap - EXIT INT TERM
	for pid in "${LAB_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
	done
	for pid in "${LAB_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	LAB_PIDS=()
	# anything else still running in our namespaces was started by us
	for ns in "$LAB_PROT" "$LAB_ATK"; do
		if [ -z "$ns" ] || [ ! -e "/run/netns/$ns" ]; then continue; fi
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill "$pid" 2>/dev/null
		done
	done
	if [ -n "$LAB_PROT" ] && [ -e "/run/netns/$LAB_PROT" ] && [ -x "$XRL_LOAD" ] &&
	   [ -n "$PIN_DIR" ] && [ -d "$PIN_DIR/$LAB_PROT_IF" ]; then
		xrl detach "$LAB_PROT_IF" >/dev/null 2>&1
	fi
	[ -n "$PIN_DIR" ] && rm -rf "$PIN_DIR"
	[ -n "$LAB_PROT" ] && ip netns del "$LAB_PROT" 2>/dev/null
	[ -n "$LAB_ATK" ] && ip netns del "$LAB_ATK" 2>/dev/null
	[ -n "$LAB_TMP" ] && rm -rf "$LAB_TMP"
	free_ports_done
	exit "$rc"
}

# lab_up TAG: the two namespaces, the veth pair, addresses and routes.
lab_up() {
	local tag=$1 ns
	LAB_PROT=xrl-$tag-prot
	LAB_ATK=xrl-$tag-atk
	PIN_DIR=/sys/fs/bpf/xrl-test-$tag
	LAB_TMP=$(mktemp -d "/tmp/xrl-$tag.XXXXXX")
	trap lab_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	lab_sweep_stale
	for ns in "$LAB_PROT" "$LAB_ATK"; do
		[ -e "/run/netns/$ns" ] && log "removing a leftover namespace $ns"
		netns_new "$ns" || fatal "couldn't set up namespace $ns"
		# no DAD: addresses are usable at once
		in_ns_sysctl "$ns" net.ipv6.conf.default.accept_dad=0
	done
	rm -rf "$PIN_DIR"
	netns_veth "$LAB_PROT" "$LAB_PROT_IF" "$LAB_PROT_IP/24" "$LAB_ATK" "$LAB_ATK_IF" \
		"$LAB_ATK_IP/24" || fatal "couldn't create the veth pair"
	ip -n "$LAB_PROT" addr add "$LAB_PROT_IP6/64" dev "$LAB_PROT_IF" nodad
	ip -n "$LAB_ATK" addr add "$LAB_ATK_IP6/64" dev "$LAB_ATK_IF" nodad
	ip -n "$LAB_PROT" route add default via "$LAB_ATK_IP"
	ip -n "$LAB_PROT" -6 route add default via "$LAB_ATK_IP6"
	in_ns_sysctl "$LAB_PROT" "net.ipv4.conf.$LAB_PROT_IF.rp_filter=0"
	LAB_PROT_MAC=$(ip -n "$LAB_PROT" -br link show dev "$LAB_PROT_IF" | awk '{ print $3 }')
	[ -n "$LAB_PROT_MAC" ] || fatal "couldn't read the MAC of $LAB_PROT_IF"
	# the attacker namespace must never pass spoofed traffic on
	in_ns_sysctl "$LAB_ATK" net.ipv4.ip_forward=0
	in_ns_sysctl "$LAB_ATK" net.ipv6.conf.all.forwarding=0
}

# Labs whose owner died without its EXIT trap (SIGKILL, a lost machine):
# tags end in the owner's pid, so a lab whose pid is gone is removed, with
# the processes still in it and its pins.
lab_sweep_stale() {
	local ns tag pid p
	for ns in $(ip netns list 2>/dev/null | awk '{ print $1 }' |
			grep -E '^xrl-[a-z]+[0-9]+-(prot|atk)$'); do
		tag=${ns#xrl-}
		tag=${tag%-*}
		pid=${tag##*[a-z]}
		[ "$pid" = "$$" ] && continue
		kill -0 "$pid" 2>/dev/null && continue
		log "removing the stale lab namespace $ns (its owner $pid is gone)"
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill "$p" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
		rm -rf "/sys/fs/bpf/xrl-test-$tag"
	done
}

in_ns_sysctl() {
	netns_sysctl "$1" "$2" 2>/dev/null || log "note: couldn't set $2 in $1"
}

# atk_pass_xdp: a program that passes everything on the client's end of the
# lab's veth. A veth drops the frames an XDP program sends back (XDP_TX: the
# cookie SYN-ACKs) unless its peer runs XDP too (a real NIC has no such
# need): xrl's own object with no policy passes everything.
atk_pass_xdp() {
	ip -n "$LAB_ATK" link set dev "$LAB_ATK_IF" xdpdrv obj "$XRL_ROOT/build/xrl.bpf.o" sec xdp ||
		fatal "couldn't attach a pass-through XDP program to $LAB_ATK_IF"
}

# Does the kernel take a native XDP program on this veth? Probes with the
# project's own object through iproute2, then removes it.
require_native_xdp() {
	local out
	if ! out=$(ip -n "$LAB_PROT" link set dev "$LAB_PROT_IF" xdpdrv \
			obj "$XRL_ROOT/build/xrl.bpf.o" sec xdp 2>&1); then
		skip "native XDP on veth is not available here: $out"
	fi
	ip -n "$LAB_PROT" link set dev "$LAB_PROT_IF" xdpdrv off
}

# ---- servers and clients ---------------------------------------------------

# A threaded HTTP server on port 80, dual stack, with a backlog large enough
# that a legitimate client is never refused by the listener itself.
start_server() {
	bg_prot "$XRL_PY" -c '
import http.server, socket
class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    request_queue_size = 1024
    daemon_threads = True
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        b = b"hello from the protected namespace\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)
    def log_message(self, *a):
        pass
S(("::", 80), H).serve_forever()
' >"$LAB_TMP/server.log" 2>&1
	local _
	for _ in $(seq 50); do
		if in_prot ss -Hltn 'sport = :80' | grep -q LISTEN; then
			return 0
		fi
		sleep 0.1
	done
	fatal "the HTTP server did not start: $(cat "$LAB_TMP/server.log")"
}

# ---- counters ------------------------------------------------------------------

# snmp NS PROTO FIELD: one counter of /proc/net/snmp read inside namespace NS
# (e.g. snmp prot Tcp InSegs; PROTO TcpExt reads /proc/net/netstat, e.g.
# snmp prot TcpExt SyncookiesSent). /proc/net follows the reader's namespace.
snmp() {
	local ns file=/proc/net/snmp
	case $1 in prot) ns=$LAB_PROT ;; atk) ns=$LAB_ATK ;; *) ns=$1 ;; esac
	[ "$2" = TcpExt ] && file=/proc/net/netstat
	nsenter --net="/run/netns/$ns" -- cat "$file" | awk -v p="$2:" -v f="$3" '
		$1 == p && !hdr { for (i = 2; i <= NF; i++) if ($i == f) col = i; hdr = 1; next }
		$1 == p && hdr  { print $col; exit }'
}

# xrl_stat NAME: one value from `xrl-load stats` (global.seen, rule.syn.passed
# packets), or empty. Each call runs xrl-load: take a snapshot (xrl_snap,
# then snap_get NAME) to read several values of one moment.
xrl_stat() {
	xrl stats "$LAB_PROT_IF" | awk -v k="$1" '$1 == k { print $2; exit }'
}
xrl_snap() {
	XRL_SNAP=$(xrl stats "$LAB_PROT_IF") || fatal "xrl-load stats failed"
}
snap_get() {
	awk -v k="$1" '$1 == k { print $2; exit }' <<<"$XRL_SNAP"
}

# flood ARGS...: run the generator in the attacker namespace towards the
# protected interface; prints its result line and sets FLOOD_SENT and
# FLOOD_MS.
flood() {
	local out
	out=$(in_atk "$XRL_FLOOD" --dev "$LAB_ATK_IF" --dst-mac "$LAB_PROT_MAC" "$@") ||
		fatal "xrl-synflood failed: $out"
	flood_result "$out"
}

# flood_result LINE: FLOOD_SENT, FLOOD_MS and FLOOD_PPS from the
# generator's result line.
flood_result() {
	FLOOD_SENT=$(sed -n 's/.*sent=\([0-9]*\).*/\1/p' <<<"$1")
	FLOOD_MS=$(sed -n 's/.*duration_ms=\([0-9]*\).*/\1/p' <<<"$1")
	# shellcheck disable=SC2034 # read by the callers
	FLOOD_PPS=$(sed -n 's/.*pps=\([0-9]*\).*/\1/p' <<<"$1")
	if [ -z "$FLOOD_SENT" ] || [ -z "$FLOOD_MS" ]; then
		fatal "unexpected xrl-synflood output: $1"
	fi
}

# expected_admits RATE BURST MS: burst + rate * seconds, rounded.
expected_admits() {
	awk -v r="$1" -v b="$2" -v ms="$3" 'BEGIN { printf "%d", b + r * ms / 1000 + 0.5 }'
}

# xdp_prog_id IFACE: id of the XDP program attached to IFACE in the
# protected namespace, or empty.
xdp_prog_id() {
	ip -n "$LAB_PROT" -d link show dev "$1" | awk '/prog\/xdp/ { for (i = 1; i <= NF; i++) if ($i == "id") { print $(i + 1); exit } }'
}

# ---- shared by the daemon and identity-tier tests ---------------------------

# wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds; 1 on timeout.
wait_for() {
	local n=$(($1 * 10))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# check_match WHAT TEXT REGEX: TEXT matches the extended REGEX.
check_match() {
	local what=$1 text=$2 re=$3
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if grep -Eq -- "$re" <<<"$text"; then
		printf '[%s]   ok   %-52s got "%s", matches /%s/\n' "$_xrl_name" "$what" \
			"$(printf '%s' "$text" | head -c 160 | tr '\n' '|')" "$re"
	else
		printf '[%s]   FAIL %-52s got "%s", want /%s/\n' "$_xrl_name" "$what" \
			"$(printf '%s' "$text" | head -c 300 | tr '\n' '|')" "$re"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# check_nomatch WHAT TEXT REGEX: TEXT does not match REGEX.
check_nomatch() {
	local what=$1 text=$2 re=$3
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if ! grep -Eq -- "$re" <<<"$text"; then
		printf '[%s]   ok   %-52s no /%s/\n' "$_xrl_name" "$what" "$re"
	else
		printf '[%s]   FAIL %-52s got "%s", want no /%s/\n' "$_xrl_name" "$what" \
			"$(grep -Em 1 -- "$re" <<<"$text" | head -c 300)" "$re"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# check_float WHAT GOT LO HI: LO <= GOT <= HI, decimals allowed.
check_float() {
	local what=$1 got=$2 lo=$3 hi=$4
	XRL_CHECKS=$((XRL_CHECKS + 1))
	if [[ "$got" =~ ^-?[0-9]+(\.[0-9]+)?$ ]] &&
	   awk -v g="$got" -v l="$lo" -v h="$hi" 'BEGIN { exit !(g >= l && g <= h) }'; then
		printf '[%s]   ok   %-52s got %s, want %s..%s\n' "$_xrl_name" "$what" "$got" "$lo" "$hi"
	else
		printf '[%s]   FAIL %-52s got %s, want %s..%s\n' "$_xrl_name" "$what" "$got" "$lo" "$hi"
		XRL_FAILS=$((XRL_FAILS + 1))
	fi
}

# ---- policy files ----------------------------------------------------------

# http_yaml PORT [PROXY]: the head of an http: section on stdout, listening
# on 127.0.0.1:PORT; with PROXY, behind that proxy (forwarded_from) with
# 127.0.0.1 trusted. For a here-document: $(http_yaml "$P" traefik).
http_yaml() {
	printf 'http:\n  listen: 127.0.0.1:%s\n' "$1"
	[ -z "${2:-}" ] || printf '  forwarded_from: %s\n  trusted_proxies: [127.0.0.1]\n' "$2"
}

# yaml_rule NAME MATCH KEY RATE BURST [LINE...]: one entry of http.rules on
# stdout; MATCH is a flow mapping ('' for none), each LINE one more field
# ("shadow: true").
yaml_rule() {
	local l
	printf '    - name: %s\n' "$1"
	[ -z "$2" ] || printf '      match: %s\n' "$2"
	printf '      key: %s\n      rate: %s\n      burst: %s\n' "$3" "$4" "$5"
	shift 5
	for l in "$@"; do printf '      %s\n' "$l"; done
}
