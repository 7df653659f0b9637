"""AMD IBS data source read by why/perfmem.py from the one published `perf mem report` found (quoted below
with its source), and the lab's cross-CCX words; a truncated or garbled report is one PerfTextError line."""

import pytest

from conftest import assert_garbled_is_one_line
from lab.why import perfmem as M
from lab.why.perftext import PerfTextError

# Source: Ravi Bangoria, "[PATCH 00/13] perf mem/c2c: Add support for AMD", LKML 2022-05-25,
# <20220525093938.4101-1-ravi.bangoria@amd.com>: `perf mem report -F mem,sample,snoop` on AMD IBS (as in
# the mail, indented two spaces).
RAVI_2022 = """\
  Samples: 836K of event 'ibs_op//', Event count (approx.): 8418762
  Memory access                  Samples  Snoop
  N/A                             700620  N/A
  L1 hit                          126675  N/A
  L2 hit                             424  N/A
  L3 hit                             664  HitM
  L3 hit                              10  N/A
  Local RAM hit                        2  N/A
  Remote RAM (1 hop) hit            8558  N/A
  Remote Cache (1 hop) hit             3  N/A
  Remote Cache (1 hop) hit             2  HitM
  Remote Cache (2 hops) hit            10  HitM
  Remote Cache (2 hops) hit             6  N/A
  Uncached hit                         4  N/A
"""


def test_ravi_bangoria_sample():
    r = M.parse(RAVI_2022)
    assert r.event == "ibs_op//" and len(r.rows) == 12
    assert r.rows[0] == M.Source("N/A", 700620, "N/A") and r.rows[0].where is None
    assert r.rows[9] == M.Source("Remote Cache (2 hops) hit", 10, "HitM")
    assert r.samples("another CCX, same node") == 5 and r.samples("another CCX, other node") == 16
    assert r.samples("remote DRAM") == 8558 and r.samples("own CCX (L3)") == 674
    assert r.rows[-1].where == "other"


def test_words():
    assert M.words(M.parse(RAVI_2022)) == (
        "cross-CCX: 21 of 136358 sampled loads and stores with a source (0.0%) were served by another CCX's "
        "cache (near 5, far 16; 12 of them HitM); DRAM: local 2, remote 8558 (6.3%)")


def test_truncated_and_garbled():
    for text in (RAVI_2022.split("\n")[0], RAVI_2022[:RAVI_2022.index("Samples  Snoop") + 14],
                 RAVI_2022.rstrip()[:-5], "hello"):
        with pytest.raises(PerfTextError) as e:
            M.parse(text)
        assert "\n" not in str(e.value) and str(e.value).startswith("perf mem report:")
    assert_garbled_is_one_line(M.parse, RAVI_2022, PerfTextError, "0 #'\n\x00(", 10)
