"""Why an experiment stops scaling: per placement of its scaling curve, the USL model of the curve
(lab/why/usl.py) and, where the sweep ran with why=1, the differential of the evidence between the fewest
threads and the knee (lab/why/diff.py), its named cause and words (lab/why/verdict.py) and a differential flame
graph (lab/why/flame.py). section() only reads (compare builds the model of received runs too); draw() writes
the flame graphs into plots/ when report.py writes the report. lab/report/view.py's why() draws the
section, scale.py prints its words. Everything read from evidence files is plain text here; the view escapes it."""
import os
import re

from lab.core.runfolder import RunFolder
from lab.engine import plan
from lab.engine.evidence.store import EvidenceError
from lab.report import scaling
from lab.report.journal import Journal, JournalError
from lab.why import classify, diff, flame, groups, usl, verdict

SAFE = re.compile(r"[A-Za-z0-9._-]{1,128}")


def model_of(by_t, better):
    """usl.Fit | usl.NoFit over every repeat of one placement's curve."""
    ts = [t for t, p in by_t.items() for _r in p.repeats]
    xs = [r.value for _t, p in by_t.items() for r in p.repeats]
    return usl.fit(ts, xs, lower=(better == "lower"))


def evidence_of(run, exp, variant, errors=None):
    """(placement, threads) → that point's loaded evidence (diff.load), None without a why folder; the one
    loader of a point's evidence (the stories' claims use it too). A folder whose evidence runs all failed
    raises ValueError (verdict.curve then says so instead of "run with why=1"); an unreadable one is put in
    `errors` by (placement, threads) and reads as None, or raises EvidenceError without `errors`. A point
    measured once as another placement (plan.shared) has that placement's evidence, as it has its numbers."""
    rf = RunFolder(run)
    try:
        shared = Journal(rf).shared(exp)
    except (OSError, JournalError):
        shared = {}

    def get(placement, threads):
        placement = shared.get((variant or "", placement, str(threads)), placement)
        folder = rf.evidence_dir(exp, plan.stem(variant, placement, threads))
        if not os.path.isfile(os.path.join(folder, "meta.json")):
            return None
        try:
            ev = diff.load(folder)
        except (EvidenceError, OSError) as err:
            if errors is None:
                raise EvidenceError(str(err)) from None
            errors[(placement, threads)] = str(err)
            return None
        if not ev["runs"] and "runs_judged" not in ev["meta"]:     # judged: verdict.curve says why none is kept
            raise ValueError(f"{os.path.relpath(folder, run)}: no evidence run completed (its stderr_r1.log says why)")
        return ev
    return get


def section(run, e):
    """{"metric", "better", "usl": {(variant, placement): fit}, "curves": [verdict.curve entries, each with
    its "variant"], "flames": {(variant, placement): path}, "evidence": bool} for an experiment with
    scaling words, else None. Every variant gets its own curves (seed 000 compares two)."""
    sc = e.scaling
    if not sc:
        return None
    variants = scaling.curves(e.points, sc.metric)
    curves, models = [], {}
    topo = RunFolder(run).topology() if any(p.metric == sc.metric for p in e.points) else None
    for variant, by_p in sorted(variants.items()):
        errors = {}
        for c in verdict.curve(scaling.summaries(by_p), sc.better, evidence_of(run, e.name, variant, errors)):
            v = c["verdict"]
            c["variant"] = variant
            bad = [f"{n} threads: {errors[(v['placement'], n)]}" for n in (v["base_threads"], v["knee_threads"])
                   if (v["placement"], n) in errors]
            if bad:     # refused, not absent: say which file and why instead of "run with why=1"
                v["missing"] = [m for m in v.get("missing") or [] if not m.startswith("no evidence at")]
                v["missing"].append(f"evidence unreadable ({'; '.join(bad)})")
                v["text"] = f"{v['placement']}: evidence unreadable ({'; '.join(bad)})."
            where = groups.words(c["diff"]["placed"], topo, c["diff"]["unit"], classify.named) if c["diff"] else ""
            if where:       # which threads paid: where they ran, what they did (issue 53 item 6)
                v["text"] += f" {where}"
            if len(variants) > 1:
                v["text"] = f"{variant}: {v['text']}"
            curves.append(c)
        for pl, by_t in sorted(by_p.items()):
            models[(variant, pl)] = model_of(by_t, sc.better)
    return {"metric": sc.metric, "better": sc.better, "several": len(variants) > 1, "usl": models,
            "curves": curves, "flames": {}, "evidence": any(c["diff"] for c in curves)}


def draw(rf, m):
    """Write each placement's differential flame graph to plots/<exp>-why-<placement>.svg (report.py,
    before it renders), and note its path in the model; a graph inferno cannot draw is said, not fatal."""
    for e in m.experiments:
        w = e.why
        for c in (w or {}).get("curves", []):
            v = c["verdict"]
            name = f"{c['variant']}-{v['placement']}" if w["several"] else v["placement"]
            if c["diff"] is None or not SAFE.fullmatch(name):   # a received name never names a file
                continue
            try:
                text = flame.svg(c["diff"], interactive=False)
            except flame.FlameError as err:
                v["missing"] = list(v.get("missing") or []) + [f"no flame graph: {err}"]
                continue
            rel = os.path.relpath(rf.chart(e.name, "why", name, "svg"), rf.path)
            rf.write_text(rel, text)
            w["flames"][(c["variant"], v["placement"])] = rel
