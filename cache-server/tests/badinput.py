#!/usr/bin/env python3
"""Bad input against a running server: after each abuse the server must still answer a fresh
client, give memcached's replies, and keep its memory bounded.

  badinput.py SERVER_BINARY [MODE]     prints ok/FAIL lines; exit 1 on any failure
"""
import os
import random
import socket
import sys
import tempfile
import time

from net import ask, rss_kb, must_launch, server_args, stat

results = []
MODE = sys.argv[2] if len(sys.argv) > 2 else "striped"


def check(name, cond, detail=""):
    results.append(cond)
    print(("ok - " if cond else "FAIL - ") + f"bad input ({MODE}): " + name + ("" if cond else f" ({detail})"), flush=True)


def conn(port, timeout=5):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)




def closed_by_server(s, timeout=3):
    """The server closed this connection within `timeout` s: an orderly close, or a reset (a server that
    closes with our bytes still unread in its buffer makes the kernel answer with RST)."""
    s.settimeout(timeout)
    try:
        while True:
            d = s.recv(65536)
            if not d:
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def send_until_closed(s, data, timeout=10):
    """Send `data`, then wait for the server to close: a reset or a broken pipe while sending is the
    server cutting the connection off too."""
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        return True
    return closed_by_server(s, timeout)


def alive(port):
    return ask(port, b"version\r\n").startswith(b"VERSION ")






def main():
    binary, mode = sys.argv[1], MODE
    tmp = tempfile.mkdtemp()
    pf = os.path.join(tmp, "port")
    # a small quarantine: ASan otherwise keeps 256 MB of freed blocks and the RSS check means nothing
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:quarantine_size_mb=8")
    log = open(os.path.join(tmp, "server.log"), "w+")
    srv, port = must_launch([binary, "-p", "0", "--port-file", pf, "-t", "2", "-m", "8", "-c", "1200",
                             *server_args(mode)], pf, stderr=log, env=env)
    try:
        s = conn(port)
        check("line over the limit without newline closes that connection", send_until_closed(s, b"x" * 5000, 3))
        s.close()
        check("... and others are still served", alive(port))

        s = conn(port)
        # a multiget line past its 1 MB bound
        check("endless multiget line is cut off", send_until_closed(s, b"get " + b"k " * 600000))
        s.close()

        check("negative length", ask(port, b"set a 0 0 -1\r\n") == b"CLIENT_ERROR bad command line format\r\n")
        check("huge length", ask(port, b"set a 0 0 99999999999999999999\r\n") == b"CLIENT_ERROR bad command line format\r\n")
        check("bad data chunk", ask(port, b"set a 0 0 2\r\nabc\r\n", b"\r\nERROR\r\n") ==
              b"CLIENT_ERROR bad data chunk\r\nERROR\r\n")
        check("too large is swallowed", ask(port, b"set a 0 0 2000000\r\n" + b"z" * 2000000 + b"\r\nversion\r\n",
                                            b"VERSION 1.6.18\r\n").startswith(b"SERVER_ERROR object too large for cache\r\n"))

        rnd = random.Random(1)
        for i in range(20):
            s = conn(port)
            s.sendall(bytes(rnd.getrandbits(8) for _ in range(20000)))
            s.close()
        check("binary garbage", alive(port))

        base = stat(port, "bytes")
        for i in range(200):
            s = conn(port)
            s.sendall(b"set mid%d 0 0 100000\r\n" % i + b"v" * 5000)
            s.close()
        time.sleep(0.3)
        check("disconnect mid-value frees the half-read item", alive(port) and stat(port, "bytes") == base,
              f"bytes {base} -> {stat(port, 'bytes')}")

        idle = [conn(port) for _ in range(1000)]
        time.sleep(0.2)
        check("1000 idle connections, a new client is served", alive(port) and stat(port, "curr_connections") >= 1000)
        for s in idle:
            s.close()

        slow = conn(port)
        served = 0
        msg = b"get slow\r\n"
        for ch in msg:             # one byte every 0.2 s; other clients in between
            slow.send(bytes([ch]))
            served += sum(alive(port) for _ in range(3))
            time.sleep(0.2)
        slow.settimeout(3)
        reply = slow.recv(100)
        check("a client sending one byte at a time gets its reply, others are served meanwhile",
              reply == b"END\r\n" and served == 3 * len(msg), f"reply {reply!r}, served {served}")
        slow.close()

        # a client that never reads: the server stops reading it instead of buffering replies
        ask(port, b"set bigv 0 0 500000\r\n" + b"b" * 500000 + b"\r\n")
        r0 = rss_kb(srv.pid)
        hog = conn(port)
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        hog.settimeout(0.5)
        try:
            for _ in range(2000):
                hog.send(b"get bigv\r\n" * 50)
        except (socket.timeout, BlockingIOError, OSError):
            pass
        time.sleep(0.3)
        r1 = rss_kb(srv.pid)
        check("a client that never reads does not grow the server", alive(port) and r1 - r0 < 64 * 1024,
              f"RSS {r0} -> {r1} kB")
        hog.close()

        for i in range(300):   # 150 MB of values into 8 MB
            ask(port, b"set fill%d 0 0 500000 noreply\r\n" % i + b"f" * 500000 + b"\r\nversion\r\n", b"VERSION 1.6.18\r\n")
        used = stat(port, "bytes")
        check("memory stays under -m", 0 < used <= 8 << 20, f"bytes {used}")
        check("RSS bounded", rss_kb(srv.pid) < 200 * 1024, f"{rss_kb(srv.pid)} kB")

        check("server survived", srv.poll() is None and alive(port))
        log.seek(0)
        text = log.read()
        check("no sanitizer report", "Sanitizer" not in text and "runtime error" not in text, text[:300])
    finally:
        srv.terminate()
        srv.wait()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
