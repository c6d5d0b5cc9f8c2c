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
#      (effective, permitted and bounding), with no_new_privs
#   2. every identity-tier thread (comm xrld-http) holds no capability and
#      runs under a seccomp filter; the metrics server's thread holds no
#      capability once it has served a scrape
#   3. what the kept capabilities are for still works: a reload that adds a
#      second interface attaches the program there, `xrlctl detach` removes
#      it, `xrlctl attach` puts it back (each logged by xrld with the
#      caller's uid), `xrlctl deny add` writes the denylist, /v1/check
#      answers
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
want=$(printf "%016x" $(( (1 << 39) | (1 << 38) | (1 << 12) )))   # CAP_BPF | CAP_PERFMON | CAP_NET_ADMIN

log "1. the main thread"
for f in CapEff CapPrm CapBnd; do
	check_eq "$f: CAP_BPF, CAP_PERFMON and CAP_NET_ADMIN only" "$(cap_field "$XRLD_PID" "$f")" "$want"
done
check_eq "CapInh" "$(cap_field "$XRLD_PID" CapInh)" 0000000000000000
check_eq "CapAmb" "$(cap_field "$XRLD_PID" CapAmb)" 0000000000000000
check_eq "NoNewPrivs" "$(cap_field "$XRLD_PID" NoNewPrivs)" 1

log "2. the identity tier's threads"
n=0
for t in /proc/"$XRLD_PID"/task/*; do
	[ "$(cat "$t/comm")" = xrld-http ] || continue
	n=$((n + 1))
	tid=${t##*/}
	check_eq "thread $tid: CapEff" "$(cap_field "$XRLD_PID/task/$tid" CapEff)" 0000000000000000
	check_eq "thread $tid: CapPrm" "$(cap_field "$XRLD_PID/task/$tid" CapPrm)" 0000000000000000
	check_eq "thread $tid: Seccomp (2 = filter)" "$(cap_field "$XRLD_PID/task/$tid" Seccomp)" 2
done
check_ge "identity-tier threads found" "$n" 1
in_prot curl -s -o /dev/null -m 2 http://127.0.0.1:9101/metrics
m=0
for t in /proc/"$XRLD_PID"/task/*; do
	case $(cat "$t/comm") in MHD*) ;; *) continue ;; esac
	m=$((m + 1))
	check_eq "metrics thread ${t##*/} ($(cat "$t/comm")) after a scrape: CapEff" \
		"$(cap_field "$XRLD_PID/task/${t##*/}" CapEff)" 0000000000000000
done
check_ge "metrics threads found" "$m" 1
others=$(for t in /proc/"$XRLD_PID"/task/*; do
	case $(cat "$t/comm") in xrld-http|MHD*) continue ;; esac
	cap_field "$XRLD_PID/task/${t##*/}" CapEff
done | sort -u | tr '\n' ' ')
check_eq "every other thread: those three at most" "$others" "$want "

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
code=$(in_prot curl -s -o /dev/null -w '%{http_code}' -m 2 -X POST -H 'Content-Type: application/json' \
	--data-binary '{"rule":"api","key":"u1","cost":1}' "http://127.0.0.1:$HP/v1/check")
check_eq "/v1/check answered" "$code" 200
check_eq "xrld log: no failed confinement" "$(grep -c "couldn't confine" "$XRLD_LOG")" 0
finish
