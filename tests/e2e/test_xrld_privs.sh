#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_privs.sh - end to end: xrld runs with least privilege.
#
# xrld is started as the unit starts it, as root but with CAP_SYS_ADMIN out
# of its bounding set (capsh --drop), with an interface, the identity tier
# and metrics. Then, from /proc:
#
#   1. the main thread holds exactly CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN
#      (effective, permitted and bounding), and CAP_SETUID/CAP_SETGID to
#      start the identity process as another uid, with no_new_privs
#   2. the identity tier runs in a process of its own (xrld's child): its
#      uid is not 0, CapEff and CapPrm 0, Seccomp 2 (filter), no_new_privs,
#      no BPF descriptor among its fds; no thread of xrld but the main one
#      holds a capability (the metrics server's is created without any),
#      and none of xrld's threads is the identity tier's
#   3. what the kept capabilities are for still works: a reload that adds a
#      second interface attaches the program there, `xrlctl detach` removes
#      it, `xrlctl attach` puts it back (each logged by xrld with the
#      caller's uid), `xrlctl deny add` writes the denylist, /v1/check
#      answers
#   4. kill -9 of the identity process: the packet tier goes on dropping a
#      denied source's packets, and the identity tier answers again within
#      2 s, from a new child (status and metrics count the restart)
#   5. xrld stopped: its identity process goes too
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_xrld_privs
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

require_xrld capsh curl
xrld_lab pv$$

# the unit's bounding set: no CAP_SYS_ADMIN from the start
REAL_XRLD=$XRLD
XRLD=$LAB_TMP/xrld-nosysadmin
cat >"$XRLD" <<EOF
#!/bin/sh
exec capsh --drop=cap_sys_admin -- -c 'exec "\$@"' xrld "$REAL_XRLD" "\$@"
EOF
chmod +x "$XRLD"

HP=18787
conf() {
	write_config "$XRLD_CONF" 50 20 drop "" "$1"
	cat >>"$XRLD_CONF" <<EOF
$(http_yaml "$HP")
  rules:
$(yaml_rule api '{ path_prefix: /api/ }' header:X-User-Id 10/s 10)
EOF
}
conf ""
xrld_start

# cap_mask PID-OR-TASK FIELD: the hex mask of a capability line of /proc/.../status
cap_field() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }
want=$(printf "%016x" $(( (1 << 39) | (1 << 38) | (1 << 12) | (1 << 7) | (1 << 6) | (1 << 5) )))   # CAP_BPF | CAP_PERFMON | CAP_NET_ADMIN | CAP_SETUID | CAP_SETGID | CAP_KILL

log "1. the main thread"
for f in CapEff CapPrm CapBnd; do
	check_eq "$f: CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN, CAP_SETUID, CAP_SETGID, CAP_KILL only" "$(cap_field "$XRLD_PID" "$f")" "$want"
done
check_eq "CapInh" "$(cap_field "$XRLD_PID" CapInh)" 0000000000000000
check_eq "CapAmb" "$(cap_field "$XRLD_PID" CapAmb)" 0000000000000000
check_eq "NoNewPrivs" "$(cap_field "$XRLD_PID" NoNewPrivs)" 1

# child_of PID: the identity process of xrld PID
child_of() { pgrep -P "$1" -f -- '--identity-process' | head -n 1; }
# atk_get: the status code of the attacker's request to the protected web
# server (000: no answer within 1 s).
atk_get() { in_atk curl -s -o /dev/null -m 1 -w '%{http_code}' "http://$LAB_PROT_IP/"; }
# api_check KEY [SECONDS]: the status code of one /v1/check of rule api for
# KEY, given SECONDS (1) at most.
api_check() {
	in_prot curl -s -o /dev/null -w '%{http_code}' -m "${2:-1}" -X POST -H 'Content-Type: application/json' \
		--data-binary '{"rule":"api","key":"'"$1"'","cost":1}' "http://127.0.0.1:$HP/v1/check"
}
# wait_answer MS KEY [OLD]: api_check KEY until it answers 200, or MS ms
# after t0 (date +%s%N); with OLD, asked only once xrld's identity process
# (now) is another than OLD. Sets code (000 if never asked) and ms (since t0).
wait_answer() {
	code=000
	while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt "$1" ]; do
		[ -n "${3:-}" ] && now=$(child_of "$XRLD_PID")
		if [ -z "${3:-}" ] || { [ -n "$now" ] && [ "$now" != "$3" ]; }; then
			code=$(api_check "$2")
			[ "$code" = 200 ] && break
		fi
		sleep 0.05
	done
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
}

log "2. the identity process"
CHILD=$(child_of "$XRLD_PID")
[ -n "$CHILD" ] || fatal "no identity process under xrld $XRLD_PID"
uid=$(awk '$1 == "Uid:" { print $2 }' "/proc/$CHILD/status")
info "identity process $CHILD, uid $uid"
check_ge "its uid is not root's" "$uid" 1
check_eq "its CapEff" "$(cap_field "$CHILD" CapEff)" 0000000000000000
check_eq "its CapPrm" "$(cap_field "$CHILD" CapPrm)" 0000000000000000
check_eq "its Seccomp (2 = filter)" "$(cap_field "$CHILD" Seccomp)" 2
check_eq "its NoNewPrivs" "$(cap_field "$CHILD" NoNewPrivs)" 1
# not dumpable: its /proc files are root's, so another process of its uid
# (nobody may be shared) can neither read its memory nor ptrace it
check_eq "its /proc/PID/mem is root's (not dumpable)" "$(stat -c %u "/proc/$CHILD/mem")" 0
check_eq "its session is its own (no terminal of xrld's)" \
	"$(sed 's/.*) //' "/proc/$CHILD/stat" | awk '{ print $4 }')" "$CHILD"
bpf_fds=0
for f in /proc/"$CHILD"/fd/*; do
	case $(readlink "$f") in *bpf*) bpf_fds=$((bpf_fds + 1)) ;; esac
done
check_eq "BPF descriptors it holds" "$bpf_fds" 0
n=0
for t in /proc/"$CHILD"/task/*; do
	n=$((n + 1))
	check_eq "its thread ${t##*/} ($(cat "$t/comm")): CapEff, Seccomp" \
		"$(cap_field "$CHILD/task/${t##*/}" CapEff) $(cap_field "$CHILD/task/${t##*/}" Seccomp)" \
		"0000000000000000 2"
done
check_ge "its threads" "$n" 3
in_prot curl -s -o /dev/null -m 2 http://127.0.0.1:9101/metrics
capped=$(for t in /proc/"$XRLD_PID"/task/*; do
	[ "${t##*/}" = "$XRLD_PID" ] && continue
	c=$(cap_field "$XRLD_PID/task/${t##*/}" CapEff)
	[ "$c" = 0000000000000000 ] || printf '%s(%s)=%s ' "${t##*/}" "$(cat "$t/comm")" "$c"
done)
check_eq "xrld threads but the main one holding a capability" "$capped" ""
check_eq "xrld threads of the identity tier (comm xrld-http)" \
	"$(grep -lx xrld-http /proc/"$XRLD_PID"/task/*/comm 2>/dev/null | wc -l)" 0

log "3. what the kept capabilities are for"
in_prot ip link add xrlp1 type veth peer name xrlp1b || fatal "couldn't add a second veth"
in_prot ip link set xrlp1 up
in_prot ip link set xrlp1b up
conf "  - name: xrlp1
    mode: native"
kill -HUP "$XRLD_PID"
attached=no
for _ in $(seq 50); do
	in_prot ip link show dev xrlp1 | grep -q 'prog/xdp' && { attached=yes; break; }
	sleep 0.1
done
check_eq "reload attached the program on a second interface" "$attached" yes
out=$(ctl detach xrlp1 2>&1); rc=$?
info "detach: $out"
check_eq "xrlctl detach xrlp1 (exit status)" "$rc" 0
check_eq "no program left on xrlp1" "$(in_prot ip link show dev xrlp1 | grep -c 'prog/xdp')" 0
out=$(ctl attach xrlp1 --mode native 2>&1); rc=$?
info "attach: $out"
check_eq "xrlctl attach xrlp1 (exit status)" "$rc" 0
check_eq "the program on xrlp1 again" "$(in_prot ip link show dev xrlp1 | grep -c 'prog/xdp')" 1
ctl detach xrlp1 >/dev/null 2>&1
check_eq "xrlctl detach xrlp1 again (exit status)" "$?" 0
# every change through xrlctl is in xrld's log with the caller's uid
check_match "xrld log: detach by uid 0" "$(cat "$XRLD_LOG")" \
	"info: change: \`detach xrlp1\` by uid 0 \(pid [0-9]+\): xrlp1 detached"
check_match "xrld log: attach by uid 0" "$(cat "$XRLD_LOG")" \
	"info: change: \`attach xrlp1 --mode native\` by uid 0 \(pid [0-9]+\): xrlp1 attached"
out=$(ctl deny add 198.51.100.99/32 --ttl 10s 2>&1); rc=$?
check_eq "xrlctl deny add (exit status)" "$rc" 0
check_eq "deny list shows it" "$(deny_field 198.51.100.99/32 origin)" runtime
check_eq "/v1/check answered" "$(api_check u1 2)" 200
check_eq "xrld log: no failed confinement" "$(grep -c "couldn't confine" "$XRLD_LOG")" 0

log "4. kill -9 of the identity process"
start_server
ctl deny add "$LAB_ATK_IP/32" --ttl 60s >/dev/null 2>&1
check_eq "deny add of the attacker's address (exit status)" "$?" 0
check_eq "before: the attacker's request fails (dropped)" \
	"$(atk_get)" 000
old=$CHILD
kill -9 "$old"
t0=$(date +%s%N)
# the packet tier does not wait for the child: at once, still dropped
check_eq "right after: the attacker's request fails (dropped)" \
	"$(atk_get)" 000
wait_answer 5000 u2
info "the identity tier answered again $ms ms after the kill"
check_eq "/v1/check after the kill" "$code" 200
check_range "ms until it answered" "$ms" 0 2000
new=$(child_of "$XRLD_PID")
check_ge "a new identity process" "${new:-0}" 1
check_eq "not the one killed ($old)" "$([ "${new:-0}" != "$old" ] && echo new)" new
check_eq "its Seccomp, CapEff" "$(cap_field "$new" Seccomp) $(cap_field "$new" CapEff)" "2 0000000000000000"
check_match "status: the restart" "$(ctl status)" "identity process: pid $new, user [^ ]+, 1 restart"
check_eq "xrl_identity_process_restarts_total" \
	"$(xrld_metric xrl_identity_process_restarts_total)" 1
check_match "xrld log: the death said" "$(cat "$XRLD_LOG")" "the identity process died \(signal 9\)"
check_eq "the attacker still dropped" \
	"$(atk_get)" 000

log "4b. a stopped identity process (SIGSTOP, as another process of its uid could send)"
kill -STOP "$new"
t0=$(date +%s%N)
wait_answer 8000 u3 "$new"
info "a new identity process answered $ms ms after SIGSTOP"
check_eq "/v1/check from a new child after SIGSTOP of the old" "$code" 200
check_range "ms until then (no sign of life for 3 s, then killed)" "$ms" 2500 6000
check_match "xrld log: the stopped child killed" "$(cat "$XRLD_LOG")" "sent no sign of life for 3000 ms"
kill -0 "$new" 2>/dev/null && check_eq "the stopped child is gone" "alive" "gone"
new=$now

log "5. xrld stops: its identity process goes too"
xrld_kill TERM
gone=no
for _ in $(seq 30); do
	kill -0 "$new" 2>/dev/null || { gone=yes; break; }
	sleep 0.1
done
check_eq "identity process $new gone after xrld stopped" "$gone" yes
finish
