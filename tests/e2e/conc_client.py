#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""conc_client.py - N requests start at once against xrld's forward-auth
(round robin over the ports given); each one admitted holds its slot for
HOLD seconds, then gives it back with POST /v1/release (X-XRL-Lease).

Measured from the client side, with timestamps: a slot is held from when
its 200 arrived to when its release was sent, which lies inside the time
xrld held it. Prints one line, key=value:
  admitted refused other max_inside retry_after_min retry_after_max
max_inside counts the admits before the releases of one instant (the
side a bound errs on)."""
import http.client
import sys
import threading
import time

ports = [int(p) for p in sys.argv[1].split(",")]
n, hold, uri = int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
barrier = threading.Barrier(n)
lock = threading.Lock()
events, codes, retry = [], [], []


def one(i):
    # a request that cannot connect or answer counts as "other" and never
    # leaves the others waiting at the barrier (the test would hang)
    try:
        one_request(i)
    except (OSError, http.client.HTTPException, threading.BrokenBarrierError):
        barrier.abort()
        with lock:
            codes.append(0)


def one_request(i):
    port = ports[i % len(ports)]
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.connect()
    barrier.wait(timeout=30)
    c.request("GET", "/v1/auth", headers={"X-Forwarded-Method": "POST",
                                          "X-Forwarded-Uri": uri})
    r = c.getresponse()
    r.read()
    t_in = time.monotonic()
    lease = r.getheader("X-XRL-Lease")
    with lock:
        codes.append(r.status)
        if r.getheader("Retry-After"):
            retry.append(int(r.getheader("Retry-After")))
    if r.status != 200:
        return
    time.sleep(hold)
    t_out = time.monotonic()
    c.request("POST", "/v1/release", headers={"X-XRL-Lease": lease or ""})
    c.getresponse().read()
    with lock:
        events.append((t_in, 1))
        events.append((t_out, -1))


ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
inside = peak = 0
for _, d in sorted(events, key=lambda e: (e[0], -e[1])):
    inside += d
    peak = max(peak, inside)
print("admitted=%d refused=%d other=%d max_inside=%d retry_after_min=%d retry_after_max=%d" % (
    codes.count(200), codes.count(503) + codes.count(429),
    len(codes) - codes.count(200) - codes.count(503) - codes.count(429), peak,
    min(retry) if retry else 0, max(retry) if retry else 0))
