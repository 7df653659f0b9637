"""The lab's own export (`./lab export RUN format=json`, docs/run-format.md) read back as a Run (lab/core/run.py):
the JSON document becomes the typed model directly, each point with its repeats and suspect marks and
their Summary, checked where the model's types check any received run (core/run.py's constructors) with
the document's place in the message. The run folder is then written from that Run (as_imported()): its
repeats become the same tidy rows, so the statistics are the same; the charts are the run's; the
machine's key=value settings go back to their env/ files and the rest is kept as the file's words
(env/exported-machine.json). Code identity, verdicts and goals are not re-imported: the report judges
the imported points again."""
import json
import re

from lab.core.run import DataError, Experiment, Host, Point, Repeat, Run, summary_of
from lab.core.runfolder import KIND_IMPORTED
from lab.engine.guard import NOISE_METRICS
from lab.engine.spec import NAME
from lab.exports.document import FORMAT, SETTINGS, VERSION

from .jsonfile import Doc
from .model import Imported

KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def recognise(doc):
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def parse(doc, path, threads_name):
    """The document as the Imported the run folder writer takes (threads_name: no parameter counts threads
    in the lab's own format)."""
    return as_imported(received(doc, path))


def made(d, where, kind, *args, **kw):
    """kind(*args, **kw), its refusal (the model's rule for a received run) named by the document's place."""
    try:
        return kind(*args, **kw)
    except DataError as e:
        raise d.bad(where, str(e)) from None


def received(doc, path):
    """The document as a Run: JSON types checked here (Doc), what a run's data must be by the model's types."""
    d = Doc(path)
    if doc.get("format_version") != VERSION:
        raise d.bad("format_version", f"{str(doc.get('format_version'))[:20]!r} is a run-format version this lab "
                    f"does not know (known: {VERSION})")
    run = d.obj(doc.get("run", {}), "run")
    name = d.text(run.get("name", "run"), "run.name")
    exps = []
    for i, e in enumerate(d.arr(doc.get("experiments"), "experiments")):
        at = f"experiments[{i}]"
        exp = d.text(d.obj(e, at).get("name"), f"{at}.name")
        if not NAME.fullmatch(exp):
            raise d.bad(f"{at}.name", f"{exp[:40]!r} is not an experiment name (letters, digits, '.', '_', '-')")
        charts = []
        for j, c in enumerate(d.arr(e.get("charts", []), f"{at}.charts")):
            kind, metric = (d.text(x, f"{at}.charts[{j}]") for x in d.arr(c, f"{at}.charts[{j}]")[:2])
            charts.append((kind, metric))
        pts = []
        for j, p in enumerate(d.arr(e.get("points"), f"{at}.points")):
            pat = f"{at}.points[{j}]"
            d.obj(p, pat)
            f = {k: d.text(p.get(k), f"{pat}.{k}") for k in ("variant", "placement", "cpus", "metric", "unit")}
            threads = d.whole(p.get("threads"), f"{pat}.threads")
            reps = []
            for k, r in enumerate(d.arr(p.get("repeats"), f"{pat}.repeats")):
                rat = f"{pat}.repeats[{k}]"
                d.obj(r, rat)
                reps.append(made(d, rat, Repeat, str(d.whole(r.get("repeat"), f"{rat}.repeat", 0, 10**6)),
                                 d.num(r.get("value"), f"{rat}.value", signed=True),
                                 d.text(r.get("suspect", ""), f"{rat}.suspect")))
            if reps:        # a point without repeats measured nothing: nothing of it is kept
                pts.append(made(d, pat, Point, f["variant"], f["placement"], str(threads), f["cpus"], f["metric"],
                                f["unit"], summary_of(reps), tuple(reps), noise=f["metric"] in NOISE_METRICS))
        exps.append(experiment(exp, charts, pts))
    return Run(path="", name=name, kind=KIND_IMPORTED, state="imported", command="", host=host(d, doc),
               journal="none", experiments=tuple(exps), not_measured={}, stories=())


def experiment(name, charts, pts):
    """An Experiment of a received export: its charts and points; the rest (the journal's, the published
    comparisons, the verdicts) is the report's to find again in the folder written from it."""
    return Experiment(name=name, spec=(), charts=tuple(charts), chart_files=(), missing_charts=(), skipped=(),
                      points=tuple(p for p in pts if not p.noise), table=(), mem_column=False, pair_rows=0,
                      noise=tuple(p for p in pts if p.noise), glance=None, suspect=(), suspect_points=(),
                      rate_bound=(), goals=(), remeasured=(), remeasured_raw=(), failed=(), unconfident=(), perf=(),
                      beside=(), shapes=(), ratios=(), numa=None)


def host(d, doc):
    """The machine as the file states it: its key=value settings (bounded, visible; the env/ files they came
    from), and the whole object kept as the file's words (Host.imported)."""
    mach = d.obj(doc.get("machine", {}), "machine")
    settings = {}
    for key in SETTINGS:
        kv = d.obj(mach.get(key, {}) or {}, f"machine.{key}")
        settings[key] = {k: CONTROL.sub(" ", str(v))[:1000] for k, v in kv.items() if KEY.fullmatch(k)}
    said = {k: mach.get(k) for k in ("summary", "kind", "cpu", "kernel") if isinstance(mach.get(k), str)}
    return Host(said.get("summary", ""), KIND_IMPORTED, tuple(said.items()), imported=mach, settings=settings)


def as_imported(run):
    """A received Run as the Imported (model.py) the run folder writer takes: every repeat a tidy row, in the
    Run's order (an experiment's results, then its noise readings: the export's own order)."""
    imp = Imported(FORMAT, str(VERSION), run.name)
    imp.host = run.name.rsplit("-", 1)[-1]        # the naming rule puts the host last
    for e in run.experiments:
        imp.charts[e.name] = list(e.charts)
        for p in e.points + e.noise:
            for r in p.repeats:
                imp.add(e.name, p.variant, p.threads, r.repeat, p.metric, r.value, p.unit, cpus=p.cpus,
                        placement=p.placement, suspect=r.suspect)
    for key, fname in SETTINGS.items():
        if run.host.settings[key]:
            imp.env_files[fname] = "".join(f"{k}={v}\n" for k, v in run.host.settings[key].items())
    imp.machine = dict(run.host.rows)
    imp.env_files["exported-machine.json"] = json.dumps(run.host.imported, indent=1, sort_keys=True) + "\n"
    return imp
