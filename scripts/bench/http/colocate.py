# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""colocate.py - what sharing one CPU between Redis processes costs, alone.

    python3 colocate.py GCRA_LUA PORT,PORT,PORT PID,PID,PID DECISIONS CALLS ROUNDS [SPLIT]

Case k of scripts/bench/http.sh. The same CALLS calls of gcra.lua, each of
DECISIONS decisions (keys of 1,024, as xrld formats them, rule open's
arguments), one call at a time as xrld sends them, go once all to the
first Redis and once to the three in turn; the servers' CPU time
(/proc/PID/schedstat, ns) over the decisions, each way, ROUNDS times
alternating. The calls and the script are the same both ways: the
difference is only how many processes take turns on the server CPU (each
one's caches are cold after the others ran). Prints a line a round and
then "colocation=R" (three in turn over one, the median of the rounds).
With SPLIT, also what smaller calls cost: the same decisions to the
first Redis alone in calls of DECISIONS and of SPLIT, ROUNDS times
alternating, "split=R" (SPLIT's over DECISIONS', the median): the other
half of what a batch split over three masters costs them.
"""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'lib'))
from resp import Redis, encode  # noqa: E402


def cpu_ns(pids):
    return sum(int(open('/proc/%d/schedstat' % p).read().split()[0]) for p in pids)


def main():
    lua, ports, pids, d, calls, rounds = sys.argv[1:7]
    split = int(sys.argv[7]) if len(sys.argv) > 7 else 0
    ports = [int(p) for p in ports.split(',')]
    pids = [int(p) for p in pids.split(',')]
    d, calls, rounds = int(d), int(calls), int(rounds)
    script = open(lua, 'rb').read()
    conns = [Redis(p) for p in ports]
    shas = [c.cmd('SCRIPT', 'LOAD', script) for c in conns]

    def run(conn, raw):  # one call, formatted before the clock started
        conn.s.sendall(raw)
        if isinstance(conn.reply(), tuple):
            raise RuntimeError('Redis refused a call')
    rnd = random.Random(1)
    now = int(time.time() * 1e6) - 1704067200000000

    def call(i, sha, d=d):
        keys = ['xrl:{open:u%d}' % rnd.randrange(1, 1025) for _ in range(d)]
        args = ['EVALSHA', sha, d] + keys + ['%d.000' % (now + 300 * i), d] + ['1'] * d
        for _ in keys:
            args += ['1000000.000', '1.000']
        return args

    ratios = []
    for r in range(rounds):
        per = {}
        for spread in ((False, True) if r % 2 == 0 else (True, False)):
            n = len(conns) if spread else 1
            msgs = [(i % n, encode(call(i, shas[i % n]))) for i in range(calls)]
            t0 = cpu_ns(pids)
            for j, m in msgs:
                run(conns[j], m)
            per[spread] = (cpu_ns(pids) - t0) / 1000 / (calls * d)
        ratios.append(per[True] / per[False])
        print('round %d: one Redis %.2f us a decision, three in turn %.2f: %.2f'
              % (r + 1, per[False], per[True], ratios[-1]))
    # the split: one Redis, the same decisions in calls of DECISIONS and in
    # calls of SPLIT (a master's share of a batch split over three nodes)
    splits = []
    for r in range(rounds if split else 0):
        per = {}
        for size in ((d, split) if r % 2 == 0 else (split, d)):
            n = calls * d // size
            msgs = [encode(call(i, shas[0], size)) for i in range(n)]
            t0 = cpu_ns(pids[:1])
            for m in msgs:
                run(conns[0], m)
            per[size] = (cpu_ns(pids[:1]) - t0) / 1000 / (n * size)
        splits.append(per[split] / per[d])
        print('round %d: one Redis, %d decisions a call %.2f us a decision, %d a call %.2f: %.2f'
              % (r + 1, d, per[d], split, per[split], splits[-1]))
    ratios.sort()
    splits.sort()
    print('colocation=%.2f' % ratios[(len(ratios) - 1) // 2])
    if splits:
        print('split=%.2f' % splits[(len(splits) - 1) // 2])


if __name__ == '__main__':
    main()
