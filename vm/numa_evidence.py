#!/usr/bin/env python3
"""numa_evidence.py OUT.json PROGRAM [CPUS_MAIN CPUS_WORKERS]: where the memory lives (issue 56, item 1),
measured the way an evidence run measures it, on tests/fixtures/why/remote.c in three placements:

  main        the main thread first-touches the buffer on MAIN's node, the workers read it from WORKERS
  each        each worker first-touches its own slice where it runs
  interleave  `main` under `numactl --interleave=all`

Each runs under `perf record --switch-events` (where each thread ran: fold.py's cpus rows) with the
evidence run's numa_maps sampler beside it (numamaps.Sampler); the two files are written as an evidence
run writes them and read back through the same readers, and why/memory.py says the placement. OUT.json
holds {mode: {"kind", "words", …}}. Run inside the 2-node guests by vm/guest.sh (vm/check.py asserts
remote for `main` only) and on the host by tests/test_numa_evidence.py (one node: never claimed).
The recording is cpu-clock at 99 Hz and switch records only: no tracepoint, no stack (TCG is slow)."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from lab.engine.evidence import collect, numamaps, store  # noqa: E402
from lab.why import memory  # noqa: E402

SECONDS = os.environ.get("NUMA_EVIDENCE_SECONDS", "4")
MIB = os.environ.get("NUMA_EVIDENCE_MIB", "64")


def measure(folder, program, mode, main_cpu, workers):
    threads = str(len(workers))
    cmd = [program, "each" if mode == "each" else "main", threads, MIB, SECONDS, main_cpu] + workers
    if mode == "interleave":
        cmd = ["numactl", "--interleave=all"] + cmd
    data = os.path.join(folder, f"{mode}.data")
    # --call-graph fp: fold.py reads the layout perf script prints for samples with a callchain (the
    # evidence run's; without one perf pads the comm to 16 columns); a frame-pointer chain copies no stack
    argv = ["perf", "record", "-q", "--no-buildid-cache", "-o", data, "--call-graph", "fp", "--switch-events",
            "--sample-cpu", "-e", "cpu-clock/freq=99/", "--"] + cmd
    sampler = numamaps.Sampler(keep_text=True)
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    finally:
        sampler.stop()
    if p.returncode != 0:
        return {"kind": None, "words": f"failed (exit {p.returncode}): {p.stderr.strip()[-300:]}"}
    run = {"main": 1, "each": 2, "interleave": 3}[mode]
    sampler.write(folder, run)
    f, why = collect.script(data, dict(os.environ), os.path.join(folder, "script.log"))
    if f is None:
        return {"kind": None, "words": why}
    store.write_run(folder, run, cpus=f.cpu_rows())
    got = store.read_run(folder, run)        # the readers a report uses, on the files as written
    placed = memory.of_run(got.get("numa"), got.get("cpus"))
    peak = max(sampler.best.values(), key=lambda b: sum(b["kb"].values()), default=None)
    return {"kind": placed and placed.kind, "words": placed.words if placed else "no placement",
            "numa_maps": peak and peak["text"][:200000], "cpus": got.get("cpus"), "nodes": numamaps.node_cpus(),
            "output": p.stdout.strip(), "samples": got["numa"]["samples"],
            "read_ms": sampler.read_s * 1000, "placement": placed and dataclasses.asdict(placed)}


def main(out, program, main_cpu=None, workers=None):
    nodes = numamaps.node_cpus()
    if main_cpu is None:         # the first node's first CPU; the workers on the last node
        main_cpu = str(nodes[min(nodes)][0]) if nodes else "-1"
        last = nodes[max(nodes)] if len(nodes) > 1 else []
        workers = [str(c) for c in last[:4]] or ["-1", "-1"]
    folder = tempfile.mkdtemp(prefix="numa-evidence-")
    try:
        result = {m: measure(folder, program, m, main_cpu, workers) for m in ("main", "each", "interleave")}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    for m, r in result.items():
        print(f"numa-evidence: {m}: {r['kind']}: {r['words']}")
    return 0 if all(r["kind"] for r in result.values()) else 1


if __name__ == "__main__":
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__.split("\n")[0])
    sys.exit(main(sys.argv[1], sys.argv[2], *(sys.argv[3:4] + [sys.argv[4].split(",")] if len(sys.argv) == 5 else [])))
