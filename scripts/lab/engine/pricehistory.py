"""A host's own history, as the dry run prices from it: for each (experiment, profile), the newest run of
this host that measured it gives the seconds per run (the median of its kept repeats, the capacity probe's
time included), the repeats a point needed on average, and its re-measured attempts per kept repeat; and,
per point of it (`History.point`), the repeats that point needed and the interval it stopped at, from
which its repeats start (price.known). A received summary has the first only.

One owner, three readers: price.py on this host (`local`), scripts/lab/cli/history.py on a fleet host (`summary`,
one bounded JSON document), and fleet-plan on the controller, which hands a host's summary to the dry run
(`history=FILE`, read by `load`). A received summary is data from another machine: `load` parses it
strictly (exact keys and types, plain names, finite values within bounds, a bounded size) or refuses it
with one line.
"""
import itertools
import json
import math
import os
import re

from lab.core.runfolder import host_runs
from lab.core.stats import median
from lab.errors import LabError

from . import journal as jr

FORMAT = "scaling-lab history 1"
MAX_BYTES = 256 * 1024
MAX_ENTRIES = 1000
# What a history reads on its own host, so that a results/ folder of years of runs (or one huge journal)
# costs a bounded time: the newest runs only, and no journal larger than any sweep of this lab writes.
MAX_RUNS = 200
MAX_JOURNAL_BYTES = 64 * 1024 * 1024
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")      # experiments, profiles, host names
RUN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")      # a run folder's name
# (key, lowest, highest, may be null): a value outside is not a time this lab measured
BOUNDS = {"seconds_per_run": (1e-9, 7 * 86400.0, False), "repeats": (1.0, 100000.0, True),
          "remeasured_per_repeat": (0.0, 1000.0, False)}
ENTRY_KEYS = {"experiment", "profile", "run"} | set(BOUNDS)


class HistoryError(LabError):
    pass


def finite(x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x) and x >= 0
    except OverflowError:       # a 400-digit integer from a received summary: no float holds it
        return False


def probe_seconds(done):
    """The capacity probe's time around one kept repeat (lab/engine/capacity.py): a run costs it too."""
    noise = done.get("noise")
    cap = noise.get("capacity") if isinstance(noise, dict) else None
    ms = cap.get("probe_ms") if isinstance(cap, dict) else None
    return ms / 1000 if finite(ms) else 0.0


def events_of(rf):
    """A run folder's journal events; [] for a damaged or oversized journal (it says nothing reliable)."""
    try:
        if os.path.getsize(rf.journal_path) > MAX_JOURNAL_BYTES:
            return []
        return jr.read(rf.journal_path)
    except (OSError, jr.JournalError):
        return []


def of_run(rf, events=None):
    """{(experiment, profile): (seconds per run, mean repeats per point or None, re-measured per repeat)}
    of one run folder; {} for a damaged or oversized journal (it says nothing reliable about times)."""
    events = events_of(rf) if events is None else events
    profiles = {e.get("profile") for e in events if e["event"] == "sweep" and isinstance(e.get("profile"), str)}
    secs, ns, again = {}, {}, {}
    for e in events:
        x = e.get("experiment")
        if not isinstance(x, str):
            continue
        # a value that is not a finite number (a damaged or foreign journal) says nothing: left out
        if e["event"] == "done" and finite(e.get("seconds")):
            secs.setdefault(x, []).append(e["seconds"] + probe_seconds(e))
        elif e["event"] == "confidence" and finite(e.get("n")):
            ns.setdefault(x, []).append(e["n"])
        elif e["event"] == "remeasured":
            again[x] = again.get(x, 0) + 1
    return {(x, p): (median(s), sum(ns[x]) / len(ns[x]) if ns.get(x) else None, again.get(x, 0) / len(s))
            for x, s in secs.items() for p in profiles}


def points_of(events):
    """{(experiment, variant, placement, threads, cpus): (n, ci %, confident)} of one run's `confidence`
    events: how many repeats each adaptive point needed and the interval it stopped at (the variance it
    showed, for price.known). A point stopped at an undefined interval (ci_pct null) is left out."""
    out = {}
    for e in events:
        if e["event"] != "confidence":
            continue
        key = tuple(e.get(k) for k in ("experiment", "variant", "placement", "threads", "cpus"))
        if (all(isinstance(k, str) for k in key[:3] + key[4:]) and isinstance(key[3], int)
                and finite(e.get("n")) and e["n"] >= 1 and finite(e.get("ci_pct"))
                and isinstance(e.get("confident"), bool)):
            out[key] = (int(e["n"]), float(e["ci_pct"]), e["confident"])
    return out


class History:
    """Prices by (experiment, profile): `get` gives (seconds per run, repeats or None, re-measured per
    repeat, the run's name) or None; `where` says whose history it is, for the dry run's lines."""

    def __init__(self, where, found=(), runs=(), name_run=False, skip=""):
        self.where, self._found, self.name_run = where, dict(found), name_run
        # newest first: older runs are not read; skip: the run being resumed is no history of itself
        self._runs = itertools.islice((rf for rf in runs if rf.name != skip), MAX_RUNS)
        self._points = {}     # {run name: points_of(its events)}: a received summary has none

    def source(self, found):
        """Where one experiment's figures came from, for the dry run's comment line."""
        return f"{self.where} (run {found[3]})" if self.name_run else self.where

    def get(self, experiment, profile):
        # this host's runs are read newest first, only as far as a question needs
        while (experiment, profile) not in self._found:
            rf = next(self._runs, None)
            if rf is None:
                return None
            self._read(rf)
        return self._found[(experiment, profile)]

    def _read(self, rf):
        events = events_of(rf)
        for k, v in of_run(rf, events).items():
            self._found.setdefault(k, v + (rf.name,))
        self._points[rf.name] = points_of(events)

    def point(self, experiment, profile, variant, placement, threads, cpus):
        """(n, ci %, confident, run) of one point in the run `get` prices its experiment from (the newest of
        this host that measured it: the same host, experiment, variant, placement, thread count and CPUs),
        or None."""
        found = self.get(experiment, profile)
        got = found and self._points.get(found[3], {}).get((experiment, variant, placement, threads, cpus))
        return got + (found[3],) if got else None

    def all(self):
        """Every (experiment, profile) priced, reading every run."""
        for rf in self._runs:
            self._read(rf)
        return self._found


def local(results, skip=""):
    """This host's history, from its run folders in results/ (but skip, the run being resumed)."""
    return History("newest run here", runs=host_runs(results), skip=skip)


def summary(results, host):
    """The document a fleet host sends: its newest run's prices per (experiment, profile), bounded, and only
    values `load` accepts (a host never sends what its controller would refuse)."""
    entries = []
    for (x, p), (s, n, again, run) in local(results).all().items():
        e = {"experiment": x, "profile": p, "seconds_per_run": s, "repeats": n, "remeasured_per_repeat": again,
             "run": run}
        if len(entries) < MAX_ENTRIES and not entry_problem(e):
            entries.append(e)
    return {"format": FORMAT, "host": host if NAME.fullmatch(host) else "unnamed", "entries": entries}


def entry_problem(e):
    """Why a summary's entry is refused, or ""."""
    if not isinstance(e, dict) or set(e) != ENTRY_KEYS:
        return f"an entry must have exactly the keys {', '.join(sorted(ENTRY_KEYS))}"
    for k in ("experiment", "profile"):
        if not isinstance(e[k], str) or not NAME.fullmatch(e[k]):
            return f"{k} must be a plain name (letters, digits, '.', '_', '-'; at most 64)"
    if not isinstance(e["run"], str) or not RUN.fullmatch(e["run"]):
        return "run must be a run folder's plain name"
    for k, (lo, hi, nullable) in BOUNDS.items():
        v = e[k]
        if v is None and nullable:
            continue
        if not finite(v) or not lo <= v <= hi:
            return f"{e['experiment']} {e['profile']}: {k} must be a finite number from {lo:g} to {hi:g}"
    return ""


def _pairs(pairs):
    keys = [k for k, _v in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


def _constant(name):
    raise ValueError(f"{name} is not a number")


def load(path, label=None):
    """A received summary as a History; HistoryError (one line) for anything else."""
    where = label or path
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise HistoryError(f"{where}: cannot be read ({e.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise HistoryError(f"{where}: larger than {MAX_BYTES // 1024} KiB")
    try:
        doc = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs, parse_constant=_constant)
    except (UnicodeDecodeError, RecursionError):
        raise HistoryError(f"{where}: not UTF-8 JSON") from None
    except ValueError as e:
        raise HistoryError(f"{where}: not a history summary (JSON: {str(e)[:80]})") from None
    if not isinstance(doc, dict) or set(doc) != {"format", "host", "entries"} or doc["format"] != FORMAT:
        raise HistoryError(f"{where}: not a history summary (expected keys format, host, entries; format {FORMAT!r})")
    if not isinstance(doc["host"], str) or not NAME.fullmatch(doc["host"]):
        raise HistoryError(f"{where}: host must be a plain name")
    if not isinstance(doc["entries"], list) or len(doc["entries"]) > MAX_ENTRIES:
        raise HistoryError(f"{where}: entries must be a list of at most {MAX_ENTRIES}")
    found = {}
    for i, e in enumerate(doc["entries"], 1):
        why = entry_problem(e)
        if why:
            raise HistoryError(f"{where}: entry {i}: {why}")
        key = (e["experiment"], e["profile"])
        if key in found:
            raise HistoryError(f"{where}: entry {i}: {key[0]} {key[1]} given twice")
        found[key] = (float(e["seconds_per_run"]), None if e["repeats"] is None else float(e["repeats"]),
                      float(e["remeasured_per_repeat"]), e["run"])
    return History(f"history of {doc['host']}", found, name_run=True)
