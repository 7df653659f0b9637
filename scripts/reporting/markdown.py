"""report.md from the run model (model.py): the same numbers as report.html, as text."""
import os

from reporting import goals, numa
from reporting.fmt import ci, fmt, spread


def environment(m):
    h = m["host"]
    lines = ["## Environment", "", "| | |", "|---|---|"]
    for k, v in h["rows"]:
        if k == "host kind":       # the first word (vm, bare-metal, container) is what a reader must not miss
            kind, _, rest = v.partition(" ")
            v = f"**{kind}** {rest}"
        lines.append(f"| {k} | {v} |")
    # One line per instrument (compiler, version, flags): two runs built differently show it here.
    builds = [ln.split(": ", 1) for ln in (h["build"] or "").splitlines() if ": " in ln]
    # every line of env/build.txt but the compiler wrapper's and the compiler's defaults is an instrument
    lines += [f"| build: {name} | `{how}` |" for name, how in builds
              if name != "wrapper" and not name.endswith(" defaults")] or ["| build | not recorded |"]
    lines += ["", "Everything else (lstopo XML, lscpu, versions, NUMA distances, configs) is in `env/`.", ""]
    return lines


def stories(m):
    if not m["stories"]:
        return []
    out = ["## Does each story's claim hold here?", "",
           "| story | claim | published | measured here | verdict |", "|---|---|---|---|---|"]
    for s in m["stories"]:
        out.append(f"| {s['source']} {s['title']} ({', '.join(s['experiments'])}) | {s['claim']} | "
                   f"{s['published'] or '–'} | {s['measured'] or '–'} | **{s['verdict']}** ({s['why']}) |")
    details = [f"- {s['source']}: " + "; ".join(f"{c[0]}: {c[1]} ({c[2]})" for c in s["checks"])
               for s in m["stories"] if s["checks"]]
    if details:
        out += ["", "Per-point comparisons with the published figures (details in each experiment; they do not "
                "decide the claim):", ""] + details
    return out + ["", "A verdict is *inconclusive* when a compared median's 95% CI straddles the threshold, "
                  "a point has fewer than 3 repeats, or a point is suspect (see docs/design.md).", ""]


def medians_table(e):
    mem = e.get("mem_column")       # the node(s) the instrument said the memory was on
    rows = ["| variant | placement | threads | cpus | " + ("memory node | " if mem else "") +
            "metric | median | min – max | spread | n | 95% CI | unit | |",
            "|---|---|---|---|" + ("---|" if mem else "") + "---|---:|---|---:|---:|---:|---|---|"]
    for p in e["table"]:
        s = p["s"]
        mark = f"suspect: {s['suspect']}" if s["suspect"] else ""
        node = f"{p['mem_node'] or '–'} | " if mem else ""
        rows.append(f"| {p['variant']} | {p['placement']} | {p['threads']} | {p['cpus']} | {node}{p['metric']} | "
                    f"{fmt(s['median'])} | {fmt(s['min'])} – {fmt(s['max'])} | {spread(s)} | {s['n']} | {ci(s)} | "
                    f"{p['unit']} | {mark} |")
    if e["pair_rows"]:
        rows.append(f"\n({e['pair_rows']} per-pair rows are in the heatmap and the CSV.)")
    return rows


def glance(g):
    rows = ["| metric | placement | threads | " + " | ".join(v or "–" for v in g["variants"]) + " | unit |",
            "|---|---|---:|" + "---:|" * len(g["variants"]) + "---|"]
    for r in g["rows"]:
        vals = []
        for s in r["cells"]:
            if s is None:
                vals.append("")
                continue
            cell = f"{fmt(s['median'])} ({spread(s)})" if s["n"] > 1 else fmt(s["median"])
            vals.append(cell + (" ⚠" if s["suspect"] else ""))
        rows.append(f"| {r['metric']} | {r['placement']} | {r['threads']} | " + " | ".join(vals) + f" | {r['unit']} |")
    return rows + ["", "Median over repeats, (spread) = (max − min) / median; ⚠ = a suspect repeat (listed below)."]


def noise_table(e):
    by = {}
    for p in e["noise"]:
        by.setdefault((p["variant"], p["placement"], p["threads"], p["cpus"]), {})[p["metric"]] = p
    if not by:
        return []
    metrics = sorted({p["metric"] for p in e["noise"]})
    out = ["", f"<details><summary>noise per point (not results), {len(by)} points</summary>", "",
           "| variant | placement | threads | cpus | " + " | ".join(f"{m} (median, max)" for m in metrics) + " |",
           "|---|---|---|---|" + "---:|" * len(metrics)]
    for k, ms in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], int(kv[0][2]) if kv[0][2].isdigit() else 0)):
        cells = [f"{fmt(ms[m]['s']['median'])}, {fmt(ms[m]['s']['max'])} {ms[m]['unit']}" if m in ms else ""
                 for m in metrics]
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | " + " | ".join(cells) + " |")
    return out + ["", "</details>"]


def perf_tables(run, e, most=8):
    out = []
    for path in e["perf"][:most]:
        point = os.path.basename(os.path.dirname(path))
        out += ["", f"<details><summary>perf: top symbols of {point}</summary>", "", "```"]
        out += [ln.rstrip() for ln in open(path)] + ["```", "</details>"]
    if len(e["perf"]) > most:
        out.append(f"\n({len(e['perf']) - most} more profiles under raw/{e['name']}/.)")
    return out


def published(e):
    out = []
    if e["beside"]:
        out += ["", "#### Beside the published figures", "",
                "| source | host | variant | threads | metric | published | measured | measured / published | n | 95% CI |",
                "|---|---|---|---|---|---:|---:|---:|---:|---:|"]
        for b in e["beside"]:
            r, s = b["pub"], b["s"]
            out.append(f"| {r['source']} | {r['host']} | {r['variant']} | {r['threads']} | {r['metric']} | "
                       f"{fmt(float(r['value']))} {r['unit']} | {fmt(s['median'])} {b['unit']} ({b['label'] or '-'}) | "
                       f"{b['ratio']:.2f} | {s['n']} | {ci(s)} |")
    if e["shapes"]:
        out += ["", "| source | host | variant | threads | published growth | measured growth | shape reproduces | why |",
                "|---|---|---|---|---|---|---|---|"]
        for r in e["shapes"]:
            out.append(f"| {r['source']} | {r['host']} | {r['variant']} | {r['lo']} → {r['hi']} | "
                       f"×{r['pub_factor']:.2f} ({r['pub_word']}) | ×{r['factor']:.2f} ({r['word']}) | "
                       f"{r['verdict']} | {r['why']} |")
        out += ["", "Growth is the rate at the larger thread count over the rate at the smaller one; "
                "near-linear means at least 75% of ideal, flat or falling less than ×1.15. The verdict is "
                "inconclusive when the growth's 95% CI spans two of these words."]
    if e["ratios"]:
        out += ["", "#### Published ratios between variants", "",
                "| source | host | metric | ratio | threads | published | measured | same direction | why |",
                "|---|---|---|---|---|---:|---:|---|---|"]
        for r in e["ratios"]:
            where = r["threads"] if r["here"] is None or str(r["here"]) == r["threads"] else f"{r['threads']} → {r['here']} here"
            cell = f"×{r['ratio']:.2f} ({r['word']})" if r["ratio"] is not None else r["why"]
            why = r["why"] if r["ratio"] is not None else ""
            out.append(f"| {r['source']} | {r['host']} | {r['metric']} | {r['name']} | {where} | "
                       f"×{r['pub_ratio']:.2f} ({r['pub_word']}) | {cell} | {r['verdict']} | {why} |")
        out += ["", "Lab series for the published variants: `reference/variants.csv`. \"about equal\" is within 3%."]
    return out


def relations(e):
    """Per-relation medians, the home-socket split and the catalogued machines beside them."""
    r = e.get("relations")
    if not r:
        return []
    out = ["", f"#### Per relation ({r['variant']}, one_way_ns over pairs)", "",
           "| relation | pairs | median | p10 | p90 |", "|---|---:|---:|---:|---:|"]
    out += [f"| {x['relation']} | {x['pairs']} | {fmt(x['median_ns'])} ns | {fmt(x['p10_ns'])} | {fmt(x['p90_ns'])} |"
            for x in r["rows"]]
    out += ["", f"Home-node split: {r['home_note']}."]
    out += [f"- {x['relation']}: do the halves differ? **{'yes' if x['differ'] else 'no'}**: {x['words']}"
            for x in r["split"]]
    b = r["beside"]
    if b.get("error"):
        out += ["", b["error"]]
    elif b["machines"]:
        ms = b["machines"]
        out += ["", "#### Beside the published machines (median ns, p10–p90; same vendor and family first)", "",
                "| relation | this run | " + " | ".join(f"{m['cpu']} ({m['uarch']})" for m in ms) + " |",
                "|---|---:|" + "---:|" * len(ms)]
        cell = lambda x: f"{fmt(x['median_ns'])} ({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])})" if x else "–"  # noqa: E731
        for rel in b["relations"]:
            out.append(f"| {rel} | {cell(b['here'].get(rel))} | " + " | ".join(cell(m["rows"].get(rel)) for m in ms) + " |")
        out += [""] + [f"- {m['cpu']}: {m['cite']} (CAS, mean over samples)" +
                       (f"; same {m['same']} as this run's CPU" if m["same"] else "") for m in ms]
    return out


def numa_notes(n):
    """A node x node memory matrix's verdict and the firmware's distance table (reporting/numa.py)."""
    if not n:
        return []
    out = [line + "\n" for line in n["lines"]]
    if n["distances"]:
        head, rows = numa.distance_table(n["distances"])
        out += ["Firmware distances (`numactl --hardware`, env/numa.txt; 10 = local):", "",
                "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
        out += ["| " + " | ".join(r) + " |" for r in rows] + [""]
    return out


def scaling_md(sc):
    """How the command scales, in words, then the numbers the words rest on (reporting/scaling.py)."""
    if not sc:
        return []
    out = ["#### How it scales", ""] + [f"- {s}" for s in sc["sentences"]]
    out += ["", f"Speedup of {sc['metric']} ({sc['better']} is better) over the placement's fewest threads; "
            f"efficiency = speedup / ideal; scaling stops where efficiency is below {sc['threshold'] * 100:.0f}% "
            "over its whole 95% CI. Words resting on a suspect point or one with fewer than 3 repeats are "
            "inconclusive.", "",
            f"| placement | threads | {sc['metric']} median | n | speedup (95% CI) | efficiency (95% CI) | |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for r in sc["rows"]:
        out.append(f"| {r['placement']} | {r['threads']} | {fmt(r['s']['median'])} {sc['unit']} | {r['s']['n']} | "
                   f"×{r['speedup']:.2f} (×{r['lo']:.2f}–×{r['hi']:.2f}) | {r['eff'] * 100:.0f}% "
                   f"({r['eff_lo'] * 100:.0f}–{r['eff_hi'] * 100:.0f}%) | {r['doubt']} |")
    return out + [""]


def render(m):
    lines = [f"# Scaling lab run {m['name']}", "",
             f"Sweep state: **{m['state']}**. Command: `{m['command']}`", "",
             f"Host: {m['host']['one_line']}. An HTML version of this report: `report.html`.", ""]
    lines += [f"**Warning:** {w}.\n" for w in m["host"].get("warnings", [])]
    lines += stories(m)
    lines += environment(m)
    for e in m["experiments"]:
        lines += [f"## {e['name']}", ""]
        if e["spec"]:
            lines += ["```"] + e["spec"] + ["```", ""]
        lines += [f"- skipped: {s}" for s in e["skipped"]]
        lines += [f"- suspect: {p['variant'] or '–'} {p['placement']} t{p['threads']} ({', '.join(ms)}): {p['s']['suspect']}"
                  for p, ms in e["suspect_points"]]
        lines += [f"- {b['variant'] or '–'} {b['placement']} t{b['threads']}: {b['words']}" for b in e["rate_bound"]]
        lines += [f"- {s}" for s in goals.sentences(e["goals"])]
        lines += [f"- re-measured: {s}" for s in e["remeasured"]]
        lines += [f"- failed: {s}" for s in e["failed"]]
        lines += [f"- not confident: {c.get('variant', '')} {c.get('placement', '')} t{c.get('threads', '')} "
                  f"{c.get('metric', '')}: n={c.get('n')}, CI ±{c.get('ci_pct')}%" for c in e["unconfident"]]
        lines.append("")
        for kind, metric, base in e["chart_files"]:
            lines += [f"![{e['name']}-{kind}-{metric}]({base}.png)", ""]
        rec = (e.get("relations") or {}).get("imported")
        if rec:     # every published number shown names where it was published
            lines += [f"Published numbers, not measured here: {rec.get('source', '?')} (file {rec.get('file', '?')}).", ""]
        lines += [f"- {s}\n" for s in e["missing_charts"]]
        lines += scaling_md(e.get("scaling"))
        lines += numa_notes(e.get("numa"))
        if not e["points"]:
            lines += ["No measured rows.", ""]
            continue
        if e["glance"]:
            lines += ["#### At a glance", ""] + glance(e["glance"]) + [""]
        full = medians_table(e)
        lines += ["#### Medians over repeats", ""]
        if e["glance"] and len(full) > 40:
            lines += ["<details><summary>every metric, " f"{len(full) - 2} rows</summary>", ""] + full + ["", "</details>"]
        else:
            lines += full
        lines += noise_table(e)
        lines += perf_tables(m["run"], e)
        lines += relations(e)
        lines += published(e)
        lines.append("")
    if m["not_measured"]:
        lines += ["## Not measured", ""] + [f"- {x}: {why}" for x, why in sorted(m["not_measured"].items())] + [""]
    return "\n".join(lines) + "\n"


def side(s, unit):
    """A noise median of one run, or "–" when that run did not record it (an old run)."""
    return f"{fmt(s['median'])} {unit}" if s else "–"


def comparison(ma, mb, cmp):
    """compare.py's page: two run models and their comparison (reporting/comparison.py)."""
    na, nb = ma["name"], mb["name"]
    out = [f"# {na} vs {nb}", "", f"A = `{na}`, B = `{nb}`.", ""]
    out += [f"**Warning:** {w}." for w in cmp["warnings"]] + ([""] if cmp["warnings"] else [])
    out += ["## A"] + environment(ma)[1:] + ["## B"] + environment(mb)[1:]
    out += ["## Points measured by both", "",
            "| experiment | variant | placement | threads | metric | A median | B median | B / A | p (Welch) | |",
            "|---|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in cmp["rows"]:
        k = r["key"]
        left = f" ({r['skipped']} suspect repeats left out)" if r["skipped"] else ""
        out.append(f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {fmt(r['a']['median'])} {k[5]} ({ci(r['a'])}) | "
                   f"{fmt(r['b']['median'])} {k[5]} ({ci(r['b'])}) | {r['ratio']:.3f} | {'–' if r['p'] != r['p'] else format(r['p'], '.3g')} | {r['sig']}{left} |")
    if cmp.get("relations"):
        cell = lambda x: f"{fmt(x['median_ns'])} ns ({fmt(x['p10_ns'])}–{fmt(x['p90_ns'])}, {x['pairs']} pairs)" if x else "–"  # noqa: E731
        r0 = cmp["relations"][0]
        out += ["", f"## Core-to-core latency by relation (A: {r0['exp_a']}, B: {r0['exp_b']})", "",
                "| relation | A median (p10–p90, pairs) | B median (p10–p90, pairs) | B / A |", "|---|---:|---:|---:|"]
        out += [f"| {r['relation']} | {cell(r['a'])} | {cell(r['b'])} | "
                f"{'–' if r['ratio'] is None else format(r['ratio'], '.2f')} |" for r in cmp["relations"]]
    out += ["", f"{len(cmp['rows'])} points in common; {cmp['only_a']} only in A, {cmp['only_b']} only in B "
            "(placements one host cannot satisfy, or experiments one run did not include).", ""]
    if cmp["noise"]:
        out += ["## Noise per point (not results)", "", "| experiment | variant | placement | threads | metric | A | B |",
                "|---|---|---|---|---|---:|---:|"]
        out += [f"| {k[0]} | {k[1]} | {k[2]} | {k[3]} | {k[4]} | {side(r['a'], k[5])} | {side(r['b'], k[5])} |"
                for r in cmp["noise"] for k in [r["key"]]] + [""]
    return "\n".join(out) + "\n"
