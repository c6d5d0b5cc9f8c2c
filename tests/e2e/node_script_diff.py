# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""node_script_diff.py - gcra_node.lua against gcra.lua, call for call.

    python3 node_script_diff.py STANDALONE_PORT CLUSTER_PORT GCRA NODE ROUNDS SEED

STANDALONE_PORT: a redis-server running gcra.lua (GCRA, the file);
CLUSTER_PORT: a redis-server --cluster-enabled yes serving every slot but
16000-16383 (cluster-require-full-coverage no), running gcra_node.lua
(NODE). ROUNDS random calls go to both, as xrld would send them: the same
decisions, keys, now and arguments. Every answer and every key's value
afterwards must be the same on both. The calls mix what an attacker or a
clock can bring: keys repeated within a call and within a decision,
shadow rules (a negative tau), refusals, costs over tau, cost 0, values
ahead of tau (a lowered limit), the old value format (no '.'), values no
xrld writes (nan, inf, 1e400, '', text), keys of another type (a list, a
hash), and now going back a little. Then the node
script's own cases: a key of a slot the node does not serve fails the
call whole with "non local key", before anything is written, and a
concurrency part or a release, or key counts that do not add up to the
keys given, is refused, also before anything is written. Prints one line a failure and exits 1 on any; 0 when all agree.
"""
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'lib'))
from resp import Redis  # noqa: E402


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def key_slot(key):
    k = key.encode()
    s = k.find(b'{')
    if s >= 0:
        e = k.find(b'}', s + 1)
        if e > s + 1:
            k = k[s + 1:e]
    return crc16(k) % 16384


EPOCH_US = 1704067200000000  # 2024-01-01, gcra.lua's epoch

# each key: its type, its value (a string's), its expiry in ms (-1 none,
# -2 no key); then the expiry is taken off. The keys come as ARGV: a
# cluster node refuses declared keys of several slots, and a script
# without a shebang may touch them
LOOK = """
local out = {}
for i, k in ipairs(ARGV) do
  local t = redis.call('TYPE', k).ok
  out[#out + 1] = t
  out[#out + 1] = t == 'string' and redis.call('GET', k) or ''
  out[#out + 1] = redis.call('PTTL', k)
  redis.call('PERSIST', k)
end
return out
"""


def main():
    sp, cp, gcra, node, rounds, seed = sys.argv[1:7]
    rnd = random.Random(int(seed))
    rs, rc = Redis(int(sp)), Redis(int(cp))
    sha_s = rs.cmd('SCRIPT', 'LOAD', open(gcra).read())
    sha_c = rc.cmd('SCRIPT', 'LOAD', open(node).read())
    fails = []

    def fail(msg):
        fails.append(msg)
        print('FAIL: ' + msg)

    # key pool: served slots only, several keys sharing a slot (the same
    # buyer under two rules of one hash tag)
    pool = []
    i = 0
    while len(pool) < 40:
        tag = 'xrl:{r%d:u%d}' % (i % 3, i)
        i += 1
        if key_slot(tag) >= 16000:
            continue
        pool.append(tag)
        if i % 4 == 0:
            pool.append(tag + ':x')  # same slot, another key
    now = 90_000_000_000_000  # us since the 2024 epoch
    for rnum in range(int(rounds)):
        now += rnd.choice([0, 1, 500, 20_000, 2_000_000])
        if rnd.random() < 0.05:
            now -= rnd.randint(1, 3000)  # a clock a little behind
        # hostile or stale stored values, the same on both sides
        if rnd.random() < 0.15:
            k = rnd.choice(pool)
            kind = rnd.randrange(6)
            old = str(now + EPOCH_US + rnd.randint(-10**6, 10**6))
            junk = rnd.choice(['nan', 'inf', '-inf', '1e400', '-5.5', '', 'abc', '12.5.7',
                               '.5', '9' * 40, '-%d.0' % now])
            as_list = rnd.random() < 0.5
            for r in (rs, rc):
                r.cmd('DEL', k)
                if kind == 0:  # another type
                    if as_list:
                        r.cmd('RPUSH', k, 'x')
                    else:
                        r.cmd('HSET', k, 'f', 'v')
                elif kind == 1:  # the old format: us since 1970, no '.'
                    r.cmd('SET', k, old)
                elif kind == 2:  # ahead of any tau: a lowered limit
                    r.cmd('SET', k, '%d.250' % (now + 10**10))
                elif kind == 3:  # what no xrld writes
                    r.cmd('SET', k, junk)
                # kinds 4, 5: deleted
        nd = rnd.randint(1, 12)
        keys, specs, args = [], [], []
        for _ in range(nd):
            n = rnd.choice([1, 1, 1, 2, 3])
            specs.append(str(n) if rnd.random() < 0.8 else '%d/0' % n)
            for _ in range(n):
                keys.append(rnd.choice(pool[:12]) if rnd.random() < 0.5 else rnd.choice(pool))
                tau = rnd.choice([1_000_000, 5_000_000, 60_000_000, 3_000])
                inc = rnd.choice([0, 1, 200_000, 1_000_000, 2_500_000, 7_000_000])
                if rnd.random() < 0.1:
                    tau = -tau  # shadow
                args += ['%d.000' % tau, '%d.%03d' % (inc, rnd.randrange(1000))]
        nowa = '%d.%03d' % (now, rnd.randrange(1000))
        gargs = [nowa, nd] + specs + args
        uk = sorted(set(keys))
        # the call, then at once in the same write (some expiries are 2 ms
        # of wall clock) each key's type, value and expiry, which are then
        # taken off, so that the next call sees the same keys on both
        rs.send(('EVALSHA', sha_s, len(keys), *keys, *gargs), ('EVAL', LOOK, 0, *uk))
        rc.send(('EVALSHA', sha_c, 1, keys[0], len(keys), *keys, *gargs), ('EVAL', LOOK, 0, *uk))
        a, la = rs.reply(), rs.reply()
        b, lb = rc.reply(), rc.reply()
        if a != b:
            fail('round %d: answers differ\n  call %r\n  gcra.lua %r\n  node     %r'
                 % (rnum, gargs[:2 + nd], a, b))
        for i, k in enumerate(uk):
            ta, va, pa = la[3 * i:3 * i + 3]
            tb, vb, pb = lb[3 * i:3 * i + 3]
            # a key set to live 1-2 ms may be gone on one side by the time
            # its look runs (a busy machine): the same if the other side's
            # was about to go too; then it goes on both
            if ((ta == 'none' and tb != 'none' and 0 <= pb <= 15) or
                    (tb == 'none' and ta != 'none' and 0 <= pa <= 15)):
                rs.cmd('DEL', k)
                rc.cmd('DEL', k)
                continue
            if (ta, va) != (tb, vb):
                fail('round %d: %s is %r on one Redis, %r by the node script'
                     % (rnum, k, (ta, va), (tb, vb)))
            if (pa < 0) != (pb < 0) or abs(pa - pb) > 10:
                fail('round %d: %s expires in %r ms on one Redis, %r by the node script'
                     % (rnum, k, pa, pb))
        if len(fails) > 5:
            break

    # a value that reads as NaN ("nan": Lua's tonumber takes it) is no
    # TAT: taken as ahead of any tau, so the key is refused once and its
    # value rewritten, not refused for good (NaN compared false every time,
    # and nothing wrote the key again); both scripts
    for r, sha, node in ((rs, sha_s, False), (rc, sha_c, True)):
        k = pool[1]
        r.cmd('SET', k, 'nan')
        call = ['%d.000' % now, 1, '1', '1000000.000', '1.000']
        b = r.cmd('EVALSHA', sha, 1, k, 1, k, *call) if node else r.cmd('EVALSHA', sha, 1, k, *call)
        v = r.cmd('GET', k)
        try:
            ok = float(v) == float(v) and abs(float(v) - (now + 1000000)) < 1
        except (TypeError, ValueError):
            ok = False
        if not (isinstance(b, list) and b[:2] == [1, 'R'] and ok and r.cmd('PTTL', k) > 0):
            fail('%s: a NaN value answered %r and left %r' % ('node' if node else 'gcra.lua', b, v))
        r.cmd('DEL', k)
    # a key the node does not serve: the call fails whole, nothing written
    far = next('xrl:{far%d}' % i for i in range(100000) if key_slot('xrl:{far%d}' % i) >= 16000)
    near = pool[0]
    rc.cmd('DEL', near)
    b = rc.cmd('EVALSHA', sha_c, 1, near, 2, near, far, '%d.000' % now, 2, '1', '1',
               '1000000.000', '1.000', '1000000.000', '1.000')
    if not (isinstance(b, tuple) and 'non local key' in b[1]):
        fail('a call with a key of an unserved slot answered %r, not "non local key"' % (b,))
    if rc.cmd('EXISTS', near) != 0:
        fail('a call that failed on a non-local key wrote its first key')
    # key counts that do not add up to the keys given (nk 1, two one-key
    # decisions): refused before anything is written, "now" never a key
    nowa = '%d.000' % now
    b = rc.cmd('EVALSHA', sha_c, 1, near, 1, near, nowa, 2, '1', '1',
               '1000000.000', '1.000', '1000000.000', '1.000')
    if not (isinstance(b, tuple) and 'name other than the keys' in b[1]):
        fail('a call whose counts exceed its keys answered %r, not an error' % (b,))
    if rc.cmd('EXISTS', near) != 0 or rc.cmd('EXISTS', nowa) != 0:
        fail('a call whose counts exceed its keys wrote a key')
    # a concurrency part or a release: refused, before anything is written
    for spec in ('1/1', 'r1', '/1', 'x', ''):
        b = rc.cmd('EVALSHA', sha_c, 1, near, 2, near, near + ':z', '%d.000' % now, 2, '1', spec,
                   '1000000.000', '1.000', '1000000.000', '1.000', '3', '4')
        if not (isinstance(b, tuple) and 'rate decisions only' in b[1]):
            fail('decision spec %r answered %r, not an error' % (spec, b))
        if rc.cmd('EXISTS', near) != 0:
            fail('a refused call (spec %r) wrote a key' % spec)
    print('%d rounds: %s' % (int(rounds), 'all answers and values agree' if not fails else '%d failures' % len(fails)))
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
