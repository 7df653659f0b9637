"""Evidence runs: the point's command once more, after its timed repeats, under one `perf record` (inside
the point's pinning, so perf shares the point's CPUs) that follows every thread of the whole process
tree (perf's inherit: forks, clones and execs of the command are recorded; nothing else on the host is).
One recording gives all of it (docs/design.md, "Why it stops scaling: evidence"):

- on-CPU: cpu-clock samples at HZ (cycles where the host has a PMU) with DWARF call stacks;
- off-CPU: PERF_RECORD_SWITCH IN/OUT (exact times), the stack of sched:sched_switch and the wakeups of
  sched:sched_wakeup: blocked time per reason and stack, then run-queue delay;
- futex waits per address: syscalls:sys_enter_futex / sys_exit_futex with the waiting user stack.

DWARF, not frame pointers: Debian's libc has none, so `-g` loses the caller of every libc function (a
futex wait shows `__lll_lock_wait ← worker`, never `update_table`); and the recorded tree runs without
address randomisation, or perf's DWARF unwinder falls back to frame pointers in a forked child
(no_aslr). bpftrace 0.17 walks frame pointers only and names user frames when it prints, after the
process is gone: addresses only. So this host's path is perf; bpftrace is not used.

Every part is bounded (the recording by MAX_BYTES and the spec's timeout, perf script by SCRIPT_TIMEOUT)
and a part the host cannot give says "not available here: <reason>"; an evidence run never fails a sweep.
Every run is judged by the validity gate (gate.py: lost, cut, or outside the disturbance budget) and a
rejected one is redone once at a lighter recording tier (TIERS); meta.json says which were kept.
"""
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from lab.core import stats, tidy
from lab.engine import child, guard, hostprep, perfstat, prefix
from lab.engine import execmetric as av
from lab.engine import point as pt

from . import fold, gate, hardware, numamaps, pmu
from . import store as ev

HZ = 999                    # the full tier's sample frequency (TIERS[0])
STACK_BYTES = 8192          # user stack copied per event for the DWARF unwinder (TIERS[0])
MAX_BYTES = "1G"            # perf record --max-size: reached, perf stops and ends the command (the run is lost)
RING_BYTES = 256 * 2 ** 20   # perf's ring buffers, all CPUs together: per CPU this ÷ the CPU count
RING_PAGES = (64, 4096)     # per CPU, at least 256 KiB and at most 16 MiB (DWARF stacks lose events with less)
SCRIPT_TIMEOUT = 600        # seconds for perf script to unwind and print the recording
# The stack is needed where a thread blocks (sched_switch, sys_enter_futex); a wakeup or a futex's return
# needs only its time: no 8 KiB stack copy for them (a busy server makes hundreds of thousands a second).
# call-graph=fp, not =no: perf 6.1 then records none of those events at all (seen here).
# (tracepoint, whether its stack is wanted): the tier says how many bytes of it are copied.
# sys_exit_futex is not recorded: a futex wait ends at its thread's next SWITCH IN (fold.py), and every
# switch is recorded anyway; a contended mutex makes hundreds of thousands of futex calls a second.
TRACEPOINTS = (("sched:sched_switch", True), ("sched:sched_wakeup", False), ("syscalls:sys_enter_futex", True))
# The stacked tracepoints are sampled, 1 in `period` (chosen from a counting calibration: calibrate()),
# so that each keeps to its tier's `trace_rate` stacks a second. perf 6.1 takes no period term for a
# `sys:name` event: the tracepoint is named by its id (`tracepoint/config=ID,period=P,name=…/`), and -R
# keeps its fields (uaddr, op, prev_state) in the samples, which perf then decodes as for a named one.
# Which tracepoint field names the thread an event is about (why_comm filters them in the kernel).
COMM_FIELD = {"sched:sched_switch": "prev_comm", "sched:sched_wakeup": "comm"}
# Recording tiers, heaviest first (the validity gate, lab/engine/evidence/gate.py: a run lost, cut or outside the
# disturbance budget is redone once at the next tier, and later runs of the point start there). Stacks are
# what cost, per event: each tier samples less often and copies fewer user-stack bytes for the DWARF
# unwinder. The innermost frames come first in the copy, and they are what the classes read (a join's,
# a barrier's or a mutex's wait): 256 bytes still unwound the lock fixture's waits to update_table here,
# where a frame-pointer chain (no copy) kept no frame at all through Debian's libc, and a main thread's
# join then read as a bare futex wait, a "lock". On-CPU cost divides by each run's own frequency
# (diff.py), so tiers compare. What each costs here: docs/measured.md.
# `trace_rate`: stacks a second each sampled tracepoint may take (its period follows from the calibrated
# rate); `samples`: on-CPU samples a second over all CPUs (the frequency drops where many CPUs are busy).
TIERS = ({"name": "full", "hz": HZ, "stack": STACK_BYTES, "trace_stack": STACK_BYTES, "trace_rate": 2000,
          "samples": 8000},
         {"name": "light", "hz": 249, "stack": 2048, "trace_stack": 2048, "trace_rate": 500, "samples": 2000},
         {"name": "lightest", "hz": 99, "stack": 1024, "trace_stack": 1024, "trace_rate": 100, "samples": 500})
# the counting calibration at most (a repeated command repeats for its why_seconds up to this)
CALIBRATE_S = 1.0
# kept runs a side the differential's intervals need (lab/why/diff.py interval): a point that why_runs (at
# least this many) left one short gets one more run (run_point)
MIN_KEPT = 2
EVENT_BYTES = 300           # a recorded event's size beside its stack copy (header, registers, callchain)
HOT_SYMBOLS, HOT_PER_SYMBOL = 10, 3
MAX_REPEATS = 100000        # why_seconds: repetitions of a command in one evidence run, at most
# why_seconds' loop, between perf and the command: the command's words are "$@", never shell text. It
# runs the command until $1 µs have passed (whole repetitions: it never cuts one) and writes how many
# ran into $2; a failed repetition ends it with that repetition's status. With $3 > 0 it also stops once
# its parent (perf record) has written $3 bytes: a contended lock's futex and switch events, each with
# an 8 KiB stack, reach perf's size limit within a second, and perf then ends the command and the run is
# lost; stopping between repetitions keeps the run and its count exact. The bytes come from
# /proc/$PPID/io (wchar) with builtins only: no process of its own to show up in the recording.
REPEAT = ('t0=${EPOCHREALTIME//[!0-9]/}; end=$(( t0 + $1 )); out=$2; budget=$3; shift 3; n=0; w=0\n'
          'while :; do "$@" || exit; n=$((n + 1))\n'
          '  if [ "$budget" -gt 0 ]; then while read -r k v; do [ "$k" = wchar: ] && w=$v; done < /proc/$PPID/io; fi\n'
          f'  [ "${{EPOCHREALTIME//[!0-9]/}}" -lt "$end" ] && [ "$n" -lt {MAX_REPEATS} ] && '
          '{ [ "$budget" -eq 0 ] || [ "$w" -lt "$budget" ]; } || break\n'
          'done\necho "$n $(( ${EPOCHREALTIME//[!0-9]/} - t0 ))" > "$out"\n')
REPEAT_NAME = "why-repeat"     # the loop's $0: numamaps.Sampler knows the lab's own bash by it
RECORD_BUDGET = 256 * 2 ** 20   # bytes of recording after which why_seconds' loop stops: a quarter of MAX_BYTES
ATTACH_GRACE = 60           # seconds a server's recording may take to write its file after SIGINT


def paranoid():
    level = hostprep.setting("perf_event_paranoid")
    return 2 if level is None else level


def availability(event):
    """{part: "ok" | "not available here: …"} before anything runs: tools, permissions, PMU."""
    # the hardware tier, detected (engine/evidence/pmu.py: a counter that opens and counts, the vendor, PEBS/IBS);
    # an "ok" kind gets runs of its own (hardware.py), the others keep pmu.py's reason
    out = dict(pmu.evidence_parts())
    if not shutil.which("perf"):
        why = ev.NA + "perf is not on PATH"
        return dict(out, oncpu=why, offcpu=why, futex=why, sched=why, hotins=why, symbols=why)
    root = os.geteuid() == 0
    level = paranoid()
    out["oncpu"] = ev.OK if root or level <= 2 else ev.NA + f"perf_event_paranoid is {level} (> 2) and not root"
    if root or level <= -1:
        problem = hostprep.tracefs_problem()
        trace = ev.NA + problem if problem else ev.OK
    else:
        trace = ev.NA + (f"scheduler and futex tracepoints need root or perf_event_paranoid -1 (it is {level}; "
                         "`sysctl kernel.perf_event_paranoid=-1` gives them, the lab never changes it)")
    out["offcpu"] = out["futex"] = out["sched"] = trace
    out["hotins"] = ev.OK if shutil.which("objdump") else ev.NA + "objdump is not on PATH"
    out["symbols"] = ev.OK
    return out


def scope(spec, server_pids):
    """What an evidence run records and counts, the one rule: ("server", pids) when the spec's `server`
    names running processes (the measured program is the server the command talks to: perf attaches to
    it, the command runs unrecorded); else ("tree", comms): the command's whole tree, of which only the
    threads named in `why_comm` count when it is set (a server the command starts beside its load
    generator: the generator's scheduler events are not recorded with stacks, its samples not counted)."""
    if server_pids:
        return "server", tuple(server_pids)
    return "tree", tuple(spec.get("why_comm", "").split())


def comm_filter(field, comms):
    """perf's tracepoint filter text for threads named `comms` (names checked by spec.COMM: no quotes)."""
    return " || ".join(f'{field} == "{c}"' for c in comms)


def repeat_prefix(seconds, out, recorded):
    """The argv put before the command to repeat it for `seconds` (REPEAT), or [] for one run; `recorded`:
    perf record is the loop's parent, and the loop stops at RECORD_BUDGET bytes of its recording."""
    if seconds <= 0:
        return []
    return ["bash", "-c", REPEAT, REPEAT_NAME, str(int(seconds * 1e6)), out, str(RECORD_BUDGET if recorded else 0)]


def repeat_seconds(spec, throughput):
    """why_seconds for this point: none for a throughput (its own duration sets its samples), at most
    half the spec's timeout (the evidence run stays within it)."""
    return 0.0 if throughput else min(float(spec.get("why_seconds", "0") or 0), float(spec["timeout"]) / 2)


def tracepoint_id(name):
    """The kernel's id of `sys:name` from tracefs, or None."""
    sys_, _, ev_ = name.partition(":")
    base = hostprep.tracing_dir()
    try:
        with open(os.path.join(base or "/sys/kernel/tracing", "events", sys_, ev_, "id")) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def tracepoint(name, wants_stack, tier, period=1):
    """One tracepoint's -e term at `tier`: a frame-pointer chain where no stack is wanted, else the tier's
    stack copy, of 1 event in `period` (by id: perf 6.1 takes no period for a named tracepoint)."""
    if not wants_stack:
        return f"{name}/call-graph=fp/"
    tid = tracepoint_id(name)
    if tid is None:       # no id to name it by: every event, as before sampling
        return f"{name}/call-graph=dwarf,stack-size={tier['trace_stack']}/"
    # the record's own --call-graph (the tier's stack): a per-event call-graph term on an event named by
    # its id was unwound as a frame-pointer chain by perf 6.1's script (update_table lost; seen here)
    return f"tracepoint/config={tid},period={max(1, int(period))},name={name.partition(':')[2]}/"


def ring_pages(cpus=None):
    """perf's per-CPU ring buffer in pages: RING_BYTES over the CPUs, a power of two within RING_PAGES."""
    cpus = cpus or os.cpu_count() or 1
    pages = RING_BYTES // 4096 // cpus
    p = RING_PAGES[0]
    while p * 2 <= min(pages, RING_PAGES[1]):
        p *= 2
    return p


def counted(argv, stat, seconds):
    """(the full tier's plan, wall seconds) from one run of argv counted by perf stat into file `stat`:
    calibrate's count made by hand (lab.engine.evidence.disturb, bigcost, the fixtures' recorder);
    seconds: the recording's length it plans for (None: the counted run's wall)."""
    t0 = time.monotonic()
    subprocess.run(perfstat.counting(stat, [t for t, _s in TRACEPOINTS] + ["task-clock"]) + argv,
                   stdout=subprocess.DEVNULL, check=True)
    wall = time.monotonic() - t0
    with open(stat) as f:
        counts = perfstat.counts(f.read())
    rates = {t: counts.get(t, 0.0) / wall for t, _s in TRACEPOINTS}
    return plan(TIERS[0], rates, counts.get("task-clock", 0.0) / 1000 / wall, seconds or wall, RECORD_BUDGET), wall


def plan(tier, rates=None, busy=None, seconds=None, budget=None):
    """How `tier` records given the calibrated `rates` ({tracepoint: events a second}) and `busy` (CPUs the
    command kept busy): {"hz", "periods": {tracepoint: 1 in N}, "bytes": the recording expected over
    `seconds`}. Each stacked tracepoint keeps to the tier's trace_rate stacks a second, the samples to
    its `samples` a second over the busy CPUs; where the expected bytes still exceed `budget`, every
    period and the frequency are scaled down together."""
    rates = rates or {}
    hz = tier["hz"]
    if busy and busy > 0:
        hz = max(1, min(hz, int(tier["samples"] / busy)))
    periods = {t: max(1, -(-int(rates.get(t, 0)) // tier["trace_rate"])) if stack else 1 for t, stack in TRACEPOINTS}
    per_s = hz * (busy or 1) * (tier["stack"] + EVENT_BYTES) + sum(
        rates.get(t, 0) / periods[t] * ((tier["trace_stack"] if stack else 64) + EVENT_BYTES)
        for t, stack in TRACEPOINTS) + \
        rates.get("sched:sched_switch", 0) * 2 * 64          # PERF_RECORD_SWITCH out and in, each
    expected = per_s * (seconds or 0)
    if budget and seconds and expected > budget:
        k = expected / budget
        hz = max(1, int(hz / k))
        periods = {t: (max(1, int(p * k + 0.999)) if dict(TRACEPOINTS)[t] else 1) for t, p in periods.items()}
        expected = budget
    return {"hz": hz, "periods": periods, "bytes": int(expected)}


def sampled(tier, how, status):
    """meta.json's and the report's words on how each kind of evidence was sampled at `tier` with plan `how`."""
    out = {"oncpu": f"cpu-clock samples at {how['hz']} Hz, {tier['stack']} bytes of user stack each (DWARF)"}
    if status.get("offcpu") == ev.OK:
        sw, fx = how["periods"].get("sched:sched_switch", 1), how["periods"].get("syscalls:sys_enter_futex", 1)
        out["offcpu"] = ("every switch's time (PERF_RECORD_SWITCH), every wakeup; the stack of " +
                         ("every" if sw == 1 else f"1 in {sw}") + f" sched_switch ({tier['trace_stack']} bytes), "
                         "its blocked time weighted by that period")
        out["futex"] = (("every" if fx == 1 else f"1 in {fx}") + f" futex call with its stack ({tier['trace_stack']} "
                        "bytes; waits, wait time and wakes weighted by that period; a wait ends at its thread's "
                        "next switch in)")
    return out


def no_aslr():
    """`setarch ARCH -R` before perf record (its personality is inherited by the whole recorded tree), or
    [] where setarch is missing. perf 6.1 keeps a parent's mappings in a child after fork and exec, and its
    libunwind unwinder takes a library's base from the lowest mapping of that library in the process
    (tools/perf/util/unwind-libunwind-local.c, read_unwind_spec_eh_frame: the least start over its maps): a
    command forked by a recorded parent (why_seconds' bash loop, a user's script) whose libc landed above
    the parent's got a wrong base for libc, found no unwind table there and fell back to frame pointers,
    which skip the caller of every libc function (`__lll_lock_wait ← worker`, update_table lost: 7 of 7
    processes with libc above bash's, 0 of 5 below, 0 of 6 with address randomisation off; seen here,
    2026-12-07). Without randomisation every process of the tree maps a library where its parent had it,
    and the new mapping replaces the stale one. What it costs: docs/measured.md."""
    return ["setarch", os.uname().machine, "-R"] if shutil.which("setarch") else []


def record_prefix(data, event, status, comms=(), tier=TIERS[0], how=None):
    """perf record's argv (outermost, before pinning) for what `status` says this host allows, recording
    at `tier` (TIERS) as `how` (plan()) says; with `comms`, the scheduler tracepoints only of threads of
    those names."""
    how = how or plan(tier)
    if status["oncpu"] != ev.OK:
        return []
    root = os.geteuid() == 0
    user_only = "" if root or paranoid() <= 1 else "u"      # paranoid 2: a user samples user space only
    # --no-buildid-cache: ~/.debug would keep a copy of every binary ever recorded (unbounded), and name a
    # stripped binary from an unstripped copy recorded earlier. A user's locked memory for perf is small
    # (perf_event_mlock_kb): perf's default ring buffer then.
    argv = no_aslr() + ["perf", "record", "-q", "--no-buildid-cache", "-o", data, "--max-size", MAX_BYTES] + \
        (["-m", str(ring_pages())] if root else []) + \
        ["--call-graph", f"dwarf,{tier['stack']}", "--sample-cpu", "-e", f"{event}/freq={how['hz']}/{user_only}"]
    if status["offcpu"] == ev.OK:
        argv += ["--switch-events", "-R"]
        for t, stack in TRACEPOINTS:
            argv += ["-e", tracepoint(t, stack, tier, how["periods"].get(t, 1))] + \
                (["--filter", comm_filter(COMM_FIELD[t], comms)] if comms and t in COMM_FIELD else [])
    return argv + ["--"]


def script(data, env, log, into=None, comms=()):
    """(a Folder of the recording, folded into `into` when given, None) or (None, why)."""
    # perf script warns that `trace` does not apply to the samples: harmless, it applies to the tracepoints
    argv = ["perf", "script", "-i", data, "-F", "comm,pid,tid,cpu,time,period,event,trace,ip,sym,symoff,dso",
            "--show-switch-events", "--show-task-events", "--show-mmap-events"]
    with open(log, "a") as err:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, env=env,
                             text=True, errors="replace", start_new_session=True)
        timer = threading.Timer(SCRIPT_TIMEOUT, p.kill)
        timer.start()
        try:
            folder = fold.fold(p.stdout, into, comms)
        finally:
            timer.cancel()
            p.stdout.close()
            rc = p.wait()
    if rc != 0:
        return None, (f"perf script took over {SCRIPT_TIMEOUT} s" if rc == -9 else f"perf script failed (exit {rc})")
    return folder, None


INS = re.compile(r"^\s*([0-9a-f]+):\s+(.+?)\s*$")
START = re.compile(r"^([0-9a-f]+) <(.+)>:$")


def disassemble(dso, symbol, env):
    """[(offset from the symbol's start, instruction text)] of one symbol, or []. perf names C++ and Rust
    functions demangled (`rune::runtime::vm::Vm::run`), which objdump's --disassemble= does not match:
    those are found by their address and size in the demangled symbol table instead."""
    if not os.path.isfile(dso):
        return []
    code = objdump(["--disassemble=" + symbol], dso, env, symbol)
    if code:
        return code
    start, size = demangled_symbols(dso, env).get(symbol, (None, 0))
    if start is None or size <= 0:
        return []
    return objdump([f"--start-address=0x{start:x}", f"--stop-address=0x{start + size:x}"], dso, env, None)


def objdump(select, dso, env, symbol):
    """objdump's instructions of one selection as [(offset from the function's start, text)]; `symbol` the
    label to keep (None: the selection is one function, its first label is the start)."""
    try:
        p = subprocess.run(["objdump", "-d", "--no-show-raw-insn", *select, dso],
                           capture_output=True, text=True, errors="replace", timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return []
    start, out = None, []
    for line in p.stdout.splitlines():
        m = START.match(line)
        if m:
            if symbol is not None:
                start = int(m.group(1), 16) if m.group(2) == symbol else None
            elif start is None:
                start = int(m.group(1), 16)
            continue
        m = INS.match(line)
        if m and start is not None:
            out.append((int(m.group(1), 16) - start, re.sub(r"\s+", " ", m.group(2).split("#")[0]).strip()))
    return out


_SYMBOLS = {}
_DATA = {}


def data_symbol(path, offset, env=None):
    """The static data object (nm's b/B/d/D with a size) of binary `path` at `offset` from its base, or ''."""
    if path not in _DATA:
        table = []
        try:
            with open(path, "rb") as f:
                exe = f.read(18)[16:18] == b"\x02\x00"        # ET_EXEC: its symbols are absolute addresses
            p = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True, text=True,
                               errors="replace", timeout=120, env=env)
            for line in p.stdout.splitlines():
                parts = line.split()
                if len(parts) == 4 and parts[2] in "bBdD":
                    table.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
        except (OSError, ValueError, subprocess.TimeoutExpired):
            exe = False
        _DATA[path] = (exe, table)
    exe, table = _DATA[path]
    return next((n for a, size, n in table if a <= offset < a + size), "")


def lock_name(folder, env=None):
    """name(pid, addr) for Folder.lock_rows: the mutex's symbol and binary (`lock (lock)`), from the
    process's executable mappings; '' where the word is on the heap or a stack."""
    def name(pid, addr):
        a = int(addr, 16)
        for base, path in folder.maps.get(pid, ()):
            data_symbol(path, 0, env)                  # read once: whether its symbols are absolute
            sym = data_symbol(path, a if _DATA[path][0] else a - base, env)
            if sym:
                return f"{sym} ({os.path.basename(path)})"
        return ""
    return name


def demangled_symbols(dso, env):
    """{demangled name: (address, size)} of a binary's defined functions (nm -C -S), read once per binary;
    a name defined twice keeps its first (nm's order: by address)."""
    if dso not in _SYMBOLS:
        table = {}
        try:
            p = subprocess.run(["nm", "-C", "-S", "--defined-only", dso], capture_output=True, text=True,
                               errors="replace", timeout=120, env=env)
            for line in p.stdout.splitlines():
                parts = line.split(" ", 3)
                if len(parts) == 4 and parts[2] in ("t", "T", "w", "W"):
                    table.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
        _SYMBOLS[dso] = table
    return _SYMBOLS[dso]


def hot_instructions(folder, env):
    """The format's hotins rows. A timer interrupt (cpu-clock) is taken when the interrupted instruction
    completes, so perf's sampled address is the NEXT one: each sample is given to the instruction before
    it (the one that was executing), as perf annotate's skid note advises for non-precise events."""
    by_symbol = {}
    for (sym, dso, off), n in folder.leaves.items():
        by_symbol.setdefault((sym, dso), {})[int(off, 16)] = n
    rows = []
    top = sorted(by_symbol.items(), key=lambda kv: -sum(kv[1].values()))[:HOT_SYMBOLS]
    for (sym, dso), offsets in top:
        code = disassemble(dso, sym, env)
        if not code:
            continue
        starts = [o for o, _ in code]
        counts = {}
        for off, n in offsets.items():
            i = max((k for k, o in enumerate(starts) if o <= off), default=0)
            if starts[i] == off and i > 0:
                i -= 1
            counts[i] = counts.get(i, 0) + n
        for i, n in sorted(counts.items(), key=lambda kv: -kv[1])[:HOT_PER_SYMBOL]:
            rows.append({"symbol": sym, "dso": dso, "offset": f"0x{code[i][0]:x}", "samples": n,
                         "instruction": code[i][1]})
    return rows


RECORDED = ("oncpu", "offcpu", "futex", "sched", "hotins", "symbols")


def evidence_run(folder, run, data, env, log, status, comms=()):
    """Fold the recording `data` of evidence run `run` (the command's tree, counting the threads named
    `comms` only when given, or the spec's server: scope()) into the format's files in `folder`; returns
    (the statuses with what this run could not give, the counted threads' seconds under perf or None)."""
    status = dict(status)
    if status["oncpu"] != ev.OK:
        return status, None
    if not os.path.exists(data):
        return dict(status, **{k: ev.NA + "perf record wrote nothing (see stderr_r*.log)" for k in RECORDED}), None
    f, why = script(data, env, log, comms=comms)
    if f is None:
        return dict(status, **{k: ev.NA + why for k in RECORDED}), None
    span = f.span()
    traced = status["offcpu"] == ev.OK
    hot = hot_instructions(f, env) if status["hotins"] == ev.OK else None
    if hot == []:
        status["hotins"] = ev.NA + "no user-space symbol with samples could be disassembled"
        hot = None
    ev.write_run(folder, run, oncpu=f.oncpu, offcpu=f.offcpu if traced else None,
                 futex=f.futex_rows() if traced else None, threads=f.thread_rows() if traced else None, hotins=hot,
                 parallel=f.parallel_rows() if traced else None, alone=f.alone if traced else None,
                 cpus=f.cpu_rows() if traced else None,
                 lock=f.lock_rows(lock_name(f, env)) if traced else None, doing=f.doing_rows())
    stripped = f.stripped()
    if stripped:
        status["symbols"] = "missing: " + " ".join(stripped)
    if f.samples == 0:
        status["oncpu"] = ev.NA + "perf recorded no sample (the command ran too briefly?)"
    return status, span or None


class ServerRecording:
    """perf record attached (-p) to the spec's `server` processes for one evidence run: a server the
    command talks to but did not start (the lab's Cassandra) is not in the command's tree. Its threads
    of the moment and those they start are recorded, folded with the command's into the same files."""

    def __init__(self, pids, data, event, status, env, log, tier=TIERS[0], how=None):
        self.data, self.proc = data, None
        argv = record_prefix(data, event, status, tier=tier, how=how)
        if not pids or not argv:
            return
        self.log = open(log, "a")
        self.proc = subprocess.Popen(argv[:-1] + ["-p", ",".join(str(p) for p in pids)], env=env,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
                                     start_new_session=True)
        # attached once it has written its header; perf's own start-up, bounded
        for _ in range(100):
            if self.proc.poll() is not None or (os.path.exists(data) and os.path.getsize(data) > 0):
                break
            threading.Event().wait(0.05)

    def stop(self):
        """End the recording (SIGINT: perf writes its file), at most ATTACH_GRACE seconds."""
        if self.proc is None:
            return None
        try:
            self.proc.send_signal(signal.SIGINT)
            self.proc.wait(ATTACH_GRACE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            self.log.close()
        return self.data


# --- the engine's side: a point's evidence runs after its timed repeats --------------------------
def median(xs):
    return stats.median(xs) if xs else None


def primary_metric(spec):
    """The metric an evidence run's work is counted in: an exec spec's first `metric`, a lab
    instrument's watched metric (its tidy CSV's `confidence` or first chart); None for a command
    measured by its wall time alone."""
    if spec.get("exec"):
        return av.parse_metric(spec["metric"][0]).name if spec.get("metric") else None
    watched = spec.watched()
    return watched[0] if watched else None


def metric_value(spec, name, out):
    """(value, higher is better) of `name` in an evidence run's stdout, or (None, False): the direction
    the timed repeats use (the metric= line's, else lab/engine/execmetric.py's rule from the unit)."""
    try:
        with open(out, errors="replace") as f:
            text = f.read()
        if spec.get("exec"):
            metrics = [av.parse_metric(m) for m in spec["metric"]]
            better = {m.name: m.better for m in metrics}
            rows = av.read_metrics(metrics, text)
        else:
            rows = tidy.fill({}, text)
            better = {r["metric"]: av.better_for(r.get("unit", "")) for r in rows}
        value = next(float(r["value"]) for r in rows if r["metric"] == name)
    except (OSError, ValueError, StopIteration):
        return None, False
    return value, better.get(name) == "higher"


def timed(rows, name):
    vals = []
    for r in rows:
        if r["metric"] == name:
            try:
                vals.append(float(r["value"]))
            except ValueError:
                pass
    return median(vals)


def timed_suspect(rows, name):
    """'2 of 3 timed repeats suspect (foreign 55% > 10%; …)' of the metric the gate compares with, or '':
    a gate that rejects every run against disturbed timed repeats says so beside its numbers."""
    mine = [r for r in rows if r["metric"] == name]
    bad = [r["suspect"] for r in mine if r.get("suspect")]
    return f"{len(bad)} of {len(mine)} timed repeats suspect ({bad[0][:200]})" if bad else ""


def throughput(spec, name, timed_rows):
    """Is `name` a throughput (work per second, higher is better), judged before the evidence runs as the
    timed repeats judged it: an exec spec's metric= line, else the unit its timed rows carry."""
    if not name:
        return False
    if spec.get("exec"):
        return next((m.better for m in map(av.parse_metric, spec["metric"]) if m.name == name), None) == "higher"
    unit = next((r.get("unit", "") for r in timed_rows if r["metric"] == name), None)
    return unit is not None and av.better_for(unit) == "higher"


def repetitions(path, elapsed=False):
    """The count REPEAT wrote, or None (it did not finish); elapsed: (count, seconds the loop took, its
    own start-up and its parent's left out)."""
    try:
        with open(path) as f:
            n, _, us = f.read().strip().partition(" ")
        n = int(n) if n.isdigit() and 0 < int(n) <= MAX_REPEATS else None
        return (n, int(us) / 1e6 if us.isdigit() and n else None) if elapsed else n
    except OSError:
        return (None, None) if elapsed else None


def calibrate(ctx, spec, point, folder, status, seconds, name, higher):
    """The command once more, unrecorded but for `perf stat` counting the tracepoints and its CPU time
    (cheap: a count, no sample), before a point's evidence runs: {"rates": {tracepoint: events a second},
    "busy": CPUs it kept busy, "measured": its throughput or wall per run (the gate's reference), "wall"},
    or None when it failed. A repeated command is repeated for CALIBRATE_S (at most its why_seconds)."""
    stat, counted = os.path.join(folder, ".calibrate.csv"), os.path.join(folder, ".calibrate_reps")
    raw = os.path.join(folder, ".calibrate_raw")
    shutil.rmtree(raw, ignore_errors=True)
    os.makedirs(raw)
    events = [t for t, _s in TRACEPOINTS] if status["offcpu"] == ev.OK else []
    inner = perfstat.counting(stat, events + ["task-clock"]) + repeat_prefix(min(seconds, CALIBRATE_S), counted, False)
    argv, env, _w, _c, _v = pt.command_line(ctx, spec, point, 0, raw, inner=inner)
    out, err = os.path.join(folder, ".calibrate_out"), os.path.join(folder, ".calibrate_err")
    try:
        rc, usage, _note = child.run(argv, env, ctx.root, out, err, float(spec["timeout"]), ctx.track,
                                     child.OUTPUT_CAP)
        # a repeated command's wall from the loop's own clock: perf stat's start-up is no part of it (it
        # opens the tracepoints: ~0.1 s here), as perf record's is no part of the recorded run's span
        n, looped = repetitions(counted, elapsed=True) if seconds > 0 else (1, None)
        if rc != 0 or usage is None or not n or not usage.wall_s:
            return None
        with open(stat, errors="replace") as f:
            counts = perfstat.counts(f.read())
        wall = looped or usage.wall_s
        measured = metric_value(spec, name, out)[0] if higher else wall / n
        # a spec's `server` is recorded, not the command perf stat counted: its rates are not known here
        # (every event then keeps its stack, as before sampling); a why_comm tree's rates count its load
        # generator too, so its periods err toward fewer stacks
        if scope(spec, guard.server_pids(ctx.root, pt.server_pidfiles(spec)))[0] == "server":
            events = []
        return {"rates": {t: counts.get(t, 0.0) / wall for t in events}, "wall": wall,
                "busy": counts.get("task-clock", 0.0) / 1000 / wall, "measured": measured}
    except OSError:
        return None
    finally:
        shutil.rmtree(raw, ignore_errors=True)
        remove(stat, counted, out, err)


def attempt(ctx, spec, point, folder, r, event, status, seconds, tier, how=None):
    """One evidence run recorded at `tier` into run number `r`'s files: {"lost": why or "", "cut": bool,
    "wall", "reps", "status", "out", "scope", "who"}. A lost or cut run leaves no run files (its logs are
    kept apart, lost_<N>_stderr.log)."""
    data = os.path.join(folder, f".perf_r{r}.data")
    server_data = os.path.join(folder, f".perf_server_r{r}.data")
    counted = os.path.join(folder, f".repeats_r{r}")
    what, who = scope(spec, guard.server_pids(ctx.root, pt.server_pidfiles(spec)))
    # perf inside the pinning: the recorded tree starts at the command itself. With taskset inside
    # it, perf 6.1's DWARF unwinder kept taskset's libc layout across the exec, and stacks through libc
    # lost their callers (seen here one run in three): the stale-mapping bug no_aslr() works around.
    raw = os.path.join(folder, f"raw_r{r}")      # {raw}: the command's own files, apart from the format's
    os.makedirs(raw)
    comms = who if what == "tree" else ()
    record = record_prefix(data, event, status, comms, tier, how) if what == "tree" else []
    inner = record + repeat_prefix(seconds, counted, bool(record))
    argv, env, _words, _cmd, _v = pt.command_line(ctx, spec, point, 0, raw, inner=inner)
    out = os.path.join(folder, f"stdout_r{r}.txt")
    err = os.path.join(folder, f"stderr_r{r}.log")
    server = ServerRecording(who if what == "server" else (), server_data, event, status, env, err, tier, how)
    numa = numamaps.Sampler(who if what == "server" else (), comms, loops=(REPEAT_NAME,))   # where its memory is
    try:
        rc, usage, note = child.run(argv, env, ctx.root, out, err, float(spec["timeout"]), ctx.track,
                                    child.OUTPUT_CAP)
    finally:
        server.stop()
        numa.stop()
    n = repetitions(counted) if seconds > 0 else 1
    cut = "size limit reached" in open(err, errors="replace").read()
    got = {"lost": "", "cut": cut, "wall": None, "reps": n, "status": None, "out": out, "scope": what, "who": who}
    if rc != 0 or usage is None or n is None or cut:
        got["lost"] = f"exited {rc}" + (f" ({note})" if note else "") + f": {pt.tail(err)}"
        if cut:
            # the recording stopped before the command did: not the whole run, whatever perf's exit
            got["lost"] = (f"perf reached its size limit ({MAX_BYTES}): too many scheduler and futex events for "
                           f"a recording with stacks at tier {tier['name']}" +
                           ("" if seconds > 0 else "; a run of set duration cannot stop between repetitions: give "
                            "the spec a profile with a shorter run for why=1 (as cache-get's `cause`)"))
        lost_logs(folder, r)
        remove(data, server_data, counted)
        return got
    got["status"], span = evidence_run(folder, r, data if what == "tree" else server_data, env,
                                       os.path.join(folder, "evidence.log"), status, comms)
    numa.write(folder, r)
    # the attached server's recording outlasts the command: the command's own wall time then
    got["wall"] = (span if what == "tree" else None) or usage.wall_s
    remove(data, server_data, counted)    # hundreds of MiB: the folded files are what is kept
    return got


def lost_logs(folder, r):
    """A lost attempt's run files go (the next attempt takes its number); its output is kept apart."""
    k = 1 + sum(1 for f in os.listdir(folder) if f.startswith("lost_") and f.endswith("_stderr.log"))
    for name, kept in ((f"stderr_r{r}.log", f"lost_{k}_stderr.log"), (f"stdout_r{r}.txt", f"lost_{k}_stdout.txt")):
        if os.path.exists(os.path.join(folder, name)):
            os.replace(os.path.join(folder, name), os.path.join(folder, kept))
    shutil.rmtree(os.path.join(folder, f"raw_r{r}"), ignore_errors=True)
    for kind in ("oncpu", "offcpu", "futex", "threads", "hotins", "lock", "parallel", "alone", "doing"):
        remove(ev.path(folder, kind, r))


def most_attempts(runs):
    """The evidence runs run_point makes at most for `runs` (the dry run's range top: price.py), by its
    rules: a run the gate rejects is redone once while a lighter tier is left (every rejection, a redo's
    too, moves a tier lighter: len(TIERS) - 1 moves in all), and one more run is made where the gate left
    MIN_KEPT - 1 kept. The most is every run redone and kept at its redo (a move each), or else the one
    more run, after MIN_KEPT - 1 runs redone and kept and the others redone and rejected again (two moves
    each) while a move is left."""
    moves = len(TIERS) - 1
    every = runs + min(moves, runs)
    if runs < MIN_KEPT:
        return every
    kept = min(MIN_KEPT - 1, moves)
    return max(every, runs + 1 + kept + min(runs - (MIN_KEPT - 1) + 1, -(-(moves - kept) // 2)))


def run_point(ctx, spec, point, runs, timed_rows, folder):
    """`runs` evidence runs of one point into `folder`, each judged by the validity gate (lab/engine/evidence/gate.py):
    one lost, cut or outside the disturbance budget is redone once at the next lighter tier (TIERS), and
    the point's later runs start there; one more run where that left one kept run short of MIN_KEPT.
    meta.json last (its presence: done). Returns (runs kept, evidence statuses, a one-line reason when
    fewer than `runs` were kept). Never raises for lack of evidence: a
    host without perf still gets meta.json saying so."""
    if os.path.isdir(folder):
        shutil.rmtree(folder)        # a half-done set from a killed sweep is done again whole
    os.makedirs(folder)
    event = prefix.perf_event()       # cycles where the host has a PMU, else cpu-clock
    status = availability(event)
    name = primary_metric(spec)
    higher = throughput(spec, name, timed_rows)
    seconds = repeat_seconds(spec, higher)
    walls, values, reps, statuses, judged, why = [], [], [], [], [], ""
    what, who = None, ()
    calibration = None
    tier = 0
    # perf cannot record here: running the command would only cost time
    for r in range(1, runs + 2) if status["oncpu"] == ev.OK else ():
        # one more run only where the gate left a point one short of the differential's two a side
        # (diff.interval): with why_runs=2, one run rejected twice would leave no interval (docs/measured.md)
        if r > runs and not (runs >= MIN_KEPT and sum(j["verdict"] == gate.KEPT for j in judged) == MIN_KEPT - 1):
            break
        for redo in (False, True):
            n = len(walls) + 1                  # recorded runs are numbered 1, 2, … (the format's run files)
            # the recording chosen from the event rates counted before the point's runs, and the gate's
            # reference: once a point (a run's price; docs/measured.md has what it buys)
            cal = calibration if r > 1 or redo else calibrate(ctx, spec, point, folder, status, seconds, name, higher)
            calibration = cal
            how = plan(TIERS[tier], cal and cal["rates"], cal and cal["busy"],
                       seconds or (cal and cal["wall"]), RECORD_BUDGET)
            got = attempt(ctx, spec, point, folder, n, event, status, seconds, TIERS[tier], how)
            entry = {"of": r, "run": None, "tier": TIERS[tier]["name"], "hz": how["hz"], "speed": None,
                     "periods": how["periods"], "expected_bytes": how["bytes"],
                     "rates": {k: round(v, 1) for k, v in (cal["rates"] if cal else {}).items()},
                     "reference": round(cal["measured"], 6) if cal and cal["measured"] else None}
            sampled_how = sampled(TIERS[tier], how, status)
            if got["lost"]:
                entry.update(verdict=gate.CUT if got["cut"] else gate.LOST, why=got["lost"])
            else:
                what, who = got["scope"], got["who"]
                value, _up = metric_value(spec, name, got["out"]) if name and higher else (None, False)
                # judged as the timed repeats are measured: the throughput, else the wall time per run
                measured, base = (value, timed(timed_rows, name)) if higher else \
                    (got["wall"] / got["reps"], timed(timed_rows, "wall_s"))
                verdict_, said, speed = gate.judge(measured, base, higher, entry["reference"])
                vs_timed = gate.speed(measured, base, higher)
                entry.update(run=n, verdict=verdict_, why=said, speed=round(speed, 4) if speed else None,
                             speed_timed=round(vs_timed, 4) if vs_timed else None, sampled=sampled_how)
                statuses.append(got["status"])
                walls.append(round(got["wall"], 6))
                values.append(value)
                reps.append(got["reps"])
            judged.append(entry)
            if entry["verdict"] == gate.KEPT:
                break
            lighter = tier + 1 < len(TIERS)
            tier = min(tier + 1, len(TIERS) - 1)
            if not lighter or redo:
                break
        if judged[-1]["verdict"] in (gate.LOST, gate.CUT) and (redo or not lighter):
            why = f"evidence run {r}: {judged[-1]['why']}"     # lost at the lightest tier: the rest would be too
            break
    # the hardware tier's runs, one per kind this host has, after the switch recording's (hardware.py);
    # none where it has none. Judged as the runs above are, against the same reference.
    hw_status, hw_judged = hardware.runs(ctx, spec, point, folder, status if walls else {}, seconds,
                                         lambda out, wall, n: judge_run(spec, name, higher, timed_rows, calibration,
                                                                        out, wall, n),
                                         (repeat_prefix, repetitions), what or "tree")
    done = len(walls)
    merged = dict(status, **hw_status)
    for s in statuses:               # a part missing in any run is missing, with that run's reason
        for k, v in s.items():
            if v != ev.OK and (merged.get(k, ev.OK) == ev.OK or k == "symbols"):
                merged[k] = v
    # ops: a throughput × the run's seconds, when every run printed it; else a run of the command is the
    # unit of work, and an evidence run that repeated it (why_seconds) did that many units
    unit = "op" if higher and walls and all(values) else "run"
    works = [v * w for v, w in zip(values, walls)] if unit == "op" else reps
    base = timed(timed_rows, name if unit == "op" else "wall_s")
    if unit == "op":
        got = median([v for v in values if v is not None])
        slowdown = base / got if base and got else None
    else:
        per_run = [w / n for w, n in zip(walls, reps)]
        slowdown = median(per_run) / base if base and per_run else None
    meta = {"runs": done, "unit": unit, "metric": name if unit == "op" else None, "work": works,
            "wall_s": walls, "repetitions": reps, "why_seconds": seconds,
            "scope": what if done else None, "counted": list(who) if done and what == "tree" else [],
            "value": values if unit == "op" else [None] * done,
            "timed_median": base, "slowdown": round(slowdown, 4) if slowdown else None,
            "sample": {"event": event, "hz": HZ, "tiers": {t["name"]: {k: v for k, v in t.items() if k != "name"}
                                                             for t in TIERS}},
            "disturbance": gate.WHY_DISTURBANCE, "runs_judged": judged,
            # how each kind of evidence was sampled, in words: the first kept run's (each attempt has its own)
            "sampled": next((j["sampled"] for j in judged if j["verdict"] == gate.KEPT and j.get("sampled")),
                            next((j["sampled"] for j in judged if j.get("sampled")), {})),
            "timed_suspect": timed_suspect(timed_rows, name if higher else "wall_s"), "evidence": merged,
            "hardware": hw_judged}
    ev.write_meta(folder, meta)
    kept = len(gate.kept_runs(meta))
    if judged and not kept:
        why = gate.none_kept(meta, point.threads)
    elif judged and kept < runs:
        why = f"{kept} of {runs} evidence runs kept" + (f" ({why})" if why else "")
    return kept, merged, why


def judge_run(spec, name, higher, timed_rows, cal, out, wall, reps):
    """The gate's (verdict, why, speed) of a hardware-tier run (hardware.py), as run_point judges its own:
    the throughput it printed, else its wall time per run, against the point's unrecorded reference."""
    measured = metric_value(spec, name, out)[0] if name and higher else wall / reps
    base = timed(timed_rows, name if higher else "wall_s")
    return gate.judge(measured, base, higher, cal["measured"] if cal and cal["measured"] else None)


def remove(*paths):
    for p in paths:
        if p and os.path.exists(p):
            os.remove(p)


def missing_line(status):
    """One line naming each part this host could not give, and why (empty when all are there)."""
    parts = [f"{k}: {v[len(ev.NA):]}" for k, v in status.items() if v.startswith(ev.NA)]
    if status.get("symbols", "").startswith("missing"):
        parts.append(f"symbols {status['symbols']}")
    return "; ".join(parts)
