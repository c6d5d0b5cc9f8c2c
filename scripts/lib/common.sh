# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# scripts/lib/common.sh - the shell helpers the end-to-end tests
# (tests/e2e/lib.sh), the benchmarks (scripts/bench/) and the demo share:
# stopping what we started, free ports, reading JSON, and building labs of
# network namespaces (tests/e2e/lib.sh and scripts/lab.sh).
#
# Sourced, not run; defines functions and XRL_PY, changes no shell option.

if [ -x /usr/bin/python3 ]; then XRL_PY=/usr/bin/python3; else XRL_PY=python3; fi

# stop_pids PID...: TERM (and CONT, for a stopped one), up to 3 s each for
# a clean stop, then KILL; reaps them.
stop_pids() {
	local pid
	for pid in "$@"; do
		kill -TERM "$pid" 2>/dev/null
		kill -CONT "$pid" 2>/dev/null
	done
	for pid in "$@"; do
		for _ in $(seq 30); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	return 0
}

# The ports free_port gave out, in a file so that a call in a subshell
# ($(free_port)) counts too: made here, once per run (children inherit it);
# the cleanup that sources us calls free_ports_done to remove it.
if [ -z "${XRL_PORTS_FILE:-}" ]; then
	XRL_PORTS_FILE=$(mktemp /tmp/xrl-ports.XXXXXX) && export XRL_PORTS_FILE
fi

# free_port [VAR]: a TCP port below the kernel's ephemeral range (so that no
# client connection of ours can hold it when a server binds it), that no
# socket uses in any state, TIME_WAIT included, and that was not given out
# before in this run. Into VAR, or printed. Returns 1 when none is found.
free_port() {
	local p low
	low=$(awk '{ print $1 }' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	[ "$low" -gt 12000 ] 2>/dev/null || low=32768
	for _ in $(seq 200); do
		p=$((10000 + RANDOM % (low - 10000)))
		grep -qx "$p" "$XRL_PORTS_FILE" 2>/dev/null && continue
		ss -Hatun "( sport = :$p or dport = :$p )" 2>/dev/null | grep -q . && continue
		echo "$p" >>"$XRL_PORTS_FILE"
		if [ -n "${1:-}" ]; then printf -v "$1" '%s' "$p"; else echo "$p"; fi
		return 0
	done
	return 1
}

free_ports_done() {
	[ -z "$XRL_PORTS_FILE" ] || rm -f "$XRL_PORTS_FILE"
	XRL_PORTS_FILE=
}

# json_eval MODE EXPR: a python expression over the JSON on stdin (bound to
# d). MODE list: lists print space separated and an error goes to stderr
# with status 1 (jq_py); MODE err: an error prints "ERR: ..." with status 0
# (jget). true, false and null print as in JSON.
json_eval() {
	"$XRL_PY" -c '
import json, sys
mode, expr = sys.argv[1], sys.argv[2]
try:
    d = json.load(sys.stdin)
    v = eval(expr)
except Exception as e:
    if mode == "err":
        print("ERR: %s" % e)
        sys.exit(0)
    sys.stderr.write("jq_py: %s\n" % e)
    sys.exit(1)
if mode == "list" and isinstance(v, (list, tuple)):
    print(" ".join(str(x) for x in v))
elif v is True or v is False:
    print("true" if v else "false")
elif v is None:
    print("null")
else:
    print(v)' "$1" "$2"
}

# jq_py EXPR: json_eval list; jget EXPR: json_eval err.
jq_py() { json_eval list "$1"; }
jget() { json_eval err "$1"; }

# ---- labs: namespaces joined by veth pairs ----------------------------------
# One builder for the e2e lab (tests/e2e/lib.sh: two namespaces) and the
# flood lab (scripts/lab.sh: three). Each returns non-zero on the first
# failure and says what failed on stderr; the caller decides to die, skip or
# log. Commands in a namespace go through nsenter --net: `ip netns exec`
# remounts /sys, which hides the pins under /sys/fs/bpf.

# netns_sysctl NS KEY=VALUE
netns_sysctl() {
	nsenter --net="/run/netns/$1" -- sysctl -qw "$2" >/dev/null 2>&1 ||
		{ echo "couldn't set $2 in $1" >&2; return 1; }
}

# netns_new NS: a fresh namespace (a leftover of that name is removed) with
# lo up and no reverse-path filter: spoofed sources must reach the stack.
netns_new() {
	if [ -e "/run/netns/$1" ]; then
		ip netns del "$1" || { echo "couldn't remove the leftover namespace $1" >&2; return 1; }
	fi
	ip netns add "$1" || { echo "couldn't create namespace $1" >&2; return 1; }
	ip -n "$1" link set lo up &&
		netns_sysctl "$1" net.ipv4.conf.all.rp_filter=0 &&
		netns_sysctl "$1" net.ipv4.conf.default.rp_filter=0
}

# netns_veth NS_A IF_A ADDR_A NS_B IF_B ADDR_B: a veth pair from NS_A to
# NS_B, each end with its address (CIDR), both up.
netns_veth() {
	ip -n "$1" link add "$2" type veth peer name "$5" netns "$4" ||
		{ echo "couldn't create the veth $2/$5" >&2; return 1; }
	ip -n "$1" addr add "$3" dev "$2" && ip -n "$4" addr add "$6" dev "$5" &&
		ip -n "$1" link set "$2" up && ip -n "$4" link set "$5" up
}
