#!/usr/bin/env python3
"""groups_evidence.py OUT.json PROGRAM: which threads paid, grouped by where they ran (issue 53, item 6),
on a real recording in a many-package guest, through the same code an evidence run and the report use.

PROGRAM is tests/fixtures/why/farside.c: each of its 4 workers pins itself to one CPU of its taskset and
sleeps 2 ms per op on a package other than CPU 0's, 0.2 ms on CPU 0's. The taskset here is two CPUs of each of the
first two packages (on one package: of each of the first two NUMA nodes, else the first four CPUs). The
command is recorded as a why=1 evidence run records it at the lightest tier (collect.record_prefix with
TIERS[-1], every switch recorded: the waits and CPUs the groups need are exact; once, at the full tier, a
guest kernel locked up in perf under TCG for the whole job), folded into the run files by collect.evidence_run,
read back by store.read_run,
and grouped by why/groups.py against the guest's hwloc topology. OUT.json holds the words, the CPUs and
the per-thread rows; vm/check.py asserts the words on a 2-package shape and that a 1-package shape says
nothing of packages. Timings under TCG are not judged: the validity gate is not applied (docs/measured.md
has the whole `./lab scale why=1` in the guest)."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from lab.engine import hostprep, prefix  # noqa: E402
from lab.engine.evidence import collect, store  # noqa: E402
from lab.topology.topo import Topology, cpu_list  # noqa: E402
from lab.why import classify, groups  # noqa: E402

THREADS = 4


def cpus_of(topo):
    """Two CPUs of each of the first two packages, else of the first two NUMA nodes, else the first four."""
    for key in (lambda pu: pu.package, lambda pu: (pu.nodes or (None,))[0]):
        by = {}
        for pu in sorted(topo.pus, key=lambda pu: pu.os):
            by.setdefault(key(pu), []).append(pu.os)
        if len(by) > 1:
            first, second = (by[k] for k in sorted(by, key=str)[:2])
            return first[:2] + second[:2]
    return sorted(pu.os for pu in topo.pus)[:THREADS]


def main(out, program):
    hostprep.prepare()
    event = prefix.perf_event()
    status = collect.availability(event)
    topo = Topology()
    cpus = cpus_of(topo)
    cmd = ["taskset", "-c", cpu_list(cpus), program, str(THREADS)]
    result = {"cpus": cpus, "packages": sorted({pu.package for pu in topo.pus}), "command": cmd}
    with tempfile.TemporaryDirectory(prefix="groups-evidence-") as folder:
        data = os.path.join(folder, "perf.data")
        p = subprocess.run(collect.record_prefix(data, event, status, tier=collect.TIERS[-1]) + cmd,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            result["words"] = f"failed (exit {p.returncode}): {p.stderr.strip()[-300:]}"
        else:
            said, _span = collect.evidence_run(folder, 1, data, dict(os.environ),
                                               os.path.join(folder, "evidence.log"), status)
            got = store.read_run(folder, 1)        # the readers a report uses, on the files as written
            got["work"] = float(p.stdout.split()[-1])
            placed = groups.placed([got])
            result.update(words=groups.words(placed, topo, "op", classify.named), status=said,
                          threads=got.get("threads"), cpus_rows=got.get("cpus"),
                          output=p.stdout.strip(), placed=placed)
    with open(out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(f"groups-evidence: on CPUs {cpu_list(cpus)}: {result['words'] or '(nothing said)'}")
    return 0 if "placed" in result else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.split("\n")[0])
    sys.exit(main(sys.argv[1], sys.argv[2]))
