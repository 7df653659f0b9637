"""`python3 -m lab.cli.nixenv`: runs lab/fleet/nixenv.py as its program."""
import runpy

runpy.run_module("lab.fleet.nixenv", run_name="__main__", alter_sys=True)
