"""Two run models side by side: per point (experiment, variant, placement, threads, metric) both
medians, B / A, and Welch's t-test over the repeats that are not suspect; noise rows apart; warnings
when the runs built different code (env/build.txt) or ran different specs (sweep/specs/)."""
import os

from lab.core.runfolder import KIND_IMPORTED, KIND_PUBLISHED, RunFolder, read_file
from lab.core.stats import summary, welch
from lab.report import relations


def by_key(model):
    """{(experiment, variant, placement, threads, metric, unit): {"all": [v], "clean": [v], "noise": bool}}."""
    out = {}
    for e in model.experiments:
        for p in e.points + e.noise:
            if p.shared:     # measured once, as another placement (plan.shared): compared there
                continue
            k = (e.name, p.variant, p.placement, p.threads, p.metric, p.unit)
            d = out.setdefault(k, {"all": [], "clean": [], "suspect": 0, "noise": p.noise})
            for r in p.repeats:
                d["all"].append(r.value)
                if r.suspect:
                    d["suspect"] += 1
                else:
                    d["clean"].append(r.value)
    return out


def read_text(path):
    return read_file(path, "env")


def warnings(a_run, b_run):
    out = []
    runs = [(x, RunFolder(run)) for x, run in (("A", a_run), ("B", b_run))]
    files = [f"{x} is imported from {rf.import_record().get('source', '?')}, not measured by this lab: its "
             "machine is what the file states" for x, rf in runs if rf.kind() == KIND_IMPORTED]
    if files:   # another tool's file (./lab import): no build or settings recorded to compare
        return files
    pub = [x for x, rf in runs if rf.kind() == KIND_PUBLISHED]
    if pub:     # a published matrix has no build and no spec: say what it is instead
        return [f"{' and '.join(pub)} {'is an' if len(pub) == 1 else 'are'} imported published "
                f"matri{'x' if len(pub) == 1 else 'ces'} (import-c2c), not measured by this lab: "
                "compare them by relation"]
    ra, rb = RunFolder(a_run), RunFolder(b_run)
    ba, bb = read_text(ra.env("build.txt")), read_text(rb.env("build.txt"))
    if ba is None or bb is None:
        missing = " and ".join(x for x, t in (("A", ba), ("B", bb)) if t is None)
        out.append(f"build not recorded in {missing} (env/build.txt): cannot tell whether both ran the same code")
    elif ba.strip() != bb.strip():
        only_a, only_b = differing(ba.splitlines(), bb.splitlines())
        out.append(f"the two runs measured differently built code (env/build.txt differs in {len(only_a)} line(s) "
                   f"of A and {len(only_b)} of B): "
                   + "; ".join([f"-{ln}" for ln in only_a[:3]] + [f"+{ln}" for ln in only_b[:3]]))
    out += memory_time_differs(ra, rb)
    sa, sb = ra.specs_dir, rb.specs_dir
    names = sorted(set(os.listdir(sa) if os.path.isdir(sa) else []) & set(os.listdir(sb) if os.path.isdir(sb) else []))
    for name in names:
        ta = [ln.strip() for ln in read_file(os.path.join(sa, name)).splitlines()
              if ln.strip() and not ln.startswith("#")]
        tb = [ln.strip() for ln in read_file(os.path.join(sb, name)).splitlines()
              if ln.strip() and not ln.startswith("#")]
        if ta != tb:
            only_a, only_b = differing(ta, tb)
            out.append(f"spec {name} differs ({len(only_a)} line(s) only in A, {len(only_b)} only in B): "
                       f"A has {only_a[:3]}, B has {only_b[:3]}")
    return out


SHOWN = 200     # characters of one differing line shown


def differing(a, b):
    """(lines of a not in b, lines of b not in a), each in its own order: linear in the lines (sets; a
    received file may hold 80,000 of them), each line cut to SHOWN characters."""
    sa, sb = set(a), set(b)
    return [ln[:SHOWN] for ln in a if ln not in sb], [ln[:SHOWN] for ln in b if ln not in sa]


def settings(path):
    """{key: value} of env/memory-time.txt, None when the run did not record it."""
    text = read_text(path)
    if text is None:
        return None
    return dict(ln.split("=", 1) for ln in text.splitlines() if "=" in ln)


def memory_time_differs(ra, rb):
    """NUMA balancing, THP, clocksource, idle states, IRQs, nodes per package (env/memory-time.txt)."""
    a, b = settings(ra.env("memory-time.txt")), settings(rb.env("memory-time.txt"))
    if a is None or b is None:
        missing = " and ".join(x for x, t in (("A", a), ("B", b)) if t is None)
        return [f"kernel settings that move memory or time not recorded in {missing} (env/memory-time.txt)"]
    diff = [f"{k} {a.get(k, '–')!r} vs {b.get(k, '–')!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return ["the runs differ in what moves memory or time behind the lab's back (env/memory-time.txt): "
            + "; ".join(diff)] if diff else []


def compare(ma, mb):
    a, b = by_key(ma), by_key(mb)
    order = lambda k: (k[0], k[4], k[1], k[2], int(k[3]) if k[3].isdigit() else 0)  # noqa: E731
    # Noise readings of either run, beside each other; an old run has none ("–").
    noise = [{"key": k, "a": summary(a[k]["all"]) if k in a else None, "b": summary(b[k]["all"]) if k in b else None}
             for k in sorted({k for d in (a, b) for k in d if d[k]["noise"]}, key=order)]
    a = {k: v for k, v in a.items() if not v["noise"]}
    b = {k: v for k, v in b.items() if not v["noise"]}
    rows = []
    for k in sorted(set(a) & set(b), key=order):
        sa, sb = summary(a[k]["all"]), summary(b[k]["all"])
        row = {"key": k, "a": sa, "b": sb, "ratio": sb.median / sa.median if sa.median else float("nan")}
        _t, _df, p = welch(a[k]["clean"], b[k]["clean"])
        skipped = a[k]["suspect"] + b[k]["suspect"]
        row.update(p=p, skipped=skipped,
                   sig=("significant" if p < 0.05 else "n.s.") if p == p else "too few clean repeats")
        rows.append(row)
    return {"rows": rows, "noise": noise, "relations": relations.compare(ma, mb),
            "only_a": len(set(a) - set(b)), "only_b": len(set(b) - set(a)),
            "warnings": warnings(ma.path, mb.path)}
