"""`./lab import FILE`: result files written by the real tools on this machine at test time (hyperfine,
a Google Benchmark program built here, pyperf) become run folders whose report says how the command
scales, and which `./lab compare` sets beside the lab's own `./lab scale` of the same command. Hostile
files: one line, exit 2, no run folder, bounded time and memory, nothing run.

No assertion rests on this host's timing: the words may be "inconclusive" on a busy 2-vCPU guest, so
the tests check that the words are there and rest on the imported repeats, not what they conclude."""
import base64
import glob
import hashlib
import json
import os
import resource
import subprocess
import sys

import pytest

from conftest import ROOT, rows, sh
from lab.report import model
from labtest import LabRun, journal

PY = sys.executable
IMPORT = ("-m", "lab.cli.import_run")
GB_SOURCE = r"""
#include <benchmark/benchmark.h>
#include <numeric>
#include <vector>
static void BM_Sum(benchmark::State& state) {
  std::vector<long> v(1 << 14, 1);
  for (auto _ : state) {
    long s = std::accumulate(v.begin(), v.end(), 0L);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations() * v.size());
  state.counters["elements"] = v.size();
}
BENCHMARK(BM_Sum)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK_MAIN();
"""


def run_import(results, *args, check=True, limit=False):
    """import_run.py as a user runs it; limit: under a 2 GiB address-space cap (bounded memory)."""
    cap = (lambda: resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))) if limit else None
    full = dict(os.environ, **results)
    p = subprocess.run([PY, *IMPORT, *args], cwd=ROOT, env=full, capture_output=True, text=True, timeout=120,
                       preexec_fn=cap)
    if check and p.returncode != 0:
        raise AssertionError(f"import exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def only_run(results):
    runs = [r for r in glob.glob(os.path.join(results["LAB_RESULTS"], "*")) if os.path.isdir(r)]
    assert len(runs) == 1, runs
    return runs[0]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A folder with a 1.5 MB text file for `sort --parallel={threads}` to sort."""
    d = tmp_path_factory.mktemp("imports")
    rnd = subprocess.run(["head", "-c", "1100000", "/dev/urandom"], capture_output=True, check=True).stdout
    (d / "input.txt").write_text(base64.b64encode(rnd).decode())
    return d


def sort_cmd(work, threads):
    return ["sort", f"--parallel={threads}", "-S", "8M", str(work / "input.txt"), "-o", "/dev/null"]


@pytest.fixture(scope="module")
def hyperfine_file(work):
    out = work / "hyperfine.json"
    subprocess.run(["hyperfine", "-N", "-w", "1", "-r", "3", "-P", "threads", "1", "2", "--export-json", str(out),
                    " ".join(sort_cmd(work, "{threads}"))], check=True, capture_output=True)
    return str(out)


@pytest.fixture(scope="module")
def gbench_binary(work):
    src = work / "sum.cc"
    src.write_text(GB_SOURCE)
    exe = work / "sum"
    subprocess.run(["g++", "-O2", str(src), "-o", str(exe), "-lbenchmark", "-lpthread"], check=True)
    return str(exe)


@pytest.fixture(scope="module")
def gbench_file(work, gbench_binary):
    out = work / "gbench.json"
    p = subprocess.run([gbench_binary, "--benchmark_repetitions=3", "--benchmark_min_time=0.01",
                        "--benchmark_format=json"], check=True, capture_output=True, text=True)
    out.write_text(p.stdout)
    return str(out)


@pytest.fixture(scope="module")
def pyperf_file(work):
    out = work / "pyperf.json"
    for t in (1, 2):
        subprocess.run([PY, "-m", "pyperf", "command", "--quiet", "--processes", "3", "--values", "1", "--warmups",
                        "0", "--loops", "1", "--append", str(out), "--name", f"sort threads={t}", "--",
                        *sort_cmd(work, t)], check=True, capture_output=True)
    return str(out)


@pytest.fixture(scope="module")
def lab_sort(work, tmp_path_factory):
    """The lab's own `./lab scale` of the same sort command, experiment `sortp`."""
    res = {"LAB_RESULTS": str(tmp_path_factory.mktemp("lab-sort"))}
    spec = tmp_path_factory.mktemp("spec") / "sortp.spec"
    LabRun(env=res, measures=True).scale("threads=1 2", "placements=unpinned", "repeats=3", "retries=0", "warmup=0",
                                         f"save={spec}", "--", *sort_cmd(work, "{threads}"))
    return only_run(res)


def points(run):
    (e,) = model.build(run).experiments
    return e, {(p.variant, p.threads, p.metric): p for p in e.points}


def check_imported(run, path, fmt, metric, n_repeats):
    """The run folder of an import: tidy rows, record, journal, report with the scaling words."""
    rec = json.load(open(os.path.join(run, "env", "imported.json")))
    assert rec["format"] == fmt
    assert rec["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert open(os.path.join(run, "sweep", "state")).read().strip() == "imported"
    (ev,) = journal(run)
    assert ev["event"] == "imported" and ev["sha256"] == rec["sha256"]
    e, pts = points(run)
    for t in ("1", "2"):
        assert pts[("", t, metric)].summary.n == n_repeats
    sc = e.scaling
    assert sc and sc.metric == metric and {r.threads for r in sc.rows} == {1, 2}
    two = next(r for r in sc.rows if r.threads == 2)
    # the speedup is the lab's formula over the imported medians
    s1, s2 = pts[("", "1", metric)].summary.median, pts[("", "2", metric)].summary.median
    assert two.speedup == pytest.approx(s1 / s2 if sc.better == "lower" else s2 / s1)
    report = open(os.path.join(run, "report.md")).read()
    assert "How it scales" in report and "efficiency" in report
    # the head names the tool's file it came from (not a c2c matrix's "published matrix")
    assert f"Imported {rec['source']}, not measured here" in report and "published matrix" not in report
    assert os.path.exists(os.path.join(run, "plots", f"{e.name}-speedup-{metric}.png"))
    return e, pts


def compare_rows(a, b, metric):
    p = sh("python3", "-m", "lab.cli.compare", a, b, os.path.join(os.path.dirname(a), "cmp.md"))
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("| sortp ") or ln.startswith("| sum ")]
    return [ln for ln in lines if f"| {metric} |" in ln]


# --- the three tools ------------------------------------------------------------------------------------
def test_hyperfine_import_scales_and_compares_with_lab_scale(hyperfine_file, lab_sort, results):
    p = run_import(results, hyperfine_file, "name=sortp")
    run = only_run(results)
    assert "How sortp scales (wall_s, lower is better" in p.stdout
    os.remove(os.path.join(run, "report.md"))
    sh("python3", "-m", "lab.cli.charts", run)           # `./lab report RUN` on the imported run, as on any run
    sh("python3", "-m", "lab.cli.report", run)
    e, pts = check_imported(run, hyperfine_file, "hyperfine", "wall_s", 3)
    doc = json.load(open(hyperfine_file))
    for r in doc["results"]:     # every time is a repeat, unchanged
        got = sorted(x.value for x in pts[("", r["parameters"]["threads"], "wall_s")].repeats)
        assert got == sorted(r["times"])
        assert pts[("", r["parameters"]["threads"], "cpu_user_s")].summary.median == pytest.approx(r["user"])
    rec = json.load(open(os.path.join(run, "env", "imported.json")))
    assert rec["exit_codes"] == {"t1": {"0": 3}, "t2": {"0": 3}}
    rows_ = compare_rows(run, lab_sort, "wall_s")
    assert len(rows_) == 2, rows_           # t1 and t2 of both runs side by side


def test_gbench_import_takes_runs_not_aggregates(gbench_file, gbench_binary, work, tmp_path_factory, results):
    run_import(results, gbench_file, "name=sum")
    run = only_run(results)
    e, pts = check_imported(run, gbench_file, "gbench", "items_per_second", 3)
    doc = json.load(open(gbench_file))
    raw = [b for b in doc["benchmarks"] if b.get("run_type") == "iteration"]
    for t in (1, 2):
        mine = sorted(x.value for x in pts[("", str(t), "real_time")].repeats)
        assert mine == sorted(b["real_time"] for b in raw if b["threads"] == t)
        assert pts[("", str(t), "real_time")].unit == raw[0]["time_unit"]
        assert pts[("", str(t), "elements")].summary.n == 3          # a user counter is a metric
    assert not any("mean" in k[2] or "median" in k[2] for k in pts)
    ctx = json.load(open(os.path.join(run, "env", "gbench-context.json")))
    assert ctx["num_cpus"] == doc["context"]["num_cpus"]
    assert "num_cpus=" in open(os.path.join(run, "env", "imported-machine.txt")).read()
    # the lab's own scale of the same binary, reading items_per_second from its JSON output
    lab = {"LAB_RESULTS": str(tmp_path_factory.mktemp("lab-sum"))}
    spec = tmp_path_factory.mktemp("spec") / "sum.spec"
    sh("python3", "-m", "lab.cli.scale", "threads=1 2", "placements=unpinned", "repeats=3", "retries=0", "warmup=0",
       f"save={spec}", 'metric=items_per_second:"items_per_second": ([0-9.e+]+):1/s:higher', "--", gbench_binary,
       "--benchmark_filter=threads:{threads}$", "--benchmark_min_time=0.01", "--benchmark_format=json", env=lab)
    assert len(compare_rows(run, only_run(lab), "items_per_second")) == 2


def test_pyperf_import_and_compare(pyperf_file, lab_sort, results):
    run_import(results, pyperf_file, "name=sortp", f"run={results['LAB_RESULTS']}/mine")
    run = only_run(results)
    assert os.path.basename(run) == "mine"
    e, pts = check_imported(run, pyperf_file, "pyperf", "wall_s", 3)
    doc = json.load(open(pyperf_file))
    for b in doc["benchmarks"]:
        t = b["metadata"]["name"].split("=")[1]
        values = sorted(v for r in b["runs"] for v in r.get("values", []))
        assert sorted(x.value for x in pts[("", t, "wall_s")].repeats) == values
    machine = open(os.path.join(run, "env", "imported-machine.txt")).read()
    assert f"cpu_count={doc['metadata']['cpu_count']}" in machine
    assert len(compare_rows(run, lab_sort, "wall_s")) == 2


def test_replay_refuses_an_imported_run(hyperfine_file, results, tmp_path):
    run_import(results, hyperfine_file)
    run = only_run(results)
    sh("python3", "-m", "lab.cli.archive", "pack", run, env=results)
    (archive,) = glob.glob(os.path.join(results["LAB_RESULTS"], "*.tar.gz"))
    p = sh("python3", "-m", "lab.cli.archive", "replay", archive, env=results, check=False)
    assert p.returncode == 2 and "imported from hyperfine JSON file" in p.stderr and "./lab scale" in p.stderr


@pytest.mark.slow   # hyperfine measures sort, in the test itself
def test_threads_key_names_the_parameter(work, results, tmp_path):
    out = tmp_path / "jobs.json"
    subprocess.run(["hyperfine", "-N", "-r", "2", "-L", "w", "1,2", "-L", "size", "4M,8M", "--export-json", str(out),
                    f"sort --parallel={{w}} -S {{size}} {work / 'input.txt'} -o /dev/null"], check=True,
                   capture_output=True)
    p = run_import(results, str(out), check=False)
    assert p.returncode == 0     # no thread parameter by its name: every command is threads 1, variants w=…,size=…
    run = only_run(results)
    got = {(r["variant"], r["threads"]) for r in rows(glob.glob(os.path.join(run, "data", "*.csv"))[0])}
    assert ("size=4M,w=2", "1") in got
    res2 = {"LAB_RESULTS": str(tmp_path / "r2")}
    os.makedirs(res2["LAB_RESULTS"])
    run_import(res2, str(out), "threads=w")
    got = {(r["variant"], r["threads"]) for r in rows(glob.glob(os.path.join(only_run(res2), "data", "*.csv"))[0])}
    assert got == {("size=4M", "1"), ("size=4M", "2"), ("size=8M", "1"), ("size=8M", "2")}
    p = run_import(res2, str(out), "threads=nope", check=False)
    assert p.returncode == 2 and "no parameter named 'nope'" in p.stderr


# --- hostile files --------------------------------------------------------------------------------------
def hf(results_list):
    return json.dumps({"results": results_list})


HOSTILE = [
    ("not-a-format", json.dumps({"a": 1}), "not a result file this lab reads"),
    ("not-json", "this is text", "not JSON"),
    ("not-utf8", b"\xff\xfe{}", "not UTF-8"),
    ("wrong-type", hf([{"command": "x", "times": ["1"]}]), "results[0].times[0]: expected a number"),
    ("nan", '{"results": [{"command": "x", "times": [NaN]}]}', "NaN is not a finite number"),
    ("infinity", '{"results": [{"command": "x", "times": [1e999]}]}', "not a finite number"),
    ("negative", hf([{"command": "x", "times": [-1.0]}]), "not a non-negative measurement"),
    ("duplicate", hf([{"command": "x", "times": [1.0], "parameters": {"threads": "2"}}] * 2), "the same point"),
    ("bad-threads", hf([{"command": "x", "times": [1.0], "parameters": {"threads": "two"}}]), "not a whole number"),
    ("pyperf-version", json.dumps({"version": "9.9", "benchmarks": [], "metadata": {}}), "pyperf JSON version"),
    ("gbench-version", json.dumps({"context": {"json_schema_version": 7}, "benchmarks": []}),
     "Google Benchmark JSON version"),
    ("lab-version", json.dumps({"format": "scaling-lab run", "format_version": 99}), "run-format version"),
    ("deep", "[" * 100_000 + "]" * 100_000, "nested too deeply"),
]


@pytest.mark.parametrize("name, text, says", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_file_is_one_line_exit_2_no_run(name, text, says, tmp_path, results):
    path = tmp_path / f"{name}.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    p = run_import(results, str(path), check=False, limit=True)
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and p.stderr.startswith(f"{path}:"), p.stderr
    assert says in p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_a_million_commands_and_a_sparse_gigabyte_are_refused_unread(tmp_path, results):
    many = tmp_path / "many.json"
    with open(many, "w") as f:
        f.write('{"results": [' + ",".join(['{"command":"x","times":[1]}'] * 1_000_000) + "]}")
    big = tmp_path / "big.json"
    subprocess.run(["truncate", "-s", "1G", str(big)], check=True)
    for path, says in ((many, "objects"), (big, "over the 64 MiB")):
        p = run_import(results, str(path), check=False, limit=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and says in p.stderr, p.stderr
    assert os.listdir(results["LAB_RESULTS"]) == []


def test_names_are_data_escaped_on_page_and_terminal(tmp_path, results):
    """Control characters, HTML and gnuplot syntax in a command's name reach report.html escaped, the
    terminal visible, gnuplot as data: nothing runs (a `system` call would create the marker file)."""
    marker = tmp_path / "pwned"
    evil = f'<script>alert(1)</script>\x1b]0;title\x07\n"; system("touch {marker}"); print "'
    doc = {"results": [{"command": evil, "times": [0.1, 0.11, 0.12], "parameters": {"threads": str(t), "mode": evil}}
                       for t in (1, 2)]}
    path = tmp_path / "evil.json"
    path.write_text(json.dumps(doc))
    p = run_import(results, str(path))
    run = only_run(results)
    assert not marker.exists()
    assert "\x1b" not in p.stdout + p.stderr
    html = open(os.path.join(run, "report.html")).read()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    data = rows(os.path.join(run, "data", "sh.csv")) if os.path.exists(os.path.join(run, "data", "sh.csv")) else \
        rows(glob.glob(os.path.join(run, "data", "*.csv"))[0])
    assert {r["variant"] for r in data} == {f"mode={evil}"}


def test_gbench_aggregates_only_gives_the_median_as_one_repeat(gbench_binary, tmp_path, results):
    out = tmp_path / "agg.json"
    subprocess.run([gbench_binary, "--benchmark_repetitions=3", "--benchmark_min_time=0.01",
                    "--benchmark_report_aggregates_only=true", f"--benchmark_out={out}",
                    "--benchmark_out_format=json"], check=True, capture_output=True)
    run_import(results, str(out))
    run = only_run(results)
    _e, pts = points(run)
    doc = json.load(open(out))
    for t in (1, 2):
        (med,) = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median" and b["threads"] == t]
        assert [x.value for x in pts[("", str(t), "real_time")].repeats] == [med["real_time"]]
    assert json.load(open(os.path.join(run, "env", "imported.json")))["aggregates_only"]


def test_hyperfine_memory_and_failed_runs(hyperfine_file, tmp_path, results):
    """hyperfine >= 1.16 writes memory_usage_byte per run (this machine's 1.15 does not: added to its real
    file), and -i keeps runs that failed: their repeats are suspect, the exit code said."""
    doc = json.load(open(hyperfine_file))
    for r in doc["results"]:
        r["memory_usage_byte"] = [4096 * (i + 1) for i in range(len(r["times"]))]
        r["exit_codes"] = [0] * (len(r["times"]) - 1) + [3]
    path = tmp_path / "mem.json"
    path.write_text(json.dumps(doc))
    run_import(results, str(path))
    _e, pts = points(only_run(results))
    assert [x.value for x in pts[("", "1", "max_rss_kib")].repeats] == [4.0, 8.0, 12.0]
    assert pts[("", "2", "wall_s")].summary.suspect == "r3: exit code 3 (kept by hyperfine -i)"
