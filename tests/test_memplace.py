"""Memory placement in the guard (scripts/lab/engine/memplace.py): a repeat whose instrument reports its
memory on another node than the one it bound it to, or than the point's membind asked, is measured again
and kept as suspect with "memory on node N, expected M". The ran-on.csv lines below are test input
written by hand: on this one-node host no real memory can be on a wrong node (vm/ has two)."""

from lab.engine.memplace import misplaced

HEAD = "probe,variant,cpus,thread,pinned_to,first_cpu,last_cpu,mem_node,mem_want\n"


def ran_on(tmp_path, *lines, head=HEAD):
    (tmp_path / "ran-on.csv").write_text(head + "".join(ln + "\n" for ln in lines))
    return str(tmp_path)


def test_the_instruments_own_binding_wins_over_the_points_membind(tmp_path):
    raw = ran_on(tmp_path, 'mem,cpu0-mem1,"0",0,0,0,0,0,1', 'mem,cpu0-mem0,"0",0,0,0,0,0,0')
    assert misplaced(raw, [0], "none", True) == "memory on node 0, expected 1 (mem cpu0-mem1; 1 of 2 threads)"
    assert misplaced(raw, [0], "local", True).startswith("memory on node 0, expected 1")


def test_membind_local_expects_the_placements_nodes(tmp_path):
    raw = ran_on(tmp_path, 'counters,padded,"0,4",0,0,0,0,1,-1', 'counters,padded,"0,4",1,4,4,4,1,-1')
    assert misplaced(raw, [0], "local", True) == "memory on node 1, expected 0 (counters padded; 2 of 2 threads)"
    assert misplaced(raw, [0, 1], "interleave", True) == ""
    assert misplaced(raw, [0], "none", True) == ""        # nothing was asked: nothing to check
    assert misplaced(raw, [0], "local", False) == ""      # unpinned: the engine applies no membind


def test_old_files_unknown_nodes_and_no_file_pass(tmp_path):
    old = ran_on(tmp_path, 'c2c,cas,"0,1",0,0,0,0,1', head=HEAD.replace(",mem_want", ""))
    assert misplaced(old, [0], "local", True) == "memory on node 1, expected 0 (c2c cas; 1 of 1 threads)"
    assert misplaced(ran_on(tmp_path, 'c2c,cas,"0,1",0,0,0,0,-1,0'), [0], "local", True) == ""
    assert misplaced(str(tmp_path / "nowhere"), [0], "local", True) == ""


def test_a_sweep_marks_the_repeat_suspect_with_the_reason(tmp_path, results, lab_run):
    # The command stands for an instrument that bound its memory to node 7 and found it on node 0.
    placed = lab_run.point("placed", "command = printf '" + HEAD.replace("\n", "\\n") + "probe,-,0,0,0,0,0,0,7\\n' "
                           "> {raw}/ran-on.csv && printf 'metric,value,unit\\nx,1,ns\\n'\n")
    events, data = placed.journal(), placed.rows("placed")
    run = tmp_path / "run"
    again = [e for e in events if e["event"] == "remeasured"]
    assert len(again) == 1 and again[0]["reason"].startswith("memory on node 0, expected 7"), again
    assert data and all(r["suspect"].startswith("memory on node 0, expected 7") for r in data)
    md = (run / "report.md").read_text()
    assert "memory on node 0, expected 7" in md
    # the report shows the node beside the point, in both renderings (lab/report/model.py shapes it once)
    assert any(ln.startswith("| variant | placement | threads | cpus | memory node | metric |")
               for ln in md.splitlines())
    row = next(ln for ln in md.splitlines() if "| x |" in ln)
    assert [c.strip() for c in row.split("|")][5:7] == ["0", "x"], row
    html = (run / "report.html").read_text()
    assert "<th>memory node</th>" in html and "<td>0</td><td>x</td>" in html


def test_memory_nodes_are_read_from_ran_on(tmp_path):
    from lab.engine.memplace import memory_nodes
    assert memory_nodes(ran_on(tmp_path, 'a,-,"0",0,0,0,0,1,-1', 'a,-,"0",1,0,0,0,-1,-1',
                               'a,-,"0",2,0,0,0,0,1')) == [0, 1]
    assert memory_nodes(str(tmp_path / "nowhere")) == []
