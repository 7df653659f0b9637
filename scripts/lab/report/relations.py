"""Core-to-core latency per CPU relation, for the report of a c2c or c2c-matrix run (measured here or
imported from a published matrix) and for compare:

- the run's per-relation summary (pairs, median of the pair medians, p10, p90), each pair named by the
  lab's one relation() (scripts/lab/topology/topo.py) on the run's own topology (env/lstopo.xml), or by the sweep's
  placement where the sweep measured one relation per point (c2c.spec);
- the same relation split by where the line lives: both CPUs on the line's home socket, or both on
  another one, where the run knows the home (an imported matrix: CPU 0's socket, where
  core-to-core-latency's main thread first touches it), and in words whether the halves differ;
- every catalogued published machine's summary beside it (reference/c2c/), same vendor and family first;
- seed 004's claim (a same-CCX hop beats a CCX crossing) judged on the run's pairs.
"""
import csv
import os

# scripts/ is on sys.path: the programs that import the reporting package put it there
from lab.core import c2c_published as C
from lab.core import rules as V
from lab.core.runfolder import KIND_SWEEP, RunFolder, kind_of, read_file
from lab.core.stats import percentile, summary
from lab.topology.topo import PAIRS, PlacementError

EXPERIMENTS = ("c2c", "c2c-matrix")
# The published figure for seed 004's claim on its own CPU: nviennot/core-to-core-latency's README,
# Threadripper 3960X, cross-CCX 94 ns over same-CCX 24 ns (reference/published.csv).
# Its size is judged only on that CPU (model name containing "cpu"); elsewhere the claim is the direction.
CCX_CLAIM = {"source": "nviennot-c2c", "host": "AMD Threadripper 3960X", "num": "cross-l3", "den": "same-l3",
           "cpu": "3960X"}
# Halves of a relation differ when one half's median lies outside the other's p10–p90 range.


def run_topology(run):
    return RunFolder(run).topology()


def pairs_of(run, e, topo=None):
    """(variant, {(a, b): (relation, median ns)}) of an experiment's one_way_ns pair points; the CAS
    mode when the run has it (what the published matrices measured)."""
    pts = [p for p in e.points if p.metric == C.METRIC and p.cpus.count(",") == 1]
    variants = sorted({p.variant for p in pts})
    if not variants:
        return None, {}
    variant = C.VARIANT if C.VARIANT in variants else variants[0]
    out = {}
    for p in pts:
        if p.variant != variant:
            continue
        a, b = (int(x) for x in p.cpus.split(","))
        rel = p.placement if p.placement in PAIRS else None
        if rel is None and topo is not None:
            try:
                rel = topo.relation(a, b)
            except PlacementError:
                rel = None
        if rel:
            out[(min(a, b), max(a, b))] = (rel, p.summary.median)
    return variant, out


def grouped(pairs):
    by = {}
    for rel, v in pairs.values():
        by.setdefault(rel, []).append(v)
    return by


def home_split(pairs, topo, home):
    """Per relation (within one socket): home-socket pairs vs other-socket pairs, and whether they differ."""
    out = []
    halves = {}
    for (a, b), (rel, v) in pairs.items():
        pa, pb = topo.pu(a).package, topo.pu(b).package
        if pa != pb:
            continue
        halves.setdefault(rel, {"home": [], "other": []})["home" if pa == home else "other"].append(v)
    for rel in PAIRS:
        h = halves.get(rel)
        if not h or not h["home"] or not h["other"]:
            continue
        hs, os_ = (summary(h[k]) for k in ("home", "other"))
        (h10, h90), (o10, o90) = ((percentile(h[k], 10), percentile(h[k], 90)) for k in ("home", "other"))
        differ = not (h10 <= os_.median <= h90) or not (o10 <= hs.median <= o90)
        ratio = os_.median / hs.median
        words = (f"the other socket's {rel} pairs {os_.median:.0f} ns "
                 f"(p10–p90 {o10:.0f}–{o90:.0f}, {os_.n} pairs) vs {hs.median:.0f} ns on the "
                 f"line's home socket (p10–p90 {h10:.0f}–{h90:.0f}, {hs.n} pairs): ×{ratio:.2f}")
        out.append({"relation": rel, "home": hs, "other": os_, "differ": differ, "ratio": ratio, "words": words})
    return out


def identity(run, rec):
    """(vendor_id, cpu family, model) of the run's CPU: the import's record (rec), else env/cpuinfo.txt."""
    if rec:
        return rec.get("vendor_id", ""), str(rec.get("cpu_family", "")), str(rec.get("model", ""))
    want = {"vendor_id": "", "cpu family": "", "model": ""}
    for line in cpuinfo(run).splitlines():
        k, sep, v = line.partition(":")
        k = k.strip()
        if sep and k in want and not want[k]:
            want[k] = v.strip()
        if all(want.values()):
            break
    return want["vendor_id"], want["cpu family"], want["model"]


_CATALOGUED = {}


def catalogued():
    """[(entry, summary rows)] of every catalogued matrix (read once per process)."""
    if not _CATALOGUED:
        for e in C.catalogue():
            n, cells = C.read_matrix(e["path"])
            topo, _xml = C.load_topology(e["topology"], n, e["path"])
            _CATALOGUED[e["name"]] = (e, C.summarize(C.by_relation(cells, C.pair_relations(topo, n))),
                                      C.sha256(e["path"]))
    return list(_CATALOGUED.values())


def similarity(mine, entry):
    """Sort key: same vendor, then same family, then same model first."""
    v, f, m = mine
    same_v = bool(v) and v == entry["vendor_id"]
    same_f = same_v and f == entry["cpu_family"]
    return (not same_v, not same_f, not (same_f and m == entry["model"]), entry["name"])


def beside(run, rows, rec):
    """This run's per-relation medians beside every catalogued machine's, most similar CPU first."""
    try:
        cat = catalogued()
    except (OSError, C.C2CError) as e:
        return {"error": f"catalogue unreadable: {e}"}
    mine = identity(run, rec)
    cat = sorted((c for c in cat if c[2] != (rec or {}).get("sha256")), key=lambda c: similarity(mine, c[0]))
    machines = [{"name": e["name"], "cpu": e["cpu"], "uarch": e["uarch"], "cite": C.cite(e),
                 "same": " and ".join(w for w, ok in (("vendor", not similarity(mine, e)[0]),
                                                  ("family", not similarity(mine, e)[1])) if ok),
                 "rows": {r["relation"]: r for r in s}} for e, s, _sha in cat]
    rels = [r for r in PAIRS if any(r in m["rows"] for m in machines) or any(x["relation"] == r for x in rows)]
    return {"identity": mine, "machines": machines, "relations": rels, "here": {r["relation"]: r for r in rows}}


def cpu_name(run, rec):
    if rec:
        return rec.get("cpu", "")
    for line in cpuinfo(run).splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()[:200]
    return ""


def cpuinfo(run):
    """env/cpuinfo.txt of the run through the safe reader ("" when not captured)."""
    rf = RunFolder(run)
    return read_file(rf.env("cpuinfo.txt"), "env", rf.path) or ""


def ccx_crossing(groups, cpu=""):
    """Seed 004's claim on this run's pairs: cross-l3 ÷ same-l3 median latency, with its 95% CI over
    pairs, beside the published figure's band (reference/published.csv)."""
    num, den = groups.get(CCX_CLAIM["num"]), groups.get(CCX_CLAIM["den"])
    pub = {r["variant"]: float(r["value"]) for r in published_rows()
           if r["source"] == CCX_CLAIM["source"] and r["host"] == CCX_CLAIM["host"]}
    if not (CCX_CLAIM["num"] in pub and CCX_CLAIM["den"] in pub):
        return None
    pub_ratio = pub[CCX_CLAIM["num"]] / pub[CCX_CLAIM["den"]]
    lo, hi = V.band(pub_ratio)
    out = {"claim": "a same-CCX hop beats crossing a CCX (cross-l3 ÷ same-l3 one-way latency)",
           "published": pub_ratio, "pub_where": f"{CCX_CLAIM['source']}, {CCX_CLAIM['host']}: "
           f"{pub[CCX_CLAIM['num']]:g} ÷ {pub[CCX_CLAIM['den']]:g} ns", "band": (lo, hi), "tolerance": V.TOLERANCE}
    if not num or not den:
        missing = " and ".join(r for r, xs in ((CCX_CLAIM["num"], num), (CCX_CLAIM["den"], den)) if not xs)
        out.update(verdict="–", why=f"not measurable here: no {missing} pairs on this topology", ratio=None)
        return out
    sn, sd = summary(num), summary(den)
    qlo, qhi = V.quotient_range(sn, sd)
    ratio = sn.median / sd.median
    beats, why_b = V.claim_above(qlo, qhi, 1.0)
    eq, why_e = V.equivalence(qlo, qhi, lo, hi)
    own = CCX_CLAIM["cpu"] in cpu
    out.update(ratio=ratio, ci=(qlo, qhi), beats=beats, own_cpu=own, spread=(
        f"{CCX_CLAIM['num']} p10–p90 {percentile(num, 10):.0f}–{percentile(num, 90):.0f} ns over {len(num)} pairs, "
        f"{CCX_CLAIM['den']} {percentile(den, 10):.0f}–{percentile(den, 90):.0f} ns over {len(den)} pairs"),
        # on the seed's own CPU the size must reproduce too; elsewhere it is shown, not judged
        verdict=(eq if beats == "yes" else beats) if own else beats,
        why=f"same-CCX faster: {beats} ({why_b}); size ×{ratio:.2f} against ×{pub_ratio:.2f} ±{V.TOLERANCE:.0%}: "
            + (f"{eq} ({why_e})" if own else f"not judged ({cpu or 'this CPU'} is not the {CCX_CLAIM['cpu']})"))
    return out


def published_rows():
    with open(os.path.join(C.ROOT, "reference", "published.csv"), newline="") as f:
        return list(csv.DictReader(f))


def of_experiment(run, e, rec):
    """Everything above for one experiment of a run model, or None when it is not a c2c experiment; rec:
    the run's import record (runfolder.import_record(), None for a sweep)."""
    if e.name not in EXPERIMENTS:
        return None
    topo = run_topology(run)
    variant, pairs = pairs_of(run, e, topo)
    if not pairs:
        return None
    groups = grouped(pairs)
    rows = C.summarize(groups)
    received = kind_of(rec) != KIND_SWEEP
    if received and topo is not None and topo.count("package") > 1:
        split, home_note = home_split(pairs, topo, int(rec.get("home_package", 0))), \
            "the line's home: CPU 0's socket (core-to-core-latency first touches it from its main thread)"
    elif received:
        split, home_note = [], "one socket: no other socket to set against the line's home"
    else:
        split, home_note = [], ("measured here, each pair's line is homed on its first CPU (c2c --home a): "
                                "the c2c-home experiment measures both homes directly")
    return {"variant": variant, "rows": rows, "split": split, "home_note": home_note,
            "beside": beside(run, rows, rec), "ccx_crossing": ccx_crossing(groups, cpu_name(run, rec)), "imported": rec}


def of_model(m):
    """(experiment name, relations) of a run model's fullest c2c experiment: the matrix, else c2c."""
    found = {e.name: e.relations for e in m.experiments if e.relations}
    for name in ("c2c-matrix", "c2c"):
        if name in found:
            return name, found[name]
    return None, None


def compare(ma, mb):
    """Relation medians of two runs side by side (two hosts' matrices differ in size: compare by relation,
    not by CPU pair); [] when either run has no c2c experiment."""
    ea, ra = of_model(ma)
    eb, rb = of_model(mb)
    if not ra or not rb:
        return []
    a, b = {x["relation"]: x for x in ra["rows"]}, {x["relation"]: x for x in rb["rows"]}
    return [{"relation": r, "a": a.get(r), "b": b.get(r),
             "exp_a": f"{ea} {ra['variant']}", "exp_b": f"{eb} {rb['variant']}",
             "ratio": b[r]["median_ns"] / a[r]["median_ns"] if r in a and r in b else None}
            for r in PAIRS if r in a or r in b]
