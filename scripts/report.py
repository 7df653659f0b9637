#!/usr/bin/env python3
"""Write RUN/report.md: environment summary, charts, median tables, and the published figures beside
the measured ones (reference/published.csv) with their ratio and whether the shape reproduces.

  report.py RUN
"""
import csv
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
from charts import spec_charts  # noqa: E402
from stats import load_groups, summary  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Published names that differ from ours for the same quantity.
METRIC_ALIASES = {"one_way_latency": "one_way_ns"}


def kv(path):
    out = {}
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            k, sep, v = line.partition("=")
            if sep:
                out[k.strip()] = v.strip()
    return out


def first_line(path, prefix=""):
    if not os.path.exists(path):
        return "unavailable: not captured"
    for line in open(path, errors="replace"):
        if line.startswith(prefix):
            return line[len(prefix):].strip()
    return "unavailable"


def fmt(x):
    if x != x:          # NaN
        return "–"
    x = float(f"{x:.3g}")   # round first: 999999 is "1 M", not "1e+03 k"
    a = abs(x)
    for above, scale, prefix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if a >= above:
            return f"{x / scale:.3g} {prefix}"
    return f"{x:.0f}" if a >= 1000 else f"{x:.3g}"   # .3g would print 9.33e+03


def environment(run):
    env = os.path.join(run, "env")
    topo, virt, cpu = kv(f"{env}/topology.txt"), kv(f"{env}/virt.txt"), kv(f"{env}/cpu-state.txt")
    lines = ["## Environment", "",
             "| | |", "|---|---|",
             f"| host kind | **{virt.get('kind', 'unknown')}** (vm: {virt.get('vm', '?')}, "
             f"container: {virt.get('container', '?')}) |",
             f"| CPU | {first_line(f'{env}/cpuinfo.txt', 'model name').lstrip(': ')} |",
             f"| topology | {topo.get('packages', '?')} package(s), {topo.get('numa_nodes', '?')} NUMA "
             f"node(s), {topo.get('dies', '?')} dies, {topo.get('l3_domains', '?')} L3, "
             f"{topo.get('cores', '?')} cores, {topo.get('pus', '?')} PUs, "
             f"SMT {topo.get('smt_per_core', '?')}/core |",
             f"| kernel | {first_line(f'{env}/uname.txt')} |",
             f"| governor / boost / SMT | {cpu.get('governor', '?')} / {cpu.get('boost', cpu.get('no_turbo', '?'))}"
             f" / {cpu.get('smt', '?')} |",
             f"| commit | {first_line(f'{env}/git.txt')} |",
             "", "Everything else (lstopo XML, lscpu, versions, NUMA distances, configs) is in `env/`.", ""]
    return lines


def journal_skips(run, exp):
    path = os.path.join(run, "sweep", "journal.log")
    seen = []
    if os.path.exists(path):
        for line in open(path):
            marker = f" {exp}: skip "
            if marker in line:
                s = line.split(marker, 1)[1].strip()
                if s not in seen:
                    seen.append(s)
    return seen


def skipped_experiments(run):
    """Experiments the sweep skipped whole (a tool they require is missing), with the reason."""
    path = os.path.join(run, "sweep", "journal.log")
    found = {}
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r"\S+ (\S+): skip all: (.*)$", line.strip())
            if m:
                found[m.group(1)] = m.group(2)
    return found


def medians_table(groups, heatmap_metrics=()):
    """Median, range and spread per point. A full pair matrix (a heatmap metric over more than a few
    pairs) goes to the heatmap and the CSV, not into the table."""
    rows = ["| variant | placement | threads | cpus | metric | median | min – max | spread | n | unit |",
            "|---|---|---|---|---|---:|---|---:|---:|---|"]
    pair_rows = 0
    for key in sorted(groups, key=lambda k: (k[4], k[0], k[1], int(k[2]) if k[2].isdigit() else 0, k[3])):
        variant, placement, threads, cpus, metric, unit = key
        if metric in heatmap_metrics and len(groups) > 60 and cpus.count(",") == 1:
            pair_rows += 1      # a full matrix goes to the heatmap, not the table
            continue
        s = summary(groups[key])
        rows.append(f"| {variant} | {placement} | {threads} | {cpus} | {metric} | {fmt(s['median'])} | "
                    f"{fmt(s['min'])} – {fmt(s['max'])} | {spread(s)} | {s['n']} | {unit} |")
    if pair_rows:
        rows.append(f"\n({pair_rows} per-pair rows are in the heatmap and the CSV.)")
    return rows


def headline_table(groups, metrics):
    """The charted metrics at a glance: one row per metric × placement × threads, one column per
    variant, median and spread over repeats. The full table (every metric) follows it, folded."""
    variants = sorted({k[0] for k in groups if k[4] in metrics})
    if not variants:
        return []
    cells = {}
    for (variant, placement, threads, _cpus, metric, unit), xs in groups.items():
        if metric in metrics:
            cells.setdefault((metric, unit, placement, threads), {}).setdefault(variant, []).extend(xs)
    rows = ["| metric | placement | threads | " + " | ".join(v or "–" for v in variants) + " | unit |",
            "|---|---|---:|" + "---:|" * len(variants) + "---|"]
    for (metric, unit, placement, threads) in sorted(
            cells, key=lambda k: (metrics.index(k[0]), k[2], int(k[3]) if k[3].isdigit() else 0)):
        row = cells[(metric, unit, placement, threads)]
        vals = []
        for v in variants:
            s = summary(row[v]) if v in row else None
            vals.append("" if s is None else f"{fmt(s['median'])} ({spread(s)})" if s["n"] > 1 else fmt(s["median"]))
        rows.append(f"| {metric} | {placement} | {threads} | " + " | ".join(vals) + f" | {unit} |")
    return rows + ["", "Median over repeats, (spread) = (max − min) / median."]


def perf_tables(run, exp, most=8):
    """The top-symbol tables of the first repeat of each profiled point (perf=1)."""
    tops = sorted(glob.glob(os.path.join(run, "raw", exp, "*_r1", "perf-top.txt")))
    out = []
    for path in tops[:most]:
        point = os.path.basename(os.path.dirname(path))
        out += ["", f"<details><summary>perf: top symbols of {point}</summary>", "", "```"]
        out += [ln.rstrip() for ln in open(path)] + ["```", "</details>"]
    if len(tops) > most:
        out.append(f"\n({len(tops) - most} more profiles under raw/{exp}/.)")
    return out


def published():
    path = os.path.join(ROOT, "reference", "published.csv")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def measured_medians(groups, exp_metric, variant, threads):
    """{label: (median, unit)} of the points whose variant or placement is the published variant.
    The label names the other dimension (our variant when the match was by placement, and back), so
    that e.g. CAS and store/load c2c medians each stand beside a published CAS figure, apart."""
    found = {}
    for (v, p, t, _cpus, m, u), vals in groups.items():
        if m == exp_metric and variant in (v, p) and str(t) == str(threads):
            label = v if variant == p else p
            found.setdefault(label, ([], u))[0].extend(vals)
    return {label: (summary(xs)["median"], u) for label, (xs, u) in found.items()}


def shape(series):
    """How a rate grows from the smallest to the largest thread count: the factor and a word."""
    ts = sorted(series)
    if len(ts) < 2:
        return None, ""
    f = series[ts[-1]] / series[ts[0]]
    eff = f / (ts[-1] / ts[0])
    word = "flat or falling" if f < 1.15 else "near-linear" if eff >= 0.75 else "sublinear"
    return f, word


def comparison(run, exp, groups, pub):
    rows = [r for r in pub if r["experiment"] == exp]
    if not rows:
        return []
    out = ["", "#### Beside the published figures", "",
           "| source | host | variant | threads | metric | published | measured | measured / published |",
           "|---|---|---|---|---|---:|---:|---:|"]
    shown = 0
    series = {}
    for r in rows:
        metric = METRIC_ALIASES.get(r["metric"], r["metric"])
        pv = float(r["value"])
        for label, (m, unit) in sorted(measured_medians(groups, metric, r["variant"], r["threads"]).items()):
            out.append(f"| {r['source']} | {r['host']} | {r['variant']} | {r['threads']} | {r['metric']} | "
                       f"{fmt(pv)} {r['unit']} | {fmt(m)} {unit} ({label or '-'}) | {m / pv:.2f} |")
            shown += 1
    if not shown:
        ours = sorted({int(k[2]) for k in groups if k[2].isdigit()})
        theirs = sorted({r["threads"] for r in rows})
        out.append(f"| | | | | | | no point matches: published at threads {', '.join(theirs)} with "
                   f"variants {', '.join(sorted({r['variant'] for r in rows}))}; measured threads "
                   f"{', '.join(map(str, ours))} | |")
    # Shape: for each published series, its growth over the thread range we measured.
    for r in rows:
        if r["threads"].isdigit():
            series.setdefault((r["source"], r["host"], r["variant"], r["metric"]), {})[int(r["threads"])] = float(r["value"])
    shape_lines = []
    for (src, host, variant, metric), pts in sorted(series.items()):
        mine = {}
        for (v, p, t, _c, m, _u), vals in groups.items():
            if m == METRIC_ALIASES.get(metric, metric) and variant in (v, p) and t.isdigit():
                mine.setdefault(int(t), []).extend(vals)
        common = sorted(set(pts) & set(mine))
        if len(common) < 2:
            continue
        lo, hi = common[0], common[-1]
        pf, pw = shape({lo: pts[lo], hi: pts[hi]})
        mf, mw = shape({lo: summary(mine[lo])["median"], hi: summary(mine[hi])["median"]})
        verdict = "yes" if pw == mw else "no"
        shape_lines.append(f"| {src} | {host} | {variant} | {lo} → {hi} | ×{pf:.2f} ({pw}) | "
                           f"×{mf:.2f} ({mw}) | {verdict} |")
    if shape_lines:
        out += ["", "| source | host | variant | threads | published growth | measured growth | shape reproduces |",
                "|---|---|---|---|---|---|---|"] + shape_lines
        out += ["", "Growth is the rate at the larger thread count over the rate at the smaller one; "
                "near-linear means at least 75% of ideal, flat or falling less than ×1.15."]
    return out


def variant_map():
    """reference/variants.csv: which lab series stands for a published variant, when names differ."""
    path = os.path.join(ROOT, "reference", "variants.csv")
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {(r["source"], r["experiment"], r["variant"], r["metric"]): r for r in csv.DictReader(f)}


def series_values(groups, lab):
    """{threads: [values]} of one lab series (variant, placement, metric), over every CPU set."""
    out = {}
    for (v, p, t, _c, m, _u), vals in groups.items():
        if (v, p, m) == (lab["lab_variant"], lab["lab_placement"], lab["lab_metric"]) and str(t).isdigit():
            out.setdefault(int(t), []).extend(vals)
    return out


def direction(x):
    return "higher" if x > 1.03 else "lower" if x < 0.97 else "about equal"


def relative(exp, groups, pub, vmap):
    """A published figure in other units (MB/s of a JSON pipeline) or at a thread count this host lacks
    still says by how much one variant beats another. Each published variant's ratio to the first one of
    its series stands beside the same ratio measured here, at the published thread count when measured,
    else at the largest one measured."""
    series = {}
    for r in pub:
        lab = vmap.get((r["source"], r["experiment"], r["variant"], r["metric"]))
        if lab and lab["lab_experiment"] == exp:
            key = (r["source"], r["host"], r["metric"], r["threads"])
            series.setdefault(key, []).append((r, lab))
    lines = []
    for (src, host, metric, threads), members in series.items():
        if len(members) < 2:
            continue
        (base, base_lab), rest = members[0], members[1:]
        mine = series_values(groups, base_lab)
        t = int(threads) if threads.isdigit() and int(threads) in mine else max(mine, default=None)
        for r, lab in rest:
            pub_ratio = float(r["value"]) / float(base["value"])
            other = series_values(groups, lab).get(t)
            if t is None or not other:
                missing = base_lab if t is None else lab
                cell, verdict = f"not measured here ({missing['lab_variant']} {missing['lab_placement']})", "–"
            else:
                ratio = summary(other)["median"] / summary(mine[t])["median"]
                cell = f"×{ratio:.2f} ({direction(ratio)})"
                verdict = "yes" if direction(ratio) == direction(pub_ratio) else "no"
            where = f"{threads}" if t is None or str(t) == threads else f"{threads} → {t} here"
            lines.append(f"| {src} | {host} | {metric} | {r['variant']} ÷ {base['variant']} | {where} | "
                         f"×{pub_ratio:.2f} ({direction(pub_ratio)}) | {cell} | {verdict} |")
    if not lines:
        return []
    return ["", "#### Published ratios between variants", "",
            "| source | host | metric | ratio | threads | published | measured | same direction |",
            "|---|---|---|---|---|---:|---:|---|"] + lines + [
            "", "Lab series for the published variants: `reference/variants.csv`. \"about equal\" is within 3%."]


def spread(s):
    """Relative spread, or why there is none (one sample, or a zero median)."""
    if s["n"] < 2:
        return "one sample"
    return "–" if s["spread_pct"] != s["spread_pct"] else f"{s['spread_pct']:.1f}%"


PERF_METRICS = ("mutex_cpu_share", "atomic_cpu_share", "top_symbol_share")


def missing_charts(run, exp, spec, groups):
    """A chart the spec asks for but the run has no rows for is named, with the reason."""
    if not os.path.exists(spec):
        return []
    measured = {g[4] for g in groups}
    out = []
    for kind, metric in spec_charts(spec)[1]:
        if metric not in measured:
            why = "it comes from perf: sweep with perf=1" if metric in PERF_METRICS else "no rows for it"
            out += [f"- chart {kind} {metric} not drawn: {why}.", ""]
    return out


def main(argv):
    run = os.path.abspath(argv[0])
    pub = published()
    vmap = variant_map()
    state = open(os.path.join(run, "sweep", "state")).read().strip() \
        if os.path.exists(os.path.join(run, "sweep", "state")) else "unknown"
    lines = [f"# Scaling lab run {os.path.basename(run)}", "",
             f"Sweep state: **{state}**. Command: `{first_line(os.path.join(run, 'sweep', 'command'))}`", ""]
    lines += environment(run)
    for data in sorted(glob.glob(os.path.join(run, "data", "*.csv"))):
        exp = os.path.basename(data)[:-4]
        groups = load_groups(data)
        lines += [f"## {exp}", ""]
        spec = os.path.join(run, "sweep", "specs", f"{exp}.spec")
        if os.path.exists(spec):
            lines += ["```"] + [ln.rstrip() for ln in open(spec) if ln.strip()] + ["```", ""]
        for s in journal_skips(run, exp):
            lines.append(f"- skipped: {s}")
        lines.append("")
        for kind, metric in (spec_charts(spec)[1] if os.path.exists(spec) else []):
            png = os.path.join(run, "plots", f"{exp}-{kind}-{metric}.png")
            if os.path.exists(png):
                lines += [f"![{exp}-{kind}-{metric}]({os.path.relpath(png, run)})", ""]
        lines += missing_charts(run, exp, spec, groups)
        if not groups:
            lines += ["No measured rows.", ""]
            continue
        charted = spec_charts(spec)[1] if os.path.exists(spec) else []
        heat = {m for k, m in charted if k == "heatmap"}
        headline = headline_table(groups, [m for k, m in dict.fromkeys(charted) if k != "heatmap"])
        if headline:
            lines += ["#### At a glance", ""] + headline + [""]
        full = medians_table(groups, heat)
        lines += ["#### Medians over repeats", ""]
        if headline and len(full) > 40:      # a long table stays one click away, not in the way
            lines += ["<details><summary>every metric, " f"{len(full) - 2} rows</summary>", ""] + full \
                + ["", "</details>"]
        else:
            lines += full
        lines += perf_tables(run, exp)
        lines += comparison(run, exp, groups, pub)
        lines += relative(exp, groups, pub, vmap)
        lines.append("")
    skipped = skipped_experiments(run)
    if skipped:
        lines += ["## Not measured", ""] + [f"- {exp}: {why}" for exp, why in sorted(skipped.items())] + [""]
    with open(os.path.join(run, "report.md.tmp"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(os.path.join(run, "report.md.tmp"), os.path.join(run, "report.md"))
    print(f"report: {os.path.join(run, 'report.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
