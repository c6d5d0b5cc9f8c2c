#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_fleet_deny.sh - end to end: packet-tier denials shared by a
# fleet. Three front-end hosts A, B, C, each a protected namespace with its
# own xrld and native XDP on its veth (and its own attacker namespace);
# one redis-server in the root namespace, reached by each host over a
# veth of its own (10.201.N.0/30). Counted by each host's kernel, not by
# xrl: no one listens on port 80, so each SYN the kernel takes is answered
# by a reset (Tcp OutRsts of the protected namespace; InSegs would count
# the Redis connection's segments too).
#
#   1. A and B up: `xrlctl deny add 198.51.100.0/24 --ttl 12s` on A; within
#      1 s B drops SYNs from that prefix (OutRsts +0 of 200), a source
#      outside it still gets through B; B's deny list says origin fleet
#   2. C started later: it catches up from the hash and drops them too
#   3. after the TTL neither B nor C drops them
#   4. `deny add 203.0.113.0/24` (no TTL) then `deny del` on B: A drops,
#      then no longer drops, that prefix
#   5. entries wider than the penalty floor (/24), written straight into
#      Redis (0.0.0.0/0 in the stream, 100.64.0.0/10 in the hash) are not
#      applied (a /24 written alike is: the path works), counted as
#      skipped{reason="wide"}; an operator's `deny add --force` of a /16 on A stays
#      on A and says so; C restarted on a hash of 6000 denials applies all
#      of them (none dropped between the fleet's thread and the loop)
#   6. a host's own deny entry is neither replaced (a shorter TTL) nor
#      lifted (a del, or a forged del in the stream) by the fleet
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2317 # functions run through wait_for
set -u
XRL_TEST_NAME=test_xrld_fleet_deny
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

fleet_lab fa$$
declare -A H_PROT H_ATK H_MAC H_SOCK H_PIN H_PID
H_PROT[a]=$LAB_PROT H_ATK[a]=$LAB_ATK H_MAC[a]=$LAB_PROT_MAC H_SOCK[a]=$XRLD_SOCK H_PIN[a]=$PIN_DIR
EXTRA_PIDS=()

fleet_cleanup() {
	local rc=$? h
	trap - EXIT
	stop_pids "${EXTRA_PIDS[@]}"
	for h in b c; do
		[ -n "${H_PROT[$h]:-}" ] || continue
		[ -d "${H_PIN[$h]}/$LAB_PROT_IF" ] &&
			nsenter --net="/run/netns/${H_PROT[$h]}" -- "$XRL_LOAD" --pin-dir "${H_PIN[$h]}" \
				detach "$LAB_PROT_IF" >/dev/null 2>&1
		rm -rf "${H_PIN[$h]}" "${H_SOCK[$h]}"
		ip netns del "${H_PROT[$h]}" 2>/dev/null
		ip netns del "${H_ATK[$h]}" 2>/dev/null
	done
	(exit "$rc")
	xrld_cleanup
}
trap fleet_cleanup EXIT

# mgmt_link HOST N: a veth from the root namespace to HOST's protected one
# (root 10.201.N.1, host 10.201.N.2), the way to Redis.
mgmt_link() {
	ip link add "xf$1$$" type veth peer name xfm0 netns "${H_PROT[$1]}" ||
		fatal "couldn't create the management veth of host $1"
	ip addr add "10.201.$2.1/30" dev "xf$1$$" && ip link set "xf$1$$" up &&
		ip -n "${H_PROT[$1]}" addr add "10.201.$2.2/30" dev xfm0 &&
		ip -n "${H_PROT[$1]}" link set xfm0 up || fatal "couldn't address the management veth of $1"
}

# host_up HOST: namespaces, the lab's veth pair and addresses, as lib.sh's lab_up.
host_up() {
	local h=$1 tag=f$1$$
	H_PROT[$h]=xrl-$tag-prot H_ATK[$h]=xrl-$tag-atk H_PIN[$h]=/sys/fs/bpf/xrl-test-$tag
	H_SOCK[$h]=/run/xrl-test-$tag.sock
	netns_new "${H_PROT[$h]}" && netns_new "${H_ATK[$h]}" || fatal "couldn't create host $h"
	rm -rf "${H_PIN[$h]}"
	netns_veth "${H_PROT[$h]}" "$LAB_PROT_IF" "$LAB_PROT_IP/24" "${H_ATK[$h]}" "$LAB_ATK_IF" \
		"$LAB_ATK_IP/24" || fatal "couldn't create the veth pair of host $h"
	ip -n "${H_PROT[$h]}" route add default via "$LAB_ATK_IP"
	in_ns_sysctl "${H_PROT[$h]}" "net.ipv4.conf.$LAB_PROT_IF.rp_filter=0"
	in_ns_sysctl "${H_ATK[$h]}" net.ipv4.ip_forward=0
	H_MAC[$h]=$(ip -n "${H_PROT[$h]}" -br link show dev "$LAB_PROT_IF" | awk '{ print $3 }')
}

# host_start HOST N: its policy (a lenient SYN rule, the fleet) and its xrld.
host_start() {
	local h=$1 conf=$LAB_TMP/$1.yaml
	write_config "$conf" 10000 10000
	printf 'fleet: { name: %s, redis: "redis://10.201.%s.1:%s" }\n' "$FLEET" "$2" "$RP" >>"$conf"
	nsenter --net="/run/netns/${H_PROT[$h]}" -- "$XRLD" --config "$conf" --foreground \
		--socket "${H_SOCK[$h]}" --pin-dir "${H_PIN[$h]}" >>"$LAB_TMP/$h.log" 2>&1 &
	H_PID[$h]=$!
	EXTRA_PIDS+=("$!")
	hctl "$h" status >/dev/null 2>&1 || sleep 0.5
	wait_for 10 hctl_up "$h" || fatal "xrld on host $h did not start: $(tail -n 5 "$LAB_TMP/$h.log")"
}
hctl() { local h=$1; shift; nsenter --net="/run/netns/${H_PROT[$h]}" -- "$XRLCTL" --socket "${H_SOCK[$h]}" --pin-dir "${H_PIN[$h]}" "$@"; }
hctl_up() { hctl "$1" status 2>/dev/null | grep -q "fleet $FLEET: .*redis up"; }

# syns HOST SOURCES: 200 SYNs from SOURCES to HOST's port 80; prints the
# Tcp OutRsts delta of HOST's protected namespace (what its kernel took).
syns() {
	local h=$1 s0 out
	s0=$(snmp "${H_PROT[$h]}" Tcp OutRsts)
	out=$(nsenter --net="/run/netns/${H_ATK[$h]}" -- "$XRL_FLOOD" --dev "$LAB_ATK_IF" \
		--dst-mac "${H_MAC[$h]}" --dst "$LAB_PROT_IP" --dport 80 --sources "$2" \
		--threads 1 --cpus 0 --count 200) || fatal "xrl-synflood failed: $out"
	sleep 0.2
	echo $(( $(snmp "${H_PROT[$h]}" Tcp OutRsts) - s0 ))
}
drops() { [ "$(syns "$1" "$2")" -eq 0 ]; }

host_up b
host_up c
mgmt_link a 1
mgmt_link b 2
mgmt_link c 3
redis-server --port "$RP" --bind 10.201.1.1 10.201.2.1 10.201.3.1 --protected-mode no \
	--save "" --appendonly no --dir "$LAB_TMP" >"$LAB_TMP/redis.log" 2>&1 &
EXTRA_PIDS+=("$!")
redis_up() { redis-cli -h 10.201.1.1 -p "$RP" ping >/dev/null 2>&1; }
wait_for 10 redis_up || fatal "redis-server did not start"
write_config "$XRLD_CONF" 10000 10000
printf 'fleet: { name: %s, redis: "redis://10.201.1.1:%s" }\n' "$FLEET" "$RP" >>"$XRLD_CONF"
xrld_start
wait_for 10 hctl_up a || fatal "host a: the fleet's Redis is not up: $(ctl status)"
host_start b 2

log "1. deny add on A reaches B"
check_range "B: SYNs from 198.51.100.0/24 before (resets of 200)" "$(syns b 198.51.100.0/24)" 190 200
ctl deny add 198.51.100.0/24 --ttl 12s >/dev/null || fatal "deny add on A failed"
t0=$(date +%s%N)
wait_for 1 drops b 198.51.100.0/24
took=$(( ($(date +%s%N) - t0) / 1000000 ))
info "B drops them after ${took} ms (the check itself sends 200 SYNs and waits 0.2 s)"
check_eq "B: SYNs from 198.51.100.0/24 taken by the kernel" "$(syns b 198.51.100.0/24)" 0
check_range "B: deny reached it within (ms)" "$took" 0 1000
check_range "B: SYNs from 192.0.2.0/24 still taken" "$(syns b 192.0.2.0/24)" 190 200
check_eq "B: deny list origin" "$(hctl b --json deny list | jq_py "([e['origin'] for e in d if e['prefix'] == '198.51.100.0/24'] + ['absent'])[0]")" fleet

log "2. C starts later and catches up"
host_start c 3
wait_for 2 drops c 198.51.100.0/24
check_eq "C: SYNs from 198.51.100.0/24 taken" "$(syns c 198.51.100.0/24)" 0

log "3. after the TTL nobody drops them"
left=$(( 12500 - ($(date +%s%N) - t0) / 1000000 ))
[ "$left" -gt 0 ] && sleep "$(awk -v l="$left" 'BEGIN { print l / 1000 }')"
check_range "B: SYNs from 198.51.100.0/24 after the TTL" "$(syns b 198.51.100.0/24)" 190 200
check_range "C: SYNs from 198.51.100.0/24 after the TTL" "$(syns c 198.51.100.0/24)" 190 200
check_range "A: SYNs from 198.51.100.0/24 after the TTL" "$(syns a 198.51.100.0/24)" 190 200

log "4. deny add and del on B, without a TTL"
hctl b deny add 203.0.113.0/24 >/dev/null || fatal "deny add on B failed"
wait_for 2 drops a 203.0.113.0/24
check_eq "A: SYNs from 203.0.113.0/24 taken" "$(syns a 203.0.113.0/24)" 0
hctl b deny del 203.0.113.0/24 >/dev/null || fatal "deny del on B failed"
sleep 0.5
check_range "A: SYNs from 203.0.113.0/24 after the del" "$(syns a 203.0.113.0/24)" 190 200
pub=$(nsenter --net="/run/netns/${H_PROT[b]}" -- curl -s http://127.0.0.1:9101/metrics |
	awk '$1 == "xrl_fleet_entries_published_total" { print $2 }')
check_eq "B: xrl_fleet_entries_published_total" "$pub" 2

log "5. entries wider than the floor are not applied"
rcli() { redis-cli -h 10.201.1.1 -p "$RP" "$@"; }
in_deny() { hctl "$1" --json deny list | jq_py "'yes' if any(e['prefix'] == '$2' for e in d) else 'no'"; }
until_ms=$(( $(date +%s%3N) + 20000 ))
rcli XADD "xrl:{fleet:$FLEET}:log" '*' op add kind deny f 0.0.0.0/0 v "0 0" src forged >/dev/null
rcli HSET "xrl:{fleet:$FLEET}:deny" 100.64.0.0/10 "$until_ms 0" >/dev/null
rcli XADD "xrl:{fleet:$FLEET}:log" '*' op add kind deny f 198.18.0.0/24 v "$until_ms 0" \
	src forged >/dev/null
wait_for 2 eval '[ "$(in_deny b 198.18.0.0/24)" = yes ]'
check_eq "B: a /24 from the stream applied" "$(in_deny b 198.18.0.0/24)" yes
check_eq "B: 0.0.0.0/0 from the stream not applied" "$(in_deny b 0.0.0.0/0)" no
check_range "B: SYNs from 192.0.2.0/24 still taken" "$(syns b 192.0.2.0/24)" 190 200
# 6000 denials in the hash: more than the inbox (4096) from the thread that
# reads the hash to the loop that writes the maps
many='for i = 0, 5999 do redis.call("HSET", KEYS[1], "172.20." .. math.floor(i / 256) .. "." .. (i % 256) .. "/32", ARGV[1]) end'
rcli EVAL "$many" 1 "xrl:{fleet:$FLEET}:deny" "$until_ms 0" >/dev/null
kill "${H_PID[c]}" 2>/dev/null
wait "${H_PID[c]}" 2>/dev/null
host_start c 3 # reads the hash again
wait_for 2 eval '[ "$(in_deny c 198.18.0.0/24)" = yes ]'
check_eq "C: 100.64.0.0/10 from the hash not applied" "$(in_deny c 100.64.0.0/10)" no
n172() { hctl c --json deny list | jq_py "len([e for e in d if e['prefix'].startswith('172.20.')])"; }
wait_for 5 eval '[ "$(n172)" = 6000 ]'
check_eq "C: all 6000 denials of the hash applied" "$(n172)" 6000
qf=$(nsenter --net="/run/netns/${H_PROT[c]}" -- curl -s http://127.0.0.1:9101/metrics |
	awk '$1 == "xrl_fleet_entries_skipped_total{reason=\"queue_full\"}" { print $2 }')
check_eq "C: none dropped (queue_full)" "$qf" 0
wide=$(nsenter --net="/run/netns/${H_PROT[b]}" -- curl -s http://127.0.0.1:9101/metrics |
	awk '$1 == "xrl_fleet_entries_skipped_total{reason=\"wide\"}" { print $2 }')
check_eq "B: xrl_fleet_entries_skipped_total{reason=wide}" "$wide" 1
out=$(ctl deny add 10.99.0.0/16 --ttl 20s --force)
check_eq "A: a /16 stays on A, said" "$(grep -c 'this host only' <<<"$out")" 1
sleep 0.5
check_eq "B: A's /16 not applied" "$(in_deny b 10.99.0.0/16)" no

log "6. a host's own entry is never shortened or lifted by the fleet"
origin_on() { hctl "$1" --json deny list | jq_py "([e['origin'] for e in d if e['prefix'] == '$2'] + ['absent'])[0]"; }
hctl b deny add 192.0.2.0/24 >/dev/null || fatal "deny add on B failed" # B's own, no TTL
ctl deny add 192.0.2.0/24 --ttl 3s >/dev/null || fatal "deny add on A failed"
sleep 0.5
check_eq "B: its own entry kept (origin)" "$(origin_on b 192.0.2.0/24)" runtime
ctl deny del 192.0.2.0/24 >/dev/null || fatal "deny del on A failed"
# and a forged del in the stream (anyone who can write the fleet's Redis)
rcli XADD "xrl:{fleet:$FLEET}:log" '*' op del kind deny f 192.0.2.0/24 v "0 0" src forged >/dev/null
sleep 0.5
check_eq "B: its own entry survives the fleet's del" "$(origin_on b 192.0.2.0/24)" runtime
check_eq "B: SYNs from 192.0.2.0/24 still dropped" "$(syns b 192.0.2.0/24)" 0
check_eq "C: A's entry lifted there" "$(origin_on c 192.0.2.0/24)" absent

finish
