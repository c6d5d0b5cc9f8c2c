#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
#
# test_xrld_ctl.sh - end to end: the control socket is served from the event
# loop without blocking it (issue 11, finding 13b: the 2 s timeout applied
# per read, so a client dribbling bytes held the loop forever).
#
#   1. a client dribbles one byte every 1.5 s; meanwhile another client's
#      `status` is answered in under 1 s, and the dribbler is dropped about
#      2 s after it connected (the deadline is per request, not per read)
#   2. 16 silent clients fill every slot: a 17th is told "busy" at once (and
#      xrlctl prints it), and after the deadline a request is answered again
#   3. hostile frames (a count that never ends, a length past the end) get
#      "malformed request" and exit code 2; xrlctl status still works
#
# An http-only policy: nothing is attached, everything is on 127.0.0.1.
# Exit: 0 pass, 1 fail, 77 skip (never under CI=true).
set -u
XRL_TEST_NAME=test_xrld_ctl
# shellcheck source=tests/e2e/lib_http.sh
. "$(dirname "$0")/lib_http.sh"

XRLCTL=${XRLCTL:-$XRL_ROOT/build/xrlctl}

require_http
[ -x "$XRLCTL" ] || fatal "$XRLCTL is missing: make build/xrlctl"
http_setup

P=$(free_port)
cat >"$HT_TMP/xrld.yaml" <<EOF
http:
  listen: 127.0.0.1:$P
  rules:
    - name: api
      key: header:X-Key
      rate: 10/s
      burst: 10
EOF
xrld_http_start xrld "$HT_TMP/xrld.yaml" "$P"
SOCK=$HT_TMP/xrld.sock

# ctlpy MODE: the socket work, in python; prints KEY=VALUE lines.
ctlpy() {
	"$XRL_PY" - "$SOCK" "$1" "$XRLCTL" <<'PY'
import socket, subprocess, sys, time, threading
path, mode, xrlctl = sys.argv[1], sys.argv[2], sys.argv[3]

def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s

def request(frame, timeout=5.0):
    """send a frame, shut down, read the answer: (seconds, answer)"""
    t = time.monotonic()
    s = conn()
    s.settimeout(timeout)
    try:
        s.sendall(frame)
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass        # a busy xrld answers and closes without reading: read that
    out = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            out += d
    except OSError as e:
        out += ("<%s>" % e).encode()
    s.close()
    return time.monotonic() - t, out

STATUS = b"XRL1 1\n6\nstatus"

if mode == "dribble":
    res = {}
    def dribbler():
        t = time.monotonic()
        s = conn()
        s.settimeout(0.05)
        frame, i, got = STATUS, 0, b""
        while time.monotonic() - t < 7.5 and i < len(frame):
            try:
                s.send(frame[i:i + 1])
                i += 1
            except OSError:
                break
            end = time.monotonic() + 1.5
            closed = False
            while time.monotonic() < end:
                try:
                    d = s.recv(4096)
                except socket.timeout:
                    continue
                except OSError:
                    closed = True
                    break
                if not d:
                    closed = True
                    break
                got += d
            if closed:
                break
        res["dribble_dropped_ms"] = int((time.monotonic() - t) * 1000)
        res["dribble_bytes_sent"] = i
        res["dribble_answer"] = got.decode(errors="replace").split("\n")[0] or "none"
    th = threading.Thread(target=dribbler)
    th.start()
    time.sleep(0.5)
    secs, out = request(STATUS)
    print("other_ms=%d" % int(secs * 1000))
    print("other_code=%s" % out.split(b"\n")[0].decode(errors="replace"))
    th.join()
    for k, v in res.items():
        print("%s=%s" % (k, v))
elif mode == "slots":
    idle = [conn() for _ in range(16)]
    time.sleep(0.3)
    secs, out = request(STATUS)
    print("busy_ms=%d" % int(secs * 1000))
    print("busy_answer=%s" % out.decode(errors="replace").replace("\n", "|"))
    p = subprocess.run([xrlctl, "--socket", path, "status"], capture_output=True, timeout=10)
    print("xrlctl_busy=%d %s" % (p.returncode, p.stderr.decode(errors="replace").strip()))
    time.sleep(2.5)
    secs, out = request(STATUS)
    print("after_code=%s" % out.split(b"\n")[0].decode(errors="replace"))
    for s in idle:
        s.close()
elif mode == "hostile":
    for name, frame in (("endless_count", b"XRL1 99999999999999999999"),
                        ("long_length", b"XRL1 1\n999\nstatus"),
                        ("signed_count", b"XRL1 +1\n6\nstatus")):
        secs, out = request(frame)
        print("%s=%s" % (name, out.decode(errors="replace").replace("\n", "|")))
PY
}

# val KEY TEXT
val() { awk -F= -v k="$1" '$1 == k { sub(/^[^=]*=/, ""); print; exit }' <<<"$2"; }

log "1. a client dribbles one byte every 1.5 s"
out=$(ctlpy dribble)
check_range "another client's status answered (ms)" "$(val other_ms "$out")" 0 1000
check_eq "  its exit code" "$(val other_code "$out")" 0
check_range "dribbler dropped after (ms)" "$(val dribble_dropped_ms "$out")" 1500 3500
check_range "  bytes it got to send" "$(val dribble_bytes_sent "$out")" 1 3
check_eq "  it got no answer" "$(val dribble_answer "$out")" none

log "2. 16 silent clients hold every slot"
out=$(ctlpy slots)
check_range "a 17th client is answered at once (ms)" "$(val busy_ms "$out")" 0 1000
check_match "  with 'busy'" "$(val busy_answer "$out")" '^1\|xrld is busy'
check_match "  xrlctl status says so, exit 1" "$(val xrlctl_busy "$out")" '^1 xrld is busy'
check_eq "after the deadline, status answers 0" "$(val after_code "$out")" 0

log "3. hostile frames"
out=$(ctlpy hostile)
check_eq "a count that never ends" "$(val endless_count "$out")" "2|malformed request|"
check_eq "a length past the end" "$(val long_length "$out")" "2|malformed request|"
check_eq "a signed count" "$(val signed_count "$out")" "2|malformed request|"
st=$("$XRLCTL" --socket "$SOCK" status >/dev/null 2>&1; echo $?)
check_eq "xrlctl status still exits" "$st" 0
kill -0 "${HT_PID[xrld]}" 2>/dev/null && alive=yes || alive=no
check_eq "xrld still runs" "$alive" yes

finish
