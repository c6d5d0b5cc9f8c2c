#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""legit.py - the flood lab's legitimate clients: an open-loop HTTP client.

    legit.py --dst 10.210.0.1 --rate 300 --duration 4 --sources A,B,...

Request i is due at t0 + i / rate, whatever happened to the earlier ones
(open loop: a slow answer does not hold the next request back, so latency
is not hidden by coordinated omission). Every request is a new TCP
connection from the next source address of --sources in turn (HTTP/1.1 GET,
Connection: close): a SYN flood and a SYN limiter act on connection set-up,
which a keep-alive client such as wrk would pay once and then never again,
and wrk's latency excludes the connect. The latency of a request runs from
its due time to the last byte of a 200 answer, so the handshake, a lost SYN
and its retransmission (1 s), and any lateness of this client are included.

A request fails when it gets no complete 200 answer within --timeout
seconds (one SYN retransmission fits in the default 3 s, a second does not),
or its connection is refused or reset.

With --until-gone PID the requests stop when process PID ends (or after
--duration seconds, whichever comes first): the clients run exactly as
long as a flood.

Prints one line:
    requests=N ok=K errors=E p50_ms=X p99_ms=Y max_ms=Z late_ms=L [kind=count ...]
late_ms is how late this client started its latest request (a check that
the client itself kept up). --latencies FILE writes every latency (ms, one
per line, failures as -1).
"""
import argparse
import asyncio
import os
import sys

REQ = b"GET / HTTP/1.1\r\nHost: front\r\nUser-Agent: xrl-flood-legit\r\nConnection: close\r\n\r\n"


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    k = max(0, min(len(sorted_vals) - 1, int(round(p / 100.0 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


async def one(dst, port, src, due, timeout, res, i):
    loop = asyncio.get_running_loop()
    reader = writer = None
    try:
        async def talk():
            nonlocal reader, writer
            reader, writer = await asyncio.open_connection(dst, port, local_addr=(src, 0))
            writer.write(REQ)
            await writer.drain()
            data = await reader.read()  # to EOF: the server closes
            return data

        data = await asyncio.wait_for(talk(), timeout)
        if data.startswith(b"HTTP/1.1 200 ") or data.startswith(b"HTTP/1.0 200 "):
            res[i] = ("ok", (loop.time() - due) * 1000.0)
        else:
            res[i] = ("status_" + data[9:12].decode("ascii", "replace") if data else "empty", None)
    except asyncio.TimeoutError:
        res[i] = ("timeout", None)
    except ConnectionRefusedError:
        res[i] = ("refused", None)
    except ConnectionResetError:
        res[i] = ("reset", None)
    except OSError as e:
        res[i] = ("oserror_%d" % (e.errno or 0), None)
    finally:
        if writer is not None:
            writer.close()


async def run(a):
    loop = asyncio.get_running_loop()
    srcs = a.sources.split(",")
    n = int(a.rate * a.duration)
    res = [None] * n
    tasks = []
    late = 0.0
    t0 = loop.time() + 0.05
    issued = n
    for i in range(n):
        if a.until_gone and i % max(1, int(a.rate / 20)) == 0 and not alive(a.until_gone):
            issued = i
            break
        due = t0 + i / a.rate
        d = due - loop.time()
        if d > 0:
            await asyncio.sleep(d)
        else:
            late = max(late, -d)
        tasks.append(asyncio.ensure_future(one(a.dst, a.port, srcs[i % len(srcs)], due, a.timeout, res, i)))
    await asyncio.gather(*tasks)
    return res[:issued], late


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dst", required=True)
    ap.add_argument("--port", type=int, default=80)
    ap.add_argument("--rate", type=float, default=300.0, help="requests per second")
    ap.add_argument("--duration", type=float, default=4.0, help="seconds of requests")
    ap.add_argument("--sources", required=True, help="comma-separated source addresses")
    ap.add_argument("--timeout", type=float, default=3.0)
    ap.add_argument("--latencies", help="write every latency (ms; -1 = failed) here")
    ap.add_argument("--until-gone", type=int, metavar="PID", help="stop when process PID ends")
    a = ap.parse_args()
    if a.rate <= 0 or a.duration <= 0 or a.timeout <= 0:
        ap.error("--rate, --duration and --timeout must be above zero")
    res, late = asyncio.run(run(a))
    lat = sorted(v for k, v in res if k == "ok")
    kinds = {}
    for k, _ in res:
        if k != "ok":
            kinds[k] = kinds.get(k, 0) + 1
    out = "requests=%d ok=%d errors=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f late_ms=%.1f" % (
        len(res), len(lat), len(res) - len(lat), pct(lat, 50), pct(lat, 99),
        lat[-1] if lat else float("nan"), late * 1000.0)
    for k in sorted(kinds):
        out += " %s=%d" % (k, kinds[k])
    print(out, flush=True)
    if a.latencies:
        with open(a.latencies, "w") as f:
            for k, v in res:
                f.write("%.3f\n" % (v if k == "ok" else -1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
