#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_roles.sh - end to end: who may read and who may change.
#
# With a group `xrl` on the host (the package creates it; the test makes it
# when missing and removes what it made), xrld starts with an interface:
#
#   1. its control socket is 0660, owned by root and group xrl
#   2. as uid 64123 in group xrl: `status`, `stats` (the packet tier read
#      through xrld: the pins are root's), `top` and `deny list` work (exit
#      0, with the interface and its rule in the answers); `deny add` and
#      `allow add` are refused with "permission denied" (exit 1) and nothing
#      is denied; xrld logs each as a refused change by uid 64123; `top
#      --http` and `override list`, which show the keys callers send, are
#      refused too (root reads them)
#   3. as uid 64123 in no such group: `status` and `deny list` say
#      "permission denied" (exit 1), never that xrld is not running
#   4. the identity process's user (whose own group is xrl when the
#      package made it) is refused even `status`: the tier facing the
#      network never reads the control side
#   5. root: `deny add` and `deny del` still work
#   6. one xrld a pin directory: a second on the same pins (a socket of
#      its own) exits 1 naming the other, before anything is touched (no
#      socket made, the first answers and keeps its maps)
#   7. started through `ip netns exec` (which mounts a /sys without
#      bpffs), xrld mounts bpffs itself and starts
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_xrld_roles
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

require_xrld setpriv getent groupadd groupdel
MADE_GROUP=
if ! getent group xrl >/dev/null; then
	groupadd --system xrl || fatal "groupadd xrl failed"
	MADE_GROUP=1
fi
# the group goes when the test does, if the test made it
roles_cleanup() {
	local rc=$?
	[ -n "$MADE_GROUP" ] && groupdel xrl 2>/dev/null
	(exit "$rc")
	xrld_cleanup
}
xrld_lab ro$$
trap roles_cleanup EXIT
GID=$(getent group xrl | cut -d: -f3)

write_config "$XRLD_CONF" 50 20
printf 'http:\n  listen: 127.0.0.1:%s\n  rules:\n    - {name: api, key: client_ip, rate: 10/s, burst: 5}\n' \
	"$(free_port)" >>"$XRLD_CONF"
xrld_start

# as GROUPS ARGS...: xrlctl as uid 64123 (AS_UID), in the given
# supplementary groups
AS_UID=64123
as() {
	local groups=$1
	shift
	in_prot setpriv --reuid="$AS_UID" --regid="$AS_UID" \
		$([ -n "$groups" ] && echo "--groups=$groups" || echo --clear-groups) \
		"$XRLCTL" --socket "$XRLD_SOCK" --pin-dir "$PIN_DIR" "$@"
}

log "1. the socket: 0660, root and group xrl"
check_eq "socket mode" "$(stat -c %a "$XRLD_SOCK")" 660
check_eq "socket owner:group" "$(stat -c %U:%G "$XRLD_SOCK")" root:xrl
check_match "xrld says so" "$(cat "$XRLD_LOG")" "members of group xrl may read"

log "2. a member of xrl reads, and may not change"
out=$(as "$GID" status 2>&1); rc=$?
info "status: $(head -n 3 <<<"$out")"
check_rc "member: status" "$rc" 0
check_match "member: status names the interface" "$out" "$LAB_PROT_IF"
out=$(as "$GID" stats 2>&1); rc=$?
info "stats: $(head -n 4 <<<"$out")"
check_rc "member: stats" "$rc" 0
check_match "member: stats shows the rule (through xrld)" "$out" "syn"
out=$(as "$GID" --json stats 2>&1); rc=$?
check_rc "member: --json stats" "$rc" 0
check_eq "member: --json stats names the interface" \
	"$(jq_py "[i['interface'] for i in d['interfaces']]" <<<"$out" 2>&1)" "$LAB_PROT_IF"
out=$(as "$GID" top 2>&1); rc=$?
check_rc "member: top" "$rc" 0
out=$(as "$GID" deny list 2>&1); rc=$?
check_rc "member: deny list" "$rc" 0
# the keys callers send (API keys, logins) are root's to read
for verb in "top --http api" "override list"; do
	# shellcheck disable=SC2086  # the verb's words
	out=$(as "$GID" $verb 2>&1); rc=$?
	check_rc "member: $verb refused" "$rc" 1
	check_match "member: $verb says why" "$out" "permission denied: .* shows the keys callers send"
done
check_rc "root: top --http api" "$(ctl top --http api >/dev/null 2>&1; echo $?)" 0
out=$(as "$GID" deny add 198.51.100.7/32 2>&1); rc=$?
check_rc "member: deny add refused" "$rc" 1
check_match "member: deny add says permission denied" "$out" \
	"permission denied: .deny add. changes what xrld enforces, which only root may"
check_eq "member: nothing denied" "$(deny_field 198.51.100.7/32 origin)" absent
out=$(as "$GID" allow add 198.51.100.8/32 2>&1); rc=$?
check_rc "member: allow add refused" "$rc" 1
check_match "member: allow add says permission denied" "$out" "permission denied"
check_match "log: the refused change, by uid 64123" "$(cat "$XRLD_LOG")" \
	"warning: change refused: \`deny add 198.51.100.7/32\` by uid 64123 \(pid [0-9]+\): permission denied"

log "3. anyone else: permission denied, never 'not running'"
for verb in status "deny list" stats; do
	# shellcheck disable=SC2086  # the verb's words
	out=$(as "" $verb 2>&1); rc=$?
	info "$verb: $out"
	check_rc "other: $verb" "$rc" 1
	check_match "other: $verb says permission denied" "$out" "permission denied"
	check_eq "other: $verb does not say xrld is down" "$(grep -ci 'not running' <<<"$out")" 0
done

log "4. the identity process's user may not ask"
id_user=$(ctl --json status | jq_py "d['http']['process']['user']")
info "the identity process runs as $id_user"
if id_uid=$(id -u "$id_user" 2>/dev/null) && [ "$id_uid" != 0 ]; then
	out=$(AS_UID=$id_uid as "$GID" status 2>&1); rc=$?
	check_rc "identity user: status refused" "$rc" 1
	check_match "identity user: why" "$out" "permission denied: the identity process's user may not ask xrld"
else
	id_uid=$(ctl --json status | jq_py "d['http']['process']['user']")
	out=$(AS_UID=$id_uid as "$GID" status 2>&1); rc=$?
	check_rc "identity uid $id_uid: status refused" "$rc" 1
fi

log "5. root still changes"
ctl deny add 198.51.100.9/32 >/dev/null 2>&1
check_rc "root: deny add" "$?" 0
check_eq "root: denied" "$(deny_field 198.51.100.9/32 origin)" runtime
ctl deny del 198.51.100.9/32 >/dev/null 2>&1
check_rc "root: deny del" "$?" 0

log "6. one xrld a pin directory"
sock2=/run/xrl-test-ro2-$$.sock
out=$(nsenter --net="/run/netns/$LAB_PROT" -- "$XRLD" --config "$XRLD_CONF" --foreground \
	--socket "$sock2" --pin-dir "$PIN_DIR" 2>&1); rc=$?
info "second xrld: $out"
check_rc "a second xrld on the same pins" "$rc" 1
check_match "it names the other" "$out" "the pin directory $PIN_DIR is another running xrld's; nothing was touched"
check_eq "no socket made" "$([ -e "$sock2" ] && echo yes || echo no)" no
rm -f "$sock2"
check_match "the first still answers" "$(ctl status 2>&1)" "^xrld pid $XRLD_PID"

log "7. through ip netns exec: xrld mounts bpffs"
P7=$(free_port)
printf 'http:\n  listen: 127.0.0.1:%s\n  rules:\n    - {name: a, key: client_ip, rate: 1/s, burst: 1}\n' "$P7" \
	>"$LAB_TMP/netns.yaml"
sock3=/run/xrl-test-ro3-$$.sock
ip netns exec "$LAB_PROT" "$XRLD" --config "$LAB_TMP/netns.yaml" --foreground --socket "$sock3" \
	--pin-dir /sys/fs/bpf/xrl-ro3-$$ >"$LAB_TMP/netns.log" 2>&1 &
pid3=$!
XRLD_PIDS+=("$pid3")
wait_for 10 eval '[ -S "$sock3" ]'
check_eq "xrld under ip netns exec: running" "$(kill -0 "$pid3" 2>/dev/null && echo yes || echo no)" yes
check_match "it mounted bpffs" "$(cat "$LAB_TMP/netns.log")" "mounted bpffs at /sys/fs/bpf"
kill "$pid3" 2>/dev/null
wait "$pid3" 2>/dev/null
rm -f "$sock3"

finish
