#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# scripts/bench/http.sh - decisions per second of the identity tier, against
# nginx limit_req and against Redis running the limiter's own script.
#
#   sudo scripts/bench/http.sh
#
# One run of ROUNDS rounds, every case once a round for the same duration
# (DUR seconds, after a 1 s warm-up), wrk -t1 --latency with
# scripts/bench/http/auth.lua, CONNS connections in a, b and e, RCONNS in
# c and d (and redis-benchmark's clients in f):
#
#   a  xrld, memory backend, allowed   /v1/auth, X-Forwarded-Uri /open/x
#   b  xrld, memory backend, refused   /v1/auth, X-Forwarded-Uri /shut/x, one
#                                      exhausted key (1/h, burst 1): all 429
#   c  xrld, redis backend, allowed    the decisions queued while a batch
#                                      is out go as one EVALSHA
#   d  xrld, redis backend, refused    the over-limit cache answers, no Redis
#   e  nginx limit_req, allowed (/open) and refused (/shut, 429)
#   l  xrld, memory backend, a concurrency rule's acquire + release: /v1/auth
#      (X-Forwarded-Uri /conc/x) takes a slot, POST /v1/release gives it
#      back (scripts/bench/http/lease.lua); counted in pairs: a pair is two
#      HTTP requests
#   m  the same, redis backend (the acquire rides the batched EVALSHA, the
#      release rides the next one)
#   l0, m0  their baselines: the same wrk script (lease.lua) for rate
#      decisions (/open/x: no lease in the answers, so every request is a
#      decision), memory and redis: wrk pays the same per answer, and the
#      server sees the same request rate, as in l and m
#   f  redis-benchmark -P 16: EVALSHA of the same Lua script (extracted from
#      user/http/redis/gcra.lua at run time, checked byte for byte against the one
#      xrld loads), one decision a call, keys and arguments shaped like
#      xrld's
#   g  xrld, redis-cluster backend, allowed: as c, on a Redis Cluster of 3
#      masters and 3 replicas (all six on REDIS_CPU); the keys of c spread
#      over the masters' slots, one call a node (its node script), the
#      nodes in turn
#   h  xrld, redis backend, allowed: as c, on a standalone Redis with one
#      replica (both on REDIS_CPU): the cluster's replication cost, once
#   g0 as g on a cluster of 3 masters and no replica: against c, nothing
#      copied on either side
#   g1 as g on a cluster of one master serving every slot: the cluster path
#      (xrld's cluster client, the node script, Redis in cluster mode) with
#      as many Redis processes as c
#   k  no xrld: colocate.py sends the same calls of gcra.lua (21 decisions
#      each, c's batch) to one standalone Redis and to three in turn, all
#      on REDIS_CPU: what processes taking turns on one CPU cost Redis
#      (cold caches), which g0 and g pay on this machine and a fleet, a
#      master a host, does not
#
# Why two concurrencies: a, b and e run at 60-75k decisions/s, where one wrk
# thread on one CPU is already 90-98 % busy at 32 connections; with more,
# they would measure wrk's parsing of each server's answers rather than
# the servers. c runs at ~30k/s, where wrk has room, and xrld's Redis path
# batches the decisions that arrive while a call is out: its batch size,
# and so what a decision costs Redis, grows with the requests in flight
# (~11 a call at 32, ~20 at 64, ~40 at 128). A front end in a flood has far
# more than 32 requests in flight; RCONNS=32 measures the low end (c/f
# 0.48-0.56 on the 2-vCPU machine of docs/benchmarks.md, 0.53-0.61 at 64).
#
# Fairness on 2 CPUs: each server runs on SERVER_CPU only (taskset), each
# load generator on CLIENT_CPU only; xrld has http.threads THREADS and nginx
# worker_processes THREADS. Redis, part of the system under test in c and d
# and the subject of f, also runs on SERVER_CPU (REDIS_CPU): in c and d xrld
# and Redis share the one server CPU, as Redis alone has it in f.
#
# Ratios and requirements (the run exits 1 when one is missed), each the
# median of its rounds (a round runs the cases compared back to back, even
# rounds in reverse order: one round alone is at the mercy of a neighbour
# taking CPU 0 for a few seconds):
#   memory_vs_nginx     a / e_allowed   >= 0.8   (goal 1.0)
#   redis_vs_redisbench c / f           >= 0.5
#   refused_vs_allowed  d / c           >= 1.0   (the over-limit cache)
#   lease_vs_decision   l / l0, m / m0  <= 2.0  by server CPU time per pair
#                                         over CPU time per decision: what a
#                                         slot costs against a rate decision.
#                                         Against l0 and m0, not a and c, and
#                                         on CPU time: lease.lua reads every
#                                         answer's headers in Lua, so wrk sends
#                                         fewer requests at a time than with
#                                         auth.lua, and xrld's loop serves
#                                         fewer a wake-up (more CPU each)
#   cluster_cost_vs_standalone  CPU(g1) / CPU(c) <= 1.3: what the cluster
#      path costs a decision, xrld and Redis together, against xrld and
#      the one redis-server of c: the same number of Redis processes, no
#      copies (judged on CPU time, not decisions/s). Why g1 and not g0 or
#      g: on this machine's one server CPU, three masters take turns with
#      xrld, and k measures in the same run that taking turns alone costs
#      Redis ~1.2x with the calls unchanged; a fleet has a master a host.
#   reported, with what they mix in: g0 / c (three masters: + the split
#      of a batch three ways, which k's split measures, + taking turns),
#      g / h (3+3 against 1+1, every write copied once on both sides),
#      g / c (six processes, three of them replicas, against one without:
#      the copies are HA's price, which h pays too), k's colocation and
#      split; c, g, g0, g1 and h report their CPU by part (xrld, masters,
#      replicas)
# b / a is reported, not judged, next to nginx's e_refused / e_allowed: the
# memory backend has no over-limit cache (its store is what one would be),
# a refusal there is the same lookup as an admission with a larger answer,
# and b / a sits at 1.0 give or take this machine's noise, as nginx's does.
# Each case also reports the user + system CPU time of its server processes
# per decision (/proc/PID/stat), which neighbours on a shared machine move
# much less than decisions/s, and the ratios computed from it.
# The last two lines of output:
#   cluster_cost_vs_standalone=G1/C cluster_3_masters=G0/C cluster_3x2_vs_replicated=G/H
#     cluster_3x2_vs_unreplicated=G/C colocation=K split=S
#   memory_vs_nginx=X redis_vs_redisbench=Y refused_vs_allowed=Z cluster_path_vs_standalone=G1/C
#   (before stop 19 that last key was cluster_cpu_vs_standalone, then G/C)
#
# Environment: DUR (6), CONNS (32), RCONNS (64), THREADS (1), NKEYS (1024),
# SERVER_CPU (0), CLIENT_CPU (1), REDIS_CPU (SERVER_CPU), RB_SECONDS (DUR,
# the target length of f), ROUNDS (5), KEEP=1 keeps the temporary directory (logs),
# XRLD=PATH measures that binary instead of building build/xrld (to compare
# a patched copy; its Lua script must still be user/http/redis/gcra.lua),
# CASES="h g c g1 g0 k" runs only those cases (to measure a pair again).
# Exit: 0 all requirements met, 1 one missed, 2 the run itself failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# stop_pids and free_port, as the tests use them
# shellcheck source=scripts/lib/common.sh
. "$ROOT/scripts/lib/common.sh"
HERE=$ROOT/scripts/bench/http
XRLD_BIN=${XRLD:-}
XRLD=${XRLD:-$ROOT/build/xrld}

DUR=${DUR:-6}
CONNS=${CONNS:-32}
RCONNS=${RCONNS:-64}
THREADS=${THREADS:-1}
NKEYS=${NKEYS:-1024}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
REDIS_CPU=${REDIS_CPU:-$SERVER_CPU}
RB_SECONDS=${RB_SECONDS:-$DUR}
ROUNDS=${ROUNDS:-5}

die() { printf 'http.sh: %s\n' "$*" >&2; exit 2; }
say() { printf '%s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root: sudo $0"
case $ROUNDS in ''|*[!0-9]*|0) die "ROUNDS: expected a whole number >= 1, got '$ROUNDS'" ;; esac
for v in CONNS RCONNS; do
	case ${!v} in ''|*[!0-9]*|0) die "$v: expected a whole number >= 1, got '${!v}'" ;; esac
done
for t in wrk nginx redis-server redis-cli redis-benchmark taskset curl awk sha1sum ss python3; do
	command -v "$t" >/dev/null || die "$t is missing (scripts/install-deps.sh)"
done

# ---- cleanup: everything started here is stopped by the trap ----------------

T=$(mktemp -d /tmp/xrl-bench-http.XXXXXX)
PINS=/sys/fs/bpf/xrl-bench-http-$$
PIDS=()
CHILD=
FAILED=1
KEEP_SAID=

# shellcheck disable=SC2317 # run by the trap
cleanup() {
	trap - EXIT INT TERM
	[ -z "$CHILD" ] || kill -TERM "$CHILD" 2>/dev/null || true
	# (in a || list, set -e does not stop stop_pids at a pid already gone)
	[ ${#PIDS[@]} -eq 0 ] || stop_pids "${PIDS[@]}" || true
	free_ports_done
	for d in "$PINS-mem" "$PINS-redis" "$PINS-redisr" "$PINS-cluster"; do
		[ ! -d "$d" ] || rmdir "$d" 2>/dev/null || true
	done
	if [ "${KEEP:-0}" = 1 ] || [ "$FAILED" = 1 ]; then
		[ -n "$KEEP_SAID" ] || say "logs kept in $T"
	else
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# run OUT CMD...: CMD with its output into OUT, in the background, waited
# for: a signal then stops the run at once (bash runs a trap only once the
# foreground command is done).
run() {
	local rc=0 out=$1
	shift
	"$@" >"$out" 2>&1 &
	CHILD=$!
	wait "$CHILD" || rc=$?
	CHILD=
	return "$rc"
}

# wait_http URL: up to 5 s for an answer.
wait_http() {
	for _ in $(seq 50); do
		curl -s -o /dev/null --max-time 1 "$1" && return 0
		sleep 0.1
	done
	return 1
}

# ---- build and start ---------------------------------------------------------

if [ -z "$XRLD_BIN" ]; then
	say "building build/xrld"
	make -s -C "$ROOT" build/xrld >/dev/null || die "make build/xrld failed"
else
	say "using $XRLD (not built)"
fi
[ -x "$XRLD" ] || die "$XRLD is missing"

P_MEM='' P_RED='' P_NGX='' P_REDIS=''
free_port P_MEM || die "no free port found"
free_port P_RED || die "no free port found"
free_port P_NGX || die "no free port found"
free_port P_REDIS || die "no free port found"

# wait_pong PORT...: each redis-server on 127.0.0.1:PORT answers PING
# within 5 s, or the run stops
wait_pong() {
	local p
	for p in "$@"; do
		for _ in $(seq 50); do
			[ "$(redis-cli -h 127.0.0.1 -p "$p" PING 2>/dev/null)" = PONG ] && continue 2
			sleep 0.1
		done
		die "redis-server on port $p did not start (logs in $T)"
	done
}

# Redis: no persistence, nothing but this run's keys.
taskset -c "$REDIS_CPU" redis-server --port "$P_REDIS" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$T" >"$T/redis.log" 2>&1 &
PIDS+=($!)
PID_REDIS=$!
RCLI=(redis-cli -h 127.0.0.1 -p "$P_REDIS")
wait_pong "$P_REDIS"

declare -A PID_XRLD
start_xrld() { # NAME PORT BACKEND
	local cut=()
	# no concurrency rules on a cluster (a config error): rule conc, the
	# template's last, goes
	[[ $3 == redis-cluster://* ]] && cut=(-e '/# the concurrency cases/,$d')
	sed -e "s|@PORT@|$2|" -e "s|@BACKEND@|$3|" -e "s|@THREADS@|$THREADS|" "${cut[@]}" \
		"$HERE/xrld.yaml.in" >"$T/xrld-$1.yaml"
	taskset -c "$SERVER_CPU" "$XRLD" --config "$T/xrld-$1.yaml" --foreground \
		--socket "$T/xrld-$1.sock" --pin-dir "$PINS-$1" >"$T/xrld-$1.log" 2>&1 &
	PIDS+=($!)
	PID_XRLD[$1]=$!
	wait_http "http://127.0.0.1:$2/healthz" || die "xrld ($1) did not start ($T/xrld-$1.log)"
}
start_xrld mem "$P_MEM" memory
start_xrld redis "$P_RED" "redis://127.0.0.1:$P_REDIS"

# h: c again on a standalone Redis with one replica, for a comparison with
# the cluster at the same replication cost (every write also copied once).
P_REDM='' P_REDR='' P_RH=''
free_port P_REDM || die "no free port found"
free_port P_REDR || die "no free port found"
free_port P_RH || die "no free port found"
taskset -c "$REDIS_CPU" redis-server --port "$P_REDM" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$T" >"$T/redis-m.log" 2>&1 &
PIDS+=($!)
PID_REDM=$!
taskset -c "$REDIS_CPU" redis-server --port "$P_REDR" --bind 127.0.0.1 --save '' \
	--appendonly no --dir "$T" --replicaof 127.0.0.1 "$P_REDM" >"$T/redis-r.log" 2>&1 &
PIDS+=($!)
PID_REDR=$!
for _ in $(seq 100); do
	redis-cli -p "$P_REDR" INFO replication 2>/dev/null | grep -q '^master_link_status:up' && break
	sleep 0.1
done
redis-cli -p "$P_REDR" INFO replication | grep -q '^master_link_status:up' ||
	die "the replica of the standalone Redis did not sync ($T/redis-r.log)"
start_xrld redisr "$P_RH" "redis://127.0.0.1:$P_REDM"

# Redis Cluster: make_cluster NAME N REPLICAS starts N redis-server
# --cluster-enabled yes on REDIS_CPU (their bus ports given: a bus port of
# +10000 may be taken) and makes a cluster of them with REPLICAS replicas
# a master; into CL_PORTS, CL_PIDS, CL_MASTERS and CL_REPLICAS (csv of
# pids, for CPU time by part).
make_cluster() {
	local name=$1 n=$2 reps=$3 i rp rbus p ok
	CL_PORTS=() CL_PIDS=() CL_MASTERS='' CL_REPLICAS=''
	for ((i = 0; i < n; i++)); do
		rp="" rbus=""
		free_port rp || die "no free port found"
		free_port rbus || die "no free port found"
		mkdir -p "$T/$name$i"
		taskset -c "$REDIS_CPU" redis-server --port "$rp" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$T/$name$i" --cluster-enabled yes --cluster-port "$rbus" \
			--cluster-config-file nodes.conf >"$T/$name$i.log" 2>&1 &
		PIDS+=($!)
		CL_PIDS+=($!)
		CL_PORTS+=("$rp")
	done
	wait_pong "${CL_PORTS[@]}"
	if [ "$n" = 1 ]; then # redis-cli --cluster create wants 3 masters
		redis-cli -p "${CL_PORTS[0]}" CLUSTER ADDSLOTSRANGE 0 16383 >"$T/$name-create.log" 2>&1 ||
			die "CLUSTER ADDSLOTSRANGE failed ($T/$name-create.log)"
	else
		# shellcheck disable=SC2046 # one word a node
		redis-cli --cluster create $(printf '127.0.0.1:%s ' "${CL_PORTS[@]}") --cluster-replicas "$reps" \
			--cluster-yes >"$T/$name-create.log" 2>&1 || die "redis-cli --cluster create failed ($T/$name-create.log)"
	fi
	for _ in $(seq 100); do
		ok=1
		for p in "${CL_PORTS[@]}"; do
			redis-cli -p "$p" cluster info | grep -q '^cluster_state:ok' || ok=0
		done
		[ "$ok" = 1 ] && break
		sleep 0.2
	done
	[ "$ok" = 1 ] || die "the Redis Cluster $name did not reach cluster_state:ok"
	for ((i = 0; i < n; i++)); do
		if [ "$(redis-cli -p "${CL_PORTS[i]}" ROLE | head -1 | tr -d '\r')" = master ]; then
			CL_MASTERS+=${CL_MASTERS:+,}${CL_PIDS[i]}
		else
			CL_REPLICAS+=${CL_REPLICAS:+,}${CL_PIDS[i]}
		fi
	done
}
# g: 3 masters and 3 replicas
make_cluster rc 6 1
# shellcheck disable=SC2034 # PIDS_RC is read through cluster_case's nameref
RC_PORTS=("${CL_PORTS[@]}") PIDS_RC=("${CL_PIDS[@]}") RC_MASTERS=$CL_MASTERS RC_REPLICAS=$CL_REPLICAS
P_CL=''
free_port P_CL || die "no free port found"
start_xrld cluster "$P_CL" "redis-cluster://127.0.0.1:${RC_PORTS[0]},127.0.0.1:${RC_PORTS[1]}"
# g0: 3 masters, no replica (the cluster path against c, each without copies)
make_cluster r0c 3 0
R0_PORTS=("${CL_PORTS[@]}") PIDS_R0=("${CL_PIDS[@]}")
P_CL0=''
free_port P_CL0 || die "no free port found"
start_xrld cluster0 "$P_CL0" "redis-cluster://127.0.0.1:${R0_PORTS[0]},127.0.0.1:${R0_PORTS[1]}"
# k: three standalone Redis on REDIS_CPU, for what taking turns costs
PK_PORTS=() PK_PIDS=()
for i in 1 2 3; do
	pk=''
	free_port pk || die "no free port found"
	taskset -c "$REDIS_CPU" redis-server --port "$pk" --bind 127.0.0.1 --save '' --appendonly no \
		--dir "$T" >"$T/redis-k$i.log" 2>&1 &
	PIDS+=($!)
	PK_PIDS+=($!)
	PK_PORTS+=("$pk")
done
wait_pong "${PK_PORTS[@]}"
# g1: one master with every slot: the cluster path (xrld's cluster client,
# the node script, Redis in cluster mode) with as many Redis processes as c
make_cluster r1c 1 0
R1_PORTS=("${CL_PORTS[@]}") PIDS_R1=("${CL_PIDS[@]}")
P_CL1=''
free_port P_CL1 || die "no free port found"
start_xrld cluster1 "$P_CL1" "redis-cluster://127.0.0.1:${R1_PORTS[0]}"

mkdir -p "$T/nginx/tmp"
sed -e "s|@PORT@|$P_NGX|" -e "s|@WORKERS@|$THREADS|" -e "s|@DIR@|$T/nginx|g" \
	"$HERE/nginx.conf.in" >"$T/nginx/nginx.conf"
taskset -c "$SERVER_CPU" nginx -p "$T/nginx" -e "$T/nginx/error.log" -c "$T/nginx/nginx.conf" \
	>"$T/nginx/out.log" 2>&1 &
PIDS+=($!)
PID_NGINX=$!
wait_http "http://127.0.0.1:$P_NGX/healthz" || die "nginx did not start ($T/nginx/error.log)"
mapfile -t PIDS_NGINX < <(echo "$PID_NGINX"; pgrep -P "$PID_NGINX")

# ---- the Lua script, user/http/redis/gcra.lua --------------------------------

# The exact bytes xrld embeds and loads (the Makefile's gcra.lua.h).
cp "$ROOT/user/http/redis/gcra.lua" "$T/gcra.lua"
[ -s "$T/gcra.lua" ] || die "user/http/redis/gcra.lua is missing or empty"
SHA=$(sha1sum "$T/gcra.lua" | cut -c1-40)

# ---- measuring ---------------------------------------------------------------

declare -A RPS P50 P99 NON2XX REQS CPU

# cpu_ticks PID...: user + system time of those processes (all threads)
# and of their children (xrld's identity process does an xrld's HTTP work).
cpu_ticks() {
	local p sum=0
	# each once: nginx's workers are both listed and its master's children
	for p in $(printf '%s\n' "$@" $(for p in "$@"; do pgrep -P "$p"; done) | sort -u); do
		[ -r "/proc/$p/stat" ] || continue
		sum=$((sum + $(sed 's/.*) //' "/proc/$p/stat" | awk '{ print $12 + $13 }')))
	done
	echo "$sum"
}
HZ=$(getconf CLK_TCK)

# field NAME LINE: the number after NAME= in LINE.
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<" $2"; }

# wrk_case ID CONNS PORT PATH URI NKEYS EXPECT(allowed|refused) SERVER-PID...
# (the servers whose CPU time a decision costs)
wrk_case() {
	local id=$1 conns=$2 port=$3 path=$4 uri=$5 nkeys=$6 expect=$7 line t0 t1
	local url="http://127.0.0.1:$port$path"
	shift 7

	run "$T/wrk-$id-warmup.txt" taskset -c "$CLIENT_CPU" wrk -t1 -c"$conns" -d1s \
		-s "$HERE/auth.lua" "$url" -- "$path" "$uri" "$nkeys" || die "wrk failed ($id, warm-up)"
	t0=$(cpu_ticks "$@")
	parts_ticks PT0
	run "$T/wrk-$id.txt" taskset -c "$CLIENT_CPU" wrk -t1 -c"$conns" -d"${DUR}s" --latency \
		-s "$HERE/auth.lua" "$url" -- "$path" "$uri" "$nkeys" || die "wrk failed ($id): $T/wrk-$id.txt"
	t1=$(cpu_ticks "$@")
	parts_ticks PT1
	line=$(grep '^RESULT ' "$T/wrk-$id.txt") || die "no RESULT from wrk ($id): $T/wrk-$id.txt"
	local requests duration_us p50_us p99_us non2xx sockerr
	requests=$(field requests "$line")
	duration_us=$(field duration_us "$line")
	p50_us=$(field p50_us "$line")
	p99_us=$(field p99_us "$line")
	non2xx=$(field non2xx "$line")
	sockerr=$(field sockerr "$line")
	[ "$sockerr" = 0 ] || die "$id: $sockerr socket errors ($T/wrk-$id.txt)"
	[ "$requests" -gt 0 ] || die "$id: no requests completed"
	if [ "$expect" = allowed ] && [ "$non2xx" != 0 ]; then
		die "$id: $non2xx of $requests answers were not 200 on the allowed path"
	fi
	if [ "$expect" = refused ] && [ "$non2xx" != "$requests" ]; then
		die "$id: only $non2xx of $requests answers were refusals on the refused path"
	fi
	REQS[$id]=$requests
	NON2XX[$id]=$non2xx
	RPS[$id]=$(awk -v r="$requests" -v d="$duration_us" 'BEGIN { printf "%.0f", r * 1e6 / d }')
	P50[$id]=$(awk -v u="$p50_us" 'BEGIN { printf "%.2f", u / 1000 }')
	P99[$id]=$(awk -v u="$p99_us" 'BEGIN { printf "%.2f", u / 1000 }')
	CPU[$id]=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v n="$requests" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
	say "  $id: ${RPS[$id]} decisions/s, p50 ${P50[$id]} ms, p99 ${P99[$id]} ms, server CPU ${CPU[$id]} us/decision"
	parts_report "$id" "$requests"
}

# PARTS (set by a step around its wrk_case): "NAME=PID,PID NAME=PID ...",
# the processes whose CPU time per decision is reported one group at a time
# (xrld, masters, replicas), over the same interval as the case's total.
PARTS=''
declare -A PCPU
# parts_ticks ARRAY: each group's ticks now, into the associative ARRAY
parts_ticks() {
	local -n out=$1
	local g
	out=()
	for g in $PARTS; do
		# shellcheck disable=SC2046 # the pids, one word each
		out[${g%%=*}]=$(cpu_ticks $(tr , ' ' <<<"${g#*=}"))
	done
}
declare -A PT0 PT1
parts_report() { # ID REQUESTS
	local g n line=''
	for g in $PARTS; do
		n=${g%%=*}
		PCPU[$1.$n]=$(awk -v t=$((PT1[$n] - PT0[$n])) -v hz="$HZ" -v r="$2" \
			'BEGIN { printf "%.1f", t * 1e6 / hz / r }')
		line+=" $n ${PCPU[$1.$n]}"
	done
	[ -z "$line" ] || say "  $1: CPU us/decision by part:$line"
}

# lease_case ID CONNS PORT URI SERVER-PID...: acquire + release pairs of
# rule conc (lease.lua, URI /conc/x); RPS is pairs/s and CPU is per pair.
# With URI /open/x, rate decisions by the same script (per decision).
lease_case() {
	local id=$1 conns=$2 port=$3 uri=$4 line t0 t1 requests duration_us acquires non2xx
	local url="http://127.0.0.1:$port/v1/auth"
	shift 4

	run "$T/wrk-$id-warmup.txt" taskset -c "$CLIENT_CPU" wrk -t1 -c"$conns" -d1s \
		-s "$HERE/lease.lua" "$url" -- "$uri" "$NKEYS" || die "wrk failed ($id, warm-up)"
	t0=$(cpu_ticks "$@")
	run "$T/wrk-$id.txt" taskset -c "$CLIENT_CPU" wrk -t1 -c"$conns" -d"${DUR}s" --latency \
		-s "$HERE/lease.lua" "$url" -- "$uri" "$NKEYS" || die "wrk failed ($id): $T/wrk-$id.txt"
	t1=$(cpu_ticks "$@")
	line=$(grep '^RESULT ' "$T/wrk-$id.txt") || die "no RESULT from wrk ($id): $T/wrk-$id.txt"
	requests=$(field requests "$line")
	duration_us=$(field duration_us "$line")
	acquires=$(field acquires "$line")
	non2xx=$(field non2xx "$line")
	[ "$(field sockerr "$line")" = 0 ] || die "$id: socket errors ($T/wrk-$id.txt)"
	[ "${acquires:-0}" -gt 0 ] || die "$id: no acquires completed"
	[ "$non2xx" = 0 ] || die "$id: $non2xx of $requests answers were not 200 (a slot refused?)"
	REQS[$id]=$requests
	NON2XX[$id]=$non2xx
	RPS[$id]=$(awk -v r="$acquires" -v d="$duration_us" 'BEGIN { printf "%.0f", r * 1e6 / d }')
	P50[$id]=$(awk -v u="$(field p50_us "$line")" 'BEGIN { printf "%.2f", u / 1000 }')
	P99[$id]=$(awk -v u="$(field p99_us "$line")" 'BEGIN { printf "%.2f", u / 1000 }')
	CPU[$id]=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v n="$acquires" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
	say "  $id: ${RPS[$id]} acquire+release pairs/s ($requests requests), p50 ${P50[$id]} ms," \
		"p99 ${P99[$id]} ms, server CPU ${CPU[$id]} us/pair"
}

# exhaust URL URI: the one key of a refused case spends its only token
# (in the first round a fresh key: 200 first; later, nginx's 1 r/m zone may
# have earned one back meanwhile: 200 or 429), then is refused.
exhaust() {
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Forwarded-Method: GET' \
		-H "X-Forwarded-Uri: $2" -H 'X-User-Id: u1' "$1")
	if [ "$ROUND" -gt 1 ]; then
		[ "$code" = 200 ] || [ "$code" = 429 ] ||
			die "exhausting the key at $1 ($2): got $code, expected 200 or 429"
	else
		[ "$code" = 200 ] || die "exhausting the key at $1 ($2): got $code, expected 200 first"
	fi
	code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Forwarded-Method: GET' \
		-H "X-Forwarded-Uri: $2" -H 'X-User-Id: u1' "$1")
	[ "$code" = 429 ] || die "exhausting the key at $1 ($2): got $code, expected 429 second"
}

evalsha_calls() {
	"${RCLI[@]}" INFO commandstats | tr -d '\r' |
		awk -F'[:=,]' '/^cmdstat_evalsha:/ { print $3; f = 1 } END { if (!f) print 0 }'
}

# xrld has loaded its script once it decided (healthz does not load it):
# ours must be byte-identical, i.e. have the same SHA1
curl -s -o /dev/null -H 'X-Forwarded-Method: GET' -H 'X-Forwarded-Uri: /open/x' -H 'X-User-Id: u0' "http://127.0.0.1:$P_RED/v1/auth"
[ "$("${RCLI[@]}" SCRIPT EXISTS "$SHA" | tr -d '\r')" = 1 ] ||
	die "user/http/redis/gcra.lua differs from the one xrld loaded"
[ "$("${RCLI[@]}" -x SCRIPT LOAD <"$T/gcra.lua" | tr -d '\r')" = "$SHA" ] ||
	die "redis-cli SCRIPT LOAD did not give SHA1 $SHA"

# f: one decision a call, as xrld would send it alone: the arguments for
# rule "open" (tau 1 s, emit 1 µs, in µs), its key shape over NKEYS keys,
# one fixed "now" (a key's TAT then grows by 1 µs a call, far below tau:
# every call is an admit, GET + SET PX)
now_us=$(($(date +%s%N) / 1000))
rb() { # N: the --csv line of EVALSHA into $T/redis-benchmark.csv
	run "$T/redis-benchmark.out" taskset -c "$CLIENT_CPU" redis-benchmark -h 127.0.0.1 \
		-p "$P_REDIS" -c "$RCONNS" -P 16 -n "$1" -r "$NKEYS" --csv EVALSHA "$SHA" 1 \
		'xrl:{open:u__rand_int__}' "$now_us" 1 1 1000000.000 1.000 || die "redis-benchmark failed"
	tr -d '\r' <"$T/redis-benchmark.out" | grep -i '"EVALSHA' >"$T/redis-benchmark.csv" ||
		die "no EVALSHA line from redis-benchmark ($T/redis-benchmark.out)"
}
rb 200000
cal_rps=$(awk -F'"' '{ print $4 }' "$T/redis-benchmark.csv")
RB_N=$(awk -v r="$cal_rps" -v s="$RB_SECONDS" 'BEGIN { n = int(r * s); if (n < 100000) n = 100000; print n }')
say "f: calibration $cal_rps requests/s; -n $RB_N"

f_case() {
	local t0 t1 f
	t0=$(cpu_ticks "$PID_REDIS")
	rb "$RB_N"
	t1=$(cpu_ticks "$PID_REDIS")
	CPU[f]=$(awk -v t=$((t1 - t0)) -v hz="$HZ" -v n="$RB_N" 'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
	f=$(cat "$T/redis-benchmark.csv")
	# "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
	RPS[f]=$(echo "$f" | awk -F'"' '{ printf "%.0f", $4 }')
	P50[f]=$(echo "$f" | awk -F'"' '{ printf "%.2f", $10 }')
	P99[f]=$(echo "$f" | awk -F'"' '{ printf "%.2f", $14 }')
	REQS[f]=$RB_N
	NON2XX[f]=-
	say "  f: ${RPS[f]} EVALSHA/s, p50 ${P50[f]} ms, p99 ${P99[f]} ms (per pipeline of 16), server CPU ${CPU[f]} us/EVALSHA"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }
# median X...: the middle value (of an even count, the lower middle one)
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One round: every case once, each compared pair back to back (e_allowed
# and a, a and b, f and c, c and d) so that they see the same neighbours
# on a shared machine; odd rounds in this order, even rounds in the
# reverse one, so that a neighbour growing or fading through a round
# favours neither side of a pair over the run. Then the ratios of the round.
declare -a RR_MEM RR_RED RR_RA_MEM RR_RA_RED RC_MEM RC_RED RC_RA_MEM RC_RA_RED RC_CL RR_CL RC_CLR RC_CL0 RC_CL1 RC_K RC_KS
declare -a RR_LM RR_LR RC_LM RC_LR
step_e_allowed() { wrk_case e_allowed "$CONNS" "$P_NGX" /open/x /open/x "$NKEYS" allowed "${PIDS_NGINX[@]}"; }
step_a() { wrk_case a "$CONNS" "$P_MEM" /v1/auth /open/x "$NKEYS" allowed "${PID_XRLD[mem]}"; }
step_b() {
	exhaust "http://127.0.0.1:$P_MEM/v1/auth" /shut/x
	wrk_case b "$CONNS" "$P_MEM" /v1/auth /shut/x 1 refused "${PID_XRLD[mem]}"
}
step_e_refused() {
	exhaust "http://127.0.0.1:$P_NGX/shut/x" /shut/x
	wrk_case e_refused "$CONNS" "$P_NGX" /shut/x /shut/x 1 refused "${PIDS_NGINX[@]}"
}
step_f() { f_case; }
step_c() {
	local n0 n1 c_all
	n0=$(evalsha_calls)
	RT0=$(cpu_ticks "$PID_REDIS")
	PARTS="xrld=${PID_XRLD[redis]} redis=$PID_REDIS"
	wrk_case c "$RCONNS" "$P_RED" /v1/auth /open/x "$NKEYS" allowed "${PID_XRLD[redis]}" "$PID_REDIS"
	PARTS=''
	n1=$(evalsha_calls)
	redis_share c "$PID_REDIS"
	C_EVALS=$((n1 - n0))
	# the calls were counted around the warm-up too: so are the decisions
	c_all=$((REQS[c] + $(field requests "$(grep '^RESULT ' "$T/wrk-c-warmup.txt")")))
	C_PER_CALL=$(awk -v e="$C_EVALS" -v n="$c_all" 'BEGIN { printf "%.1f", e ? n / e : 0 }')
	say "  c: $C_EVALS EVALSHA for $c_all decisions, warm-up included (~$C_PER_CALL a call)"
}
step_d() {
	local n2 n3
	exhaust "http://127.0.0.1:$P_RED/v1/auth" /shut/x
	n2=$(evalsha_calls)
	wrk_case d "$RCONNS" "$P_RED" /v1/auth /shut/x 1 refused "${PID_XRLD[redis]}" "$PID_REDIS"
	n3=$(evalsha_calls)
	D_EVALS=$((n3 - n2))
	say "  d: $D_EVALS EVALSHA for ${REQS[d]} refusals (the over-limit cache)"
}
# redis_share ID REDIS-PID... (after wrk_case ID): the Redis part of its CPU
# per decision, from the ticks counted around it
redis_share() {
	local id=$1 t
	shift
	t=$(($(cpu_ticks "$@") - RT0))
	RCPU[$id]=$(awk -v t="$t" -v hz="$HZ" -v n="$((REQS[$id] + $(field requests "$(grep '^RESULT ' "$T/wrk-$id-warmup.txt")")))" \
		'BEGIN { printf "%.1f", t * 1e6 / hz / n }')
	say "  $id: Redis ${RCPU[$id]} us/decision of it (warm-up included)"
}
declare -A RCPU
# cluster_calls PORT...: EVALSHA calls of those nodes (the masters')
cluster_calls() {
	local p n sum=0
	for p in "$@"; do
		n=$(redis-cli -p "$p" INFO commandstats | tr -d '\r' |
			awk -F'[:=,]' '/^cmdstat_evalsha:/ { print $3 }')
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}
step_l() { lease_case l "$CONNS" "$P_MEM" /conc/x "${PID_XRLD[mem]}"; }
step_l0() { lease_case l0 "$CONNS" "$P_MEM" /open/x "${PID_XRLD[mem]}"; }
step_m() { lease_case m "$RCONNS" "$P_RED" /conc/x "${PID_XRLD[redis]}" "$PID_REDIS"; }
step_m0() { lease_case m0 "$RCONNS" "$P_RED" /open/x "${PID_XRLD[redis]}" "$PID_REDIS"; }
# cluster_case ID PORT XRLD-NAME PARTS PORTS-ARRAY PIDS-ARRAY: wrk_case ID on
# a cluster's xrld, with its CPU by part, and its masters' decisions a call
# (EVALSHA counted on every node, around the warm-up too) in PER_CALL[ID]
declare -A PER_CALL
cluster_case() {
	local id=$1 port=$2 x=$3 n0 n1 all
	local -n cports=$5 cpids=$6
	n0=$(cluster_calls "${cports[@]}")
	RT0=$(cpu_ticks "${cpids[@]}")
	PARTS="xrld=${PID_XRLD[$x]} $4"
	wrk_case "$id" "$RCONNS" "$port" /v1/auth /open/x "$NKEYS" allowed "${PID_XRLD[$x]}" "${cpids[@]}"
	PARTS=''
	redis_share "$id" "${cpids[@]}"
	n1=$(cluster_calls "${cports[@]}")
	all=$((REQS[$id] + $(field requests "$(grep '^RESULT ' "$T/wrk-$id-warmup.txt")")))
	PER_CALL[$id]=$(awk -v e=$((n1 - n0)) -v n="$all" 'BEGIN { printf "%.1f", e ? n / e : 0 }')
	say "  $id: $((n1 - n0)) EVALSHA on the masters for $all decisions, warm-up included (~${PER_CALL[$id]} a call)"
}
step_g() {
	cluster_case g "$P_CL" cluster "masters=$RC_MASTERS replicas=$RC_REPLICAS" RC_PORTS PIDS_RC
	G_PER_CALL=${PER_CALL[g]}
}
step_g1() { cluster_case g1 "$P_CL1" cluster1 "master=${PIDS_R1[0]}" R1_PORTS PIDS_R1; }
# k: the same calls of gcra.lua (c's batch: 21 decisions each until c ran) to one
# Redis, and to three in turn, all on REDIS_CPU with the client: CPU per
# decision, three over one (colocate.py). Nothing else differs: it is the
# price of processes taking turns on one CPU that g0 and g pay and a fleet,
# a master a host, does not. Then the split: one Redis, calls of c's batch
# against calls of g0's masters' (21 and 15 until they ran): what smaller
# calls cost a master.
step_k() {
	local out big small
	# the batches measured in this run (c's, and g0's masters'), once known
	big=$(awk -v n="${C_PER_CALL:-21}" 'BEGIN { n = int(n + 0.5); print (n >= 2 ? n : 21) }')
	small=$(awk -v n="${PER_CALL[g0]:-15}" -v b="$big" 'BEGIN { n = int(n + 0.5); print (n >= 1 && n < b ? n : int(b * 0.7 + 0.5)) }')
	out=$(taskset -c "$REDIS_CPU" python3 "$HERE/colocate.py" "$T/gcra.lua" \
		"$(IFS=,; echo "${PK_PORTS[*]}")" "$(IFS=,; echo "${PK_PIDS[*]}")" "$big" 5000 3 "$small") ||
		die "colocate.py failed: $out"
	printf '%s\n' "$out" | sed 's/^/  k: /' >&2
	K_COLOC=$(sed -n 's/^colocation=//p' <<<"$out")
	K_SPLIT=$(sed -n 's/^split=//p' <<<"$out")
	[ -n "$K_COLOC" ] && [ -n "$K_SPLIT" ] || die "colocate.py printed no colocation= or split= line"
}
step_g0() {
	cluster_case g0 "$P_CL0" cluster0 "masters=$(IFS=,; echo "${PIDS_R0[*]}")" R0_PORTS PIDS_R0
}
step_h() {
	PARTS="xrld=${PID_XRLD[redisr]} master=$PID_REDM replica=$PID_REDR"
	wrk_case h "$RCONNS" "$P_RH" /v1/auth /open/x "$NKEYS" allowed "${PID_XRLD[redisr]}" \
		"$PID_REDM" "$PID_REDR"
	PARTS=''
}
# g between c and h: each compared pair runs back to back
STEPS=(e_allowed a b l0 l e_refused f h g c g1 g0 k d m0 m)
# CASES="h g c" runs those steps only: a partial run, to measure a pair
# again; the ratios of the cases left out print as 0.00, and only the
# requirements whose cases all ran are judged
if [ -n "${CASES:-}" ]; then
	read -r -a STEPS <<<"$CASES"
	for c in "${STEPS[@]}"; do
		declare -F "step_$c" >/dev/null || die "CASES: no case '$c' (known: e_allowed a b l0 l e_refused f h g c g1 g0 k d m0 m)"
	done
	set +u # the report names every case
fi
ran() { local c; for c; do [[ " ${STEPS[*]} " == *" $c "* ]] || return 1; done; }
one_round() {
	local i
	say "round $ROUND of $ROUNDS"
	if ((ROUND % 2)); then
		for ((i = 0; i < ${#STEPS[@]}; i++)); do "step_${STEPS[i]}"; done
	else
		for ((i = ${#STEPS[@]} - 1; i >= 0; i--)); do "step_${STEPS[i]}"; done
	fi
	RR_MEM+=("$(ratio "${RPS[a]}" "${RPS[e_allowed]}")")
	RR_RED+=("$(ratio "${RPS[c]}" "${RPS[f]}")")
	RR_RA_MEM+=("$(ratio "${RPS[b]}" "${RPS[a]}")")
	RR_RA_RED+=("$(ratio "${RPS[d]}" "${RPS[c]}")")
	# the same from the server CPU time a decision took: what the ratios
	# would be if each server had its CPU to itself (neighbours lower
	# decisions/s, much less the CPU time each decision takes)
	RC_MEM+=("$(ratio "${CPU[e_allowed]}" "${CPU[a]}")")
	RC_RED+=("$(ratio "${CPU[f]}" "${CPU[c]}")")
	RC_RA_MEM+=("$(ratio "${CPU[a]}" "${CPU[b]}")")
	RC_RA_RED+=("$(ratio "${CPU[c]}" "${CPU[d]}")")
	# a slot's pair against a decision: >1 means the pair costs more
	RR_LM+=("$(ratio "${RPS[l0]}" "${RPS[l]}")")
	RR_LR+=("$(ratio "${RPS[m0]}" "${RPS[m]}")")
	RC_LM+=("$(ratio "${CPU[l]}" "${CPU[l0]}")")
	RC_LR+=("$(ratio "${CPU[m]}" "${CPU[m0]}")")
	RC_CL+=("$(ratio "${CPU[g]}" "${CPU[c]}")")
	RR_CL+=("$(ratio "${RPS[g]}" "${RPS[c]}")")
	RC_CLR+=("$(ratio "${CPU[g]}" "${CPU[h]}")")
	RC_CL0+=("$(ratio "${CPU[g0]}" "${CPU[c]}")")
	RC_CL1+=("$(ratio "${CPU[g1]}" "${CPU[c]}")")
	RC_K+=("${K_COLOC:-0}")
	RC_KS+=("${K_SPLIT:-0}")
	say "  round $ROUND: a/e ${RR_MEM[-1]}  c/f ${RR_RED[-1]}  b/a ${RR_RA_MEM[-1]}  d/c ${RR_RA_RED[-1]}  CPU g/c ${RC_CL[-1]}  CPU g/h ${RC_CLR[-1]}  CPU g1/c ${RC_CL1[-1]}  CPU g0/c ${RC_CL0[-1]}  k ${RC_K[-1]} / ${RC_KS[-1]}" \
		" l0/l ${RR_LM[-1]}  m0/m ${RR_LR[-1]}"
}

say "cases of ${DUR} s (after 1 s of warm-up): wrk -t1 -c$CONNS (c and d -c$RCONNS, redis-benchmark in f -c$RCONNS) on CPU $CLIENT_CPU;" \
	"xrld (http.threads $THREADS) and nginx (worker_processes $THREADS) on CPU $SERVER_CPU;" \
	"redis-server on CPU $REDIS_CPU; $ROUNDS rounds"
for ((ROUND = 1; ROUND <= ROUNDS; ROUND++)); do
	one_round
done

# ---- the report --------------------------------------------------------------

R_MEM=$(median "${RR_MEM[@]}")
R_RED=$(median "${RR_RED[@]}")
R_RA_MEM=$(median "${RR_RA_MEM[@]}")
R_RA_RED=$(median "${RR_RA_RED[@]}")
C_MEM=$(median "${RC_MEM[@]}")
C_RED=$(median "${RC_RED[@]}")
C_RA_MEM=$(median "${RC_RA_MEM[@]}")
C_RA_RED=$(median "${RC_RA_RED[@]}")
R_LM=$(median "${RR_LM[@]}")
R_LR=$(median "${RR_LR[@]}")
C_LM=$(median "${RC_LM[@]}")
C_LR=$(median "${RC_LR[@]}")
C_CL=$(median "${RC_CL[@]}")
R_CL=$(median "${RR_CL[@]}")
C_CLR=$(median "${RC_CLR[@]}")
C_CL0=$(median "${RC_CL0[@]}")
C_CL1=$(median "${RC_CL1[@]}")
C_K=$(median "${RC_K[@]}")
C_KS=$(median "${RC_KS[@]}")

{
	echo
	echo "identity tier, $(date -u +%F), $(uname -r), $(nproc) CPUs; ${DUR} s a case, wrk -t1 -c$CONNS (c, d and f: $RCONNS);" \
		"servers on CPU $SERVER_CPU (xrld threads $THREADS, nginx workers $THREADS), clients on CPU $CLIENT_CPU"
	echo "the last of $ROUNDS rounds:"
	printf '%-46s %12s %8s %8s %9s %10s\n' case decisions/s "p50 ms" "p99 ms" refused "CPU us/dec"
	for row in "a:xrld memory, allowed" "b:xrld memory, refused (429)" \
		"c:xrld redis, allowed (batched EVALSHA)" "d:xrld redis, refused (over-limit cache)" \
		"e_allowed:nginx limit_req, allowed" "e_refused:nginx limit_req, refused (429)" \
		"l0:xrld memory, allowed (lease.lua)" "l:xrld memory, acquire + release (pairs)" \
		"m0:xrld redis, allowed (lease.lua)" "m:xrld redis, acquire + release (pairs)" \
		"f:redis-benchmark -P 16, EVALSHA gcra" "g:xrld redis-cluster (3+3), allowed" \
		"g1:xrld redis-cluster (1 master), allowed" \
		"h:xrld redis + 1 replica, allowed" "g0:xrld redis-cluster (3+0), allowed"; do
		id=${row%%:*}
		printf '%-46s %12s %8s %8s %9s %10s\n' "$id  ${row#*:}" "${RPS[$id]}" "${P50[$id]}" \
			"${P99[$id]}" "${NON2XX[$id]}" "${CPU[$id]}"
	done
	echo "(CPU us/dec: user + system time of the server processes per decision: xrld; xrld and"
	echo " redis-server in c and d; nginx; redis-server in f; xrld and six redis-server in g. Network work the kernel does in softirq"
	echo " context is not in it. It hardly moves when neighbours take the CPU; decisions/s does.)"
	echo "(c: $C_EVALS EVALSHA calls, warm-up included, ~$C_PER_CALL decisions a call: xrld sends"
	echo " the decisions queued while a batch is out as one call; f: one decision a call, 16 calls"
	echo " a pipeline; d: $D_EVALS EVALSHA calls for ${REQS[d]} refusals; g: ~$G_PER_CALL decisions a"
	echo " call of a master)"
	echo
	echo "ratios by round (decisions/s; by CPU time in brackets):"
	echo "round   a/e_allowed    c/f            b/a            d/c            l0/l (l/l0)    m0/m (m/m0)"
	for ((i = 0; i < ROUNDS; i++)); do
		printf '%-7s %-14s %-14s %-14s %-14s %-14s %s\n' "$((i + 1))" "${RR_MEM[i]} (${RC_MEM[i]})" \
			"${RR_RED[i]} (${RC_RED[i]})" "${RR_RA_MEM[i]} (${RC_RA_MEM[i]})" \
			"${RR_RA_RED[i]} (${RC_RA_RED[i]})" "${RR_LM[i]} (${RC_LM[i]})" \
			"${RR_LR[i]} (${RC_LR[i]})"
	done
	echo
	echo "medians of the rounds:             decisions/s  by CPU time  required"
	echo "memory_allowed_vs_nginx  a/e_allowed     $R_MEM         $C_MEM    >= 0.8 (goal 1.0)"
	echo "redis_allowed_vs_redis_benchmark c/f     $R_RED         $C_RED    >= 0.5"
	echo "refused_vs_allowed_memory  b/a           $R_RA_MEM         $C_RA_MEM    (reported)"
	echo "refused_vs_allowed_redis   d/c           $R_RA_RED         $C_RA_RED    >= 1.0"
	echo "nginx refused/allowed  e_refused/e_allowed $(ratio "${RPS[e_refused]}" "${RPS[e_allowed]}")" \
		"        $(ratio "${CPU[e_allowed]}" "${CPU[e_refused]}")"
	echo "cluster_cost_vs_standalone  CPU g1/c     $C_CL1    <= 1.3 (the cluster path: xrld + the master, one master with every slot)"
	echo "cluster_3_masters  CPU g0/c              $C_CL0    (reported: 3 masters taking turns on the one server CPU, no copies)"
	echo "cluster_3x2_vs_replicated  CPU g/h       $C_CLR    (reported: 3 masters + 3 replicas against 1 + 1, on the one CPU)"
	echo "cluster_3x2_vs_unreplicated  CPU g/c     $C_CL    (reported: six, three of them replicas, against one without; g/c rps $R_CL)"
	echo "colocation_three_vs_one  k              $C_K    (reported: the same calls to one Redis and to three in turn)"
	echo "split  k                                $C_KS    (reported: one Redis, the same decisions in calls of g0's masters' batch against c's)"
	echo "(CPU g1/c by round: ${RC_CL1[*]}; g0/c: ${RC_CL0[*]}; g/h: ${RC_CLR[*]}; g/c: ${RC_CL[*]}; k: ${RC_K[*]}; split: ${RC_KS[*]}; of the last round's, Redis: c ${RCPU[c]}, g ${RCPU[g]} us/decision, warm-up included)"
	echo "(the last round's CPU us/decision by part: c xrld ${PCPU[c.xrld]} redis ${PCPU[c.redis]};" \
		"h xrld ${PCPU[h.xrld]} master ${PCPU[h.master]} replica ${PCPU[h.replica]};" \
		"g xrld ${PCPU[g.xrld]} masters ${PCPU[g.masters]} replicas ${PCPU[g.replicas]};" \
		"g0 xrld ${PCPU[g0.xrld]} masters ${PCPU[g0.masters]};" \
		"g1 xrld ${PCPU[g1.xrld]} master ${PCPU[g1.master]})"
	echo "lease_vs_decision_memory  l0/l (l/l0)   $R_LM         $C_LM    <= 2.0 (by CPU time)"
	echo "lease_vs_decision_redis   m0/m (m/m0)   $R_LR         $C_LR    <= 2.0 (by CPU time)"
	echo "(l and m: pairs/s and CPU us per pair of /v1/auth + /v1/release, two HTTP requests;"
	echo " l0, m0: decisions by the same wrk script; l/a $(ratio "${CPU[l]}" "${CPU[a]}")" \
		"and m/c $(ratio "${CPU[m]}" "${CPU[c]}") by CPU in the last round)"
	echo "(the requirements are judged on the medians of decisions/s, lease_vs_decision and"
	echo " cluster_cpu_vs_standalone on CPU time; refused_vs_allowed on the last"
	echo " line is d/c: a refusal the over-limit cache answers against an admission Redis decides)"
}

missed=()
! ran a e_allowed || ge "$R_MEM" 0.8 || missed+=("memory_vs_nginx $R_MEM < 0.8")
! ran c f || ge "$R_RED" 0.5 || missed+=("redis_vs_redisbench $R_RED < 0.5")
! ran c d || ge "$R_RA_RED" 1.0 || missed+=("refused_vs_allowed (redis, d/c) $R_RA_RED < 1.0")
! ran l l0 || ge 2.0 "$C_LM" || missed+=("lease_vs_decision (memory, CPU l/l0) $C_LM > 2.0")
! ran m m0 || ge 2.0 "$C_LR" || missed+=("lease_vs_decision (redis, CPU m/m0) $C_LR > 2.0")
! ran g1 c || ge 1.3 "$C_CL1" || missed+=("cluster_cost_vs_standalone (CPU g1/c) $C_CL1 > 1.3")
for m in "${missed[@]}"; do
	echo "MISSED: $m"
done
# keep the logs of a run that missed, and say so before the last line
if [ ${#missed[@]} -gt 0 ] || [ "${KEEP:-0}" = 1 ]; then
	say "logs kept in $T"
	KEEP=1
	KEEP_SAID=1
fi
FAILED=0
echo "cluster_cost_vs_standalone=$C_CL1 cluster_3_masters=$C_CL0 cluster_3x2_vs_replicated=$C_CLR" \
	"cluster_3x2_vs_unreplicated=$C_CL colocation=$C_K split=$C_KS"
echo "memory_vs_nginx=$R_MEM redis_vs_redisbench=$R_RED refused_vs_allowed=$R_RA_RED cluster_path_vs_standalone=$C_CL1" \
	"lease_vs_decision_memory=$C_LM lease_vs_decision_redis=$C_LR"
[ ${#missed[@]} -eq 0 ] || exit 1
exit 0
