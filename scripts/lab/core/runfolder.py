"""The run folder: the one owner of its layout (docs/design.md, "Results folder").

    results/<UTC stamp>[-<label>]-<host>/
      env/            the host as measured (env.sh): lstopo.xml, build.txt, …
      data/<exp>.csv  tidy rows of one experiment; data/points/<exp>/<stem>_r<N>.csv one repeat each
      raw/<exp>/<key>/  a repeat's own output (stdout, stderr, perf, tries)
      raw/<exp>/<stem>_why/  a point's evidence runs (why=1)
      plots/<exp>-<kind>-<metric>.{png,svg,dat}
      sweep/          specs/ as run, journal.jsonl, journal.log, state, signature, command, args.json,
                      identity.json, lock, setup.log
      report.md, report.html

Every other module asks this one for a path; none spells `data/points` or `sweep/state` itself.
Choosing, locking and resuming a run folder live here too, since they read the same files.
"""
import contextlib
import fcntl
import io
import json
import os
import re
import socket
import stat
import sys
import tempfile
import time

from lab import ROOT
from lab.errors import LabError

STATE_COMPLETE, STATE_RUNNING, STATE_INCOMPLETE = "complete", "running", "incomplete"
# The kinds of run folder (RunFolder.kind(), the one place that tells them apart): a sweep measured here;
# another tool's result file (scripts/lab/imports/); a published core-to-core matrix (c2c_published.py).
# Both imports hold env/imported.json, the import's record; a tool's record names its `format`.
KIND_SWEEP, KIND_IMPORTED, KIND_PUBLISHED = "sweep", "imported", "published"
IMPORT_RECORD = "env/imported.json"


class RunFolderError(LabError):
    """A run folder that cannot be used as asked; str() is the one line to show."""


def results_dir():
    return os.environ.get("LAB_RESULTS") or os.path.join(ROOT, "results")


def hostname():
    return socket.gethostname().split(".")[0]


def run_name(stamp, host, label="", n=1):
    """The one naming rule: the host is always the last part, so `*-<host>` finds a host's runs."""
    return "-".join(p for p in (stamp + (f".{n}" if n > 1 else ""), label, host) if p)


def stamp_now():
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def new_run(results=None, host=None, label=""):
    """A new, empty, uniquely named run folder under results/."""
    results = results or results_dir()
    host = host or hostname()
    os.makedirs(results, exist_ok=True)
    stamp = stamp_now()
    for n in range(1, 1000):
        path = os.path.join(results, run_name(stamp, host, label, n))
        try:
            os.makedirs(path)
            return RunFolder(path)
        except FileExistsError:
            continue
    raise RunFolderError(f"cannot create a new run folder in {results}")


def is_run(path):
    return os.path.isdir(os.path.join(path, "sweep"))


def of_raw(raw):
    """The run folder holding a point's raw folder (raw/<exp>/<key>), or None when raw is elsewhere
    (a command run by hand)."""
    run = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(raw))))
    rf = RunFolder(run) if is_run(run) else None
    return rf if rf and os.path.dirname(os.path.dirname(os.path.abspath(raw))) == rf.raw_dir else None


def find(name):
    """A run folder given by path or by its name under results/, or None."""
    for d in (name, os.path.join(results_dir(), name)):
        if d and is_run(d):
            return RunFolder(os.path.abspath(d.rstrip("/")))
    return None


class RunFolder:
    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.name = os.path.basename(self.path.rstrip("/"))
        self.env_dir = os.path.join(self.path, "env")
        self.data_dir = os.path.join(self.path, "data")
        self.raw_dir = os.path.join(self.path, "raw")
        self.plots_dir = os.path.join(self.path, "plots")
        self.sweep_dir = os.path.join(self.path, "sweep")
        self.specs_dir = os.path.join(self.sweep_dir, "specs")
        self.journal_path = os.path.join(self.sweep_dir, "journal.jsonl")
        self.journal_log = os.path.join(self.sweep_dir, "journal.log")
        self.report_md = os.path.join(self.path, "report.md")
        self.report_html = os.path.join(self.path, "report.html")

    def __repr__(self):
        return f"RunFolder({self.path!r})"

    # --- paths ----------------------------------------------------------------------------------------
    def env(self, name):
        return os.path.join(self.env_dir, name)

    def data_csv(self, exp):
        return os.path.join(self.data_dir, f"{exp}.csv")

    def experiments(self):
        """Experiments with a data file, sorted."""
        if not os.path.isdir(self.data_dir):
            return []
        return sorted(f[:-4] for f in os.listdir(self.data_dir) if f.endswith(".csv") and not f.startswith("."))

    def points_dir(self, exp):
        return os.path.join(self.data_dir, "points", exp)

    def point_csv(self, exp, key):
        return os.path.join(self.points_dir(exp), f"{key}.csv")

    def point_files(self, exp):
        d = self.points_dir(exp)
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".csv")) if os.path.isdir(d) else []

    def repeats(self, exp, stem):
        """{repeat: path} of the finished repeats of one point (files `<stem>_r<N>.csv`)."""
        d = self.points_dir(exp)
        pattern = re.compile(re.escape(stem) + r"_r(\d+)\.csv")
        out = {}
        for f in os.listdir(d) if os.path.isdir(d) else []:
            m = pattern.fullmatch(f)
            if m:
                out[int(m.group(1))] = os.path.join(d, f)
        return out

    def raw(self, exp, key):
        return os.path.join(self.raw_dir, exp, key)

    def evidence_dir(self, exp, stem):
        """raw/<exp>/<stem>_why/: a point's evidence runs (why=1; scripts/lab/engine/evidence/store.py owns its
        files)."""
        return os.path.join(self.raw_dir, exp, f"{stem}_why")

    def has_evidence(self, exp):
        """Did any point of the experiment leave why=1 evidence (a raw/<exp>/*_why folder)?"""
        d = os.path.join(self.raw_dir, exp)
        return os.path.isdir(d) and any(f.endswith("_why") for f in os.listdir(d))

    def raw_rel(self, exp, key):
        """The same, relative to the run folder (what reports link to)."""
        return os.path.join("raw", exp, key)

    def plot(self, name):
        return os.path.join(self.plots_dir, name)

    def chart(self, exp, kind, metric, ext=None):
        """plots/<exp>-<kind>-<metric>[.<ext>]: the one chart naming rule (charts, report, page)."""
        return self.plot(f"{exp}-{kind}-{metric}" + (f".{ext}" if ext else ""))

    def spec_path(self, exp):
        return os.path.join(self.specs_dir, f"{exp}.spec")

    def spec_paths(self):
        d = self.specs_dir
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".spec")) if os.path.isdir(d) else []

    def sweep_file(self, name):
        return os.path.join(self.sweep_dir, name)

    def topology(self):
        """The run's own host topology (env/lstopo.xml), or None when it was not captured or unreadable."""
        from lab.topology.topo import PlacementError, Topology  # here: topo is heavy and most callers need only paths
        xml = self.env("lstopo.xml")
        try:
            if (read_file(xml, "env", self.path) or "unavailable").startswith("unavailable"):
                return None
            return Topology(xml)
        except (OSError, PlacementError):
            return None

    # --- reading and writing -------------------------------------------------------------------------
    def read(self, rel, default=""):
        """A small text file of the run (stripped), or default."""
        text = read_file(os.path.join(self.path, rel), "text", self.path)
        return default if text is None else text.strip()

    def state(self):
        return self.read("sweep/state")

    def identity(self):
        text = self.read("sweep/identity.json")
        try:
            ident = json.loads(text) if text else None
        except ValueError:
            raise RunFolderError(f"{self.sweep_file('identity.json')}:1: not JSON") from None
        return ident if isinstance(ident, dict) else None

    def import_record(self):
        """The import's record (env/imported.json) checked field by field, or None for a sweep's run."""
        return import_record(self.path)

    def kind(self):
        """KIND_SWEEP, KIND_IMPORTED or KIND_PUBLISHED: the one answer to "was this run measured here?"."""
        return kind_of(self.import_record())

    def make(self):
        # env/ is not made here: its presence means env.sh captured it
        for d in (os.path.join(self.data_dir, "points"), self.raw_dir, self.plots_dir, self.specs_dir):
            os.makedirs(d, exist_ok=True)

    def write_text(self, rel, text):
        """Write a file inside the run so that no reader (or a kill -9) ever sees half of it."""
        write_atomic_text(os.path.join(self.path, rel), text, self.path)

    def set_state(self, state):
        self.write_text("sweep/state", state + "\n")

    def drop_partial(self):
        """A point file being written when the last sweep was killed is not a point: drop it. Only the
        engine's own temporary names, only in data/ and data/points/<exp>/."""
        points = os.path.join(self.data_dir, "points")
        dirs = [self.data_dir] + ([self.points_dir(e) for e in os.listdir(points)] if os.path.isdir(points) else [])
        for d in dirs:
            if not os.path.isdir(d):
                continue
            for f in os.listdir(d):
                if (f.endswith(".csv.tmp") or f.startswith(".tmp-")) and os.path.isfile(os.path.join(d, f)):
                    os.remove(os.path.join(d, f))

    # --- the lock ------------------------------------------------------------------------------------
    def lock(self):
        """Take the run folder's lock (flock on sweep/lock): an open file, or None when another sweep
        holds it."""
        os.makedirs(self.sweep_dir, exist_ok=True)
        f = open(self.sweep_file("lock"), "a+")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            return None
        except OSError as e:    # a file system without locks (9p in the test guests): say so, go on
            print(f"warning: cannot lock {self.path} ({e.strerror}): do not run two sweeps into it",
                  file=sys.stderr)
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        return f


def run_of(path):
    """The run folder holding path (its nearest ancestor with sweep/), or None."""
    d = os.path.dirname(os.path.abspath(path))
    while d != os.path.dirname(d):
        if is_run(d):
            return d
        d = os.path.dirname(d)
    return None


def real_folder(folder, root=None):
    """Make or check folder as a real folder: it and every folder between root (default: the run holding
    it, else its parent) and it exist as folders, none a link. A received run folder keeps its links
    (tar, unzip, git, rsync -a): a `plots/` that is a link would have the lab write outside the run."""
    folder = os.path.abspath(folder)
    root = os.path.abspath(root or run_of(os.path.join(folder, "x")) or os.path.dirname(folder))
    rel = os.path.relpath(folder, root)
    if rel.startswith(".."):
        raise RunFolderError(f"{folder}: outside {root}: refusing to write there")
    d = root
    for part in ([] if rel == "." else rel.split(os.sep)):
        d = os.path.join(d, part)
        try:
            st = os.lstat(d)
        except FileNotFoundError:
            os.mkdir(d)
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise RunFolderError(f"{d}: a {'link' if stat.S_ISLNK(st.st_mode) else 'file'}, not a real folder "
                                 "inside the run: refusing to write into it")
    return folder


def dat_problem(text):
    """Why text is not a gnuplot data file of the lab's own, or None: every quoted field closes on its
    line (gnuplot data has no escape: a line break or quote from a cell would start a new record)."""
    for n, line in enumerate(text.split("\n"), 1):
        if line.count('"') % 2 or any(c < " " and c != "\t" or c == "\x7f" for c in line):
            return f"line {n}: a quote or control character from a cell reached the gnuplot data"
    return None


def replaceable(path):
    """Refuse a target the rename would destroy rather than write: a folder, a device, a FIFO, or a
    link to one (`out=/dev/null` or `/dev/stdout`: as root the rename replaced the device node with a
    file, and every later `> /dev/null` on the host filled that file). A regular file, a link to one
    and a dangling link are replaced (the link itself, never what it points to)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        try:
            st = os.stat(path)
        except OSError:
            return
    if not stat.S_ISREG(st.st_mode):
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device or FIFO)"
        raise RunFolderError(f"{path}: {what} where a file is written: refusing (name a file)")


def write_atomic_text(path, text, root=None):
    """Write path whole (temp file + rename: no reader or kill -9 sees half of it) into a real folder
    (real_folder()). The rename replaces a link at path itself, never the file it points to."""
    if path.endswith(".dat") and dat_problem(text):
        raise RunFolderError(f"{path}: {dat_problem(text)}: not written")
    with streamed(path, root) as f:
        f.write(text)


@contextlib.contextmanager
def streamed(path, root=None):
    """`with streamed(path) as f:` writes path as write_atomic_text does, from a text written in pieces
    and never held whole (an export at the CSV cap is ~800 MB of JSON: docs/design.md)."""
    d = real_folder(os.path.dirname(os.path.abspath(path)), root)
    replaceable(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    mask = os.umask(0)
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)      # as open() would make it: mkstemp's 0600 hides the file from others
    try:
        with os.fdopen(fd, "w") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


class writing(io.StringIO):
    """`with writing(path) as f:` as `open(path, "w")` would be, written by write_atomic_text on leaving."""

    def __init__(self, path, root=None):
        super().__init__()
        self.target, self.root = path, root

    def __exit__(self, kind, *rest):
        if kind is None:
            write_atomic_text(self.target, self.getvalue(), self.root)
        return super().__exit__(kind, *rest)


@contextlib.contextmanager
def output_of(path, root=None):
    """A fresh temporary name beside path for a program to write (gnuplot's PNG and SVG), renamed to
    path when it succeeds: the program never opens path, a link or not."""
    d = real_folder(os.path.dirname(os.path.abspath(path)), root)
    replaceable(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=os.path.splitext(path)[1])
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


# --- reading what may have come from elsewhere --------------------------------------------------------
# A received run folder is an untrusted file system: a file in it may be a link to /etc/shadow, a FIFO
# that never ends, /dev/zero, or 400 MB. Every reader of a run's files goes through read_file(): regular
# files inside the folder only, each kind of file bounded in size; a refusal is one line naming the file.
# csv: what the report's model can hold, measured (docs/design.md, "Caps the readers can hold"): a 64 MiB
# data CSV (1.45M pair rows) builds its model in 25 s and 3.7 GB here; 256 MiB would ask ~15 GB. Every
# writer of a data CSV keeps to it too (tidy.write_atomic), so an import never writes what cannot be read.
LIMITS = {"env": 4 << 20, "text": 1 << 20, "json": 1 << 20, "journal": 64 << 20, "csv": 64 << 20,
          "evidence": 64 << 20,     # a why=1 evidence file (scripts/lab/engine/evidence/store.py)
          "perf": 256 << 10}        # a point's perf-top.txt (lab/cli/perf.py: a table of the top symbols)
# A journal event's `key` names a repeat's raw folder (lab/engine/plan.py's Point.key): only that shape.
EVENT_KEY = re.compile(r"[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}_r[0-9]{1,6}")


def inside(path, root=None):
    """(root, path relative to it) when path lies in root (default: the run holding it) and no folder on
    the way is a link, else RunFolderError."""
    path = os.path.abspath(path)
    root = os.path.abspath(root or run_of(path) or os.path.dirname(path))
    rel = os.path.relpath(path, root)
    if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        raise RunFolderError(f"{path}: outside the run folder {root}: refused")
    d = root
    for part in rel.split(os.sep)[:-1]:
        d = os.path.join(d, part)
        if os.path.islink(d):
            raise RunFolderError(f"{d}: a link, not a folder of the run: refused")
    return root, rel


def read_present(path, kind, error):
    """read_file for a file that must be there, its refusal or absence raised as error("path:1: why"): the
    readers of one folder's own files (a why=1 evidence folder) name the file in their own error type."""
    try:
        text = read_file(path, kind)
    except RunFolderError as e:
        raise error(f"{path}:1: {str(e).removeprefix(path + ': ')}") from None
    if text is None:
        raise error(f"{path}:1: missing")
    return text


def read_file(path, kind="text", root=None, default=None):
    """The text of a run's file (UTF-8, bad bytes replaced), or default when it does not exist. Refused
    (RunFolderError, one line naming the file) unless it is a regular file inside the run, no link
    followed, at most LIMITS[kind] bytes."""
    inside(path, root)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return default
    except OSError as e:
        why = "a link" if os.path.islink(path) else e.strerror
        raise RunFolderError(f"{path}: {why}, not a regular file of the run: refused") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunFolderError(f"{path}: not a regular file (a folder, FIFO or device): refused")
    with os.fdopen(fd, "rb") as f:
        cap = LIMITS[kind]
        data = f.read(cap + 1)
    if len(data) > cap:
        raise RunFolderError(f"{path}: more than {cap >> 10} KiB, more than any {kind} file the lab writes: refused")
    return data.decode("utf-8", errors="replace")


def open_given(path, what="file"):
    """A file named on the command line (`./lab import FILE`, `./lab usl FILE`, `./lab import-c2c FILE`),
    open for reading in binary: the user's own name, so a link is followed, but only to a regular file (a
    FIFO would never end, a device never stop), opened without blocking; else RunFolderError, one line."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise RunFolderError(f"{path}: cannot read: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RunFolderError(f"{path}: not a regular file (a folder, FIFO or device): not a {what}")
    return os.fdopen(fd, "rb")


def read_given(path, cap, what="file"):
    """The bytes of a file named on the command line (open_given()), at most cap of them."""
    with open_given(path, what) as f:
        if os.fstat(f.fileno()).st_size > cap:
            raise RunFolderError(f"{path}: {os.fstat(f.fileno()).st_size >> 20} MiB, over the {cap >> 20} MiB "
                                 f"a {what} may have")
        data = f.read(cap + 1)
    if len(data) > cap:
        raise RunFolderError(f"{path}: over the {cap >> 20} MiB a {what} may have")
    return data


def read_json(path, kind="json", root=None, shape=dict):
    """A run's JSON file parsed and typed: None when absent; RunFolderError unless it is shape."""
    text = read_file(path, kind, root)
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise RunFolderError(f"{path}:1: not JSON ({type(e).__name__})") from None
    if not isinstance(value, shape):
        raise RunFolderError(f"{path}:1: expected a JSON {shape.__name__}, found {type(value).__name__}")
    return value


def read_csv(path, kind="csv", root=None):
    """A run's CSV file as dict rows ([] when absent), bounded by read_file()."""
    import csv
    text = read_file(path, kind, root)
    if text is None:
        return []
    try:
        return list(csv.DictReader(io.StringIO(text, newline="")))
    except csv.Error as e:
        raise RunFolderError(f"{path}: not CSV ({e})") from None


def import_record(run):
    """env/imported.json of an imported run (c2c_published.write_run, lab/imports/runwriter.py), each field of
    the shape those writers give it (else RunFolderError naming the file); None for a sweep's run."""
    path = os.path.join(os.path.abspath(run), IMPORT_RECORD)
    rec = read_json(path)       # a regular file of the run, bounded, an object (else one line, exit 2)
    if rec is None:
        return None
    whole = ("cpus", "pairs", "home_package")      # numbers the readers count with
    # Fields a tool import (scripts/lab/imports/) adds with structure: the readers check each where they use
    # it (lab/report/model.py chart_lines and host), all within read_json's size cap; every other field is
    # short text.
    shaped = {"charts": list, "machine": dict, "format_version": (int, str), "commands": list,
              "exit_codes": (list, dict), "benchmark": dict, "aggregates_only": list}
    bad = next((k for k, v in rec.items() if ((type(v) is not int or not 0 <= v <= 1 << 20) if k in whole
                                               else not isinstance(v, shaped[k]) if k in shaped
                                               else not isinstance(v, str) or len(v) > 1000)), None)
    if bad is not None:
        what = "a whole number" if bad in whole else "of its import's shape" if bad in shaped else "a short text"
        raise RunFolderError(f"{path}:1: {str(bad)[:40]!r} is not {what}, as the lab's imports write it")
    return rec


def kind_of(rec):
    """The kind of a run folder whose import record (import_record()) is rec: the one rule."""
    return KIND_SWEEP if rec is None else KIND_IMPORTED if rec.get("format") else KIND_PUBLISHED


def kind(run):
    """The kind of the run folder at path run (RunFolder.kind())."""
    return RunFolder(run).kind()


BUDGET_WORD = re.compile(r"(?:^| )(budget=\S+)")


def budget_apart(theirs, ours):
    """(their budget=, ours) when two sweep signatures differ only in their budget, else None."""
    a, b = BUDGET_WORD.search(theirs), BUDGET_WORD.search(ours)
    if a and b and a.group(1) != b.group(1) and \
            BUDGET_WORD.sub("", theirs) == BUDGET_WORD.sub("", ours):
        return a.group(1), b.group(1)
    return None


def choose(explicit, signature, ident, results=None, host=None):
    """(RunFolder, lock, note) for a sweep. An explicit run= is resumed only with the same code; an
    automatic resume takes this host's newest unfinished run of the same signature, skipping runs
    that are locked or were measured with other code, and says why."""
    if explicit:
        rf = RunFolder(explicit)
        if os.path.isdir(rf.path) and os.listdir(rf.path) and not is_run(rf.path):
            raise RunFolderError(f"{rf.path} exists and is not a run folder (no sweep/): name a new folder or a run")
        if is_run(rf.path):
            theirs = rf.read("sweep/signature")
            apart = theirs and budget_apart(theirs, signature)
            if apart:
                raise RunFolderError(
                    f"{rf.path} was swept with {apart[0]}, this command asks {apart[1]}: a run keeps the budget "
                    f"its plan was fitted to (the points it left out are that budget's): resume it with "
                    f"{apart[0]}, or start a new run (omit run=)")
            if theirs and theirs != signature:
                raise RunFolderError(
                    f"{rf.path} was swept with other arguments ({theirs}); this command asks for {signature}: "
                    "resume it with its own arguments (sweep/command), or start a new run (omit run=)")
            before = rf.identity()
            if before and before != ident:
                raise RunFolderError(
                    f"{rf.path} was measured with other code ({str(before.get('commit'))[:12]}, diff "
                    f"{str(before.get('diff_sha256'))[:8]}); this checkout is {ident['commit'][:12]}, diff "
                    f"{ident['diff_sha256'][:8]}: resume it from that code, or start a new run (omit run=)")
        lock = rf.lock()
        if lock is None:
            raise RunFolderError(f"another sweep is writing {rf.path} (pid {rf.read('sweep/lock')})")
        return rf, lock, f"run folder {rf.path}"
    results = results or results_dir()
    host = host or hostname()
    notes = []
    if os.path.isdir(results):
        for name in sorted(os.listdir(results), reverse=True):
            rf = RunFolder(os.path.join(results, name))
            if not name.endswith(f"-{host}") or not is_run(rf.path):
                continue
            theirs = rf.read("sweep/signature")
            if rf.state() == STATE_COMPLETE or theirs != signature:
                if rf.state() != STATE_COMPLETE and theirs and budget_apart(theirs, signature):
                    notes.append(f"not resuming {rf.path}: it was swept with {budget_apart(theirs, signature)[0]}, "
                                 f"this asks {budget_apart(theirs, signature)[1]} (a run keeps the budget its plan "
                                 "was fitted to: give its own budget= to resume it)")
                continue
            try:
                before = rf.identity()
            except RunFolderError as e:
                notes.append(f"not resuming {rf.path}: {e}")
                continue
            if before and before != ident:
                notes.append(f"not resuming {rf.path}: it was measured with other code")
                continue
            lock = rf.lock()
            if lock is None:
                notes.append(f"not resuming {rf.path}: another sweep is writing it")
                continue
            return rf, lock, "; ".join(notes + [f"resuming {rf.path}"])
    rf = new_run(results, host)
    return rf, rf.lock(), "; ".join(notes + [f"new run {rf.path}"])


def host_runs(results=None, host=None):
    """This host's run folders, newest first (what the dry run prices from)."""
    results = results or results_dir()
    host = host or hostname()
    if not os.path.isdir(results):
        return []
    names = sorted((n for n in os.listdir(results) if n.endswith(f"-{host}") or f"-{host}-" in n), reverse=True)
    return [RunFolder(os.path.join(results, n)) for n in names if is_run(os.path.join(results, n))]
