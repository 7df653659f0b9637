#!/usr/bin/env python3
"""Differential test: the same request scripts against real memcached and against our server
(one server of each, every lock mode), comparing reply bytes. Both servers see the same command
sequence, so even cas values must match. Each script is sent on a fresh connection, then the
write side is closed and the reply read to EOF.

  diff.py SERVER_BINARY [MODE...]      prints ok/FAIL lines; exit 1 on any difference
  (a MODE may name an I/O backend too: sharded+io_uring)
"""
import os
import shutil
from net import free_port, must_launch, server_args, talk, wait_port
import subprocess
import sys
import tempfile

K251 = b"k" * 251
SCRIPTS = [
    b"set a 0 0 1\r\nx\r\nget a\r\n",
    b"get nope\r\nget\r\ngets\r\n\r\nfoo\r\nSET a 0 0 1\r\nx\r\n",
    b"set a 0 0 -1\r\nxx\r\n",
    b"set a 0 0 99999999999999999999\r\n",
    b"set a 0 0 2147483647\r\nset a 0 0 2147483646\r\n",
    b"set a 0 0 4294967297\r\nx\r\n",
    b"set a 0 0 3\r\nabcd\r\nget a\r\n",
    b"set a 0 0 1\r\n\r\n\r\n",
    b"set a 0 0 2000000\r\n" + b"x" * 2000000 + b"\r\nget a\r\n",
    b"set a 0 0 2\r\n10\r\ndecr a 1\r\nget a\r\nincr a 5\r\nget a\r\nincr a x\r\nincr a -1\r\n",
    b"set b 0 0 3\r\nabc\r\nincr b 1\r\ndelete b 0\r\ndelete b 5\r\ndelete b\r\n",
    b"touch zz 10\r\ntouch\r\nverbosity\r\nverbosity 1\r\nverbosity 1 noreply\r\nverbosity a\r\n",
    b"set c 0 0 1 noreply\r\nz\r\ngets c\r\ncas c 0 0 1 999\r\ny\r\ncas c 0 0 1\r\ny\r\n",
    b"append nokey 0 0 1\r\nx\r\nprepend c 0 0 1\r\nq\r\ngets c\r\n",
    b"set " + K251 + b" 0 0 1\r\nx\r\nget " + K251 + b"\r\nget a " + K251 + b" a\r\n",
    b"set d 4294967296 0 1\r\nx\r\nget d\r\nset d 4294967295 0 1\r\nx\r\nget d\r\n",
    b"set d 00012 0 1\r\nx\r\nget d\r\nset d +5 0 1\r\nx\r\ngets d\r\nset d -1 0 1\r\nx\r\n",
    b"set d 0 0 1 2\r\nx\r\nset a 0 0 1 noreply extra\r\nx\r\nget a\r\n",
    b"set e 0 0 1\r\nx\r\nincr e 18446744073709551615\r\nset f 0 0 20\r\n18446744073709551615\r\nincr f 1\r\nget f\r\n",
    b"incr\r\nincr a\r\ndecr a 1 2 3\r\nincr zz 1\r\n",
    b"set n 0 0 3\r\n-12\r\nincr n 1\r\nset m 0 0 25\r\n1234567890123456789012345\r\nincr m 1\r\n",
    b"set z 0 0 1\r\n5\r\nincr z 18446744073709551616\r\ndecr z 10\r\nincr z 0x1\r\nincr z 01\r\nget z\r\n",
    b"set a 0 0 4\r\n  12\r\nincr a 1\r\nset b 0 0 2\r\n1a\r\nincr b 1\r\nset c 0 0 0\r\n\r\nincr c 1\r\n",
    b"set t 0 -1 1\r\nx\r\nget t\r\nadd t 0 0 1\r\ny\r\nadd t 0 0 1\r\nz\r\nreplace zz 0 0 1\r\ny\r\nget t\r\n",
    b"touch b 10 noreply\r\ntouch b 10\r\ntouch b -1\r\nget b\r\ntouch a x\r\n",
    b"set a 0 0 2\r\nab\r\nappend a 0 0 2\r\ncd\r\nprepend a 5 5 2\r\nxy\r\ngets a\r\n",
    b"cas a 0 0 1 noreply\r\nx\r\ncas a 0 0 1 5 noreply\r\nx\r\ncas a 0 0 1 -5\r\nx\r\ncas a 0 0 1 x\r\ny\r\n",
    b"set a 0 -5 1\r\nx\r\nget a\r\nset a 0 99999999999 1\r\nx\r\nget a\r\n",
    b"set  a  0 0 1\r\nx\r\nget   a  \r\n get a\r\nget a\tb\r\n",
    b"set a 0 0 1\nx\r\nget a\n",
    b"set a 0 0 1\rx\r\n",
    b"get a \x00b\r\nset a\x00 0 0 1\r\nx\r\n",
    b"set \x01\x02 0 0 1\r\nx\r\nget \x01\x02\r\n",
    b"set a 0 0 1\r\nx\r\nset b 0 0 1\r\ny\r\ngets a b zz a\r\n",
    b"get " + b"abcdefgh " * 2000 + b"\r\n",
    b"delete\r\ndelete a noreply\r\ndelete a 0 noreply\r\nget a\r\n",
    b"incr a 1 x\r\ntouch a 1 x\r\nGET a\r\nincr a  1\r\n",
    b"set a 0 0 1 \r\nx\r\nflush_all 0 noreply\r\nflush_all 0 noreply x\r\nget a\r\n",
    b"set a 0 0 1\r\nx\r\nflush_all\r\nget a\r\nset a 0 0 1\r\nx\r\ngets a\r\nflush_all x\r\n",
    b"stats reset\r\nstats foo\r\n",
    b"set big 0 0 2000000 noreply\r\n" + b"y" * 2000000 + b"\r\nversion\r\n",
    b"set a 0 0 5\r\nab",
    b"x" * 3000,
    b"get a\r\nGET / HTTP/1.1\r\nget a\r\n",
    b"version\r\nquit\r\nget a\r\n",
    b"set k 0 0 1\r\n1\r\n" + b"incr k 1\r\n" * 50 + b"get k\r\n",
    b"set g 5 0 1\r\nx\r\ngat 100 g b\r\ngats 100 g\r\ngat\r\ngat 10\r\ngat x g\r\ngat 10 g noreply\r\n",
    b"gat -1 g\r\nget g\r\ngats 0 " + K251 + b"\r\n",
    b"version\r\nget zz\r\nget " + K251 + b"\r\nget zz\r\nversion\r\nget " + K251 + b"\r\n",
    # values and tokens without digits are not 0 (issue 12, item 4)
    b"set ws 0 0 1\r\n \r\nincr ws 1\r\ndecr ws 1\r\nget ws\r\nset wt 0 0 2\r\n\t \r\nincr wt 1\r\nget wt\r\n",
    b"set wp 0 0 1\r\n+\r\nincr wp 1\r\nset wm 0 0 1\r\n-\r\ndecr wm 1\r\nget wp wm\r\n",
    b"set n 0 0 1\r\n5\r\nincr n \t\r\nincr n +\r\ndecr n \x0b\r\nget n\r\n",
    b"set c 0 0 1\r\nx\r\ncas c 0 0 1 \t\r\ny\r\ncas c 0 0 1 +\r\ny\r\ncas c 0 0 1 \t noreply\r\ny\r\nget c\r\n",
    # a shortening decr pipelined after a get of the same key (its reply still holds the item)
    b"set s 0 0 2\r\n10\r\nget s\r\ndecr s 1\r\nget s\r\ndecr s 1\r\nget s\r\n",
    b"set s 0 0 3\r\n100\r\ngets s\r\ndecr s 91\r\ngets s\r\nincr s 1\r\ngets s\r\n",
]








def norm(b):
    # the VERSION line names the release; ours claims the one whose bytes it reproduces
    return b"\r\n".join(b"VERSION x" if l.startswith(b"VERSION ") else l for l in b.split(b"\r\n"))


def main():
    ours, modes = sys.argv[1], sys.argv[2:] or ["global", "striped", "rwlock", "optimistic", "sharded"]
    if not shutil.which("memcached"):
        print("FAIL diff: memcached not found on PATH")
        return 1
    tmp = tempfile.mkdtemp()
    procs = []
    try:
        mport = free_port()
        user = ["-u", "root"] if os.getuid() == 0 else []
        procs.append(subprocess.Popen(["memcached", *user, "-p", str(mport), "-l", "127.0.0.1",
                                       "-U", "0", "-t", "2"], stderr=subprocess.DEVNULL))
        if not wait_port(mport):
            print("FAIL diff: memcached did not start")
            return 1
        theirs = [norm(talk(mport, s)) for s in SCRIPTS]
        failed = 0
        for mode in modes:
            pf = os.path.join(tmp, f"port-{mode}")
            p, port = must_launch([ours, "-p", "0", "--port-file", pf, "-t", "2", *server_args(mode)], pf)
            procs.append(p)
            bad = 0
            for i, s in enumerate(SCRIPTS):
                got = norm(talk(port, s))
                if got != theirs[i]:
                    bad += 1
                    print(f"FAIL diff {mode} script {i}: {s[:60]!r}\n  memcached {theirs[i][:200]!r}\n  ours      {got[:200]!r}")
            alive = p.poll() is None
            if bad == 0 and alive:
                print(f"ok - diff {mode}: {len(SCRIPTS)} scripts byte-identical to memcached")
            else:
                failed += 1
                if not alive:
                    print(f"FAIL diff {mode}: server died")
        return 1 if failed else 0
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
