#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_cookie_deploy.sh - end to end, xrld on a veth with native XDP: xrl's
# own SYN cookies (XDP cookie, TC bpf_sk_assign_tcp_reqsk) where the old
# kernel path failed in deployment. xrld runs as a unit with
# ProtectKernelTunables=yes would: /proc/sys read-only in its mount
# namespace (unshare -m, /proc/sys bind-mounted read-only), for the whole test.
#
#   (c) xrld starts with `syn_cookies: on` under the read-only /proc/sys
#       (checked: a write there fails in xrld's mount namespace, and its log
#       has no sysctl error); a client connects through the cookie path
#       (cookie_reqsk +1)
#   (a) the application restarts (a new listening socket, checked by its
#       inode): 1 s later 5 of 5 new connections succeed, each through the
#       cookie path, with `on`; then with `auto` engaged (on_rate 200/s, a
#       short flood), the same
#   (b) 20 pps of spoofed SYNs with corrupted TCP checksums from random
#       sources in 10.128.0.0/9 for XRL_E2E_CSUM_SECS (60) s, while a real
#       client connects once a second: every one succeeds, none is reset or
#       fails in the client's kernel (Tcp AttemptFails, EstabResets), and
#       the bad SYNs arrived (xrl's cookies_sent or the kernel's Tcp
#       InCsumErrors)
#   (c) `xrlctl cookies web on`, `auto` and `off` each exit 0 and take
#       effect: status shows the mode, and a connection takes the cookie
#       path under on (and auto engaged), the kernel's under off
#   (d) tcp_syncookies and tcp_timestamps of the protected namespace are
#       unchanged after the attach and after each xrlctl cookies change
#
# Takes about XRL_E2E_CSUM_SECS + 40 s (100 s by default).
# Knobs: XRL_E2E_CSUM_SECS (60, the bad-checksum flood of (b)).
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_cookie_deploy
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

CSUM_SECS=${XRL_E2E_CSUM_SECS:-60}
CSUM_PPS=20

require_xrld curl ss unshare mount
xrld_lab cd$$
# A veth drops what an XDP program sends back (XDP_TX) unless its peer runs
# XDP too: give the client's end a program that passes everything.
atk_pass_xdp
start_server
APP_PID=$BG_PID

cat >"$XRLD_CONF" <<EOF
interfaces:
  - name: $LAB_PROT_IF
    mode: native
xdp:
  rules:
    - name: web
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: 100/s
      burst: 100
      syn_cookies: on
      syn_cookies_auto: { on_rate: 200/s, off_rate: 50/s, hold: 30s, min_on: 10m, queue_pct: 0 }
metrics: 127.0.0.1:9101
EOF

# xrld behind a read-only /proc/sys (ProtectKernelTunables=yes without
# systemd): a wrapper that xrld_start runs in place of xrld. Every step
# execs, so the pid xrld_start sees is xrld's.
cat >"$LAB_TMP/xrld-ro" <<EOF
#!/bin/sh
exec unshare -m sh -c 'mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec "\$0" "\$@"' "$XRLD" "\$@"
EOF
chmod +x "$LAB_TMP/xrld-ro"

# tunables: "tcp_syncookies tcp_timestamps" of the protected namespace.
tunables() { in_prot cat /proc/sys/net/ipv4/tcp_syncookies /proc/sys/net/ipv4/tcp_timestamps | paste -sd ' '; }
TUN0=$(tunables)

# listener_ino: the inode of the socket listening on port 80.
listener_ino() { in_prot ss -Hltne 'sport = :80' | sed -n 's/.* ino:\([0-9]*\).*/\1/p' | head -n 1; }

# restart_app: stop the HTTP server and start a new one on port 80 (a new
# listening socket), as a service restart does.
restart_app() {
	local ino0
	ino0=$(listener_ino)
	kill "$APP_PID" && wait "$APP_PID" 2>/dev/null
	wait_for 5 sh -c "! nsenter --net=/run/netns/$LAB_PROT ss -Hltn 'sport = :80' | grep -q LISTEN" ||
		fatal "the old server still listens"
	start_server
	APP_PID=$BG_PID
	check_eq "$1 a new listening socket (inode $ino0 before)" "$([ "$(listener_ino)" != "$ino0" ] && echo new)" new
}

# get: one HTTP request from the client namespace, a new connection; 0 on 200.
get() { [ "$(in_atk curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$LAB_PROT_IP/")" = 200 ]; }

# connects WHAT N: N new connections one after another, all must succeed;
# REQSK is then cookie_reqsk's rise over them.
connects() {
	local ok=0 r0 f0
	r0=$(xrl_stat global.cookie_reqsk); f0=$(xrl_stat global.cookie_reqsk_fail)
	for _ in $(seq "$2"); do get && ok=$((ok + 1)); done
	REQSK=$(( $(xrl_stat global.cookie_reqsk) - r0 ))
	check_eq "$1 connections that succeeded" "$ok of $2" "$2 of $2"
	check_eq "$1 cookie_reqsk_fail" $(( $(xrl_stat global.cookie_reqsk_fail) - f0 )) 0
}

# cookie_line: the line of xrlctl status with the interface's cookie modes.
cookie_line() { ctl status | grep -F "$LAB_PROT_IF SYN cookies:" | sed 's/^ *//'; }
# shellcheck disable=SC2317 # called through wait_for
mode_is() { [ "$(cookie_line)" = "$LAB_PROT_IF SYN cookies: web $1" ]; }
# check_mode WHAT MODE: xrlctl status shows web's cookies as MODE.
check_mode() { check_eq "$1 xrlctl status" "$(cookie_line)" "$LAB_PROT_IF SYN cookies: web $2"; }

log "(c) xrld with syn_cookies: on, /proc/sys read-only"
XRLD=$LAB_TMP/xrld-ro xrld_start
check_match "(c) /proc/sys is read-only for xrld" \
	"$(awk '$5 == "/proc/sys" { print $6 }' "/proc/$XRLD_PID/mountinfo" | tail -n 1)" "^ro,"
out=$(nsenter -t "$XRLD_PID" -m -n sh -c 'echo 1 >/proc/sys/net/ipv4/tcp_syncookies' 2>&1); rc=$?
check_eq "(c) a write to /proc/sys in xrld's namespace fails" "$([ $rc -ne 0 ] && echo fails)" fails
info "$out"
check_nomatch "(c) xrld logged no sysctl or read-only error" "$(cat "$XRLD_LOG")" \
	"[Rr]ead-only|sysctl|/proc/sys|EROFS"
check_mode "(c) at start:" on
check_match "(c) xrlctl status: xrl's own cookie path" "$(ctl status | grep -F 'SYN-cookie path')" "SYN-cookie path: xrl's own"
check_eq "(d) tunables after the attach" "$(tunables)" "$TUN0"
connects "(c) at start:" 1
check_eq "(c) the connection took the cookie path (cookie_reqsk)" "$REQSK" 1

log "(a) the application restarts, cookies on"
restart_app "(a) on:"
sleep 1
connects "(a) on, 1 s after the restart:" 5
check_eq "(a) on: each took the cookie path (cookie_reqsk)" "$REQSK" 5

log "(b) $CSUM_SECS s of $CSUM_PPS pps spoofed SYNs with bad TCP checksums, a client once a second"
xrl_snap; sent0=$(snap_get global.cookies_sent)
csum0=$(snmp prot Tcp InCsumErrors)
af0=$(snmp atk Tcp AttemptFails); er0=$(snmp atk Tcp EstabResets)
# Raw frames: a correct IPv4 header, a TCP SYN (MSS 1460) whose checksum is
# the right one with two bits flipped (never the same value in ones'
# complement).
bg_atk "$XRL_PY" -c '
import random, socket, struct, sys, time
dev, mac, dst, pps, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((dev, 0))
eth = bytes.fromhex(mac.replace(":", "")) + s.getsockname()[4] + b"\x08\x00"
d = socket.inet_aton(dst)
n, t0 = 0, time.time()
while time.time() < t0 + secs:
    src = struct.pack("!I", 0x0a800000 | random.getrandbits(23))
    tcp = struct.pack("!HHIIBBHHH", random.randint(1024, 65535), 80, random.getrandbits(32), 0,
                      6 << 4, 0x02, 64240, 0, 0) + b"\x02\x04\x05\xb4"
    bad = csum(src + d + struct.pack("!BBH", 0, 6, len(tcp)) + tcp) ^ 0x0101
    tcp = tcp[:16] + struct.pack("!H", bad) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.getrandbits(16), 0x4000, 64, 6, 0, src, d)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    s.send(eth + ip + tcp)
    n += 1
    time.sleep(max(0, t0 + n / pps - time.time()))
print(n)
' "$LAB_ATK_IF" "$LAB_PROT_MAC" "$LAB_PROT_IP" "$CSUM_PPS" "$CSUM_SECS" >"$LAB_TMP/csum.out" 2>&1
CSUM_PID=$BG_PID
ok=0 n=0 r0=$(xrl_stat global.cookie_reqsk)
t_end=$(( $(date +%s) + CSUM_SECS ))
while [ "$(date +%s)" -lt "$t_end" ]; do
	n=$((n + 1))
	get && ok=$((ok + 1))
	sleep 1
done
wait "$CSUM_PID"
reqsk=$(( $(xrl_stat global.cookie_reqsk) - r0 ))
bad_sent=$(cat "$LAB_TMP/csum.out")
xrl_snap
answered=$(( $(snap_get global.cookies_sent) - sent0 - reqsk ))
csum=$(( $(snmp prot Tcp InCsumErrors) - csum0 ))
info "sent $bad_sent bad SYNs; xrl answered $answered of them with a cookie, the kernel counted $csum InCsumErrors"
check_eq "(b) real connections that succeeded" "$ok of $n" "$n of $n"
check_ge "(b) ... one a second" "$n" $((CSUM_SECS * 3 / 4))
check_eq "(b) ... each through the cookie path (cookie_reqsk)" "$reqsk" "$ok"
check_eq "(b) the client's failed connection attempts (Tcp AttemptFails)" \
	$(( $(snmp atk Tcp AttemptFails) - af0 )) 0
check_eq "(b) the client's connections reset (Tcp EstabResets)" $(( $(snmp atk Tcp EstabResets) - er0 )) 0
check_range "(b) the bad SYNs were sent ($CSUM_PPS pps)" "${bad_sent:-x}" $((CSUM_SECS * CSUM_PPS * 9 / 10)) \
	$((CSUM_SECS * CSUM_PPS + 5))
check_range "(b) the bad SYNs arrived (cookies_sent + InCsumErrors)" $((answered + csum)) \
	$(( ${bad_sent:-0} * 99 / 100 )) $(( ${bad_sent:-0} + 5 ))

log "(c) xrlctl cookies web on|auto|off under the read-only /proc/sys"
out=$(ctl cookies web on 2>&1); rc=$?
check_rc "(c) cookies web on" "$rc" 0
info "$out"
check_mode "(c) on:" on
check_eq "(d) tunables after cookies on" "$(tunables)" "$TUN0"
connects "(c) on:" 1
check_eq "(c) on: the connection took the cookie path" "$REQSK" 1

out=$(ctl cookies web auto 2>&1); rc=$?
check_rc "(c) cookies web auto" "$rc" 0
info "$out"
check_mode "(c) auto, idle:" "auto (off)"
check_eq "(d) tunables after cookies auto" "$(tunables)" "$TUN0"
connects "(c) auto, idle:" 1
check_eq "(c) auto, idle: the kernel made the connection" "$REQSK" 0
flood --dst "$LAB_PROT_IP" --dport 80 --sources 10.128.0.0/9 --rate 1000 --duration 3
info "engaging flood: sent $FLOOD_SENT SYNs in $FLOOD_MS ms"
wait_for 5 mode_is "auto (on)"
check_mode "(c) auto, engaged:" "auto (on)"
check_eq "(c) xrlctl status --json: engaged" \
	"$(ctl --json status | jq_py "d['interfaces'][0]['syn_cookies']['web']")" "auto (on)"
check_eq "(d) tunables with auto engaged" "$(tunables)" "$TUN0"

log "(a) the application restarts, cookies auto (engaged)"
restart_app "(a) auto:"
sleep 1
connects "(a) auto engaged, 1 s after the restart:" 5
check_eq "(a) auto: each took the cookie path (cookie_reqsk)" "$REQSK" 5
check_mode "(a) auto, still engaged:" "auto (on)"

out=$(ctl cookies web off 2>&1); rc=$?
check_rc "(c) cookies web off" "$rc" 0
info "$out"
check_mode "(c) off:" off
check_eq "(d) tunables after cookies off" "$(tunables)" "$TUN0"
connects "(c) off:" 1
check_eq "(c) off: the kernel made the connection" "$REQSK" 0

check_eq "xrld still runs" "$(kill -0 "$XRLD_PID" 2>/dev/null && echo yes)" yes
finish
