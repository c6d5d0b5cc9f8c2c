#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_redis_cluster.sh - end to end: three xrld instances share a
# Redis Cluster of 3 masters and 3 replicas (backend redis-cluster://, two
# seeds), started here: redis-server --cluster-enabled yes x6 on free ports,
# redis-cli --cluster create --cluster-replicas 1, cluster-node-timeout 1 s.
#
#   1. 60 concurrent requests for one buyer, 20 via each instance: exactly
#      burst (10) are 200, the rest 429 (three rounds)
#   2. 40 buyers, 8 requests each spread over the instances (burst 5):
#      every buyer exactly 5; their keys are on all three masters (DBSIZE);
#      then 12 buyers at once (96 requests): each exactly 5 (a node's call
#      then holds decisions of several slots: the node script)
#   3. two rules in two slots (CLUSTER KEYSLOT differs): once the second
#      rule (burst 2) refuses, the first (burst 5) keeps what it had: the
#      same user with another shop gets exactly the 3 left, and its TAT in
#      Redis did not move while the second rule refused
#   4. metrics: per-node batches on 3 nodes, a slot map read, promtool
#      check metrics clean
#   4b. overrides: one set through A's xrlctl is in xrl:overrides on the
#      master of its slot (not the first seed's: the instances connect to
#      the slot's master), and B follows it within a second; del through B
#      takes it out; no instance logs a failed read
#   4c. seeds that accept and never answer (redis_timeout 50ms): xrlctl
#      override fails with the reason within ~200 ms, not seconds a seed
#   5. failover: the master of a buyer's slot is killed (SIGKILL) mid-run:
#      fail-closed rule 503, fail-open rule 200, no answer slower than
#      redis_timeout + margin (curl time_total); once its replica is master,
#      without restarting xrld, 30 concurrent requests for a new buyer of
#      that slot via the three instances are 200 exactly burst times
#   6. a concurrency rule on redis-cluster:// is accepted (xrld --check
#      exits 0); a reload of a cluster's xrld to redis:// with one keeps
#      the cluster (until a restart) and the rule bounds there
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_redis_cluster
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

require_http redis-server redis-cli
http_setup

TIMEOUT_MS=400
MAX_S=0.8 # redis_timeout + margin (a loaded 2-CPU machine: 96 curls at once)

# ---- the cluster -----------------------------------------------------------
redis_cluster_start 6
check_eq "masters in the cluster" "$(masters "${RC_PORTS[0]}" | wc -l)" 3
info "cluster on ${RC_PORTS[*]}"

# ---- three xrld --------------------------------------------------------------
PX=()
MA=$(free_port)
for n in A B C; do
	p=$(free_port)
	PX+=("$p")
	{
		[ "$n" = A ] && echo "metrics: 127.0.0.1:$MA"
		cat <<EOF
$(http_yaml "$p" traefik)
  backend: redis-cluster://127.0.0.1:${RC_PORTS[0]},127.0.0.1:${RC_PORTS[1]}
  redis_timeout: ${TIMEOUT_MS}ms
  breaker_cooldown: 500ms
  threads: 2
  rules:
$(yaml_rule holds '{ path_prefix: /holds/ }' header:X-User-Id 1/min 10 'on_backend_error: closed')
$(yaml_rule buyers '{ path_prefix: /buy/ }' header:X-User-Id 1/min 5 'on_backend_error: closed')
$(yaml_rule user '{ path_prefix: /two/ }' header:X-User-Id 1/min 5)
$(yaml_rule shop '{ path_prefix: /two/ }' header:X-Shop 1/min 2)
$(yaml_rule closed '{ path_prefix: /closed/ }' header:X-User-Id 1/min 5 'on_backend_error: closed')
$(yaml_rule open '{ path_prefix: /open/ }' header:X-User-Id 1/min 5 'on_backend_error: open')
EOF
	} >"$HT_TMP/$n.yaml"
	xrld_http_start "$n" "$HT_TMP/$n.yaml" "$p"
done
info "xrld A on ${PX[0]} (metrics $MA), B on ${PX[1]}, C on ${PX[2]}"

# burst N PATH USER [HEADER...]: N curls at once, round robin over A, B,
# C; sets N200, N429, NOTHER, TMAX (the slowest time_total)
burst() {
	local n=$1 path=$2 user=$3 i pids=() port
	shift 3
	rm -f "$HT_TMP"/c.*
	for i in $(seq 0 $((n - 1))); do
		port=${PX[$((i % 3))]}
		curl -s -m 5 -o /dev/null -w '%{http_code} %{time_total}\n' -H "X-Forwarded-Method: POST" \
			-H "X-Forwarded-Uri: $path$i" -H "X-User-Id: $user" "$@" \
			"http://127.0.0.1:$port/v1/auth" >"$HT_TMP/c.$i" &
		pids+=("$!")
	done
	for i in "${pids[@]}"; do wait "$i"; done
	local codes
	codes=$(cat "$HT_TMP"/c.* | awk '{ print $1 }')
	N200=$(grep -c '^200$' <<<"$codes")
	N429=$(grep -c '^429$' <<<"$codes")
	NOTHER=$((n - N200 - N429))
	TMAX=$(cat "$HT_TMP"/c.* | awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }')
}

log "1. 60 concurrent requests for one buyer over three instances (burst 10)"
for round in 1 2 3; do
	burst 60 /holds/ "conc$round-$$"
	check_eq "round $round: 200 answers (= burst)" "$N200" 10
	check_eq "round $round: 429 answers" "$N429" 50
	check_eq "round $round: other answers" "$NOTHER" 0
done

log "2. 40 buyers, 8 requests each over the instances (burst 5)"
bad=0
for b in $(seq 40); do
	burst 8 /buy/ "b$b-$$"
	[ "$N200" = 5 ] && [ "$N429" = 3 ] || { bad=$((bad + 1)); info "buyer $b: $N200 x 200, $N429 x 429"; }
done
check_eq "buyers whose count was not exactly 5" "$bad" 0
for m in $(masters "${RC_PORTS[0]}" | awk '{ print $1 }'); do
	check_ge "keys on master $m (DBSIZE)" "$(redis-cli -p "$m" dbsize)" 1
done

log "2b. 12 buyers at once, 8 requests each (96 concurrent): a node's call holds several slots"
evals() { # EVALSHA calls of all masters so far
	local m n=0
	for m in $(masters "${RC_PORTS[0]}" | awk '{ print $1 }'); do
		n=$((n + $(redis-cli -p "$m" info commandstats | tr -d '\r' |
			awk -F'[=,]' '/^cmdstat_evalsha:/ { print $2 }')))
	done
	echo "$n"
}
e0=$(evals)
rm -f "$HT_TMP"/m.*
pids=()
for i in $(seq 0 95); do
	b=$((i % 12))
	curl -s -m 5 -o /dev/null -w '%{http_code}\n' -H "X-Forwarded-Method: POST" \
		-H "X-Forwarded-Uri: /buy/$i" -H "X-User-Id: many$b-$$" \
		"http://127.0.0.1:${PX[$((i % 3))]}/v1/auth" >>"$HT_TMP/m.$b" &
	pids+=("$!")
done
for i in "${pids[@]}"; do wait "$i"; done
bad=0
for b in $(seq 0 11); do
	n2=$(grep -c '^200$' "$HT_TMP/m.$b")
	n4=$(grep -c '^429$' "$HT_TMP/m.$b")
	[ "$n2" = 5 ] && [ "$n4" = 3 ] || { bad=$((bad + 1)); info "buyer many$b: $n2 x 200, $n4 x 429"; }
done
check_eq "buyers whose count was not exactly 5" "$bad" 0
info "EVALSHA calls on the masters for those 96 decisions: $(($(evals) - e0))"

log "3. two rules in two slots: a refusal by the second leaves the first as it was"
U=two-$$
su=$(redis-cli -p "${RC_PORTS[0]}" cluster keyslot "xrl:{user:$U}")
ss=$(redis-cli -p "${RC_PORTS[0]}" cluster keyslot "xrl:{shop:s1-$$}")
info "slots: user $su, shop $ss"
[ "$su" != "$ss" ] || fatal "the two keys share a slot; pick other names"
two() { hreq "http://127.0.0.1:${PX[$1]}/v1/auth" -H "X-Forwarded-Method: GET" \
	-H "X-Forwarded-Uri: /two/x" -H "X-User-Id: $U" -H "X-Shop: $2"; }
c=()
for i in 0 1; do two "$i" "s1-$$"; c+=("$H_CODE"); done
check_eq "the first 2 (shop burst 2)" "$(count 200 "${c[@]}")" 2
uo=$(owner "${RC_PORTS[0]}" "xrl:{user:$U}")
tat0=$(redis-cli -p "$uo" get "xrl:{user:$U}")
c=()
for i in 0 1 2 0 1 2; do two "$i" "s1-$$"; c+=("$H_CODE"); done
check_eq "6 more with that shop: refused by the shop rule" "$(count 429 "${c[@]}")" 6
check_eq "the rule named" "$(printf '%s' "$H_BODY" | grep -o '"rule": *"[a-z]*"' | grep -o '[a-z]*"$')" 'shop"'
tat1=$(redis-cli -p "$uo" get "xrl:{user:$U}")
info "user TAT before $tat0, after the refusals $tat1"
check_eq "the user bucket's TAT after 6 refusals by the shop rule" "$tat1" "$tat0"
c=()
for i in 0 1 2 0; do two "$i" "s2$i$RANDOM-$$"; c+=("$H_CODE"); done
check_eq "other shops: the user has 3 left (5 - 2)" "$(count 200 "${c[@]}")" 3
check_eq "then the user rule refuses" "${c[3]}" 429
refunds=$(metric "$MA" 'xrl_http_redis_refunds_total{result="sent"}')
check_ge "refunds sent by A" "${refunds:-0}" 1

log "4. metrics"
curl -s -m 2 "http://127.0.0.1:$MA/metrics" >"$HT_TMP/metrics.txt"
check_eq "nodes with batches" "$(grep -c '^xrl_http_redis_node_batches_total{node=.*} [1-9]' "$HT_TMP/metrics.txt")" 3
check_ge "slot maps read" "$(metric "$MA" 'xrl_http_redis_slot_map_refreshes_total{result="ok"}')" 1
if command -v promtool >/dev/null; then
	out=$(promtool check metrics <"$HT_TMP/metrics.txt" 2>&1)
	check_eq "promtool check metrics: problems" "$(printf '%s' "$out" | grep -c .)" 0
	[ -n "$out" ] && info "promtool: $out"
elif [ "${CI:-}" = true ]; then
	fatal "needs promtool under CI"
fi

log "4b. an override set through A is followed by B (xrl:overrides on its slot's master)"
XRLCTL=${XRLCTL:-$XRL_ROOT/build/xrlctl}
oport=$(owner "${RC_PORTS[0]}" xrl:overrides)
info "xrl:overrides is served by port $oport (the first seed is ${RC_PORTS[0]})"
OV=ovr-$$
out=$("$XRLCTL" --socket "$HT_TMP/A.sock" override holds "$OV" --rate 1/min --burst 2 --ttl 10m 2>&1)
check_eq "override holds $OV --burst 2 through A: exit" "$?" 0
[ -n "$out" ] && info "xrlctl: $out"
check_eq "the override is in the hash on its master" \
	"$(redis-cli -p "$oport" HEXISTS xrl:overrides "holds:$OV")" 1
sleep 1.2 # B reads the hash every 500 ms
c=()
for i in 1 2 3 4; do
	hreq "http://127.0.0.1:${PX[1]}/v1/auth" -H "X-Forwarded-Method: GET" \
		-H "X-Forwarded-Uri: /holds/x" -H "X-User-Id: $OV"
	c+=("$H_CODE")
done
check_eq "via B, the overridden key: 200s (burst 2, not 10)" "$(count 200 "${c[@]}")" 2
check_eq "via B: then 429s" "$(count 429 "${c[@]}")" 2
"$XRLCTL" --socket "$HT_TMP/B.sock" override del holds "$OV" >/dev/null 2>&1
check_eq "override del through B: exit" "$?" 0
check_eq "the override left the hash" "$(redis-cli -p "$oport" HEXISTS xrl:overrides "holds:$OV")" 0
check_eq "no instance failed to read the overrides" \
	"$(cat "${HT_LOG[A]}" "${HT_LOG[B]}" "${HT_LOG[C]}" | grep -c "couldn't read the overrides")" 0

log "4c. seeds that accept and never answer: an override fails within redis_timeout a seed"
# two listeners that never accept: the kernel completes the connection,
# nothing ever answers
S1=$(free_port)
S2=$(free_port)
"$XRL_PY" -c 'import socket, sys, time
ls = []
for p in sys.argv[1:]:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", int(p)))
    s.listen(64)
    ls.append(s)
time.sleep(120)' "$S1" "$S2" &
HT_PIDS+=("$!")
wait_for 5 port_listens "$S2" || fatal "the silent seeds did not listen"
PD=$(free_port)
cat >"$HT_TMP/D.yaml" <<EOF
$(http_yaml "$PD" traefik)
  backend: redis-cluster://127.0.0.1:$S1,127.0.0.1:$S2
  redis_timeout: 50ms
  rules:
$(yaml_rule holds '{ path_prefix: /holds/ }' header:X-User-Id 1/min 10)
EOF
xrld_http_start D "$HT_TMP/D.yaml" "$PD"
t0=$(date +%s%N)
out=$("$XRLCTL" --socket "$HT_TMP/D.sock" override holds k --rate 1/min --burst 2 --ttl 1m 2>&1)
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
info "xrlctl override against silent seeds: exit $rc in $ms ms: $out"
check_eq "override with silent seeds: fails (exit 1)" "$rc" 1
check_match "... and says why" "$out" "no seed of the cluster"
check_range "... within 2 seeds x 2 x redis_timeout + margin (ms)" "$ms" 0 900
proc_stop D

log "5. failover: the master of a buyer's slot is killed"
# a buyer of the closed rule, and one of the open rule on the same master
# (CRC16 is affine: "closed:X" and "open:X" never share a master here)
V=victim-$$
vm=$(owner "${RC_PORTS[0]}" "xrl:{closed:$V}")
for k in $(seq 200); do
	VO=victim-open-$k-$$
	[ "$(owner "${RC_PORTS[0]}" "xrl:{open:$VO}")" = "$vm" ] && break
done
vi=-1
for i in 0 1 2 3 4 5; do [ "${RC_PORTS[$i]}" = "$vm" ] && vi=$i; done
[ "$vi" -ge 0 ] || fatal "no master for xrl:{closed:$V}"
live=${RC_PORTS[$(((vi + 1) % 6))]}
info "killing master rc$vi (port $vm), slot $(redis-cli -p "$live" cluster keyslot "xrl:{closed:$V}")"
burst 3 /closed/ "$V"
check_eq "before: 200s" "$N200" 3
proc_stop "rc$vi" KILL
t0=$(date +%s.%N)
codes_c=() codes_o=() slow=0 promoted=
while :; do
	for i in 0 1 2; do
		hreq "http://127.0.0.1:${PX[$i]}/v1/auth" -H "X-Forwarded-Method: GET" \
			-H "X-Forwarded-Uri: /closed/x" -H "X-User-Id: $V"
		codes_c+=("$H_CODE")
		awk -v t="$H_TIME" -v m="$MAX_S" 'BEGIN { exit !(t > m) }' && { slow=$((slow + 1)); info "slow: $H_TIME s"; }
		hreq "http://127.0.0.1:${PX[$i]}/v1/auth" -H "X-Forwarded-Method: GET" \
			-H "X-Forwarded-Uri: /open/x" -H "X-User-Id: $VO"
		codes_o+=("$H_CODE")
		awk -v t="$H_TIME" -v m="$MAX_S" 'BEGIN { exit !(t > m) }' && { slow=$((slow + 1)); info "slow: $H_TIME s"; }
	done
	now=$(owner "$live" "xrl:{closed:$V}")
	if [ -n "$now" ] && [ "$now" != "$vm" ]; then
		promoted=$now
		break
	fi
	awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a > 20) }' && break
done
info "during the failover: closed ${codes_c[*]}"
info "                     open ${codes_o[*]}"
check_ge "fail-closed answers 503 while the master is gone" "$(count 503 "${codes_c[@]}")" 1
check_eq "fail-closed answers other than 503 or 200/429" \
	"$(( ${#codes_c[@]} - $(count 503 "${codes_c[@]}") - $(count 200 "${codes_c[@]}") - $(count 429 "${codes_c[@]}") ))" 0
check_eq "fail-open answers other than 200" "$(( ${#codes_o[@]} - $(count 200 "${codes_o[@]}") ))" 0
check_eq "answers slower than ${MAX_S} s" "$slow" 0
[ -n "$promoted" ] || fatal "no replica took the slot over within 20 s"
info "replica on port $promoted is master after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
# the new master serves; every instance's map follows (a failure asked for
# a refresh; at the latest the 5-s one)
# key_on PORT PREFIX: a user id whose closed-rule key the master on PORT serves
key_on() {
	local k
	for k in $(seq 300); do
		[ "$(owner "$live" "xrl:{closed:$2-$k}")" = "$1" ] && { echo "$2-$k"; return; }
	done
}
ok=
for try in $(seq 20); do
	burst 3 /closed/ "$(key_on "$promoted" "probe$try-$$")"
	[ "$N200" = 3 ] && { ok=1; break; }
	sleep 0.5
done
check_eq "after the failover, every instance decides on Redis again" "${ok:-0}" 1
V2=$(key_on "$promoted" "after-$$")
burst 30 /closed/ "$V2"
check_eq "30 concurrent for a new buyer on the promoted master: 200s (= burst)" "$N200" 5
check_eq "... 429s" "$N429" 25
check_eq "... others" "$NOTHER" 0
for n in A B C; do
	kill -0 "${HT_PID[$n]}" 2>/dev/null
	check_eq "xrld $n still the one started" "$?" 0
done

info "6. a concurrency rule on a cluster: accepted, and kept to after a reload"
# conc_yaml PORT BACKEND: a policy of one concurrency rule, uploads
conc_yaml() {
	http_yaml "$1" traefik
	cat <<EOF
  backend: $2
  rules:
    - name: uploads
      match: { path_prefix: /up/ }
      key: header:X-User-Id
      concurrency: 2
EOF
}
conc_yaml "$(free_port)" "redis-cluster://127.0.0.1:${RC_PORTS[0]},127.0.0.1:${RC_PORTS[1]}" >"$HT_TMP/conc.yaml"
"$XRLD" --check "$HT_TMP/conc.yaml" >/dev/null 2>&1
check_eq "xrld --check of a concurrency rule on redis-cluster://: exit" "$?" 0
# a reload to redis:// keeps the backend (the cluster) until a restart:
# the rule is enforced there (review: five requests against concurrency 2
# were all 200 when the cluster took no slots)
conc_yaml "${PX[2]}" "redis://127.0.0.1:${RC_PORTS[0]}" >"$HT_TMP/C.yaml"
kill -HUP "${HT_PID[C]}"
up() { hreq "http://127.0.0.1:${PX[2]}/v1/check" -X POST -d "{\"rule\":\"uploads\",\"key\":\"$1\"}"; }
reloaded() { up "probe-$RANDOM-$$"; [ "$H_CODE" = 200 ]; }
wait_for 5 reloaded || fatal "C did not take the reload: $(tail -n 3 "${HT_LOG[C]}")"
codes 3 up "after-reload-$$"
check_eq "C after the reload: concurrency 2 on the cluster" "${CODES[*]}" "200 200 429"

finish
