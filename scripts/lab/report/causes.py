"""Why an experiment stops scaling: per placement of its scaling curve, the USL model of the curve
(lab/why/usl.py) and, where the sweep ran with why=1, the differential of the evidence between the fewest
threads and the knee (lab/why/diff.py), its named cause and words (lab/why/verdict.py) and a differential flame
graph (lab/why/flame.py). section() only reads (compare builds the model of received runs too) and returns a
frozen WhySection; draw() writes the flame graphs into plots/ when the report is drawn and returns what it drew
(Flames per experiment), never writing into the section. lab/report/view.py's why() draws the
section, scale.py prints its words. Everything read from evidence files is plain text here; the view escapes it."""
import dataclasses
import os
import re

from lab.core.runfolder import RunFolder
from lab.engine import plan
from lab.engine.evidence.store import EvidenceError
from lab.report import scaling
from lab.report.journal import Journal, JournalError
from lab.why import classify, diff, flame, groups, hardware, usl, verdict
from lab.why.model import Flames, WhySection

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
    """The WhySection (lab/why/model.py) of an experiment with scaling words, else None: the USL model of
    every curve and each placement's verdict. Every variant gets its own curves (seed 000 compares two)."""
    sc = e.scaling
    if not sc:
        return None
    variants = scaling.curves(e.points, sc.metric)
    curves, models = [], {}
    topo = RunFolder(run).topology() if any(p.metric == sc.metric for p in e.points) else None
    for variant, by_p in sorted(variants.items()):
        errors = {}
        for c in verdict.curve(scaling.summaries(by_p), sc.better, evidence_of(run, e.name, variant, errors),
                               variant):
            curves.append(said(c, errors, topo, len(variants) > 1))
        for pl, by_t in sorted(by_p.items()):
            models[(variant, pl)] = model_of(by_t, sc.better)
    return WhySection(metric=sc.metric, better=sc.better, several=len(variants) > 1, usl=models,
                      curves=tuple(curves), evidence=any(c.diff for c in curves))


def said(c, errors, topo, several):
    """A curve with what the run folder adds to its words: evidence refused (which file and why, instead
    of "run with why=1"), where the threads ran on a many-domain host (issue 53 item 6), its variant."""
    v = c.verdict
    missing, text = v.missing, v.text
    bad = [f"{n} threads: {errors[(v.placement, n)]}" for n in (v.base_threads, v.knee_threads)
           if (v.placement, n) in errors]
    if bad:
        missing = tuple(m for m in missing if not m.startswith("no evidence at")) + \
            (f"evidence unreadable ({'; '.join(bad)})",)
        text = f"{v.placement}: evidence unreadable ({'; '.join(bad)})."
    # which threads paid: where they ran, what they did (issue 53 item 6); with no differential, the knee's
    # kept runs alone (the fewest threads' were refused), said as a description of the knee, not a cause
    where = groups.words(c.diff.placed if c.diff else c.placed, topo, c.diff.unit if c.diff else v.unit,
                         classify.named) if c.diff or c.placed else ""
    if where:
        text += f" {where}" if c.diff else f" At {verdict.threads(v.knee_threads)}, its kept runs alone: {where}"
    counters = hardware.text(c.diff)     # the hardware tier's words, where it ran (issue 56)
    if counters:
        text += f" {counters}"
    if several:
        text = f"{c.variant}: {text}"
    return dataclasses.replace(c, verdict=dataclasses.replace(v, missing=missing, text=text))


def draw(rf, m):
    """Write each placement's differential flame graph to plots/<exp>-why-<placement>.svg (report.py,
    before it renders): {experiment name: Flames}, what was drawn and what inferno could not draw (said
    beside the verdict's missing lines, not fatal). The Run m is not changed (front.with_flames)."""
    out = {}
    for e in m.experiments:
        w = e.why
        if not w:
            continue
        paths, failed = {}, {}
        for c in w.curves:
            name = f"{c.variant}-{c.verdict.placement}" if w.several else c.verdict.placement
            if c.diff is None or not SAFE.fullmatch(name):   # a received name never names a file
                continue
            key = (c.variant, c.verdict.placement)
            try:
                text = flame.svg(c.diff, interactive=False)
            except flame.FlameError as err:
                failed[key] = str(err)
                continue
            rel = os.path.relpath(rf.chart(e.name, "why", name, "svg"), rf.path)
            rf.write_text(rel, text)
            paths[key] = rel
        out[e.name] = Flames(paths, failed)
    return out
