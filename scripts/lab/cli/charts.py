"""`python3 -m lab.cli.charts`: runs lab/report/charts.py as its program."""
import runpy

runpy.run_module("lab.report.charts", run_name="__main__", alter_sys=True)
