# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# scripts/lib/common.sh - the shell helpers the end-to-end tests
# (tests/e2e/lib.sh), the benchmarks (scripts/bench/) and the demo share:
# stopping what we started, free ports, and reading JSON.
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
