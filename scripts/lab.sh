#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# scripts/lab.sh - the flood lab: a protected front end, an attacker and
# legitimate clients in network namespaces, for scripts/bench/flood.sh.
#
#   sudo scripts/lab.sh up       # (re)create the lab; prints its summary
#   sudo scripts/lab.sh down     # remove everything; idempotent
#   sudo scripts/lab.sh napi     # re-pin the receive kthread, print its pid
#   sudo scripts/lab.sh status   # what exists, the kthread and its CPU
#   sudo scripts/lab.sh clients side|router  # the clients' path (below)
#   scripts/lab.sh env           # the lab's names as shell assignments
#
#   xrlfl-cli [flc0 10.211.0.2, legit 10.211.0.100-131]   legitimate clients
#       | veth                                            (never flood)
#   xrlfl-atk [flr0 10.211.0.1 | fla0 10.210.0.2]         attacker + router:
#       | veth      forwards cli <-> fe, blackholes everything else (replies
#       |           to spoofed sources die here, silently); the generator
#       |           sends on fla0
#   xrlfl-fe  [flf0 10.210.0.1]  <- the protected interface: XDP, the
#             defence, nginx on 10.210.0.1:80, tcp_syncookies=1
#   (and a side veth xrlfl-cli [flc1 10.212.0.2] -- xrlfl-fe [flf1
#   10.212.0.1], unused until `clients side`: see below)
#
# Why one protected interface shared by flood and clients, not one veth
# pair per party into the front end: a front end's NIC queue is shared by
# everyone who sends to it. Here the flood and the clients' packets go into
# the same veth receive ring and are handled by the same NAPI poll, so when
# a defence cannot keep up, the clients' SYNs are lost in the same ring as
# the flood's -- the loss of control the benchmark looks for. With two
# front-end interfaces each party would have its own ring and its own NAPI
# kthread, and the scheduler would shield the clients from an overloaded
# flood path. A bridge namespace in front of one interface was rejected
# too: a bridge turns the generator's XDP frames into skbs and the
# protected veth would get skbs to convert back (the costly path), and the
# bridge's forwarding work would land on some CPU we measure.
#
# The side veth (`clients side`, the spoofed-source scenario of flood.sh):
# there every defence answers each SYN with a SYN-ACK, and what is judged
# is only whether the clients are still served, so a client SYN lost in
# the attacker's ring measures the lab's 256-frame veth ring (VETH_RING_SIZE,
# one queue), not the defence: a NIC has 1-4k descriptors per queue and
# several queues. `clients side` routes the clients over flc1/flf1 into the
# front end: their packets meet the same defence (flood.sh attaches it to
# flf1 as well), the same receive CPU (flf1's threaded-NAPI kthread pinned
# to RX_CPU at the same SCHED_FIFO NAPI_PRIO as flf0's, so it waits while
# flf0's kthread is busy) and the same listener, but not the flood's
# overflowing ring. flc1 keeps an XDP_PASS program (a veth takes XDP_TX
# frames only with NAPI) with its kthread on GEN_CPU, as the router's end
# of the wire. `clients router` puts the route back.
#
# CPUs: the protected interface's receive work runs in its own threaded-NAPI
# kthread (napi/flf0-N), pinned to RX_CPU (1); a veth only has NAPI while an
# XDP program is attached, so the lab always keeps one there (an XDP_PASS
# program, build/bench/flood/pass.bpf.o, unless xrl replaces it; `napi`
# re-pins the new kthread after each attach). nginx (one worker) runs on
# RX_CPU too: RX_CPU is the front end. Generators and clients belong on
# GEN_CPU (0), which is also where the router namespace processes the front
# end's transmissions (RPS on fla0): the front end pays for sending a
# SYN-ACK, not for the lab's wire dropping it.
#
# Knobs (environment): RX_CPU (1), GEN_CPU (0), NLEGIT (32 client addresses),
# NAPI_PRIO (50: the kthread's SCHED_FIFO priority, see napi_pin).
# State: /run/xrlfl (nginx prefix, pid file, lab.env); pins of xrl go under
# /sys/fs/bpf/xrlfl and are removed by `down`.
# shellcheck disable=SC2086 # pid lists split on purpose
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# netns_new, netns_veth: the builder tests/e2e/lib.sh uses too
# shellcheck source=scripts/lib/common.sh
. "$ROOT/scripts/lib/common.sh"
RX_CPU=${RX_CPU:-1}
GEN_CPU=${GEN_CPU:-0}
NLEGIT=${NLEGIT:-32}
NAPI_PRIO=${NAPI_PRIO:-50}

NS_FE=xrlfl-fe
NS_ATK=xrlfl-atk
NS_CLI=xrlfl-cli
FE_IF=flf0
ATK_IF=fla0
RTR_IF=flr0
CLI_IF=flc0
FE_SIDE_IF=flf1                # the side veth (`clients side`)
CLI_SIDE_IF=flc1
FE_SIDE_IP=10.212.0.1
CLI_SIDE_IP=10.212.0.2
FE_IP=10.210.0.1
ATK_IP=10.210.0.2
RTR_IP=10.211.0.1
CLI_IP=10.211.0.2
LEGIT_BASE=10.211.0.  # .100 .. .100+NLEGIT-1
RUN=/run/xrlfl
NGINX_DIR=$RUN/nginx
PIN_DIR=/sys/fs/bpf/xrlfl
PASS_OBJ=$ROOT/build/bench/flood/pass.bpf.o

say() { printf 'lab: %s\n' "$*"; }
UPPING=
# a failed `up` leaves nothing behind
die() {
	printf 'lab: %s\n' "$*" >&2
	[ -n "$UPPING" ] && lab_down
	exit 1
}

in_ns() { local ns=$1; shift; nsenter --net="/run/netns/$ns" -- "$@"; }
# sysfs of a namespace's devices: only `ip netns exec` mounts a /sys that
# shows them (nsenter --net keeps the host's /sys)
ns_sysfs_write() { ip netns exec "$1" sh -c "echo $3 > $2"; }
ns_sysctl() { netns_sysctl "$1" "$2" || die "couldn't set $2 in $1"; }

legit_ips() {
	local i
	for ((i = 0; i < NLEGIT; i++)); do printf '%s%d\n' "$LEGIT_BASE" $((100 + i)); done
}

# napi_pids [IF]: the threaded-NAPI kthreads of IF (the protected interface).
napi_pids() {
	ps -e -o pid=,comm= | awk -v p="napi/${1:-$FE_IF}-" 'index($2, p) == 1 { print $1 }'
}

# napi_pin: pin every receive kthread of FE_IF to RX_CPU at SCHED_FIFO
# NAPI_PRIO; prints the pid(s). Fails when there is none (no XDP program, or
# threaded NAPI is off). FIFO, as threaded interrupt handlers run: NAPI
# normally runs in softirq, which no task delays, while a SCHED_OTHER
# kthread waits out the time slice of nginx or of anything else on RX_CPU
# (at 100k pps a 2.6 ms wait overflows the veth's 256-frame ring).
napi_pin() {
	local pids pid
	pids=$(napi_pids)
	[ -n "$pids" ] || die "no napi/$FE_IF-* kthread: is an XDP program attached and $FE_IF/threaded 1?"
	for pid in $pids; do
		taskset -pc "$RX_CPU" "$pid" >/dev/null || die "couldn't pin kthread $pid to CPU $RX_CPU"
		chrt -f -p "$NAPI_PRIO" "$pid" || die "couldn't make kthread $pid SCHED_FIFO $NAPI_PRIO"
	done
	# the side veth's, alike (not printed: its frames are the clients')
	for pid in $(napi_pids "$FE_SIDE_IF"); do
		{ taskset -pc "$RX_CPU" "$pid" >/dev/null && chrt -f -p "$NAPI_PRIO" "$pid"; } ||
			die "couldn't pin kthread $pid to CPU $RX_CPU"
	done
	echo $pids
}

# clients side|router: the clients' route to FE_IP (see the top)
lab_clients() {
	case $1 in
	side)
		ip -n "$NS_CLI" route replace "${FE_IP%.*}.0/24" via "$FE_SIDE_IP" dev "$CLI_SIDE_IF" &&
			ip -n "$NS_FE" route replace "${LEGIT_BASE}0/24" via "$CLI_SIDE_IP" dev "$FE_SIDE_IF" ;;
	router)
		ip -n "$NS_CLI" route del "${FE_IP%.*}.0/24" 2>/dev/null
		ip -n "$NS_FE" route del "${LEGIT_BASE}0/24" 2>/dev/null
		return 0 ;;
	*) die "usage: $0 clients side|router" ;;
	esac
}

lab_env() {
	cat <<EOF
NS_FE=$NS_FE
NS_ATK=$NS_ATK
NS_CLI=$NS_CLI
FE_IF=$FE_IF
ATK_IF=$ATK_IF
FE_IP=$FE_IP
FE_SIDE_IF=$FE_SIDE_IF
FE_MAC=$(ip -n "$NS_FE" -br link show dev "$FE_IF" 2>/dev/null | awk '{ print $3 }')
LEGIT_IPS=$(legit_ips | paste -sd, -)
RX_CPU=$RX_CPU
GEN_CPU=$GEN_CPU
PIN_DIR=$PIN_DIR
PASS_OBJ=$PASS_OBJ
NGINX_PID_FILE=$NGINX_DIR/nginx.pid
EOF
}

lab_down() {
	local ns pid pids
	if [ -s "$NGINX_DIR/nginx.pid" ]; then
		pid=$(cat "$NGINX_DIR/nginx.pid")
		kill -QUIT "$pid" 2>/dev/null
	fi
	# whatever still runs in our namespaces was started by this lab
	for ns in "$NS_FE" "$NS_ATK" "$NS_CLI"; do
		[ -e "/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill $pids 2>/dev/null
	done
	for _ in $(seq 30); do
		pids=
		for ns in "$NS_FE" "$NS_ATK" "$NS_CLI"; do
			[ -e "/run/netns/$ns" ] && pids+=$(ip netns pids "$ns" 2>/dev/null)
		done
		[ -z "$pids" ] && break
		sleep 0.1
	done
	for ns in "$NS_FE" "$NS_ATK" "$NS_CLI"; do
		[ -e "/run/netns/$ns" ] || continue
		pids=$(ip netns pids "$ns" 2>/dev/null)
		[ -n "$pids" ] && kill -KILL $pids 2>/dev/null
		ip netns del "$ns" 2>/dev/null || say "couldn't delete namespace $ns"
	done
	rm -rf "$PIN_DIR" "$RUN"
	return 0
}

lab_up() {
	local ns ip
	[ "$(id -u)" -eq 0 ] || die "needs root: sudo $0 up"
	for t in ip nsenter taskset chrt nginx sysctl ps curl ss; do
		command -v "$t" >/dev/null || die "'$t' is missing: sudo scripts/install-deps.sh"
	done
	[ "$(nproc --all)" -gt "$RX_CPU" ] || die "RX_CPU=$RX_CPU but only $(nproc --all) CPUs"
	if [ ! -e "$PASS_OBJ" ]; then
		make -s -C "$ROOT" "${PASS_OBJ#"$ROOT"/}" >/dev/null || die "couldn't build $PASS_OBJ"
	fi
	mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || die "couldn't mount a bpffs"
	lab_down
	UPPING=1
	trap 'lab_down; exit 130' INT
	trap 'lab_down; exit 143' TERM

	for ns in "$NS_FE" "$NS_ATK" "$NS_CLI"; do
		netns_new "$ns" || die "couldn't set up namespace $ns"
		ns_sysctl "$ns" net.ipv6.conf.all.disable_ipv6=1
		ns_sysctl "$ns" net.ipv6.conf.default.disable_ipv6=1
	done
	netns_veth "$NS_FE" "$FE_IF" "$FE_IP/24" "$NS_ATK" "$ATK_IF" "$ATK_IP/24" ||
		die "couldn't set up the veth $FE_IF/$ATK_IF"
	netns_veth "$NS_CLI" "$CLI_IF" "$CLI_IP/24" "$NS_ATK" "$RTR_IF" "$RTR_IP/24" ||
		die "couldn't set up the veth $CLI_IF/$RTR_IF"
	for ip in $(legit_ips); do
		ip -n "$NS_CLI" addr add "$ip/24" dev "$CLI_IF"
	done
	netns_veth "$NS_FE" "$FE_SIDE_IF" "$FE_SIDE_IP/24" "$NS_CLI" "$CLI_SIDE_IF" "$CLI_SIDE_IP/24" ||
		die "couldn't set up the veth $FE_SIDE_IF/$CLI_SIDE_IF"
	ns_sysctl "$NS_CLI" "net.ipv4.conf.$CLI_SIDE_IF.rp_filter=0"
	ns_sysctl "$NS_FE" "net.ipv4.conf.$FE_SIDE_IF.rp_filter=0"
	ip -n "$NS_FE" route add default via "$ATK_IP"
	ip -n "$NS_CLI" route add default via "$RTR_IP"
	# the router forwards between its two subnets only: a reply to a spoofed
	# source hits the blackhole (no ICMP back), nothing ever leaves the lab
	ip -n "$NS_ATK" route add blackhole default
	ns_sysctl "$NS_ATK" net.ipv4.ip_forward=1
	ns_sysctl "$NS_FE" "net.ipv4.conf.$FE_IF.rp_filter=0"
	ns_sysctl "$NS_FE" net.ipv4.tcp_syncookies=1
	# the front end's transmissions are received by the router on GEN_CPU
	ns_sysfs_write "$NS_ATK" "/sys/class/net/$ATK_IF/queues/rx-0/rps_cpus" \
		"$(printf '%x' $((1 << GEN_CPU)))" || die "couldn't set RPS on $ATK_IF"

	# receive work in its own kthread: a veth has NAPI (and takes
	# `threaded`) only while an XDP program is attached; the setting then
	# survives detach and re-attach, each of which makes a new kthread
	ip -n "$NS_FE" link set dev "$FE_IF" xdpdrv obj "$PASS_OBJ" sec xdp ||
		die "couldn't attach $PASS_OBJ natively to $FE_IF"
	ns_sysfs_write "$NS_FE" "/sys/class/net/$FE_IF/threaded" 1 ||
		die "couldn't turn on threaded NAPI on $FE_IF"
	# the side veth: the same on flf1 (its kthread pinned by napi_pin);
	# flc1 gets NAPI too, its kthread on GEN_CPU (see the top)
	{ ip -n "$NS_FE" link set dev "$FE_SIDE_IF" xdpdrv obj "$PASS_OBJ" sec xdp &&
		ns_sysfs_write "$NS_FE" "/sys/class/net/$FE_SIDE_IF/threaded" 1 &&
		ip -n "$NS_CLI" link set dev "$CLI_SIDE_IF" xdpdrv obj "$PASS_OBJ" sec xdp &&
		ns_sysfs_write "$NS_CLI" "/sys/class/net/$CLI_SIDE_IF/threaded" 1; } ||
		die "couldn't attach $PASS_OBJ to the side veth $FE_SIDE_IF/$CLI_SIDE_IF"
	for pid in $(napi_pids "$CLI_SIDE_IF"); do
		{ taskset -pc "$GEN_CPU" "$pid" >/dev/null && chrt -f -p "$NAPI_PRIO" "$pid"; } ||
			die "couldn't pin kthread $pid to CPU $GEN_CPU"
	done
	napi_pin >/dev/null

	mkdir -p "$NGINX_DIR/conf" "$NGINX_DIR/html" "$NGINX_DIR/logs"
	chmod 755 "$RUN" "$NGINX_DIR" "$NGINX_DIR/html"
	cat >"$NGINX_DIR/conf/nginx.conf" <<EOF
# the flood lab's front end (scripts/lab.sh)
worker_processes 1;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/logs/error.log warn;
events { worker_connections 8192; }
http {
    access_log off;
    keepalive_timeout 5s;
    server {
        listen $FE_IP:80;
        root $NGINX_DIR/html;
        location / { index index.html; }
    }
}
EOF
	{
		printf '<!doctype html>\n<title>on sale</title>\n<h1>Tickets</h1>\n'
		printf '<p>%s</p>\n' "The sale opens at 10:00. Keep this page open." \
			"This page is served by the flood lab's front end (scripts/lab.sh)."
	} >"$NGINX_DIR/html/index.html"
	chmod 644 "$NGINX_DIR/html/index.html"
	taskset -c "$RX_CPU" nsenter --net="/run/netns/$NS_FE" -- \
		nginx -p "$NGINX_DIR/" -c conf/nginx.conf ||
		die "nginx did not start: $(tail -n 3 "$NGINX_DIR/logs/error.log" 2>/dev/null)"
	for _ in $(seq 50); do
		in_ns "$NS_FE" ss -Hltn "sport = :80" | grep -q LISTEN && break
		sleep 0.1
	done
	in_ns "$NS_CLI" curl -s -o /dev/null --max-time 3 --interface "${LEGIT_BASE}100" \
		"http://$FE_IP/" || die "a client couldn't fetch http://$FE_IP/ through the lab"
	lab_env >"$RUN/lab.env"
	UPPING=
	trap - INT TERM
	lab_status
}

lab_status() {
	local ns pid
	for ns in "$NS_FE" "$NS_ATK" "$NS_CLI"; do
		if [ -e "/run/netns/$ns" ]; then say "namespace $ns: present"; else say "namespace $ns: absent"; fi
	done
	[ -e "/run/netns/$NS_FE" ] || return 0
	say "$FE_IF: $(ip -n "$NS_FE" -br link show dev "$FE_IF" 2>/dev/null | awk '{ print $3, $2 }')," \
		"XDP: $(ip -n "$NS_FE" -d link show dev "$FE_IF" | grep -o 'prog/xdp id [0-9]*' || echo none)"
	for pid in $(napi_pids); do
		say "receive kthread $(ps -o comm= -p "$pid") pid $pid, $(taskset -pc "$pid" | sed 's/.*: /CPUs /'), policy/prio $(ps -o cls=,rtprio= -p "$pid" | xargs)"
	done
	if [ -s "$NGINX_DIR/nginx.pid" ] && kill -0 "$(cat "$NGINX_DIR/nginx.pid")" 2>/dev/null; then
		say "nginx master $(cat "$NGINX_DIR/nginx.pid") on http://$FE_IP/ in $NS_FE, $(taskset -pc "$(cat "$NGINX_DIR/nginx.pid")" | sed 's/.*: /CPUs /')"
	fi
	say "clients: $NS_CLI, ${LEGIT_BASE}100..$((100 + NLEGIT - 1)); attacker: $NS_ATK on $ATK_IF"
}

case ${1:-} in
up) lab_up ;;
down)
	[ "$(id -u)" -eq 0 ] || die "needs root: sudo $0 down"
	lab_down
	say "down" ;;
napi)
	[ -e "/run/netns/$NS_FE" ] || die "no lab: $0 up"
	napi_pin ;;
status) lab_status ;;
env) lab_env ;;
clients)
	[ -e "/run/netns/$NS_FE" ] || die "no lab: $0 up"
	lab_clients "${2:-}" ;;
*)
	echo "usage: $0 up|down|napi|status|env|clients side|router" >&2
	exit 2 ;;
esac
