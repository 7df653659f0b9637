#!/usr/bin/env python3
"""How any command scales on this host: an ordinary sweep of an `exec` spec written for it.

  scale.py [KEY=VALUE…] -- CMD [ARG…]

CMD and its arguments are words, never shell text: they reach execve as they are, after taskset /
numactl. Inside a word, {threads}, {cpus} (the placement's CPU list, e.g. 0,2) and {ncpus} are
replaced by the point's values (docs/instruments.md lists every placeholder); any other {name} is an
error. A relative path in CMD starts at the project folder (./lab runs there).

Keys (before --):
  metric=NAME:REGEX[:UNIT[:higher|lower]]   repeatable: a number from the command's stdout
  save=experiments/NAME.spec               write the spec too: `./lab sweep experiments/NAME.spec` reruns it
  threads="1 2 4"  placements="compact unpinned"  repeats=auto|N  membind=local  timeout=600  ci=5 …
                                           any spec key the command line may set (docs/instruments.md)
  perf=stat                                count cycles, instructions, cache and LLC misses, context
                                           switches, migrations (rows perf_*) where the PMU allows; the
                                           report names those this host cannot count
  why=1  why_runs=2                        once the timed repeats are done, evidence runs under perf
                                           record at each curve's fewest threads and knee (why_points=all:
                                           every point): on-CPU, off-CPU per reason, futex waits per
                                           address, scheduling (raw/<exp>/<point>_why/; docs/design.md)
  budget=20m                               fit the plan to a duration (scripts/lab/cli/sweep.py); with
                                           plan=adaptive the thread counts are chosen per curve
  dry=1  topology=…  run=DIR  profile=…  kind=…  the sweep's own keys (scripts/lab/cli/sweep.py)
Defaults: threads 1, 2, 4, … and the PU count; placements compact scatter unpinned (and cores where the
host has SMT); repeats=auto. Every repeat records wall_s, cpu_user_s, cpu_sys_s and max_rss_kib.
The run folder, report and verdicts are the sweep's: the same command again resumes an interrupted run.
Exit: 0 complete, 1 points failed, 2 bad input (nothing run, no run folder), 130 interrupted.
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import sys
import tempfile

from lab import ROOT
from lab.core.term import visible
from lab.engine import api
from lab.engine import execmetric as av
from lab.engine.spec import ENGINE_KEYS, KEYS, PLACEHOLDERS, Spec, SpecError, check, one_line
from lab.errors import LabError, program, run
from lab.report import front
from lab.topology.topo import PlacementError, Topology

OWN = ("metric", "save")
MAX_THREAD_COUNTS, MAX_THREADS, MAX_METRICS = 64, 4096, 32


def split(argv):
    """(key=value pairs before --, the command's words after it)."""
    if "--" not in argv:
        raise LabError("no command: write `./lab scale [KEY=VALUE…] -- CMD [ARG…]`")
    i = argv.index("--")
    head, words = argv[:i], argv[i + 1:]
    if not words:
        raise LabError("nothing after --: give the command to measure, "
                       "e.g. `./lab scale -- xz -T{threads} -k -c FILE`")
    pairs = []
    for a in head:
        k, sep, v = a.partition("=")
        if not sep:
            raise LabError(f"unknown argument {a!r} before -- (expected KEY=VALUE)")
        pairs.append((k, v))
    return pairs, words


def default_placements(topo):
    smt = topo.shape()["smt_per_core"] > 1
    return "compact scatter unpinned" + (" cores" if smt else "")


def spec_body(words, metrics, keys):
    lines = [f"exec = {json.dumps(words)}"]
    lines += [f"metric = {m.spec_value()}" for m in metrics]
    lines += [f"{k} = {v}" for k, v in keys.items()]
    primary = metrics[0].name if metrics else "wall_s"
    lines += [f"chart = speedup {primary}", f"chart = scaling {primary}"]
    if primary != "wall_s":
        lines.append("chart = scaling wall_s")
    return "\n".join(lines) + "\n"


@program("scale: error")
def main(argv):
    pairs, words = split(argv)
    if len(words) > av.MAX_WORDS or any(len(w) > av.MAX_WORD for w in words):
        raise LabError(f"the command has more than {av.MAX_WORDS} words or a word over {av.MAX_WORD} characters")
    engine, spec_keys, metrics, save = [], {}, [], None
    for k, v in pairs:
        try:
            one_line(k, v, "command line")      # before anything is written: every value is one line
            if k in KEYS and KEYS[k][2]:
                check(k, v, "command line")
        except SpecError as e:
            raise LabError(str(e))
        if k == "metric":
            try:
                metrics.append(av.parse_metric(v))
            except ValueError as e:
                raise LabError(f"metric={v!r}: {e}")
        elif k == "save":
            save = v
        elif k in ENGINE_KEYS:
            engine.append(f"{k}={v}")
        elif k in KEYS and KEYS[k][2]:
            spec_keys[k] = v
        elif k in KEYS:
            raise LabError(f"{k} cannot be set here: the command comes after --, and {k} only from a spec file")
        else:
            raise LabError(f"unknown key {k!r}; scale keys: {' '.join(OWN)}; sweep keys: {' '.join(ENGINE_KEYS)}; "
                           f"spec keys: {' '.join(k for k, v in KEYS.items() if v[2])}")
    if len({m.name for m in metrics}) != len(metrics):
        raise LabError("two metric= share a name")
    if len(metrics) > MAX_METRICS:
        raise LabError(f"at most {MAX_METRICS} metric= (each is one regex over the command's output)")
    try:
        av.parse_exec(json.dumps(words), PLACEHOLDERS)
    except ValueError as e:
        raise LabError(f"command: {e}")
    dry = "dry=1" in engine
    if not dry:
        try:
            av.program(words[0], ROOT)
        except ValueError as e:
            raise LabError(f"command: {e}")
    topology = next((a.split("=", 1)[1] for a in engine if a.startswith("topology=")), None)
    try:
        topo = Topology(topology or None)
    except PlacementError as e:
        raise LabError(f"topology: {e}")
    spec_keys.setdefault("placements", default_placements(topo))
    spec_keys.setdefault("threads", "auto")
    spec_keys.setdefault("repeats", "auto")
    counts = spec_keys["threads"].split()
    if spec_keys["threads"] != "auto" and (len(counts) > MAX_THREAD_COUNTS or
                                          any(c.isdigit() and int(c) > MAX_THREADS for c in counts)):
        raise LabError(f"threads: at most {MAX_THREAD_COUNTS} counts of at most {MAX_THREADS}")
    body = spec_body(words, metrics, spec_keys)
    if save:
        if not re.fullmatch(r"[A-Za-z0-9._/-]+\.spec", save) or ".." in save.split("/"):
            raise LabError(f"save={save!r}: a file NAME.spec, from the project's root (experiments/NAME.spec) or "
                           "absolute, without '..'")
        if os.path.isdir(os.path.join(ROOT, save)):
            raise LabError(f"save={save}: a folder of that name exists: name a file")
        name = os.path.basename(save)[:-5]
    else:
        prog = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(words[0]))[:40] or "cmd"
        name = f"{prog}-{hashlib.sha256(body.encode()).hexdigest()[:8]}"
    text = (f"# written by ./lab scale; rerun it with ./lab sweep {save or 'THIS.spec'}\n"
            f"experiment = {name}\n" + body)
    tmp = tempfile.mkdtemp(prefix="lab-scale-")
    try:
        path = os.path.join(tmp, f"{name}.spec")
        with open(path, "w") as f:
            f.write(text)
        try:
            Spec(path)
        except SpecError as e:
            raise LabError(re.sub(re.escape(path) + r"(:\d+)?", "command line", str(e)))
        if not any(av.WORD_PLACEHOLDER.search(w) for w in words):
            print("scale: note: the command uses no {threads}, {cpus} or {ncpus}: every point runs the same "
                  "command, only its CPUs differ (a program that counts its CPUs, such as `nproc`, sees the "
                  "placement's)", file=sys.stderr)
        if save and dry:
            print(f"scale: dry=1: {save} not written", file=sys.stderr)
        if save and not dry:
            dest = os.path.join(ROOT, save)       # an absolute save stays itself
            if os.path.exists(dest) and open(dest).read() != text:
                raise LabError(f"{save} exists with other content: remove it or choose another name")
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            with open(dest, "w") as f:
                f.write(text)
            print(f"scale: wrote {save}: `./lab sweep {save}` measures the same again", file=sys.stderr)
            path = dest
        try:
            req = api.request(engine + [path])
            if req.dry:
                api.dry_run(req, sys.stdout)
                return 0
            outcome, run = front.after_sweep(api.run(req, shown="./lab scale " + shlex.join(argv)))
        except api.EngineError as e:
            print(f"error: {visible(str(e))}", file=sys.stderr)
            return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for line in outcome.lines():
        print(line, file=sys.stderr)
    if run is None and not outcome.error:      # draw=0: no report, the words all the same (one read)
        try:
            run = front.read(outcome.run)
        except front.Unreadable as err:
            print(f"scale: no words: {visible(err)}", file=sys.stderr)
    e = run and run.experiment(name)
    e = e if e and e.scaling else None
    for line in ((front.scaling_words(e, run.folder.report_md) + front.why_words(e, run.folder.report_html))
                 if e else ()):
        print(visible(line))
    return outcome.code


if __name__ == "__main__":
    run(main)
