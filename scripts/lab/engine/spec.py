"""Sweep specs: `key = value` lines, `#` comments, `key[profile] = value` for one profile.

KEYS below is the one table of spec keys: docs/instruments.md documents the same table and a test
holds the two together. A malformed line, an unknown key or a value out of range is a SpecError
naming file:line; the engine reports it and exits 2 before anything is created or run.
"""
import os
import re
import sys

from lab.core.runfolder import LIMITS, RunFolderError, read_file, read_given, run_of
from lab.core.term import visible
from lab.errors import LabError
from lab.topology.topo import POLICIES

from . import execmetric as av
from .child import RESOURCE_METRICS
from .clients import MOST_CLIENTS, ClientError
from .clients import parse as parse_clients
from .goals import parse as parse_goal

# key: (kind, default, may the command line override it, meaning). Kinds are checked by check().
# Shell keys (command, args, build, setup, teardown) come only from the project's spec files: a value
# from the command line is never run as shell text.
KEYS = {
    "experiment": ("name", None, False, "name; the data goes to data/<experiment>.csv"),
    "requires": ("words", "", False, "commands that must be on PATH; without one the experiment is skipped whole"),
    "build": ("shell", "", False, "run once before the first point; if it fails only this experiment is lost"),
    "setup": ("shell", "", False, "run once after build, before the first point"),
    "teardown": ("shell", "", False, "run once after the last point, also when the sweep is interrupted"),
    "command": ("shell", None, False, "the measuring command, with {placeholders}"),
    "exec": ("argv", None, False,
             "instead of command: any program as a JSON array of words, run without a shell; {threads}, {cpus}, "
             "{ncpus}… are replaced inside words as plain text"),
    "args": ("shell", "", False, "text put in place of {args}: a profile can change the arguments, not the command"),
    "variants": ("words", "-", True, "values of {variant} (default: one empty variant)"),
    "placements": ("placements", "unpinned", True, "placement policies (docs/design.md)"),
    "threads": ("threads", "auto", True,
                "thread counts, or auto = 1, 2, 4, … and the PU count, or all = every CPU the placement can use (one "
                "per core for cores); pairs use 2"),
    "repeats": ("repeats", "3", True, "measured repeats per point, or auto: until the median's 95% CI is within ci"),
    "min_repeats": ("count", "3", True, "repeats=auto: never fewer"),
    "max_repeats": ("count", "6", True, "repeats=auto: never more"),
    "stable_repeats": ("count", "3", True,
                       "repeats=auto: the fewest repeats of a point this host measured stable last time (its interval "
                       "then, projected to this count, within ci), instead of min_repeats; never below 3, what the "
                       "report's words need, nor above min_repeats (= min_repeats: the history is not used)"),
    "ci": ("percent", "5", True, "repeats=auto: target half-width of the median's 95% CI, % of the median"),
    "confidence": ("words", "", True, "metrics the CI rule watches (default: the first chart's metric)"),
    "warmup": ("count0", "1", True, "runs of the first point discarded before measuring"),
    "pin": ("choice:taskset self none", "taskset", True,
            "who applies the placement: the engine (taskset), the command, or nobody"),
    "membind": ("choice:local interleave none", "none", True, "memory policy on the placement's NUMA nodes (numactl)"),
    "perf": ("choice:engine self", "engine", False,
             "with perf=1: the engine records the command, or the command records itself"),
    "share": ("choice:1 0", "1", True,
              "1: a point whose placement gives the same CPUs as an earlier placement's at that thread count "
              "(compact and scatter at 1 thread, every pinned placement at every PU) is measured once and shared, "
              "labelled so; 0: every placement measures its own"),
    "plan": ("choice:grid adaptive", "grid", True,
             "grid: every thread count of `threads`; adaptive: per curve (variant × placement) `threads` are "
             "candidates: a coarse geometric grid (×4 steps, the first and last count) first, then only where the "
             "answer lies: the bracket where efficiency crosses the scaling threshold is bisected, the peak's "
             "neighbours likewise, a curve stops once a point past its peak is below it over both 95% intervals; "
             "a candidate never measured is skipped and said so"),
    "pairs": ("count", "8", True,
              "{pairs} and {smt_pairs}: how many CPU pairs of the relation, spread over hwloc's list"),
    "chart": ("chart", None, False, "repeated: scaling METRIC, speedup METRIC, bars METRIC or heatmap METRIC"),
    "metric": ("metric", None, False,
               "repeated, exec only: NAME:REGEX[:UNIT[:higher|lower]] reads NAME from the command's stdout (the last "
               "match; its group, else the whole match)"),
    "timeout": ("seconds", "600", True, "seconds per run before it is killed"),
    "cost": ("cost", "5", True, "the dry run's estimate of seconds per run (N, N/pair or N/cpu of {cpus}, optionally "
                                "`max M` for a command with a time budget) until a run of this spec exists here"),
    "setup_cost": ("seconds", "0", True, "the dry run's estimate of seconds for build and setup"),
    "built": ("path", "", False, "the file the build makes (from the project root): where it is missing on this "
                                 "host, the dry run adds build_cost (a cold build) to the price, once per file, on "
                                 "the first experiment to run that builds it"),
    "build_cost": ("seconds", "0", True, "the dry run's estimate of seconds for a cold build (built= missing)"),
    "max_steal": ("percent", "10", True, "guard: steal on the placement's CPUs above this marks a run disturbed"),
    "server": ("pidfiles", "", True,
               "pidfiles (from the project root; space-separated, globs allowed, at most 16) of the server side the "
               "command talks to but did not start, such as the lab's Cassandra or every node of a local cluster: "
               "their CPU time is the measurement's, not foreign load, and the CPUs they may use are watched too"),
    "nodes_server": ("pidfiles", "", True,
                     "pidfiles (as `server`) of the server side when `nodes` names contact points, such as every node "
                     "of a local cluster (`.work/cluster/node*/cassandra.pid`): with `nodes` set they are the "
                     "measurement's own instead of `server`'s, and without it they are not (a cluster left running "
                     "is then foreign load)"),
    "nodes": ("nodes", "", True, "contact points of a server on other addresses or hosts (ADDRESS:PORT,…), such as "
                                 "`cassandra/cluster.sh nodes`; build, setup, teardown and the command see it as "
                                 "$LAB_NODES (empty: the spec's own default server)"),
    "clients": ("clients", "", True,
                "load generators on other hosts: ssh destinations DEST[,DEST…] (`ssh DEST` works from here in batch "
                "mode, host keys known; $LAB_SSH_CONFIG may name an ssh config); the command sees it as $LAB_CLIENTS "
                "(cache-server/point.sh runs loadgen on each; empty: on this host)"),
    "max_foreign": ("percent", "10", True, "guard: busy time of other processes on the point's CPUs above this"),
    "max_neighbour": ("percent", "50", True,
                      "guard: busy time of other processes on the host's other CPUs (outside the point's), which share "
                      "its L3 and memory bandwidth, above this (their mean; 100: never)"),
    "max_invol_cs": ("seconds", "2000", True,
                     "guard: involuntary context switches of the measured processes per second that other processes "
                     "forced (a share of them in proportion to those processes' CPU time on the point's CPUs; switches "
                     "between the measured processes' own threads do not count)"),
    "capacity": ("choice:1 0", "1", True,
                 "guard: 1 times a short fixed workload (c-probes/build/capacity, core and memory) on the point's CPUs "
                 "just before and after every repeat (one probe process for both, `--serve`); 0 for points "
                 "shorter than the probe"),
    "max_capacity_loss": ("percent", "25", True,
                          "guard: a repeat whose capacity probe's core chain ran this much slower than the sweep's "
                          "baseline, or differed this much before and after, is disturbed"),
    "max_memory_capacity_loss": ("percent", "100", True,
                                 "guard: the same for the probe's memory walk; 100 (never) by default: its time "
                                 "depends on what the measured program left in the caches (recorded, not judged)"),
    "min_corun": ("percent", "70", True,
                  "guard: a run whose threads ran together (the instrument's corun_pct) less than "
                  "this share is disturbed"),
    "retries": ("count0", "2", True, "guard: a disturbed run is measured again at most this many times"),
    "retry_pause": ("seconds", "2", True, "guard: seconds to wait before measuring a disturbed run again"),
    "sweep": ("choice:yes no", "yes", False, "no: `./lab sweep` without spec arguments leaves this experiment out"),
    "goal": ("goal", None, False,
             "repeated: NUM[|NUM…] / DEN METRIC >= RATIO (or <=) [threads=N] [placement=P]: a target ratio of two "
             "variants' medians (NUM: the best of those named) that the report judges met, not met or inconclusive "
             "from their 95% intervals (lab/report/goals.py)"),
    "why_seconds": ("seconds", "2", True,
                    "why=1: an evidence run of a fixed-work command repeats it (in the same recording and pinning) "
                    "until this many seconds have passed, at most half the timeout; its cost per run divides by the "
                    "repetitions; 0: one run (a throughput metric's runs are never repeated)"),
    "why_comm": ("comms", "", True, "why=1: the processes (comm names, space-separated) whose evidence counts, e.g. a "
                                    "server the command starts beside its load generator; only their scheduler events "
                                    "are recorded with stacks (empty: the command's whole tree)"),
    "why_points": ("choice:differential all", "differential", True,
                   "why=1: which points get evidence runs: differential = per curve (variant × placement) of an "
                   "experiment with scaling words, the fewest threads and the knee, the two points the why's "
                   "differential compares (chosen once the experiment's timed repeats are done); all = every point"),
    "calls": ("count", "", False,
              "the calls (requests, inserts…) one run of the command makes in all, warm-up included: the engine adds "
              "cpu_us_per_call, the command's user+system CPU (wait4) per call"),
}
CHART_KINDS = ("scaling", "speedup", "bars", "heatmap")
REPEATED = ("chart", "metric", "goal")
# Upper bounds: a value from a received run's args.json or a typo must not ask for days of measuring,
# a hundred thousand threads or an overflow (retry_pause=1e308). Per kind, then per key where it differs.
MOST = {"threads": 4096, "repeats": 1000, "count": 1000, "count0": 1000, "seconds": 86400, "percent": 100,
        "max_invol_cs": 1e9, "calls": 10**12, "why_seconds": 600}
MOST_WORDS = 256            # values of a list key (variants, threads, …)
MOST_CHARS = 4096           # characters of any value
# Keys that may be set to nothing (`build =`): the others would silently give no points at all.
MAY_BE_EMPTY = ("build", "built", "setup", "teardown", "args", "requires", "confidence", "server", "nodes_server",
                "nodes", "clients", "why_comm")
COMM = re.compile(r"[A-Za-z0-9._+-]{1,15}")    # a process name as the kernel keeps it (15 bytes); perf filter text
# The values a command may name as {name}: the engine fills them in per point and repeat
# (docs/instruments.md). `{args}` is the spec's own `args` text, put in before anything runs.
PLACEHOLDERS = ("variant", "placement", "threads", "repeat", "cpus", "other_cpus", "raw", "perf", "root",
                "pinned", "pairs", "smt_pairs", "ncpus")
SHELL_PLACEHOLDER = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")

# The sweep's own command-line keys (scripts/lab/cli/sweep.py), never spec keys.
MOST_PIDFILES = 16     # `server`: words (each a pidfile or a glob of them)
ENGINE_KEYS = ("profile", "perf", "run", "dry", "topology", "kind", "seed", "draw", "history", "why", "why_runs",
               "budget")
DURATION = re.compile(r"(?:(\d{1,3})h)?(?:(\d{1,4})m)?(?:(\d{1,6})s)?")
MOST_BUDGET = 7 * 86400     # a week: a typo (budget=45000h) must not read as "no limit"


def duration(text, where="command line"):
    """Seconds of a budget: 45m, 1h30m, 90s, 2h (a bare number is refused: minutes or seconds?).
    Raises SpecError naming where."""
    m = DURATION.fullmatch(text or "")
    secs = m and sum(int(g or 0) * k for g, k in zip(m.groups(), (3600, 60, 1)))
    if not secs or secs > MOST_BUDGET:
        raise SpecError(f"{where}: budget must be a duration above 0 and at most {MOST_BUDGET // 86400} days "
                        f"such as 45m, 1h30m or 90s, not {text!r}")
    return secs
WHY_RUNS = (1, 10, 2)   # why_runs=N: fewest, most, default evidence runs per point (why=1; docs/measured.md)
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")      # experiments and metrics: they name files
# A server's contact points: they reach shell as $LAB_NODES, so only what an address and port are made of.
NODES = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}:\d{1,5}(,[A-Za-z0-9][A-Za-z0-9.-]{0,252}:\d{1,5}){0,63}")
# Kinds of keys that choose a machine, a server or a file (ssh logins, contact points, pidfiles, paths):
# a received archive's args.json carries measurement settings only, so a replay drops these
# (archive.py), whatever their names become.
TARGET_KINDS = ("clients", "nodes", "pidfiles", "path")
TARGET_KEYS = tuple(k for k, v in KEYS.items() if v[0] in TARGET_KINDS)
LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\[([A-Za-z0-9_-]+)\])?\s*=\s*(.*?)\s*$")


class SpecError(LabError):
    """A spec or override the engine will not run; str() is `file:line: message`."""


def unknown_placeholder(text):
    """The first {name} in shell text that the engine would not fill in, or None: it would reach bash as
    literal text and fail, or worse, run with the braces in it."""
    for m in SHELL_PLACEHOLDER.finditer(text):
        if m.group(1) not in PLACEHOLDERS and m.group(1) != "args":
            return m.group(1)
    return None


def check(key, value, where):
    """Raise SpecError unless value fits key's kind."""
    kind = KEYS[key][0]
    words = value.split()
    bad = None
    most = MOST.get(key, MOST.get(kind))
    one_line(key, value, where)
    if not value.strip() and key not in MAY_BE_EMPTY:
        raise SpecError(f"{where}: {key} is empty: give it a value, or leave the line out for the default")
    if len(value) > MOST_CHARS or (kind != "shell" and len(words) > MOST_WORDS):
        raise SpecError(f"{where}: {key} is too long (at most {MOST_WORDS} values, {MOST_CHARS} characters)")
    if kind == "name" and not NAME.fullmatch(value):
        bad = "a name of letters, digits, '.', '_' or '-'"
    elif kind == "placements":
        unknown = [w for w in words if w not in POLICIES]
        if unknown or not words:
            bad = f"placements from: {' '.join(POLICIES)} (not {' '.join(unknown) or 'nothing'})"
    elif kind == "threads" and value not in ("auto", "all") and not all(whole(w, 1, most) for w in words or ["x"]):
        bad = f"auto, all or whole numbers from 1 to {most}"
    elif kind == "repeats" and value != "auto" and not whole(value, 1, most):
        bad = f"auto or a whole number from 1 to {most}"
    elif kind == "count" and not whole(value, 1, most):
        bad = f"a whole number from 1 to {most}"
    elif kind == "count0" and not whole(value, 0, most):
        bad = f"a whole number from 0 to {most}"
    elif kind in ("seconds", "percent"):
        # a timeout of 0 would be coreutils' `timeout 0`: no limit at all
        above = key == "timeout"
        try:
            if not ((0 < float(value)) if above else (0 <= float(value))) or not float(value) <= most:
                raise ValueError      # NaN and inf fail too
        except ValueError:
            bad = f"a number {'above 0 and at most' if above else 'from 0 to'} {most:g}"
    elif kind == "cost" and not re.fullmatch(r"\d+(\.\d+)?(/pair|/cpu)?( max \d+(\.\d+)?)?", value):
        bad = "seconds per run: N, N/pair (per CPU pair of {cpus}) or N/cpu, optionally followed by `max M`"
    elif kind.startswith("choice:") and value not in kind[7:].split():
        bad = f"one of: {kind[7:]}"
    elif kind == "path" and value and (not re.fullmatch(r"[A-Za-z0-9._/-]+", value) or value.startswith("/")
                             or ".." in value.split("/")):
        bad = "a path inside the project, relative to its root"
    elif kind == "pidfiles" and (len(words) > MOST_PIDFILES or not all(
            re.fullmatch(r"[A-Za-z0-9._/*?\[\]-]+", w) and not w.startswith("/") and ".." not in w.split("/")
            for w in words)):
        bad = (f"a path inside the project, relative to its root: pidfiles or globs of them (* ? [ ]), "
               f"space-separated, at most {MOST_PIDFILES}")
    elif kind == "comms" and not all(COMM.fullmatch(w) for w in words):
        bad = "process names (comm) of letters, digits, '.', '_', '+', '-', at most 15 characters each, space-separated"
    elif kind == "nodes" and value and not NODES.fullmatch(value):
        bad = "ADDRESS:PORT[,ADDRESS:PORT…] (at most 64; addresses of letters, digits, '.', '-')"
    elif kind == "clients" and not clients_ok(value):
        # they reach shell as $LAB_CLIENTS and ssh as destinations: lab/fleet/clients.py says which are
        bad = (f"DEST[,DEST…]: at most {MOST_CLIENTS} different ssh destinations ([user@]host of letters, "
               "digits, '.', '_', '-')")
    elif kind == "chart" and not chart_line_ok(words):
        bad = f"KIND METRIC with KIND one of {' '.join(CHART_KINDS)} and METRIC a name"
    elif kind == "shell" and unknown_placeholder(value):
        bad = (f"shell text whose {{placeholders}} are known: {{{unknown_placeholder(value)}}} is not one of "
               + " ".join(f"{{{p}}}" for p in PLACEHOLDERS + ("args",)) + " (write ${NAME} for a shell variable)")
    elif kind == "argv":
        try:
            av.parse_exec(value, PLACEHOLDERS)
        except ValueError as e:
            bad = str(e)
    elif kind == "metric":
        try:
            av.parse_metric(value)
        except ValueError as e:
            bad = str(e)
    elif kind == "goal":
        try:
            parse_goal(value)
        except ValueError as e:
            bad = str(e)
    if bad:
        raise SpecError(f"{where}: {key} must be {bad}, not {value!r}")


def one_line(key, value, where):
    """Raise SpecError unless value is one line of printable text: a line break would add spec lines (a
    `build =` that runs) to a run's spec snapshot or ./lab scale's spec, a control character would
    rewrite a terminal."""
    bad = next((c for c in value if not c.isprintable() and c != "\t"), None)
    if bad is not None:
        raise SpecError(f"{where}: {key} must be one line of printable text, not {value[:80]!r} (it holds {bad!r})")


def clients_ok(value):
    try:
        parse_clients(value)
        return True
    except ClientError:
        return False


def whole(text, lo, hi):
    """text is a whole number in lo..hi (ASCII digits only: no '١', no '1_000')."""
    return text.isascii() and text.isdigit() and lo <= int(text) <= hi


def unknown_key(key, where):
    return SpecError(f"{where}: unknown key {key!r}; known keys: {' '.join(KEYS)}")


class Spec:
    """One spec file: every line kept with its place, resolved for a profile and overrides."""

    def __init__(self, path, text=None):
        """Parse the spec at path (text: its text, already read by spec_text())."""
        self.path = path
        self.lines = {}          # (key, profile or None) → [(value, "file:line")]
        if text is None:
            try:
                text = spec_text(path)
            except RunFolderError as e:     # a run's snapshot the safe reader refuses: one line
                raise SpecError(str(e)) from None
        for n, raw in enumerate(text.splitlines(), 1):
            where = f"{path}:{n}"
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            m = LINE.match(raw)
            if not m:
                raise SpecError(f"{where}: expected `key = value` or `key[profile] = value`, got {raw.strip()!r}")
            key, prof, value = m.groups()
            if key not in KEYS:
                raise unknown_key(key, where)
            if key not in REPEATED and (key, prof) in self.lines:
                raise SpecError(f"{where}: {key}{f'[{prof}]' if prof else ''} is already set at "
                                f"{self.lines[(key, prof)][0][1]}")
            if value or key not in ("chart",):
                check(key, value, where)
            self.lines.setdefault((key, prof), []).append((value, where))
        for key in ("experiment", "command"):
            if (key, None) not in self.lines and (key != "command" or ("exec", None) not in self.lines):
                raise SpecError(f"{path}:1: no {key!r} key (every spec needs experiment, and command or exec)")
        if ("command", None) in self.lines and ("exec", None) in self.lines:
            raise SpecError(f"{self.lines[('exec', None)][0][1]}: exec and command both set: a spec runs one of them")
        if ("metric", None) in self.lines and ("exec", None) not in self.lines:
            raise SpecError(f"{self.lines[('metric', None)][0][1]}: metric reads an exec command's stdout; "
                            "a command prints tidy CSV")

    def resolve(self, profile, overrides):
        """{key: value} for this profile; chart is a list. Overrides (already checked) win."""
        out = {}
        for key, (_kind, default, _cli, _doc) in KEYS.items():
            vals = self.lines.get((key, profile)) or self.lines.get((key, None))
            if key in REPEATED:
                out[key] = [v for v, _w in vals or []]
            elif key in overrides:
                out[key] = overrides[key]
            elif vals:
                out[key] = vals[0][0]
            else:
                out[key] = default
        return Resolved(self.path, out)

    def where(self, key, profile):
        vals = self.lines.get((key, profile)) or self.lines.get((key, None))
        return vals[0][1] if vals else f"{self.path}:1"


class Resolved(dict):
    """A spec's keys for one profile: what the sweep runs and what sweep/specs/ keeps."""

    def __init__(self, path, values):
        super().__init__(values)
        self.path = path

    @property
    def name(self):
        return self["experiment"]

    def charts(self):
        return [tuple(c.split()) for c in self["chart"]]

    def watched(self):
        """The metrics whose CI decides when repeats=auto stops."""
        if self["confidence"]:
            return self["confidence"].split()
        return [c.split()[1] for c in self["chart"] if c.split()[0] != "heatmap"][:1]

    def snapshot(self, header):
        lines = [f"# {header}"]
        for key in KEYS:
            vals = self[key] if key in REPEATED else [self[key]]
            lines += [f"{key} = {v}" for v in vals if v not in ("", None)]
        return "\n".join(lines) + "\n"


def overrides_from(pairs, engine_keys):
    """Command-line KEY=VALUE pairs → {key: value} for spec keys; engine keys are left to the caller.
    Keys that hold shell text cannot be overridden."""
    out = {}
    for key, value in pairs:
        if key in engine_keys:
            continue
        if key not in KEYS:
            raise SpecError(f"command line: unknown key {key!r}; sweep keys: {' '.join(engine_keys)}; "
                            f"spec keys: {' '.join(k for k, v in KEYS.items() if v[2])}")
        if not KEYS[key][2]:
            raise SpecError(f"command line: {key} comes only from the spec file, it cannot be overridden")
        check(key, value, "command line")
        out[key] = value
    return out


def spec_text(path):
    """The text of a spec file. A file inside a run folder (its sweep/specs/ snapshot: a received run's,
    perhaps) only through runfolder.read_file(): a regular file inside the run, no link followed, at most
    LIMITS["text"], else RunFolderError in one line (a FIFO hung the report, /dev/zero filled memory, a
    link's first line was shown in the parse error). A spec of the checkout (experiments/, a file named on
    the command line) through runfolder.read_given(): a regular file, as bounded; else SpecError."""
    run = run_of(path)
    if run:
        text = read_file(path, "text", run)
        if text is None:
            raise RunFolderError(f"{path}: missing")
        return text
    try:
        data = read_given(path, LIMITS["text"], "spec")
    except RunFolderError as e:
        raise SpecError(str(e)) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise SpecError(f"{path}:{line}: not UTF-8 (byte 0x{data[e.start]:02x}): save the spec as UTF-8") from None


def profiles(specs):
    """Every profile the specs name (`key[NAME] = …`), and default."""
    return {"default"} | {prof for s in specs for (_k, prof) in s.lines if prof}


def load(paths):
    """Parse every spec before anything runs: the first error stops the sweep with nothing done."""
    specs = [Spec(p) for p in paths]
    seen = {}
    for s in specs:
        exp = s.lines[("experiment", None)][0][0]
        if exp in seen:
            raise SpecError(f"{s.where('experiment', None)}: experiment {exp!r} is also named by {seen[exp]}")
        seen[exp] = s.path
    return specs


def chart_line_ok(words):
    """A chart line's words, KIND METRIC: KIND one of CHART_KINDS, METRIC a name (it names a file). The one
    rule for a spec's chart lines and for those an import records (lab/report/model.py chart_lines)."""
    return (len(words) == 2 and all(isinstance(w, str) for w in words) and words[0] in CHART_KINDS
            and bool(NAME.fullmatch(words[1])))


def spec_charts(path):
    """(experiment, [(kind, metric)]) of a spec file, for charts and report. A spec of an old run that
    the parser now rejects (a key renamed since) is still read for its chart lines, with a warning."""
    text = spec_text(path)      # a run's snapshot the safe reader refuses: RunFolderError, one line
    try:
        s = Spec(path, text)
        return s.lines[("experiment", None)][0][0], [tuple(v.split()) for v, _w in s.lines.get(("chart", None), [])]
    except SpecError as e:
        print(visible(f"{e}; reading only its experiment and chart lines"), file=sys.stderr)
    charts, exp = [], None
    for line in text.splitlines():
        k, _, v = line.partition("=")
        k, v = k.strip(), v.strip()
        if k == "experiment":
            exp = v
        elif k == "chart" and v:
            kind, _, metric = v.partition(" ")
            charts.append((kind, metric.strip()))
    # names become file names (data/<exp>.csv, plots/<exp>-<kind>-<metric>.png): a received run's
    # `../` must not reach outside its folder
    if exp is None or not NAME.fullmatch(exp):
        print(visible(f"{path}: experiment {exp!r} is not a name: no charts"), file=sys.stderr)
        return exp, []
    named = []
    for k, m in charts:
        if NAME.fullmatch(m):
            named.append((k, m))
        else:
            print(visible(f"{path}: chart metric {m!r} is not a name: not drawn"), file=sys.stderr)
    return exp, named


def spec_dir(root):
    """Where the project's specs live: experiments/, or LAB_SPECS (the tests' fixtures)."""
    return os.environ.get("LAB_SPECS") or os.path.join(root, "experiments")


def default_specs(root, profile):
    """experiments/*.spec whose `sweep` key is not no."""
    d = spec_dir(root)
    out = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".spec"):
            s = Spec(os.path.join(d, name))
            if s.resolve(profile, {})["sweep"] != "no":
                out.append(s)
    return out



def better_of(spec_path, metric, unit):
    """higher | lower for a metric: what its metric= line says, lower for the engine's resource rows
    (seconds, KiB), else lower for a time unit and higher for anything else (a rate)."""
    try:
        lines = Spec(spec_path).lines.get(("metric", None), []) if os.path.exists(spec_path) else []
    except SpecError:
        lines = []
    for value, _where in lines:
        m = av.parse_metric(value)
        if m.name == metric:
            return m.better
    if metric in dict(RESOURCE_METRICS):
        return "lower"
    return av.better_for(unit)


def curve_metric(charts, evidence):
    """The metric of an experiment's scaling words from its [(kind, metric)] chart lines: its first
    `speedup` chart's, or with why=1 evidence its first `scaling` chart's; None without either. The
    engine asks it too (evidence=True), to know which curves the why's differential will compare."""
    metric = next((m for k, m in charts if k == "speedup"), None)
    if metric is None and evidence:
        metric = next((m for k, m in charts if k == "scaling"), None)
    return metric
