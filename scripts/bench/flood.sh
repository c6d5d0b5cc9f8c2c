#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# scripts/bench/flood.sh - the flood lab (`make bench-flood`): the same SYN
# flood against the same front end, defended in turn by
#
#   floor     a bare XDP_DROP program (drops everything, clients included):
#             what the lab's "NIC" itself costs and carries
#   none      kernel SYN cookies only (net.ipv4.tcp_syncookies=1)
#   nft       nftables: a dynamic set with a per-source limit, prerouting
#             at priority raw (before conntrack)
#   iptables  iptables hashlimit in the raw table
#   xrl       xrld with the same per-source rate and burst, in XDP
#
# on the lab of scripts/lab.sh (see there for the topology and the CPUs).
# An XDP_PASS program sits on the protected interface for none, nft and
# iptables, so every defence gets its frames by the same path, and the
# receive work stays in the threaded-NAPI kthread that is measured.
#
#   sudo scripts/bench/flood.sh            # or: make bench-flood
#   sudo scripts/bench/flood.sh --docs     # also update docs/img/flood.png and
#                                          # the table in docs/benchmarks.md
#
# For each defence: the legitimate clients alone (idle), then a flood at
# each rate of STEPS (pps; 0 = as fast as the generator goes), from NSRC
# spoofed sources. In each step, after WARM s of flood:
#   - MEAS s with the flood only: CPU time of the receive kthread (its
#     /proc/PID/schedstat run time) over the frames its XDP program saw
#     (rx_queue_0_xdp_packets) = receive ns per packet, and kthread busy %;
#   - then LEGIT_SECS s of legitimate clients (scripts/bench/flood/legit.py:
#     LEGIT_RPS new connections a second, open loop, from 32 addresses
#     that never flood) through the still running flood: errors, p50, p99.
# The clients are kept out of the CPU window: a request costs the kthread
# tens of microseconds (wake-ups and the whole TCP exchange), which would be
# charged to the flood's packets. A step during which other tasks took more
# than NOISE_MAX % of RX_CPU, or the generator fell short while the receiver
# had room (someone else had CPU GEN_CPU), is measured again (RETRY times at
# most, RETRY_BUDGET in the whole run; the least disturbed attempt is kept):
# the machine may be shared.
# A step "keeps control" when the receive CPU did not saturate (kthread
# busy < 90 %) and the clients lost <= 0.1 % with a p99 <= 2x idle. The
# highest received rate of such a step is the defence's "absorbed" figure.
# Ring drops are shown but not judged: the generator's bursts overflow the
# veth's 256 frames now and then whatever the defence (flat out, a lot).
#
# Then, per defence (not none): admitted SYNs per source against burst +
# rate * t, with one source's packets received on one CPU (threaded NAPI,
# kthread on RX_CPU) and on both (threaded NAPI off: a veth's NAPI then runs
# on the sending CPU; two senders on CPUs 0 and 1), counted per source by
# an nftables set that runs after the defence. And for xrl: the size of a
# bucket table entry (bpftool memlock / max_entries), and floods of 1 and 10
# million sequential spoofed sources (one SYN each, from 11.0.0.0/8) with
# the clients running: bucket_new, buckets in use, evictions, insert
# failures, and whether a client was ever refused.
#
# Lab settings (why: scripts/lab.sh and the comments below): the receive
# kthread at SCHED_FIFO NAPI_PRIO; a SCHED_IDLE spinner on RX_CPU (RX_SPIN);
# generator calls of GEN_BATCH frames, paced at SCHED_FIFO.
#
# Then the spoofed-source scenario (SPOOF=1): SYNs from random sources of
# SP_NET (each SYN a new address), against four defences that answer them
# all: sp_none (the kernel's SYN cookies, tcp_syncookies=1), sp_nft (nftables
# `synproxy`), sp_ipt (iptables SYNPROXY; the `iptables` on PATH: here
# 1.8.9, the nf_tables backend, the target through nft_compat) and sp_xrl
# (xrld, one rule with `syn_cookies: on`). Each SYN gets a SYN-ACK that the
# router's end of the wire drops (an XDP_DROP program on ATK_IF,
# scripts/bench/flood/sink.bpf.c, its kthread on GEN_CPU: see there). The
# same steps (SP_STEPS) and the same clients; a step is judged on the
# clients only (<= 0.1 % errors, p99 <= 2x idle): the highest received
# rate of such a paced step (not the flat-out one: there, whether a client
# SYN is among the frames the ring loses is luck) is the defence's spoofed
# capacity. With SP_SIDE=1 the clients come over a veth of their own into
# the front end (scripts/lab.sh `clients side`), and every defence is
# applied there too: same defence, same receive CPU, same listener, but not
# the attacker's 256-frame veth ring, which overflows in bursts at a few
# hundred kpps whatever the defence (a lab artifact: see lab.sh). Receive
# ns per spoofed SYN: SP_COST_ROUNDS rounds of the four back to back, flat
# out, no clients (as for R), the median per defence.
# The idle p99 that steps are judged against is the median of IDLE_RUNS
# idle runs (both scenarios).
# DEFENCES="" runs the spoofed-source scenario alone (~10 minutes); --docs
# then replaces only its block of docs/benchmarks.md.
#
# Last lines: xrl_vs_nft_cost=R legit_error_pct=E legit_p99_ratio=P
#         and spoofed_capacity_vs_kernel=X spoofed_cost_vs_nft_synproxy=Y legit_error_pct=E2
#   R  xrl's receive ns per packet / nftables', the generator flat out: the
#      median ratio of COST_ROUNDS rounds alternating the two (see
#      cost_rounds). Flat out each kthread gets its frames in ring-sized
#      bursts, so its per-wake-up overhead is amortised alike; at an equal
#      paced rate the cheaper defence idles more and wakes more often per
#      packet (the per-step table shows those ratios too)
#   E  legitimate errors under flood with xrl, in %, worst step
#   P  legitimate p99 under flood / idle p99 with xrl, worst step
# E and P are taken over the steps the lab's NIC carried (floor lost <= 1 %
# in the ring; a flood the ring cannot take is lost before any defence can
# act, clients' packets included). Required: R <= 0.5, E <= 0.1, P <= 2.0;
# exit 1 otherwise, 2 if the run itself failed. Results: build/flood-lab/
# (results.tsv, accuracy.tsv, sources.tsv, table.md, summary.txt,
# flood.png); KEEP=1 keeps the per-step logs too.
#   X  sp_xrl's spoofed capacity / sp_none's (required >= 5)
#   Y  sp_xrl's receive ns per spoofed SYN / sp_nft's, median of the rounds
#      (required <= 0.5)
#   E2 the clients' errors under the spoofed flood with xrl, in %, worst
#      step the floor carried (required <= 0.1)
# (spoofed.tsv, spoofed_cost.tsv and flood-spoofed.png join the results).
#
# Knobs (environment): XRL_GEN (the generator: build/xrl-gen if built, else
# build/xrl-synflood), STEPS ("100000 200000 400000 0"), NSRC (64),
# RATE (100), BURST (50), LEGIT_RPS (300), LEGIT_SECS (4), WARM (0.5),
# MEAS (2), NOISE_MAX (10), RETRY (3), RETRY_BUDGET (24), COST_ROUNDS (5), GEN_BATCH (192), NAPI_PRIO (50),
# RX_SPIN (1), DEFENCES ("floor none nft iptables xrl"), BIG (1: run the
# millions-of-sources part), BIG_RATE (300000), BIG_SOURCES ("1000000
# 10000000"), KEEP (1: keep the logs), SPOOF (1: run the spoofed-source
# scenario), SP_STEPS ("50000 100000 150000 200000 300000 400000 600000 0"),
# SP_NET (11.0.0.0/8), SP_DEFENCES ("sp_none sp_nft sp_ipt sp_xrl"),
# SP_COST_ROUNDS (5), SP_SIDE (1: the clients over their own veth),
# IDLE_RUNS (3).
# Whole run: about 20 minutes on 2 vCPUs (more retries on a busier machine);
# the spoofed scenario alone (DEFENCES=""): 8 minutes.
# shellcheck disable=SC2086,SC2153 # pid lists split on purpose; names set by lab.sh env and bg
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$ROOT/scripts/bench/flood
LAB=$ROOT/scripts/lab.sh
OUT=$ROOT/build/flood-lab
DOCS=0
# what was run, for the docs (the knobs that change what is measured)
CMDLINE="$(for v in DEFENCES SP_STEPS SP_SIDE IDLE_RUNS; do [ -n "${!v+x}" ] && printf '%s="%s" ' "$v" "${!v}"; done)scripts/bench/flood.sh $*"
[ "${1:-}" = --docs ] && DOCS=1 && shift
[ $# -eq 0 ] || { echo "usage: $0 [--docs]" >&2; exit 2; }

if [ -z "${XRL_GEN:-}" ]; then
	if [ -x "$ROOT/build/xrl-gen" ]; then XRL_GEN=$ROOT/build/xrl-gen; else XRL_GEN=$ROOT/build/xrl-synflood; fi
fi
STEPS=${STEPS:-"100000 200000 400000 0"}
NSRC=${NSRC:-64}
FLOOD_NET=198.18.0.0/24        # the step floods' sources: .0 .. .NSRC-1
GEN_BATCH=${GEN_BATCH:-192}   # frames per generator call: the veth ring holds 256
NAPI_PRIO=${NAPI_PRIO:-50}
GEN_PRIO=5                     # the clients run at 10
NOISE_MAX=${NOISE_MAX:-10}
RETRY=${RETRY:-3}
RETRY_BUDGET=${RETRY_BUDGET:-24}  # retries in the whole run, at most
RX_SPIN=${RX_SPIN:-1}
RATE=${RATE:-100}
BURST=${BURST:-50}
LEGIT_RPS=${LEGIT_RPS:-300}
LEGIT_SECS=${LEGIT_SECS:-4}
LEGIT_TIMEOUT=3
WARM=${WARM:-0.5}
MEAS=${MEAS:-2}
IDLE_RUNS=${IDLE_RUNS:-3}      # idle client runs; the idle p99 is their median
DEFENCES=${DEFENCES-"floor none nft iptables xrl"}  # "" (set, empty): the spoofed scenario alone
BIG=${BIG:-1}
BIG_RATE=${BIG_RATE:-300000}
BIG_SOURCES=${BIG_SOURCES:-"1000000 10000000"}
ACC_SECS=4                     # accuracy floods
ACC_NSRC=4
ACC_PPS=200000
COST_ROUNDS=${COST_ROUNDS:-5}
SPOOF=${SPOOF:-1}
SP_STEPS=${SP_STEPS:-"50000 100000 150000 200000 300000 400000 600000 0"}
SP_SIDE=${SP_SIDE:-1}          # the clients over the side veth (scripts/lab.sh)
SP_NET=${SP_NET:-11.0.0.0/8}
SP_DEFENCES=${SP_DEFENCES:-"sp_none sp_nft sp_ipt sp_xrl"}
SP_COST_ROUNDS=${SP_COST_ROUNDS:-5}
R_MAX=0.5 E_MAX=0.1 P_MAX=2.0 X_MIN=5 Y_MAX=0.5
# the flood's sources: the step floods' few, or (spoofed scenario) a new
# random address of SP_NET for every SYN
GEN_SRC=(--sources "$FLOOD_NET" --nsrc "$NSRC")
XRLD=$ROOT/build/xrld
XRLCTL=$ROOT/build/xrlctl
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

T0=$(date +%s)
say() { printf '%s\n' "$*"; }
log() { printf '[%3ds] %s\n' $(( $(date +%s) - T0 )) "$*"; }
die() { printf 'flood: %s\n' "$*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, XDP, netfilter): sudo $0"
[ "$(nproc --all)" -ge 2 ] || die "needs 2 CPUs (one for the generators, one for the front end)"
for t in ip nsenter taskset chrt nginx nft iptables bpftool ethtool gnuplot awk "$PY"; do
	command -v "$t" >/dev/null || die "'$t' is missing: sudo scripts/install-deps.sh"
done
for b in "$XRL_GEN" "$XRLD" "$XRLCTL"; do
	[ -x "$b" ] || die "$b is missing: make all"
done
FLOOR_OBJ=$ROOT/build/bench/floor.bpf.o
make -s -C "$ROOT" build/bench/flood/pass.bpf.o build/bench/flood/sink.bpf.o build/bench/floor.bpf.o >/dev/null ||
	die "couldn't build the XDP_PASS and XDP_DROP programs"

# this script and what it starts run on GEN_CPU unless placed elsewhere:
# nothing of ours but the receive path and nginx belongs on RX_CPU
taskset -pc "${GEN_CPU:-0}" $$ >/dev/null || die "couldn't pin myself to CPU ${GEN_CPU:-0}"

# one run at a time: the lab's names are fixed
exec 9>/run/xrlfl.lock
flock -n 9 || die "another flood lab run holds /run/xrlfl.lock"

# ---- cleanup: everything started here goes, whatever happens ---------------

mkdir -p "$OUT"
rm -f "$OUT"/*.tsv "$OUT"/*.dat "$OUT"/table.md "$OUT"/spoofed.md "$OUT"/summary.txt "$OUT"/flood*.png
TMP=$(mktemp -d /tmp/xrl-flood.XXXXXX)
PIDS=()
XRLD_PID=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local rc=$? pid
	trap - EXIT INT TERM
	for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
	for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
	"$LAB" down >/dev/null 2>&1
	if [ "${KEEP:-0}" = 1 ]; then say "logs kept in $TMP"; else rm -rf "$TMP"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'say "flood: interrupted"; exit 130' INT
trap 'say "flood: terminated"; exit 143' TERM

# bg VAR CMD...: CMD in the background, remembered for cleanup; VAR = pid.
bg() { local v=$1; shift; "$@" & PIDS+=("$!"); printf -v "$v" '%s' "$!"; }
# wait_bg PID: wait for it (interruptible: the traps run at once).
wait_bg() {
	local rc p keep=()
	wait "$1"
	rc=$?
	for p in "${PIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
	PIDS=("${keep[@]}")
	return "$rc"
}

# With RX_SPIN=1 a SCHED_IDLE busy loop keeps RX_CPU from halting: on this
# VM a halted vCPU takes long enough to wake that a flood at a few hundred
# kpps overflows the veth's 256-frame ring meanwhile (a NIC's ring is 4 to
# 16 times larger). Every task and the kthread preempt it at once.
# shellcheck disable=SC2034 # set by bg, for the record
SPIN_PID=
# idle_pids CPU|any: the SCHED_IDLE tasks last seen on CPU (ours and anyone
# else's); idle_ns PIDS...: their run time so far. They yield to every other
# task, so they are left out of the "others" figure.
idle_pids() {
	local f st
	for f in /proc/[0-9]*/stat; do
		st=$(cat "$f" 2>/dev/null) || continue
		st=${st##*) }
		# after the comm, fields 39 (processor) and 41 (policy) are $37, $39
		awk -v c="$1" '($37 == c || c == "any") && $39 == 5 { exit 0 } { exit 1 }' <<<"$st" || continue
		f=${f#/proc/}
		printf '%s ' "${f%/stat}"
	done
}
idle_ns() {
	local p s=0 v
	for p in "$@"; do
		v=$(awk '{ print $1 }' "/proc/$p/schedstat" 2>/dev/null) && s=$((s + v))
	done
	echo "$s"
}

KERNEL=$(uname -r)
# Is someone else using the machine? (the figures are then noisy: say so)
busy_other() {
	local a b i0 i1 ip
	ip=$(idle_pids any)
	# shellcheck disable=SC2086
	i0=$(idle_ns $ip)
	a=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
	sleep 1
	b=$(awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
	# shellcheck disable=SC2086
	i1=$(idle_ns $ip)
	awk -v a="$a" -v b="$b" -v i=$((i1 - i0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
		split(a, x, " "); split(b, y, " "); u = y[1] - x[1] - i * hz / 1e9; t = y[1] - x[1] + y[2] - x[2];
		printf "%.0f", t ? 100 * (u < 0 ? 0 : u) / t : 0 }'
}
LOAD0=$(busy_other)
[ "$LOAD0" -gt 15 ] && say "flood: WARNING: other tasks kept the CPUs $LOAD0% busy before the run (SCHED_IDLE ones left out): the figures will be noisy"
log "lab up ($LAB)"
"$LAB" up >"$TMP/lab.log" 2>&1 || die "lab.sh up failed: $(tail -n 3 "$TMP/lab.log")"
# shellcheck disable=SC1090
. <("$LAB" env)
[ -n "$FE_MAC" ] || die "no MAC for $FE_IF"
if [ "$RX_SPIN" = 1 ]; then
	bg SPIN_PID chrt -i 0 taskset -c "$RX_CPU" "$PY" -c 'while True: pass'
fi
in_fe()  { nsenter --net="/run/netns/$NS_FE" -- "$@"; }
in_atk() { nsenter --net="/run/netns/$NS_ATK" -- "$@"; }
ctl() { in_fe "$XRLCTL" --socket "$TMP/xrld.sock" --pin-dir "$PIN_DIR" "$@"; }

say "flood lab: kernel $KERNEL, $(nproc --all) CPUs; generator $(basename "$XRL_GEN") on CPU $GEN_CPU," \
	"receive kthread and nginx on CPU $RX_CPU"
say "flood: TCP SYNs to $FE_IP:80 from $NSRC sources ($FLOOD_NET); limit $RATE/s burst $BURST per source"
say "clients: $LEGIT_RPS new connections/s from $(tr ',' '\n' <<<"$LEGIT_IPS" | wc -l) addresses," \
	"open loop, timeout ${LEGIT_TIMEOUT}s"

# ---- measuring -----------------------------------------------------------

# lab.sh napi pins the receive kthread(s) to RX_CPU at SCHED_FIFO NAPI_PRIO
# (why: there); every attach or detach makes a new one.
NAPI=
repin() { NAPI=$(NAPI_PRIO=$NAPI_PRIO "$LAB" napi) || die "couldn't pin the receive kthread"; }
kcpu() { local p s=0; for p in $NAPI; do s=$((s + $(awk '{ print $1 }' "/proc/$p/schedstat"))); done; echo "$s"; }
xdp_pkts() { in_fe ethtool -S "$FE_IF" | awk '/rx_queue_[0-9]+_xdp_packets:/ { s += $2 } END { print s + 0 }'; }
# ring_drops: frames the generator offered that the receive ring had no room
# for (lost, as a NIC's rx_missed). xrl-gen does not retry them; xrl-synflood
# (AF_PACKET) retries, so for it they are not losses and count as 0.
ring_drops() {
	case $XRL_GEN in *synflood) echo 0; return ;; esac
	in_atk ethtool -S "$ATK_IF" | awk '/tx_queue_[0-9]+_xdp_xmit_errors:/ { s += $2 } END { print s + 0 }'
}
now_ns() { date +%s%N; }
# cpu_busy_ns CPU: non-idle time of CPU so far (/proc/stat, USER_HZ ticks)
cpu_busy_ns() {
	awk -v c="cpu$1" -v hz="$(getconf CLK_TCK)" '$1 == c { printf "%.0f", ($2 + $3 + $4 + $7 + $8 + $9) * 1e9 / hz }' /proc/stat
}
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

# gen OUTFILE PPS GEN-ARGS...: the generator in the attacker namespace, in
# the background (GEN_PID), at PPS (0 = as fast as it goes). A paced
# generator runs at SCHED_FIFO GEN_PRIO (below the clients): when another
# task delays it, it catches up with a burst of up to 5 ms of frames, which
# overflows the receive ring whatever the defence. Flat out, it stays a
# normal task, so it cannot starve CPU GEN_CPU.
gen() {
	local out=$1 pps=$2 sched=()
	shift 2
	[ "$pps" -gt 0 ] && sched=(chrt -f "$GEN_PRIO")
	# every CPU allowed (this script runs on GEN_CPU only): --cpus pins
	bg GEN_PID nsenter --net="/run/netns/$NS_ATK" -- taskset -c "0-$(( $(nproc --all) - 1 ))" \
		"${sched[@]}" "$XRL_GEN" --dev "$ATK_IF" \
		--dst-mac "$FE_MAC" --dst "$FE_IP" --dport 80 --rate "$pps" --batch "$GEN_BATCH" "$@" >"$out" 2>&1
}
gen_wait() {
	wait_bg "$GEN_PID" || die "the generator failed: $(tail -n 3 "$1")"
	GEN_OUT=$(tail -n 1 "$1")
	[ -n "$(kv sent "$GEN_OUT")" ] || die "unexpected generator output: $GEN_OUT"
}

# legit OUTFILE [ARGS...]: the clients, LEGIT_SECS s (background; LEGIT_PID);
# ARGS go to legit.py after ours (so they win). They
# share CPU GEN_CPU with the generator, at a real-time priority: in real
# life they are elsewhere, and must not wait behind our generator.
legit() {
	local out=$1
	shift
	bg LEGIT_PID nsenter --net="/run/netns/$NS_CLI" -- chrt -f 10 taskset -c "$GEN_CPU" \
		"$PY" "$HERE/legit.py" --dst "$FE_IP" --rate "$LEGIT_RPS" --duration "$LEGIT_SECS" \
		--timeout "$LEGIT_TIMEOUT" --sources "$LEGIT_IPS" --latencies "$out.lat" "$@" >"$out" 2>&1
}
legit_wait() {
	wait_bg "$LEGIT_PID" || die "the legitimate client failed: $(tail -n 3 "$1")"
	LEGIT_OUT=$(tail -n 1 "$1")
	[ -n "$(kv requests "$LEGIT_OUT")" ] || die "unexpected client output: $LEGIT_OUT"
}

RES=$OUT/results.tsv
printf 'defence\tstep\tgen_pps\trx_pps\tring_drop_pct\tbusy_pct\tothers_pct\tns_per_pkt\tlegit_req\tlegit_err\tlegit_err_pct\tp50_ms\tp99_ms\tcontrol\tlegit_detail\n' >"$RES"

# ---- defences --------------------------------------------------------------

# The front end's interfaces a defence goes on: FE_IF, and in the spoofed
# scenario the clients' side veth too (SIDE_IF; scripts/lab.sh `clients`).
SIDE_IF=
pass_on() {
	local i
	for i in $FE_IF $SIDE_IF; do
		ip -n "$NS_FE" -d link show dev "$i" | grep -q 'prog/xdp' && continue
		ip -n "$NS_FE" link set dev "$i" xdpdrv obj "$PASS_OBJ" sec xdp ||
			die "couldn't attach the XDP_PASS program to $i"
	done
}
pass_off() { local i; for i in $FE_IF $SIDE_IF; do ip -n "$NS_FE" link set dev "$i" xdpdrv off; done; }

NFT_RULES="table ip xrlfl {
	set synflood {
		type ipv4_addr; size 65536; flags dynamic,timeout; timeout 60s;
	}
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		tcp flags & (syn | ack) == syn update @synflood { ip saddr limit rate over $RATE/second burst $BURST packets } counter drop
	}
}"
IPT_RULE=(PREROUTING -p tcp --syn -m hashlimit --hashlimit-above "$RATE/sec"
	--hashlimit-burst "$BURST" --hashlimit-mode srcip --hashlimit-name xrlfl -j DROP)

# ---- the spoofed-source scenario's defences ------------------------------------

SINK_OBJ=$ROOT/build/bench/flood/sink.bpf.o
# wire_on: the sink on the router's end of the protected veth (see
# sink.bpf.c), its receive work in a threaded-NAPI kthread on GEN_CPU at
# SCHED_FIFO NAPI_PRIO, above the generator and the clients: the SYN-ACKs
# of every defence are the wire's to lose, not the front end's.
wire_on() {
	local p
	ip -n "$NS_ATK" link set dev "$ATK_IF" xdpdrv obj "$SINK_OBJ" sec xdp ||
		die "couldn't attach $SINK_OBJ to $ATK_IF"
	ip netns exec "$NS_ATK" sh -c "echo 1 > /sys/class/net/$ATK_IF/threaded" ||
		die "couldn't turn on threaded NAPI on $ATK_IF"
	for p in $(ps -e -o pid=,comm= | awk -v p="napi/$ATK_IF-" 'index($2, p) == 1 { print $1 }'); do
		{ taskset -pc "$GEN_CPU" "$p" >/dev/null && chrt -f -p "$NAPI_PRIO" "$p"; } ||
			die "couldn't pin kthread $p to CPU $GEN_CPU"
	done
}
wire_off() { ip -n "$NS_ATK" link set dev "$ATK_IF" xdpdrv off; }

# The window scale the front end's listener gives its connections (as the
# kernel computes it: ilog2(max(tcp_rmem[2], rmem_max)) - 15), which a
# SYNPROXY must announce on the listener's behalf: it does not rewrite it.
sp_wscale() {
	# shellcheck disable=SC2016 # awk's own $3
	in_fe awk -v m="$(cat /proc/sys/net/core/rmem_max)" 'NR == 1 { x = $3 > m ? $3 : m
		for (w = -15; x >= 2; w++) x /= 2; print (w < 0 ? 0 : (w > 14 ? 14 : w)) }' /proc/sys/net/ipv4/tcp_rmem
}
# nftables and iptables SYNPROXY as their manuals have it: the SYN to port
# 80 untracked, SYNPROXY answers it with a cookie and, on a valid ACK, opens
# the connection to the listener; conntrack strict (tcp_loose 0) so a stray
# ACK is invalid, not picked up.
sp_nft_rules() {
	cat <<EOF
table ip xrlsp {
	chain pre {
		type filter hook prerouting priority raw; policy accept;
		tcp dport 80 tcp flags & (syn | ack) == syn notrack
	}
	chain in {
		type filter hook input priority filter; policy accept;
		tcp dport 80 ct state invalid,untracked synproxy mss 1460 wscale $(sp_wscale) timestamp sack-perm
		ct state invalid drop
	}
}
EOF
}
IPT_SP_RAW=(PREROUTING -p tcp --dport 80 --tcp-flags "SYN,ACK" SYN -j CT --notrack)
ipt_sp_in() {
	IPT_SP_IN1=(INPUT -p tcp --dport 80 -m conntrack --ctstate "INVALID,UNTRACKED" -j SYNPROXY
		--sack-perm --timestamp --wscale "$(sp_wscale)" --mss 1460)
	IPT_SP_IN2=(INPUT -p tcp --dport 80 -m conntrack --ctstate INVALID -j DROP)
}
ct_loose() {
	ip netns exec "$NS_FE" sysctl -qw "net.netfilter.nf_conntrack_tcp_loose=$1" ||
		die "couldn't set nf_conntrack_tcp_loose"
}

# xrld_up RULE-YAML: xrld on FE_IF (and SIDE_IF), natively, with one rule
# (a list item of xdp.rules, indented), its control plane off the measured CPU.
xrld_up() {
	local i
	pass_off
	{
		printf 'interfaces:\n'
		for i in $FE_IF $SIDE_IF; do printf '  - name: %s\n    mode: native\n' "$i"; done
		printf 'xdp:\n  rules:\n%s\n' "$1"
	} >"$TMP/xrld.yaml"
	"$XRLD" --check "$TMP/xrld.yaml" >/dev/null || die "xrld --check refused the policy"
	bg XRLD_PID nsenter --net="/run/netns/$NS_FE" -- taskset -c "$GEN_CPU" "$XRLD" \
		--config "$TMP/xrld.yaml" --foreground --socket "$TMP/xrld.sock" --pin-dir "$PIN_DIR" \
		>"$TMP/xrld.log" 2>&1
	for _ in $(seq 100); do
		kill -0 "$XRLD_PID" 2>/dev/null || die "xrld exited: $(tail -n 3 "$TMP/xrld.log")"
		ctl status 2>/dev/null | grep -Eq "^$FE_IF +[0-9]+ +native +yes" && break
		sleep 0.1
	done
	for i in $FE_IF $SIDE_IF; do
		for _ in $(seq 50); do
			ctl status 2>/dev/null | grep -Eq "^$i +[0-9]+ +native +yes" && break
			sleep 0.1
		done
		ctl status 2>/dev/null | grep -Eq "^$i +[0-9]+ +native +yes" ||
			die "xrld did not attach $i natively: $(tail -n 3 "$TMP/xrld.log")"
	done
}
xrld_down() {
	kill -TERM "$XRLD_PID" 2>/dev/null
	wait_bg "$XRLD_PID"
	local i
	for i in $FE_IF $SIDE_IF; do ctl detach "$i" >/dev/null || die "xrlctl detach $i failed"; done
	pass_on
}
RULE_SYN="    - name: syn
      match: { proto: tcp, tcp_flags: syn }
      rate: $RATE/s
      burst: $BURST
      action: drop"
# the same limit, for sources that proved themselves (a valid cookie ACK)
RULE_COOKIE="    - name: syn
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: $RATE/s
      burst: $BURST
      syn_cookies: on
      action: drop"

defence_on() {
	case $1 in
	sp_none) pass_on ;;
	sp_nft) pass_on; in_fe nft -f - <<<"$(sp_nft_rules)" || die "nft refused the synproxy ruleset"; ct_loose 0 ;;
	sp_ipt)
		pass_on; ipt_sp_in
		if ! in_fe iptables -t raw -A "${IPT_SP_RAW[@]}" || ! in_fe iptables -A "${IPT_SP_IN1[@]}" ||
		   ! in_fe iptables -A "${IPT_SP_IN2[@]}"; then
			die "iptables refused the SYNPROXY rules"
		fi
		ct_loose 0 ;;
	sp_xrl) xrld_up "$RULE_COOKIE" ;;
	floor)
		pass_off
		ip -n "$NS_FE" link set dev "$FE_IF" xdpdrv obj "$FLOOR_OBJ" sec xdp ||
			die "couldn't attach $FLOOR_OBJ" ;;
	none) pass_on ;;
	nft) pass_on; in_fe nft -f - <<<"$NFT_RULES" || die "nft refused the ruleset" ;;
	iptables) pass_on; in_fe iptables -t raw -A "${IPT_RULE[@]}" || die "iptables refused the rule" ;;
	xrl) xrld_up "$RULE_SYN" ;;
	esac
	repin
}

defence_off() {
	case $1 in
	floor) pass_off; pass_on ;;
	nft) in_fe nft delete table ip xrlfl ;;
	iptables) in_fe iptables -t raw -D "${IPT_RULE[@]}" ;;
	xrl | sp_xrl) xrld_down ;;
	sp_none) ;;
	sp_nft) in_fe nft delete table ip xrlsp; ct_loose 1 ;;
	sp_ipt)
		in_fe iptables -D "${IPT_SP_IN2[@]}"; in_fe iptables -D "${IPT_SP_IN1[@]}"
		in_fe iptables -t raw -D "${IPT_SP_RAW[@]}"; ct_loose 1 ;;
	esac
	repin
}

# ---- one step ----------------------------------------------------------------

IDLE_P99=
FLOOR_MAX=
BEST_SCORE=0 BEST_ROW='' BEST_MSG=''
# idle DEFENCE: the clients without a flood, IDLE_RUNS times; the idle p99
# (and p50) is the median of the runs: one run's p99 is a dozen requests,
# and one neighbour's burst on the shared machine moves it 10x, which then
# moves every step's "p99 <= 2x idle" judgement.
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
idle() {
	local d=$1 f=$TMP/$1.idle i req=0 err=0 p50s='' p99s='' p50
	for ((i = 1; i <= IDLE_RUNS; i++)); do
		legit "$f.$i"
		legit_wait "$f.$i"
		req=$((req + $(kv requests "$LEGIT_OUT"))); err=$((err + $(kv errors "$LEGIT_OUT")))
		p50s+=" $(kv p50_ms "$LEGIT_OUT")"; p99s+=" $(kv p99_ms "$LEGIT_OUT")"
		log "$d idle $i/$IDLE_RUNS: $LEGIT_OUT"
	done
	IDLE_P99=$(median <<<"$p99s"); p50=$(median <<<"$p50s")
	printf '%s\tidle\t0\t0\t0\t0\t0\t0\t%s\t%s\t%s\t%s\t%s\tyes\t%s\n' "$d" "$req" "$err" \
		"$(awk -v e="$err" -v n="$req" 'BEGIN { printf "%.2f", n ? 100 * e / n : 0 }')" \
		"$p50" "$IDLE_P99" "runs=$IDLE_RUNS p99s_ms=${p99s# }" >>"$RES"
	log "$d idle: median p99 $IDLE_P99 ms of ${p99s# }; $err/$req errors"
}

# step DEFENCE PPS [ATTEMPT]: one flood rate. A step during which other
# tasks (not ours) took more than NOISE_MAX % of RX_CPU is run again, up to
# RETRY times: the machine may be shared.
step() {
	local d=$1 pps=$2 attempt=${3:-0} f=$TMP/$1.$2.${3:-0} dur c0 c1 x0 x1 r0 r1 t0 t1
	local gen_pps rx_pps drop_pct busy ns req err errp p50 p99 control why
	local lsecs=$LEGIT_SECS
	[ "$d" = floor ] && lsecs=0    # it drops everything: no clients
	dur=$(awk -v a="$WARM" -v b="$MEAS" -v c="$lsecs" 'BEGIN { print a + b + c + 0.5 }')
	ipids=$(idle_pids "$RX_CPU")
	r0=$(ring_drops)
	gen "$f.gen" "$pps" "${GEN_SRC[@]}" --threads 1 --cpus "$GEN_CPU" \
		--duration "$dur"
	sleep "$WARM"
	c0=$(kcpu); x0=$(xdp_pkts); b0=$(( $(cpu_busy_ns "$RX_CPU") - $(idle_ns $ipids) )); t0=$(now_ns)
	sleep "$MEAS"
	c1=$(kcpu); x1=$(xdp_pkts); b1=$(( $(cpu_busy_ns "$RX_CPU") - $(idle_ns $ipids) )); t1=$(now_ns)
	if [ "$d" = floor ]; then
		LEGIT_OUT="requests=0 errors=0 p50_ms=nan p99_ms=nan"
	else
		legit "$f.legit"
		legit_wait "$f.legit"
	fi
	gen_wait "$f.gen"
	r1=$(ring_drops)
	# offered: what the generator put out, taken or not
	gen_pps=$(( ($(kv sent "$GEN_OUT") + r1 - r0) * 1000 / $(kv duration_ms "$GEN_OUT") ))
	rx_pps=$(( (x1 - x0) * 1000000000 / (t1 - t0) ))
	drop_pct=$(awk -v d=$((r1 - r0)) -v s="$(kv sent "$GEN_OUT")" 'BEGIN { printf "%.2f", s + d ? 100 * d / (s + d) : 0 }')
	busy=$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", 100 * c / t }')
	# anything else that ran on RX_CPU meanwhile (nothing of ours should)
	others=$(awk -v b=$((b1 - b0)) -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { o = 100 * (b - c) / t; printf "%.0f", o < 0 ? 0 : o }')
	ns=$(awk -v c=$((c1 - c0)) -v x=$((x1 - x0)) 'BEGIN { printf "%.0f", x ? c / x : 0 }')
	req=$(kv requests "$LEGIT_OUT"); err=$(kv errors "$LEGIT_OUT")
	errp=$(awk -v e="$err" -v n="$req" 'BEGIN { printf "%.2f", n ? 100 * e / n : 0 }')
	p50=$(kv p50_ms "$LEGIT_OUT"); p99=$(kv p99_ms "$LEGIT_OUT")
	# loss of control: the receive CPU saturated (the kthread >= 90 % busy)
	# or the clients were hurt. Ring drops are shown, not judged: flat out,
	# the generator's bursts overflow the veth's 256 frames whatever the
	# defence, and what a defence took is the received rate
	# (a spoofed-source step is judged on the clients alone: what a
	# defence that answers every SYN does with its CPU is its business)
	why=
	[ "${d#sp_}" = "$d" ] && awk -v b="$busy" 'BEGIN { exit !(b >= 90) }' && why+="kthread ${busy}% busy;"
	if [ "$d" != floor ]; then
		awk -v e="$errp" -v m="$E_MAX" 'BEGIN { exit !(e > m) }' && why+="legit errors ${errp}%;"
		awk -v p="$p99" -v i="$IDLE_P99" -v m="$P_MAX" 'BEGIN { exit !(p > m * i) }' && why+="legit p99 ${p99}ms>2x idle;"
	fi
	control=yes
	[ -n "$why" ] && control="no:${why%;}"
	# Noise: other tasks on RX_CPU; a paced generator short of its rate
	# while the receiver had room (someone else had GEN_CPU); flat out,
	# a generator under half of what it did against the floor (a drop in
	# XDP recycles its pages as fast: xrl and floor only) or under the
	# lowest paced step (stalled). The score ranks attempts: the least
	# noisy one is kept.
	local noise='' score short=0
	[ "$others" -gt "$NOISE_MAX" ] && noise="other tasks took $others% of CPU $RX_CPU"
	if [ "$pps" -gt 0 ] && [ "$gen_pps" -lt $((pps * 9 / 10)) ] &&
	   awk -v b="$busy" 'BEGIN { exit !(b < 80) }'; then
		noise="the generator got only $gen_pps of $pps pps out"
		short=$(( 100 - gen_pps * 100 / pps ))
	fi
	if [ "$pps" -eq 0 ]; then
		if [ "$gen_pps" -lt 100000 ]; then
			noise="the generator got only $gen_pps pps out flat out"
			short=100
		elif [ "$d" = xrl ] && [ -n "$FLOOR_MAX" ] && [ "$gen_pps" -lt $((FLOOR_MAX / 2)) ]; then
			noise="the generator got only $gen_pps pps out flat out ($FLOOR_MAX against the floor)"
			short=$(( 100 - gen_pps * 100 / FLOOR_MAX ))
		fi
	fi
	[ "$d" = floor ] && [ "$pps" -eq 0 ] && FLOOR_MAX=$gen_pps
	score=$(( others + short ))
	local row
	row=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' "$d" "$pps" "$gen_pps" "$rx_pps" \
		"$drop_pct" "$busy" "$others" "$ns" "$req" "$err" "$errp" "$p50" "$p99" "$control" "$LEGIT_OUT")
	local msg="$d step ${pps}pps: generator $gen_pps pps, received $rx_pps pps, ring drops $drop_pct%, kthread $busy% busy (others on CPU $RX_CPU: $others%), $ns ns/packet; clients $err/$req errors, p50 $p50 ms, p99 $p99 ms; control $control"
	if [ "$attempt" -eq 0 ] || [ "$score" -lt "$BEST_SCORE" ]; then
		BEST_SCORE=$score BEST_ROW=$row BEST_MSG=$msg
	fi
	if [ -n "$noise" ] && [ "$attempt" -lt "$RETRY" ] && [ "$RETRY_BUDGET" -gt 0 ]; then
		RETRY_BUDGET=$((RETRY_BUDGET - 1))
		log "$d step ${pps}pps: $noise; measuring again"
		step "$d" "$pps" $((attempt + 1))
		return
	fi
	printf '%s\n' "$BEST_ROW" >>"$RES"
	log "$BEST_MSG"
}

# ---- admitted-rate accuracy ----------------------------------------------------

COUNT_RULES="table ip xrlflcount {
	set syn { type ipv4_addr; flags dynamic; size 65536; counter; }
	chain pre {
		type filter hook prerouting priority 10; policy accept;
		ip saddr 198.19.0.0/16 tcp flags & (syn | ack) == syn add @syn { ip saddr }
	}
}"
# syn_counts: "addr count" for every counted source.
syn_counts() {
	in_fe nft list set ip xrlflcount syn | tr ',{}' '\n' |
		awk '$2 == "counter" { print $1, $4 }'
}
ACC=$OUT/accuracy.tsv
printf 'defence\tcpus\tsources\tduration_ms\texpected_per_source\tadmitted_per_source\tmin\tmax\terror_pct\n' >"$ACC"

# accuracy DEFENCE LABEL NET GEN-ARGS...
accuracy() {
	local d=$1 label=$2 net=$3 f=$TMP/$1.acc.$2 exp ms
	shift 3
	gen "$f.gen" "$ACC_PPS" --sources "$net" --nsrc "$ACC_NSRC" --duration "$ACC_SECS" "$@"
	gen_wait "$f.gen"
	sleep 0.3
	ms=$(kv duration_ms "$GEN_OUT")
	exp=$(awk -v r="$RATE" -v b="$BURST" -v ms="$ms" 'BEGIN { printf "%.1f", b + r * ms / 1000 }')
	syn_counts | awk -v n="${net%/*}" -v k="$ACC_NSRC" 'BEGIN { split(n, p, "."); pre = p[1] "." p[2] "." p[3] "." }
		index($1, pre) == 1 { print $2 }' >"$f.counts"
	read -r n avg min max <<<"$(awk '{ s += $1; if (NR == 1 || $1 < mn) mn = $1; if ($1 > mx) mx = $1 }
		END { printf "%d %.1f %d %d", NR, NR ? s / NR : 0, mn, mx }' "$f.counts")"
	local e
	e=$(awk -v a="$avg" -v x="$exp" 'BEGIN { printf "%+.1f", 100 * (a - x) / x }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$d" "$label" "$n" "$ms" "$exp" "$avg" "$min" "$max" "$e" >>"$ACC"
	log "$d accuracy, $label: $n sources, $(kv sent "$GEN_OUT") SYNs in $ms ms; admitted per source" \
		"$avg (min $min, max $max), expected $BURST + $RATE/s x t = $exp ($e%)"
}

accuracy_runs() {
	local d=$1
	in_fe nft -f - <<<"$COUNT_RULES" || die "couldn't install the nftables counters"
	# one receive CPU: the pinned kthread
	accuracy "$d" "1 CPU" 198.19.$((RANDOM % 100 + 1)).0/24 --threads 1 --cpus "$GEN_CPU"
	# both: threaded NAPI off, so each sender's CPU runs the receive
	ip netns exec "$NS_FE" sh -c "echo 0 > /sys/class/net/$FE_IF/threaded" || die "couldn't turn threaded NAPI off"
	accuracy "$d" "2 CPUs" 198.19.$((RANDOM % 100 + 101)).0/24 --threads 2 --cpus 0,1
	ip netns exec "$NS_FE" sh -c "echo 1 > /sys/class/net/$FE_IF/threaded" || die "couldn't turn threaded NAPI on"
	repin
	in_fe nft delete table ip xrlflcount
}

# ---- xrl: memory and millions of sources ----------------------------------------

BIGF=$OUT/sources.tsv
# xrl_vals < `xrlctl --json stats`: bucket_new, syn passed, syn dropped, seen,
# buckets in use, bucket_insert_fail
xrl_vals() {
	"$PY" -c 'import json, sys
d = json.load(sys.stdin)
g = d["global"]
r = [x for x in d["rules"] if x["name"] == "syn"][0]
print(g["bucket_new"], r["passed"], r["dropped"], g["seen"], d["interfaces"][0]["buckets"], g["bucket_insert_fail"])'
}
big_runs() {
	local show memlock maxent per n f stats0 stats1 new0 new1 inuse0 inuse pass0 pass1 drop0 drop1 seen0 seen1
	local evicted ws we fail0 fail1
	show=$(bpftool map show pinned "$PIN_DIR/$FE_IF/xrl_buckets") || die "no pinned xrl_buckets"
	memlock=$(sed -n 's/.*memlock \([0-9]*\)B.*/\1/p' <<<"$show")
	maxent=$(sed -n 's/.*max_entries \([0-9]*\).*/\1/p' <<<"$show")
	per=$(awk -v m="$memlock" -v e="$maxent" 'BEGIN { printf "%.1f", m / e }')
	MEM_LINE="xrl_buckets: $(sed -n 's/^[0-9]*: \([a-z_]*\) .*/\1/p' <<<"$show"), key $(sed -n 's/.*key \([0-9]*B\).*/\1/p' <<<"$show"),"
	MEM_LINE+=" value $(sed -n 's/.*value \([0-9]*B\).*/\1/p' <<<"$show"), max_entries $maxent, memlock $memlock B = $per B per tracked source"
	log "$MEM_LINE"
	printf 'sources\tsent\tseen_by_xdp\tbucket_new\tbuckets_in_use\tevicted\tinsert_fail\tpassed\tdropped\tlegit_req\tlegit_err\tlegit_refused_by_xrl\tlegit_p99_ms\n' >"$BIGF"
	# What xrl admits of these floods (every source's first SYN) is dropped
	# right after XDP, before TCP: the test is about xrl's table, and SYN
	# cookies for 10 million sources would hold the receive path to ~200k
	# pps (then most of the flood would never reach XDP)
	in_fe nft -f - <<<"table ip xrlflbig { chain pre { type filter hook prerouting priority raw; policy accept; ip saddr 11.0.0.0/8 drop; }; }" ||
		die "couldn't install the nftables drop for 11.0.0.0/8"
	for n in $BIG_SOURCES; do
		f=$TMP/big.$n
		stats0=$(ctl --json stats) || die "xrlctl stats failed"
		# one SYN from each of n sources of 11.0.0.0/8, the clients meanwhile
		gen "$f.gen" "$BIG_RATE" --sources 11.0.0.0/8 --nsrc "$n" --count "$n" --threads 1 --cpus "$GEN_CPU"
		legit "$f.legit" --duration 120 --until-gone "$GEN_PID"
		legit_wait "$f.legit"
		gen_wait "$f.gen"
		sleep 0.5
		ws=$(now_ns)
		stats1=$(ctl --json stats) || die "xrlctl stats failed"
		we=$(now_ns)
		read -r new0 pass0 drop0 seen0 inuse0 fail0 <<<"$(xrl_vals <<<"$stats0")"
		read -r new1 pass1 drop1 seen1 inuse fail1 <<<"$(xrl_vals <<<"$stats1")"
		# no bucket is ever deleted here: what was created and is gone was evicted
		evicted=$(( (new1 - inuse) - (new0 - inuse0) ))
		# refusals of the clients' addresses, from xrld's samples
		local refused
		refused=$(ctl --json top -n 1000 2>/dev/null | "$PY" -c 'import json,sys
try:
    d = json.load(sys.stdin)
except Exception:
    print("?"); sys.exit(0)
print(sum(int(r["refused"]) for r in d if r["source"].startswith("10.211.")))')
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$(kv sent "$GEN_OUT")" $((seen1 - seen0)) \
			$((new1 - new0)) "$inuse" "$evicted" $((fail1 - fail0)) $((pass1 - pass0)) $((drop1 - drop0)) \
			"$(kv requests "$LEGIT_OUT")" "$(kv errors "$LEGIT_OUT")" "$refused" "$(kv p99_ms "$LEGIT_OUT")" >>"$BIGF"
		log "xrl, $n distinct sources: $GEN_OUT; XDP saw $((seen1 - seen0)), new buckets $((new1 - new0))," \
			"in use $inuse (xrlctl stats took $(( (we - ws) / 1000000 )) ms), evicted $evicted," \
			"insert failures $((fail1 - fail0));" \
			"passed $((pass1 - pass0)), dropped $((drop1 - drop0)); clients: $LEGIT_OUT;" \
			"client prefixes refused by xrl: $refused"
	done
	in_fe nft delete table ip xrlflbig
}

# ---- R: xrl against nftables, interleaved ------------------------------------

# The steps above measure one defence after the other, a minute or more
# apart; on a shared VM the receive cost of one code path moves by up to 2x
# in that time. R is therefore measured again in COST_ROUNDS rounds of the
# floor, nftables and xrl back to back (the order rotates every round),
# each a flood as fast as the generator goes with nothing else running; R
# is the median of the rounds' xrl / nftables ratios. The floor gives the
# same ratio net of what the lab's "NIC" itself costs.
COSTF=$OUT/cost_rounds.tsv
cost_once() {
	local d=$1 r=$2 file=$3 f=$TMP/cost.$1.$2 c0 c1 x0 x1 t0 t1 b0 b1 ipids
	defence_on "$d"
	ipids=$(idle_pids "$RX_CPU")
	gen "$f.gen" 0 "${GEN_SRC[@]}" --threads 1 --cpus "$GEN_CPU" \
		--duration "$(awk -v a="$WARM" -v b="$MEAS" 'BEGIN { print a + b + 0.3 }')"
	sleep "$WARM"
	c0=$(kcpu); x0=$(xdp_pkts); b0=$(( $(cpu_busy_ns "$RX_CPU") - $(idle_ns $ipids) )); t0=$(now_ns)
	sleep "$MEAS"
	c1=$(kcpu); x1=$(xdp_pkts); b1=$(( $(cpu_busy_ns "$RX_CPU") - $(idle_ns $ipids) )); t1=$(now_ns)
	gen_wait "$f.gen"
	defence_off "$d"
	COST_NS=$(awk -v c=$((c1 - c0)) -v x=$((x1 - x0)) 'BEGIN { printf "%.0f", x ? c / x : 0 }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$d" "$(( (x1 - x0) * 1000000000 / (t1 - t0) ))" \
		"$(awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", 100 * c / t }')" \
		"$(awk -v b=$((b1 - b0)) -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { o = 100 * (b - c) / t; printf "%.0f", o < 0 ? 0 : o }')" \
		"$COST_NS" >>"$file"
}
# cost_rounds FILE ROUNDS DEFENCE...: ROUNDS rounds of the DEFENCEs back to
# back (the order rotating), flat out, no clients.
cost_rounds() {
	local file=$1 rounds=$2 r i d line
	shift 2
	local order=("$@") n=$#
	printf 'round\tdefence\trx_pps\tbusy_pct\tothers_pct\tns_per_pkt\n' >"$file"
	for ((r = 1; r <= rounds; r++)); do
		line=
		for ((i = 0; i < n; i++)); do
			d=${order[(i + r) % n]}
			cost_once "$d" "$r" "$file"
			line+="$d $COST_NS, "
		done
		log "cost round $r (ns/packet, flat out, no clients): ${line%, }"
	done
}

# ---- the run ------------------------------------------------------------------

MEM_LINE=
for d in $DEFENCES; do
	log "defence $d"
	defence_on "$d"
	[ "$d" != floor ] && idle "$d"
	for s in $STEPS; do
		step "$d" "$s"
	done
	[ "$d" != none ] && [ "$d" != floor ] && accuracy_runs "$d"
	[ "$d" = xrl ] && [ "$BIG" = 1 ] && big_runs
	defence_off "$d"
done

has() { [[ " $DEFENCES " == *" $1 "* ]]; }
if has floor && has nft && has xrl; then cost_rounds "$COSTF" "$COST_ROUNDS" floor nft xrl; fi

# ---- the spoofed-source scenario ------------------------------------------------

SPCOSTF=$OUT/spoofed_cost.tsv
SP_XRL_LINE=
# sp_xrl_counters: what xrl did, from `xrlctl --json stats`
sp_xrl_counters() {
	ctl --json stats | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
g = d["global"]
print(" ".join("%s=%s" % (k, g.get(k, "?")) for k in ("cookies_sent", "cookies_valid", "cookies_bad", "cookie_primers", "cookie_fallback", "bucket_new")),
      "buckets_in_use=%s" % d["interfaces"][0]["buckets"])'
}
if [ "$SPOOF" = 1 ]; then
	GEN_SRC=(--sources "$SP_NET" --random)
	wire_on
	if [ "$SP_SIDE" = 1 ]; then
		# every defence goes on the side veth too (pass_on / xrld_up)
		SIDE_IF=$FE_SIDE_IF
		pass_on
		"$LAB" clients side || die "couldn't route the clients over the side veth"
		repin
	fi
	for d in $SP_DEFENCES; do
		log "defence $d (a new random source of $SP_NET for every SYN)"
		defence_on "$d"
		idle "$d"
		for s in $SP_STEPS; do
			step "$d" "$s"
		done
		if [ "$d" = sp_xrl ]; then
			SP_XRL_LINE=$(sp_xrl_counters) || die "xrlctl stats failed"
			log "xrl after the spoofed steps: $SP_XRL_LINE"
		fi
		defence_off "$d"
	done
	[ "$(in_fe cat /proc/sys/net/ipv4/tcp_syncookies)" = 1 ] ||
		die "tcp_syncookies is not back to 1 after xrl's detach"
	has_sp() { [[ " $SP_DEFENCES " == *" $1 "* ]]; }
	if has_sp sp_nft && has_sp sp_xrl && [ "$SP_COST_ROUNDS" -gt 0 ]; then
		# shellcheck disable=SC2046 # the defences, one word each
		cost_rounds "$SPCOSTF" "$SP_COST_ROUNDS" $(printf '%s\n' $SP_DEFENCES)
	fi
	wire_off
	if [ "$SP_SIDE" = 1 ]; then
		"$LAB" clients router || die "couldn't route the clients back over the router"
		SIDE_IF=
	fi
	repin
	GEN_SRC=(--sources "$FLOOD_NET" --nsrc "$NSRC")
fi

# ---- results ------------------------------------------------------------------------

"$PY" "$HERE/report.py" --results "$RES" --accuracy "$ACC" --sources "$BIGF" --cost "$COSTF" \
	--memory "$MEM_LINE" --generator "$(basename "$XRL_GEN")" --kernel "$KERNEL" \
	--limits "$R_MAX" "$E_MAX" "$P_MAX" --spoofed-cost "$SPCOSTF" --spoofed-xrl "$SP_XRL_LINE" \
	--spoofed-limits "$X_MIN" "$Y_MAX" "$E_MAX" --cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)" \
	--load "$LOAD0" --command "$CMDLINE" --side "$SP_SIDE" --idle-runs "$IDLE_RUNS" --out "$OUT" >"$OUT/summary.txt"
rc=$?
[ "$rc" -le 1 ] || die "report.py failed"
if [ -n "${DEFENCES// /}" ]; then
	gnuplot -e "dir='$OUT'" "$HERE/flood.gp" 2>"$TMP/gnuplot.err" || die "gnuplot failed: $(cat "$TMP/gnuplot.err")"
fi
if [ "$SPOOF" = 1 ]; then
	gnuplot -e "dir='$OUT'; kind='spoofed'" "$HERE/flood.gp" 2>"$TMP/gnuplot.err" ||
		die "gnuplot failed: $(cat "$TMP/gnuplot.err")"
fi
if [ "$DOCS" = 1 ]; then
	mkdir -p "$ROOT/docs/img"
	[ -e "$OUT/flood.png" ] && cp "$OUT/flood.png" "$ROOT/docs/img/flood.png"
	[ "$SPOOF" = 1 ] && cp "$OUT/flood-spoofed.png" "$ROOT/docs/img/flood-spoofed.png"
	"$PY" "$HERE/report.py" --update-docs "$ROOT/docs/benchmarks.md" --out "$OUT" ||
		die "couldn't update docs/benchmarks.md"
fi
log "done; results in $OUT"
cat "$OUT/summary.txt"
exit "$rc"
