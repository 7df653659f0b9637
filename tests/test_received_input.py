"""What a received run folder, result file or archive can make the lab read, print or spend (issue 55):
every reader of a received run goes through runfolder's safe reader, every value derived from received
cells is checked, every refusal is one line and exit 2 with nothing left behind. Each test's set-up is
the reproduction; none needs a sweep (the run folders are written here, as a sender would), and none
harms the host: FIFOs and sparse files live in tmp_path, and a /dev/zero link is refused before it is read."""
import ast
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, in_process, sh, source_opens
from labtest import TWO_NODES, numa_run

HEADER = "run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit,suspect"
SPEC = "experiment = spin\ncommand = true\nchart = scaling wall_s\nchart = speedup wall_s\n"


def lab_run(tmp_path, name="run", placement="compact", values=None):
    """A run folder of experiment spin as a sweep leaves it (data, spec snapshot, state), written by hand:
    wall_s at 1, 2, 4 and 8 threads, three repeats each."""
    run = tmp_path / name
    for d in ("data", "plots", "env", "sweep/specs", "raw/spin"):
        (run / d).mkdir(parents=True, exist_ok=True)
    values = values or {t: [1.0 / t + 0.01 * i for i in (1, 2, 3)] for t in (1, 2, 4, 8)}
    lines = [HEADER] + [f'r,spin,v,"{placement}",{t},"0",{i},wall_s,{x!r},s,'
                        for t, xs in values.items() for i, x in enumerate(xs, 1)]
    (run / "data" / "spin.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "spin.spec").write_text(SPEC)
    (run / "sweep" / "state").write_text("complete\n")
    return run


def refused(p, name, says=""):
    """One line naming `name` (and saying `says`) on stderr, exit 2, no traceback."""
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    hits = [ln for ln in p.stderr.splitlines() if name in ln]
    assert len(hits) == 1 and says in hits[0], p.stderr


def program(results, module, *args, timeout=60):
    """A program as a user runs it (its own process: a FIFO it would wait on ends with the timeout)."""
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ, **results))


def no_runs(results):
    return [d for d in os.listdir(results["LAB_RESULTS"])] == []


# --- FIFOARG: a file named on the command line is a regular file ------------------------------------------
@pytest.mark.parametrize("module", ["lab.cli.import_run", "lab.cli.usl", "lab.cli.import_c2c"])
def test_a_fifo_or_a_dev_zero_link_given_as_the_file_is_refused_not_waited_on(tmp_path, results, module):
    fifo = tmp_path / "numbers"
    os.mkfifo(fifo)
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    extra = ["topology=pack:1 core:2 pu:1"] if module.endswith("c2c") else []
    for path in (fifo, zero):
        p = program(results, module, path, *extra, timeout=30)
        refused(p, str(path), "not a regular file")
    assert no_runs(results)


# --- BIGINT: a 400-digit integer in any importer ------------------------------------------------------------
BIG = "9" * 400
BIGINT_FILES = {
    "hyperfine": '{"results": [{"command": "x", "times": [%s]}]}' % BIG,
    "gbench": '{"context": {"executable": "b"}, "benchmarks": [{"name": "BM/threads:1", "run_type": "iteration",'
              ' "real_time": %s, "time_unit": "ns", "threads": 1}]}' % BIG,
    "pyperf": '{"version": "1.0", "metadata": {}, "benchmarks": [{"metadata": {"name": "b"}, "runs": '
              '[{"values": [%s]}]}]}' % BIG,
    "labrun": '{"format": "scaling-lab run", "format_version": 1, "experiments": [{"name": "e", "points": '
              '[{"variant": "", "placement": "", "cpus": "", "metric": "m", "unit": "s", "threads": 1, '
              '"repeats": [{"repeat": 1, "value": %s}]}]}]}' % BIG,
}


@pytest.mark.parametrize("fmt", sorted(BIGINT_FILES))
def test_a_400_digit_integer_in_any_importer_is_one_line(tmp_path, results, fmt):
    path = tmp_path / f"{fmt}.json"
    path.write_text(BIGINT_FILES[fmt])
    p = program(results, "lab.cli.import_run", path)
    refused(p, str(path), "not a measurement")
    assert no_runs(results)


# --- I1B: a published matrix's cell beyond what the tidy reader takes -----------------------------------------
def test_a_matrix_cell_of_1e300_is_the_tidy_rule_and_leaves_no_folder(tmp_path, results):
    m = tmp_path / "m.csv"
    m.write_text(",,\n20,,\n90,1e300,\n")
    p = program(results, "lab.cli.import_c2c", m, "topology=pack:1 core:3 pu:1")
    refused(p, f"{m}:3", "beyond")
    assert no_runs(results)


# --- IMPORTREC: the import writes only what its readers take, and a failure after writing leaves nothing ------
def test_a_long_host_name_and_20_by_20000_runs_import_and_read_back(tmp_path, results):
    cpu = "C" * 2000
    doc = {"context": {"executable": "b", "host_name": "h" * 2000, "cpu_model_name": cpu},
           "benchmarks": [{"name": f"BM/threads:{t}", "run_type": "iteration", "real_time": 10.0 / t,
                           "time_unit": "ns", "threads": t} for t in (1, 2)]}
    path = tmp_path / "long.json"
    path.write_text(json.dumps(doc))
    p = program(results, "lab.cli.import_run", path, timeout=120)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    # a real-shaped hyperfine file of 20 commands × 20,000 runs: its record is written and read back (the
    # import's charts and report of 400,000 rows are another bound's, not this test's)
    from lab import imports
    from lab.core.runfolder import import_record
    from lab.imports.runwriter import write_run
    hf = {"results": [{"command": "x", "parameters": {"threads": str(t)}, "times": [0.001] * 20_000,
                       "exit_codes": [0] * 20_000} for t in range(1, 21)]}
    path = tmp_path / "many.json"
    path.write_text(json.dumps(hf))
    dest = write_run(str(tmp_path / "many"), imports.read(str(path)), str(path))
    assert import_record(dest)["exit_codes"]["t20"] == {"0": 20_000}      # the lab's own reader takes it
    assert import_record(next(os.scandir(results["LAB_RESULTS"])).path)["host"].startswith("hhh")


def test_an_import_whose_drawing_fails_after_writing_removes_its_folder(tmp_path, results, monkeypatch, capsys):
    """The last step of an import (front.draw: its charts and report) refusing the new folder: the folder
    goes, and the refusal is one line (before, the folder was left behind)."""
    from lab.cli import import_run
    from lab.report import front

    def refuse(run, *a, **k):
        raise front.Unreadable(f"{run.path}/data/x.csv:2: refused as a test")
    monkeypatch.setattr(front, "draw", refuse)
    monkeypatch.setenv("LAB_RESULTS", results["LAB_RESULTS"])
    path = tmp_path / "hf.json"
    path.write_text(json.dumps({"results": [{"command": "x", "times": [0.1, 0.2]}]}))
    assert import_run.main([str(path)]) == 2        # its BadInput, said as the program says it
    err = capsys.readouterr().err
    assert "no run folder left" in err and err.count("\n") == 1 and no_runs(results)


# --- USL, USLZERO: no fit, with the reason ------------------------------------------------------------------
def test_usl_of_values_far_apart_is_no_fit_and_a_bom_is_not_part_of_the_header(tmp_path):
    far = tmp_path / "far.csv"
    far.write_text("threads,throughput\n1,1e-300\n2,1e18\n4,3.5\n8,6\n")
    p = in_process("lab.cli.usl", far)
    assert p.stdout.startswith("no fit: ") and "apart" in p.stdout, p.stdout + p.stderr
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbfthreads,throughput\n1,1\n2,1.9\n4,3.5\n8,6\n")
    p = in_process("lab.cli.usl", bom)
    assert p.stdout.startswith("sigma "), p.stdout + p.stderr


@pytest.mark.parametrize("wall", ["0", "-1.5"])
def test_a_curve_with_a_zero_or_negative_wall_time_reports_no_fit(tmp_path, wall):
    run = lab_run(tmp_path, values={1: [1.0, 1.1, 0.9], 2: [0.6, float(wall), 0.5], 4: [0.3] * 3, 8: [0.2] * 3})
    p = in_process("lab.cli.report", run, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "no fit: " in (run / "report.md").read_text()


# --- SPEC: a run's spec snapshot through the safe reader ---------------------------------------------------
def hostile_spec(tmp_path, run, how):
    spec = run / "sweep" / "specs" / "spin.spec"
    spec.unlink()
    if how == "fifo":
        os.mkfifo(spec)
    elif how == "dev-zero":
        spec.symlink_to("/dev/zero")
    elif how == "outside":
        secret = tmp_path / "secret.txt"
        secret.write_text("SECRET-FIRST-LINE = x\n")
        spec.symlink_to(secret)
    else:
        with open(spec, "wb") as f:
            f.truncate(64 << 20)         # 64 MiB of hole, over the cap (a sender used 3 GiB: MemoryError)
    return spec


@pytest.mark.parametrize("how", ["fifo", "dev-zero", "outside", "sparse"])
def test_a_spec_snapshot_that_is_no_regular_file_of_the_run_is_refused_in_one_line(tmp_path, results, how):
    other = lab_run(tmp_path, "other")
    run = lab_run(tmp_path)
    hostile_spec(tmp_path, run, how)
    for module, args in (("lab.cli.report", [run]), ("lab.cli.charts", [run]),
                         ("lab.cli.compare", [other, run, tmp_path / "cmp.md"])):
        p = program(results, module, *args, timeout=60)
        refused(p, "spin.spec")
        assert "SECRET" not in p.stdout + p.stderr


# --- DUMP: a foreign spec is shown in part -------------------------------------------------------------------
def test_a_replay_shows_a_few_kb_of_a_foreign_spec_and_says_what_it_left_out(tmp_path, results):
    import tarfile
    run = lab_run(tmp_path, "theirs")
    (run / "sweep" / "args.json").write_text(json.dumps({"profile": "default", "perf": 0, "overrides": {},
                                                          "experiments": ["evil"]}))
    (run / "sweep" / "specs" / "evil.spec").write_text("experiment = evil\n" + "command = true\n" * 50_000)
    with tarfile.open(tmp_path / "theirs.tar.gz", "w:gz") as t:
        t.add(run, arcname="theirs")
    p = program(dict(results, LAB_SPECS="tests/fixtures"), "lab.cli.archive", "replay", tmp_path / "theirs.tar.gz")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "    experiment = evil" in p.stderr and "more lines, not shown" in p.stderr
    assert len(p.stderr) < 16_000, len(p.stderr)


# --- PERFTOP: a point's perf summary through the safe reader ---------------------------------------------------
@pytest.mark.parametrize("how", ["file-link", "folder-link", "sparse"])
def test_a_perf_top_that_is_a_link_or_huge_is_refused_not_pasted(tmp_path, how):
    run = lab_run(tmp_path)
    secret = tmp_path / "id_rsa"
    secret.write_text("SECRET-KEY-MATERIAL\n")
    point = run / "raw" / "spin" / "v_compact_t1_r1"
    if how == "folder-link":
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        (elsewhere / "perf-top.txt").write_text("SECRET-KEY-MATERIAL\n")
        point.symlink_to(elsewhere)
    else:
        point.mkdir()
        if how == "file-link":
            (point / "perf-top.txt").symlink_to(secret)
        else:
            with open(point / "perf-top.txt", "wb") as f:
                f.truncate(64 << 20)     # over the cap (a sender used 3 GiB: MemoryError)
    p = in_process("lab.cli.report", run, check=False)
    refused(p, "v_compact_t1_r1" if how == "folder-link" else "perf-top.txt")
    assert "SECRET" not in p.stdout + p.stderr
    assert not (run / "report.md").exists()


def test_a_perf_top_of_the_run_is_still_shown(tmp_path):
    run = lab_run(tmp_path)
    (run / "raw" / "spin" / "v_compact_t1_r1").mkdir()
    (run / "raw" / "spin" / "v_compact_t1_r1" / "perf-top.txt").write_text("overhead symbol\n42.0% spin_loop\n")
    in_process("lab.cli.report", run)
    assert "42.0% spin_loop" in (run / "report.md").read_text()
    assert 'raw/spin/v_compact_t1_r1/perf-top.txt"' in (run / "report.html").read_text()


# --- NUMA: env/numa-nodes.txt through the safe reader, digit-bounded ------------------------------------------
@pytest.mark.parametrize("how", ["fifo", "dev-zero", "outside"])
def test_numa_nodes_that_is_no_regular_file_of_the_run_is_refused(tmp_path, results, how):
    run = numa_run(tmp_path, TWO_NODES, [[10, 21], [21, 10]])
    nodes = run / "env" / "numa-nodes.txt"
    nodes.unlink()
    (run / "sweep" / "state").write_text("complete\n")
    if how == "fifo":
        os.mkfifo(nodes)
    elif how == "dev-zero":
        nodes.symlink_to("/dev/zero")
    else:
        outside = tmp_path / "theirs.txt"
        outside.write_text("node0 cpus=0 packages=0 mem_kb=1 distance=77,88\n")
        nodes.symlink_to(outside)
    p = program(results, "lab.cli.report", run, timeout=60)
    refused(p, "numa-nodes.txt")
    assert not (run / "report.md").exists()


def test_a_5000_digit_numa_distance_is_not_read(tmp_path):
    run = numa_run(tmp_path, TWO_NODES, [[10, 21], [21, 10]])
    (run / "sweep" / "state").write_text("complete\n")
    with open(run / "env" / "numa-nodes.txt", "a") as f:
        f.write(f"node2 cpus=4 packages=1 mem_kb=1 distance={'9' * 5000},10\n")
    p = in_process("lab.cli.report", run, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "9999999" not in (run / "report.md").read_text()


# --- META: a why meta.json the evidence reader checks ---------------------------------------------------------
def why_point(run, stem, meta_edit):
    """A point's why folder (tests' own input, as test_claims writes them) with its meta.json edited."""
    from lab.engine.evidence import store as EV
    folder = os.path.join(run, "raw", "spin", f"{stem}_why")
    os.makedirs(folder)
    EV.write_run(folder, 1, oncpu={("spin", "main", "work"): 100}, offcpu={}, futex=[], hotins=[],
                 threads=[{"tid": 1, "comm": "spin", "oncpu_us": 1, "offcpu_us": 1, "runq_us": 0, "voluntary": 0,
                           "involuntary": 0, "migrations": 0, "pid": 1, "parent": 0,
                               "joined": 0}])
    meta = {"runs": 1, "unit": "run", "metric": None, "work": [1], "wall_s": [1.0], "value": [None],
            "timed_median": None, "slowdown": None, "sample": {"event": "cpu-clock", "hz": 999},
            "evidence": {k: "ok" for k in ("oncpu", "offcpu", "futex", "sched", "hotins", "symbols")}}
    EV.write_meta(folder, meta)
    path = os.path.join(folder, "meta.json")
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(meta_edit(text))
    return folder


def drop_sample(text):
    m = json.loads(text)
    del m["sample"]
    return json.dumps(m)


def set_hz(hz):
    return lambda text: text.replace('"hz": 999', f'"hz": {hz}')


META_EDITS = {"no-sample": drop_sample, "hz-null": set_hz("null"), "hz-zero": set_hz("0"), "hz-nan": set_hz("NaN"),
              "hz-negative": set_hz("-999"),
              "deep": lambda text: text.replace('"hz": 999', '"hz": ' + "[" * 100_000 + "]" * 100_000)}


@pytest.mark.parametrize("edit", sorted(META_EDITS))
def test_a_why_meta_json_of_the_wrong_shape_is_evidence_unreadable(tmp_path, edit):
    from lab.engine.evidence import store as EV
    run = lab_run(tmp_path)
    folders = [why_point(run, f"v_compact_t{t}", META_EDITS[edit]) for t in (1, 2, 4, 8)]
    with pytest.raises(EV.EvidenceError, match="meta.json:1: "):
        EV.read_meta(folders[0])
    p = in_process("lab.cli.report", run, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    text = (run / "report.md").read_text()
    assert "evidence unreadable" in text and "0% of the added cost" not in text


# --- EXPORT: every refusal of ./lab export is one line ------------------------------------------------------
def test_export_refusals_are_one_line_and_a_users_linked_folder_is_written(tmp_path, results):
    run = lab_run(tmp_path)
    secret = tmp_path / "id_rsa"
    secret.write_text("SECRET\n")
    (run / "env" / "build.txt").symlink_to(secret)
    refused(in_process("lab.cli.export", run, check=False), "build.txt")
    (run / "env" / "build.txt").unlink()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    device = tmp_path / "device"            # a link to a FIFO stands in for /dev/null (never replaced here)
    device.symlink_to(fifo)
    for target in (fifo, device):
        refused(in_process("lab.cli.export", run, f"out={target}", check=False), str(target), "not a regular file")
    assert os.path.exists(fifo) and not os.path.isfile(fifo) and device.is_symlink()
    refused(in_process("lab.cli.export", run, f"out={tmp_path / 'missing' / 'x.json'}", check=False), "missing")
    real = tmp_path / "mine"
    real.mkdir()
    (tmp_path / "mylink").symlink_to(real)
    p = in_process("lab.cli.export", run, f"out={tmp_path / 'mylink' / 'run.json'}")
    assert json.loads((real / "run.json").read_text())["format"] == "scaling-lab run", p.stderr
    (run / "plots").rmdir()
    (run / "plots").symlink_to(real)            # a folder of a run that is a link: refused, nothing written
    refused(in_process("lab.cli.export", run, f"out={run / 'plots' / 'x.json'}", check=False), "plots")
    assert not (real / "x.json").exists()


# --- COMPARE: a refusal while comparing is one line ----------------------------------------------------------
def test_compare_with_a_linked_spec_beside_a_same_named_one_is_one_line(tmp_path):
    a, b = lab_run(tmp_path, "a"), lab_run(tmp_path, "b")
    (a / "sweep" / "specs" / "other.spec").write_text("experiment = other\ncommand = true\n")
    (b / "sweep" / "specs" / "other.spec").symlink_to(a / "sweep" / "specs" / "other.spec")
    p = in_process("lab.cli.compare", a, b, tmp_path / "cmp.md", check=False)
    refused(p, "other.spec", "link")


# --- TERM: a run folder's name on the terminal ------------------------------------------------------------
def test_a_run_folder_named_with_escape_sequences_is_shown_not_obeyed(tmp_path):
    name = "run\x1b]0;pwned\x07\x1b[2J"
    run, other = lab_run(tmp_path, name), lab_run(tmp_path, "other")
    outputs = [in_process("lab.cli.report", run), in_process("lab.cli.charts", run),
               in_process("lab.cli.compare", other, run),
               in_process("lab.cli.report", tmp_path / "x\x1b[2J", check=False),
               sh("scripts/open.sh", str(run), env={"DISPLAY": "", "WAYLAND_DISPLAY": ""})]
    for p in outputs:
        assert "\x1b" not in p.stdout + p.stderr and "\x07" not in p.stdout + p.stderr, p
    assert "run\\x1b]0;pwned\\x07" in outputs[0].stderr and "run\\x1b]0;pwned" in outputs[-1].stdout


# --- NUL: a control character in a cell never reaches gnuplot's argv -------------------------------------------
def test_a_nul_in_a_placement_cell_is_drawn_not_a_traceback(tmp_path):
    """Seven variants on two placements: a scaling chart of one panel per placement, whose names travel
    to gnuplot as `-c` arguments."""
    run = lab_run(tmp_path)
    lines = [HEADER] + [f'r,spin,v{v},"{pl}",{t},"0",{i},wall_s,{1.0 / t + 0.01 * i + v},s,'
                        for v in range(7) for pl in ("compact", "spread\x00\x1bx") for t in (1, 2) for i in (1, 2, 3)]
    (run / "data" / "spin.csv").write_text("\n".join(lines) + "\n")
    p = in_process("lab.cli.charts", run, check=False)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert (run / "plots" / "spin-scaling-wall_s.png").stat().st_size > 1000


# --- one way to read a received run: no reader opens a run's file itself ---------------------------------------
# open() calls (reading) allowed under the readers of received runs, per file, and why each is not a run's file
# read through runfolder.read_file()/read_json()/read_csv() (or read_given() for a file named on the command line)
GUARDED = ("report", "why", "exports", "imports", "cli")
OPENS_FOR_READING = {
    "lab/report/model.py": 3,       # reference/published.csv, variants.csv, stories.csv: the checkout's own
    "lab/report/relations.py": 1,   # reference/published.csv: the checkout's own
    "lab/report/numa.py": 1,        # reference/numa-mem/catalogue.csv: the checkout's own
    "lab/report/html_page.py": 1,   # a figure of plots/ inlined as bytes (binary: read_file gives text); it is
                                    # checked first to be a regular file inside the run, no link, ≤ FIGURE_BYTES
    "lab/imports/runwriter.py": 1,  # sha256 of the file named on the command line, after jsonfile.load checked it
    "lab/cli/bench_scale.py": 3,    # /proc/stat, /proc/loadavg, and hyperfine's JSON in its own scratch folder
    "lab/cli/fleet/check.py": 2,    # the fleet's work folder (the history reader it built, each host's facts
    "lab/cli/fleet/sweep.py": 2,    # and job status as Ansible fetched them) and cluster.sh's record, which
    "lab/cli/fleet/cluster.py": 1,  # cluster-down reads: not run folders
    "lab/cli/progress.py": 1,       # /proc/<pid>/cmdline
    "lab/cli/scale.py": 1,          # save=: the user's own spec file, compared before it is replaced
}


def opens_for_reading():
    """{file: count} of open() and os.open() calls under GUARDED that do not write (writers: test_atomic_writers)."""
    found = {}
    for rel, n, mode in source_opens(*GUARDED):
        if isinstance(n.func, ast.Attribute) and n.func.attr == "fdopen":
            continue
        if isinstance(n.func, ast.Name) and isinstance(mode, ast.Constant) and isinstance(mode.value, str) and \
                set(mode.value) & set("wax+"):
            continue
        found[rel] = found.get(rel, 0) + 1
    return found


def test_no_reader_of_a_received_run_opens_its_files_itself():
    found = opens_for_reading()
    assert found == OPENS_FOR_READING, (
        "a new open() under scripts/lab/{report,why,exports,imports,cli}: read a run's file through "
        "runfolder.read_file/read_json/read_csv (a file named on the command line: runfolder.read_given), or "
        "add it to OPENS_FOR_READING with the reason it is not a run's file")
