#!/usr/bin/env python3
"""Start-up options of the server (issue 12, item 5): out-of-range values get a message naming
the option and exit 2 (not a bare usage, not a silent wrap), and -c is checked against the
open-file limit at start-up: raised when it can be, refused with a message when not.

  options.py SERVER_BINARY      prints ok/FAIL lines; exit 1 on any failure
"""
import os
import socket
import subprocess
import sys
import tempfile

from net import launch, must_launch

results = []


def check(name, cond, detail=""):
    results.append(cond)
    print(("ok - " if cond else "FAIL - ") + "options: " + name + ("" if cond else f" ({detail})"), flush=True)


def run(cmd):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return p.returncode, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", ""


def main():
    srv = sys.argv[1]
    for args, needle in [(["-t", "0"], "-t 0 is out of range"), (["-t", "257"], "-t 257 is out of range"),
                         (["-m", "0"], "-m 0 is out of range"), (["-p", "70000"], "-p 70000 is out of range"),
                         (["-m", "17592186044417"], "-m 17592186044417 is out of range"),
                         (["-c", "0"], "-c 0 is out of range"), (["-t", "two"], "-t wants a whole number"),
                         (["-m", "99999999999999999999999"], "out of range"), (["extra"], "unexpected argument 'extra'"),
                         (["-I", "2m", "-m", "1"], "more than half of -m 1 MB"), (["-I", "2g"], "between 1k and 1g"),
                         (["-I", "99999999999g"], "bad item size")]:
        rc, err = run([srv, *args])
        check(f"{' '.join(args)}: exit 2 with its own message", rc == 2 and needle in err and "usage:" not in err.split("\n")[0],
              f"rc {rc}, stderr {err[:120]!r}")

    # the documented maximum item size is accepted where -m leaves room for it, as memcached does
    tmp = tempfile.mkdtemp()
    pf = os.path.join(tmp, "port")
    p, port = launch([srv, "-p", "0", "--port-file", pf, "-I", "1g", "-m", "2048"], pf, stderr=subprocess.PIPE, text=True)
    check("-I 1g -m 2048 starts", port is not None, p.stderr.read() if p.poll() is not None else "")
    p.terminate()
    p.wait()

    # more connections than the hard limit and fs.nr_open allow: refused, even as root
    rc, err = run(["prlimit", "--nofile=100:100", srv, "-p", "0", "-c", "1048576"])
    check("-c past the open-file limit that cannot be raised is refused", rc == 2 and "open files" in err,
          f"rc {rc}, stderr {err[:160]!r}")

    # a soft limit below -c that the hard limit allows is raised: 300 clients all served
    tmp = tempfile.mkdtemp()
    pf = os.path.join(tmp, "port")
    p, port = must_launch(["prlimit", "--nofile=64:4096", srv, "-p", "0", "--port-file", pf, "-c", "300", "-t", "2"], pf)
    try:
        socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(300)]
        for s in socks:
            s.sendall(b"version\r\n")
        ok = 0
        for s in socks:
            try:
                ok += s.recv(100).startswith(b"VERSION ")
            except OSError:
                pass
            s.close()
        check("-c 300 under 'ulimit -n 64': the soft limit is raised, 300 clients answered", ok == 300, f"{ok} answered")
    finally:
        p.terminate()
        p.wait()
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
