"""The programs: one module per verb, run as `python3 -m lab.cli.VERB`."""
