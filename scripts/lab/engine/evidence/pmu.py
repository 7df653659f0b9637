"""The hardware tier's capability detection and command lines (docs/design.md, "The hardware tier").

Detected, never assumed: `probe()` gathers what this host shows (a hardware cycles counter opened with
perf_event_open(2) and counting, `perf stat -e cycles` counting, the CPU's vendor and family, the PMUs
under /sys/bus/event_source/devices, perf's memory events and metric groups), and `kinds()` turns those
facts into one status per kind: "ok" or "not available here: <reason>" (evidence.NA's format), so the
report can say what it found. Each probe is bounded (PROBE_TIMEOUT) and costs well under a second: perf
runs `true` and lists, no workload is profiled.

The command lines (`c2c_record`, `c2c_report`, `topdown_stat`, `mem_record`, `mem_report`; run by
hardware.py at each evidence point, one run per kind) are argv lists around the tested parsers
(why/c2creport.py, why/topdown.py, why/perfmem.py). None has run on a host with a PMU: the lab has had
none. They follow perf's documentation (perf-c2c.txt, perf-stat.txt, topdown.txt) and the published
reports the parsers are tested on.
"""
import ctypes
import functools
import os
import platform
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass

from . import store as ev

PROBE_TIMEOUT = 10          # seconds for one perf probe (`perf stat … true`, `perf list`)
EVENT_SOURCES = "/sys/bus/event_source/devices"
KINDS = ("pmu", "c2c", "topdown", "memsource")
# perf_event_open(2)'s syscall number: the kernel's ABI per architecture
SYSCALL = {"x86_64": 298, "aarch64": 241, "ppc64le": 319, "s390x": 331, "riscv64": 241}


@dataclass(frozen=True)
class Host:
    """What probe() found; tests build their own to check kinds()' rules on hosts the lab has not."""
    perf: bool                  # perf on PATH
    open_cycles: str            # "ok", or why perf_event_open of PERF_COUNT_HW_CPU_CYCLES failed
    stat_cycles: str            # "ok", or what `perf stat -e cycles true` printed instead of a count
    vendor: str                 # "intel", "amd" or the vendor_id as /proc/cpuinfo says
    family: int                 # cpu family (AMD: 0x19 Zen 3/4, 0x1a Zen 5), -1 if unknown
    model: int
    flags: frozenset            # /proc/cpuinfo flags (Intel's `pebs`, AMD's `ibs`)
    sources: frozenset          # PMUs under /sys/bus/event_source/devices (cpu, ibs_op, …)
    ibs_caps: frozenset         # /sys/bus/event_source/devices/ibs_op/caps/* (zen4_ibs_extensions)
    mem_events: tuple           # `perf mem record -e list`'s available events, () if none
    mem_error: str              # what perf said instead, if anything
    metric_groups: frozenset    # TopdownL1, PipelineL1… as `perf list metricgroup` names them
    perf_version: str = ""      # `perf version`'s number ("6.1.187"), "" where not asked
    double_cl: bool = False     # `perf c2c report -h` lists --double-cl


def _run(argv):
    """(exit status, stdout + stderr) of a short perf probe, bounded; (None, why) if it could not run."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT, stdin=subprocess.DEVNULL,
                           errors="replace")
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{' '.join(argv[:3])}: {type(e).__name__}"
    return p.returncode, (p.stdout + p.stderr)[:65536]


def open_cycles():
    """"ok" when a hardware cycles counter opens and counts for this thread, else the errno's words: the
    kernel's own answer, without perf."""
    nr = SYSCALL.get(platform.machine())
    if nr is None:
        return f"perf_event_open's syscall number is not known for {platform.machine()}"
    attr = bytearray(64)                                   # PERF_ATTR_SIZE_VER0
    struct.pack_into("IIQ", attr, 0, 0, 64, 0)             # PERF_TYPE_HARDWARE, size, PERF_COUNT_HW_CPU_CYCLES
    struct.pack_into("Q", attr, 40, (1 << 5) | (1 << 6))   # exclude_kernel, exclude_hv: allowed at paranoid 2
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(nr, ctypes.create_string_buffer(bytes(attr), 64), 0, -1, -1, 8)   # FD_CLOEXEC
    if fd < 0:
        err = ctypes.get_errno()
        return f"perf_event_open(cycles) failed: {os.strerror(err)} (errno {err})"
    try:
        sum(range(100000))                                 # some user-space work to count
        count = struct.unpack("Q", os.read(fd, 8))[0]
    except OSError as e:
        return f"perf_event_open(cycles) opened but reading failed: {e.strerror}"
    finally:
        os.close(fd)
    return "ok" if count > 0 else "perf_event_open(cycles) opened but counted nothing"


def stat_cycles():
    """"ok" when `perf stat -e cycles true` prints a count (what prefix.perf_event() also asks)."""
    rc, out = _run(["perf", "stat", "-x,", "-e", "cycles", "true"])
    if rc is None:
        return out
    for line in out.splitlines():
        field = line.split(",")[0]
        if field.isdigit():
            return "ok" if int(field) > 0 else "perf stat counted 0 cycles"
        if field.startswith("<not"):
            return f"perf stat -e cycles: {field}"
    return f"perf stat -e cycles printed no count (exit {rc})"


def perf_version():
    """`perf version`'s number ("6.1.187"), or what was printed instead (bounded)."""
    rc, out = _run(["perf", "version"])
    m = re.search(r"perf version (\S+)", out or "")
    return m.group(1)[:40] if m else (out.strip().splitlines() or [f"exit {rc}"])[-1][:80]


def lists_double_cl(help_text):
    """Whether `perf c2c report -h`'s options list --double-cl. Asked of perf, not read from its version: a
    distribution may carry it back (CentOS Stream 9's kernel merge request 2508 carries Feng Tang's commit
    1470a108a60e to its 5.14-based perf); upstream it came with perf 6.3 (tag perf-tools-for-v6.3-1-2023-02-22)."""
    return re.search(r"^\s*(?:-a, )?--double-cl\b", help_text or "", re.M) is not None


def double_cl():
    """(perf's version, whether its `perf c2c report` takes --double-cl): two short perf runs, no workload."""
    _, out = _run(["perf", "c2c", "report", "-h"])     # usage goes out with exit 129: the text is the answer
    return perf_version(), lists_double_cl(out)


def _cpuinfo(text):
    info = {}
    for line in text.splitlines():
        if not line.strip():
            break                                          # the first processor is enough
        k, _, v = line.partition(":")
        info.setdefault(k.strip(), v.strip())
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(info.get("vendor_id", ""), info.get("vendor_id", "?"))

    def num(k):
        return int(info[k]) if info.get(k, "").isdigit() else -1
    return vendor, num("cpu family"), num("model"), frozenset(info.get("flags", "").split())


def _listdir(path):
    try:
        return frozenset(os.listdir(path))
    except OSError:
        return frozenset()


def probe():
    """This host's facts (a few file reads; with perf on PATH, three short perf runs)."""
    try:
        with open("/proc/cpuinfo") as f:
            vendor, family, model, flags = _cpuinfo(f.read(1 << 20))
    except OSError:
        vendor, family, model, flags = "?", -1, -1, frozenset()
    perf = shutil.which("perf") is not None
    opened, stat = open_cycles(), stat_cycles() if perf else "perf is not on PATH"
    events, mem_error, groups, version, double = (), "", frozenset(), "", False
    if perf and "ok" in (opened, stat):     # without a PMU there is nothing more to ask perf
        rc, out = _run(["perf", "mem", "record", "-e", "list"])
        events = tuple(sorted({m.group(1) for m in re.finditer(r"^\s*(\S+)\s*:\s*available\s*$", out, re.M)}))
        mem_error = "" if events else (out.strip().splitlines() or [f"exit {rc}"])[-1][:200]
        rc, out = _run(["perf", "list", "metricgroup"])
        groups = frozenset(g for g in re.findall(r"\b(TopdownL\d|PipelineL\d)\b", out))
        version, double = double_cl()
    return Host(perf=perf, open_cycles=opened, stat_cycles=stat, vendor=vendor, family=family, model=model,
                flags=flags, sources=_listdir(EVENT_SOURCES),
                ibs_caps=_listdir(os.path.join(EVENT_SOURCES, "ibs_op", "caps")), mem_events=events,
                mem_error=mem_error, metric_groups=groups, perf_version=version, double_cl=double)


def kinds(host):
    """{kind: "ok" | "not available here: …"} for KINDS, from the facts alone (no probing here)."""
    na = ev.NA
    if host.open_cycles == "ok" or host.stat_cycles == "ok":
        pmu = ev.OK
    else:
        where = "no cpu PMU under /sys/bus/event_source/devices" if "cpu" not in host.sources and \
            not any(s.startswith("cpu_") for s in host.sources) else "the cpu PMU is listed but counts nothing"
        vm = ", a VM without PMU passthrough" if "hypervisor" in host.flags else ""
        facts = f"{host.open_cycles}; {host.stat_cycles}; {where}{vm}"
        pmu = na + f"no hardware PMU ({facts})"
    out = {"pmu": pmu}
    if pmu != ev.OK:
        why = na + f"needs a hardware PMU, and this host has none ({facts})"
        return dict(out, c2c=why, topdown=why, memsource=why)
    if not host.perf:
        return dict(out, c2c=na + "perf is not on PATH", topdown=na + "perf is not on PATH",
                    memsource=na + "perf is not on PATH")
    # perf c2c records perf mem's events: PEBS load latency on Intel, IBS op on AMD
    if not host.mem_events:
        sampler = {"intel": "PEBS load-latency", "amd": "IBS op"}.get(host.vendor, "memory-sampling")
        out["c2c"] = na + (f"perf lists no memory events ({host.mem_error or 'none available'}): "
                           f"needs {sampler} sampling")
    elif host.vendor == "amd" and "ibs_op" not in host.sources:
        out["c2c"] = na + "no ibs_op PMU (AMD IBS op sampling is off or not passed through)"
    else:
        out["c2c"] = ev.OK
    # IBS's data source names local CCX, near/far CCX, DRAM, remote node from Zen 4 on (the kernel's
    # zen4_ibs_extensions cap); Intel's PEBS data source needs the PEBS flag
    if host.vendor == "amd":
        out["memsource"] = ev.OK if "zen4_ibs_extensions" in host.ibs_caps and host.mem_events else \
            na + ("IBS data source needs Zen 4 or later (no ibs_op/caps/zen4_ibs_extensions)" if host.mem_events
                  else out["c2c"][len(na):])
    elif host.vendor == "intel":
        out["memsource"] = ev.OK if "pebs" in host.flags and host.mem_events else \
            na + ("no PEBS (the pebs CPU flag is missing)" if host.mem_events else out["c2c"][len(na):])
    else:
        out["memsource"] = na + f"data-source sampling is read here for Intel and AMD only ({host.vendor})"
    want = {"intel": "TopdownL1", "amd": "PipelineL1"}.get(host.vendor)
    if want and want in host.metric_groups:
        out["topdown"] = ev.OK
    elif want:
        out["topdown"] = na + f"perf lists no {want} metric group for this CPU (family {host.family:#x}, model " \
                              f"{host.model:#x}; a newer perf may know it)"
    else:
        out["topdown"] = na + f"top-down level 1 is read here for Intel and AMD only ({host.vendor})"
    return out


@functools.lru_cache(maxsize=1)
def host():
    """probe(), once per process (a sweep probes once)."""
    return probe()


def status():
    """kinds(host()): what collect.availability() reports for c2c, topdown and memsource."""
    return kinds(host())


def evidence_parts():
    """The parts of the evidence format (evidence.PARTS) this tier answers: {"c2c", "topdown", "memsource"},
    each "ok" or "not available here: <reason>", for collect.availability(); hardware.py records the "ok" ones."""
    s = status()
    return {k: s[k] for k in ("c2c", "topdown", "memsource")}


# --- the command lines (never run here: no PMU) ----------------------------------------------------
def c2c_record(data, command, vendor, cpus=None):
    """`perf c2c record` of `command` into `data`. AMD's IBS is a per-CPU PMU (perf c2c's documentation;
    Ravi Bangoria's 2022 series): it records whole CPUs, so the point's CPUs (`cpus`, "0-3") are named,
    or every CPU when none is given; Intel records the command's own tree."""
    argv = ["perf", "c2c", "record", "-o", data]
    if vendor == "amd":
        argv += ["-C", cpus] if cpus else ["-a"]
    return argv + ["--"] + list(command)


def c2c_report(data, double_cl=False):
    """`perf c2c report --stdio` of `data`, in the layout c2creport.parse() reads: no call graphs (its
    Pareto rows are read by shape), the full source:line. `double_cl`: the same recording grouped by
    128-byte pairs of lines, read where the adjacent-line prefetcher is the suspect (c2creport.adjacent_pairs;
    perf 6.3 and later, or a perf that carries it back: `double_cl()` asks; Debian 12's perf 6.1 lacks it)."""
    return ["perf", "c2c", "report", "-i", data, "--stdio", "--call-graph", "none", "--full-symbols"] + \
        (["--double-cl"] if double_cl else [])


def topdown_stat(out, command, vendor, cpus=None):
    """Top-down level 1 of `command` into `out` (perf stat's text): Intel `--topdown` (older Intel cores
    count top-down per core: perf then wants system-wide counting, so the point's CPUs are named when
    given); AMD Zen 4/5 the PipelineL1 and PipelineL2 metric groups (L2 splits backend into memory and
    CPU). topdown.parse() reads either."""
    argv = ["perf", "stat", "-o", out]
    argv += ["-M", "PipelineL1,PipelineL2"] if vendor == "amd" else ["--topdown"]
    argv += ["-C", cpus] if cpus else []
    return argv + ["--"] + list(command)


def mem_record(data, command, vendor, cpus=None):
    """`perf mem record` of `command` (AMD IBS, like c2c, records whole CPUs: the point's, or all)."""
    argv = ["perf", "mem", "record", "-o", data]
    if vendor == "amd":
        argv += ["-C", cpus] if cpus else ["-a"]
    return argv + ["--"] + list(command)


def mem_report(data):
    """`perf mem report` of `data` in the layout perfmem.parse() reads: data source, samples, snoop."""
    return ["perf", "mem", "report", "-i", data, "--stdio", "-F", "mem,sample,snoop"]
