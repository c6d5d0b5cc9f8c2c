#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""vouch_client.py PORT URI FIRST COUNT [PROCS] - COUNT forward-auth
requests (GET /v1/auth, X-Original-URI URI) to xrld on 127.0.0.1:PORT,
each from its own IPv6 /48 in X-Forwarded-For: request i (FIRST <= i <
FIRST + COUNT) comes from 2001:(db8 + i / 65536):(i % 65536)::1. PROCS
processes, each on one keep-alive connection (reconnecting if the server
closes it). Prints one line: ok=N other=M seconds=S."""
import http.client
import multiprocessing
import sys
import time


def addr(i):
    return "2001:%x:%x::1" % (0xDB8 + (i >> 16), i & 0xFFFF)


def run(port, uri, lo, hi, q):
    ok = other = 0
    c = None
    for i in range(lo, hi):
        for _ in range(3):
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/v1/auth", headers={
                    "X-Original-Method": "GET", "X-Original-URI": uri,
                    "X-Forwarded-For": addr(i)})
                r = c.getresponse()
                r.read()
                if r.getheader("Connection", "").lower() == "close":
                    c.close()
                    c = None
                ok += r.status == 200
                other += r.status != 200
                break
            except (OSError, http.client.HTTPException):
                if c is not None:
                    c.close()
                c = None
        else:
            other += 1
    q.put((ok, other))


def main():
    port, uri, first, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    procs = int(sys.argv[5]) if len(sys.argv) > 5 else 4
    q = multiprocessing.Queue()
    t0 = time.monotonic()
    step = (count + procs - 1) // procs
    ps = [multiprocessing.Process(target=run, args=(
        port, uri, first + k * step, min(first + count, first + (k + 1) * step), q))
        for k in range(procs)]
    for p in ps:
        p.start()
    res = [q.get() for _ in ps]
    for p in ps:
        p.join()
    print("ok=%d other=%d seconds=%.1f" % (sum(r[0] for r in res), sum(r[1] for r in res),
                                           time.monotonic() - t0))


if __name__ == "__main__":
    main()
