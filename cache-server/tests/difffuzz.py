#!/usr/bin/env python3
"""Differential fuzz against real memcached: random pipelined scripts (commands, keys and numbers
with tabs, runs of spaces, signs, leading zeros, missing or extra tokens, values whose length
does not match) are sent to memcached and to our server in every given lock mode; the reply
bytes must be identical. All servers see the same scripts in the same order, so cas values and
every other piece of state match too. Bounded by SECONDS of wall time; a difference is printed
with the seed that replays it (and the script is saved next to the build).

  difffuzz.py SERVER_BINARY SECONDS [--seed N] MODE...     ok/FAIL lines; exit 1 on a difference
  (a MODE may name an I/O backend too: sharded+io_uring)
"""
import os
import random
import re
import shutil
import net
from net import free_port, must_launch, server_args, wait_port
import subprocess
import sys
import tempfile
import time

KEYS = [b"a", b"b", b"k1", b"n", b"x\ty", b"\t", b"k" * 250, b"k" * 251, b"+1", b"00", b"-"]
NUMS = [b"0", b"1", b"5", b"10", b"007", b"+5", b"-1", b"-0", b"4294967295", b"4294967296",
        b"18446744073709551615", b"18446744073709551616", b"99999999999999999999", b"0x1",
        b"1a", b"", b"\t", b"\t3", b"3\t", b" ", b"+", b"-", b"1.5", b"12"]
# exptimes that do not depend on when a server's clock ticks: never, already past, far ahead, or
# invalid (a relative 1-30 s would expire at different moments in two servers)
EXPS = [b"0", b"-1", b"-0", b"+0", b"1000", b"2592001", b"4294967295", b"4294967296", b"18446744073709551615",
        b"99999999999999999999", b"0x1", b"1a", b"", b"\t", b" ", b"+", b"-", b"1.5", b"\t0", b"0\t"]
# flush_all delays: only immediate ones. After a delayed flush (or one with a past absolute time)
# memcached shows the items an earlier flush hid again unless its background LRU crawler has
# reclaimed them already: its answer depends on timing, so that is not fuzzed (README)
FLUSH_EXPS = [b"0", b"-1", b"-0", b"+0", b"4294967295", b"4294967296", b"18446744073709551615", b"0x1", b"",
              b"\t", b"+", b"-", b"1.5"]
# no value of blanks only: memcached's incr parses it past its end, into the neighbouring slab memory
# (its answer then depends on that memory; ours is "non-numeric", diff.py checks the common case).
# Every other value starts with, or stops before, a byte that is not blank, so no stored value is
# blank only: a value cut short ends at a non-blank byte where "\r\n" should be (bad data chunk),
# and append/prepend/incr never make one. Only "" could (seed 1795754000, script 5845: "add 00 5 0 10"
# took five of the trailer's blank lines as its value, and memcached's incr then answered 3709551618).
VALUES = [b"1", b"10", b"99", b"100", b" 5", b"5 ", b"\t7", b"abc", b"18446744073709551615",
          b"-3", b"+4", b"007", b"", b"x" * 40]
SEPS = [b" ", b" ", b" ", b"  ", b"\t", b" \t"]


def tok(r, choices):
    return r.choice(choices)


def line(r, words):
    out = b""
    for i, w in enumerate(words):
        if i:
            out += r.choice(SEPS)
        out += w
    if r.random() < 0.1:
        out += r.choice(SEPS)                   # trailing blanks
    return out + (b"\n" if r.random() < 0.05 else b"\r\n")


def command(r):
    k = lambda: tok(r, KEYS)
    n = lambda: tok(r, NUMS)
    nr = [b"noreply"] if r.random() < 0.15 else []
    c = r.randrange(12)
    if c <= 2:                                   # storage, with a value that may not fit its length
        verb = r.choice([b"set", b"add", b"replace", b"append", b"prepend", b"cas"])
        v = tok(r, VALUES)
        # the empty value only with its exact length: a wrong (or shifted) one would take the blank
        # lines after it as a value of blanks only, which memcached's incr reads past (see VALUES)
        length = str(len(v)).encode() if r.random() < 0.85 or not v else n()
        exp = r.choice([b"0", b"0", tok(r, EXPS)])
        words = [verb, k(), r.choice([b"0", b"5", n()]), exp, length]
        if verb == b"cas":
            words.append(r.choice([b"1", b"2", b"3", n()]))
        if r.random() < 0.05 and v:
            words.pop(r.randrange(1, len(words)))
        return line(r, words + nr) + v + (b"\r\n" if r.random() < 0.95 else b"\r")
    if c <= 4:
        return line(r, [r.choice([b"get", b"gets"])] + [k() for _ in range(r.randrange(0, 4))])
    if c == 5:
        return line(r, [r.choice([b"gat", b"gats"]), tok(r, EXPS)] +
                    [k() for _ in range(r.randrange(0, 3))])
    if c <= 7:
        return line(r, [r.choice([b"incr", b"decr"]), k(), n()] + nr)
    if c == 8:
        return line(r, [b"delete", k()] + ([b"0"] if r.random() < 0.2 else []) + nr)
    if c == 9:
        return line(r, [b"touch", k(), tok(r, EXPS)] + nr)
    if c == 10:
        return line(r, r.choice([[b"flush_all"], [b"flush_all", b"0"], [b"flush_all", tok(r, FLUSH_EXPS)], [b"version"],
                                 [b"verbosity", n()], [b"flush_all", b"noreply"]]))
    return line(r, [r.choice([b"bogus", b"GET", b"", b"get\ta", b"set", b"incr"])] + [n() for _ in range(r.randrange(3))])


# Ends every script outside a value: a storage command may take the lines after it as its value,
# and memcached holds replies while it waits for a value's bytes (dropping them when the client
# then closes), where we send them at once - a known difference (README), not fuzzed here.
TRAILER = b"\r\n" * 40


def script(r):
    return b"".join(command(r) for _ in range(r.randrange(1, 30))) + TRAILER


PADDED = re.compile(rb"VALUE ([^ \r\n]+) (\d+) (\d+)( \d+)?\r\n(\d+) +\r\n")


def unpad(m):
    return b"VALUE %s %s %d%s\r\n%s\r\n" % (m[1], m[2], len(m[5]), m[4] or b"", m[5])


def talk(port, data):
    out = net.talk(port, data)
    out = b"\r\n".join(b"VERSION x" if l.startswith(b"VERSION ") else l for l in out.split(b"\r\n"))
    # whether memcached pads a shortened incr/decr result in place or stores it short depends on
    # whether one of its background threads holds the item at that moment: compare the digits
    return PADDED.sub(unpad, out)






def main():
    args = sys.argv[1:]
    seed = int(time.time())
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    ours, secs, modes = args[0], float(args[1]), args[2:]
    if not shutil.which("memcached"):
        print("FAIL - difffuzz: memcached not found on PATH")
        return 1
    tmp = tempfile.mkdtemp()
    procs, ports = [], {}
    try:
        mport = free_port()
        user = ["-u", "root"] if os.getuid() == 0 else []
        procs.append(subprocess.Popen(["memcached", *user, "-p", str(mport), "-l", "127.0.0.1", "-U", "0", "-t", "2"],
                                      stderr=subprocess.DEVNULL))
        if not wait_port(mport):
            print("FAIL - difffuzz: memcached did not start")
            return 1
        for mode in modes:
            pf = os.path.join(tmp, "port-" + mode)
            p, ports[mode] = must_launch([ours, "-p", "0", "--port-file", pf, "-t", "2", *server_args(mode)], pf)
            procs.append(p)
        r = random.Random(seed)
        deadline = time.monotonic() + secs
        n = 0
        bad = {m: 0 for m in modes}
        while time.monotonic() < deadline:
            s = script(r)
            want = talk(mport, s)
            for mode in modes:
                got = talk(ports[mode], s)
                if got != want:
                    bad[mode] += 1
                    if bad[mode] <= 2:
                        path = os.path.join(os.path.dirname(os.path.abspath(ours)), f"difffuzz-{mode}-{seed}-{n}.bin")
                        open(path, "wb").write(s)
                        print(f"# {mode}: script {n} of seed {seed} differs (saved {path})\n#   script    {s[:300]!r}\n"
                              f"#   memcached {want[:300]!r}\n#   ours      {got[:300]!r}")
            n += 1
        for mode in modes:
            alive = procs[1 + modes.index(mode)].poll() is None
            ok = bad[mode] == 0 and alive
            print(("ok - " if ok else "FAIL - ") + f"difffuzz {mode}: {n} random pipelined scripts in {secs:g} s (seed {seed}), "
                  + ("byte-identical to memcached" if ok else f"{bad[mode]} differ" + ("" if alive else ", server died")))
        return 0 if all(v == 0 for v in bad.values()) else 1
    finally:
        for p in procs:
            p.terminate()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
