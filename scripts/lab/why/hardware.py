"""The hardware tier read from a point's evidence folder into the lab's words (issue 56 item 2; docs/design.md,
"The hardware tier"): the raw `perf c2c report --stdio`, `perf stat` top-down and `perf mem report` texts
the engine saved beside the run (engine/evidence/hardware.py) go through the tested parsers
(c2creport.py, topdown.py, perfmem.py) here, on read: a received run's text is hostile input, and any
text the parsers refuse is said in one line, never a traceback.

load() is diff.load's part (per point); compare() is the differential's (the fewest threads against the
knee): c2c and IBS data source at the knee, top-down at both. text(d) is the one line the why section
says (report/causes.py calls it beside groups.words); claims.py reads compare()'s parsed c2c report for
seed 000's refcount line. Only recorded published text has gone through this module: no host of the lab
has a PMU yet.

Adjacent-line prefetch: where the knee's c2c report has hot lines that are the two halves of one 128-byte
pair, both contended (c2creport.adjacent_pairs), the same recording's --double-cl report (the engine made
it where perf takes the option) is parsed and said for each pair (c2creport.pair_words), or why there is
none ("perf 6.1.187 lacks --double-cl"); otherwise the second report is not read at all.
"""
from lab.engine.evidence import gate
from lab.engine.evidence import store as evidence

from . import c2creport, perfmem, topdown
from .model import Hardware
from .perftext import PerfTextError

KINDS = tuple(evidence.HW_RAW)
NAMES = {"c2c": "perf c2c", "topdown": "top-down", "memsource": "IBS/PEBS data source"}


def load(folder, meta):
    """{"text": {kind: raw text of a kept run}, "said": {kind: why there is none}, "double_cl": c2c's
    {"file", "why"} (the --double-cl report's name or why none; read only where compare's rule wants it)}
    of one point's folder."""
    text, said, double = {}, {}, {"file": None, "why": "no --double-cl report was made"}
    for e in meta.get("hardware") or []:
        if e["verdict"] != gate.KEPT or not e["file"]:
            said[e["kind"]] = f"its run was {e['verdict']}: {e['why']}"
            continue
        t = evidence.read_hardware(folder, e["file"])
        if t is None:
            said[e["kind"]] = f"{e['file']} is missing"
        else:
            text[e["kind"]] = t
            if e["kind"] == "c2c" and e.get("double_cl"):
                double = dict(e["double_cl"], folder=folder)
    for kind in KINDS:
        if kind not in text and kind not in said:
            said[kind] = str((meta.get("evidence") or {}).get(kind, "not recorded"))
    return {"text": text, "said": said, "double_cl": double}


def adjacent(report, hw, threads):
    """The words for each pair of adjacent contended lines of the knee's 64-byte c2c report (() where none
    pair up): with the same recording's --double-cl report where there is one, else why there is none."""
    pairs = c2creport.adjacent_pairs(report)
    if not pairs:
        return ()
    d = (hw or {}).get("double_cl") or {"file": None, "why": "no --double-cl report was made"}
    double, why = None, d["why"]
    if d["file"]:
        text = evidence.read_hardware(d["folder"], d["file"])
        try:
            double = c2creport.parse(text) if text is not None else None
            why = why if text is not None else f"{d['file']} is missing"
        except PerfTextError as e:
            why = f"its --double-cl report was not read at {threads} threads: {e}"
        if double is not None and not double.double_cl:
            double, why = None, f"{d['file']} is not a --double-cl report (its table has 64-byte lines)"
    return tuple(f"{c2creport.pair_words(p, double, why)} (perf c2c at {threads} threads)" for p in pairs)


def _parse(parser, hw, kind, threads):
    """(parsed, None) or (None, why) of one side's text."""
    if hw is None or kind not in hw["text"]:
        return None, (hw or {}).get("said", {}).get(kind, "not recorded")
    try:
        return parser(hw["text"][kind]), None
    except PerfTextError as e:
        return None, f"not read at {threads} threads: {e}"


# the kinds read at the knee alone: (kind, parser, words of a parsed report, its name in the words and in `absent`)
AT_KNEE = (("c2c", c2creport.parse, c2creport.words, "perf c2c", "perf c2c"),
           ("memsource", perfmem.parse, perfmem.words, "perf mem", "data source"))


def compare(base_hw, knee_hw, base_threads, knee_threads):
    """The Hardware of a differential: c2c and data source at the knee, top-down at both ends (said in
    that order: c2c, its adjacent pairs (adjacent()), top-down, data source)."""
    got, said = {}, {}      # kind → parsed report; kind → (True, words) or (False, why not)
    for kind, parser, words, tool, name in AT_KNEE:
        got[kind], why = _parse(parser, knee_hw, kind, knee_threads)
        said[kind] = (True, f"{words(got[kind])} ({tool} at {knee_threads} threads)") if why is None else \
            (False, f"{name}: {why}")
    supports = None
    few, why_few = _parse(topdown.parse, base_hw, "topdown", base_threads)
    knee, why_knee = _parse(topdown.parse, knee_hw, "topdown", knee_threads)
    if few is not None and knee is not None:
        r = topdown.compare(few, knee, base_threads, knee_threads)
        supports, said["topdown"] = r.supports, (True, r.words)
    else:
        said["topdown"] = (False, f"top-down: {why_knee or why_few}")
    order = [said[k] for k in ("c2c", "topdown", "memsource")]
    pairs = adjacent(got["c2c"], knee_hw, knee_threads) if got["c2c"] is not None else ()
    words = tuple(w for ok, w in order[:1] if ok) + pairs + tuple(w for ok, w in order[1:] if ok)
    return Hardware(got["c2c"], got["memsource"], supports, words, tuple(w for ok, w in order if not ok))


def text(d):
    """The hardware tier's sentence for a differential, or "" where no kind ran (a host without a PMU:
    classify's memory note already says each kind's "not available here: <reason>")."""
    hw = d.hardware if d else None
    if not hw or not hw.words:
        return ""
    return "Hardware counters: " + "; ".join(hw.words) + \
        (" (" + "; ".join(hw.absent) + ")" if hw.absent else "") + "."
