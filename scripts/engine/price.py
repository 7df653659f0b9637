"""The dry run's price of a sweep: every point, what cannot run and why, and an ETA.

Seconds per run come from the newest earlier run of the same experiment and profile on this host
(its journal's `done` events; engine/history.py), or from another host's history summary (fleet-plan's
`history=FILE`), else from the spec's `cost`. Adaptive repeats count by the number the
last run needed (else min_repeats), and so do re-measurements: that run's disturbed attempts per kept
repeat, each a run plus `retry_pause`. The range goes from min_repeats with none re-measured to
max_repeats at that rate.
"""
import shutil

from term import visible
from topo import cpu_ranges


def per_run(spec, point, measured):
    if measured is not None:
        return measured
    cost, _, most = spec["cost"].partition(" max ")
    n = len(point.cpus)
    if cost.endswith("/pair"):
        # every pair of {cpus}, and the SMT pairs a one-PU-per-core matrix adds ({smt_pairs})
        extra = len(point.smt_pairs.split(",")) if point.smt_pairs else 0
        secs = float(cost[:-5]) * (n * (n - 1) / 2 + extra)
    elif cost.endswith("/cpu"):
        secs = float(cost[:-4]) * n
    else:
        secs = float(cost)
    return min(secs, float(most)) if most else secs


def repeats(spec, seen_n):
    """(expected, fewest, most) repeats per point."""
    if spec["repeats"] != "auto":
        r = int(spec["repeats"])
        return r, r, r
    lo, hi = int(spec["min_repeats"]), int(spec["max_repeats"])
    return min(max(seen_n or lo, lo), hi), lo, hi


def hms(secs):
    secs = int(round(secs))
    return f"{secs // 3600}:{secs % 3600 // 60:02d}:{secs % 60:02d}"


SPEC_COST = "spec's cost"


# why=1: an evidence run costs a run slowed by perf record, plus perf's start-up and write-out and perf
# script's DWARF unwinding: ~1.5 s a run for programs of 0.05–0.4 s on the lab's 2-vCPU VM
# (docs/measured.md, "why=1"); priced as WHY_RUN_FIXED seconds + WHY_RUN_FACTOR runs.
WHY_RUN_FIXED, WHY_RUN_FACTOR = 1.5, 2


def price(specs, plans, profile, history, on_host, out, why_runs=0):
    """Print every point and the ETA; returns (points, seconds expected). history (engine/history.py,
    or None) gives measured times; on this host missing tools count too, on a fixture they do not.
    why_runs: evidence runs per point (why=1), each priced at WHY_RUN_FIXED s + WHY_RUN_FACTOR runs."""
    points = expect = fewest = most = 0.0
    skipped = []
    missing = {s.name: t for s in specs for t in s["requires"].split() if on_host and not shutil.which(t)}
    specs = [s for s in specs if s.name not in missing]
    out.write(f"{'experiment':<18} {'variant':<14} {'placement':<14} {'threads':>7}  {'repeats':<9} "
              f"{'s/run':>8}  cpus\n")
    for spec in specs:
        found = history.get(spec.name, profile) if history else None
        measured, seen_n, again, _run = found or (None, None, 0.0, None)
        source = SPEC_COST if found is None else history.source(found)
        e, lo, hi = repeats(spec, seen_n)
        setup = float(spec["setup_cost"])
        live = [p for p in plans[spec.name] if not p.skip]
        if live:
            expect, fewest, most = expect + setup, fewest + setup, most + setup
            first = per_run(spec, live[0], measured)
            expect, fewest, most = (x + first * int(spec["warmup"]) for x in (expect, fewest, most))
        for p in plans[spec.name]:
            if p.skip:
                skipped.append(f"{spec.name} {p.placement} threads={p.threads}: {p.skip}")
                continue
            s = per_run(spec, p, measured)
            retried = (1 + again) * s + again * float(spec["retry_pause"])   # a kept repeat, retries included
            points += 1
            why = why_runs * (WHY_RUN_FIXED + WHY_RUN_FACTOR * s)
            expect, fewest, most = expect + e * retried + why, fewest + lo * s + why, most + hi * retried + why
            reps = "auto" if spec["repeats"] == "auto" else spec["repeats"]
            out.write(f"{spec.name:<18} {visible(p.variant) or '-':<14} {p.placement:<14} {p.threads:>7}  {reps:<9} "
                      f"{s:>8.5g}  {cpu_ranges(p.cpus)}\n")
        out.write(f"# {spec.name}: seconds per run from the {source}; repeats {e:.3g}"
                  + (f" expected ({lo}–{hi})" if lo != hi else "")
                  + (f"; {again:.2g} re-measured per repeat last run" if again else "")
                  + f"; build and setup {setup:g} s"
                  + (f"; why=1: {why_runs} evidence runs per point at ~{WHY_RUN_FIXED:g} s + {WHY_RUN_FACTOR} runs each"
                     if why_runs else "")
                  + "\n")
    for s in skipped:
        out.write(f"impossible: {s}\n")
    for name, tool in missing.items():
        out.write(f"impossible: {name} (every point): '{tool}' is not on PATH\n")
    rng = f" (range {hms(fewest)} – {hms(most)})" if fewest != most else ""
    out.write(f"{int(points)} points, ETA {hms(expect)}{rng}\n")
    return int(points), expect
