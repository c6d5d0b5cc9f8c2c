# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""resp.py - a small Redis client (RESP2) for the tests' and benchmarks'
Python parts: commands out as arrays of bulk strings, pipelined by send(),
replies read back one by one. An error reply comes back as the tuple
('ERR', text), not raised, so that a test can check it; a bulk string as
str, a nil as None.
"""
import socket


def encode(*cmds):
    """The bytes of one or more commands (each a sequence of arguments)."""
    out = []
    for args in cmds:
        out.append(b'*%d\r\n' % len(args))
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b'$%d\r\n%s\r\n' % (len(a), a))
    return b''.join(out)


class Redis:
    def __init__(self, port, host='127.0.0.1'):
        self.s = socket.create_connection((host, port), 5)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''

    def send(self, *cmds):
        self.s.sendall(encode(*cmds))

    def cmd(self, *args):
        self.send(args)
        return self.reply()

    def line(self):
        while b'\r\n' not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError('redis closed the connection')
            self.buf += d
        ln, self.buf = self.buf.split(b'\r\n', 1)
        return ln

    def reply(self):
        ln = self.line()
        t, v = ln[:1], ln[1:]
        if t == b'+':
            return v.decode()
        if t == b'-':
            return ('ERR', v.decode())
        if t == b':':
            return int(v)
        if t == b'$':
            n = int(v)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                d = self.s.recv(65536)
                if not d:
                    raise EOFError('redis closed the connection')
                self.buf += d
            b, self.buf = self.buf[:n], self.buf[n + 2:]
            return b.decode()
        if t == b'*':
            n = int(v)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError('bad reply %r' % ln)
