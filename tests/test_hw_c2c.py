"""perf c2c report --stdio read by why/c2creport.py, tested only on complete published outputs (quoted
below with their sources: no host of the lab has a PMU), both header layouts, Intel and AMD; and a
truncated or garbled report gives one PerfTextError line, never a traceback."""

import dataclasses

import pytest

from conftest import assert_garbled_is_one_line
from lab.why import c2creport as C
from lab.why.perftext import PerfTextError

# Source: kam3nev, "The Cache Lectures" (kam3nev.github.io, 2020-09-12), `perf c2c report --stdio` of
# example1 on an Intel Core i7-4700HQ: perf <= 5.x headers ("LLC Load Hitm", Rmt/Lcl). Complete as published.
PERF5_INTEL = """\
=================================================
            Trace Event Information              
=================================================
  Total records                     :     484479
  Locked Load/Store Operations      :          0
  Load Operations                   :     239401
  Loads - uncacheable               :          0
  Loads - IO                        :          0
  Loads - Miss                      :          0
  Loads - no mapping                :          0
  Load Fill Buffer Hit              :      61937
  Load L1D hit                      :     177457
  Load L2D hit                      :          3
  Load LLC hit                      :          2
  Load Local HITM                   :          2
  Load Remote HITM                  :          0
  Load Remote HIT                   :          0
  Load Local DRAM                   :          2
  Load Remote DRAM                  :          0
  Load MESI State Exclusive         :          2
  Load MESI State Shared            :          0
  Load LLC Misses                   :          2
  LLC Misses to Local DRAM          :      100.0%
  LLC Misses to Remote DRAM         :        0.0%
  LLC Misses to Remote cache (HIT)  :        0.0%
  LLC Misses to Remote cache (HITM) :        0.0%
  Store Operations                  :     245078
  Store - uncacheable               :          0
  Store - no mapping                :          0
  Store L1D Hit                     :     235578
  Store L1D Miss                    :       9500
  No Page Map Rejects               :          0
  Unable to parse data source       :          0

=================================================
    Global Shared Cache Line Event Information   
=================================================
  Total Shared Cache Lines          :          1
  Load HITs on shared lines         :      87137
  Fill Buffer Hits on shared lines  :      61934
  L1D hits on shared lines          :      25198
  L2D hits on shared lines          :          3
  LLC hits on shared lines          :          2
  Locked Access on shared lines     :          0
  Store HITs on shared lines        :     104713
  Store L1D hits on shared lines    :      95214
  Total Merged records              :     104715

=================================================
                 c2c details                     
=================================================
  Events                            : cpu/mem-loads,ldlat=30/P
                                    : cpu/mem-stores/P
  Cachelines sort on                : Total HITMs
  Cacheline data grouping           : offset,iaddr

=================================================
           Shared Data Cache Line Table          
=================================================
#
#        ----------- Cacheline ----------    Total      Tot  ----- LLC Load Hitm -----  ---- Store Reference ----  --- Load Dram ----      LLC    Total  ----- Core Load Hit -----  -- LLC Load Hit --
# Index             Address  Node  PA cnt  records     Hitm    Total      Lcl      Rmt    Total    L1Hit   L1Miss       Lcl       Rmt  Ld Miss    Loads       FB       L1       L2       Llc       Rmt
# .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  ........  ........  .......  .......  .......  .......  .......  ........  ........
#
      0            0x404040     0   98718   191850  100.00%        2        2        0   104713    95214     9499         0         0        0    87137    61934    25198        3         0         0

=================================================
      Shared Cache Line Distribution Pareto      
=================================================
#
#        ----- HITM -----  -- Store Refs --  --------- Data address ---------                      ---------- cycles ----------    Total       cpu                     Shared                     
#   Num      Rmt      Lcl   L1 Hit  L1 Miss              Offset  Node  PA cnt        Code address  rmt hitm  lcl hitm      load  records       cnt          Symbol    Object    Source:Line  Node
# .....  .......  .......  .......  .......  ..................  ....  ......  ..................  ........  ........  ........  .......  ........  ...............  ........  .............  ....
#
  -------------------------------------------------------------
      0        0        2    95214     9499            0x404040
  -------------------------------------------------------------
           0.00%  100.00%    0.00%    0.00%                0x10     0       1            0x4011b4         0        98        52    52422         1  [.] summer       example1  example1.c:20   0
           0.00%    0.00%  100.00%  100.00%                0x14     0       1            0x401227         0         0         0   104713         1  [.] incrementer  example1  example1.c:31   0 
"""  # noqa: E501 (perf's own columns, verbatim)

# Source: Leo Yan, "[PATCH v3 00/11] perf c2c: Support display for Arm64", LKML 2022-05-18,
# <20220518055729.1869566-1-leo.yan@linaro.org>: "The display result with x86 memory samples" (perf >= 6.0
# headers with the peer column; indented as in the mail).
PERF6_X86_PEER = """\
  =================================================
             Shared Data Cache Line Table          
  =================================================
  #
  #        ----------- Cacheline ----------      Tot  ------- Load Hitm -------    Snoop    Total    Total    Total  --------- Stores --------  ----- Core Load Hit -----  - LLC Load Hit --  - RMT Load Hit --  --- Load Dram ----
  # Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm     Peer  records    Loads   Stores    L1Hit   L1Miss      N/A       FB       L1       L2    LclHit  LclHitm    RmtHit  RmtHitm       Lcl       Rmt
  # .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ........  .......  ........  .......  ........  ........
  #
        0      0x55c8971f0080     0    1967   66.14%      252      252        0        0     6044     3550     2494     2024      470        0      528     2672       78        20      252         0        0         0         0
        1      0x55c8971f00c0     0       1   33.86%      129      129        0        0      914      914        0        0        0        0      272      374       52        87      129         0        0         0         0

  =================================================
        Shared Cache Line Distribution Pareto      
  =================================================
  #
  #        ----- HITM -----    Snoop  ------- Store Refs ------  --------- Data address ---------                      --------------- cycles ---------------    Total       cpu                                     Shared                               
  #   Num  RmtHitm  LclHitm     Peer   L1 Hit  L1 Miss      N/A              Offset  Node  PA cnt        Code address  rmt hitm  lcl hitm      load      peer  records       cnt                  Symbol             Object              Source:Line  Node
  # .....  .......  .......  .......  .......  .......  .......  ..................  ....  ......  ..................  ........  ........  ........  ........  .......  ........  ......................  .................  .......................  ....
  #
    -------------------------------------------------------------------------------
        0        0      252        0     2024      470        0      0x55c8971f0080
    -------------------------------------------------------------------------------
             0.00%   12.30%    0.00%    0.00%    0.00%    0.00%                 0x0     0       1      0x55c8971ed3e9         0      1313       863         0     1222         3  [.] 0x00000000000013e9  false_sharing.exe  false_sharing.exe[13e9]   0
             0.00%    0.79%    0.00%   90.51%    0.00%    0.00%                 0x0     0       1      0x55c8971ed3e2         0      1800       878         0     3029         3  [.] 0x00000000000013e2  false_sharing.exe  false_sharing.exe[13e2]   0
             0.00%    0.00%    0.00%    9.49%  100.00%    0.00%                 0x0     0       1      0x55c8971ed3f4         0         0         0         0      662         3  [.] 0x00000000000013f4  false_sharing.exe  false_sharing.exe[13f4]   0
             0.00%   86.90%    0.00%    0.00%    0.00%    0.00%                0x20     0       1      0x55c8971ed447         0       141       103         0     1131         2  [.] 0x0000000000001447  false_sharing.exe  false_sharing.exe[1447]   0

    -------------------------------------------------------------------------------
        1        0      129        0        0        0        0      0x55c8971f00c0
    -------------------------------------------------------------------------------
             0.00%  100.00%    0.00%    0.00%    0.00%    0.00%                0x20     0       1      0x55c8971ed455         0        88        94         0      914         2  [.] 0x0000000000001455  false_sharing.exe  false_sharing.exe[1455]   0
"""  # noqa: E501 (perf's own columns, verbatim)

# Test input, constructed (no complete `perf c2c report --double-cl --stdio` output has been published):
# PERF6_X86_PEER above (Leo Yan's, published) regrouped as perf 6.3's --double-cl prints the same recording,
# following the option's code in Feng Tang's "[PATCH v2] perf c2c: Add report option to show false sharing in
# adjacent cachelines" (LKML 2023-02-14; commit 1470a108a60e): cl_address()/cl_offset() with twice the line
# size put its lines 0x55c8971f0080 and 0x55c8971f00c0 into one 128-byte group at 0x55c8971f0080, the upper
# line's offset 0x20 becoming 0x60; ui_quirks() names the table's group "Double-Cacheline" (fill_line, same
# width). The table's counts are the two rows summed (PA cnt too); the Pareto's LclHitm shares are
# recomputed over the pair's 381 HITM from the published shares (31, 2, 0, 219 and 129 HITM); every other
# Pareto column is as published.
PERF6_X86_DOUBLE_CL = """\
  =================================================
             Shared Data Cache Line Table          
  =================================================
  #
  #        ------- Double-Cacheline -------      Tot  ------- Load Hitm -------    Snoop    Total    Total    Total  --------- Stores --------  ----- Core Load Hit -----  - LLC Load Hit --  - RMT Load Hit --  --- Load Dram ----
  # Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm     Peer  records    Loads   Stores    L1Hit   L1Miss      N/A       FB       L1       L2    LclHit  LclHitm    RmtHit  RmtHitm       Lcl       Rmt
  # .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ........  .......  ........  .......  ........  ........
  #
        0      0x55c8971f0080     0    1968  100.00%      381      381        0        0     6958     4464     2494     2024      470        0      800     3046      130       107      381         0        0         0         0

  =================================================
        Shared Cache Line Distribution Pareto      
  =================================================
  #
  #        ----- HITM -----    Snoop  ------- Store Refs ------  --------- Data address ---------                      --------------- cycles ---------------    Total       cpu                                     Shared                               
  #   Num  RmtHitm  LclHitm     Peer   L1 Hit  L1 Miss      N/A              Offset  Node  PA cnt        Code address  rmt hitm  lcl hitm      load      peer  records       cnt                  Symbol             Object              Source:Line  Node
  # .....  .......  .......  .......  .......  .......  .......  ..................  ....  ......  ..................  ........  ........  ........  ........  .......  ........  ......................  .................  .......................  ....
  #
    -------------------------------------------------------------------------------
        0        0      381        0     2024      470        0      0x55c8971f0080
    -------------------------------------------------------------------------------
             0.00%    8.14%    0.00%    0.00%    0.00%    0.00%                 0x0     0       1      0x55c8971ed3e9         0      1313       863         0     1222         3  [.] 0x00000000000013e9  false_sharing.exe  false_sharing.exe[13e9]   0
             0.00%    0.52%    0.00%   90.51%    0.00%    0.00%                 0x0     0       1      0x55c8971ed3e2         0      1800       878         0     3029         3  [.] 0x00000000000013e2  false_sharing.exe  false_sharing.exe[13e2]   0
             0.00%    0.00%    0.00%    9.49%  100.00%    0.00%                 0x0     0       1      0x55c8971ed3f4         0         0         0         0      662         3  [.] 0x00000000000013f4  false_sharing.exe  false_sharing.exe[13f4]   0
             0.00%   57.48%    0.00%    0.00%    0.00%    0.00%                0x20     0       1      0x55c8971ed447         0       141       103         0     1131         2  [.] 0x0000000000001447  false_sharing.exe  false_sharing.exe[1447]   0
             0.00%   33.86%    0.00%    0.00%    0.00%    0.00%                0x60     0       1      0x55c8971ed455         0        88        94         0      914         2  [.] 0x0000000000001455  false_sharing.exe  false_sharing.exe[1455]   0
"""  # noqa: E501 (perf's own columns)

# Source: Feng Tang, "[PATCH v2] perf c2c: Add report option to show false sharing in adjacent cachelines",
# LKML 2023-02-14 <20230214075823.246414-1-feng.tang@intel.com> (also commit 1470a108a60e's message): the one
# published --double-cl output, will-it-scale's pagefault2 on an old kernel, its offsets 0x10 and 0x54 "used
# to be displayed in 2 groups". The author trimmed each row after the symbol (no object, source or node).
FENG_TANG_DOUBLE_CL_ROWS = """\
  ----------------------------------------------------------------------
     26       31        2        0        0        0  0xffff888103ec6000
  ----------------------------------------------------------------------
   35.48%   50.00%    0.00%    0.00%    0.00%   0x10     0       1  0xffffffff8133148b      1153        66       971     3748        74  [k] get_mem_cgroup_from_mm
    6.45%    0.00%    0.00%    0.00%    0.00%   0x10     0       1  0xffffffff813396e4       570         0      1531      879        75  [k] mem_cgroup_charge
   25.81%   50.00%    0.00%    0.00%    0.00%   0x54     0       1  0xffffffff81331472       949        70       593     3359        74  [k] get_mem_cgroup_from_mm
   19.35%    0.00%    0.00%    0.00%    0.00%   0x54     0       1  0xffffffff81339686      1352         0      1073     1022        74  [k] mem_cgroup_charge
    9.68%    0.00%    0.00%    0.00%    0.00%   0x54     0       1  0xffffffff813396d6      1401         0       863      768        74  [k] mem_cgroup_charge
    3.23%    0.00%    0.00%    0.00%    0.00%   0x54     0       1  0xffffffff81333106       618         0       804       11         9  [k] uncharge_batch
"""  # noqa: E501 (perf's own columns, verbatim)

# Source: perfgo/perfgo, examples/false-sharing/README.md (GitHub), "Step 5: Detecting False Sharing with
# c2c Analysis": an AMD host, IBS (`Events : ibs_op/ldlat=0/`), perf >= 6.0 headers. Complete as published.
PERF6_AMD_IBS = """\
=================================================
            Trace Event Information              
=================================================
  Total records                     :       9007
  Locked Load/Store Operations      :          1
  Load Operations                   :       3266
  Loads - uncacheable               :          0
  Loads - IO                        :          0
  Loads - Miss                      :          0
  Loads - no mapping                :         17
  Load Fill Buffer Hit              :          0
  Load L1D hit                      :       1149
  Load L2D hit                      :          2
  Load LLC hit                      :       2093
  Load Local HITM                   :       2092
  Load Remote HITM                  :          4
  Load Remote HIT                   :          0
  Load Local DRAM                   :          0
  Load Remote DRAM                  :          0
  Load MESI State Exclusive         :          0
  Load MESI State Shared            :          0
  Load LLC Misses                   :          4
  Load access blocked by data       :          0
  Load access blocked by address    :          0
  Load HIT Local Peer               :          0
  Load HIT Remote Peer              :          0
  LLC Misses to Local DRAM          :        0.0%
  LLC Misses to Remote DRAM         :        0.0%
  LLC Misses to Remote cache (HIT)  :        0.0%
  LLC Misses to Remote cache (HITM) :      100.0%
  Store Operations                  :         41
  Store - uncacheable               :          0
  Store - no mapping                :          4
  Store L1D Hit                     :         36
  Store L1D Miss                    :          0
  Store No available memory level   :          1
  No Page Map Rejects               :         38
  Unable to parse data source       :       5700

=================================================
    Global Shared Cache Line Event Information   
=================================================
  Total Shared Cache Lines          :          1
  Load HITs on shared lines         :       3152
  Fill Buffer Hits on shared lines  :          0
  L1D hits on shared lines          :       1056
  L2D hits on shared lines          :          0
  LLC hits on shared lines          :       2092
  Load hits on peer cache or nodes  :          0
  Locked Access on shared lines     :          0
  Blocked Access on shared lines    :          0
  Store HITs on shared lines        :          0
  Store L1D hits on shared lines    :          0
  Store No available memory level   :          0
  Total Merged records              :       2096

=================================================
                 c2c details                     
=================================================
  Events                            : ibs_op/ldlat=0/
  Cachelines sort on                : Total HITMs
  Cacheline data grouping           : offset,iaddr

=================================================
           Shared Data Cache Line Table          
=================================================
#
#        ----------- Cacheline ----------      Tot  ------- Load Hitm -------    Total    Total    Total  --------- Stores --------  ----- Core Load Hit -----  - LLC Load Hit --  - RMT Load Hit --  --- Load Dram ----
# Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm  records    Loads   Stores    L1Hit   L1Miss      N/A       FB       L1       L2    LclHit  LclHitm    RmtHit  RmtHitm       Lcl       Rmt
# .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ........  .......  ........  .......  ........  ........
#
      0      0x20ea08034080     0    1734  100.00%     2096     2092        4     3152     3152        0        0        0        0        0     1056        0         0     2092         0        4         0         0

=================================================
      Shared Cache Line Distribution Pareto      
=================================================
#
#        ----- HITM -----  ------- Store Refs ------  --------- Data address ---------                      ---------- cycles ----------    Total       cpu                                                   Shared                   
#   Num  RmtHitm  LclHitm   L1 Hit  L1 Miss      N/A              Offset  Node  PA cnt        Code address  rmt hitm  lcl hitm      load  records       cnt                          Symbol                   Object  Source:Line  Node
# .....  .......  .......  .......  .......  .......  ..................  ....  ......  ..................  ........  ........  ........  .......  ........  ..............................  .......................  ...........  ....
#
  ----------------------------------------------------------------------
      0        4     2092        0        0        0      0x20ea08034080
  ----------------------------------------------------------------------
          75.00%   49.62%    0.00%    0.00%    0.00%                0x30     0       1            0x53dc88       410        75         0     1552        12  [.] github.com/perfgo/perfgo/e  perfgo.test.linux.amd64  go.go:0       0
          25.00%   50.38%    0.00%    0.00%    0.00%                0x38     0       1            0x53dbc8         0        75         0     1600        10  [.] github.com/perfgo/perfgo/e  perfgo.test.linux.amd64  go.go:0       0
"""  # noqa: E501 (perf's own columns, verbatim)

# Source: the kernel's Documentation/kernel-hacking/false-sharing.rst (torvalds/linux): will-it-scale's
# tlb_flush1, `perf c2c report --call-graph none -k vmlinux`; the totals and the Pareto rows as quoted there
# (no section titles or headers: read with parse_pareto).
KERNEL_DOC_ROWS = """\
  Total records                     :    1658231
  Locked Load/Store Operations      :      89439
  Load Operations                   :     623219
  Load Local HITM                   :      92117
  Load Remote HITM                  :        139

  #----------------------------------------------------------------------
      4        0     2374        0        0        0  0xff1100088366d880
  #----------------------------------------------------------------------
    0.00%   42.29%    0.00%    0.00%    0.00%    0x8     1       1  0xffffffff81373b7b         0       231       129     5312        64  [k] __mod_lruvec_page_state    [kernel.vmlinux]  memcontrol.h:752   1
    0.00%   13.10%    0.00%    0.00%    0.00%    0x8     1       1  0xffffffff81374718         0       226        97     3551        64  [k] folio_lruvec_lock_irqsave  [kernel.vmlinux]  memcontrol.h:752   1
    0.00%   11.20%    0.00%    0.00%    0.00%    0x8     1       1  0xffffffff812c29bf         0       170       136      555        64  [k] lru_add_fn                 [kernel.vmlinux]  mm_inline.h:41     1
    0.00%    7.62%    0.00%    0.00%    0.00%    0x8     1       1  0xffffffff812c3ec5         0       175       108      632        64  [k] release_pages              [kernel.vmlinux]  mm_inline.h:41     1
    0.00%   23.29%    0.00%    0.00%    0.00%   0x10     1       1  0xffffffff81372d0a         0       234       279     1051        64  [k] __mod_memcg_lruvec_state   [kernel.vmlinux]  memcontrol.c:736   1
"""  # noqa: E501 (perf's own columns, verbatim)

# Source: Lipeng Zhu, "[PATCH] fs/address_space: add alignment padding for i_map and i_mmap_rwsem to mitigate
# a false sharing.", LKML/linux-fsdevel 2023-06-28, <20230628105624.150352-1-lipeng.zhu@intel.com>: the
# "Baseline" Pareto on a 2-socket Sapphire Rapids (kernel 6.4-rc4), accesses from nodes 0 and 1.
TWO_SOCKET_ROWS = """\
=================================================
      Shared Cache Line Distribution Pareto
=================================================
  -------------------------------------------------------------
      0    13642    19392     9012       63  0xff1ddd3f0c8a3b00
  -------------------------------------------------------------
    9.22%    7.37%    0.00%    0.00%    0x0     0       1  0xffffffffab344052       518       334       354     5490       160  [k] vma_interval_tree_remove    [kernel.kallsyms]  vma_interval_tree_remove+18      0  1
    0.71%    0.73%    0.00%    0.00%    0x8     0       1  0xffffffffabb9a21f       574       338       458     1991       160  [k] rwsem_down_write_slowpath   [kernel.kallsyms]  rwsem_down_write_slowpath+655    0  1
    0.52%    0.71%    5.34%    6.35%    0x8     0       1  0xffffffffabb9a236      1080       597       390     4848       160  [k] rwsem_down_write_slowpath   [kernel.kallsyms]  rwsem_down_write_slowpath+678    0  1
    0.56%    0.47%   26.39%    6.35%    0x8     0       1  0xffffffffabb9a5ec      1327      1037       587     8537       160  [k] down_write                  [kernel.kallsyms]  down_write+28                    0  1
    0.11%    0.08%   15.72%    1.59%    0x8     0       1  0xffffffffab17082b      1618      1077       735     7303       160  [k] up_write                    [kernel.kallsyms]  up_write+27                      0  1
    0.01%    0.02%    0.08%    0.00%    0x8     0       1  0xffffffffabb9a27d      1594       593       512       53        43  [k] rwsem_down_write_slowpath   [kernel.kallsyms]  rwsem_down_write_slowpath+749    0  1
    0.00%    0.01%    0.00%    0.00%    0x8     0       1  0xffffffffabb9a0c4         0       323       518       97        74  [k] rwsem_down_write_slowpath   [kernel.kallsyms]  rwsem_down_write_slowpath+308    0  1
   44.74%   49.78%    0.00%    0.00%   0x10     0       1  0xffffffffab170995       609       344       430    26841       160  [k] rwsem_spin_on_owner         [kernel.kallsyms]  rwsem_spin_on_owner+53           0  1
   26.62%   22.39%    0.00%    0.00%   0x10     0       1  0xffffffffab170965       514       347       437    13364       160  [k] rwsem_spin_on_owner         [kernel.kallsyms]  rwsem_spin_on_owner+5            0  1
"""  # noqa: E501 (perf's own columns, verbatim)


def test_perf5_intel_layout_whole_report():
    r = C.parse(PERF5_INTEL)
    assert r.layout == C.LAYOUT_5
    assert r.events == ("cpu/mem-loads,ldlat=30/P", "cpu/mem-stores/P")
    assert r.total("Load Local HITM") == 2 and r.total("Load Remote HITM") == 0
    assert r.total("LLC Misses to Local DRAM") == 100.0
    (line,) = r.lines
    assert (line.address, line.node, line.hitm_share, line.hitm, line.local_hitm, line.remote_hitm, line.records) == \
        (0x404040, 0, 100.0, 2, 2, 0, 191850)
    assert dict(line.columns)["Store Reference L1Miss"] == "9499"
    (cl,) = r.pareto
    assert (cl.num, cl.address, cl.remote_hitm, cl.local_hitm) == (0, 0x404040, 0, 2)
    summer, incrementer = cl.accesses
    assert (summer.offset, summer.symbol, summer.object, summer.source, summer.nodes) == \
        (0x10, "summer", "example1", "example1.c:20", (0,))
    assert summer.local_hitm_share == 100.0 and not summer.stores
    assert (summer.code_address, summer.cycles, summer.records, summer.cpus) == (0x4011b4, (0, 98, 52), 52422, 1)
    assert incrementer.offset == 0x14 and incrementer.stores and incrementer.store_shares == (100.0, 100.0)


def test_perf6_x86_peer_layout():
    r = C.parse(PERF6_X86_PEER)
    assert r.layout == C.LAYOUT_6 and r.totals == () and r.events == ()
    assert [(l.address, l.hitm_share, l.hitm, l.local_hitm, l.remote_hitm, l.records) for l in r.lines] == \
        [(0x55c8971f0080, 66.14, 252, 252, 0, 6044), (0x55c8971f00c0, 33.86, 129, 129, 0, 914)]
    assert dict(r.lines[0].columns)["Snoop Peer"] == "0"
    first, second = r.pareto
    assert len(first.accesses) == 4 and len(second.accesses) == 1
    a = first.accesses[1]
    assert a.peer_share == 0.0 and a.store_shares == (90.51, 0.0, 0.0) and a.stores
    assert a.symbol == "0x00000000000013e2" and a.source == "false_sharing.exe[13e2]"
    assert a.cycles == (0, 1800, 878, 0) and a.records == 3029 and a.cpus == 3
    assert {x.offset for x in first.accesses} == {0x0, 0x20}


def test_perf6_amd_ibs_report():
    r = C.parse(PERF6_AMD_IBS)
    assert r.layout == C.LAYOUT_6 and r.events == ("ibs_op/ldlat=0/",)
    assert r.total("Load Remote HITM") == 4 and r.total("Load Local HITM") == 2092
    (line,) = r.lines
    assert (line.hitm, line.local_hitm, line.remote_hitm, line.node) == (2096, 2092, 4, 0)
    (cl,) = r.pareto
    assert [(a.offset, a.remote_hitm_share, a.local_hitm_share, a.symbol, a.source) for a in cl.accesses] == [
        (0x30, 75.0, 49.62, "github.com/perfgo/perfgo/e", "go.go:0"),
        (0x38, 25.0, 50.38, "github.com/perfgo/perfgo/e", "go.go:0")]


def test_kernel_doc_rows_without_headers():
    totals, rows = KERNEL_DOC_ROWS.split("\n\n")
    assert dict(C.totals(totals)) == {"Total records": 1658231, "Locked Load/Store Operations": 89439,
                                      "Load Operations": 623219, "Load Local HITM": 92117, "Load Remote HITM": 139}
    (cl,) = C.parse_pareto(rows)
    assert (cl.num, cl.address, cl.remote_hitm, cl.local_hitm) == (4, 0xff1100088366d880, 0, 2374)
    assert [a.symbol for a in cl.accesses] == ["__mod_lruvec_page_state", "folio_lruvec_lock_irqsave", "lru_add_fn",
                                               "release_pages", "__mod_memcg_lruvec_state"]
    assert all(a.kernel and a.object == "[kernel.vmlinux]" and a.nodes == (1,) and a.cpus == 64 for a in cl.accesses)
    assert cl.accesses[4].offset == 0x10 and cl.accesses[4].source == "memcontrol.c:736"


def test_two_socket_rows_name_both_nodes():
    (cl,) = C.parse_pareto(TWO_SOCKET_ROWS)
    assert cl.remote_hitm == 13642 and len(cl.accesses) == 9
    assert all(a.nodes == (0, 1) for a in cl.accesses)
    assert cl.accesses[0].source == "vma_interval_tree_remove+18"


def test_words_false_sharing_two_offsets_written_and_read():
    w = C.words(C.parse(PERF5_INTEL))
    assert w == ("shared data confirmed: line 0x404040 with 0 remote and 2 local HITM (local HITM only: within "
                 "one socket); offset 0x10 read by summer; offset 0x14 written by incrementer, from node 0 → "
                 "false sharing (different data in one cache line)")


def test_words_two_sockets():
    w = C.words(C.parse_pareto(TWO_SOCKET_ROWS))
    assert w.startswith("shared data confirmed: line 0xff1ddd3f0c8a3b00 with 13642 remote and 19392 local HITM "
                        "(remote HITM: the line crosses sockets); offset 0x0 read by vma_interval_tree_remove; "
                        "offset 0x8 written by rwsem_down_write_slowpath, down_write and up_write and read by "
                        "rwsem_down_write_slowpath")
    assert w.endswith("from nodes 0 and 1 → false sharing (different data in one cache line)")


def test_words_when_nothing_written_or_nothing_contended():
    w = C.words(C.parse(PERF6_AMD_IBS))
    assert "offset 0x30 read by github.com/perfgo/perfgo/e; offset 0x38 read by" in w
    assert w.endswith("→ sharing of a line that is only read here (its writer was not sampled)")
    assert C.words(()) == "shared data not confirmed: perf c2c found no contended cache line"


@pytest.mark.parametrize("cut", [0.2, 0.5, 0.8, 0.95, 0.99])
@pytest.mark.parametrize("sample", [PERF5_INTEL, PERF6_X86_PEER, PERF6_AMD_IBS])
def test_truncated_report_is_one_error_line(sample, cut):
    text = sample[:int(len(sample) * cut)]
    try:
        C.parse(text)
    except PerfTextError as e:
        assert "\n" not in str(e) and str(e).startswith("perf c2c report:")
    else:
        pytest.fail("a truncated report was accepted")


def test_garbled_reports_never_raise_anything_else():
    for sample in (PERF5_INTEL, PERF6_X86_PEER, PERF6_AMD_IBS, KERNEL_DOC_ROWS):
        for parse in (C.parse, C.parse_pareto):
            assert_garbled_is_one_line(parse, sample, PerfTextError, "0x%.# -=\n[]{}\x00\x1b9aZ", 20)


def test_bounds():
    with pytest.raises(PerfTextError, match="a line over 4096"):
        C.parse("x" * 5000)
    with pytest.raises(PerfTextError, match="not a c2c report"):
        C.parse("hello\n")
    with pytest.raises(PerfTextError, match="expected text"):
        C.parse(None)


# --- adjacent-line prefetch: the rule for --double-cl (c2creport.adjacent_pairs, pair_words) ---------------
def test_a_published_report_whose_hot_lines_are_one_128_byte_pair():
    """Leo Yan's published x86 report: its two lines, 0x…080 and 0x…0c0, are the halves of one 128-byte
    aligned pair and both have HITM → the rule fires (the lab reads the --double-cl report)."""
    r = C.parse(PERF6_X86_PEER)
    (pair,) = C.adjacent_pairs(r)
    assert pair.address == 0x55c8971f0080 and [cl.address for cl in pair.lines] == [0x55c8971f0080, 0x55c8971f00c0]
    assert C.adjacent_pairs(r.pareto) == (pair,)
    w = C.pair_words(pair, why="perf 6.1.187 lacks --double-cl")
    assert w.startswith("perf 6.1.187 lacks --double-cl; adjacent lines 0x55c8971f0080/0x55c8971f00c0 both "
                        "contended (252 and 129 HITM): adjacent-line prefetch may be the cause (a suspect, not "
                        "shown by these counts: c2c samples demand loads and stores, not prefetches; "), w
    assert w.endswith("would confirm it)") and "is the cause" not in w


@pytest.mark.parametrize("name, text", [("PERF5_INTEL", PERF5_INTEL), ("PERF6_AMD_IBS", PERF6_AMD_IBS),
                                        ("TWO_SOCKET_ROWS", TWO_SOCKET_ROWS),
                                        ("KERNEL_DOC_ROWS", KERNEL_DOC_ROWS.split("\n\n")[1])])
def test_published_reports_of_one_hot_line_do_not_ask_for_double_cl(name, text):
    report = C.parse(text) if "Shared Data Cache Line Table" in text else C.parse_pareto(text)
    assert C.adjacent_pairs(report) == (), name


def test_lines_64_bytes_apart_across_a_128_byte_boundary_are_no_pair():
    """Test input: Leo Yan's report with both lines moved up 64 bytes (0x…0c0 and 0x…100): still adjacent,
    but in two 128-byte pairs, which the adjacent-line prefetcher does not fetch together."""
    moved = PERF6_X86_PEER.replace("0x55c8971f00c0", "@").replace("0x55c8971f0080", "0x55c8971f00c0") \
        .replace("@", "0x55c8971f0100")
    r = C.parse(moved)
    assert [cl.address for cl in r.pareto] == [0x55c8971f00c0, 0x55c8971f0100] and C.adjacent_pairs(r) == ()


def test_a_pair_needs_both_lines_contended_and_hot():
    """Test input: the upper line's HITM set to 0 (its Pareto row kept) → no pair; and the pair is looked
    for among the hot lines only (here the first one)."""
    r = C.parse(PERF6_X86_PEER)
    (pair,) = C.adjacent_pairs(r)
    cold = dataclasses.replace(r.pareto[1], local_hitm=0)
    assert C.adjacent_pairs((r.pareto[0], cold)) == ()
    assert C.adjacent_pairs(r, hot=1) == ()


def test_the_double_cl_report_parses_with_the_same_parser():
    """The constructed --double-cl text (see PERF6_X86_DOUBLE_CL): one 128-byte line, offsets to 0x7f."""
    d = C.parse(PERF6_X86_DOUBLE_CL)
    assert d.double_cl and not C.parse(PERF6_X86_PEER).double_cl and d.layout == C.LAYOUT_6
    (line,) = d.lines
    assert (line.address, line.node, line.hitm, line.local_hitm, line.remote_hitm, line.records) == \
        (0x55c8971f0080, 0, 381, 381, 0, 6958)
    assert dict(line.columns)["Double-Cacheline PA cnt"] == "1968"
    (cl,) = d.pareto
    assert [a.offset for a in cl.accesses] == [0x0, 0x0, 0x0, 0x20, 0x60]
    assert C.adjacent_pairs(d) == ()            # its lines are pairs already


def test_pair_words_with_the_double_cl_report():
    (pair,) = C.adjacent_pairs(C.parse(PERF6_X86_PEER))
    w = C.pair_words(pair, C.parse(PERF6_X86_DOUBLE_CL))
    assert w.startswith(
        "adjacent lines 0x55c8971f0080/0x55c8971f00c0 both contended (252 and 129 HITM); perf c2c --double-cl "
        "groups them as the 128-byte pair 0x55c8971f0080 with 0 remote and 381 local HITM: offset 0x0 written by "
        "false_sharing.exe+0x00000000000013e2 and false_sharing.exe+0x00000000000013f4 and read by "
        "false_sharing.exe+0x00000000000013e9; offset 0x20 read by false_sharing.exe+0x0000000000001447; offset "
        "0x60 read by false_sharing.exe+0x0000000000001455 (offsets from 0x40 are 0x55c8971f00c0's), from node 0 "
        "→ adjacent-line prefetch may be the cause (a suspect, not shown by these counts"), w
    # a --double-cl report without that pair (test input: PERF6_AMD_IBS's line) says so, still only a suspect
    other = C.pair_words(pair, C.parse(PERF6_AMD_IBS))
    assert "the --double-cl report has no pair at 0x55c8971f0080: adjacent-line prefetch may be the cause" in other


def test_the_published_double_cl_rows_are_trimmed_and_refused_in_one_line():
    """Feng Tang's published --double-cl rows stop at the symbol: read as a received text they are cut rows,
    refused in one line (this is why the parse test above uses constructed input)."""
    with pytest.raises(PerfTextError, match=r"^perf c2c report:4: .*a row without `\[\.\] symbol object source`"):
        C.parse_pareto(FENG_TANG_DOUBLE_CL_ROWS)
    # what it shows is what the rule expects of such a pair: offsets in both 64-byte halves of one group
    offsets = {int(row.split()[5], 16) for row in FENG_TANG_DOUBLE_CL_ROWS.splitlines() if "%" in row}
    assert offsets == {0x10, 0x54} and {o // C.LINE for o in offsets} == {0, 1}


def test_double_cl_reports_truncated_or_garbled_are_one_line():
    assert_garbled_is_one_line(C.parse, PERF6_X86_DOUBLE_CL, PerfTextError, "0x%.# -=\n[]{}\x00\x1b9aZ", 20)
    with pytest.raises(PerfTextError):
        C.parse(PERF6_X86_DOUBLE_CL[:len(PERF6_X86_DOUBLE_CL) // 2])
