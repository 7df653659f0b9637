#!/usr/bin/env python3
"""Put two runs side by side (two machines, or before/after): every point both measured, the medians,
their ratio, and Welch's t-test over the repeats.

  compare.py RUN_A RUN_B [OUT.md]

A point is (experiment, variant, placement, threads, metric); the CPU lists may differ between hosts,
which is the point of comparing them, so they are shown, not matched.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from report import environment, fmt  # noqa: E402
from stats import group, summary, welch  # noqa: E402
from tidy import read  # noqa: E402

KEYS = ("experiment", "variant", "placement", "threads", "metric", "unit")


def points(run):
    rows = []
    for path in glob.glob(os.path.join(run, "data", "*.csv")):
        rows += read(path)
    return group(rows, KEYS)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    a_run, b_run = (os.path.abspath(x.rstrip("/")) for x in argv[:2])
    for r in (a_run, b_run):
        if not os.path.isdir(os.path.join(r, "data")):
            print(f"compare: {r} is not a run folder (no data/)", file=sys.stderr)
            return 2
    a, b = points(a_run), points(b_run)
    common = sorted(set(a) & set(b), key=lambda k: (k[0], k[4], k[1], k[2], int(k[3]) if k[3].isdigit() else 0))
    na, nb = os.path.basename(a_run), os.path.basename(b_run)
    out = [f"# {na} vs {nb}", "", f"A = `{na}`, B = `{nb}`.", ""]
    out += ["## A"] + environment(a_run)[1:] + ["## B"] + environment(b_run)[1:]
    out += ["## Points measured by both", "",
            "| experiment | variant | placement | threads | metric | A median | B median | B / A | p (Welch) | |",
            "|---|---|---|---|---|---:|---:|---:|---:|---|"]
    for k in common:
        sa, sb = summary(a[k]), summary(b[k])
        _t, _df, p = welch(a[k], b[k])
        ratio = sb["median"] / sa["median"] if sa["median"] else float("nan")
        sig = "significant" if p == p and p < 0.05 else "n.s." if p == p else "too few repeats"
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {fmt(sa['median'])} {k[5]} | "
                   f"{fmt(sb['median'])} {k[5]} | {ratio:.3f} | {p:.3g} | {sig} |")
    only_a, only_b = len(set(a) - set(b)), len(set(b) - set(a))
    out += ["", f"{len(common)} points in common; {only_a} only in A, {only_b} only in B "
            "(placements one host cannot satisfy, or experiments one run did not include).", ""]
    text = "\n".join(out) + "\n"
    dest = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(b_run), f"compare-{na}-vs-{nb}.md")
    with open(dest, "w") as f:
        f.write(text)
    print(text)
    print(f"compare: written to {dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
