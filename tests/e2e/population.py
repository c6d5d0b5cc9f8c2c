#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""population.py - plays a population of callers against the identity tier.

Each group is COUNTxRATE[@BURST]: COUNT keys that each send RATE requests a
second, spread evenly (a random phase each), or with @BURST in bursts of
BURST requests at once (RATE / BURST bursts a second). For example
"100x5 10x50 1x400@200" is a hundred keys at 5/s, ten at 50/s and one
NAT-like key at 400/s in bursts of 200. Key i of group g is "g<g>-<i>".

Requests are GET URL with header HEADER: KEY, on CONNS persistent HTTP/1.1
connections. Prints one JSON object: {"keys": {KEY: {"sent", "ok", "refused",
"other"}}, "late_ms": the 99th percentile of how late a request left}.
Bounded: DURATION seconds of schedule, then at most 10 s to drain.
"""
import argparse
import asyncio
import heapq
import json
import random
import sys
import time


def schedule(groups, duration):
    """Every request as (t, key), sorted."""
    ev = []
    for g, spec in enumerate(groups):
        count, rest = spec.split("x", 1)
        burst = 1
        if "@" in rest:
            rest, burst = rest.split("@", 1)
        count, rate, burst = int(count), float(rest), int(burst)
        if count < 1 or rate <= 0 or burst < 1:
            raise ValueError("bad group " + spec)
        every = burst / rate
        for i in range(count):
            key = "g%d-%d" % (g, i)
            t = random.uniform(0, every)
            while t < duration:
                ev.extend((t, key) for _ in range(burst))
                t += every
    ev.sort()
    return ev


async def conn_worker(host, port, path, header, q, res, late):
    reader = writer = None
    while True:
        item = await q.get()
        if item is None:
            break
        t_due, key = item
        late.append(time.monotonic() - t_due)
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\n%s: %s\r\n\r\n" % (path, host, header, key)).encode()
        r = res.setdefault(key, {"sent": 0, "ok": 0, "refused": 0, "other": 0})
        r["sent"] += 1
        for attempt in range(2):
            try:
                if writer is None:
                    reader, writer = await asyncio.open_connection(host, port)
                writer.write(req)
                line = await reader.readline()
                if not line:
                    raise ConnectionError("closed")
                code = int(line.split()[1])
                clen = 0
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    if k.strip().lower() == "content-length":
                        clen = int(v.strip())
                if clen:
                    await reader.readexactly(clen)
                break
            except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError, IndexError):
                if writer is not None:
                    writer.close()
                reader = writer = None
                code = 0
        if code == 200:
            r["ok"] += 1
        elif code == 429:
            r["refused"] += 1
        else:
            r["other"] += 1
    if writer is not None:
        writer.close()


async def play(a):
    ev = schedule(a.groups, a.duration)
    q = asyncio.Queue()
    res, late = {}, []
    workers = [asyncio.create_task(conn_worker(a.host, a.port, a.path, a.header, q, res, late))
               for _ in range(a.conns)]
    t0 = time.monotonic()
    for t, key in ev:
        now = time.monotonic() - t0
        if t > now:
            await asyncio.sleep(t - now)
        q.put_nowait((t0 + t, key))
    for _ in workers:
        q.put_nowait(None)
    await asyncio.wait_for(asyncio.gather(*workers), timeout=10)
    late.sort()
    p99 = late[int(len(late) * 0.99)] * 1000 if late else 0
    json.dump({"keys": res, "late_ms": round(p99, 1)}, sys.stdout)
    print()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--path", default="/v1/auth/api")
    p.add_argument("--header", default="X-Key")
    p.add_argument("--conns", type=int, default=48)
    p.add_argument("--duration", type=float, default=5)
    p.add_argument("groups", nargs="+", help="COUNTxRATE[@BURST]")
    a = p.parse_args()
    if not 0 < a.duration <= 120 or not 1 <= a.conns <= 512:
        p.error("--duration wants 0..120 s and --conns 1..512")
    asyncio.run(play(a))


if __name__ == "__main__":
    main()
