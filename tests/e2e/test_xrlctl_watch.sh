#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrlctl_watch.sh - end to end: the live view. `xrlctl stats --watch`
# and `top --watch` redraw in place on a terminal, like top(1), and append
# blocks when piped.
#
#   1. xrld (rule syn: 50/s, burst 20, drop) on a veth lab; a SYN flood from
#      one source runs in the background
#   2. `stats --watch 0.5` in a pseudo-terminal (python pty) for 1.8 s:
#      one header line per screen, each screen starts with cursor home
#      (ESC[H) and ends with clear-below (ESC[J); no "---" separators;
#      the rate columns PASSED/s DROPPED/s SHADOW/s and per-second rates of
#      the global counters, the SYN-cookie ones included; the flood's
#      refusals in human-readable form (12.3k, 1.2M)
#   3. the same piped: no escape sequence, no screen header, one table per
#      block, a "--- HH:MM:SS" line between blocks, exact numbers
#   4. `top --watch 0.5`: in place on the terminal (ESC[H per screen, the
#      flooder's prefix shown), appended when piped; a bad --watch is a
#      usage error (2)
#
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
# shellcheck disable=SC2119,SC2317
set -u
XRL_TEST_NAME=test_xrlctl_watch
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

RATE=50
BURST=20
SRC=198.51.100.7

require_xrld
xrld_lab xw$$
start_server
write_config "$XRLD_CONF" "$RATE" "$BURST"
xrld_start

# on_pty SECONDS ARGS...: xrlctl ARGS in a pseudo-terminal (80x40) for
# SECONDS, then SIGINT; prints what the terminal received, raw.
on_pty() {
	local secs=$1
	shift
	"$XRL_PY" - "$secs" nsenter --net="/run/netns/$LAB_PROT" -- "$XRLCTL" --socket "$XRLD_SOCK" \
		--pin-dir "$PIN_DIR" "$@" <<'PY'
import fcntl, os, pty, select, signal, struct, sys, termios, time
secs, argv = float(sys.argv[1]), sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
out, end, sent = b"", time.monotonic() + secs, False
while True:
    t = end - time.monotonic()
    if t <= 0 and not sent:
        os.kill(pid, signal.SIGINT)
        sent, end = True, time.monotonic() + 2
        continue
    if t <= 0:
        break
    r, _, _ = select.select([fd], [], [], t)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
_, st = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.stderr.write("exit=%d\n" % (os.waitstatus_to_exitcode(st)))
PY
}
# piped SECONDS ARGS...: xrlctl ARGS into a pipe for SECONDS, then SIGINT
piped() {
	local secs=$1
	shift
	timeout --preserve-status -s INT "$secs" nsenter --net="/run/netns/$LAB_PROT" -- "$XRLCTL" \
		--socket "$XRLD_SOCK" --pin-dir "$PIN_DIR" "$@" | cat
}
ESC=$'\033'

log "1. a flood from $SRC in the background"
flood_bg "$LAB_TMP/flood.out" --dst "$LAB_PROT_IP" --dport 80 --sources "$SRC/32" \
	--threads 1 --cpus 0 --duration 6
sleep 0.3

log "2. stats --watch 0.5 on a terminal"
tty_out=$(on_pty 1.8 stats --watch 0.5 2>"$LAB_TMP/pty.err")
info "$(cat "$LAB_TMP/pty.err")"
check_eq "pty: exit status" "$(sed -n 's/^exit=//p' "$LAB_TMP/pty.err")" 0
# the screen is cleared once (ESC[H ESC[2J), then each screen starts at home
screens=$(grep -c "xrlctl stats, every 0.5s" <<<"$tty_out")
check_range "pty: screens (header lines) in 1.8 s" "$screens" 3 5
check_eq "pty: each screen drawn from home (ESC[H), once more to clear" \
	"$(grep -o "${ESC}\[H" <<<"$tty_out" | wc -l)" $((screens + 1))
check_eq "pty: each screen cleared below (ESC[J)" "$(grep -o "${ESC}\[J" <<<"$tty_out" | wc -l)" "$screens"
check_eq "pty: lines fit 80 columns" \
	"$(sed "s/${ESC}\[H/\n/g; s/${ESC}\[[0-9;]*[A-Za-z]//g; s/\r//g" <<<"$tty_out" | awk 'length > 80' | wc -l)" 0
check_eq "pty: no appended separators" "$(grep -c '^--- ' <<<"$tty_out")" 0
last=$(awk -v RS="${ESC}\\\\[H" 'END { print }' <<<"$tty_out" | sed "s/${ESC}\[[0-9;]*[A-Za-z]//g; s/\r//g")
info "last screen:"
while IFS= read -r l; do info "  | $l"; done <<<"$last"
check_match "pty: rate columns" "$last" "PASSED/s +DROPPED/s +SHADOW/s"
check_match "pty: syn row, human-readable drops and rate" "$last" \
	"^  syn +[0-9.]+k? +[0-9.]+[kMG] +0 +[0-9.]+ +[0-9.]+[kM] +0$"
check_match "pty: cookie counters with rates" "$last" "cookies_sent +[0-9.]+[kMG]? +[0-9.]+[kMG]?/s"
check_match "pty: global counters with rates" "$last" "seen +[0-9.]+[kMG] +[0-9.]+[kMG]/s"

log "3. stats --watch 0.5 piped"
p_out=$(piped 1.8 stats --watch 0.5)
check_eq "piped: escape sequences" "$(grep -c "$ESC" <<<"$p_out")" 0
check_eq "piped: screen headers" "$(grep -c 'xrlctl stats, every' <<<"$p_out")" 0
blocks=$(grep -c '^  RULE ' <<<"$p_out")
check_range "piped: blocks appended in 1.8 s" "$blocks" 3 5
check_eq "piped: a --- HH:MM:SS line between blocks" \
	"$(grep -cE '^--- [0-9]{2}:[0-9]{2}:[0-9]{2}$' <<<"$p_out")" $((blocks - 1))
check_match "piped: exact numbers" "$(grep -E '^  syn +[0-9]' <<<"$p_out" | tail -n 1)" \
	"^  syn +[0-9]+ +[0-9]+ +0 +[0-9.]+ +[0-9.]+ +0(\.0)?$"

log "4. top --watch 0.5"
tty_out=$(on_pty 1.3 top --watch 0.5 2>"$LAB_TMP/pty.err")
check_eq "top pty: exit status" "$(sed -n 's/^exit=//p' "$LAB_TMP/pty.err")" 0
screens=$(grep -c 'xrlctl top, every 0.5s' <<<"$tty_out")
check_range "top pty: screens (header lines)" "$screens" 2 4
check_eq "top pty: each screen drawn from home (ESC[H)" \
	"$(grep -o "${ESC}\[H" <<<"$tty_out" | wc -l)" $((screens + 1))
check_match "top pty: the flooder" "$tty_out" "$SRC/32"
p_out=$(piped 1.3 top --watch 0.5)
check_eq "top piped: escape sequences" "$(grep -c "$ESC" <<<"$p_out")" 0
check_range "top piped: appended blocks" "$(grep -c "$SRC/32" <<<"$p_out")" 2 4
ctl top --watch soon >/dev/null 2>&1
check_rc "top --watch soon" "$?" 2
flood_wait "$LAB_TMP/flood.out"

finish
