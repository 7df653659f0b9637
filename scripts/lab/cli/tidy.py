"""`python3 -m lab.cli.tidy`: runs lab/core/tidy.py as its program."""
import runpy

runpy.run_module("lab.core.tidy", run_name="__main__", alter_sys=True)
