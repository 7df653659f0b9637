"""A point's name in file names has one owner, lab/engine/plan.stem(): the engine writes a repeat's raw
folder and a point's evidence by it, the report and the stories read by it. A received cell (a variant or
placement of `../x`, `a+b`, a leading dot) must still give one file name of the journal key's shape, so no
reader is led out of its run, and two different cells never share a name."""
import os

import pytest

from lab.core.runfolder import EVENT_KEY
from lab.engine import plan
from lab.report import causes

HOSTILE = ["../../etc", "..", ".hidden", "a/b", "a+b", "a_b", "", "x" * 300, "ünï", "a\nb", "-", "compact"]


@pytest.mark.parametrize("cell", HOSTILE)
def test_every_stem_is_one_name_of_the_journal_keys_shape(cell):
    for s in (plan.stem(cell, "compact", 2), plan.stem("v", cell or "x", 2)):
        assert EVENT_KEY.fullmatch(s + "_r1"), s
        assert os.sep not in s and s not in (".", "..")


def test_different_cells_never_share_a_name_and_plain_ones_keep_theirs():
    assert plan.stem("a+b", "compact", 1) != plan.stem("a_b", "compact", 1)
    assert plan.stem("v", "../x", 1) != plan.stem("v", "__x", 1)
    assert plan.stem("global", "cross-l3", 4) == "global_cross-l3_t4"
    assert plan.stem("", "compact", 1) == "-_compact_t1"


def test_the_evidence_loader_reads_by_the_stem_and_never_outside_the_run(tmp_path):
    """A placement cell of `../../elsewhere` names a folder inside raw/, never the folder it climbs to."""
    run = tmp_path / "run"
    (run / "raw" / "exp").mkdir(parents=True)
    outside = tmp_path / "elsewhere_t1_why"
    outside.mkdir()
    (outside / "meta.json").write_text("{}")
    get = causes.evidence_of(str(run), "exp", "v", errors={})
    assert get("../../elsewhere", 1) is None
