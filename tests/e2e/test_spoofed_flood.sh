#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_spoofed_flood.sh - end to end, native XDP on a veth: a flood of
# 1,000,000 distinct spoofed sources (one SYN each, 100.64.0.0/10, xrl-gen
# as fast as it goes) against a rule with `syn_cookies: on`, and a
# legitimate client meanwhile:
#
#   - every one of its requests succeeds (at least 50 sequential
#     connections, each sending a request and reading the whole answer);
#     every other one reuses the client port of the one before, so it meets
#     the server's time-wait socket of that 4-tuple (the server closes
#     first): xrl must leave such a SYN to the kernel, which lets a new
#     SYN replace a time-wait socket; answered with an XDP cookie, its ACK
#     went to the time-wait socket and the client hung (caught here);
#   - xrl answered (nearly) every spoofed SYN, and the kernel's
#     TcpExtSyncookiesSent barely moved: at most the client's reusing SYNs
#     (the kernel answers those, with tcp_syncookies=2 by a cookie) and a
#     primer or two;
#   - TcpExtListenOverflows stays 0;
#   - the bucket table (the pinned xrl_buckets, read with bpftool) holds no
#     entry for a spoofed source, and does hold the client's.
#
# Knobs: XRL_E2E_SOURCES (1000000). Exit: 0 pass, 1 fail, 77 skip (never
# under CI=true).
set -u
XRL_TEST_NAME=test_spoofed_flood
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"

SOURCES=${XRL_E2E_SOURCES:-1000000}
SPOOF_NET=100.64.0.0/10  # outside the lab (10.200.0.0/24)
GEN=$XRL_ROOT/build/xrl-gen
MIN_REQ=50

require_env bpftool curl "$XRL_PY"
[ -x "$GEN" ] || fatal "$GEN is missing: make all"
lab_up sf$$
require_native_xdp
# A veth drops the frames an XDP program sends back (XDP_TX) unless its
# peer runs XDP too: the client's end passes everything (xrl, no policy).
atk_pass_xdp
start_server

RULE="name=web,proto=tcp,flags=syn,ports=80,rate=100/s,burst=100,cookies=on"
log "attach xrl natively on $LAB_PROT_IF, rule $RULE"
xrl attach "$LAB_PROT_IF" --mode native --rule "$RULE" >/dev/null || fatal "xrl-load attach failed"
# the primer: the first SYN per port goes to the kernel
in_atk curl -s -o /dev/null --max-time 5 "http://$LAB_PROT_IP/" 2>/dev/null

netstat() { snmp prot TcpExt "$1"; }
ksent0=$(netstat SyncookiesSent); over0=$(netstat ListenOverflows)
xrl_snap
sent0=$(snap_get global.cookies_sent); valid0=$(snap_get global.cookies_valid)

# The client: sequential requests until $LAB_TMP/stop exists and at least
# MIN_REQ are done (30 s at most); odd ones from the previous odd one's port.
# Prints "ok bad reused" and a line per failure on stderr.
bg_atk "$XRL_PY" -c '
import errno, os, socket, sys, time
dst, stop, need = sys.argv[1], sys.argv[2], int(sys.argv[3])
ok = bad = reused = 0
port = 0
i = 0
end = time.time() + 30
def connect(p):
    # the previous connection on port p may still be closing on our side
    # (LAST_ACK): the 4-tuple is then not free here yet, whatever the server
    for _ in range(20):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.settimeout(3)
        s.bind(("0.0.0.0", p))
        try:
            s.connect((dst, 80))
            return s
        except OSError as e:
            s.close()
            if e.errno != errno.EADDRNOTAVAIL:
                raise
            time.sleep(0.05)
    raise OSError(errno.EADDRNOTAVAIL, "port %d still busy on the client" % p)
while time.time() < end and (i < need or not os.path.exists(stop)):
    s = None
    try:
        s = connect(port if i % 2 else 0)
        if i % 2:
            reused += 1
        else:
            port = s.getsockname()[1]
        s.sendall(b"GET /%d HTTP/1.0\r\nHost: prot\r\n\r\n" % i)
        got = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
        if got.startswith(b"HTTP/1.0 200") and got.endswith(b"hello from the protected namespace\n"):
            ok += 1
        else:
            bad += 1
            print("request %d: answer %r" % (i, got[:60]), file=sys.stderr)
    except OSError as e:
        bad += 1
        print("request %d: %s" % (i, e), file=sys.stderr)
    if s:
        s.close()
    i += 1
    time.sleep(0.02)
print(ok, bad, reused)
' "$LAB_PROT_IP" "$LAB_TMP/stop" "$MIN_REQ" >"$LAB_TMP/legit.out" 2>"$LAB_TMP/legit.err"
LEGIT_PID=$BG_PID

log "flood: $SOURCES distinct sources of $SPOOF_NET, one SYN each, as fast as xrl-gen goes"
XRL_FLOOD=$GEN flood --dst "$LAB_PROT_IP" --dport 80 --sources "$SPOOF_NET" --nsrc "$SOURCES" \
	--count "$SOURCES" --threads 1
info "flood: sent $FLOOD_SENT SYNs in $FLOOD_MS ms ($FLOOD_PPS pps)"
touch "$LAB_TMP/stop"
wait "$LEGIT_PID" 2>/dev/null
read -r ok bad reused <"$LAB_TMP/legit.out"
[ -s "$LAB_TMP/legit.err" ] && info "client: $(head -n 5 "$LAB_TMP/legit.err" | tr '\n' ';')"

xrl_snap
answered=$(( $(snap_get global.cookies_sent) - sent0 ))
info "xrl: cookies sent $answered, valid $(( $(snap_get global.cookies_valid) - valid0 )),"\
	"bad $(snap_get global.cookies_bad), fallback $(snap_get global.cookie_fallback)"
check_ge "the client's requests during the flood" "${ok:-0}" "$MIN_REQ"
check_eq "the client's requests that failed" "${bad:-x}" 0
check_ge "requests that met a time-wait socket of the same 4-tuple" "${reused:-0}" $((MIN_REQ / 2 - 1))
check_range "xrl answered (nearly) every spoofed SYN" "$answered" $((FLOOD_SENT * 99 / 100)) $((FLOOD_SENT + 200))
check_range "the kernel's SyncookiesSent barely moved (the reusing SYNs, primers)" \
	$(( $(netstat SyncookiesSent) - ksent0 )) 0 $((${reused:-0} + 4))
check_eq "ListenOverflows stays 0" $(( $(netstat ListenOverflows) - over0 )) 0

# the bucket keys' addresses (struct xrl_bucket_key: addr[0] at byte 8,
# network order): how many lie in the spoofed prefix, and is the client's there
read -r spoofed client total < <(bpftool -j map dump pinned "$PIN_DIR/$LAB_PROT_IF/xrl_buckets" | "$XRL_PY" -c '
import ipaddress, json, sys
net, me = ipaddress.ip_network(sys.argv[1]), ipaddress.ip_address(sys.argv[2])
keys = [bytes(int(x, 16) for x in e["key"]) for e in json.load(sys.stdin)]
addrs = [ipaddress.ip_address(k[8:12]) for k in keys if k[4] == 4]  # XRL_AF_INET
print(sum(a in net for a in addrs), sum(a == me for a in addrs), len(keys))
' "$SPOOF_NET" "$LAB_ATK_IP")
info "bucket table: $total entries"
check_eq "bucket entries for spoofed sources" "${spoofed:-x}" 0
check_eq "the client's bucket is in the table" "${client:-x}" 1

finish
