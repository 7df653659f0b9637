"""bench-lab (issue 25): two back-to-back sweeps of one spec, and whether the lab knew when it was
wrong: every charted point whose two runs' medians differ by more than x1.15 must be flagged in at
least one run (suspect, or not confident). The command's numbers are set by the test, so the answer
is known: a steady point that moves between the runs is not flagged (the lab could not know), a point
noisy in its second run is (its interval is too wide)."""

EMIT = r"""#!/usr/bin/env bash
# emit.sh VARIANT: the Nth call of a variant prints the Nth value of its list (run 1: calls 1-3).
set -euo pipefail
n=$(( $(cat "$0.$1" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$0.$1"
case $1 in
  steady) values=(100 100 100 200 200 200) ;;
  noisy)  values=(100 100 100 200 50 300) ;;
esac
echo "metric,value,unit"; echo "ops_per_s,${values[$(( (n - 1) % 6 ))]},1/s"
"""


def test_bench_lab_says_which_differences_the_lab_flagged(tmp_path, results, lab_run):
    emit = tmp_path / "emit.sh"
    emit.write_text(EMIT)
    emit.chmod(0o755)
    spec = tmp_path / "twice.spec"
    spec.write_text(f"experiment = twice\ncommand = {emit} {{variant}}\nvariants = steady noisy\n"
                    "placements = compact\nthreads = 1\nrepeats = auto\nmin_repeats = 3\nmax_repeats = 3\n"
                    "ci = 5\nwarmup = 0\nretries = 0\ncapacity = 0\nmax_foreign = 100\n"
                    "max_neighbour = 100\nmax_steal = 100\n"
                    "max_invol_cs = 1000000000\nmin_corun = 0\nchart = bars ops_per_s\n")
    p = lab_run.program("bench_lab", str(spec))
    out = p.stdout
    assert "charted point-metrics whose two runs differ by more than x1.15: 2, flagged in at least one run " \
           "(suspect or not confident): 1" in out, out
    assert "(the lab knew)" not in out
    assert "(neither run flagged: suspect or not confident): " in out and ", of them charted: 1\n" in out, out
    # The steady point, confident in both runs and ×2 apart, is the only unflagged one: its ratio is the goal's.
    assert "largest ratio between the two runs' medians, charted metrics: 2.000 (goal <= 1.15)" in out, out
