"""The lab's own export (`./lab export RUN format=json`, docs/run-format.md) read back: every point's
repeats with their suspect marks become the same tidy rows, so the statistics are the same; the
charts are the run's; the machine's key=value settings go back to their env/ files and the rest is
kept as the file's words (env/exported-machine.json). Code identity, verdicts and goals are not
re-imported: the report judges the imported points again."""
import json
import re

from lab.engine.spec import NAME
from lab.exports.document import FORMAT, SETTINGS, VERSION

from .jsonfile import Doc
from .model import Imported

KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def recognise(doc):
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def parse(doc, path, threads_name):
    d = Doc(path)
    if doc.get("format_version") != VERSION:
        raise d.bad("format_version", f"{str(doc.get('format_version'))[:20]!r} is a run-format version this lab "
                    f"does not know (known: {VERSION})")
    run = d.obj(doc.get("run", {}), "run")
    name = d.text(run.get("name", "run"), "run.name")
    imp = Imported(FORMAT, str(VERSION), name)
    imp.host = name.rsplit("-", 1)[-1]        # the naming rule puts the host last
    for i, e in enumerate(d.arr(doc.get("experiments"), "experiments")):
        at = f"experiments[{i}]"
        exp = d.text(d.obj(e, at).get("name"), f"{at}.name")
        if not NAME.fullmatch(exp):
            raise d.bad(f"{at}.name", f"{exp[:40]!r} is not an experiment name (letters, digits, '.', '_', '-')")
        charts = []
        for j, c in enumerate(d.arr(e.get("charts", []), f"{at}.charts")):
            kind, metric = (d.text(x, f"{at}.charts[{j}]") for x in d.arr(c, f"{at}.charts[{j}]")[:2])
            charts.append((kind, metric))
        imp.charts[exp] = charts
        for j, p in enumerate(d.arr(e.get("points"), f"{at}.points")):
            pat = f"{at}.points[{j}]"
            d.obj(p, pat)
            f = {k: d.text(p.get(k), f"{pat}.{k}") for k in ("variant", "placement", "cpus", "metric", "unit")}
            threads = d.whole(p.get("threads"), f"{pat}.threads")
            for k, r in enumerate(d.arr(p.get("repeats"), f"{pat}.repeats")):
                rat = f"{pat}.repeats[{k}]"
                d.obj(r, rat)
                imp.add(exp, f["variant"], threads, d.whole(r.get("repeat"), f"{rat}.repeat", 0, 10**6), f["metric"],
                        d.num(r.get("value"), f"{rat}.value", signed=True), f["unit"], cpus=f["cpus"],
                        placement=f["placement"],
                        suspect=d.text(r.get("suspect", ""), f"{rat}.suspect"))
    mach = d.obj(doc.get("machine", {}), "machine")
    for key, fname in SETTINGS.items():
        kv = d.obj(mach.get(key, {}) or {}, f"machine.{key}")
        lines = [f"{k}={CONTROL.sub(' ', str(v))[:1000]}" for k, v in kv.items() if KEY.fullmatch(k)]
        if lines:
            imp.env_files[fname] = "\n".join(lines) + "\n"
    imp.machine = {k: mach.get(k) for k in ("summary", "kind", "cpu", "kernel") if isinstance(mach.get(k), str)}
    imp.env_files["exported-machine.json"] = json.dumps(mach, indent=1, sort_keys=True) + "\n"
    return imp
