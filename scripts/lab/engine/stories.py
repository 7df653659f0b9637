"""The seed stories' claims and the points each judges: what a sweep with a budget measures first.

One owner of both: report/claims.py words each claim (CLAIMS) and judges it from the measured points;
plan.plan() marks the points named here (Point.story), which the budget's fit (price.fit) and a running
sweep's re-plan (rounds.Sweep.replan) never leave out, and each experiment measures before its other
points (and, with plan=adaptive, at once rather than held). The rules only choose points; the verdicts are
claims.py's, from measured points only.

  seed-000  runner-empty, both variants (shared-arc vs per-thread): at 1 thread, at the fewest threads
            whose CPUs span two packages (across the package boundary: a pinned placement only, an
            unpinned point's CPUs are every PU at any count), and at the curve's last count (every core,
            every PU): the gap's two ends and where it crosses the package
  seed-001  cache-get, every lock mode (variant): the coarse ×4 grid (plan.coarse) of its first placement,
            from 1 thread to the last: the knee is where GET/s turns down, unknown before measuring, and
            the claim needs the best count and the last, at least three counts (plan=adaptive then
            bisects around it as the curve asks)
  seed-004  same-l3 vs cross-l3: those pairs of c2c and channel, and c2c-matrix's matrix (its relations
            give the CCX crossing first)
"""

CLAIMS = {
    "seed-000": "the per-thread ÷ shared-arc gap grows with threads",
    "seed-004": "a same-CCX hop beats crossing a CCX",
    "seed-001": "the global lock has a knee (more threads, fewer GET/s) and its mutex share grows with threads",
}

# {experiment: story}: the experiments whose points the stories judge
EXPERIMENTS = {"runner-empty": "seed-000", "cache-get": "seed-001", "c2c": "seed-004", "c2c-matrix": "seed-004",
               "channel": "seed-004"}
CCX = ("same-l3", "cross-l3")


def packages(topo, cpus):
    return len({topo.pu(c).package for c in cpus})


def mark(points, topo, coarse):
    """Set Point.story ("seed-000: …", what the point is to its claim) on the points of one experiment's
    plan that a seed story judges; coarse: plan.coarse (passed in: plan imports this module)."""
    story = EXPERIMENTS.get(points[0].experiment) if points else None
    if story is None:
        return points
    live = [p for p in points if not p.skip or p.same_as]
    curves = {}
    for p in live:
        curves.setdefault(p.placement, set()).add(p.threads)
    want = {}          # {(placement, threads): what it is to the claim}
    if story == "seed-000":
        for pl, ts in curves.items():
            ts = sorted(ts)
            want[(pl, ts[0])] = "the gap at the fewest threads"
            want[(pl, ts[-1])] = "the gap at the most threads (every core)"
            crossing = [p.threads for p in live if p.placement == pl and pl != "unpinned" and p.cpus
                        and packages(topo, p.cpus) > 1]
            if crossing:
                want.setdefault((pl, min(crossing)), "the gap across the package boundary")
    elif story == "seed-001":
        first = next(iter(curves), None)
        if first is not None:
            for t in coarse(sorted(curves[first])):
                want[(first, t)] = "the global lock's curve, where its knee is looked for"
    else:
        for pl, ts in curves.items():
            if pl in CCX or points[0].experiment == "c2c-matrix":
                for t in ts:
                    want[(pl, t)] = "same-l3 vs cross-l3" if pl in CCX else "the matrix's same-l3 and cross-l3 pairs"
    for p in points:
        what = want.get((p.placement, p.threads))
        if what and (not p.skip or p.same_as):
            p.story = f"{story}: {what}"
    return points


def first(specs, plans):
    """The order a sweep with a budget measures its experiments in: those with a point a seed story judges
    first (each still built and set up once), the rest after, each in spec order. One rule for the sweep
    (rounds.Sweep.run_all) and its price (price.cold_builds: the first of them to run pays a cold build)."""
    return sorted(specs, key=lambda s: not any(p.story for p in plans.get(s.name, ())))
