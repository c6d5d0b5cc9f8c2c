#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_deb.sh - end to end: the Debian package (make deb), installed for real
# with dpkg on this machine, used, removed and purged.
#
#   1. the package builds; Depends names only runtime libraries, each of them
#      in scripts/install-deps.sh --runtime's set (or libc6); lintian reports
#      no error and no warning (each tag left is overridden with its reason,
#      scripts/deb/lintian-overrides); its Version is scripts/version.sh's
#   2. dpkg -i: the files are where the package says; nothing is started;
#      the conffile is the shadow-only template, and xrld --check passes it;
#      xrld, xrlctl and xrl-load --version print the package's Version; every
#      man page is gzip -9n and man -l renders xrl-load(8) without a warning;
#      the copyright and the changelog are in /usr/share/doc/xrl; the group
#      xrl exists, and the user xrl (the identity process) is not in it; the
#      installed XDP object loads through iproute2 (the veth peer's use)
#   3. the unit's ExecStart, run by hand in a lab namespace whose interface is
#      named eth0 as in the template: xrld comes up attached, every rule in
#      shadow; stopping it leaves the program attached (fail static)
#   4. dpkg -r (in that namespace, as an operator on the host would be): the
#      program is detached and its pins removed, every file of the package is
#      gone but the conffile, the group xrl stays; dpkg -P removes the
#      conffile, and the group if the package made it (one there before
#      stays)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_deb
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

require_env dpkg dpkg-deb dpkg-shlibdeps lintian man gzip getent
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
ver=$(dpkg-deb -f "$deb" Version)
check_eq "Version is scripts/version.sh's" "$ver" "$("$XRL_ROOT/scripts/version.sh")"
check_match "Version starts with the VERSION file's" "$ver" "^$(sed 's/\./\\./g' "$XRL_ROOT/VERSION")(\\+|$)"
# as root lintian says so on stderr, which is all it says there
lint=$(lintian "$deb" 2>/dev/null)
[ -z "$lint" ] || info "lintian: $(tr '\n' '|' <<<"$lint")"
check_eq "lintian: errors (E:)" "$(grep -c '^E: ' <<<"$lint")" 0
check_eq "lintian: warnings (W:; or an override and its reason)" "$(grep -c '^W: ' <<<"$lint")" 0
had_group=$(getent group xrl >/dev/null && echo yes || echo no)
info "the group xrl before the install: $([ "$had_group" = yes ] && echo present || echo absent)"

log "2. dpkg -i"
out=$(dpkg -i "$deb" 2>&1); rc=$?
info "$(tail -n 2 <<<"$out")"
check_eq "dpkg -i (exit status)" "$rc" 0
for f in /usr/sbin/xrld /usr/sbin/xrlctl /usr/sbin/xrl-load /usr/lib/xrl/xrl.bpf.o \
	/lib/systemd/system/xrld.service /usr/share/man/man8/xrld.8.gz /usr/share/man/man8/xrlctl.8.gz \
	/usr/share/man/man8/xrl-load.8.gz /usr/share/man/man5/xrl-policy.5.gz \
	/usr/share/doc/xrl/copyright /usr/share/doc/xrl/changelog.gz /etc/xrl/policy.yaml; do
	check_eq "installed: $f" "$([ -e "$f" ] && echo yes)" yes
done
for b in xrld xrlctl xrl-load; do
	check_eq "$b --version is the package's" "$(/usr/sbin/$b --version 2>&1)" "$b $ver"
done
# gzip -9n: magic, deflate, no flags (no name), mtime 0, extra flags 2 (-9)
bad=
for f in $(dpkg -L xrl | grep '^/usr/share/man/'); do
	[ -f "$f" ] || continue
	[ "$(od -An -tx1 -N9 "$f" | tr -d ' \n')" = 1f8b08000000000002 ] || bad+="$f "
done
check_eq "every man page is gzip -9n" "${bad:-all}" all
out=$(MANWIDTH=80 man --warnings -l /usr/share/man/man8/xrl-load.8.gz 2>"$LAB_TMP/man.err")
check_match "man -l renders xrl-load(8)" "$out" '^ +xrl-load - load, feed and read'
check_match "xrl-load(8) has every command" "$(grep -E '^ +(attach|policy|stats|deny|allow|detach) IFACE' <<<"$out" | awk '{ print $1 }' | sort -u | tr '\n' ' ')" \
	'^allow attach deny detach policy stats $'
check_eq "man --warnings: none for xrl-load(8)" "$(tr '\n' '|' <"$LAB_TMP/man.err")" ""
check_match "copyright is machine-readable (DEP-5)" "$(head -n 1 /usr/share/doc/xrl/copyright)" \
	'^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/$'
check_match "the changelog's entry is this version" "$(zcat /usr/share/doc/xrl/changelog.gz | head -n 1)" \
	"^xrl \\($(sed 's/[.+]/\\&/g' <<<"$ver")\\) "
check_nomatch "no maintainer address on localhost" \
	"$(dpkg-deb -f "$deb" Maintainer; zcat /usr/share/doc/xrl/changelog.gz)" '@localhost'
grp=$(getent group xrl)
check_match "the group xrl exists (a system group)" "$grp" '^xrl:[^:]*:[0-9]+:'
gid=$(cut -d: -f3 <<<"$grp")
check_range "the group xrl is a system group (gid)" "${gid:-x}" 100 999
check_eq "the user xrl exists" "$(getent passwd xrl >/dev/null && echo yes)" yes
check_eq "the user xrl's group is not xrl (the identity process is no operator)" \
	"$([ "$(id -g xrl 2>/dev/null)" = "$gid" ] && echo xrl || echo other)" other
out=$(ip -n "$LAB_ATK" link set dev "$LAB_ATK_IF" xdpdrv obj /usr/lib/xrl/xrl.bpf.o sec xdp 2>&1)
check_eq "/usr/lib/xrl/xrl.bpf.o loads through iproute2" "${out:-loaded}" loaded
ip -n "$LAB_ATK" link set dev "$LAB_ATK_IF" xdpdrv off
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
check_eq "dpkg -r keeps the group xrl" "$(getent group xrl >/dev/null && echo present || echo absent)" present
in_prot dpkg -P xrl >/dev/null 2>&1
check_eq "dpkg -P removes the policy directory" "$([ -e /etc/xrl ] && echo present || echo absent)" absent
# the package made the group only if there was none
check_eq "dpkg -P: the group xrl as before the install" \
	"$(getent group xrl >/dev/null && echo yes || echo no)" "$had_group"
finish
