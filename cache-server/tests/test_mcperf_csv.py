#!/usr/bin/env python3
"""mcperf_csv.py on a summary in mcperf's documented layout (the fixture is a format sample written
for this test, not a measurement). Prints ok/FAIL lines like the rest of the cache suite."""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
tool = os.path.join(here, "..", "mcperf_csv.py")
fails = 0


def check(name, cond):
    global fails
    print(("ok - " if cond else "FAIL - ") + "mcperf parser: " + name)
    fails += not cond


def run(text, *args):
    return subprocess.run([sys.executable, tool, *args], input=text, capture_output=True, text=True)


p = run(open(os.path.join(here, "fixtures", "mcperf-get.txt")).read())
got = {ln.split(",")[0]: (float(ln.split(",")[1]), ln.split(",")[2]) for ln in p.stdout.splitlines()[1:]}
check("exit 0 and a header", p.returncode == 0 and p.stdout.startswith("metric,value,unit\n"))
check("rate from 'Response rate'", got.get("ops_per_s") == (80000.0, "1/s") and got.get("get_per_s") == (80000.0, "1/s"))
check("latency avg/max/p99 in ms", got.get("latency_avg") == (0.05, "ms") and got.get("latency_max") == (3.2, "ms")
      and got.get("latency_p99") == (2.0, "ms"))
check("percentiles within one 1 ms bin of zero are omitted, each with a note on stderr",
      "latency_p50" not in got and "latency_p95" not in got and "latency_p50 omitted" in p.stderr
      and "latency_p95 omitted" in p.stderr and "latency_p99 omitted" not in p.stderr)
check("a percentile above one bin is kept (p999 4 ms)", got.get("latency_p999") == (4.0, "ms"))
check("hit ratio from value vs end", abs(got.get("get_hit_ratio", (0,))[0] - 39998 / 40000) < 1e-6)
check("error lines count as errors", got.get("errors") == (1.0, "count"))
check("client CPU and connections", got.get("client_cpu_share") == (98.0, "%") and got.get("client_conns") == (4.0, "count"))
p = run("mcperf: connection refused\n")
check("no summary: exit 2 with a reason", p.returncode == 2 and "no mcperf summary" in p.stderr)
sys.exit(1 if fails else 0)
