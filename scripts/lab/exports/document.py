"""A Run (lab/core/run.py, read once by lab/report/model.py) as one JSON document (format "scaling-lab
run", version VERSION; docs/run-format.md, docs/run-format.schema.json). Nothing is read here: every
field is the Run's (statistics from stats.summary, verdicts and goals as the report states them, the
machine's settings and the code's identity as the model read them); NaN (an interval below 3 repeats)
is null."""
import dataclasses
import math

from lab.report.model import SETTINGS  # noqa: F401 (imports/labrun.py writes the settings back to these files)

FORMAT = "scaling-lab run"
VERSION = 1
STATS = ("n", "median", "min", "max", "ci_lo", "ci_hi", "ci_pct", "spread_pct", "ci_method")


def clean(v):
    """JSON-safe: NaN and infinities become null, tuples lists, anything else not JSON its text."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    if v is None or isinstance(v, (str, int, bool)):
        return v
    return str(v)


def machine(h):
    rows = dict(h.rows)
    return {"summary": h.one_line, "kind": h.kind, "cpu": rows.get("CPU", ""), "kernel": rows.get("kernel", ""),
            "rows": [[k, v] for k, v in h.rows], "imported": h.imported, **h.settings}


def point(p):
    return {"variant": p.variant, "placement": p.placement, "threads": int(p.threads),
            "cpus": p.cpus, "metric": p.metric, "unit": p.unit, "noise": p.noise,
            "repeats": [{"repeat": int(r.repeat), "value": r.value, "suspect": r.suspect,
                         "command": r.command} for r in p.repeats],
            "stats": {k: getattr(p.summary, k) for k in STATS}, "suspect": p.summary.suspect}


def experiment(e):
    sc = e.scaling
    return {"name": e.name, "spec": e.spec, "charts": [list(c) for c in e.charts],
            # measured points only: one measured once for several placements (plan.shared) is exported once
            "points": [point(p) for p in e.points + e.noise if not p.shared],
            "scaling": {"metric": sc.metric, "unit": sc.unit, "better": sc.better,
                        "threshold": sc.threshold, "words": sc.words, "sentences": sc.sentences,
                        "rows": [{k: getattr(r, k) for k in ("placement", "threads", "base", "speedup", "lo", "hi",
                                                             "ideal", "eff", "eff_lo", "eff_hi", "doubt")}
                                 for r in sc.rows]}
            if sc else None,
            "goals": [dataclasses.asdict(g) for g in e.goals], "skipped": e.skipped, "failed": e.failed,
            "remeasured": e.remeasured}


def document(m):
    """The Run m as the run format's JSON document (a dict of JSON values)."""
    doc = {"format": FORMAT, "format_version": VERSION,
           "run": {"name": m.name, "state": m.state, "command": m.command},
           "machine": machine(m.host), "code": m.code,
           "experiments": [experiment(e) for e in m.experiments],
           "stories": [{k: getattr(s, k) for k in ("source", "title", "claim", "published", "measured", "verdict",
                                                   "why")}
                       for s in m.stories]}
    return clean(doc)
