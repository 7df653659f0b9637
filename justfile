# The scaling lab: every user-facing recipe. `just --list` shows them by group.
# Without Nix, run them through ./lab (it installs what is missing first): `./lab sweep`, `./lab test`.

set shell := ["bash", "-euo", "pipefail", "-c"]

# The lab's Python code is one package, scripts/lab/; every program is `python3 -m lab.cli.VERB`.
export PYTHONPATH := justfile_directory() + "/scripts"

# Each instrument brings its own recipes (build-*, test-*, its sweeps) in its folder.
import? 'c-probes/lab.just'
import? 'cache-server/lab.just'
import? 'rust-runner/lab.just'
import? 'vm/lab.just'
# Several hosts through Ansible: fleet-check, fleet-plan, fleet-sweep.
import? 'fleet/lab.just'

# List every recipe
default:
    @just --list --unsorted

# Prepare this host for why=1's evidence: mount tracefs where it is missing (as root), name the perf settings that cut evidence (never changed); ./lab and a why=1 sweep do it themselves
[group('lab')]
prepare:
    python3 -m lab.cli.prepare

# Sweep every instrument over this host's placements into results/<run>/ (args: profile=smoke perf=1 threads="1 2" repeats=N|auto ci=5 run=DIR dry=1 topology=FILE|STRING, or experiments/X.spec)
[group('lab')]
[positional-arguments]
sweep *args:
    python3 -m lab.cli.sweep "$@"

# How any command scales here: `just scale [threads="1 2 4"] [placements=…] [metric=NAME:REGEX[:UNIT[:higher|lower]]] [save=experiments/NAME.spec] [dry=1] -- CMD ARG…` ({threads} {cpus} {ncpus} inside words; never a shell)
[group('lab')]
[positional-arguments]
scale *args:
    python3 -m lab.cli.scale "$@"

# Fit the Universal Scalability Law to a curve measured anywhere: `just usl FILE.csv [metric=lower]` (columns threads,throughput; repeats allowed); prints sigma, kappa, lambda, peak with 95% CIs and the shape in words
[group('lab')]
[positional-arguments]
usl *args:
    python3 -m lab.cli.usl "$@"

# Print this host's topology: packages, NUMA nodes (per package), dies, L3 domains, shared L2, cores, PUs, SMT, CPU kinds (or of a fixture: just topology topologies/X.xml)
[group('lab')]
[positional-arguments]
topology topo="":
    python3 -m lab.cli.topo ${1:+--topology "$1"} summary

# Print the ordered CPU list of a placement for N threads (policies: unpinned compact cores scatter smt same-l2 same-l3 cross-l3 cross-die cross-numa cross-package cross-kind; hybrid CPUs: LAB_KIND=p|e|all)
[group('lab')]
[positional-arguments]
plan policy n topo="":
    python3 -m lab.cli.topo ${3:+--topology "$3"} plan "$1" "$2"

# Print every CPU pair with a relation (smt same-l2 same-l3 cross-l3 cross-die cross-numa cross-package cross-kind)
[group('lab')]
[positional-arguments]
pairs policy topo="":
    python3 -m lab.cli.topo ${2:+--topology "$2"} pairs "$1"

# Print the relation of two CPUs: smt, same-l2, same-l3, cross-l3, cross-die, cross-numa, cross-package or cross-kind
[group('lab')]
[positional-arguments]
relation a b topo="":
    python3 -m lab.cli.topo ${3:+--topology "$3"} relation "$1" "$2"

# Capture this host's environment (topology, kernel, governor, VM or bare metal, versions) into DIR
[group('lab')]
[positional-arguments]
env dir="":
    scripts/env.sh ${1:+"$1"}

# Redraw the charts and rewrite report.md and report.html of a run folder
[group('lab')]
[positional-arguments]
report run:
    python3 -m lab.cli.report "$1"

# Put two runs (two hosts, or before/after) side by side: medians, ratio, Welch's t-test
[group('lab')]
[positional-arguments]
compare run_a run_b:
    python3 -m lab.cli.compare "$1" "$2"

# Print the path of a run's report.html (default: the newest run) and open it where a desktop browser exists
[group('lab')]
[positional-arguments]
open run="":
    scripts/open.sh ${1:+"$1"}

# Import a published core-to-core matrix (nviennot/core-to-core-latency --csv) as a c2c-matrix run: FILE topology=FILE|STRING [name=CPU] [source=…] [run=DIR]; prints relation,pairs,median_ns,p10_ns,p90_ns
[group('lab')]
[positional-arguments]
import-c2c *args:
    python3 -m lab.cli.import_c2c "$@"

# Import a result file of hyperfine (--export-json), Google Benchmark (JSON), pyperf, or ./lab export json as a run: FILE [topology=FILE|STRING] [name=EXPERIMENT] [run=DIR] [threads=PARAMETER]; prints how it scales
[group('lab')]
[positional-arguments]
import *args:
    python3 -m lab.cli.import_run "$@"

# Export a run: RUN [format=json|bmf|hyperfine] [out=FILE] (json: docs/run-format.md; bmf: Bencher's metric format; hyperfine: its --export-json shape)
[group('lab')]
[positional-arguments]
export *args:
    python3 -m lab.cli.export "$@"

# Import every catalogued published matrix (reference/c2c/), or the named ones, each into its own run
[group('lab')]
[positional-arguments]
import-c2c-catalogue *names:
    python3 -m lab.cli.import_c2c catalogue "$@"

# Pack one run folder into results/<run>.tar.gz
[group('lab')]
[positional-arguments]
archive run:
    python3 -m lab.cli.archive pack "$1"

# Re-measure an archived run's experiments here with this checkout's specs (the archive's own commands are shown, never run), then compare
[group('lab')]
[positional-arguments]
replay archive:
    python3 -m lab.cli.archive replay "$1"

# Benchmark the lab itself: the cache sweep twice back to back (compact): largest ratio between the runs' medians, re-measured and suspect repeats, the engine's overhead per point (args: KEY=VALUE…, a spec)
[group('lab')]
[positional-arguments]
bench-lab *args:
    python3 -m lab.cli.bench_lab "$@"

# Benchmark ./lab scale itself: the engine's 1-thread wall time of `sort --parallel=1` beside hyperfine's, interleaved, with the noise and the engine's overhead per repeat (args: rounds=5 runs=3 lines=400000 keep=DIR)
[group('lab')]
[positional-arguments]
bench-scale *args:
    python3 -m lab.cli.bench_scale "$@"

# Run every test: the lab's own, then each instrument's test-* recipe; ends with "N passed, N failed"
[group('test')]
test:
    scripts/test.sh

# The quick loop while editing (a few minutes): lint and the lab's tests that start no sweep, fleet, cluster, guest or build
[group('test')]
test-fast:
    just lint
    python3 -m pytest -q -m "not slow" --durations=10 tests

# The lab's own tests: placements on the fixtures, the sweep engine (resume after kill -9), the flake, end to end
[group('test')]
test-lab:
    python3 -m pytest -q --durations=25 tests

# Lint the drivers: shellcheck the shell scripts, then ruff the Python
[group('test')]
lint: lint-shell lint-python

# shellcheck every driver
[group('test')]
lint-shell:
    shellcheck -S warning lab scripts/*.sh tests/fixtures/*.sh $(ls */*.sh */bench/*.sh 2>/dev/null)

# ruff the lab's Python (ruff.toml: long lines, unused imports and names, import order)
[group('test')]
lint-python:
    ruff check scripts tests
