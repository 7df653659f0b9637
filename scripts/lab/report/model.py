"""One model of a run's numbers, shared by report.md and report.html (and compare): the host, each
experiment's points (median, min–max, n, 95% CI, suspect repeats with reasons, raw folder and exact
command of every repeat), the published comparisons with their verdicts, and one line per seed story.

Renderers format this model; they compute no number of their own."""
import csv
import dataclasses
import json
import math
import os

from lab.core import c2c_published
from lab.core import rules as V
from lab.core.rules import merged
from lab.core.run import DataError, Experiment, Host, Point, Repeat, Run, Story, summary_of
from lab.core.runfolder import (
    KIND_IMPORTED,
    KIND_PUBLISHED,
    KIND_SWEEP,
    ROOT,
    RunFolder,
    RunFolderError,
    kind_of,
    read_file,
)
from lab.core.tidy import COLUMNS, read
from lab.engine import plan
from lab.engine.guard import NOISE_METRICS  # (the guard's rows and instruments' corun_pct)
from lab.engine.memplace import memory_nodes
from lab.engine.perfsummary import METRICS as PERF_METRICS
from lab.engine.spec import NAME, chart_line_ok, spec_charts
from lab.report import causes, claims, client, goals, numa, relations, scaling
from lab.report.journal import Journal

# Published names that differ from ours for the same quantity.
METRIC_ALIASES = {"one_way_latency": "one_way_ns"}
POINT = ("variant", "placement", "threads", "cpus", "metric", "unit")
# env/ files of key=value lines that say what moves results (scripts/env.sh writes them): the Host's settings
SETTINGS = {"topology": "topology.txt", "virt": "virt.txt", "cpu_state": "cpu-state.txt",
            "memory_time": "memory-time.txt"}


def kv(path):
    out = {}
    for line in (read_file(path, "env") or "").splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip()
    return out


def first_line(path, prefix=""):
    text = read_file(path, "env")
    if text is None:
        return "unavailable: not captured"
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return "unavailable"


def tint(t):
    return int(t) if str(t).isdigit() else 0


def read_rows(path):
    """tidy.read with a clear error naming file:line instead of a traceback on a corrupt file. The rows'
    cells are checked where they become a model (core/run.py: Repeat, Point), with the line added there."""
    try:
        rows = read(path)
    except (OSError, csv.Error, UnicodeDecodeError, RunFolderError) as e:
        raise DataError(f"{path}: cannot read: {e}") from None
    if rows and ("metric" not in rows[0] or "value" not in rows[0]):
        raise DataError(f"{path}:1: header lacks metric/value (expected {','.join(COLUMNS)})")
    for n, r in enumerate(rows, start=2):
        if None in r or any(r.get(k) is None for k in ("metric", "value", "unit")):
            raise DataError(f"{path}:{n}: wrong number of columns")
        r["_line"] = n
    return rows


# --- host -----------------------------------------------------------------------------------------
def host(run, rec=None):
    """The run's Host; rec: the run's import record (runfolder.import_record(), None for a sweep)."""
    env = RunFolder(run).env_dir
    settings = {key: kv(f"{env}/{name}") for key, name in SETTINGS.items()}
    topo, virt, cpu = settings["topology"], settings["virt"], settings["cpu_state"]
    model = first_line(f"{env}/cpuinfo.txt", "model name").lstrip(": \t") or "unknown CPU"
    kind = virt.get("kind", "unknown")
    kind_text = {"vm": f"VM ({virt.get('vm', '?')})", "bare-metal": "bare metal"}.get(kind, kind)
    if virt.get("container", "none") not in ("none", "?", ""):
        kind_text += f", container ({virt['container']})"
    nix = first_line(f"{env}/nix.txt")
    path = "Debian path (versions.env)" if nix.startswith("unavailable") else "Nix shell"
    kernel = first_line(f"{env}/uname.txt").split()
    kernel = kernel[2] if len(kernel) > 2 else "unknown kernel"
    commit = first_line(f"{env}/git.txt")[:12]
    shape = (f"{topo.get('packages', '?')} pkg · {topo.get('numa_nodes', '?')} NUMA · "
             f"{topo.get('l3_domains', '?')} L3 · {topo.get('cores', '?')} cores · {topo.get('pus', '?')} PUs")
    build = f"{env}/build.txt"
    mt = settings["memory_time"]
    kind_of_run = kind_of(rec)
    if kind_of_run == KIND_IMPORTED:   # another tool's result file (scripts/lab/imports/): what the file says
        src = f"{rec.get('source', '?')}, sha256 {str(rec.get('sha256', '?'))[:16]}…"
        said = rec.get("machine") if isinstance(rec.get("machine"), dict) else {}
        return Host(f"{rec.get('cpu', '?')} · {shape} · imported from {src} (not measured here)", KIND_IMPORTED,
                    (("host kind", f"imported ({src}; the machine as the file states it)"),
                     ("CPU", str(rec.get("cpu", "?"))), ("topology", f"{rec.get('topology') or 'not given'}: {shape}"))
                    + tuple((f"file: {k}", str(v)) for k, v in list(said.items())[:32]),
                    imported=rec, settings=settings)
    if kind_of_run == KIND_PUBLISHED:     # a published matrix: the CPU and the source are what the import recorded
        src = f"published matrix from {rec.get('source', '?')}, file {rec.get('file', '?')}"
        return Host(f"{rec.get('cpu', '?')} · {shape} · {src} (imported, not measured here)", KIND_PUBLISHED,
                    (("host kind", f"published (imported by import-c2c; {src})"),
                     ("CPU", rec.get("cpu", "?")),
                     ("CPU identity", " ".join(f"{k}={rec[k]}" for k in ("vendor_id", "cpu_family", "model", "uarch")
                                               if rec.get(k)) or "not catalogued"),
                     ("topology", f"{rec.get('topology', '?')}: {shape}"),
                     ("matrix", f"{rec.get('cpus', '?')} CPUs, {rec.get('pairs', '?')} pairs, sha256 "
                                f"{str(rec.get('sha256', '?'))[:16]}…")), imported=rec, settings=settings)
    return Host(
        f"{model} · {shape} · {kind_text} · Linux {kernel} · commit {commit} · {path}",
        kind,
        (
            ("host kind", f"{kind} (vm: {virt.get('vm', '?')}, container: {virt.get('container', '?')})"),
            ("CPU", model),
            ("topology", f"{topo.get('packages', '?')} package(s), {topo.get('numa_nodes', '?')} NUMA node(s) "
                         f"({topo.get('numa_per_package', '?')} per package: the SNC/NPS shape), "
                         f"{topo.get('cpu_kinds', '?')} CPU kind(s), "
                         f"{topo.get('dies', '?')} dies, {topo.get('l3_domains', '?')} L3, "
                         f"{topo.get('cores', '?')} cores, {topo.get('pus', '?')} PUs, "
                         f"SMT {topo.get('smt_per_core', '?')}/core"),
            ("kernel", first_line(f"{env}/uname.txt")),
            ("governor / boost / SMT", f"{cpu.get('governor', '?')} / {cpu.get('boost', cpu.get('no_turbo', '?'))}"
                                       f" / {cpu.get('smt', '?')}"),
            ("commit", first_line(f"{env}/git.txt")),
            ("path", path),
            ("memory and time", memory_time_row(mt)),
        ) + ((("Cassandra cluster", cluster_row(f"{env}/cassandra-cluster.txt")),)
             if os.path.exists(f"{env}/cassandra-cluster.txt")
             and not first_line(f"{env}/cassandra-cluster.txt").startswith("unavailable") else ())
        + ((("load generators", network_row(f"{env}/network.txt")),) if os.path.exists(f"{env}/network.txt") else ()),
        warnings=tuple(memory_time_warnings(mt)),
        build=(read_file(build, "env") or "").strip() or None,
        settings=settings,
    )


def cluster_row(path):
    """env/cassandra-cluster.txt (cassandra/cluster.sh's record, or fleet.py cluster-up's) in one line: how
    many nodes, where, and how each is bound. A received run's file: its values are shown, never run."""
    where, nodes = "?", []
    lines = [line[:1000] for line in read_file(path, "env").splitlines()[:200]]     # bounded: a received run's file
    for line in lines:
        if line.startswith("where="):
            where = line[6:].strip()
        elif line.startswith("node="):
            f = dict(w.split("=", 1) for w in line.split() if "=" in w)
            nodes.append(f"{f.get('cql', '?')} (NUMA {f.get('numa', '?')}{', ' + f['host'] if 'host' in f else ''})")
    return f"{len(nodes)} node(s), {where}: {', '.join(nodes[:64])}{', …' if len(nodes) > 64 else ''}"


def network_row(path):
    """env/network.txt (scripts/lab/cli/loadclients.py: the cache point's client hosts) in one line: the network
    path between the server and its load generators, and each client's. A received run's file: shown,
    never run; bounded."""
    path_text, clients = "?", []
    lines = [line[:1000] for line in read_file(path, "env").splitlines()[:64]]
    for line in lines:
        if line.startswith("path="):
            path_text = line[5:].strip()
        elif line.startswith("client="):
            name, _, rest = line[7:].partition(" ")
            detail = rest.partition("detail=")[2].strip()
            clients.append(f"{name}: {detail}" if detail else name)
    return f"network path: {path_text} ({len(clients)} client host(s): {'; '.join(clients[:16])})"


def halt_poll(mt):
    """", guest poll N ns" where a KVM guest's haltpoll driver recorded it (env.sh), else nothing (a
    received run's cell that is not a plain number is not shown)"""
    v = mt.get("guest_halt_poll_ns", "")
    return f", guest poll {v} ns" if v.isascii() and v.isdigit() and len(v) <= 12 else ""


def memory_time_row(mt):
    """env/memory-time.txt in one line (scripts/env.sh: what moves memory or time behind the lab's back)."""
    if not mt:
        return "not recorded (env/memory-time.txt)"
    return (f"NUMA balancing {mt.get('numa_balancing', '?')} · THP {mt.get('thp_enabled', '?')}, defrag "
            f"{mt.get('thp_defrag', '?')} · clocksource {mt.get('clocksource', '?')} · cpuidle "
            f"{mt.get('cpuidle_driver', '?')}: {mt.get('cpuidle_states', '?')}{halt_poll(mt)} · irqbalance "
            f"{mt.get('irqbalance', '?')} · IRQs {mt.get('irq_affinity', '?')} · autogroup "
            f"{mt.get('sched_autogroup', '?')} · NUMA nodes per package "
            f"{mt.get('numa_per_package', '?')}")


def memory_time_warnings(mt):
    """What the report's header must say before any number: NUMA balancing on moves pages during a run."""
    v = mt.get("numa_balancing", "")
    if v.isdigit() and v != "0":
        return [f"NUMA balancing is on (kernel.numa_balancing={v}): the kernel migrates pages while the lab "
                "measures, so memory may not stay on the node a point asked for; `sysctl kernel.numa_balancing=0` "
                "before measuring"]
    return []


# --- points ---------------------------------------------------------------------------------------
def points(run, exp, rows, journal, path):
    """[point] with repeats, summary, suspect reasons, raw links and commands; rows: read_rows(path)'s.
    A row the lab will not use (core/run.py's rule) is DataError naming `path:line`."""
    done = journal.last_done(exp)
    flagged = journal.by_point("suspect", exp)
    grouped = {}
    for r in rows:
        grouped.setdefault(tuple(r[k] for k in POINT), []).append(r)
    seen = {}     # a repeat's raw folder holds every metric's rows (a matrix: thousands): look at it once
    rf = RunFolder(run)

    def raw_of(raw):
        """(raw if it is a folder else None, its memory nodes)"""
        if raw not in seen:
            seen[raw] = (raw, memory_nodes(os.path.join(run, raw))) if os.path.isdir(os.path.join(run, raw)) \
                else (None, [])
        return seen[raw]

    out = []
    for key, rs in grouped.items():
        variant, placement, threads, cpus, metric, unit = key
        reps = []
        # a raw folder is named by the point's stem, which needs whole threads: without them the Point
        # below refuses the rows
        stem = plan.stem(variant, placement, threads) if threads.isascii() and threads.isdigit() else None
        for r in sorted(rs, key=lambda r: tint(r["repeat"])) if len(rs) > 1 else rs:
            jk = (variant, placement, threads, r["repeat"])
            ev = done.get(jk, {})
            raw_key = ev.get("key") or (f"{stem}_r{r['repeat']}" if stem else None)
            raw, nodes = raw_of(rf.raw_rel(exp, raw_key)) if raw_key else (None, [])
            reasons = [r["suspect"]] if r["suspect"] else []
            reasons += [e.get("reason", "") for e in flagged.get(jk, []) if e.get("reason") not in reasons]
            try:
                reps.append(Repeat(r["repeat"], r["value"], "; ".join(x for x in reasons if x), raw, tuple(nodes),
                                   ev.get("command"), ev.get("seconds")))
            except DataError as e:
                raise DataError(f"{path}:{r['_line']}: {e}") from None
        # where the instrument said the measured memory was (ran-on.csv), over the repeats; "" if it did not say
        mem = sorted({n for x in reps for n in x.mem_nodes})
        try:
            out.append(Point(variant, placement, threads, cpus, metric, unit, summary_of(reps), tuple(reps),
                             noise=metric in NOISE_METRICS, mem_node=",".join(map(str, mem))))
        except DataError as e:
            raise DataError(f"{path}:{rs[0]['_line']}: {e}") from None
    out += shared_points(out, journal.shared(exp))
    out.sort(key=lambda p: (p.metric, p.variant, p.placement, tint(p.threads), p.cpus))
    return out


def shared_points(pts, shared):
    """The points measured once for several placements (plan.shared), drawn and judged in each placement's
    curve, marked `shared` with the placement they were measured as; only where that point was measured."""
    by_point = {}
    for p in pts:       # by point, once: a received journal may name thousands of shared points
        by_point.setdefault((p.variant, p.placement, p.threads), []).append(p)
    return [dataclasses.replace(p, placement=placement, shared=owner)
            for (variant, placement, threads), owner in shared.items()
            if (variant, placement, threads) not in by_point       # measured itself: its own rows win
            for p in by_point.get((variant, owner, threads), ())]


def headline(pts, metrics):
    """Charted metrics at a glance: (metric, unit, placement, threads) rows, one cell per variant."""
    pts = [p for p in pts if p.metric in metrics]
    variants = sorted({p.variant for p in pts})
    cells = {}
    for p in pts:
        cells.setdefault((p.metric, p.unit, p.placement, p.threads), {}).setdefault(
            p.variant, []).append(p)
    rows = []
    for k in sorted(cells, key=lambda k: (metrics.index(k[0]), k[2], tint(k[3]))):
        rows.append({"metric": k[0], "unit": k[1], "placement": k[2], "threads": k[3],
                     "cells": [merged(cells[k][v]) if v in cells[k] else None for v in variants]})
    return {"variants": variants, "rows": rows}


# --- published figures ----------------------------------------------------------------------------
def published():
    with open(os.path.join(ROOT, "reference", "published.csv"), newline="") as f:
        return list(csv.DictReader(f))


def variant_map():
    path = os.path.join(ROOT, "reference", "variants.csv")
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {(r["source"], r["experiment"], r["variant"], r["metric"]): r for r in csv.DictReader(f)}


def stories():
    path = os.path.join(ROOT, "reference", "stories.csv")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def matching(pts, metric, variant, threads=None):
    """{label: [points]} whose variant or placement is the published variant (label: the other one)."""
    found = {}
    for p in pts:
        if p.metric == metric and variant in (p.variant, p.placement) and \
                (threads is None or str(p.threads) == str(threads)):
            found.setdefault(p.variant if variant == p.placement else p.placement, []).append(p)
    return found


def beside(exp, pts, pub):
    """Published figure beside the measured median at the same variant and thread count."""
    rows = []
    for r in (r for r in pub if r["experiment"] == exp):
        metric = METRIC_ALIASES.get(r["metric"], r["metric"])
        for label, ps in sorted(matching(pts, metric, r["variant"], r["threads"]).items()):
            s = merged(ps)
            rows.append({"pub": r, "label": label, "s": s, "unit": ps[0].unit,
                         "ratio": s.median / float(r["value"])})
    return rows


def shapes(exp, pts, pub):
    """Each published series' growth over the thread range measured here, with a verdict."""
    series = {}
    for r in pub:
        if r["experiment"] == exp and r["threads"].isdigit():
            key = (r["source"], r["host"], r["variant"], r["metric"])
            series.setdefault(key, {})[int(r["threads"])] = float(r["value"])
    out = []
    for (src, host_, variant, metric), pubpts in sorted(series.items()):
        mine = {}
        for p in pts:
            if p.metric == METRIC_ALIASES.get(metric, metric) and variant in (p.variant, p.placement) \
                    and str(p.threads).isdigit():
                mine.setdefault(int(p.threads), []).append(p)
        common = sorted(set(pubpts) & set(mine))
        if len(common) < 2:
            continue
        lo, hi = common[0], common[-1]
        pf = pubpts[hi] / pubpts[lo]
        pw = V.growth_word(pf, hi / lo)
        slo, shi = merged(mine[lo]), merged(mine[hi])
        mw, verdict, why = V.shape_verdict(pw, slo, shi, hi / lo, (f"{lo} threads", f"{hi} threads"))
        out.append({"source": src, "host": host_, "variant": variant, "lo": lo, "hi": hi,
                    "pub_factor": pf, "pub_word": pw, "factor": shi.median / slo.median,
                    "word": mw, "verdict": verdict, "why": why})
    return out


def series_points(pts, lab):
    out = {}
    for p in pts:
        if (p.variant, p.placement, p.metric) == (lab["lab_variant"], lab["lab_placement"], lab["lab_metric"]) \
                and str(p.threads).isdigit():
            out.setdefault(int(p.threads), []).append(p)
    return out


def ratios(exp, pts, pub, vmap):
    """Published ratio of each variant to its series' first one, beside the same ratio measured here."""
    series = {}
    for r in pub:
        lab = vmap.get((r["source"], r["experiment"], r["variant"], r["metric"]))
        if lab and lab["lab_experiment"] == exp:
            series.setdefault((r["source"], r["host"], r["metric"], r["threads"]), []).append((r, lab))
    out = []
    for (src, host_, metric, threads), members in series.items():
        if len(members) < 2:
            continue
        (base, base_lab), rest = members[0], members[1:]
        mine = series_points(pts, base_lab)
        t = int(threads) if threads.isdigit() and int(threads) in mine else max(mine, default=None)
        for r, lab in rest:
            pub_ratio = float(r["value"]) / float(base["value"])
            row = {"source": src, "host": host_, "metric": metric, "name": f"{r['variant']} ÷ {base['variant']}",
                   "threads": threads, "here": t, "pub_ratio": pub_ratio, "pub_word": V.direction(pub_ratio),
                   "ratio": None, "word": None, "verdict": "–", "why": ""}
            other = series_points(pts, lab).get(t)
            if t is None or not other:
                missing = base_lab if t is None else lab
                row["why"] = f"not measured here ({missing['lab_variant']} {missing['lab_placement']})"
            else:
                row["ratio"], row["word"], row["verdict"], row["why"] = V.ratio_verdict(
                    row["pub_word"], merged(other), merged(mine[t]),
                    (f"{lab['lab_variant']} {lab['lab_placement']}",
                     f"{base_lab['lab_variant']} {base_lab['lab_placement']}"))
            out.append(row)
    return out


# --- an experiment and a run ----------------------------------------------------------------------
def missing_charts(charts, pts):
    measured = {p.metric for p in pts}
    out = []
    for kind, metric in charts:
        if metric not in measured:
            why = "it comes from perf: sweep with perf=1" if metric in PERF_METRICS else "no rows for it"
            out.append(f"chart {kind} {metric} not drawn: {why}.")
    return out


def event_line(e):
    return (f"{e.get('variant') or '–'} {e.get('placement', '?')} t{e.get('threads', '?')} "
            f"r{e.get('repeat', '?')}" + (f" attempt {e['attempt']}" if "attempt" in e else "")
            + f": {e.get('reason', 'no reason given')}")


def suspect_points(pts):
    """((first point, (metrics, …)), …) per (variant, placement, threads, cpus) with suspect repeats."""
    out = {}
    for p in pts:
        if p.summary.suspect:
            k = (p.variant, p.placement, p.threads, p.cpus, p.summary.suspect)
            out.setdefault(k, (p, []))[1].append(p.metric)
    return tuple((p, tuple(ms)) for p, ms in out.values())


def tried(run, exp, e):
    raw = RunFolder(run).raw_rel(exp, f"{e.get('key')}.try{e.get('attempt')}")
    return raw if e.get("key") and os.path.isdir(os.path.join(run, raw)) else None


def chart_lines(rf, exp, rec):
    """[(kind, metric)] an experiment draws, for every kind of run folder (rec: its import record, None
    for a sweep): a sweep's are its spec snapshot's `chart` lines; an import's the chart lines its importer
    recorded (a matrix imported before imports recorded them: its heatmap), held to the spec's own rule for
    a chart line (lab/engine/spec.py chart_line_ok), since they name files."""
    if kind_of(rec) == KIND_SWEEP:
        spec = rf.spec_path(exp)
        return spec_charts(spec)[1] if os.path.exists(spec) else []
    lines = rec.get("charts", [[c2c_published.EXPERIMENT, "heatmap", c2c_published.METRIC]])
    return [tuple(c[1:]) for c in lines[:64] if isinstance(c, list) and len(c) == 3 and c[0] == exp
            and NAME.fullmatch(exp) and chart_line_ok(c[1:])]


def measured(run, exp, journal, rec):
    """(chart lines, every point) of an experiment: what its charts (charts.py) and its report start from."""
    rf = RunFolder(run)
    charts = chart_lines(rf, exp, rec)
    path = rf.data_csv(exp)
    return charts, points(run, exp, read_rows(path), journal, path)


def chart_files(rf, exp, charts):
    """((kind, metric, path of the chart without its extension, relative to the run), …) of the charts drawn."""
    return tuple((k, m, os.path.relpath(rf.chart(exp, k, m), rf.path)) for k, m in charts
                 if os.path.exists(rf.chart(exp, k, m, "png")))


def experiment(run, exp, journal, pub, vmap, rec):
    rf = RunFolder(run)
    spec = rf.spec_path(exp)
    charts, all_pts = measured(run, exp, journal, rec)
    pts = [p for p in all_pts if not p.noise]
    heat = {m for k, m in charts if k == "heatmap"}
    glance = headline(pts, [m for k, m in dict.fromkeys(charts) if k != "heatmap"])
    # A full pair matrix goes to the heatmap and the CSV, not into the table.
    pair_rows = [p for p in pts if p.metric in heat and len(pts) > 60 and p.cpus.count(",") == 1]
    # by identity: `p not in pair_rows` compares dicts, quadratic (100 s for a 192-CPU matrix)
    pair_ids = {id(p) for p in pair_rows}
    bounds = client.bound(pts)
    e = Experiment(
        name=exp,
        spec=tuple(ln.rstrip() for ln in (read_file(spec) or "").splitlines() if ln.strip()),
        charts=tuple(charts),
        chart_files=chart_files(rf, exp, charts),
        missing_charts=tuple(missing_charts(charts, pts)),
        skipped=tuple(journal.skipped(exp)),
        points=tuple(pts),
        table=tuple(p for p in pts if id(p) not in pair_ids),
        # a "memory node" column in the points' tables, when an instrument of this experiment recorded one
        mem_column=any(p.mem_node for p in pts),
        pair_rows=len(pair_rows),
        noise=tuple(p for p in all_pts if p.noise),
        glance=glance if glance["variants"] else None,
        suspect=tuple(p for p in pts if p.summary.suspect),
        # the same repeats are suspect for every metric of a point: listed once per point
        suspect_points=suspect_points(pts),
        rate_bound=tuple(bounds),
        goals=tuple(goals.of_experiment(spec, pts, client.capacity_doubts(bounds))),
        remeasured=tuple(event_line(e) for e in journal.of("remeasured", exp)),
        # the discarded attempt's raw folder (the engine keeps it as raw/<exp>/<key>.tryN/)
        remeasured_raw=tuple(tried(run, exp, e) for e in journal.of("remeasured", exp)),
        failed=tuple(event_line(dict(e, reason=f"exit {e.get('rc', '?')}: {e.get('reason', '')}"))
                     for e in journal.of("failed", exp)),
        unconfident=tuple(e for e in journal.of("confidence", exp) if e.get("confident") is False),
        perf=tuple(perf_tops(rf, exp)),
        beside=tuple(beside(exp, pts, pub)),
        shapes=tuple(shapes(exp, pts, pub)),
        ratios=tuple(ratios(exp, pts, pub, vmap)),
        numa=numa.notes(run, pts),     # a node x node memory matrix: distances and verdict, else None
    )
    # c2c, c2c-matrix: per relation, beside published
    return dataclasses.replace(e, relations=relations.of_experiment(run, e, rec))


def perf_tops(rf, exp):
    """[{"point", "path", "text"}]: the perf summaries of each point's first repeat, each read through the
    safe reader (a regular file inside the run, no link on the way, at most LIMITS["perf"]): a link there
    pasted the file it named into report.md, a sparse one filled memory. A refusal is RunFolderError."""
    d = os.path.join(rf.raw_dir, exp)
    keys = sorted(k for k in (os.listdir(d) if os.path.isdir(d) else []) if k.endswith("_r1"))
    out = []
    for k in keys:
        path = os.path.join(d, k, "perf-top.txt")
        text = read_file(path, "perf", rf.path)
        if text is not None:
            out.append({"point": k, "path": path, "text": text})
    return out


def story_rows(exps, pub, run=None):
    """One row per seed story with an experiment in this run: its claim, the published figure of that
    claim, what was measured, and the verdict on the claim (lab/report/claims.py). The per-point checks
    (published figures, shapes, ratios) are kept as the row's details; they do not decide it."""
    present = {e.name: e for e in exps}
    out = []
    for st in stories():
        names = [x for x in st["experiments"].split() if x in present]
        if not names:
            continue
        checks = []
        for name in names:
            e = present[name]
            for r in e.shapes:
                if r["source"] == st["source"]:
                    checks.append((f"{r['variant']} {r['lo']}→{r['hi']} threads: ×{r['factor']:.2f} ({r['word']})",
                                   r["verdict"], r["why"]))
            for r in e.ratios:
                if r["source"] == st["source"] and r["ratio"] is not None:
                    checks.append((f"{r['name']}: ×{r['ratio']:.2f} ({r['word']})", r["verdict"], r["why"]))
        c = claims.judge(st["source"], present, pub, merged, run) or \
            claims.Judged(claims.CLAIMS.get(st["source"], st["effect"]),
                          claims.Claim("not measurable here", why=f"none of {', '.join(names)} measures it"),
                          claims.Cause(claims.NO_EVIDENCE))
        j = c.judged
        out.append(Story(st["source"], st["title"], st["effect"], tuple(names), tuple(checks), c.claim,
                         j.published, j.measured, j.verdict, j.why, c.cause.word, c.cause.why))
    return out


def with_baseline(h, journal):
    """The host's rows plus the capacity probe's baseline of the sweep (lab/engine/capacity.py), when the
    journal has one: numbers only, so a received run's journal cannot put text into the report."""
    cells = {}
    for e in journal.of("capacity_baseline"):
        ns = e.get("ns") if isinstance(e.get("ns"), dict) else {}
        for d in ns.values():
            for kind in ("core", "memory"):
                v = d.get(kind) if isinstance(d, dict) else None
                if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                    cells.setdefault(kind, []).append(float(v))
    if cells.get("core") and cells.get("memory"):
        span = {k: f"{min(v):.3g}" + (f"–{max(v):.3g}" if max(v) != min(v) else "") for k, v in cells.items()}
        h = dataclasses.replace(h, rows=h.rows + (("capacity baseline",
                                                   f"core {span['core']} ns, memory {span['memory']} ns per step over "
                                                   f"{len(cells['core'])} CPU reading(s) (best of the probe's runs at "
                                                   "the sweep's start; docs/design.md)"),))
    return h


def code_identity(rf):
    """sweep/identity.json (what code measured: engine/api.py writes it) as a dict, else None."""
    ident = rf.read("sweep/identity.json")
    try:
        code = json.loads(ident) if ident else None
    except ValueError:
        code = None
    return code if isinstance(code, dict) else None


def build(run):
    """The whole model of a run folder: a Run. Raises DataError / JournalError on unreadable input."""
    rf = RunFolder(run)
    run = rf.path
    journal = Journal(rf)
    rec = rf.import_record()      # what kind of run this is, read once (runfolder.kind_of)
    pub, vmap = published(), variant_map()
    exps = []
    for exp in rf.experiments():    # how a command scales, in words (an experiment with a speedup chart), and why
        e = experiment(run, exp, journal, pub, vmap, rec)
        e = dataclasses.replace(e, scaling=scaling.section(run, e))
        exps.append(dataclasses.replace(e, why=causes.section(run, e)))
    return Run(path=run, name=rf.name, kind=kind_of(rec), state=rf.state() or "unknown",
               command=first_line(rf.sweep_file("command")), host=with_baseline(host(run, rec), journal),
               journal="journal.jsonl" if journal.structured else "none", experiments=tuple(exps),
               not_measured=journal.experiments_skipped(), stories=tuple(story_rows(exps, pub, run)),
               code=code_identity(rf))
