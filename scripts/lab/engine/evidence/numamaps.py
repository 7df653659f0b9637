"""Where the program's memory is during an evidence run: `/proc/PID/numa_maps` sampled while it runs
(issue 56, item 1; docs/design.md, "Why it stops scaling: evidence", *Where the memory lives*).

No counters are needed: the kernel says, per mapping, how many of its pages are on each node (`N0=24
N3=2`, the format of the kernel's Documentation/filesystems/proc.rst). A sampler thread reads the file of
every process of the evidence run's tree (or of the spec's server) every INTERVAL seconds and keeps,
per process, the sample with the most resident memory; afterwards `write()` puts the largest process's
peak, the host's CPU→node map and the two settings that move pages (kernel.numa_balancing, THP) into
`numa_r<N>.json`. Where each thread ran comes from the switch records (fold.py's `cpus_r<N>.csv`); the
join of the two is lab/why/memory.py's.

Every read is bounded: a numa_maps file by MAX_BYTES and MAX_LINES (a process with more mappings is cut
and says so), the processes by MAX_PROCS, the samples by MAX_SAMPLES; a received numa_r<N>.json goes
through the run folder's safe reader and is checked field by field (NumaMapsError: one line)."""
import json
import math
import os
import re
import threading
import time

from lab.core.runfolder import read_present, write_atomic_text
from lab.errors import LabError

FORMAT = 1
INTERVAL = 0.5          # seconds between samples: a read walks the page tables under the mm's lock
# A read costs time in proportion to the resident pages (~25-30 ms a GiB here: docs/measured.md): the wait
# after a sample grows so that sampling takes at most DUTY of one CPU, whatever the program's size.
DUTY = 0.05
MAX_BYTES = 4 << 20     # bytes of one numa_maps read (~40,000 mappings); more is cut
MAX_LINES = 65536
MAX_PROCS = 64          # processes of the tree sampled at once (the rest are not read)
MAX_SAMPLES = 400       # samples per run (200 s at INTERVAL); then sampling stops
MAX_MAPPINGS = 64       # mappings kept per process, largest first
MAX_NODES = 1024
MAX_NAME = 512
NODE = re.compile(r"N(\d{1,4})=(\d{1,15})$")
# address, then the policy: one word with optional flags and nodes, or the two kernel names with a space
# (mm/mempolicy.c policy_modes: "weighted interleave", "prefer (many)")
LINE = re.compile(r"([0-9a-f]{1,16}) ((?:weighted interleave|prefer \(many\)|[a-z]{1,16})(?:=[a-z|]{1,40})?"
                  r"(?::[0-9,\-]{1,200})?)(?: (.*))?$")
# perf itself, and its child before it execs the command (`perf-exec`, a copy of perf's memory: under TCG
# a short command's largest process sampled was that copy, libpython and all)
PERF = ("perf", "perf-exec")
TOKEN = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,31}(?:=\S{1,4096})?$")


class NumaMapsError(LabError):
    """A numa_maps text or numa_r<N>.json that is not what the kernel or this module writes: one line."""


def parse(text, what="numa_maps", cut=False):
    """[{"start", "policy", "name", "kb": {node: kB}}] of numa_maps text; `cut`: the text was cut at a
    byte cap, so a last line without its newline is dropped, not refused. A mapping with no page
    resident has an empty "kb". NumaMapsError names what:line."""
    if "\0" in text:
        raise NumaMapsError(f"{what}:1: a NUL byte: not numa_maps text")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    elif cut and lines:
        lines.pop()
    if len(lines) > MAX_LINES:
        raise NumaMapsError(f"{what}:{MAX_LINES + 1}: more than {MAX_LINES} mappings")
    out = []
    for n, line in enumerate(lines, 1):
        m = LINE.match(line)
        if not m:
            raise NumaMapsError(f"{what}:{n}: expected `ADDRESS POLICY DETAILS…`, got {line[:60]!r}")
        start, policy, rest = m.group(1), m.group(2), m.group(3) or ""
        name, pages, page_kb = "[anon]", {}, 4
        for tok in rest.split(" ") if rest else ():
            if not TOKEN.match(tok):
                raise NumaMapsError(f"{what}:{n}: {tok[:40]!r} is not a numa_maps field")
            node = NODE.match(tok)
            if node:
                pages[int(node.group(1))] = pages.get(int(node.group(1)), 0) + int(node.group(2))
            elif tok.startswith("file="):
                name = tok[5:][:MAX_NAME]
            elif tok in ("heap", "stack"):
                name = f"[{tok}]"
            elif tok.startswith("kernelpagesize_kB="):
                try:
                    page_kb = int(tok.split("=", 1)[1])
                except ValueError:
                    raise NumaMapsError(f"{what}:{n}: {tok[:40]!r}: the page size is not a number") from None
                if not 0 < page_kb <= 16 << 20:
                    raise NumaMapsError(f"{what}:{n}: page size {page_kb} kB out of range")
            elif tok.startswith("N") and tok[1:2].isdigit():
                raise NumaMapsError(f"{what}:{n}: {tok[:40]!r}: a node count that is not NODE=PAGES")
        if len(pages) > MAX_NODES:
            raise NumaMapsError(f"{what}:{n}: more than {MAX_NODES} nodes")
        out.append({"start": int(start, 16), "policy": policy, "name": name,
                    "kb": {k: v * page_kb for k, v in sorted(pages.items())}})
    return out


def read_live(pid, text=False):
    """(mappings, cut: bool, bytes read[, the text]) of a live process's numa_maps, or None when it is
    gone or not readable (a process that exited between the listing and the read)."""
    try:
        with open(f"/proc/{int(pid)}/numa_maps", "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    cut = len(raw) > MAX_BYTES
    body = raw[:MAX_BYTES].decode("utf-8", "replace")
    try:
        return (parse(body, f"/proc/{pid}/numa_maps", cut), cut, len(raw)) + ((body,) if text else ())
    except NumaMapsError:
        return None


def totals(mappings):
    """{node: kB} over the mappings."""
    out = {}
    for m in mappings:
        for k, v in m["kb"].items():
            out[k] = out.get(k, 0) + v
    return out


def _stat(pid):
    """(comm, ppid, start time in clock ticks since boot) of /proc/PID/stat, or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read(4096).decode("utf-8", "replace")
        comm = s[s.index("(") + 1:s.rindex(")")]
        rest = s[s.rindex(")") + 2:].split()
        return comm, int(rest[1]), int(rest[19])
    except (OSError, ValueError, IndexError):
        return None


def ticks_now():
    """Clock ticks since boot, as /proc/PID/stat counts a process's start."""
    with open("/proc/uptime") as f:
        return int(float(f.read(64).split()[0]) * os.sysconf("SC_CLK_TCK"))


def descendants(root, since=0):
    """{pid: comm} of the processes below `root` (its whole tree, root left out) started at `since` (clock
    ticks since boot) or later, at most MAX_PROCS: a server the engine started before the run is not the
    run's program."""
    parent, comm, start = {}, {}, {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = _stat(name)
            if st:
                comm[int(name)], parent[int(name)], start[int(name)] = st
    children = {}
    for p, pp in parent.items():
        children.setdefault(pp, []).append(p)
    out, todo = {}, list(children.get(root, []))
    while todo and len(out) < MAX_PROCS:
        p = todo.pop()
        if start[p] >= since:
            out[p] = comm[p]
        todo += children.get(p, [])
    return out


def node_cpus():
    """{node: [cpus]} of this host (/sys/devices/system/node); {} without NUMA information."""
    out = {}
    base = "/sys/devices/system/node"
    try:
        names = os.listdir(base)
    except OSError:
        return out
    for name in names:
        if re.fullmatch(r"node\d+", name):
            try:
                with open(os.path.join(base, name, "cpulist")) as f:
                    out[int(name[4:])] = cpu_list(f.read(65536))
            except (OSError, ValueError):
                continue
    return dict(sorted(out.items()))


def cpu_list(text):
    """'0-3,8-11' → [0, 1, 2, 3, 8, 9, 10, 11]."""
    out = []
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out += range(int(a), int(b or a) + 1)
    return out


def setting(path):
    """A kernel setting's text (THP's `always [madvise] never` → `madvise`), or 'not available here: …'."""
    try:
        with open(path) as f:
            text = f.read(4096).strip()
    except OSError as e:
        return f"not available here: {path}: {e.strerror}"
    chosen = re.search(r"\[(\w+)\]", text)
    return chosen.group(1) if chosen else text[:64]


def settings():
    """The two settings that move pages while a program runs, named beside every placement."""
    return {"numa_balancing": setting("/proc/sys/kernel/numa_balancing"),
            "thp": setting("/sys/kernel/mm/transparent_hugepage/enabled")}


class Sampler:
    """Samples numa_maps of the evidence run's processes in a thread, from construction until stop():
    `pids` fixed (a spec's server), else every process below this one (the command's tree) except perf (PERF),
    narrowed to `comms` when given (why_comm)."""

    def __init__(self, pids=(), comms=(), interval=INTERVAL, keep_text=False, loops=()):
        self.pids, self.comms, self.interval = tuple(pids), frozenset(comms), interval
        # the names ($0) of `bash -c SCRIPT NAME` loops that are the lab's own (collect's repeat loop): under
        # TCG a short command's largest process sampled was that loop's bash, and it was named the program
        self.loops = frozenset(loops)
        self._loop_pids = set()
        self.keep_text = keep_text     # the peak's numa_maps text too (tests keep real text to read again)
        self.root, self.t0 = os.getpid(), time.monotonic()
        self.since = ticks_now() - 1          # the run's processes start after this (a tick's rounding)
        self.best = {}            # pid → {"comm", "seconds", "kb", "mappings", "cut"}
        self.samples = self.reads = self.read_bytes = 0
        self.read_s = 0.0         # seconds spent reading (the sampler's own cost)
        self.cut = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="numa-maps", daemon=True)
        self._thread.start()

    def targets(self):
        if self.pids:
            return {p: (_stat(p) or ("?", 0))[0] for p in self.pids}
        procs = descendants(self.root, self.since)
        return {p: c for p, c in procs.items() if c not in PERF and (not self.comms or c in self.comms)
                and not self.loop(p, c)}

    def loop(self, pid, comm):
        """Is the process one of the lab's own loops (self.loops: its argv is bash -c SCRIPT NAME …)?"""
        if pid in self._loop_pids:
            return True
        if not self.loops or comm != "bash":
            return False
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read(4096).split(b"\0")
        except OSError:
            return False
        if len(argv) > 3 and argv[1] == b"-c" and argv[3].decode(errors="replace") in self.loops:
            self._loop_pids.add(pid)
            return True
        return False

    def sample(self):
        t = time.monotonic()
        for pid, comm in self.targets().items():
            got = read_live(pid, self.keep_text)
            if got is None:
                continue
            mappings, cut, nbytes = got[:3]
            self.reads += 1
            self.read_bytes += nbytes
            self.cut |= cut
            kb = totals(mappings)
            old = self.best.get(pid)
            if old is None or sum(kb.values()) > sum(old["kb"].values()):
                self.best[pid] = {"comm": comm, "seconds": round(t - self.t0, 3), "kb": kb, "cut": cut,
                                  "mappings": sorted(mappings, key=lambda m: -sum(m["kb"].values()))[:MAX_MAPPINGS],
                                  "text": got[3] if self.keep_text else None}
        self.samples += 1
        self.read_s += time.monotonic() - t

    def _run(self):
        while not self._stop.is_set() and self.samples < MAX_SAMPLES:
            t = time.monotonic()
            self.sample()
            spent = time.monotonic() - t
            self._stop.wait(max(self.interval, spent / DUTY - spent))

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=30)

    def document(self):
        """numa_r<N>.json's content: the largest process's peak (the program, whatever wraps it)."""
        pid = max(self.best, key=lambda p: (sum(self.best[p]["kb"].values()), -p)) if self.best else None
        b = self.best.get(pid)
        nodes = node_cpus()
        return {"format": FORMAT, "pid": pid, "comm": b["comm"] if b else None,
                "samples": self.samples, "interval_s": self.interval, "processes": len(self.best),
                "read_bytes": self.read_bytes, "read_ms": round(self.read_s * 1000, 3), "cut": self.cut,
                "nodes": {str(n): cpus for n, cpus in nodes.items()}, "settings": settings(),
                "peak": None if b is None else {
                    "seconds": b["seconds"], "kb": {str(k): v for k, v in b["kb"].items()},
                    "mappings": [{"start": f"0x{m['start']:x}", "name": m["name"], "policy": m["policy"],
                                  "kb": {str(k): v for k, v in m["kb"].items()}} for m in b["mappings"]]}}

    def write(self, folder, run):
        write_atomic_text(path(folder, run), json.dumps(self.document(), indent=1) + "\n")


def path(folder, run):
    return os.path.join(folder, f"numa_r{int(run)}.json")


# --- reading a received numa_r<N>.json -----------------------------------------------------------
def _count(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 53


def _kb(d, p):
    if not isinstance(d, dict) or len(d) > MAX_NODES or not all(
            isinstance(k, str) and re.fullmatch(r"\d{1,4}", k) and _count(v) for k, v in d.items()):
        raise NumaMapsError(f"{p}:1: kb must map node numbers to whole kB")
    return {int(k): v for k, v in d.items()}


def read(p):
    """numa_r<N>.json checked: {"pid", "comm", "samples", "cut", "nodes": {node: [cpus]}, "settings",
    "peak": None or {"seconds", "kb": {node: kB}, "mappings": [{"start", "name", "policy", "kb"}]}}."""
    text = read_present(p, "json", NumaMapsError)
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        raise NumaMapsError(f"{p}:1: not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise NumaMapsError(f"{p}:1: not a numa_r<N>.json of format {FORMAT}")
    nodes = doc.get("nodes")
    if not isinstance(nodes, dict) or len(nodes) > MAX_NODES or not all(
            isinstance(k, str) and re.fullmatch(r"\d{1,4}", k) and isinstance(v, list) and len(v) <= 1 << 16
            and all(_count(c) for c in v) for k, v in nodes.items()):
        raise NumaMapsError(f"{p}:1: nodes must map node numbers to lists of CPUs")
    sets = doc.get("settings")
    if not isinstance(sets, dict) or not all(isinstance(sets.get(k), str) and len(sets[k]) <= 1024
                                             for k in ("numa_balancing", "thp")):
        raise NumaMapsError(f"{p}:1: settings must hold numa_balancing and thp as short strings")
    if not _count(doc.get("samples")) or not isinstance(doc.get("cut"), bool):
        raise NumaMapsError(f"{p}:1: samples must be a whole number and cut true or false")
    comm = doc.get("comm")
    if comm is not None and (not isinstance(comm, str) or len(comm) > MAX_NAME):
        raise NumaMapsError(f"{p}:1: comm must be a short string")
    out = {"pid": doc.get("pid") if _count(doc.get("pid")) else None, "comm": comm, "samples": doc["samples"],
           "cut": doc["cut"], "nodes": {int(k): v for k, v in nodes.items()},
           "settings": {k: sets[k] for k in ("numa_balancing", "thp")}, "peak": None}
    peak = doc.get("peak")
    if peak is not None:
        maps = peak.get("mappings") if isinstance(peak, dict) else None
        secs = peak.get("seconds") if isinstance(peak, dict) else None
        if not isinstance(maps, list) or len(maps) > MAX_MAPPINGS or not isinstance(secs, (int, float)) or \
                isinstance(secs, bool) or not math.isfinite(secs):
            raise NumaMapsError(f"{p}:1: peak must hold seconds and at most {MAX_MAPPINGS} mappings")
        got = []
        for m in maps:
            if not isinstance(m, dict) or not all(isinstance(m.get(k), str) and 0 < len(m[k]) <= MAX_NAME
                                                  for k in ("start", "name", "policy")):
                raise NumaMapsError(f"{p}:1: each mapping needs start, name and policy (short strings) and kb")
            got.append({"start": m["start"], "name": m["name"], "policy": m["policy"], "kb": _kb(m.get("kb"), p)})
        out["peak"] = {"seconds": float(secs), "kb": _kb(peak.get("kb"), p), "mappings": got}
    return out
