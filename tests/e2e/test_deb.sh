#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_deb.sh - end to end: the Debian package (make deb), installed for real
# with dpkg on this machine, used, removed and purged.
#
#   1. the package builds; Depends names only runtime libraries, each of them
#      in scripts/install-deps.sh --runtime's set (or libc6)
#   2. dpkg -i: the files are where the package says; nothing is started;
#      the conffile is the shadow-only template, and xrld --check passes it
#   3. the unit's ExecStart, run by hand in a lab namespace whose interface is
#      named eth0 as in the template: xrld comes up attached, every rule in
#      shadow; stopping it leaves the program attached (fail static)
#   4. dpkg -r (in that namespace, as an operator on the host would be): the
#      program is detached and its pins removed, every file of the package is
#      gone but the conffile; dpkg -P removes that too
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_deb
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

require_env dpkg dpkg-deb dpkg-shlibdeps
if dpkg-query -W -f='${Status}' xrl 2>/dev/null | grep -q 'install ok'; then
	skip "an xrl package is installed on this machine already: not touching it"
fi
lab_up db$$
in_prot ip link set dev "$LAB_PROT_IF" name eth0 || fatal "couldn't rename the lab interface"
LAB_PROT_IF=eth0
require_native_xdp
trap 'in_prot dpkg -P xrl >/dev/null 2>&1; lab_cleanup' EXIT

log "1. make deb"
deb=$(cd "$XRL_ROOT" && scripts/deb/build.sh "${BUILD:-build}" 2>&1 | tail -n 1)
info "$deb"
check_eq "package built" "$([ -f "$XRL_ROOT/$deb" ] && echo yes)" yes
deb=$XRL_ROOT/$deb
deps=$(dpkg-deb -f "$deb" Depends)
info "Depends: $deps"
runtime=$(sed -n '/^RUNTIME=(/,/^)/p' "$XRL_ROOT/scripts/install-deps.sh" | tr -s ' \t\n()' ' ')
bad=
for d in $(tr ',' '\n' <<<"$deps" | awk '{ print $1 }'); do
	[ "$d" = libc6 ] && continue
	[[ " $runtime " == *" $d "* ]] || bad+="$d "
done
check_eq "every dependency is in install-deps.sh --runtime" "${bad:-none}" none

log "2. dpkg -i"
out=$(dpkg -i "$deb" 2>&1); rc=$?
info "$(tail -n 2 <<<"$out")"
check_eq "dpkg -i (exit status)" "$rc" 0
for f in /usr/sbin/xrld /usr/sbin/xrlctl /usr/sbin/xrl-load /usr/lib/xrl/xrl.bpf.o \
	/lib/systemd/system/xrld.service /usr/share/man/man8/xrld.8 /usr/share/man/man5/xrl-policy.5 \
	/etc/xrl/policy.yaml; do
	check_eq "installed: $f" "$([ -e "$f" ] && echo yes)" yes
done
check_eq "the unit runs the installed xrld" \
	"$(grep -c '^ExecStart=/usr/sbin/xrld ' /lib/systemd/system/xrld.service)" 1
check_eq "nothing started (no xrld process)" "$(pgrep -xc xrld)" 0
check_eq "conffile is the shadow template" \
	"$(cmp -s "$XRL_ROOT/docs/examples/shadow-template.yaml" /etc/xrl/policy.yaml && echo same)" same
sum=$(/usr/sbin/xrld --check /etc/xrl/policy.yaml 2>&1); rc=$?
check_eq "xrld --check /etc/xrl/policy.yaml (exit status)" "$rc" 0
check_match "every rule in shadow" "$sum" ' shadow$'
check_nomatch "no rule drops" "$sum" ', drop$'

log "3. the unit's ExecStart by hand, in the lab (interface eth0)"
sock=$LAB_TMP/xrld.sock
bg_prot /usr/sbin/xrld --config /etc/xrl/policy.yaml --foreground --socket "$sock" \
	>"$LAB_TMP/xrld.log" 2>&1
pid=$BG_PID
up=no
for _ in $(seq 100); do
	in_prot /usr/sbin/xrlctl --socket "$sock" status >/dev/null 2>&1 && { up=yes; break; }
	sleep 0.1
done
check_eq "xrld answers" "$up" yes
check_eq "attached on eth0" "$(in_prot ip link show dev eth0 | grep -c 'prog/xdp')" 1
ps=$(in_prot /usr/sbin/xrlctl --socket "$sock" policy show 2>&1)
check_match "the running policy: rule syn in shadow" "$ps" 'syn: .*, shadow'
kill -TERM "$pid"; wait "$pid" 2>/dev/null
check_eq "stopped: the program stays attached (fail static)" \
	"$(in_prot ip link show dev eth0 | grep -c 'prog/xdp')" 1

log "4. dpkg -r, then dpkg -P"
files=$(dpkg -L xrl | while read -r f; do [ -f "$f" ] && echo "$f"; done)
out=$(in_prot dpkg -r xrl 2>&1); rc=$?
info "$(tail -n 3 <<<"$out")"
check_eq "dpkg -r (exit status)" "$rc" 0
check_eq "no program left on eth0" "$(in_prot ip link show dev eth0 | grep -c 'prog/xdp')" 0
check_eq "pins removed" "$([ -e /sys/fs/bpf/xrl/eth0 ] && echo present || echo absent)" absent
left=$(for f in $files; do [ -e "$f" ] && echo "$f"; done | tr '\n' ' ')
check_eq "files left after dpkg -r: only the conffile" "$left" "/etc/xrl/policy.yaml "
in_prot dpkg -P xrl >/dev/null 2>&1
check_eq "dpkg -P removes the policy directory" "$([ -e /etc/xrl ] && echo present || echo absent)" absent
finish
