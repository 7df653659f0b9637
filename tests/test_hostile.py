"""Values a user passes (overrides, run and archive names, topology strings) never become shell text;
run folders are not shared or mixed (issue 12, sweep side)."""
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest

from conftest import ROOT, rows, sh
from labtest import journal, set_cells

SPEC = "tests/fixtures/spin.spec"
QUICK = ["retries=0", "repeats=1", "placements=compact", "threads=1"]


def test_variant_override_is_data_not_code(tmp_path, results, lab_run):
    canary = tmp_path / "pwned"
    run = tmp_path / "run"
    variant = f"$(touch${{IFS}}{canary})"
    lab_run.sweep(f"run={run}", *QUICK, f"variants={variant}", SPEC)
    assert not canary.exists()
    assert {r["variant"] for r in rows(run / "data" / "spin.csv")} == {variant}


def test_a_run_folder_with_spaces_and_dollars_keeps_its_points_inside(tmp_path, results, lab_run):
    run = tmp_path / "my run $(echo x)"
    lab_run.sweep(f"run={run}", *QUICK, SPEC)
    assert rows(run / "data" / "spin.csv")
    assert sorted(os.listdir(tmp_path)) == ["my run $(echo x)", "results"]


def test_archive_named_like_code_is_replayed_as_data(tmp_path, results, lab_run):
    canary = tmp_path / "pwned"
    run = tmp_path / f"r$(touch {canary})"
    lab_run.sweep(f"run={run}", *QUICK, SPEC)
    sh("python3", "-m", "lab.cli.archive", "pack", str(run), env=results)
    lab_run.program("archive", "replay", f"{run}.tar.gz", env=dict(results, LAB_SPECS="tests/fixtures"))
    assert not canary.exists()


def test_replay_shows_a_foreign_spec_and_never_runs_it(tmp_path, results, lab_run):
    canary = tmp_path / "pwned"
    run = tmp_path / "foreign"
    lab_run.sweep(f"run={run}", *QUICK, SPEC)
    # The archive's spec is rewritten as a hostile host would (fixture input): its command is code.
    snap = run / "sweep" / "specs" / "spin.spec"
    snap.write_text(snap.read_text().replace("command = ", f"command = touch {canary}; "))
    args = json.loads((run / "sweep" / "args.json").read_text())
    args["experiments"].append("evil")
    (run / "sweep" / "args.json").write_text(json.dumps(args))
    (run / "sweep" / "specs" / "evil.spec").write_text(f"experiment = evil\ncommand = touch {canary}\n")
    with tarfile.open(tmp_path / "foreign.tar.gz", "w:gz") as t:
        t.add(run, arcname="foreign")
    p = lab_run.program("archive", "replay", str(tmp_path / "foreign.tar.gz"),
           env=dict(results, LAB_SPECS="tests/fixtures"))
    assert not canary.exists()
    assert "evil: no local spec measures it; its spec is shown, not run" in p.stderr
    assert f"command = touch {canary}" in p.stderr


def test_archive_with_a_link_or_dotdot_member_is_refused(tmp_path, results):
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as t:
        info = tarfile.TarInfo("run/../../escape")
        t.addfile(info)
    p = sh("python3", "-m", "lab.cli.archive", "replay", str(bad), env=results, check=False)
    assert p.returncode == 2 and "refusing member" in p.stderr


def test_plan_arguments_are_not_shell(tmp_path):
    if not shutil.which("just"):
        pytest.skip("just is not on PATH (./lab test puts it there)")
    canary = tmp_path / "pwned"
    p = sh("just", "plan", "compact", "1", f"x' $(touch {canary}) '", check=False)
    assert p.returncode != 0 and not canary.exists()


def test_a_locked_run_is_not_shared_and_other_code_is_not_resumed(tmp_path, results, lab_run):
    run = tmp_path / "run"
    slow_spin = {"SPIN_SLEEP": "3"}
    first = lab_run.start(f"run={run}", *QUICK, SPEC, env=slow_spin, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if (run / "sweep" / "lock").exists() and (run / "sweep" / "lock").read_text().strip():
                break
            subprocess.run(["sleep", "0.1"])
        second = lab_run.sweep(f"run={run}", *QUICK, SPEC, check=False)
        assert second.returncode == 2 and "another sweep is writing" in second.stderr
    finally:
        first.wait(timeout=120)
    # A run measured by other code (fixture input: its identity as another commit would write it).
    ident = json.loads((run / "sweep" / "identity.json").read_text())
    (run / "sweep" / "state").write_text("incomplete\n")
    (run / "sweep" / "identity.json").write_text(json.dumps(dict(ident, commit="0" * 40)))
    p = lab_run.sweep(f"run={run}", *QUICK, SPEC, check=False)
    assert p.returncode == 2 and "was measured with other code" in p.stderr


def test_a_huge_synthetic_topology_is_refused_at_once():
    p = sh("python3", "-m", "lab.cli.topo", "--topology", "pack:1000 core:1000 pu:1000", "summary", check=False,
           timeout=20)
    assert p.returncode == 2 and "has 1000000000 PUs" in p.stderr


# --- issue 24: a run folder from someone else is data, never code ------------------------------------
def test_report_passes_cells_and_names_to_gnuplot_as_data(tmp_path, results, lab_run):
    canary = tmp_path / "X"
    run = lab_run.quick(name=f"run';system('touch {canary}');'")
    set_cells(run / "data" / "spin.csv", unit=f"1/s'; system(\"touch {canary}\"); x='",
              variant=f"v\"; system('touch {canary}') #")
    for f in (run / "plots").iterdir():
        f.unlink()
    sh("python3", "-m", "lab.cli.charts", str(run))
    sh("python3", "-m", "lab.cli.report", str(run))
    assert not canary.exists()
    drawn = sorted(f.name for f in (run / "plots").iterdir() if f.suffix in (".png", ".svg"))
    assert drawn == ["spin-bars-loop_ns.png", "spin-bars-loop_ns.svg",
                     "spin-scaling-iters_per_s.png", "spin-scaling-iters_per_s.svg"]
    assert "system(" in (run / "plots" / "spin-bars-loop_ns.svg").read_text()   # the label, shown as text


PAYLOAD = '<img src=x onerror="document.title=\'pwned\'">'


def hostile_report(lab_run):
    """A run whose data file's name, cells and env carry HTML, and whose own report.html is the sender's."""
    run = lab_run.quick()
    set_cells(run / "data" / "spin.csv", variant=PAYLOAD, unit=PAYLOAD, suspect=PAYLOAD)
    os.rename(run / "data" / "spin.csv", run / "data" / f'e">{PAYLOAD}.csv')
    shutil.copytree(run / "data" / "points" / "spin", run / "data" / "points" / f'e">{PAYLOAD}')
    (run / "report.html").write_text(f"<html><body>{PAYLOAD}<script>document.title='pwned'</script>")
    return run


def test_report_html_escapes_every_name_and_allows_only_its_own_script(tmp_path, results, lab_run):
    from browser import Browser, chromium
    if not chromium():
        pytest.skip("chromium is not installed (./lab test installs it)")
    run = hostile_report(lab_run)
    sh("python3", "-m", "lab.cli.report", str(run))
    text = (run / "report.html").read_text()
    assert PAYLOAD not in text and "Content-Security-Policy" in text
    b = Browser()
    try:
        b.load(str(run / "report.html"))
        assert b.eval("document.title") != "pwned"
        assert b.eval("document.querySelectorAll('img[src=x]').length") == 0
        assert PAYLOAD in b.eval("document.body.textContent")      # shown as text
        # the CSP itself: a script the page did not bring is refused even if it reached the markup
        b.eval("var s=document.createElement('div');s.innerHTML='<img src=x onerror=\"document.title=1\">';"
               "document.body.appendChild(s); new Promise(r => setTimeout(r, 300))")
        assert b.eval("document.title") != "1"
    finally:
        b.close()


def test_open_shows_a_report_the_lab_drew_not_the_senders(tmp_path, results, lab_run):
    run = hostile_report(lab_run)
    p = sh("scripts/open.sh", str(run), env=dict(results, DISPLAY="", WAYLAND_DISPLAY=""))
    assert p.stdout.strip() == str(run / "report.html")
    text = (run / "report.html").read_text()
    assert "<script>document.title='pwned'" not in text and "Content-Security-Policy" in text


ESC = "\x1b]0;pwned\x07\x1b[2J"


def test_compare_and_replay_show_control_characters_instead_of_obeying_them(tmp_path, results, lab_run):
    a = lab_run.quick(name="a")
    b = lab_run.quick(name="b")
    set_cells(b / "data" / "spin.csv", variant=f"v{ESC}")     # a received run's cell: a command line refuses it
    cpuinfo = b / "env" / "cpuinfo.txt"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: Evil{ESC} CPU\n")
    p = sh("python3", "-m", "lab.cli.compare", str(a), str(b), str(tmp_path / "cmp.md"))
    assert "\x1b" not in p.stdout + p.stderr and "\x07" not in p.stdout + p.stderr
    assert "\\x1b]0;pwned\\x07" in p.stdout
    # replay prints a spec it will not run: visibly
    (b / "sweep" / "specs" / "evil.spec").write_text(f"experiment = evil\ncommand = true {ESC}\n")
    args = json.loads((b / "sweep" / "args.json").read_text())
    (b / "sweep" / "args.json").write_text(json.dumps(dict(args, experiments=["evil", "spin"],
                                                          overrides={"repeats": "1", "threads": "1"})))
    with tarfile.open(tmp_path / "b.tar.gz", "w:gz") as t:
        t.add(b, arcname="b")
    p = lab_run.program("archive", "replay", str(tmp_path / "b.tar.gz"), env=dict(results, LAB_SPECS="tests/fixtures"))
    assert "\x1b" not in p.stderr and "command = true \\x1b]0;pwned\\x07" in p.stderr


@pytest.mark.parametrize("args, says", [
    (["retry_pause=1e308"], "retry_pause must be a number from 0 to 86400, not '1e308'"),
    (["timeout=nan"], "timeout must be a number above 0 and at most 86400"),
    (["repeats=100000000"], "repeats must be auto or a whole number from 1 to 1000"),
    (["placements=unpinned", "threads=100000"], "threads must be auto, all or whole numbers from 1 to 4096"),
    (["placements="], "placements is empty"),
    (["variants="], "variants is empty"),
    (["threads= "], "threads is empty"),
    (["profile=smok"], "unknown profile 'smok': the specs name "),
    (["perf=x.spec"], "perf must be 0 or 1 or stat, not 'x.spec'"),
    (["profile=x.spec"], "unknown profile 'x.spec'"),
])
def test_out_of_bounds_or_empty_values_are_refused_in_one_line(tmp_path, results, args, says):
    p = sh("python3", "-m", "lab.cli.sweep", f"run={tmp_path / 'run'}", "dry=1", *args, SPEC, env=results, check=False)
    assert p.returncode == 2 and says in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "run").exists()


def test_a_latin1_or_empty_valued_spec_is_refused_naming_its_line(tmp_path, results):
    spec = tmp_path / "bad.spec"
    spec.write_bytes(b"experiment = bad\ncommand = true\n# caf\xe9\n")
    p = sh("python3", "-m", "lab.cli.sweep", "dry=1", str(spec), env=results, check=False)
    assert p.returncode == 2 and f"{spec}:3: not UTF-8 (byte 0xe9)" in p.stderr
    spec.write_text("experiment = bad\ncommand = true\nplacements =\n")
    p = sh("python3", "-m", "lab.cli.sweep", "dry=1", str(spec), env=results, check=False)
    assert p.returncode == 2 and f"{spec}:3: placements is empty" in p.stderr


def test_a_bad_done_event_in_an_old_run_does_not_break_the_dry_run(tmp_path, results):
    import socket
    old = tmp_path / "results" / f"20200101T000000Z-{socket.gethostname().split('.')[0]}"
    (old / "sweep").mkdir(parents=True)
    events = [{"event": "sweep", "profile": "default"},
              {"event": "done", "experiment": "spin", "seconds": "abc"},
              {"event": "confidence", "experiment": "spin", "n": [1]}]
    (old / "sweep" / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    p = sh("python3", "-m", "lab.cli.sweep", "dry=1", SPEC, env=results)
    assert "seconds per run from the spec's cost" in p.stdout


def tar_of(path, members):
    """An archive of (TarInfo, bytes or None) written as given (fixture input: a hostile sender's)."""
    import io
    with tarfile.open(path, "w:gz") as t:
        for info, data in members:
            t.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def member(name, data=b"", kind=tarfile.REGTYPE, size=None):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(data) if size is None else size
    return info, (data if kind == tarfile.REGTYPE and size is None else None)


@pytest.mark.parametrize("members, says", [
    ([member("run", b"x")], "its top 'run' is a file, not a run folder"),
    ([member("run/a", b"x"), member("run/a/b", b"y")], "'run/a' is both a file and a folder"),
    ([member("run/a", b"x"), member("run/a", b"y")], "'run/a' is in it twice"),
    ([member("r" * 250 + "/a", b"x")], "its top folder's name has 250 characters (at most 100)"),
    ([member("run/big.csv", size=300 << 20)], "refusing member 'run/big.csv': 314572800 bytes, more than 256 MiB"),
    ([member("run/a", b"x"), member("other/b", b"y")], "expected one run folder inside, found 2"),
])
def test_archive_shapes_and_sizes_are_refused_in_one_line(tmp_path, results, members, says):
    bad = tar_of(tmp_path / "bad.tar.gz", members)
    p = sh("python3", "-m", "lab.cli.archive", "replay", str(bad), env=results, check=False)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert os.listdir(tmp_path / "results") == []


def test_a_sparse_member_is_refused_before_it_unpacks(tmp_path, results):
    (tmp_path / "run" / "data").mkdir(parents=True)
    with open(tmp_path / "run" / "data" / "x.csv", "wb") as f:
        f.truncate(1 << 30)       # 1 GiB of hole: the archive stays small
    subprocess.run(["tar", "-S", "-czf", "sparse.tar.gz", "run"], cwd=tmp_path, check=True)
    assert os.path.getsize(tmp_path / "sparse.tar.gz") < 1 << 20
    p = sh("python3", "-m", "lab.cli.archive", "replay", str(tmp_path / "sparse.tar.gz"), env=results, check=False)
    assert p.returncode == 2 and "refusing member 'run/data/x.csv': a sparse file" in p.stderr


@pytest.mark.parametrize("args, says", [
    ("{not json", "sweep/args.json: not valid JSON"),
    ("[1, 2]", "sweep/args.json: expected an object"),
    (json.dumps({"profile": "default", "perf": 0, "overrides": {"threads": 1}, "experiments": ["spin"]}),
     "sweep/args.json: expected an object"),
    ("[" * 100000 + "]" * 100000, "sweep/args.json: not valid JSON (RecursionError"),
    (json.dumps({"profile": "default", "perf": 0, "overrides": {"threads": "100000", "placements": "unpinned"},
                 "experiments": ["spin"]}), "threads must be auto, all or whole numbers from 1 to 4096"),
    (json.dumps({"profile": "default", "perf": 0, "overrides": {"repeats": "1000", "cost": "100"},
                 "experiments": ["spin"]}), "more than 24 h; replay its experiments yourself"),
])
def test_what_a_received_run_asks_for_is_checked_and_priced_first(tmp_path, results, args, says, lab_run):
    run = lab_run.quick(name="theirs")
    (run / "sweep" / "args.json").write_text(args)
    with tarfile.open(tmp_path / "theirs.tar.gz", "w:gz") as t:
        t.add(run, arcname="theirs")
    p = lab_run.program("archive", "replay", str(tmp_path / "theirs.tar.gz"),
           env=dict(results, LAB_SPECS="tests/fixtures"), check=False)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert not any("replay" in n for n in os.listdir(tmp_path / "results"))


def test_ctrl_c_in_replay_stops_cleanly_and_says_how_to_resume(tmp_path, results, lab_run):
    import signal
    import time
    run = lab_run.quick(name="theirs")
    with tarfile.open(tmp_path / "theirs.tar.gz", "w:gz") as t:
        t.add(run, arcname="theirs")
    p = lab_run.start("replay", str(tmp_path / "theirs.tar.gz"), program="archive",
                      env={"LAB_SPECS": "tests/fixtures", "SPIN_SLEEP": "30"}, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not any(started(d) for d in (tmp_path / "results").iterdir()):
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)         # what a terminal's Ctrl-C does: the whole foreground group
    out, err = p.communicate(timeout=60)
    assert p.returncode == 2 and "Traceback" not in err, err
    assert "interrupted: the repeats measured so far are in" in err and "resume them with: ./lab sweep" in err
    new = next(d for d in (tmp_path / "results").iterdir() if "-replay-" in d.name)
    assert (new / "sweep" / "state").read_text() == "incomplete\n"


def wait_for(cond, seconds=60, what="a condition"):
    import time
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def token_holders(run):
    from lab.engine import orphans
    return orphans.holders(json.loads((run / "sweep" / "engine.json").read_text())["token"])


def started(run):
    """Whether the sweep writing `run` has started a point (its journal read as it is written)."""
    return (run / "sweep" / "journal.jsonl").exists() and bool(journal(run, "started", partial=True))


def sweep_measuring(lab_run, tmp_path):
    """(run folder, engine process) of a sweep started in the background, once its command runs."""
    run = tmp_path / "run"
    p = lab_run.start(f"run={run}", *QUICK, SPEC, env={"SPIN_SLEEP": "60"}, stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL)
    wait_for(lambda: started(run), what="the first point")
    wait_for(lambda: token_holders(run), what="the measured command")
    return run, p


def test_a_killed_engine_leaves_nothing_running(tmp_path, results, lab_run):
    import signal
    run, p = sweep_measuring(lab_run, tmp_path)
    os.kill(p.pid, signal.SIGKILL)           # the engine only, as the OOM killer does
    p.wait()
    wait_for(lambda: not token_holders(run), seconds=10, what="the reaper to end the measured command")


def test_a_resume_ends_what_a_killed_engine_and_its_reaper_left(tmp_path, results, lab_run):
    import signal
    run, p = sweep_measuring(lab_run, tmp_path)
    left = token_holders(run)
    os.kill(json.loads((run / "sweep" / "engine.json").read_text())["reaper"], signal.SIGKILL)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    assert all(os.path.exists(f"/proc/{pid}") for pid in left)     # orphans, measuring beside a resume
    lab_run.sweep(f"run={run}", *QUICK, SPEC)
    assert not any(os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z"
                   for pid in left)
    assert '"event": "orphans"' in (run / "sweep" / "journal.jsonl").read_text()
    assert (run / "sweep" / "state").read_text() == "complete\n"


def test_a_second_ctrl_c_waits_for_teardown_and_the_state(tmp_path, results, lab_run):
    import signal
    run = tmp_path / "run"
    spec = tmp_path / "td.spec"
    done = tmp_path / "teardown-done"
    spec.write_text("experiment = td\ncommand = tests/fixtures/spin.sh {threads} 2000 ${SPIN_SLEEP:-0}\n"
                    "setup = true\nteardown = sleep 2; touch \"$TD_DONE\"\nrepeats = 1\nwarmup = 0\n"
                    "placements = compact\nthreads = 1\nchart = bars loop_ns\n")
    p = lab_run.start(f"run={run}", str(spec), env={"SPIN_SLEEP": "60", "TD_DONE": str(done)}, text=True,
                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    wait_for(lambda: started(run), what="the first point")
    os.killpg(p.pid, signal.SIGINT)
    wait_for(lambda: "$ sleep 2" in (run / "sweep" / "setup.log").read_text(), what="teardown")
    os.killpg(p.pid, signal.SIGINT)          # impatient: a second Ctrl-C while teardown runs
    _out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err, err
    assert done.exists() and (run / "sweep" / "state").read_text() == "incomplete\n"
    assert not token_holders(run)


# Starts 100 teardowns through the engine's run_shell while another process of the same process group
# sends the group SIGINT every 0.2 ms; prints how many ran to their end.
HAMMERED = """
import os, signal, subprocess, sys
from lab.engine import point as pt
signal.signal(signal.SIGINT, lambda s, f: None)          # the sweep's handler once it is stopping
hammer = subprocess.Popen([sys.executable, "-c", "import os, signal, time\\n"
                           "signal.signal(signal.SIGINT, signal.SIG_IGN)\\n"
                           "print('go', flush=True)\\n"
                           "while True:\\n    os.killpg(os.getpgrp(), signal.SIGINT); time.sleep(0.0002)"],
                          stdout=subprocess.PIPE, text=True)
assert hammer.stdout.readline() == "go\\n"
log = sys.argv[1]
ran = sum(pt.run_shell("echo ran", ".", dict(os.environ), log, own_session=True)[0] == 0 for _ in range(100))
hammer.kill()
# SIGTERM keeps its default: a teardown's `kill` still ends what it started (143, not 0 after 3 s)
pt.run_shell("sleep 3 & kill $!; wait $!; echo killed=$?", ".", dict(os.environ), log, own_session=True)
print(ran, open(log).read().count("\\nran\\n"), "killed=143" in open(log).read())
"""


def test_a_teardown_is_born_deaf_to_the_sweeps_ctrl_c(tmp_path):
    """A Ctrl-C that reaches the sweep's process group after a teardown's fork and before its setsid
    must not end it (CI once lost a teardown so, in test_a_second_ctrl_c_waits_for_teardown_and_the_state).
    The group is hammered with SIGINT while the engine starts 100 teardowns: every one runs to its end.
    Started with subprocess.run as before, 49 and 54 of 400 were ended in a trial. Only SIGINT is
    ignored: a teardown's `kill` of a process it started still ends it with SIGTERM."""
    p = subprocess.run(["setsid", sys.executable, "-c", HAMMERED, str(tmp_path / "setup.log")], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["100", "100", "True"], (p.stdout, p.stderr)


def test_an_environment_capture_cut_off_is_captured_again(tmp_path, results, lab_run):
    run = lab_run.quick()
    # what kill -9 during the capture leaves: a partial env.tmp and no env/
    shutil.rmtree(run / "env")
    (run / "env.tmp").mkdir()
    (run / "env.tmp" / "uname.txt").write_text("half")
    (run / "sweep" / "state").write_text("incomplete\n")
    lab_run.sweep(f"run={run}", *QUICK, SPEC)
    assert not (run / "env.tmp").exists() and (run / "env" / "lstopo.xml").exists()
    assert (run / "env" / "uname.txt").read_text() != "half"


def test_a_journal_cut_short_is_repaired_and_the_report_written(tmp_path, results, lab_run):
    run = lab_run.quick()
    jl = run / "sweep" / "journal.jsonl"
    with open(jl, "a") as f:
        f.write('{"ts": "2026-01-01T00:00:00Z", "event": "sta')          # a full disk cut this event
    (run / "sweep" / "state").write_text("incomplete\n")
    p = lab_run.sweep(f"run={run}", *QUICK, SPEC)
    assert "ended in a line cut short" in p.stderr and "not JSON" not in p.stderr
    assert all(json.loads(line) for line in jl.read_text().splitlines())
    # a journal an older engine appended to after the cut: the torn event is left out, the rest read
    jl.write_text(jl.read_text().replace('{"ts"', '{"ts": "x", "ev{"ts"', 1))
    p = sh("python3", "-m", "lab.cli.report", str(run))
    assert "an event cut short before another, left out" in p.stderr
    deep = "[" * 100000 + "]" * 100000
    jl.write_text(jl.read_text() + deep + "\n" + '{"ts": "x", "event": "end"}\n')
    p = sh("python3", "-m", "lab.cli.report", str(run), check=False)
    assert p.returncode == 2 and "journal.jsonl:" in p.stderr and "nested too deeply" in p.stderr
    assert "Traceback" not in p.stderr


def test_an_explicit_run_is_resumed_only_with_its_own_arguments_and_no_file_of_yours_is_deleted(tmp_path, lab_run):
    run = lab_run.quick()
    (run / "sweep" / "state").write_text("incomplete\n")
    p = lab_run.sweep(f"run={run}", *QUICK, "warmup=1", SPEC, check=False)
    assert p.returncode == 2 and "was swept with other arguments" in p.stderr
    mine = tmp_path / "mine"
    (mine / "data").mkdir(parents=True)
    (mine / "data" / "notes.tmp").write_text("mine")
    p = lab_run.sweep(f"run={mine}", *QUICK, SPEC, check=False)
    assert p.returncode == 2 and "is not a run folder (no sweep/)" in p.stderr
    assert (mine / "data" / "notes.tmp").read_text() == "mine"
    (run / "data" / "keep.tmp").write_text("mine")
    (run / "data" / "points" / "spin" / "x_r9.csv.tmp").write_text("half")
    lab_run.sweep(f"run={run}", *QUICK, SPEC)
    assert (run / "data" / "keep.tmp").exists() and not (run / "data" / "points" / "spin" / "x_r9.csv.tmp").exists()


def test_variants_that_differ_only_in_replaced_characters_keep_their_own_points(tmp_path, results, lab_run):
    run = lab_run.quick(variants="a+b a_b a/b")
    files = sorted(os.listdir(run / "data" / "points" / "spin"))
    assert len(files) == 3, files
    by_variant = {}
    for r in rows(run / "data" / "spin.csv"):
        by_variant.setdefault(r["variant"], set()).add(r["repeat"])
    assert by_variant == {"a+b": {"1"}, "a_b": {"1"}, "a/b": {"1"}}


@pytest.mark.parametrize("cells, says", [
    ({"value": "1.7e308"}, "value 1.7e308 is beyond ±1e+18"),
    ({"value": "nan"}, "value nan is not finite"),
    ({"threads": "abc"}, "threads 'abc' is not a whole number"),
])
def test_a_received_run_with_values_no_instrument_measures_is_refused_in_one_line(tmp_path, cells, says, lab_run):
    a = lab_run.quick(name="a")
    b = lab_run.quick(name="b")
    set_cells(b / "data" / "spin.csv", **cells)
    for cmd in (["python3", "-m", "lab.cli.charts", str(b)], ["python3", "-m", "lab.cli.report", str(b)],
                ["python3", "-m", "lab.cli.compare", str(a), str(b), str(tmp_path / "c.md")]):
        p = sh(*cmd, check=False)
        assert p.returncode == 2 and f"spin.csv:2: {says}" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_a_metric_that_is_all_negative_is_still_charted_and_reported(tmp_path, results, lab_run):
    run = lab_run.quick()
    set_cells(run / "data" / "spin.csv", value="-5")
    p = sh("python3", "-m", "lab.cli.charts", str(run))
    assert "2 chart(s)" in p.stderr
    sh("python3", "-m", "lab.cli.report", str(run))
    assert "–5" in (run / "report.md").read_text() or "-5" in (run / "report.md").read_text()


def test_leftovers_csv_mode_missing_topology_clean_tree(tmp_path, results, lab_run):
    run = lab_run.quick()
    assert os.stat(run / "data" / "spin.csv").st_mode & 0o044 == os.stat(run / "sweep" / "state").st_mode & 0o044
    p = sh("python3", "-m", "lab.cli.topo", "--topology", str(tmp_path / "missing.xml"), "summary", check=False)
    assert p.returncode == 2 and f"no such topology file: {tmp_path / 'missing.xml'}" in p.stderr
    # a clean checkout records a clean tree, not a failed capture
    subprocess.run(["git", "clone", "-q", ROOT, str(tmp_path / "clone")], check=True)
    subprocess.run([str(tmp_path / "clone" / "scripts" / "env.sh"), str(tmp_path / "env")], check=True,
                   capture_output=True)
    assert (tmp_path / "env" / "git-diff.patch").read_text() == "(clean: no uncommitted change)\n"


def test_a_full_disk_stops_the_sweep_in_one_line_and_a_resume_completes_it(tmp_path, results, lab_run):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        run = disk / "run"
        args = [f"run={run}", "retries=0", "repeats=3", "placements=compact", "threads=1", SPEC]
        p = lab_run.start(*args, env={"SPIN_SLEEP": "1"}, text=True, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
        wait_for(lambda: started(run) and (run / "data" / "points" / "spin").is_dir()
                 and os.listdir(run / "data" / "points" / "spin"), what="the first repeat")
        with open(disk / "filler", "wb") as f:      # the disk fills up mid-sweep
            try:
                while True:
                    f.write(b"\0" * 65536)
            except OSError:
                pass
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 1 and "Traceback" not in err, err
        assert "No space left on device" in err and "run the same command again to resume" in err
        assert (run / "sweep" / "state").read_text() != "complete\n"
        p2 = lab_run.sweep(*args, check=False)      # still full: one line again
        assert p2.returncode == 1 and "Traceback" not in p2.stderr, p2.stderr
        os.remove(disk / "filler")
        lab_run.sweep(*args)
        assert (run / "sweep" / "state").read_text() == "complete\n"
        assert (run / "report.html").exists()
        assert {r["repeat"] for r in rows(run / "data" / "spin.csv")} == {"1", "2", "3"}
    finally:
        subprocess.run(["umount", "-l", str(disk)])


def test_pair_spreads_are_the_list_spread_without_building_it_and_a_big_host_is_cheap():
    import glob
    import time

    from lab.topology.topo import PAIRS, PlacementError, Topology
    for xml in sorted(glob.glob(os.path.join(ROOT, "topologies", "*.xml")))[:6]:
        t = Topology(xml)
        for policy in PAIRS:
            try:
                full = t.pairs(policy)
            except PlacementError:
                with pytest.raises(PlacementError):
                    t.spread_pairs(policy, 8)
                continue
            for k in (1, 3, 8, 1000):
                n = min(k, len(full))
                assert t.spread_pairs(policy, k) == [full[i * len(full) // n] for i in range(n)], (xml, policy, k)
            assert t.plan(policy, 2) == list(full[0])
    # 2048 PUs: 2 M pairs, counted per PU and picked by bisection, never listed (this host's load may slow it)
    t0 = time.process_time()
    t = Topology("pack:2 core:512 pu:2")
    assert len(t.spread_pairs("cross-package", 8)) == 8 and t.plan("smt", 2) == [0, 1]
    assert time.process_time() - t0 < 60
    p = sh("python3", "-m", "lab.cli.topo", "--topology", "pack:16 core:64 pu:64", "summary", check=False, timeout=20)
    assert p.returncode == 2 and "has 65536 PUs; at most 8192" in p.stderr


def test_a_received_spec_cannot_make_charts_write_outside_the_run(tmp_path, results, lab_run):
    run = lab_run.quick()
    spec = run / "sweep" / "specs" / "spin.spec"
    spec.write_text(spec.read_text() + "chart = bars ../../../escaped\n")
    p = sh("python3", "-m", "lab.cli.charts", str(run))
    assert "chart metric '../../../escaped' is not a name: not drawn" in p.stderr
    assert not list(tmp_path.rglob("*escaped*"))
    (run / "sweep" / "specs" / "evil.spec").write_text("experiment = ../../evil\nchart = bars loop_ns\n")
    p = sh("python3", "-m", "lab.cli.charts", str(run))
    assert "experiment '../../evil' is not a name: no charts" in p.stderr
    assert not list(tmp_path.rglob("*evil-bars*"))
