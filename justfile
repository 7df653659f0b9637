# The scaling lab: every user-facing recipe. `just --list` shows them by group.
# Without Nix, run them through ./lab (it installs what is missing first): `./lab sweep`, `./lab test`.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Each instrument brings its own recipes (build-*, test-*, its sweeps) in its folder.
import? 'c-probes/lab.just'
import? 'cache-server/lab.just'
import? 'rust-runner/lab.just'
import? 'vm/lab.just'

# List every recipe
default:
    @just --list --unsorted

# Sweep every instrument over this host's placements into results/<run>/ (args: profile=smoke perf=1 threads="1 2" repeats=N run=DIR topology=FILE|STRING, or experiments/X.spec)
[group('lab')]
[positional-arguments]
sweep *args:
    scripts/sweep.sh "$@"

# Print this host's topology: packages, NUMA nodes (per package), dies, L3 domains, shared L2, cores, PUs, SMT, CPU kinds (or of a fixture: just topology topologies/X.xml)
[group('lab')]
topology topo="":
    scripts/topo.py {{ if topo == "" { "" } else { "--topology '" + topo + "'" } }} summary

# Print the ordered CPU list of a placement for N threads (policies: unpinned compact cores scatter smt same-l2 same-l3 cross-l3 cross-die cross-numa cross-package cross-kind; hybrid CPUs: LAB_KIND=p|e|all)
[group('lab')]
plan policy n topo="":
    scripts/topo.py {{ if topo == "" { "" } else { "--topology '" + topo + "'" } }} plan {{ policy }} {{ n }}

# Print every CPU pair with a relation (smt same-l2 same-l3 cross-l3 cross-die cross-numa cross-package cross-kind)
[group('lab')]
pairs policy topo="":
    scripts/topo.py {{ if topo == "" { "" } else { "--topology '" + topo + "'" } }} pairs {{ policy }}

# Print the relation of two CPUs: smt, same-l2, same-l3, cross-l3, cross-die, cross-numa, cross-package or cross-kind
[group('lab')]
relation a b topo="":
    scripts/topo.py {{ if topo == "" { "" } else { "--topology '" + topo + "'" } }} relation {{ a }} {{ b }}

# Capture this host's environment (topology, kernel, governor, VM or bare metal, versions) into DIR
[group('lab')]
env dir="":
    scripts/env.sh {{ dir }}

# Redraw the charts and rewrite report.md of a run folder
[group('lab')]
report run:
    scripts/charts.py {{ run }}
    scripts/report.py {{ run }}

# Put two runs (two hosts, or before/after) side by side: medians, ratio, Welch's t-test
[group('lab')]
compare run_a run_b:
    scripts/compare.py {{ run_a }} {{ run_b }}

# Pack one run folder into results/<run>.tar.gz
[group('lab')]
archive run:
    scripts/archive.sh pack {{ run }}

# Re-run an archived run's sweep on this host into a new run, then compare the two
[group('lab')]
replay archive:
    scripts/archive.sh replay {{ archive }}

# Run every test: the lab's own, then each instrument's test-* recipe; ends with "N passed, N failed"
[group('test')]
test:
    scripts/test.sh

# The lab's own tests: placements on the fixtures, the sweep engine (resume after kill -9), the flake, end to end
[group('test')]
test-lab:
    python3 -m pytest -q tests

# shellcheck every driver
[group('test')]
lint:
    shellcheck -S warning lab scripts/*.sh tests/fixtures/*.sh $(ls */*.sh 2>/dev/null)
