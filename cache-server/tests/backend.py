#!/usr/bin/env python3
"""The I/O backends (--io-backend): io_uring serves the same bytes as epoll, and a bad name is refused.
  - every diff.py script, plus replies that need more than one send (a 200-key multiget: more
    iovecs than one sendmsg takes; a 2 MB value; 20,000 pipelined gets past the 1 MB high-water
    mark), sent to one server of each backend in the same order: the reply bytes must be identical;
  - `stats` names the backend;
  - `--io-backend kqueue` is one line on stderr and exit 2.

  backend.py SERVER_BINARY [MODE...]      prints ok/FAIL lines; exit 1 on any failure
"""
import os
import shutil
import subprocess
import sys
import tempfile

from diff import SCRIPTS
from net import must_launch, stat_line, talk

results = []


def check(name, cond, detail=""):
    results.append(cond)
    print(("ok - " if cond else "FAIL - ") + "backend: " + name + ("" if cond else f" ({detail})"), flush=True)


def start(binary, tmp, *args):
    pf = os.path.join(tmp, "port-" + "-".join(args))
    return must_launch([binary, "-p", "0", "--port-file", pf, "-t", "2", *args], pf)


def extra_scripts():
    keys = [b"mk%d" % i for i in range(200)]
    sets = b"".join(b"set %s 0 0 3\r\nv%02d\r\n" % (k, i % 100) for i, k in enumerate(keys))
    return [
        sets + b"get " + b" ".join(keys) + b"\r\n" + b"gets " + b" ".join(keys[:90]) + b"\r\n",
        b"set big 0 0 2000000\r\n" + b"b" * 2000000 + b"\r\nget big big\r\n",
        b"set pk 0 0 50\r\n" + b"p" * 50 + b"\r\n" + b"get pk\r\n" * 20000 + b"version\r\n",
    ]


def main():
    binary, modes = sys.argv[1], sys.argv[2:] or ["global", "sharded"]
    p = subprocess.run([binary, "--io-backend", "kqueue"], capture_output=True, text=True, timeout=10)
    lines = p.stderr.strip().split("\n")
    check("--io-backend kqueue: one line, exit 2",
          p.returncode == 2 and len(lines) == 1 and "unknown I/O backend 'kqueue' (epoll, io_uring)" in lines[0],
          f"rc {p.returncode}, stderr {p.stderr[:200]!r}")
    tmp = tempfile.mkdtemp()
    procs = []
    try:
        for mode in modes:
            a, pa = start(binary, tmp, "--lock-mode", mode)
            b, pb = start(binary, tmp, "--lock-mode", mode, "--io-backend", "io_uring")
            procs += [a, b]
            check(f"{mode}: stats says io_backend epoll / io_uring",
                  stat_line(pa, "io_backend") == "epoll" and stat_line(pb, "io_backend") == "io_uring",
                  f"{stat_line(pa, 'io_backend')!r} / {stat_line(pb, 'io_backend')!r}")
            scripts = SCRIPTS + extra_scripts()
            bad = []
            for i, s in enumerate(scripts):
                want, got = talk(pa, s), talk(pb, s)
                if want != got:
                    bad.append(f"script {i} {s[:40]!r}: epoll {len(want)} B {want[:80]!r}, io_uring {len(got)} B {got[:80]!r}")
            alive = a.poll() is None and b.poll() is None
            check(f"{mode}: {len(scripts)} scripts, io_uring's reply bytes identical to epoll's",
                  not bad and alive, "; ".join(bad[:3]) + ("" if alive else " (a server died)"))
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
