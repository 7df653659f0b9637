"""How much each recording tier (collect.TIERS) disturbs a fixed-work command: its wall time per run
under the tier's `perf record` against the same command unrecorded, interleaved in shuffled rounds.
Used to write docs/measured.md ("why=1: the validity gate's tiers"); it measures, so run it alone:

    flock /tmp/lab-bench.lock python3 -m lab.engine.evidence.disturb --rounds 6 --seconds 2 \\
        -- tests/fixtures/why/build/lock 2

Each condition of a round is one bash loop repeating the command for --seconds (whole repetitions), each
repetition timed inside the loop (so perf's own start-up and write-out are not counted, in both
conditions alike), and, recorded, stopping at collect.RECORD_BUDGET bytes as an evidence run does.
Prints one JSON object: per condition and round the repetitions' median wall, their count and the
recording's bytes; per tier the ratio of its median to the same round's unrecorded one."""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

from lab.engine import hostprep, prefix
from lab.engine.evidence import collect

# $1 µs to run, $2 the file of per-repetition µs, $3 the recording budget in bytes (0: unrecorded)
LOOP = ('end=$(( ${EPOCHREALTIME//[!0-9]/} + $1 )); out=$2; budget=$3; shift 3; w=0; : > "$out"\n'
        'while :; do t0=${EPOCHREALTIME//[!0-9]/}; "$@" > /dev/null || exit\n'
        '  echo $(( ${EPOCHREALTIME//[!0-9]/} - t0 )) >> "$out"\n'
        '  if [ "$budget" -gt 0 ]; then while read -r k v; do [ "$k" = wchar: ] && w=$v; done < /proc/$PPID/io; fi\n'
        '  [ "${EPOCHREALTIME//[!0-9]/}" -lt "$end" ] && { [ "$budget" -eq 0 ] || [ "$w" -lt "$budget" ]; } || break\n'
        'done\n')


def kinds(status, event, how, data):
    """Each kind of evidence alone, then together (the argv before the loop): what each costs."""
    tp = {t: collect.tracepoint(t, stack, collect.TIERS[0], how["periods"].get(t, 1))
          for t, stack in collect.TRACEPOINTS}
    base = ["perf", "record", "-q", "--no-buildid-cache", "-o", data, "--max-size", collect.MAX_BYTES,
            "-m", str(collect.ring_pages())]
    return {
        "count": ["perf", "stat", "-x,", "-o", os.devnull, "-e",
                  ",".join([t for t, _s in collect.TRACEPOINTS] + ["task-clock"]), "--"],
        "switches": base + ["--switch-events", "-e", "dummy", "--"],
        "oncpu": base + ["--call-graph", f"dwarf,{collect.STACK_BYTES}", "-e", f"{event}/freq={how['hz']}/", "--"],
        "tracepoints": base + ["-R", "--call-graph", f"dwarf,{collect.STACK_BYTES}"] +
        [x for t in tp.values() for x in ("-e", t)] + ["--"],
        "all (full tier)": collect.record_prefix(data, event, status, tier=collect.TIERS[0], how=how),
    }


def condition(tier, seconds, cmd, tmp, status, event, prefix_=None):
    """{"median_s", "reps", "bytes"} of one loop, recorded at `tier` (None: unrecorded) or under `prefix_`."""
    out, data = os.path.join(tmp, "walls"), os.path.join(tmp, "perf.data")
    recorded = bool(tier) or "perf" in (prefix_ or ())
    loop = ["bash", "-c", LOOP, "loop", str(int(seconds * 1e6)), out,
            str(collect.RECORD_BUDGET if recorded else 0)] + cmd
    argv = (prefix_ if prefix_ is not None
            else collect.record_prefix(data, event, status, tier=tier) if tier else []) + loop
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    walls = [int(x) / 1e6 for x in open(out).read().split()]
    size = os.path.getsize(data) if recorded and os.path.exists(data) else 0
    if os.path.exists(data):
        os.remove(data)
    return {"median_s": statistics.median(walls) if walls else None, "reps": len(walls), "bytes": size,
            "rc": p.returncode, "cut": "size limit reached" in p.stderr}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--kinds", action="store_true",
                    help="each kind of evidence alone (counting, switches, on-CPU samples, sampled tracepoints) "
                         "and all of them as planned from a count, instead of the tiers")
    ap.add_argument("--aslr", action="store_true",
                    help="address randomisation off (collect.no_aslr, as the evidence runs record) against on: "
                         "unrecorded and at the full tier, each")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args(argv)
    hostprep.prepare()                   # tracefs, as a why=1 sweep does
    event = prefix.perf_event()
    status = collect.availability(event)
    if status["offcpu"] != "ok":
        sys.exit(f"the tracepoints are not available here: {status['offcpu']}")
    names = [None] + [t["name"] for t in collect.TIERS]
    tiers = {t["name"]: t for t in collect.TIERS}
    rounds = []
    with tempfile.TemporaryDirectory() as tmp:
        prefixes = {}
        if a.kinds:       # the plan from one count, as an evidence run's (collect.calibrate, collect.plan)
            loop = ["bash", "-c", LOOP, "loop", str(int(a.seconds * 1e6)), os.path.join(tmp, "w"), "0"] + a.cmd
            how, _wall = collect.counted(loop, os.path.join(tmp, "stat.csv"), a.seconds)
            print(json.dumps({"plan": how}), file=sys.stderr)
            prefixes = kinds(status, event, how, os.path.join(tmp, "perf.data"))
            names = [None] + list(prefixes)
        if a.aslr:       # the full tier as an evidence run plans it (from a count: collect.calibrate, plan)
            off = collect.no_aslr()
            loop = ["bash", "-c", LOOP, "loop", str(int(a.seconds * 1e6)), os.path.join(tmp, "w"), "0"] + a.cmd
            how, _wall = collect.counted(loop, os.path.join(tmp, "stat.csv"), a.seconds)
            print(json.dumps({"plan": how}), file=sys.stderr)
            full = collect.record_prefix(os.path.join(tmp, "perf.data"), event, status, tier=collect.TIERS[0],
                                         how=how)
            prefixes = {"unrecorded, no ASLR": off, "full, ASLR on": full[len(off):], "full, no ASLR": full}
            names = [None] + list(prefixes)
        for r in range(a.rounds):
            order = names[:]
            random.shuffle(order)
            got = {n or "unrecorded": condition(tiers.get(n), a.seconds, a.cmd, tmp, status, event, prefixes.get(n))
                   for n in order}
            got["order"] = [n or "unrecorded" for n in order]
            rounds.append(got)
            print(json.dumps({"round": r + 1, **got}), file=sys.stderr)
    summary = {}
    for n in names[1:]:
        t = tiers.get(n, {"name": n})
        ratios = [x[n]["median_s"] / x["unrecorded"]["median_s"] for x in rounds
                  if x[n]["median_s"] and x["unrecorded"]["median_s"]]
        summary[n] = {"ratio_median": statistics.median(ratios) if ratios else None,
                      "ratio_min": min(ratios, default=None), "ratio_max": max(ratios, default=None),
                      "bytes_median": statistics.median(x[n]["bytes"] for x in rounds),
                      "reps_median": statistics.median(x[n]["reps"] for x in rounds),
                      "cut": sum(x[n]["cut"] for x in rounds), "settings": t}
    base = [x["unrecorded"]["median_s"] for x in rounds]
    summary["unrecorded"] = {"median_s": statistics.median(base), "min_s": min(base), "max_s": max(base),
                             "reps_median": statistics.median(x["unrecorded"]["reps"] for x in rounds)}
    print(json.dumps({"cmd": a.cmd, "rounds": rounds, "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
