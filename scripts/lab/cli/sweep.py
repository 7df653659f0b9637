#!/usr/bin/env python3
"""The sweep engine: experiments over placements × threads × variants × repeats into one run folder.

  ./lab sweep [KEY=VALUE…] [experiments/NAME.spec…]

With no spec, every experiments/*.spec whose `sweep` key is not `no`. The sweep's own keys:
  profile=NAME      use the spec lines `key[NAME] = …` (default: default)
  perf=0|1|stat     1: record every point with perf (docs/instruments.md); stat: count cycles,
                    instructions, cache and LLC misses, switches, migrations where the PMU allows
  run=DIR           the run folder (default: resume this host's newest unfinished run of the same
                    arguments, else results/<UTC time>-<host>)
  dry=1             measure nothing: print every point, what is impossible or skipped and why, the ETA,
                    and the price against the budget
  budget=DURATION   45m, 1h30m, 90s or none: the plan is fitted to it by its own price, leaving out the
                    thread counts that change the answer least (each a skipped point, said so); a sweep
                    running over its price re-plans and says so. The default sweep (no spec named) has one:
                    45m, 20m on a host of at most 4 PUs
  topology=X        with dry=1 only: price the sweep on an hwloc XML file or synthetic string
  history=FILE      with dry=1 only: seconds per run, repeats and re-measure rates from another host's
                    history summary (scripts/lab/cli/history.py there; fleet-plan fetches it), not this host's runs
  kind=K            on a hybrid CPU, place threads on this CPU kind (p, e, all, …: topo.py --kind)
  seed=N            the seed of the variants' shuffled order in each round (default: from the run's name;
                    the journal's `round` events record the seed and the order)
  why=1             once an experiment's timed repeats are done, why_runs=N (1–10, default 2) evidence
                    runs under perf record (on-CPU, off-CPU per reason, futex waits, scheduling; docs/design.md
                    "Why it stops scaling: evidence") into raw/<exp>/<point>_why/, at each curve's fewest
                    threads and knee (the spec key why_points=all: every point); never in a timed repeat
  draw=0            measure only: no charts or report at the end (draw them later, anywhere, with
                    `./lab report RUN`: a slow or emulated host need not spend its time drawing)
Any other KEY=VALUE overrides that spec key in every spec (threads, repeats, ci, placements, plan=adaptive …);
docs/instruments.md lists them. Exit: 0 complete, 1 points failed, 2 bad input (nothing run),
130 interrupted (run the same command again to resume).
"""
import sys

from lab.engine import api
from lab.errors import program, run
from lab.report import front


@program("error")
def main(argv):
    """Price the sweep (dry=1) or measure it: a narrative over lab/engine/api.py."""
    try:
        req = api.request(argv)         # EngineError: bad input, one line, nothing run
        if req.dry:
            api.dry_run(req, sys.stdout)
            return 0
        outcome, _run = front.after_sweep(api.run(req))
    except OSError as e:    # a full disk while preparing the run folder: one line, nothing lost
        print(f"error: cannot write: {e}; the repeats measured so far are kept: free space and run the same "
              "command again to resume", file=sys.stderr)
        return 1
    for line in outcome.lines():
        print(line, file=sys.stderr)
    return outcome.code


if __name__ == "__main__":
    run(main)
