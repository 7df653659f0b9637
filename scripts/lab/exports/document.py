"""The run as one JSON document (format "scaling-lab run", version VERSION; docs/run-format.md).

Everything comes from lab/report/model.py (statistics from stats.summary, verdicts and goals as the
report states them) and the run's env/ and sweep/ files; NaN (an interval below 3 repeats) is null."""
import json
import math

from lab.report import model
from lab.core.runfolder import RunFolder

FORMAT = "scaling-lab run"
VERSION = 1
STATS = ("n", "median", "min", "max", "ci_lo", "ci_hi", "ci_pct", "spread_pct", "ci_method")
# env/ files of key=value lines that say what moves results (scripts/env.sh writes them)
SETTINGS = {"topology": "topology.txt", "virt": "virt.txt", "cpu_state": "cpu-state.txt",
            "memory_time": "memory-time.txt"}


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


def machine(rf, m):
    h = m["host"]
    rows = dict(h.rows)
    out = {"summary": h.one_line, "kind": h.kind, "cpu": rows.get("CPU", ""),
           "kernel": rows.get("kernel", ""), "rows": [[k, v] for k, v in h.rows],
           "imported": h.imported}
    for key, name in SETTINGS.items():
        out[key] = model.kv(rf.env(name))
    return out


def point(p):
    return {"variant": p.variant, "placement": p.placement, "threads": int(p.threads),
            "cpus": p.cpus, "metric": p.metric, "unit": p.unit, "noise": p.noise,
            "repeats": [{"repeat": int(r.repeat), "value": r.value, "suspect": r.suspect,
                         "command": r.command} for r in p.repeats],
            "stats": {k: getattr(p.summary, k) for k in STATS}, "suspect": p.summary.suspect}


def experiment(e):
    sc = e.get("scaling")
    return {"name": e["name"], "spec": e["spec"], "charts": [list(c) for c in e["charts"]],
            # measured points only: one measured once for several placements (plan.shared) is exported once
            "points": [point(p) for p in e["points"] + e["noise"] if not p.shared],
            "scaling": {"metric": sc.metric, "unit": sc.unit, "better": sc.better,
                        "threshold": sc.threshold, "words": sc.words, "sentences": sc.sentences,
                        "rows": [{k: r[k] for k in ("placement", "threads", "base", "speedup", "lo", "hi", "ideal",
                                                    "eff", "eff_lo", "eff_hi", "doubt")} for r in sc.rows]}
            if sc else None,
            "goals": e["goals"], "skipped": e["skipped"], "failed": e["failed"], "remeasured": e["remeasured"]}


def document(run):
    """The whole run: raises model.DataError / JournalError as the report does on a bad run."""
    rf = RunFolder(run)
    m = model.build(rf.path)
    ident = rf.read("sweep/identity.json")
    try:
        code = json.loads(ident) if ident else None
    except ValueError:
        code = None
    doc = {"format": FORMAT, "format_version": VERSION,
           "run": {"name": m["name"], "state": m["state"], "command": m["command"]},
           "machine": machine(rf, m), "code": code if isinstance(code, dict) else None,
           "experiments": [experiment(e) for e in m["experiments"]],
           "stories": [{k: getattr(s, k) for k in ("source", "title", "claim", "published", "measured", "verdict", "why")}
                       for s in m["stories"]]}
    return clean(doc)
