"""No point twice (lab/engine/plan.shared): placements whose CPUs are the same at a thread count (compact and
scatter at 1 thread, every pinned placement at every PU) are measured once and shared, labelled so in the
dry run, the journal, the report and the export; unpinned, pair placements and pin=none never are."""
import json
import os

import pytest

from conftest import ROOT, in_process, rows
from lab.engine.plan import plan
from lab.engine.spec import Spec
from lab.topology.topo import Topology
from labtest import journal

EPYC = os.path.join(ROOT, "topologies", "AMD-19h-Zen3-2xEpyc-7763.v2.xml")


def spec(tmp_path, command, **keys):
    text = f"experiment = x\ncommand = {command}\nplacements = compact scatter cores unpinned\nthreads = 1 2 64 128\n"
    text += "".join(f"{k} = {v}\n" for k, v in keys.items())
    (tmp_path / "x.spec").write_text(text)
    return Spec(str(tmp_path / "x.spec")).resolve(None, {})


def shared(points):
    return {(p.placement, p.threads): p.same_as for p in points if p.same_as}


def test_the_same_cpu_set_is_measured_once_at_one_thread_and_at_every_pu(tmp_path):
    pts = plan(spec(tmp_path, "prog --threads {threads}"), Topology(EPYC))
    got = shared(pts)
    # this fixture has 128 PUs and no SMT: cores is compact at every count
    assert got[("scatter", 1)] == "compact" and got[("scatter", 128)] == "compact"
    assert all(got[("cores", t)] == "compact" for t in (1, 2, 64, 128))
    assert ("scatter", 2) not in got and ("compact", 1) not in got        # two packages apart at 2 threads
    assert not any(pl == "unpinned" for pl, _t in got)
    for p in pts:
        if p.same_as:
            assert p.skip.startswith(f"the same CPUs as {p.same_as}")


def test_a_command_that_reads_the_cpu_order_shares_only_the_same_order(tmp_path):
    """{cpus} tells the program which thread goes where: the same set in another order is another point."""
    topo = Topology(EPYC)
    pts = plan(spec(tmp_path, "prog --cpus {cpus}"), topo)
    by = {(p.placement, p.threads): p for p in pts}
    for (pl, t), owner in shared(pts).items():
        assert by[(pl, t)].cpus == by[(owner, t)].cpus
    assert ("scatter", 1) in shared(pts)


def test_share_0_and_pin_none_measure_every_placement(tmp_path):
    topo = Topology(EPYC)
    assert not shared(plan(spec(tmp_path, "prog {threads}", share="0"), topo))
    assert not shared(plan(spec(tmp_path, "prog {threads}", pin="none"), topo))


@pytest.mark.slow
def test_a_shared_point_is_measured_once_and_drawn_in_both_curves(tmp_path, monkeypatch):
    """On this host compact and scatter give the same CPUs at 1 and 2 threads: scatter is measured as
    compact, its curve drawn from compact's repeats and labelled; the data CSV and the export hold the
    measured rows only."""
    monkeypatch.setenv("LAB_RESULTS", str(tmp_path / "results"))
    topo = Topology(None)
    if len(topo.pus) < 2 or topo.plan("compact", 2) != topo.plan("scatter", 2):
        pytest.skip("compact and scatter differ at 2 threads on this host")
    run = tmp_path / "run"
    in_process("lab.cli.scale", f"run={run}", "threads=1 2", "placements=compact scatter", "repeats=3", "warmup=0",
               "capacity=0", "--", "true")
    (csv,) = (run / "data").glob("*.csv")
    assert {r["placement"] for r in rows(csv)} == {"compact"}
    events = journal(run)
    assert {(e["placement"], e["threads"], e["same_as"]) for e in events if e.get("same_as")} == \
        {("scatter", 1, "compact"), ("scatter", 2, "compact")}
    md = (run / "report.md").read_text()
    assert "scatter (measured once, as compact)" in md
    assert "- scatter:" in md or "scatter:" in md.split("How it scales")[1]
    out = tmp_path / "run.json"
    in_process("lab.cli.export", str(run), f"out={out}")
    doc = json.loads(out.read_text())
    assert {p["placement"] for e in doc["experiments"] for p in e["points"]} == {"compact"}


def test_a_received_journal_can_share_only_between_the_policies(tmp_path):
    """A received journal naming 5,000 made-up placements as shared adds no curve (events written by hand)."""
    from lab.report import model
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    (run / "data" / "x.csv").write_text("run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit\n"
                                        + "".join(f"r,x,,compact,1,0,{r},ops,{10 + r},1/s\n" for r in (1, 2, 3)))
    (run / "sweep" / "specs" / "x.spec").write_text("experiment = x\ncommand = true\nchart = scaling ops\n")
    events = [{"event": "skipped", "experiment": "x", "variant": "", "placement": p, "threads": 1,
               "same_as": "compact", "reason": "r"} for p in ["scatter"] + [f"made-up-{i}" for i in range(5000)]]
    (run / "sweep" / "journal.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    (e,) = model.build(str(run)).experiments
    assert sorted({p.placement for p in e.points}) == ["compact", "scatter"]
