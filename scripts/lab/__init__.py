"""The scaling lab's Python code: one package, one sub-package per part of the lab."""

import os as _os

# Set once, here: every python program the lab spawns (charts, report, the reaper, perf's summary…) runs
# as `python3 -m lab.cli.VERB` and finds this package through PYTHONPATH, whoever started the first one.
SCRIPTS = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
ROOT = _os.path.dirname(SCRIPTS)      # the lab's checkout: specs, results/, the instruments' folders
if SCRIPTS not in _os.environ.get("PYTHONPATH", "").split(_os.pathsep):
    _os.environ["PYTHONPATH"] = _os.pathsep.join(p for p in (SCRIPTS, _os.environ.get("PYTHONPATH")) if p)
