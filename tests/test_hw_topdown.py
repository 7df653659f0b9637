"""Top-down level 1 read by why/topdown.py from published `perf stat` outputs (quoted below with their
sources: no host of the lab has a PMU), in perf's three layouts, Intel and AMD; the words for a pair of
points; a truncated or garbled output is one PerfTextError line."""

import pytest

from conftest import assert_garbled_is_one_line
from lab.why import topdown as T
from lab.why.perftext import PerfTextError

# Source: tools/perf/Documentation/topdown.txt before Ian Rogers' refresh, as his "[PATCH v1 42/51] perf doc:
# Refresh topdown documentation" (LKML 2023-02-19, <20230219092848.639226-43-irogers@google.com>) removes it:
# Ice Lake, perf <= 6.2 column layout with `%`.
OLD_ICELAKE = """\
% perf stat -a --topdown -I1000
#           time             retiring      bad speculation       frontend bound        backend bound
     1.001281330                23.0%                15.3%                29.6%                32.1%
     2.003009005                 5.0%                 6.8%                46.6%                41.6%
     3.004646182                 6.7%                 6.7%                46.0%                40.6%
     4.006326375                 5.0%                 6.4%                47.6%                41.0%
     5.007991804                 5.1%                 6.3%                46.3%                42.3%
     6.009626773                 6.2%                 7.1%                47.3%                39.3%
     7.011296356                 4.7%                 6.7%                46.2%                42.4%
     8.012951831                 4.7%                 6.7%                47.5%                41.1%
...
"""

# Source: tools/perf/Documentation/topdown.txt (torvalds/linux, since the 2023 refresh): perf >= 6.3's
# interval layout, tma_ metric names, values without `%`.
TMA_INTERVALS = """\
% perf stat -a --topdown -I1000
#           time      %  tma_retiring %  tma_backend_bound %  tma_frontend_bound %  tma_bad_speculation
     1.001141351                 11.5                 34.9                  46.9                    6.7
     2.006141972                 13.4                 28.1                  50.4                    8.1
     3.010162040                 12.9                 28.1                  51.1                    8.0
     4.014009311                 12.5                 28.6                  51.8                    7.2
     5.017838554                 11.8                 33.0                  48.0                    7.2
     5.704818971                 14.0                 27.5                  51.3                    7.3
...
"""

# Source: Zide Chen, "[PATCH 0/3] KVM: x86/pmu: ..." cover letter, kvm@vger.kernel.org 2026-02-26,
# <20260226230606.146532-1-zide.chen@intel.com>: "Host results" on a Sapphire Rapids, `perf stat --topdown
# --no-metric-only -- taskset -c 2 perf bench sched messaging` (metric lines beside the events).
SPR_METRIC_LINES = """\
# Running 'sched/messaging' benchmark:
# 20 sender and receiver processes per group
# 10 groups == 400 processes run

     Total time: 1.500 [sec]

 Performance counter stats for 'taskset -c 2 perf bench sched messaging':

     4,266,060,558      TOPDOWN.SLOTS:u              #     32.0 %  tma_frontend_bound
                                                     #      5.2 %  tma_bad_speculation
       588,397,905      topdown-retiring:u           #     13.8 %  tma_retiring
                                                     #     49.0 %  tma_backend_bound
     1,376,283,990      topdown-fe-bound:u
     2,096,827,304      topdown-be-bound:u
       217,425,841      topdown-bad-spec:u
         5,050,520      INT_MISC.UOP_DROPPING:u

       1.755503765 seconds time elapsed

       0.235965000 seconds user
       1.500508000 seconds sys
"""

# Source: the kinematics-demo project's StructOfPointerSim README (GitHub; the search index stored the file
# without its repository's name), "Additional Data / gcc": `perf stat -MPipelineL2 --pid=…` on an AMD Zen
# host: level 2 only, whose halves add up to level 1.
AMD_PIPELINE_L2 = """\
 Performance counter stats for process id '29422':

        33,756,624      ex_ret_brn_misp                  #      0.6 %  bad_speculation_mispredicts
                                                         #      0.0 %  bad_speculation_pipeline_restarts  (24.95%)
    40,255,727,109      de_src_op_disp.all                                                      (24.95%)
         1,836,413      resyncs_or_nc_redirects                                                 (24.95%)
    45,535,296,824      ls_not_halted_cyc                                                       (24.95%)
    38,398,494,362      ex_ret_ops                                                              (24.95%)
    24,886,000,565      ex_no_retire.load_not_complete   #     24.3 %  backend_bound_cpu
                                                         #     58.0 %  backend_bound_memory     (25.19%)
   224,849,027,992      de_no_dispatch_per_slot.backend_stalls                                  (25.19%)
    35,333,377,051      ex_no_retire.not_complete                                               (25.19%)
    45,522,649,730      ls_not_halted_cyc                                                       (25.19%)
       117,876,116      ex_ret_ucode_ops                 #     14.0 %  retiring_fastpath
                                                         #      0.0 %  retiring_microcode       (24.89%)
    45,556,855,373      ls_not_halted_cyc                                                       (24.89%)
    38,412,233,582      ex_ret_ops                                                              (24.89%)
     7,789,830,598      de_no_dispatch_per_slot.no_ops_from_frontend                #      0.5 %  frontend_bound_bandwidth  (24.97%)
     1,075,229,713      cpu/de_no_dispatch_per_slot.no_ops_from_frontend,cmask=0x6/ #      2.4 %  frontend_bound_latency   (24.97%)
    45,576,278,997      ls_not_halted_cyc                                                       (24.97%)

       8.278323506 seconds time elapsed
"""  # noqa: E501 (perf stat's own columns, verbatim)

# Source: Arm Learning Paths, "Performance analysis code example" (learn.arm.com, a learningpathall page):
# `taskset -c 1 perf stat -C 1 --topdown ./test 1000000000` on x86, perf's per-core column layout.
PER_CORE = """\
Performing 1000000000 dependent floating-point divisions...
Done. Final result: 0.000056

 Performance counter stats for 'CPU(s) 1':

                                    retiring      bad speculation       frontend bound        backend bound 
S0-D0-C1           1                 8.5%                 0.0%                 0.1%                91.4% 

       6.052117775 seconds time elapsed
"""

# Source: a Rust input-event benchmark's README ("process/dualsense-chaos-evabs-evkey"; the search index kept
# the file without its repository's name), "topdown Zen 4": `perf stat -D 1000 -M PipelineL1 …`, the
# "Branchless" block as published (a newer perf's default metrics, then PipelineL1 with smt_contention).
ZEN4_PIPELINE_L1 = """\
               757      context-switches                 #     89.3 cs/sec  cs_per_second
                 1      cpu-migrations                   #      0.1 migrations/sec  migrations_per_second
                 5      page-faults                      #      0.6 faults/sec  page_faults_per_second
          8,476.62 msec task-clock                       #      0.9 CPUs  CPUs_utilized
       910,366,687      L1-dcache-load-misses            #      2.2 %  l1d_miss_rate            (42.89%)
           395,636      branch-misses                    #      0.0 %  branch_miss_rate         (42.88%)
     6,502,542,568      branches                         #    767.1 M/sec  branch_frequency     (42.92%)
    44,012,225,260      cpu-cycles                       #      5.2 GHz  cycles_frequency       (42.84%)
   206,755,645,125      instructions                     #      4.7 instructions  insn_per_cycle  (42.83%)
       640,297,974      stalled-cycles-frontend          #     0.01 frontend_cycles_idle        (42.82%)
       
PipelineL1:

   219,730,483,625      de_src_op_disp.all               #      2.0 %  bad_speculation          (49.98%)
    44,116,386,583      ls_not_halted_cyc                                                       (49.98%)
   214,351,198,437      ex_ret_ops                       #     81.0 %  retiring                 (49.98%)
                 0      de_no_dispatch_per_slot.smt_contention #      0.0 %  smt_contention           (50.02%)
    44,115,576,995      ls_not_halted_cyc                                                       (50.02%)
     5,543,991,665      de_no_dispatch_per_slot.no_ops_from_frontend #      2.1 %  frontend_bound           (50.02%)
    44,116,420,605      ls_not_halted_cyc                                                       (50.02%)
    39,403,115,284      de_no_dispatch_per_slot.backend_stalls #     14.9 %  backend_bound            (49.98%)
    44,117,209,499      ls_not_halted_cyc                                                       (49.98%)
"""


def test_per_core_columns():
    t = T.parse(PER_CORE)
    assert (t.retiring, t.bad_speculation, t.frontend_bound, t.backend_bound, t.rows, t.layout) == \
        (8.5, 0.0, 0.1, 91.4, 1, "columns")


def test_amd_pipeline_level1_with_smt_contention():
    t = T.parse(ZEN4_PIPELINE_L1)
    assert (t.bad_speculation, t.retiring, t.smt_contention, t.frontend_bound, t.backend_bound) == \
        (2.0, 81.0, 0.0, 2.1, 14.9)
    assert t.memory_bound is None and t.sane


def test_old_column_layout_averages_the_intervals():
    t = T.parse(OLD_ICELAKE)
    assert t.layout == "columns" and t.rows == 8
    assert t.retiring == pytest.approx((23.0 + 5.0 + 6.7 + 5.0 + 5.1 + 6.2 + 4.7 + 4.7) / 8)
    assert t.backend_bound == pytest.approx((32.1 + 41.6 + 40.6 + 41.0 + 42.3 + 39.3 + 42.4 + 41.1) / 8)
    assert t.memory_bound is None and t.sane


def test_tma_interval_layout_in_its_own_column_order():
    t = T.parse(TMA_INTERVALS)
    assert t.layout == "tma columns" and t.rows == 6
    assert t.backend_bound == pytest.approx((34.9 + 28.1 + 28.1 + 28.6 + 33.0 + 27.5) / 6)
    assert t.bad_speculation == pytest.approx((6.7 + 8.1 + 8.0 + 7.2 + 7.2 + 7.3) / 6)


def test_metric_lines():
    t = T.parse(SPR_METRIC_LINES)
    assert (t.retiring, t.bad_speculation, t.frontend_bound, t.backend_bound, t.layout) == \
        (13.8, 5.2, 32.0, 49.0, "metrics")


def test_amd_pipeline_level2_adds_up_to_level1():
    t = T.parse(AMD_PIPELINE_L2)
    assert (t.memory_bound, t.core_bound) == (58.0, 24.3)
    assert t.backend_bound == pytest.approx(82.3) and t.retiring == pytest.approx(14.0)
    assert t.bad_speculation == pytest.approx(0.6) and t.frontend_bound == pytest.approx(2.9)
    assert t.sane


def test_words_from_published_levels():
    # published readings paired as the fewest threads and the knee: the words only compare two readings,
    # whatever hosts they came from
    icelake, spr, amd = T.parse(OLD_ICELAKE), T.parse(SPR_METRIC_LINES), T.parse(AMD_PIPELINE_L2)
    r = T.compare(icelake, spr, 1, 8)
    assert r.supports == "memory"
    assert r.words == "backend-bound growth supports memory (1 → 8 threads: backend bound 40.1% → 49.0%, " \
                      "retiring 7.6% → 13.8%)"
    r = T.compare(spr, amd, 2, 16)
    assert r.supports == "shared data"
    assert r.words == "retiring unchanged with more stalls supports shared data (2 → 16 threads: retiring " \
                      "13.8% → 14.0%, backend bound 49.0% → 82.3%)"


def test_words_shared_data_and_memory_split():
    few = T.Topdown(30.0, 5.0, 25.0, 40.0, 10.0, 30.0, "metrics", 1)
    shared = T.Topdown(29.0, 2.0, 12.0, 57.0, 12.0, 45.0, "metrics", 1)
    assert T.compare(few, shared, 1, 16).words == (
        "retiring unchanged with more stalls supports shared data (1 → 16 threads: retiring 30.0% → 29.0%, "
        "backend bound 40.0% → 57.0%, memory bound 10.0% → 12.0%)")
    memory = T.Topdown(15.0, 5.0, 20.0, 60.0, 35.0, 25.0, "metrics", 1)
    r = T.compare(few, memory, 1, 16)
    assert r.supports == "memory" and r.words.startswith("memory-bound growth supports memory")
    r = T.compare(few, few, 1, 2)
    assert r.supports is None and r.words.startswith("top-down points at neither memory nor shared data (1 → 2")


def test_words_refuse_inconsistent_counts():
    # Kan Liang's Tremont/Skylake-era outputs show negative shares when counters were multiplexed
    bad = T.Topdown(191.6, 0.1, 7.3, -99.0, None, None, "columns", 1)
    r = T.compare(T.parse(OLD_ICELAKE), bad, 1, 4)
    assert r.supports is None and "at 4 threads is not a share of 100%" in r.words


@pytest.mark.parametrize("sample", [OLD_ICELAKE, TMA_INTERVALS, SPR_METRIC_LINES, AMD_PIPELINE_L2, PER_CORE,
                                    ZEN4_PIPELINE_L1])
def test_truncated_and_garbled(sample):
    body = sample.rstrip("\n.").rstrip()
    cuts = [body.index("\n", body.index("retiring")) + 1]      # a header without rows, or level 1 half printed
    if T.parse(sample).layout != "metrics":
        cuts.append(body.index("%", body.rindex("\n", 0, body.rindex("%"))) + 1)   # the last row cut short
    for cut in cuts:
        with pytest.raises(PerfTextError) as e:
            T.parse(body[:cut])
        assert "\n" not in str(e.value) and str(e.value).startswith("perf stat --topdown:")
    assert_garbled_is_one_line(T.parse, sample, PerfTextError, "0.%#, -\n\x00x", 15)
