# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# shellcheck shell=bash
#
# tests/e2e/lib_http.sh - helpers for the end-to-end tests of the identity
# tier (xrld's http: section): xrld, redis-server and nginx started on free
# loopback ports as children of the test, curl against them.
#
# Sourced, not run. It sources lib.sh for the reporting helpers only (log,
# info, skip, fatal, check_eq, check_range, check_ge, finish); no namespaces,
# no XDP: an http-only policy attaches nothing, everything is on 127.0.0.1.
#
# http_setup registers http_cleanup on EXIT (INT and TERM exit through it):
# it stops every process the test started (by pid, TERM then KILL), removes
# this test's pin directories and temporary directory, and prints the tail of
# each xrld log when the test failed.

# shellcheck source=tests/e2e/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRLD=${XRLD:-$XRL_ROOT/build/xrld}

HT_TMP=
HT_PIDS=()          # every process started, stopped at cleanup
HT_PINS=()          # pin directories given to xrld
declare -A HT_PID   # NAME -> pid of a named process (xrld, redis, nginx)
declare -A HT_PORT  # NAME -> its port
declare -A HT_LOG   # NAME -> its log file

# require_http [TOOL...]: root (run.sh's e2e group runs as root), xrld built,
# the tools named (skip, or fail under CI=true, when one is missing).
# shellcheck disable=SC2120 # the tools are optional
require_http() {
	local t
	[ "$(id -u)" -eq 0 ] || skip "needs root"
	for t in curl "$XRL_PY" awk "$@"; do
		command -v "$t" >/dev/null 2>&1 || skip "needs '$t'"
	done
	[ -x "$XRLD" ] || fatal "$XRLD is missing: make build/xrld"
}

# http_setup: the temporary directory and the cleanup trap.
http_setup() {
	HT_TMP=$(mktemp -d "/tmp/xrl-http-$$.XXXXXX") || fatal "mktemp failed"
	trap http_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# http_begin [TOOL...]: require_http TOOL..., then http_setup.
http_begin() {
	require_http "$@"
	http_setup
}

# http_redis_begin: http_begin with redis-server and redis-cli, then a
# redis-server "redis" (redis_start) whose port is in RP.
http_redis_begin() {
	http_begin redis-server redis-cli
	redis_start redis
	# shellcheck disable=SC2034 # read by the tests
	RP=${HT_PORT[redis]}
}

http_cleanup() {
	local rc=$? name p
	trap - EXIT INT TERM
	stop_pids "${HT_PIDS[@]}"
	free_ports_done
	if [ "$rc" -ne 0 ]; then
		for name in "${!HT_LOG[@]}"; do
			[ -s "${HT_LOG[$name]}" ] || continue
			printf '[%s] log of %s (last 20 lines):\n' "$_xrl_name" "$name" >&2
			tail -n 20 "${HT_LOG[$name]}" | sed 's/^/    /' >&2
		done
	fi
	for p in "${HT_PINS[@]}"; do
		rm -rf "$p"
	done
	[ -n "$HT_TMP" ] && rm -rf "$HT_TMP"
	exit "$rc"
}

# port_listens PORT: something listens on 127.0.0.1:PORT.
port_listens() {
	"$XRL_PY" -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 0.5).close()' "$1" 2>/dev/null
}


# ---- redis -----------------------------------------------------------------

# redis_start NAME [PORT]: a throwaway redis-server (no persistence) on
# 127.0.0.1:PORT (a free one by default), as our child; waits for PING.
redis_start() {
	local name=$1 port=${2:-}
	[ -n "$port" ] || port=$(free_port)
	mkdir -p "$HT_TMP/$name"
	HT_LOG[$name]=$HT_TMP/$name.log
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--dir "$HT_TMP/$name" --daemonize no >>"${HT_LOG[$name]}" 2>&1 &
	HT_PID[$name]=$!
	HT_PORT[$name]=$port
	HT_PIDS+=("$!")
	wait_for 10 redis_ping "$name" || fatal "redis-server $name did not answer on port $port: $(tail -n 5 "${HT_LOG[$name]}")"
}

redis_ping() {
	[ "$(redis-cli -h 127.0.0.1 -p "${HT_PORT[$1]}" ping 2>/dev/null)" = PONG ]
}

# rc_node_start I: cluster node rc<I> on two fresh ports, answering; 1 when
# it did not come up (a port free when picked can be taken before the
# server binds it: the caller tries again on other ports).
rc_node_start() {
	local p
	p=$(free_port)
	mkdir -p "$HT_TMP/rc$1"
	HT_LOG[rc$1]=$HT_TMP/rc$1.log
	redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --dir "$HT_TMP/rc$1" \
		--cluster-enabled yes --cluster-port "$(free_port)" --cluster-config-file nodes.conf \
		--cluster-node-timeout 1000 --cluster-require-full-coverage no --daemonize no \
		>>"${HT_LOG[rc$1]}" 2>&1 &
	HT_PID[rc$1]=$!
	HT_PORT[rc$1]=$p
	HT_PIDS+=("$!")
	wait_for 10 redis_ping "rc$1" && return 0
	info "redis-server rc$1 did not come up on $p: $(tail -n 1 "${HT_LOG[rc$1]}"); other ports"
	kill -KILL "${HT_PID[rc$1]}" 2>/dev/null
	wait "${HT_PID[rc$1]}" 2>/dev/null
	rm -f "$HT_TMP/rc$1/nodes.conf"
	return 1
}

# redis_cluster_start N: a Redis Cluster of N redis-servers (rc0..rc<N-1>,
# ports in RC_PORTS, no persistence, cluster-node-timeout 1 s) as our
# children, created with one replica a master (N/2 masters); waits until
# every node says cluster_state:ok.
RC_PORTS=()
redis_cluster_start() {
	local i
	for ((i = 0; i < $1; i++)); do
		rc_node_start "$i" || rc_node_start "$i" || rc_node_start "$i" ||
			fatal "redis-server rc$i did not answer: $(tail -n 5 "${HT_LOG[rc$i]}")"
		RC_PORTS+=("${HT_PORT[rc$i]}")
	done
	# shellcheck disable=SC2046 # one word a node
	redis-cli --cluster create $(printf '127.0.0.1:%s ' "${RC_PORTS[@]}") --cluster-replicas 1 \
		--cluster-yes >"$HT_TMP/create.log" 2>&1 ||
		fatal "redis-cli --cluster create: $(tail -n 5 "$HT_TMP/create.log")"
	wait_for 20 cluster_ok "${RC_PORTS[@]}" || fatal "the cluster did not reach cluster_state:ok"
	# a replica that has not finished its first sync (diskless, delayed 5 s
	# by default) is refused a failover: a test that kills a master waits
	# for every replica to be in sync first
	wait_for 20 replicas_synced $(($1 / 2)) || fatal "the replicas did not finish their first sync"
}

# replicas_synced N: N nodes of RC_PORTS are replicas whose link to their
# master is up.
replicas_synced() {
	local p n=0
	for p in "${RC_PORTS[@]}"; do
		redis-cli -p "$p" info replication | tr -d '\r' | grep -q '^master_link_status:up' && n=$((n + 1))
	done
	[ "$n" = "$1" ]
}

# cluster_ok PORT...: every node says cluster_state:ok.
cluster_ok() {
	local p
	for p in "$@"; do
		redis-cli -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

# masters LIVEPORT: "port first-slot-last-slot..." a master, from CLUSTER
# NODES of a live node.
masters() {
	redis-cli -p "$1" cluster nodes | awk '$3 ~ /master/ && $3 !~ /fail/ && $8 == "connected" && NF > 8 {
		split($2, a, "[:@]"); printf "%s", a[2]; for (i = 9; i <= NF; i++) printf " %s", $i; print "" }'
}

# owner LIVEPORT KEY: the port of the master of KEY's slot.
owner() {
	local slot
	slot=$(redis-cli -p "$1" cluster keyslot "$2")
	masters "$1" | awk -v s="$slot" '{ for (i = 2; i <= NF; i++) { n = split($i, r, "-");
		lo = r[1]; hi = n > 1 ? r[2] : r[1]; if (s >= lo && s <= hi) { print $1; exit } } }'
}

# replica_of LIVEPORT MASTERPORT: the port of a replica of the master on
# MASTERPORT, from CLUSTER NODES of a live node.
replica_of() {
	redis-cli -p "$1" cluster nodes | awk -v m="$2" '
		{ split($2, a, "[:@]"); port[$1] = a[2]; if ($3 ~ /slave/) of[$1] = $4 }
		END { for (n in port) if (port[n] == m) id = n; for (r in of) if (of[r] == id) { print port[r]; exit } }'
}

# rc_index PORT: I of the cluster node rc<I> on PORT (RC_PORTS).
rc_index() {
	local i
	for i in "${!RC_PORTS[@]}"; do [ "${RC_PORTS[$i]}" = "$1" ] && echo "$i"; done
}

# proc_stop NAME [KILL]: stop a named process, by TERM (stop_pids), or by
# KILL at once.
proc_stop() {
	local pid=${HT_PID[$1]}
	if [ "${2:-TERM}" = KILL ]; then
		# reaped at once, quietly: no "Killed" job notice
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 0
	fi
	stop_pids "$pid"
	return 0
}

# ---- xrld --------------------------------------------------------------------

# xrld_http_start NAME CONF PORT [ARGS...]: xrld --foreground on CONF (whose
# http.listen is 127.0.0.1:PORT), its own socket and pin directory, as our
# child; waits until /healthz answers 200. Sets HT_PID[NAME].
xrld_http_start() {
	local name=$1 conf=$2 port=$3 pin=/sys/fs/bpf/xrl-http-$$-$1
	shift 3
	HT_LOG[$name]=$HT_TMP/$name.log
	HT_PINS+=("$pin")
	"$XRLD" --config "$conf" --foreground --socket "$HT_TMP/$name.sock" --pin-dir "$pin" "$@" \
		>>"${HT_LOG[$name]}" 2>&1 &
	HT_PID[$name]=$!
	HT_PORT[$name]=$port
	HT_PIDS+=("$!")
	for _ in $(seq 100); do
		kill -0 "${HT_PID[$name]}" 2>/dev/null ||
			fatal "xrld $name exited at start: $(tail -n 5 "${HT_LOG[$name]}")"
		[ "$(curl -s -m 1 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" = 200 ] && return 0
		sleep 0.1
	done
	fatal "xrld $name did not answer on 127.0.0.1:$port/healthz within 10 s: $(tail -n 5 "${HT_LOG[$name]}")"
}

# xrld_http_run NAME PORT [ARGS...] <YAML: the policy on stdin (a
# here-document) into $HT_TMP/NAME.yaml, then xrld_http_start NAME on it.
xrld_http_run() {
	local name=$1 port=$2
	shift 2
	cat >"$HT_TMP/$name.yaml" || fatal "couldn't write $HT_TMP/$name.yaml"
	xrld_http_start "$name" "$HT_TMP/$name.yaml" "$port" "$@"
}

# xrld_http_rules NAME PROXY [ARGS...] <YAML: xrld NAME on a free port
# (HT_PORT[NAME]); its policy is the head of an http: section behind PROXY
# (http_yaml) followed by stdin (the rest of the section: a here-document).
xrld_http_rules() {
	local name=$1 proxy=$2 port
	shift 2
	port=$(free_port)
	{ http_yaml "$port" "$proxy" && cat; } >"$HT_TMP/$name.yaml" || fatal "couldn't write $HT_TMP/$name.yaml"
	xrld_http_start "$name" "$HT_TMP/$name.yaml" "$port" "$@"
}

# rss_kib PID: VmRSS in KiB, with its children's (xrld's identity process
# holds the identity tier's buckets).
rss_kib() {
	local p sum=0 r
	for p in "$1" $(pgrep -P "$1"); do
		r=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$p/status" 2>/dev/null)
		sum=$((sum + ${r:-0}))
	done
	echo "$sum"
}

# metric PORT NAME: the value of the metrics line that starts with NAME (a
# name, or a name with its labels) on xrld's metrics listener PORT.
metric() {
	curl -s -m 2 "http://127.0.0.1:$1/metrics" |
		awk -v n="$2" 'index($0, n " ") == 1 { print $NF; exit }'
}

# ---- requests ------------------------------------------------------------------

# hreq URL [CURL-ARGS...]: one request; sets H_CODE, H_TIME (seconds),
# H_BODY, and keeps the response headers for hdr.
# shellcheck disable=SC2034 # read by the tests
H_CODE='' H_TIME='' H_BODY=''
hreq() {
	local url=$1 out
	shift
	out=$(curl -s -m 5 -D "$HT_TMP/last.hdr" -o "$HT_TMP/last.body" \
		-w '%{http_code} %{time_total}' "$@" "$url")
	# shellcheck disable=SC2034 # read by the tests
	read -r H_CODE H_TIME <<<"$out"
	# shellcheck disable=SC2034
	H_BODY=$(cat "$HT_TMP/last.body" 2>/dev/null)
}

# hdr NAME: a header of the last hreq answer (the last one of that name).
hdr() {
	awk -v n="$1" 'BEGIN { n = tolower(n) ":" }
		{ sub(/\r$/, "") }
		tolower(substr($0, 1, length(n))) == n { v = substr($0, length(n) + 1); sub(/^[ \t]+/, "", v) }
		END { print v }' "$HT_TMP/last.hdr"
}

# count WORD WORDS...: how often WORD is among WORDS.
count() {
	local w=$1 n=0 x
	shift
	for x in "$@"; do [ "$x" = "$w" ] && n=$((n + 1)); done
	echo "$n"
}

# codes N CMD [ARG...]: CMD ARG... N times, each "{i}" in an ARG replaced by
# the run's number (1..N); the H_CODE each run set, in order, into CODES
# (an array: "${CODES[*]}" to compare, count 200 "${CODES[@]}" to count).
CODES=()
codes() {
	local n=$1 i a args
	shift
	CODES=()
	for i in $(seq "$n"); do
		args=()
		for a in "$@"; do args+=("${a//\{i\}/$i}"); done
		"${args[@]}"
		CODES+=("$H_CODE")
	done
}

# xrld_http_fleet BODY: xrld A, B and C, each with a free http port (P[n])
# and metrics port (M[n]), behind traefik; BODY is a function that prints
# the rest of the http: section (backend, fleet, rules). The caller
# declares P and M (declare -A P M).
# shellcheck disable=SC2004 # P and M are the caller's associative arrays
xrld_http_fleet() {
	local n
	for n in A B C; do
		P[$n]=$(free_port)
		M[$n]=$(free_port)
		{
			printf 'metrics: 127.0.0.1:%s\n' "${M[$n]}"
			http_yaml "${P[$n]}" traefik
			"$1"
		} >"$HT_TMP/$n.yaml"
		xrld_http_start "$n" "$HT_TMP/$n.yaml" "${P[$n]}"
	done
}

# ---- concurrency (tests/e2e/test_http_concurrency*.sh) --------------------------

# conc_rules: the policy rules (under http: rules:) the helpers below rely
# on: checkout (concurrency 20), solo (concurrency 1, lease_ttl 2s) and
# report (1/h, burst 10, concurrency 5).
conc_rules() {
	cat <<'YAML'
    - name: checkout
      match: { method: POST, path_prefix: /api/checkout }
      key: global
      concurrency: 20
      lease_ttl: 30s
    - name: solo
      match: { path_prefix: /api/solo }
      key: global
      concurrency: 1
      lease_ttl: 2s
    - name: report
      match: { path_prefix: /api/report }
      key: header:X-User-Id
      rate: 1/h
      burst: 10
      concurrency: 5
YAML
}

# conc_pair BACKEND [RULES-FN]: xrld A and B sharing BACKEND (redis_timeout
# 200ms, 4 threads) behind traefik, with conc_rules, shut (global,
# concurrency 3, on_backend_error closed), loc (global, concurrency 2,
# local) and the rules RULES-FN prints; sets PA and PB (their ports), A and
# B (their base URLs), MA and MB (their metrics listeners' ports).
PA='' PB='' A='' B='' MA='' MB=''
conc_pair() {
	local n p
	MA=$(free_port)
	MB=$(free_port)
	for n in A B; do
		p=$(free_port)
		{
			printf 'metrics: 127.0.0.1:%s\n' "$([ "$n" = A ] && echo "$MA" || echo "$MB")"
			http_yaml "$p" traefik
			cat <<YAML
  backend: $1
  redis_timeout: 200ms
  threads: 4
  rules:
$(conc_rules)
    - name: shut
      match: { path_prefix: /api/shut }
      key: global
      concurrency: 3
      on_backend_error: closed
    - name: loc
      match: { path_prefix: /api/loc }
      key: global
      concurrency: 2
      on_backend_error: local
YAML
			[ -z "${2:-}" ] || "$2"
		} >"$HT_TMP/$n.yaml"
		xrld_http_start "$n" "$HT_TMP/$n.yaml" "$p"
	done
	PA=${HT_PORT[A]}
	PB=${HT_PORT[B]}
	A=http://127.0.0.1:$PA
	B=http://127.0.0.1:$PB
}

# conc_burst PORTS N HOLD: N requests at once to /api/checkout over PORTS
# (comma-separated), each holding its slot HOLD seconds (conc_client.py);
# sets admitted, refused, other, max_inside, retry_after_min and CONC_OUT.
# shellcheck disable=SC2034 # read by the tests
CONC_OUT=''
conc_burst() {
	read -r CONC_OUT < <("$XRL_PY" "$(dirname "$0")/conc_client.py" "$1" "$2" "$3" /api/checkout)
	eval "$CONC_OUT"
}

# check_conc_60 PORTS WHERE: 60 at once against concurrency 20, each holding
# 2 s: 20 admitted, 40 refused with 503 (WHERE ends the max_inside label).
# shellcheck disable=SC2154 # admitted..retry_after_min: set by conc_burst's eval
check_conc_60() {
	conc_burst "$1" 60 2
	info "   $CONC_OUT"
	check_eq "admitted" "$admitted" 20
	check_eq "refused with 503" "$refused" 40
	check_eq "other answers" "$other" 0
	check_range "at most 20 inside at any moment$2" "$max_inside" 1 20
	check_range "Retry-After of the refusals (s)" "$retry_after_min" 1 30
}

# solo_holder_killed PORT WHERE: a client takes /api/solo's slot on PORT
# (checked: "the holder got its slot" WHERE) and is killed (SIGKILL) without
# releasing it; T0 is the time of the kill (date +%s%N).
T0=''
solo_holder_killed() {
	local hp
	"$XRL_PY" - "$1" >"$HT_TMP/holder.out" <<'PY' &
import http.client, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=5)
c.request("GET", "/v1/auth", headers={"X-Forwarded-Method": "GET", "X-Forwarded-Uri": "/api/solo"})
r = c.getresponse(); r.read()
print(r.status, flush=True)
time.sleep(60)
PY
	hp=$!
	HT_PIDS+=("$hp")
	for _ in $(seq 50); do [ -s "$HT_TMP/holder.out" ] && break; sleep 0.1; done
	check_eq "the holder got its slot$2" "$(cat "$HT_TMP/holder.out")" 200
	{ kill -KILL "$hp" && wait "$hp"; } 2>/dev/null
	T0=$(date +%s%N)
}

# check_solo_freed BASE WHO: ask BASE for /api/solo every 100 ms until it
# admits, or 5 s after T0; checks that it did, between 1 and 2.6 s after
# the kill (lease_ttl 2 s); WHO starts the labels. H_CODE and hdr are the
# admitting answer's.
check_solo_freed() {
	while :; do
		hreq "$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/solo"
		[ "$H_CODE" = 200 ] && break
		[ $(($(date +%s%N) - T0)) -gt 5000000000 ] && break
		sleep 0.1
	done
	check_eq "${2}free again after lease_ttl" "$H_CODE" 200
	check_range "freed after (ms; lease_ttl 2 s, less what passed before the kill)" \
		$((($(date +%s%N) - T0) / 1000000)) 1000 2600
}

# check_solo_taken_over OTHER OWNER: after solo_holder_killed: xrld OTHER
# still refuses /api/solo, admits once the lease ran out (check_solo_freed),
# and xrld OWNER gives OTHER's new lease back by DELETE (204, then 404).
check_solo_taken_over() {
	local o=http://127.0.0.1:${HT_PORT[$1]} w=http://127.0.0.1:${HT_PORT[$2]} solo
	hreq "$o/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/solo"
	check_eq "$1: the slot is still held after the kill" "$H_CODE" 503
	check_solo_freed "$o" "$1: "
	solo=$(hdr X-XRL-Lease)
	hreq "$w/v1/lease/$solo" -X DELETE
	check_eq "$2: DELETE of $1's lease" "$H_CODE" 204
	hreq "$w/v1/lease/$solo" -X DELETE
	check_eq "$2: DELETE it again" "$H_CODE" 404
}

# check_post_paid CHECK RELEASE WHO: rule report's post-paid cost: a check
# on CHECK (key u1, a lease), its lease released on RELEASE with cost=5,
# and the next check on CHECK shows the 5 tokens spent; WHO starts the
# check labels. LEASE and LEASE_BODY are the first check's lease and body.
# shellcheck disable=SC2034 # read by the tests
LEASE='' LEASE_BODY=''
check_post_paid() {
	hreq "$1/v1/check" -X POST -d '{"rule":"report","key":"u1"}'
	check_eq "${3}check admitted" "$H_CODE" 200
	LEASE=$(hdr X-XRL-Lease)
	# shellcheck disable=SC2034 # read by the tests
	LEASE_BODY=$H_BODY
	check_eq "${3}RateLimit after one request" "$(hdr RateLimit)" '"report";r=9;t=3600'
	hreq "$2/v1/release" -X POST -d "lease=$LEASE&cost=5"
	check_eq "release with cost=5" "$H_CODE $H_BODY" '200 {"released":1,"unknown":0,"charged":5}'
	hreq "$1/v1/check" -X POST -d '{"rule":"report","key":"u1"}'
	check_eq "${3}the next RateLimit shows the 5 tokens" "$(hdr RateLimit)" '"report";r=3;t=25200'
}

# check_release_paused XRLD REDIS: a check on xrld XRLD (rule report, key
# u2) takes a lease; its release's client goes away while redis-server
# REDIS is stopped (SIGSTOP, longer than redis_timeout): XRLD answers
# nothing to it, stays up, and decides in Redis again (a lease) once REDIS
# goes on.
check_release_paused() {
	local base=http://127.0.0.1:${HT_PORT[$1]} code lease
	hreq "$base/v1/check" -X POST -d '{"rule":"report","key":"u2"}'
	check_eq "$1: check admitted" "$H_CODE" 200
	lease=$(hdr X-XRL-Lease)
	kill -STOP "${HT_PID[$2]}"
	code=$(curl -s -m 0.05 -o /dev/null -w '%{http_code}' -X POST -H "X-XRL-Lease: $lease" "$base/v1/release")
	check_eq "the release's client gave up (no answer in 50 ms)" "$code" 000
	sleep 0.4
	kill -CONT "${HT_PID[$2]}"
	check_eq "xrld $1 still runs" "$(kill -0 "${HT_PID[$1]}" 2>/dev/null && echo yes)" yes
	for _ in $(seq 30); do
		hreq "$base/v1/check" -X POST -d '{"rule":"report","key":"u3"}'
		[ "$H_CODE" = 200 ] && [ -n "$(hdr X-XRL-Lease)" ] && break
		sleep 0.1
	done
	check_eq "$1 decides in Redis again (a lease)" "$H_CODE $([ -n "$(hdr X-XRL-Lease)" ] && echo lease)" "200 lease"
}

# check_backend_gone BASE: with Redis gone, conc_pair's rule shut refuses
# (on_backend_error closed: 503) and loc keeps its bound (2) in BASE's
# memory.
check_backend_gone() {
	local i codes=""
	for i in 1 2; do
		hreq "$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/shut"
		check_eq "shut $i: on_backend_error closed" "$H_CODE" 503
	done
	for i in 1 2 3; do
		hreq "$1/v1/auth" -H "X-Forwarded-Method: GET" -H "X-Forwarded-Uri: /api/loc"
		codes="$codes$H_CODE "
	done
	check_eq "loc: local slots, concurrency 2 (none released)" "$codes" "200 200 503 "
}

# ---- nginx -----------------------------------------------------------------

# render_checked WHAT SRC OUT FROM TO [FROM TO...]: SRC with each FROM
# replaced by its TO, into OUT; every FROM must be in SRC (the file must
# not drift from the test that relies on it: WHAT names it in the error).
render_checked() {
	local what=$1 src=$2 out=$3 sed_args=()
	shift 3
	while [ $# -ge 2 ]; do
		grep -qF -- "$1" "$src" || fatal "the $what no longer has '$1'"
		sed_args+=(-e "s|$1|$2|")
		shift 2
	done
	sed "${sed_args[@]}" "$src" >"$out"
}

# nginx_render SNIPPET NGINX-PORT XRLD-PORT UPSTREAM-PORT OUT: the example
# snippet with this test's ports.
nginx_render() {
	grep -qF -- 'http://127.0.0.1:8433/v1/auth/nginx' "$1" ||
		fatal "the snippet no longer has 'http://127.0.0.1:8433/v1/auth/nginx'"
	render_checked snippet "$1" "$5" 'listen 127.0.0.1:8080;' "listen 127.0.0.1:$2;" \
		'http://127.0.0.1:8433/' "http://127.0.0.1:$3/" \
		'http://127.0.0.1:8000;' "http://127.0.0.1:$4;"
}

# require_nginx: NGINX (an nginx with the auth_request module) and SNIPPET
# (docs/examples/nginx-xrl.conf), or the test is skipped; require_http too.
require_nginx() {
	SNIPPET=$XRL_ROOT/docs/examples/nginx-xrl.conf
	NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
	[ -x "$NGINX" ] || skip "needs nginx (with the auth_request module)"
	require_http
	"$NGINX" -V 2>&1 | grep -q -- --with-http_auth_request_module ||
		skip "this nginx has no auth_request module"
	[ -r "$SNIPPET" ] || fatal "$SNIPPET is missing"
}

# nginx_start DIR UPSTREAM-PORT WAIT-PORT LOCATIONS CONF...: nginx ($NGINX)
# in DIR with an application on UPSTREAM-PORT (LOCATIONS first, then 200
# for everything else) and the CONF snippets included; waits until
# WAIT-PORT listens.
nginx_start() {
	local T=$1 up=$2 wait_port=$3 locations=$4 out inc= c
	shift 4
	for c in "$@"; do inc="$inc    include $c;"$'\n'; done
	cat >"$T/nginx.conf" <<NGINX_CONF
daemon off;
user root;
worker_processes 1;
pid $T/nginx.pid;
error_log $T/nginx-error.log info;
events { worker_connections 256; }
http {
    access_log $T/nginx-access.log;
    client_body_temp_path $T/body;
    proxy_temp_path $T/proxy;
    fastcgi_temp_path $T/fastcgi;
    uwsgi_temp_path $T/uwsgi;
    scgi_temp_path $T/scgi;
    default_type text/plain;
    # the application
    server {
        listen 127.0.0.1:$up;
        access_log $T/upstream-access.log;
$locations
        location / { return 200 "upstream ok \$request_method \$request_uri\n"; }
    }
$inc}
NGINX_CONF
	out=$("$NGINX" -p "$T" -c "$T/nginx.conf" -t 2>&1) || fatal "nginx -t: $out"
	HT_LOG[nginx]=$T/nginx-error.log
	"$NGINX" -p "$T" -c "$T/nginx.conf" >"$T/nginx.out" 2>&1 &
	HT_PID[nginx]=$!
	HT_PIDS+=("$!")
	wait_for 10 port_listens "$wait_port" ||
		fatal "nginx did not start: $(cat "$T/nginx.out" "$T/nginx-error.log")"
}

# ---- checks --------------------------------------------------------------------




# check_quota_headers WHAT RULE LIMIT: the last answer carries RateLimit-Policy
# and RateLimit naming RULE, X-RateLimit-Limit = LIMIT, X-RateLimit-Remaining
# and an X-RateLimit-Reset in the future (epoch seconds).
check_quota_headers() {
	local what=$1 rule=$2 limit=$3 now reset
	now=$(date +%s)
	reset=$(hdr X-RateLimit-Reset)
	[[ "$reset" =~ ^[0-9]+$ ]] || reset=-1
	check_match "$what: RateLimit-Policy" "$(hdr RateLimit-Policy)" "^\"$rule\";q=$limit;w=[0-9]+$"
	check_match "$what: RateLimit" "$(hdr RateLimit)" "^\"$rule\";r=[0-9]+;t=[0-9]+$"
	check_eq "$what: X-RateLimit-Limit" "$(hdr X-RateLimit-Limit)" "$limit"
	check_match "$what: X-RateLimit-Remaining" "$(hdr X-RateLimit-Remaining)" '^[0-9]+$'
	check_range "$what: X-RateLimit-Reset - now (s)" "$([ "$reset" -ge 0 ] && echo $((reset - now)) || echo "'$(hdr X-RateLimit-Reset)'")" 0 100000
}
