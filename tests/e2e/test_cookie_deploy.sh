#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_cookie_deploy.sh - end to end, xrld on a veth with native XDP: SYN
# cookies where the old kernel path failed in deployment. Two runs of this
# one file, chosen by XRL_COOKIE_PATH:
#
#   own (the default): xrl's own cookies (XDP cookie, TC
#       bpf_sk_assign_tcp_reqsk). xrld runs as a unit with
#       ProtectKernelTunables=yes would: /proc/sys read-only in its mount
#       namespace (unshare -m, /proc/sys bind-mounted read-only), for the
#       whole test. A handshake through the cookie path is one cookie_reqsk.
#   kernel (test_cookie_fallback.sh): `xdp: { cookie_path: kernel }`, the
#       kernel's cookies (tcp_syncookies=2, tcp_timestamps=2, which xrld
#       sets itself: /proc/sys stays writable) and primer SYNs. A handshake
#       through the cookie path is one TcpExtSyncookiesRecv in the protected
#       namespace (xrl's cookie_reqsk does not move there).
#
#   (c) xrld starts with `syn_cookies: on` (own: under the read-only
#       /proc/sys, checked: a write there fails in xrld's mount namespace,
#       and its log has no sysctl error; kernel: its log says it set both
#       sysctls to 2); a client connects through the cookie path
#   (a) the application restarts (a new listening socket, checked by its
#       inode): 1 s later 5 of 5 new connections succeed, each through the
#       cookie path, with `on`; then with `auto` engaged (on_rate 200/s, a
#       short flood), the same. Kernel: xrld logged the new listener (its
#       next good SYN primes it; the listener watch)
#   (b) 20 pps of spoofed SYNs with corrupted TCP checksums from random
#       sources in 10.128.0.0/9 for XRL_E2E_CSUM_SECS (60) s; 2 s into it
#       the application restarts, and from 1 s after that a real client
#       connects once a second while the flood lasts: every one succeeds
#       through the cookie path, none is reset or fails in the client's
#       kernel (Tcp AttemptFails, EstabResets), and the bad SYNs arrived
#       (xrl's cookies_sent or the kernel's Tcp InCsumErrors). Kernel: no bad
#       SYN was passed to the kernel (as a primer: it would prime nothing,
#       and the new listener would reset every cookie ACK): InCsumErrors 0
#   (c) `xrlctl cookies web on`, `auto` and `off` each exit 0 and take
#       effect: status shows the mode, and a connection takes the cookie
#       path under on (and auto engaged), the kernel's ordinary one under
#       off and auto idle
#   (d) tcp_syncookies and tcp_timestamps of the protected namespace after
#       the attach and after each xrlctl cookies change: own: unchanged;
#       kernel: 2 2 while web's cookies answer (on, auto engaged), the
#       namespace's own values otherwise (auto idle, off)
#
# Takes about XRL_E2E_CSUM_SECS + 45 s (105 s by default).
# Knobs: XRL_E2E_CSUM_SECS (60, the bad-checksum flood of (b)),
# XRL_COOKIE_PATH (own or kernel), XRL_TEST_NAME (the name in the output).
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
COOKIE_PATH=${XRL_COOKIE_PATH:-own}
XRL_TEST_NAME=${XRL_TEST_NAME:-test_cookie_deploy}
# shellcheck source=tests/e2e/lib_xrld.sh
. "$(dirname "$0")/lib_xrld.sh"

case $COOKIE_PATH in
own | kernel) ;;
*) fatal "XRL_COOKIE_PATH=$COOKIE_PATH: want own or kernel" ;;
esac
kpath() { [ "$COOKIE_PATH" = kernel ]; }

CSUM_SECS=${XRL_E2E_CSUM_SECS:-60}
CSUM_PPS=20
CSUM_LEAD=2 # s of the bad flood before the application restarts

require_xrld curl ss unshare mount
if kpath; then xrld_lab cf$$; else xrld_lab cd$$; fi
# A veth drops what an XDP program sends back (XDP_TX) unless its peer runs
# XDP too: give the client's end a program that passes everything.
atk_pass_xdp
start_server
APP_PID=$BG_PID

XDP_PATH_YAML=
kpath && XDP_PATH_YAML='  cookie_path: kernel'
cat >"$XRLD_CONF" <<EOC
interfaces:
  - name: $LAB_PROT_IF
    mode: native
xdp:
$XDP_PATH_YAML
  rules:
    - name: web
      match: { proto: tcp, tcp_flags: syn, dst_ports: [80] }
      rate: 100/s
      burst: 100
      syn_cookies: on
      syn_cookies_auto: { on_rate: 200/s, off_rate: 50/s, hold: 30s, min_on: 10m, queue_pct: 0 }
metrics: 127.0.0.1:9101
EOC

# On the own path, xrld behind a read-only /proc/sys (ProtectKernelTunables=yes
# without systemd): a wrapper that xrld_start runs in place of xrld. Every
# step execs, so the pid xrld_start sees is xrld's. The kernel's path writes
# two sysctls itself: xrld runs as it is.
cat >"$LAB_TMP/xrld-ro" <<EOC
#!/bin/sh
exec unshare -m sh -c 'mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys && exec "\$0" "\$@"' "$XRLD" "\$@"
EOC
chmod +x "$LAB_TMP/xrld-ro"

# tunables: "tcp_syncookies tcp_timestamps" of the protected namespace.
tunables() { in_prot cat /proc/sys/net/ipv4/tcp_syncookies /proc/sys/net/ipv4/tcp_timestamps | paste -sd ' '; }
TUN0=$(tunables)
# tun_want live|idle: what tunables should say while web's cookies answer
# (live) or not (idle): own path: the namespace's own values always; the
# kernel's: 2 2 while live (docs/policy.md, syn_cookies).
tun_want() { if kpath && [ "$1" = live ]; then echo "2 2"; else echo "$TUN0"; fi; }
# check_tun WHAT live|idle
check_tun() { check_eq "(d) tunables $1" "$(tunables)" "$(tun_want "$2")"; }

# hs_count / hs_fail: handshakes completed through the cookie path, and
# cookie ACKs that failed there. Own: xrl's TC program (cookie_reqsk,
# cookie_reqsk_fail); kernel: the kernel's cookie check in the protected
# namespace (TcpExt SyncookiesRecv, SyncookiesFailed).
HS_NAME=cookie_reqsk
kpath && HS_NAME=SyncookiesRecv
hs_count() { if kpath; then snmp prot TcpExt SyncookiesRecv; else xrl_stat global.cookie_reqsk; fi; }
hs_fail() { if kpath; then snmp prot TcpExt SyncookiesFailed; else xrl_stat global.cookie_reqsk_fail; fi; }

# newl_count: how often xrld logged a new listener on a cookie port (the
# kernel path's listener watch).
newl_count() { grep -c 'a listener on a cookie port is new: its next SYN primes it' "$XRLD_LOG"; }

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
# HS is then hs_count's rise over them (and the kernel path's cookie
# primers and xrl's cookies_valid are said).
connects() {
	local ok=0 h0 f0 p0 v0
	h0=$(hs_count); f0=$(hs_fail)
	xrl_snap; p0=$(snap_get global.cookie_primers); v0=$(snap_get global.cookies_valid)
	for _ in $(seq "$2"); do get && ok=$((ok + 1)); done
	HS=$(( $(hs_count) - h0 ))
	xrl_snap
	info "$1 $HS_NAME +$HS, xrl's cookie_primers +$(( $(snap_get global.cookie_primers) - p0 ))," \
		"cookies_valid +$(( $(snap_get global.cookies_valid) - v0 ))"
	check_eq "$1 connections that succeeded" "$ok of $2" "$2 of $2"
	if kpath; then
		check_eq "$1 SyncookiesFailed" $(( $(hs_fail) - f0 )) 0
	else
		check_eq "$1 cookie_reqsk_fail" $(( $(hs_fail) - f0 )) 0
	fi
}

# cookie_line: the line of xrlctl status with the interface's cookie modes.
cookie_line() { ctl status | grep -F "$LAB_PROT_IF SYN cookies:" | sed 's/^ *//'; }
# shellcheck disable=SC2317 # called through wait_for
mode_is() { [ "$(cookie_line)" = "$LAB_PROT_IF SYN cookies: web $1" ]; }
# check_mode WHAT MODE: xrlctl status shows web's cookies as MODE.
check_mode() { check_eq "$1 xrlctl status" "$(cookie_line)" "$LAB_PROT_IF SYN cookies: web $2"; }

if kpath; then
	log "(c) xrld with syn_cookies: on, cookie_path: kernel (tunables before: $TUN0)"
	xrld_start
	check_match "(c) xrld set tcp_syncookies to 2" "$(cat "$XRLD_LOG")" "tcp_syncookies [0-9] -> 2"
	check_match "(c) xrld set tcp_timestamps to 2" "$(cat "$XRLD_LOG")" "tcp_timestamps [0-9] -> 2"
	check_nomatch "(c) xrld logged no sysctl or read-only error" "$(cat "$XRLD_LOG")" \
		"[Rr]ead-only|EROFS|couldn't (set|restore)"
	check_mode "(c) at start:" on
	check_match "(c) xrlctl status: the kernel's cookie path" "$(ctl status | grep -F 'SYN-cookie path')" \
		"SYN-cookie path: the kernel's"
else
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
fi
check_tun "after the attach" live
connects "(c) at start:" 1
check_eq "(c) the connection took the cookie path ($HS_NAME)" "$HS" 1

# restart_checks WHAT: after restart_app and a second: 5 of 5 connections,
# each through the cookie path, and (kernel) the new listener was noticed.
restart_checks() {
	local l0=$NEWL0
	connects "(a) $1, 1 s after the restart:" 5
	check_eq "(a) $1: each took the cookie path ($HS_NAME)" "$HS" 5
	kpath && check_ge "(a) $1: xrld logged the new listener (times)" $(( $(newl_count) - l0 )) 1
}

log "(a) the application restarts, cookies on"
NEWL0=$(newl_count)
restart_app "(a) on:"
sleep 1
restart_checks on

log "(b) $CSUM_SECS s of $CSUM_PPS pps spoofed SYNs with bad TCP checksums; the application restarts" \
	"${CSUM_LEAD} s into it; a client once a second from 1 s after"
xrl_snap; sent0=$(snap_get global.cookies_sent); prim0=$(snap_get global.cookie_primers)
fb0=$(snap_get global.cookie_fallback)
h0=$(hs_count); f0=$(hs_fail)
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
# A new listener while bad SYNs come 20 to the client's 1: on the kernel's
# path its first primer must be a good SYN, or every cookie ACK is reset.
sleep "$CSUM_LEAD"
NEWL0=$(newl_count)
restart_app "(b)"
sleep 1
ok=0 n=0
while kill -0 "$CSUM_PID" 2>/dev/null; do
	n=$((n + 1))
	get && ok=$((ok + 1))
	sleep 1
done
wait "$CSUM_PID"
hs=$(( $(hs_count) - h0 ))
bad_sent=$(cat "$LAB_TMP/csum.out")
xrl_snap
prim=$(( $(snap_get global.cookie_primers) - prim0 ))
# cookies_sent counts the client's SYNs too (one a connection), those not
# passed as primers
answered=$(( $(snap_get global.cookies_sent) - sent0 - (n - prim) ))
csum=$(( $(snmp prot Tcp InCsumErrors) - csum0 ))
info "sent $bad_sent bad SYNs; xrl answered $answered of them with a cookie, the kernel counted $csum" \
	"InCsumErrors; $HS_NAME +$hs, xrl's cookie_primers +$prim," \
	"cookie_fallback +$(( $(snap_get global.cookie_fallback) - fb0 ))"
check_eq "(b) real connections that succeeded" "$ok of $n" "$n of $n"
check_ge "(b) ... one a second" "$n" $(( (CSUM_SECS - CSUM_LEAD - 1) * 3 / 4 ))
check_eq "(b) ... each through the cookie path ($HS_NAME)" "$hs" "$ok"
if kpath; then
	check_eq "(b) ... cookie ACKs the kernel refused (SyncookiesFailed)" $(( $(hs_fail) - f0 )) 0
	check_ge "(b) xrld logged the new listener (times)" $(( $(newl_count) - NEWL0 )) 1
	check_ge "(b) primers passed to the kernel (good SYNs)" "$prim" 1
	check_eq "(b) no bad SYN reached the kernel (InCsumErrors)" "$csum" 0
else
	check_eq "(b) ... cookie_reqsk_fail" $(( $(hs_fail) - f0 )) 0
fi
check_eq "(b) the client's failed connection attempts (Tcp AttemptFails)" \
	$(( $(snmp atk Tcp AttemptFails) - af0 )) 0
check_eq "(b) the client's connections reset (Tcp EstabResets)" $(( $(snmp atk Tcp EstabResets) - er0 )) 0
check_range "(b) the bad SYNs were sent ($CSUM_PPS pps)" "${bad_sent:-x}" $((CSUM_SECS * CSUM_PPS * 9 / 10)) \
	$((CSUM_SECS * CSUM_PPS + 5))
check_range "(b) the bad SYNs arrived (cookies_sent + InCsumErrors)" $((answered + csum)) \
	$(( ${bad_sent:-0} * 99 / 100 )) $(( ${bad_sent:-0} + 5 ))

if kpath; then
	log "(c) xrlctl cookies web on|auto|off, the kernel's path"
else
	log "(c) xrlctl cookies web on|auto|off under the read-only /proc/sys"
fi
out=$(ctl cookies web on 2>&1); rc=$?
check_rc "(c) cookies web on" "$rc" 0
info "$out"
check_mode "(c) on:" on
check_tun "after cookies on" live
connects "(c) on:" 1
check_eq "(c) on: the connection took the cookie path" "$HS" 1

out=$(ctl cookies web auto 2>&1); rc=$?
check_rc "(c) cookies web auto" "$rc" 0
info "$out"
check_mode "(c) auto, idle:" "auto (off)"
check_tun "after cookies auto" idle
connects "(c) auto, idle:" 1
check_eq "(c) auto, idle: the kernel made the connection" "$HS" 0
flood --dst "$LAB_PROT_IP" --dport 80 --sources 10.128.0.0/9 --rate 1000 --duration 3
info "engaging flood: sent $FLOOD_SENT SYNs in $FLOOD_MS ms"
wait_for 5 mode_is "auto (on)"
check_mode "(c) auto, engaged:" "auto (on)"
check_eq "(c) xrlctl status --json: engaged" \
	"$(ctl --json status | jq_py "d['interfaces'][0]['syn_cookies']['web']")" "auto (on)"
check_tun "with auto engaged" live

log "(a) the application restarts, cookies auto (engaged)"
NEWL0=$(newl_count)
restart_app "(a) auto:"
sleep 1
restart_checks "auto engaged"
check_mode "(a) auto, still engaged:" "auto (on)"

out=$(ctl cookies web off 2>&1); rc=$?
check_rc "(c) cookies web off" "$rc" 0
info "$out"
check_mode "(c) off:" off
check_tun "after cookies off" idle
connects "(c) off:" 1
check_eq "(c) off: the kernel made the connection" "$HS" 0

check_eq "xrld still runs" "$(kill -0 "$XRLD_PID" 2>/dev/null && echo yes)" yes
finish
