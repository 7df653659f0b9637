"""The validity gate of evidence runs (issue 53, item 2): the one owner of which evidence run the
differential may rest on, and of the words when none is left (docs/design.md, "Why it stops scaling:
evidence", the validity gate).

An evidence run is judged when it ends: *lost* (the command or perf failed), *cut* (perf reached its size
limit: the recording is not the whole run) or *disturbed* (its throughput, or its wall time per run of a
fixed-work command, more than WHY_DISTURBANCE away from its reference: recording changed what it
recorded) is rejected, and collect.py redoes it once with a lighter recording tier. The reference is the
same command run unrecorded before the point's evidence runs (collect.calibrate, which also counts the
event rates), where there is one, else the timed repeats' median: on a shared host the program's own speed moves by more
than the budget between the timed repeats and the evidence runs (a contended mutex on 2 vCPUs ran
×1–×4 apart minutes later, unrecorded: docs/measured.md), and the gate is about what perf changes. The
speed against the timed repeats is kept beside it (`speed_timed`) and said. meta.json's `runs_judged`
holds every attempt's judgement; diff.load keeps only the kept runs.
"""
WHY_DISTURBANCE = 0.10   # ±10% of its reference: beyond it the evidence run is another program
KEPT, LOST, CUT, DISTURBED = "kept", "lost", "cut", "disturbed"


def speed(measured, timed, higher):
    """How many times as fast the evidence run went as the timed repeats' median (> 1: faster), or None:
    a throughput compares itself, a wall time per run its inverse."""
    if not measured or not timed or measured <= 0 or timed <= 0:
        return None
    return measured / timed if higher else timed / measured


UNRECORDED = "the point's unrecorded run"
TIMED = "the timed repeats"


def judge(measured, timed, higher, reference=None):
    """(verdict, why, speed) of a run that completed: KEPT within the budget of its reference (the
    unrecorded run just before it where given, else the timed median; with neither nothing to judge it
    by, said), else DISTURBED, with the numbers; the speed is against that reference."""
    base, than = (reference, UNRECORDED) if reference else (timed, TIMED)
    s = speed(measured, base, higher)
    if s is None:
        return KEPT, "not judged: no timed median to compare with", None
    # the budget is on the measured quantity itself (throughput or wall per run), as the issue states it
    off = (s if higher else 1 / s) - 1
    said = f"{pace(s, than)} (budget ±{WHY_DISTURBANCE * 100:.0f}%)"
    vs_timed = speed(measured, timed, higher) if reference else None
    if vs_timed:
        said += f"; {pace(vs_timed)}"
    return (KEPT if abs(off) <= WHY_DISTURBANCE else DISTURBED), said, s


def pace(s, than=TIMED):
    """'ran ×2.20 faster than the timed repeats' / '×1.04 slower'."""
    return f"ran ×{s:.2f} faster than {than}" if s >= 1 else f"ran ×{1 / s:.2f} slower than {than}"


def kept_runs(meta):
    """The recorded runs (1-based, meta's `runs`) the differential may use: every one in a folder written
    before the gate (no `runs_judged`), else those judged KEPT."""
    judged = meta.get("runs_judged")
    if judged is None:
        return list(range(1, meta["runs"] + 1))
    return [j["run"] for j in judged if j["verdict"] == KEPT and j.get("run")]


def timed_speed(j):
    """A judged attempt's speed against the timed repeats: `speed_timed` where it was judged by an
    unrecorded reference (its `speed` is against that), else its `speed` (judged by the timed median)."""
    return j.get("speed_timed") if j.get("reference") else j.get("speed")


def kept_speed(meta):
    """The median speed against the timed repeats of the kept runs, or None."""
    kept = set(kept_runs(meta))
    xs = sorted(timed_speed(j) for j in meta.get("runs_judged") or [] if j.get("run") in kept and timed_speed(j))
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2 if xs else None


def summary(meta, threads):
    """'2 threads: 2 of 5 attempts kept (tiers light, lightest; 3 disturbed)', or '' when the gate did not
    judge (an older folder) or every attempt was kept at the first tier."""
    judged = meta.get("runs_judged") or []
    kept = [j for j in judged if j["verdict"] == KEPT]
    # kept runs match their unrecorded reference, yet the host may have moved the program's own pace
    # since the timed repeats: the words rest on them, so the reader is told (issue 53: never silently)
    pace = [s for s in (timed_speed(j) for j in kept) if s and abs((s if s >= 1 else 1 / s) - 1) > WHY_DISTURBANCE]
    other = (f"; the kept runs {' or '.join(pace_span(pace))} than the timed repeats (the host "
             "moved the program's own pace: their unrecorded reference runs did too)") if pace else ""
    if not judged or (len(kept) == len(judged) and {j["tier"] for j in judged} <= {judged[0]["tier"]}):
        return f"{threads} thread{'' if threads == 1 else 's'}: all {len(kept)} attempts kept{other}" if other else ""
    rejected = [f"{sum(j['verdict'] == v for j in judged)} {v}" for v in (DISTURBED, CUT, LOST)
                if any(j["verdict"] == v for j in judged)]
    tiers = [f"tier {', '.join(dict.fromkeys(j['tier'] for j in kept))}"] if kept else []
    return (f"{threads} thread" + ("" if threads == 1 else "s") +
            f": {len(kept)} of {len(judged)} attempts kept "
            f"({'; '.join(tiers + ([', '.join(rejected)] if rejected else []))}){other}")


def pace_span(speeds):
    """['ran ×2.05–×2.20 faster', 'ran ×1.30 slower'] of speeds against the timed repeats."""
    fast, slow = [s for s in speeds if s >= 1], [s for s in speeds if s < 1]
    return ([f"ran {span(min(fast), max(fast))} faster"] if fast else []) + \
        ([f"ran {span(1 / max(slow), 1 / min(slow))} slower"] if slow else [])


def none_kept(meta, threads):
    """Why no run of a point is kept, with the numbers: 'the evidence runs at 2 threads ran ×2.05–×2.20
    faster than the timed repeats (budget ±10%); 1 cut (perf's size limit); none kept'."""
    judged = meta.get("runs_judged") or []
    at = f"{threads} thread" + ("" if threads == 1 else "s")
    if not judged:
        return f"no evidence run completed at {at}"
    parts = []
    speeds = [j["speed"] for j in judged if j["verdict"] == DISTURBED and j.get("speed")]
    if speeds:
        fast = [s for s in speeds if s >= 1]
        slow = [s for s in speeds if s < 1]
        said = []
        if fast:
            said.append(f"ran {span(min(fast), max(fast))} faster")
        if slow:
            said.append(f"ran {span(1 / max(slow), 1 / min(slow))} slower")
        than = "their unrecorded runs" if any(j.get("reference") for j in judged) else TIMED
        parts.append(f"the evidence runs at {at} {' or '.join(said)} than {than} "
                     f"(budget ±{WHY_DISTURBANCE * 100:.0f}%, {len(speeds)} of {len(judged)} attempts)")
    for verdict in (CUT, LOST):
        whys = [j["why"] for j in judged if j["verdict"] == verdict]
        if whys:
            parts.append(f"{len(whys)} {verdict} ({whys[0]})")
    tiers = list(dict.fromkeys(j["tier"] for j in judged if j.get("tier")))
    suspect = meta.get("timed_suspect")
    return "; ".join(parts) + (f"; recording tiers tried: {', '.join(tiers)}" if tiers else "") + "; none kept" + \
        (f" (and {suspect})" if isinstance(suspect, str) and suspect else "")


def span(a, b):
    return f"×{a:.2f}" if round(a, 2) == round(b, 2) else f"×{a:.2f}–×{b:.2f}"
