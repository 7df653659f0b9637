"""report.html and compare.html rendered in a real headless Chromium, as a person would check them:
no console error, no network request, every chart visible and non-empty, one verdict row per seed
story present, suspect points marked with their reason, every point traceable to its raw folder
and command. Screenshots: results/test-screens/ (kept for review).

The run folders come from a real sweep (tests/fixtures/spin.spec and the channel probe's smoke
profile). FIXTURE INPUT, written by follow_contract() below only where the engine does not produce it
yet: sweep/journal.jsonl (from the raw folders and journal.log), the guard rows (noise_*), one suspect
repeat with a re-measured event, and env/build.txt."""
import csv
import json
import os
import re
import shutil

import pytest
from browser import Browser, chromium
from conftest import ROOT, sh

SCREENS = os.path.join(ROOT, "results", "test-screens")
SUSPECT = ("spin", "loop", "compact", "2", "2")          # experiment variant placement threads repeat
SUSPECT_WHY = "steal 31% > 10%; foreign 40% > 20%"


def sweep(results, run, *args):
    env = dict(results, PATH=os.path.join(ROOT, ".work", "tools", "bin") + os.pathsep + os.environ["PATH"])
    sh("scripts/sweep.sh", f"run={run}", "profile=smoke", "repeats=3", *args, env=env)


def spec_command(run, exp):
    cmd = {}
    for line in open(os.path.join(run, "sweep", "specs", f"{exp}.spec")):
        k, _, v = line.partition("=")
        cmd[k.strip()] = v.strip()
    return cmd.get("command[smoke]") or cmd["command"]


def follow_contract(run):
    """FIXTURE INPUT: make an old-engine run folder look like the new engine's (see module doc)."""
    events = [{"ts": "2026-01-01T00:00:00Z", "event": "sweep", "args": ["fixture"], "profile": "smoke"}]
    for line in open(os.path.join(run, "sweep", "journal.log")):
        m = re.match(r"\S+ (\S+): skip (\S+) threads=(\S+): (.*)$", line.strip())
        if m:
            events.append({"ts": "2026-01-01T00:00:01Z", "event": "skipped", "experiment": m[1],
                           "placement": m[2], "threads": m[3], "reason": m[4]})
    for data in sorted(os.listdir(os.path.join(run, "data"))):
        if not data.endswith(".csv"):
            continue
        exp = data[:-4]
        path = os.path.join(run, "data", data)
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
        repeats = {(r["variant"], r["placement"], r["threads"], r["cpus"], r["repeat"]) for r in rows}
        for v, p, t, cpus, rep in sorted(repeats):
            suspect = (exp, v, p, t, rep) == SUSPECT
            for r in rows:
                if (r["variant"], r["placement"], r["threads"], r["cpus"], r["repeat"]) == (v, p, t, cpus, rep):
                    r["suspect"] = SUSPECT_WHY if suspect else ""
            for metric, value, unit in (("noise_steal_pct", 31 if suspect else 2, "%"),
                                        ("noise_foreign_pct", 40 if suspect else 3, "%"),
                                        ("noise_invol_cs", 90 if suspect else 5, "1/s")):
                rows.append(dict(rows[0], variant=v, placement=p, threads=t, cpus=cpus, repeat=rep,
                                 metric=metric, value=value, unit=unit, suspect=SUSPECT_WHY if suspect else ""))
            key = f"{v}_{p}_t{t}_r{rep}"
            cmd = spec_command(run, exp).replace("{threads}", t).replace("{variant}", v).replace(
                "{cpus}", cpus).replace("{pinned}", "0" if p == "unpinned" else "1")
            point = {"experiment": exp, "variant": v, "placement": p, "threads": int(t), "cpus": cpus,
                     "repeat": int(rep), "key": key, "command": cmd}
            events.append(dict(point, ts="2026-01-01T00:00:02Z", event="planned"))
            if suspect:
                events.append(dict(point, ts="2026-01-01T00:00:03Z", event="remeasured", attempt=1,
                                   reason="steal 35% > 10%"))
            events.append(dict(point, ts="2026-01-01T00:00:04Z", event="done", seconds=1,
                               noise={"steal_pct": 31 if suspect else 2, "foreign_pct": 40 if suspect else 3,
                                      "invol_cs": 5, "mhz": None}))
            if suspect:
                events.append(dict(point, ts="2026-01-01T00:00:05Z", event="suspect", reason=SUSPECT_WHY))
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, list(rows[0].keys()), lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
    events.append({"ts": "2026-01-01T00:00:06Z", "event": "end", "state": "complete"})
    journal = os.path.join(run, "sweep", "journal.jsonl")
    if not os.path.exists(journal):          # the engine's own journal wins once it writes one
        with open(journal, "w") as f:
            f.writelines(json.dumps(e) + "\n" for e in events)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if not chromium():
        if os.environ.get("IN_NIX_SHELL"):
            pytest.skip("chromium is not in the Nix shell; ./lab test (Debian path) installs it")
        pytest.fail("chromium is not installed: ./lab test installs it (test_packages in ./lab)")
    tmp = tmp_path_factory.mktemp("html")
    results = {"LAB_RESULTS": str(tmp / "results")}
    os.makedirs(results["LAB_RESULTS"])
    a, b = tmp / "a", tmp / "b"
    sweep(results, a, "placements=compact same-l3", "tests/fixtures/spin.spec", "experiments/channel.spec")
    sweep(results, b, "placements=compact", "tests/fixtures/spin.spec")
    for run, flags in ((a, "-O2"), (b, "-O3")):
        follow_contract(str(run))
        (run / "env" / "build.txt").write_text(f"c-probes: gcc 12.2.0 {flags}\n")   # FIXTURE INPUT
        sh("scripts/report.py", str(run))
    sh("scripts/compare.py", str(a), str(b), str(tmp / "cmp.md"))
    browser = Browser()
    yield {"a": a, "b": b, "cmp": tmp / "cmp.html", "browser": browser}
    browser.close()


def stories_present(run):
    with open(os.path.join(ROOT, "reference", "stories.csv"), newline="") as f:
        return [s["source"] for s in csv.DictReader(f)
                if any(os.path.exists(os.path.join(run, "data", f"{x}.csv")) for x in s["experiments"].split())]


# A chart is an inline SVG with data marks, or (a matrix over many CPUs) an inlined PNG that decoded.
CHART_CHECK = """Array.from(document.querySelectorAll('.chart')).map(function(s){var r=s.getBoundingClientRect();
return {w:r.width,h:r.height,marks:s.tagName==='IMG'?(s.complete&&s.naturalWidth>0?1:0):s.querySelectorAll('.pt,.bar,.cell').length,
visible:getComputedStyle(s).visibility!=='hidden'&&getComputedStyle(s).display!=='none'};})"""


def check_page(browser, page, shot):
    browser.load(page)
    os.makedirs(SCREENS, exist_ok=True)
    browser.screenshot(os.path.join(SCREENS, shot))
    assert browser.errors() == []
    # only the page itself; an inlined image (data:) is no request to anywhere
    assert [u for u in browser.requests() if u != "file://" + os.path.abspath(page) and not u.startswith("data:")] == []
    charts = browser.eval(CHART_CHECK)
    assert charts, "no chart on the page"
    for c in charts:
        assert c["visible"] and c["w"] > 200 and c["h"] > 100 and c["marks"] > 0, c
    return charts


def test_report_html_in_a_browser(runs):
    a, br = runs["a"], runs["browser"]
    page = str(a / "report.html")
    text = open(page).read()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), "the page must not fetch anything"
    charts = check_page(br, page, "report.png")
    # spin: scaling + bars; channel: two bar charts (every chart the specs ask for and the data has)
    assert len(charts) == 4
    rows = br.eval("Array.from(document.querySelectorAll('#verdicts tbody tr')).map(r=>r.cells[0].textContent)")
    expected = stories_present(str(a))
    assert expected == ["seed-004"] and [r[:len("seed-004")] for r in rows] == expected
    verdict = br.eval("document.querySelector('#verdicts tbody tr .v').textContent")
    assert verdict in ("yes", "no", "inconclusive", "mixed")
    # the suspect repeat: hollow in the charts, listed with its reason, its re-measure listed too
    assert br.eval("document.querySelectorAll('svg .sus').length") >= 2       # iters_per_s and loop_ns
    body = br.eval("document.body.innerText")
    assert f"suspect: loop compact t2 iters_per_s — r2: {SUSPECT_WHY}" in body
    assert "re-measured: loop compact t2 r2 attempt 1: steal 35% > 10%" in body
    assert "skipped: same-l3 threads=1" in body or "skipped" not in open(a / "sweep" / "journal.log").read()
    # noise rows are no result: not at a glance, but in their own folded table
    glance = br.eval("Array.from(document.querySelectorAll('h3')).filter(h=>h.textContent=='At a glance')"
                     ".map(h=>h.nextElementSibling.innerText).join(' ')")
    assert "iters_per_s" in glance and "noise_" not in glance
    assert "noise per point" in body
    # every point row links its raw folders and shows the command it ran
    raw_links = br.eval("Array.from(document.querySelectorAll('a[href^=\"raw/spin/\"]')).map(a=>a.getAttribute('href'))")
    assert "raw/spin/loop_compact_t2_r2/" in raw_links
    assert all(os.path.isdir(a / h) for h in raw_links)
    assert "tests/fixtures/spin.sh 2 20000" in br.eval("document.documentElement.innerHTML")
    # a chart point leads to its row, and the row opens
    br.eval("location.hash = document.querySelector('svg a').getAttribute('href')")
    assert br.eval("(function(){var r=document.getElementById(location.hash.slice(1));"
                   "return !!r && r.closest('details').open;})()")
    assert "c-probes: gcc 12.2.0 -O2" in body
    # a click on a column header sorts the table by it
    medians = br.eval("""(function(){var t=document.querySelector('#exp-spin details table.sortable');
        var th=Array.from(t.tHead.rows[0].cells).find(c=>c.textContent.startsWith('median')); th.click();
        return Array.from(t.tBodies[0].rows).map(r=>parseFloat(r.cells[th.cellIndex].dataset.v));})()""")
    assert len(medians) == 6 and medians == sorted(medians)


def test_compare_html_in_a_browser(runs):
    br = runs["browser"]
    charts = check_page(br, str(runs["cmp"]), "compare.png")
    assert len(charts) == 2                     # spin's two charts; channel is only in A
    legends = br.eval("Array.from(document.querySelectorAll('svg.chart')).map(s=>s.textContent)")
    assert all("A loop" in t and "B loop" in t for t in legends)
    body = br.eval("document.body.innerText")
    assert "differently built code" in body and "-O2" in body and "-O3" in body
    assert "suspect repeats left out" in body
    rows = br.eval("document.querySelectorAll('table.sortable tbody tr').length")
    assert rows >= 6
    assert "noise per point" in body


def test_screenshots_kept(runs):
    for name in ("report.png", "compare.png"):
        path = os.path.join(SCREENS, name)
        assert os.path.getsize(path) > 20000
        with open(path, "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    shutil.copy(runs["a"] / "report.md", os.path.join(SCREENS, "report.md"))
