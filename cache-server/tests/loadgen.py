#!/usr/bin/env python3
"""The load generator never hides a failed run (issue 12, items 6 and 7): a server frozen at
the end of the window shows up as timeouts (their age in latency_max) and exit 1; a server
killed mid-window, or a load phase that does not store every key, is exit 1; bad host names,
unavailable CPUs, a failed allocation and EMFILE each get their own message; point.sh turns a
failed run into a failed point.

  loadgen.py BUILD_DIR      prints ok/FAIL lines; exit 1 on any failure
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

from net import must_launch

results = []


def check(name, cond, detail=""):
    results.append(cond)
    print(("ok - " if cond else "FAIL - ") + "loadgen: " + name + ("" if cond else f" ({detail})"), flush=True)


def rows(out):
    d = {}
    for line in out.splitlines()[1:]:
        p = line.split(",")
        if len(p) == 3:
            d[p[0]] = float(p[1])
    return d


def node_list(text):
    """'0-1,3' -> {0, 1, 3} (the kernel's node list format)"""
    out = set()
    for part in filter(None, text.strip().split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def check_memory_node(raw):
    """The smoke point's ran-on.csv: where the server said (`stats numa`) its items and a connection's
    buffers are, nodes that hold memory on this host; the engine's guard, given a point bound to a node
    that is not among them, marks the repeat with the node it found."""
    import csv
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
    from lab.engine.memplace import misplaced
    with open("/sys/devices/system/node/has_memory") as f:
        nodes = node_list(f.read())
    try:
        with open(os.path.join(raw, "ran-on.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        rows = [{"error": str(e)}]
    kinds = {r.get("variant") for r in rows}
    check("point.sh: ran-on.csv says which node holds the items and the connection buffers (stats numa)",
          kinds == {"global items", "global conns"} and all(int(r["mem_node"]) in nodes for r in rows), str(rows))
    wrong = max(nodes) + 1
    said = misplaced(raw, [wrong], "local", True)
    check(f"the guard catches memory off the point's membind node {wrong}",
          said.startswith("memory on node ") and f"expected {wrong} (cache-server global" in said, said)
    check("the guard passes it on the nodes it is on", misplaced(raw, sorted(nodes), "interleave", True) == "")


def server(build, *extra):
    tmp = tempfile.mkdtemp()
    pf = os.path.join(tmp, "port")
    p, port = must_launch([os.path.join(build, "cache-server"), "-p", "0", "--port-file", pf, "-t", "1", *extra], pf)
    return p, str(port)


def loadgen(build, port, *args, timeout=30):
    return subprocess.Popen([os.path.join(build, "loadgen"), "-p", port, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(p, timeout=30):
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return "timeout", out, err
    return p.returncode, out, err


def main():
    build = sys.argv[1]
    srv, port = server(build)
    try:
        rc, out, err = finish(loadgen(build, port, "-d", "1", "-w", "0.2", "-k", "2000"))
        r = rows(out)
        check("a healthy run exits 0 with no errors, timeouts or dead connections",
              rc == 0 and r.get("errors") == 0 and r.get("timeouts") == 0 and r.get("conn_deaths") == 0
              and r.get("get_hit_ratio") == 1, f"rc {rc}, {err[-200:]!r}")

        # --pipeline 8: eight requests outstanding per connection, the replies read together replaced
        # in one write, so about one send() per 8 requests (1.0 per request without it)
        rc, out, err = finish(loadgen(build, port, "-d", "1", "-w", "0.2", "-k", "2000", "-c", "2", "-P", "8"))
        r = rows(out)
        check("a pipelined run (-P 8): healthy, its depth a row, at most one send() per 4 requests",
              rc == 0 and r.get("errors") == 0 and r.get("get_hit_ratio") == 1 and r.get("client_pipeline") == 8
              and 0 < r.get("client_sends_per_req", 0) <= 0.25, f"rc {rc}, {r}, {err[-200:]!r}")
        rc, out, err = finish(loadgen(build, port, "-d", "0.5", "-w", "0", "-k", "2000", "-c", "1"))
        r = rows(out)
        check("closed loop without -P: one send() per request", rc == 0 and 0.99 <= r.get("client_sends_per_req", 0) <= 1.01,
              f"rc {rc}, {r.get('client_sends_per_req')}")

        # frozen for the last 1.5 s of a 2.5 s window: the requests in flight are timeouts
        lg = loadgen(build, port, "-d", "2.5", "-w", "0.2", "-k", "2000", "--timeout", "0.5")
        time.sleep(0.2 + 1.2)
        srv.send_signal(signal.SIGSTOP)
        rc, out, err = finish(lg)
        srv.send_signal(signal.SIGCONT)
        r = rows(out)
        check("a server frozen at the end of the window: timeouts counted, their age in latency_max, exit 1",
              rc == 1 and r.get("timeouts", 0) > 0 and r.get("latency_max", 0) >= 1500 and "timeouts" in err,
              f"rc {rc}, timeouts {r.get('timeouts')}, max {r.get('latency_max')} ms")

        lg = loadgen(build, port, "-d", "2", "-w", "0.2", "-k", "2000")
        time.sleep(1.0)
        srv.kill()
        srv.wait()
        rc, out, err = finish(lg)
        r = rows(out)
        check("a server killed mid-window: exit 1, dead connections reported",
              rc == 1 and r.get("conn_deaths", 0) > 0 and "died" in err, f"rc {rc}, {err[-200:]!r}")
    finally:
        if srv.poll() is None:
            srv.kill()
        srv.wait()

    srv, port = server(build, "-I", "1k")
    try:
        rc, out, err = finish(loadgen(build, port, "-V", "2000", "-k", "100", "-d", "0.5"))
        check("a load phase that does not store every key: exit 1 before measuring",
              rc == 1 and "the load phase stored 0 of 100 keys" in err and out == "", f"rc {rc}, {err[-200:]!r}")
        for args, code, needle, what in [
            (["-s", "localhost"], 2, "-s wants an IPv4 address", "-s localhost"),
            (["--cpus", "4095"], 2, "CPU 4095 of --cpus is not available", "--cpus beyond this host"),
            (["-V", str(64 << 20), "-D", "65536"], 1, "cannot allocate the buffers", "a failed allocation"),
        ]:
            rc, out, err = finish(loadgen(build, port, *args, "-d", "0.5"))
            check(f"{what}: its own message, exit {code}", rc == code and needle in err, f"rc {rc}, {err[-200:]!r}")
        p = subprocess.Popen(["prlimit", "--nofile=12:12", os.path.join(build, "loadgen"), "-p", port, "-c", "20",
                              "-d", "0.5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        rc, out, err = finish(p)
        check("EMFILE: its own message, exit 1", rc == 1 and "out of file descriptors" in err, f"rc {rc}, {err[-200:]!r}")
    finally:
        srv.kill()
        srv.wait()
    # a bad value is refused before anything connects, in one line naming the flag and the value
    for args, needle in [
        (["-g", "nan"], "-g wants a number from 0 to 1, not 'nan'"),
        (["-d", "nan"], "-d wants a number from 0.001 to 86400, not 'nan'"),
        (["-w", "inf"], "-w wants a number from 0 to 86400, not 'inf'"),
        (["-M", "-1,1001,0,0"], "--mix wants a whole number from 0 to 1000, not '-1'"),
        (["-M", "700,300"], "--mix wants four per-mille values summing to 1000, not '700,300'"),
        (["-t", "0"], "-t wants a whole number from 1 to 256, not '0'"),
        (["-c", "0"], "-c wants a whole number from 1 to 10000, not '0'"),
        (["-k", "0"], "-k wants a whole number from 1 to 1000000000, not '0'"),
        (["-V", "1e12"], "-V wants a whole number from 0 to 67108864, not '1e12'"),
        (["-t", "1.5"], "-t wants a whole number from 1 to 256, not '1.5'"),
        (["stray"], "unexpected argument 'stray'"),
        (["-P", "0"], "--pipeline wants a whole number from 1 to 65536, not '0'"),
        (["-P", "2", "-r", "1000"], "--pipeline is for the closed loop"),
    ]:
        rc, out, err = finish(loadgen(build, "1", *args))
        check(f"{' '.join(args)}: refused in one line, exit 2", rc == 2 and needle in err and len(err.splitlines()) == 1
              and out == "", f"rc {rc}, {err[-200:]!r}")
    rc, out, err = finish(subprocess.Popen([os.path.join(build, "loadgen"), "-p", "0"], stderr=subprocess.PIPE, text=True))
    check("-p 0: refused in one line, exit 2", rc == 2 and "-p wants a whole number from 1 to 65535" in err, err)

    rc, out, err = finish(loadgen(build, "1", "-d", "0.5", "--wait-ready", "0.1"))
    check("nothing listening: 'cannot connect' with the reason, exit 1",
          rc == 1 and "cannot connect to 127.0.0.1:1: Connection refused" in err, f"rc {rc}, {err[-200:]!r}")

    # the sweep's per-point driver turns a failed run into a failed point (1), bad input into 2
    point = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "point.sh")
    env = dict(os.environ, CACHE_BUILD=os.path.abspath(build))
    p = subprocess.run([point, "--variant=striped", "--pinned=0", "--duration=0.5", "--warmup=0",
                        "--value-size=2000000", "--keys=50"], capture_output=True, text=True, env=env, timeout=60)
    check("point.sh: a load phase the server refuses is a failed point (exit 1, no rows)",
          p.returncode == 1 and "not a measured point" in p.stderr and p.stdout == "", f"rc {p.returncode}, {p.stderr[-200:]!r}")
    for bad in ("0", "65537", "1e3"):
        p = subprocess.run([point, "--variant=striped", "--pinned=0", f"--pipeline={bad}"], capture_output=True, text=True,
                           env=env, timeout=60)
        check(f"point.sh --pipeline={bad}: refused before anything starts, exit 2",
              p.returncode == 2 and "--pipeline must be a whole number from 1 to 65536" in p.stderr and p.stdout == "",
              f"rc {p.returncode}, {p.stderr[-200:]!r}")
    # the client's own CPU rows in a smoke point (experiments/cache-get.spec's smoke args), consistent
    # with each other: util x CPUs = the process's share, per request x rate = the share (us per s)
    raw = tempfile.mkdtemp()
    p = subprocess.run([point, "--variant=global", "--pinned=0", "--duration=1", "--warmup=0.2", "--keys=2000",
                        "--client-threads=2", f"--raw={raw}"], capture_output=True, text=True, env=env, timeout=60)
    r = rows(p.stdout)
    want = ("client_cpu_us_per_req", "client_cpu_util_pct", "client_cpus", "client_thread_busy_max_pct",
            "client_thread_busy_min_pct")
    check("point.sh smoke: the client's CPU per request and per thread are rows", p.returncode == 0 and
          all(k in r for k in want) and r["client_cpu_us_per_req"] > 0, f"rc {p.returncode}, {sorted(r)}, {p.stderr[-300:]!r}")
    if all(k in r for k in want + ("client_cpu_share", "ops_per_s")):
        share = r["client_cpu_share"]
        check("client rows agree: util x CPUs = CPU share; us per request x rate = share",
              abs(r["client_cpu_util_pct"] * r["client_cpus"] - share) <= 0.01 * share + 1e-6 and
              abs(r["client_cpu_us_per_req"] * r["ops_per_s"] / 1e4 - share) <= 0.01 * share + 1e-6 and
              r["client_thread_busy_min_pct"] <= r["client_thread_busy_max_pct"], str(r))
    # the server's wait for a CPU (schedstat run_delay over its threads): what tells a starved server
    # from one that stalls on its own; summed over threads, so at most 100 % for each of the two a
    # -t 1 server has (acceptor and worker)
    check("point.sh smoke: server_cpu_wait_pct is a row, between 0 and 100 % per server thread",
          "server_cpu_wait_pct" in r and 0 <= r["server_cpu_wait_pct"] <= 200,
          str(r.get("server_cpu_wait_pct")))
    try:
        with open(os.path.join(raw, "client-threads.csv")) as f:
            lines = f.read().splitlines()
    except OSError as e:
        lines = [str(e)]
    check("raw/client-threads.csv: a line per client thread", lines[:1] == ["thread,cpu,cpu_s,busy_pct"] and
          len(lines) == 3, str(lines))
    check_memory_node(raw)
    p = subprocess.run([point, "--variant=global-lock", "--pinned=0"], capture_output=True, text=True, env=env, timeout=60)
    check("point.sh: variant global-lock is gone (global): exit 2", p.returncode == 2 and "unknown variant" in p.stderr,
          f"rc {p.returncode}")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
