"""`python3 -m lab.cli.topo`: runs lab/topology/topo.py as its program."""
import runpy

runpy.run_module("lab.topology.topo", run_name="__main__", alter_sys=True)
