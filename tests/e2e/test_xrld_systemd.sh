#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_systemd.sh - end to end: what xrld tells systemd and journald,
# without systemd. A python listener on a unix datagram socket stands for
# systemd's notify socket (an abstract name, "@...", as systemd may pass),
# and records each message with the monotonic time it arrived.
#
#   1. started with NOTIFY_SOCKET, xrld sends READY=1 (with MAINPID, its
#      pid) once it answers, and by then the program is attached
#   2. SIGHUP: RELOADING=1 with MONOTONIC_USEC (the reload's start, on
#      CLOCK_MONOTONIC, as systemd 253 wants it), then READY=1
#   3. the unit's ExecReload, `xrlctl policy apply FILE`: a broken file
#      exits 1 (what systemctl reload reports) with RELOADING=1 and READY=1
#      around it and STATUS saying it was refused; a good file exits 0
#   4. SIGTERM: STOPPING=1
#   5. journald: with JOURNAL_STREAM naming stderr (sd-daemon), the error
#      of `xrld --check` on a broken file starts with <3> (priority err);
#      with JOURNAL_STREAM naming another stream, it does not
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2119,SC2317  # helpers with optional arguments; functions run through wait_for
set -u
XRL_TEST_NAME=test_xrld_systemd
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

require_xrld ss
xrld_lab sd$$
write_config "$XRLD_CONF" 50 20
NOTES=$LAB_TMP/notify.log
SOCK_NAME=@xrl-test-notify-$$

# The listener: one line per message, "MONOTONIC_NS|KEY=V|KEY=V". Abstract
# unix names belong to a network namespace: it listens in xrld's.
: >"$NOTES"
bg_prot "$XRL_PY" -u -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + sys.argv[1][1:])
out = open(sys.argv[2], "a", buffering=1)
while True:
    m = s.recv(4096).decode()
    out.write("%d|%s\n" % (time.monotonic_ns(), m.replace("\n", "|")))
' "$SOCK_NAME" "$NOTES"
sleep 0.3

# note_count RE: messages received so far matching RE.
note_count() { grep -Ec -- "$1" "$NOTES"; }
notes_at_least() { [ "$(wc -l <"$NOTES")" -ge "$1" ]; }

log "1. start with NOTIFY_SOCKET=$SOCK_NAME"
NOTIFY_SOCKET=$SOCK_NAME xrld_start
wait_for 5 notes_at_least 1
sed 's/^/    /' "$NOTES"
first=$(head -n 1 "$NOTES")
check_match "first message: READY=1" "$first" "\|READY=1(\||$)"
check_match "first message: MAINPID is xrld's pid" "$first" "\|MAINPID=$XRLD_PID(\||$)"
check_eq "program attached when READY=1 came" \
	"$(in_prot ip link show dev "$LAB_PROT_IF" | grep -c 'prog/xdp')" 1
check_match "xrld log: ready" "$(cat "$XRLD_LOG")" "info: ready: 1 interface"

log "2. SIGHUP: RELOADING=1 (MONOTONIC_USEC), then READY=1"
n0=$(wc -l <"$NOTES")
t_hup=$("$XRL_PY" -c 'import time; print(time.monotonic_ns())')
kill -HUP "$XRLD_PID"
wait_for 5 notes_at_least $((n0 + 2))
tail -n +"$((n0 + 1))" "$NOTES" | sed 's/^/    /'
m1=$(sed -n "$((n0 + 1))p" "$NOTES")
m2=$(sed -n "$((n0 + 2))p" "$NOTES")
check_match "after SIGHUP, first: RELOADING=1" "$m1" "\|RELOADING=1(\||$)"
usec=$(grep -Eo 'MONOTONIC_USEC=[0-9]+' <<<"$m1" | cut -d= -f2)
check_range "MONOTONIC_USEC - the monotonic time of the SIGHUP (ms)" \
	"$(( (${usec:-0} - t_hup / 1000) / 1000 ))" 0 2000
check_match "after SIGHUP, second: READY=1" "$m2" "\|READY=1(\||$)"
check_match "after SIGHUP, second: STATUS says enforcing" "$m2" "STATUS=enforcing the policy from"

log "3. ExecReload: xrlctl policy apply"
bad=$LAB_TMP/bad.yaml
sed 's|burst: 20|burst: -3|' "$XRLD_CONF" >"$bad"
n0=$(wc -l <"$NOTES")
out=$(ctl policy apply "$bad" 2>&1); rc=$?
info "$out"
check_rc "policy apply of a broken file" "$rc" 1
wait_for 5 notes_at_least $((n0 + 2))
m1=$(sed -n "$((n0 + 1))p" "$NOTES")
m2=$(sed -n "$((n0 + 2))p" "$NOTES")
check_match "refused apply, first: RELOADING=1 with MONOTONIC_USEC" "$m1" "RELOADING=1\|MONOTONIC_USEC=[0-9]+"
check_match "refused apply, second: READY=1, STATUS refused" "$m2" "READY=1\|STATUS=reload of .*bad.yaml refused"
n0=$(wc -l <"$NOTES")
ctl policy apply "$XRLD_CONF" >/dev/null 2>&1
check_rc "policy apply of the good file" "$?" 0
wait_for 5 notes_at_least $((n0 + 2))
check_match "good apply: READY=1 after" "$(sed -n "$((n0 + 2))p" "$NOTES")" "READY=1\|STATUS=enforcing"

log "4. SIGTERM: STOPPING=1"
xrld_kill TERM
check_eq "STOPPING=1 received" "$(note_count '\|STOPPING=1(\||$)')" 1

log "5. journald: the error of xrld --check carries priority 3"
err=$LAB_TMP/stderr
JOURNAL_STREAM=$(stat -c '%d:%i' "$LAB_TMP") "$XRLD" --check "$bad" 2>"$err"
check_rc "xrld --check of a broken file" "$?" 1
check_match "JOURNAL_STREAM names another stream: no prefix" "$(cat "$err")" "^xrld: error: .*bad.yaml:[0-9]+:[0-9]+: "
# the file exists before the command: its dev:ino is stderr's
: >"$err"
js=$(stat -c '%d:%i' "$err")
JOURNAL_STREAM=$js "$XRLD" --check "$bad" 2>"$err"
check_match "JOURNAL_STREAM is stderr: <3> starts the line" "$(cat "$err")" "^<3>xrld: error: .*bad.yaml:[0-9]+:[0-9]+: "
finish
