#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_http_trust.sh - end to end: the identity tier's trust boundary.
#
#   1. a peer that is not loopback, a trusted proxy or in http.callers (a
#      netns behind a veth) gets 403 on /v1/check, /v1/auth, /v1/release and
#      DELETE /v1/lease/ID; xrl_http_callers_refused_total{reason="address"}
#      counts them; nothing is charged (its bucket is full after) and no slot
#      is taken or given back; 127.0.0.2 (loopback) is answered
#   2. http.callers + http.caller_secret_file: the listed peer without the
#      secret or with a wrong one gets 403 (reason "secret"), with it 200;
#      loopback without it 403; the secret is not in xrld's log;
#      max_connections_per_peer 2 (threads 1) closes a third connection of
#      one peer at accept; --check names a secret file that is too short, a
#      tier on 0.0.0.0 that only loopback may ask, and callers 0.0.0.0/0
#      without a secret
#   3. max_header_bytes 8192: a head of 8192 bytes is answered, 8193 is 431
#   4. the header a rule keys on, twice -> 400; Content-Length with
#      Transfer-Encoding -> 400
#   5. slowloris from 127.0.0.1 (the proxy's own address): 70 connections,
#      one header line every 2 s, against max_connections 64: requests sent
#      meanwhile are all answered within 1 s; the slow ones are evicted
#      while the server is full and cut at head_timeout (3 s)
#   6. redis:// backend: /v1/release {rule,key,cost} with no lease is
#      charged in Redis (the key is there; the next decision sees it)
#   7. redis-cluster:// (6 nodes): the same
#
# Takes about 25 s (the cluster's start included). Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_http_trust
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

http_begin redis-server redis-cli ip nsenter
trap 'trust_cleanup' EXIT

NS=xrl-trust-$$
VR=xtr$$r
SUB=10.213.$(($$ % 250))
HOST_IP=$SUB.1 PEER_IP=$SUB.2

# shellcheck disable=SC2317 # called by the EXIT trap
trust_cleanup() {
	local rc=$?
	ip link del "$VR" 2>/dev/null
	[ -e "/run/netns/$NS" ] && ip netns del "$NS" 2>/dev/null
	(exit "$rc")
	http_cleanup
}

ip netns add "$NS" || fatal "couldn't create namespace $NS"
ip -n "$NS" link set lo up
ip link add "$VR" type veth peer name xtrc0 netns "$NS" || fatal "couldn't create the veth"
if ! { ip addr add "$HOST_IP/30" dev "$VR" && ip link set "$VR" up &&
	ip -n "$NS" addr add "$PEER_IP/30" dev xtrc0 && ip -n "$NS" link set xtrc0 up; }; then
	fatal "couldn't address the veth"
fi

# in_peer CMD...: CMD from the namespace (the peer $PEER_IP)
in_peer() { nsenter --net="/run/netns/$NS" -- "$@"; }

# code [CURL ARGS...]: the status of one request
code() { curl -s -m 3 -o /dev/null -w '%{http_code}' "$@"; }

HP=$(free_port) MP=$(free_port)
xrld_http_run xrld "$HP" <<EOF
metrics: 127.0.0.1:$MP
http:
  listen: 0.0.0.0:$HP
  max_connections: 64
  max_header_bytes: 8192
  head_timeout: 3s
  rules:
$(yaml_rule k '' header:X-Key 1/min 5)
    - name: g
      match: { path_prefix: /g }
      key: global
      concurrency: 2
EOF
L=http://127.0.0.1:$HP
R=http://$HOST_IP:$HP
wait_for 5 in_peer curl -s -m 1 -o /dev/null "$R/healthz" || fatal "the namespace cannot reach $R"

refused() { metric "$MP" "xrl_http_callers_refused_total{reason=\"$1\"}"; }
# remaining KEY: tokens left in rule k's bucket of KEY (a check of cost 0 charges nothing)
remaining() {
	curl -s -m 3 -X POST -d "{\"rule\":\"k\",\"key\":\"$1\",\"cost\":0}" "$L/v1/check" |
		jq_py 'd["remaining"]'
}

log "1. a peer not allowed ($PEER_IP): 403, counted, nothing decided or charged"
a0=$(refused address)
check_eq "  /v1/check cost 5 from $PEER_IP" \
	"$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -X POST -d '{"rule":"k","key":"alice","cost":5}' "$R/v1/check")" 403
check_eq "  /v1/auth from $PEER_IP" "$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -H 'X-Key: alice' "$R/v1/auth")" 403
check_eq "  /v1/check of the global concurrency rule from $PEER_IP" \
	"$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -X POST -d '{"rule":"g","key":"*"}' "$R/v1/check")" 403
check_eq "  xrl_http_callers_refused_total{reason=address} +3" "$(($(refused address) - a0))" 3
check_eq "  alice's bucket after (cost-0 check from loopback)" "$(remaining alice)" 5
lease=$(curl -s -m 3 -X POST -d '{"rule":"g","key":"*"}' "$L/v1/check" | jq_py 'd["leases"][0]')
check_ge "  loopback takes a slot of g (a lease id)" "${#lease}" 10
check_eq "  /v1/release of it from $PEER_IP" \
	"$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -X POST -d "{\"lease\":\"$lease\"}" "$R/v1/release")" 403
check_eq "  DELETE /v1/lease/ID from $PEER_IP" \
	"$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -X DELETE "$R/v1/lease/$lease")" 403
check_eq "  the lease is still held: loopback gives it back" \
	"$(curl -s -m 3 -X POST -d "{\"lease\":\"$lease\"}" "$L/v1/release" | jq_py 'd["released"]')" 1
check_eq "  127.0.0.2 (loopback) is a caller" \
	"$(code -H 'X-Key: bob' "http://127.0.0.2:$HP/v1/auth")" 200
check_eq "  stats JSON counts them" \
	"$("$XRL_ROOT/build/xrlctl" --socket "$HT_TMP/xrld.sock" stats --json 2>/dev/null |
		jq_py 'd["http"]["callers_refused"]["address"]')" "$(refused address)"

log "2. http.callers and http.caller_secret_file"
SECRET=trust-$$-$RANDOM-f00dcafe0123456789
printf '%s\n' "$SECRET" >"$HT_TMP/secret"
P2=$(free_port) MP2=$(free_port)
xrld_http_run xrld2 "$P2" <<EOF
metrics: 127.0.0.1:$MP2
http:
  listen: 0.0.0.0:$P2
  callers: [$PEER_IP/32]
  caller_secret_file: $HT_TMP/secret
  threads: 1
  max_connections_per_peer: 2
  rules:
$(yaml_rule k '' header:X-Key 1/min 5)
EOF
R2=http://$HOST_IP:$P2
check_eq "  listed peer, no secret" "$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -H 'X-Key: a' "$R2/v1/auth")" 403
check_eq "  listed peer, wrong secret" \
	"$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -H 'X-Key: a' -H "X-Xrl-Caller-Secret: ${SECRET}x" "$R2/v1/auth")" 403
check_eq "  listed peer, the secret" \
	"$(in_peer curl -s -m 3 -o /dev/null -w '%{http_code}' -H 'X-Key: a' -H "X-Xrl-Caller-Secret: $SECRET" "$R2/v1/auth")" 200
check_eq "  loopback, no secret" "$(code -H 'X-Key: a' "http://127.0.0.1:$P2/v1/auth")" 403
check_eq "  loopback, the secret" "$(code -H 'X-Key: a' -H "X-Xrl-Caller-Secret: $SECRET" "http://127.0.0.1:$P2/v1/auth")" 200
check_eq "  xrl_http_callers_refused_total{reason=secret}" \
	"$(metric "$MP2" 'xrl_http_callers_refused_total{reason="secret"}')" 3
check_eq "  the secret in xrld's log" "$(grep -c -F "$SECRET" "${HT_LOG[xrld2]}")" 0
perpeer=$("$XRL_PY" - "$P2" <<'PY'
import socket, sys
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port), 2) for _ in range(2)]
s = socket.create_connection(("127.0.0.1", port), 2)
s.settimeout(2)
try:
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    d = s.recv(4096)
    print(d.split(b" ")[1].decode() if d else "closed")
except OSError:
    print("closed")
PY
)
check_eq "  max_connections_per_peer 2: a third connection of 127.0.0.1" "$perpeer" closed
printf 'short\n' >"$HT_TMP/short"
out=$(printf 'http:\n  caller_secret_file: %s\n' "$HT_TMP/short" >"$HT_TMP/bad.yaml" &&
	"$XRLD" --check "$HT_TMP/bad.yaml" 2>&1)
check_match "  --check: a secret too short is an error naming the file" "$out" "caller_secret_file.*short.*16 to 256"

printf 'http:\n  listen: 0.0.0.0:%s\n' "$(free_port)" >"$HT_TMP/open.yaml"
check_match "  --check: a tier on 0.0.0.0 only loopback may ask" \
	"$("$XRLD" --check "$HT_TMP/open.yaml" 2>&1)" "warning: http listens on 0.0.0.0:.* only loopback may ask"
printf 'http:\n  listen: 0.0.0.0:%s\n  callers: [0.0.0.0/0]\n' "$(free_port)" >"$HT_TMP/any.yaml"
check_match "  --check: callers 0.0.0.0/0 without a secret" \
	"$("$XRLD" --check "$HT_TMP/any.yaml" 2>&1)" "warning: http.callers 0.0.0.0/0 lets every peer ask"

log "3. max_header_bytes 8192: the head as counted (request line, fields, empty line)"
# rawhead N: a GET of exactly N head bytes on a new connection; its status
rawhead() {
	"$XRL_PY" - "$HP" "$1" <<'PY'
import socket, sys
n = int(sys.argv[2])
base = b"GET /v1/auth HTTP/1.1\r\nHost: x\r\nX-Key: head\r\nX-Pad: "
h = base + b"a" * (n - len(base) - 4) + b"\r\n\r\n"
assert len(h) == n
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
s.settimeout(3)
s.sendall(h)
d = s.recv(4096)
print(d.split(b" ")[1].decode() if d else "closed")
PY
}
check_eq "  a head of 8192 bytes" "$(rawhead 8192)" 200
check_eq "  a head of 8193 bytes" "$(rawhead 8193)" 431

log "4. framing: the identity header twice, Content-Length with Transfer-Encoding"
check_eq "  X-Key twice" "$(code -H 'X-Key: a' -H 'X-Key: b' "$L/v1/auth")" 400
clte=$("$XRL_PY" - "$HP" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 2)
s.settimeout(3)
s.sendall(b"POST /v1/check HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
d = s.recv(4096)
print(d.split(b" ")[1].decode() if d else "closed")
PY
)
check_eq "  Content-Length and Transfer-Encoding" "$clte" 400

log "5. slowloris from 127.0.0.1: 70 connections, a header line every 2 s, for 8 s"
"$XRL_PY" - "$HP" >"$HT_TMP/slow.out" 2>&1 <<'PY' &
import socket, sys, time
port, conns, t_end = int(sys.argv[1]), [], time.time() + 8
def opened():
    s = socket.create_connection(("127.0.0.1", port), 2)
    s.sendall(b"GET /v1/auth HTTP/1.1\r\nHost: x\r\n")
    return s
for _ in range(70):
    try:
        conns.append(opened())
    except OSError:
        pass
while time.time() < t_end:
    for i, s in enumerate(conns):
        try:
            s.sendall(b"X-Slow: 1\r\n")
        except OSError:
            try:  # closed by the server: come back, as an attacker does
                conns[i] = opened()
            except OSError:
                pass
    time.sleep(2)
PY
SLOW=$!
HT_PIDS+=("$SLOW")
sleep 1
worst=0 bad=0
for i in $(seq 6); do
	t=$(curl -s -m 5 -o /dev/null -w '%{http_code} %{time_total}' -H "X-Key: real$i" "$L/v1/auth")
	ms=$(awk -v t="${t#* }" 'BEGIN { printf "%d", t * 1000 }')
	info "  request $i: $t"
	[ "${t%% *}" = 200 ] || bad=$((bad + 1))
	[ "$ms" -gt "$worst" ] && worst=$ms
	sleep 1
done
wait "$SLOW" 2>/dev/null
check_eq "  real requests during the attack not answered 200" "$bad" 0
check_range "  the slowest real request (ms)" "$worst" 0 1000
check_ge "  connections evicted while full" "$(metric "$MP" 'xrl_http_connections_closed_total{reason="evicted"}')" 1
check_ge "  connections cut at head_timeout" "$(metric "$MP" 'xrl_http_connections_closed_total{reason="head_timeout"}')" 1

# charged NAME BACKEND KEY WHERE EXISTS...: xrld NAME on BACKEND, one
# rule k (1/min, burst 5): a post-paid cost of 3 released for KEY without a
# lease is charged; the bucket's key is in WHERE (EXISTS: the redis-cli
# command that asks); the next decision (cost 1) sees it.
charged() {
	local name=$1 backend=$2 key=$3 where=$4 port
	shift 4
	port=$(free_port)
	xrld_http_run "$name" "$port" <<EOF
http:
  listen: 127.0.0.1:$port
  backend: $backend
  rules:
$(yaml_rule k '' header:X-Key 1/min 5)
EOF
	check_eq "  /v1/release {rule,key,cost 3}" \
		"$(curl -s -m 3 -X POST -d '{"rule":"k","key":"'"$key"'","cost":3}' "http://127.0.0.1:$port/v1/release" | jq_py 'd["charged"]')" 3
	check_eq "  the bucket's key in $where" "$("$@" exists "xrl:{k:$key}")" 1
	check_eq "  the next decision (cost 1) sees it: remaining" \
		"$(curl -s -m 3 -X POST -d '{"rule":"k","key":"'"$key"'","cost":1}' "http://127.0.0.1:$port/v1/check" | jq_py 'd["remaining"]')" 1
}

log "6. redis://: a post-paid cost without a lease is charged in Redis"
redis_start redis
charged xrld3 "redis://127.0.0.1:${HT_PORT[redis]}" carol Redis redis-cli -p "${HT_PORT[redis]}"

log "7. redis-cluster://: the same charge, in the cluster"
redis_cluster_start 6
charged xrld4 "redis-cluster://127.0.0.1:${RC_PORTS[0]},127.0.0.1:${RC_PORTS[1]}" dave "the cluster" \
	redis-cli -c -p "${RC_PORTS[0]}"

finish
