"""The differential flame graph of one placement (issue 43, item 3): 1 thread → the knee, drawn by inferno
(inferno-diff-folded, then inferno-flamegraph; pinned as INFERNO_VERSION in versions.env).

Both sides are the differential's mean cost per unit of work of each stack (on-CPU stacks rooted at the
command, off-CPU ones at their [reason]), so widths and colours compare work with work, not run lengths.
A stack that is not a finding (diff's too-few-samples rule, or within noise) gets the knee's cost on BOTH
sides: its delta is zero, which inferno paints rgb(250,250,250); that one fill is then repainted GREY, so
grey means "no finding here", red grew, blue shrank. Frame names reach the SVG only through inferno's XML
writer (escaped). Self-contained (inferno's inline script and style only), bounded in stacks and bytes.
"""
import os
import re
import shutil
import subprocess
import tempfile

from lab.errors import LabError

MAX_STACKS = 2000          # the rest are summed into one [other stacks] frame per kind
MAX_BYTES = 4 * 1024 * 1024
ZERO_DELTA = 'fill="rgb(250,250,250)"'   # inferno's colour for a frame whose delta is 0
GREY = 'fill="rgb(190,190,190)"'
TIMEOUT_S = 60


class FlameError(LabError, RuntimeError):
    """The flame graph could not be drawn (tool missing or failing, output too large)."""


def sides(d):
    """([(stack, base, knee)] in integer counts, count name): the two sides per unit of work, findings as
    measured, the rest equal on both sides (drawn grey)."""
    rows = [r for r in d.stacks if r.base > 0 or r.knee > 0]
    rows.sort(key=lambda r: (-max(r.base, r.knee), r.name))
    keep, rest = rows[:MAX_STACKS], rows[MAX_STACKS:]
    out = []
    for r in keep:
        finding = not r.flag
        out.append((r.name, r.base if finding else r.knee, r.knee))
    for kind in ("on-CPU", "off-CPU"):
        tail = [r for r in rest if r.kind == kind]
        if tail:
            out.append((f"[other stacks {kind}]", sum(r.knee for r in tail), sum(r.knee for r in tail)))
    top = max([max(b, k) for _, b, k in out] or [0])
    # integer counts: µs per unit scaled until the largest stack has ≥ 1e5 counts (ns, then ps)
    unit, scale = "µs", 1.0
    for u, s in (("ns", 1e3), ("ps", 1e6)):
        if top * scale >= 1e5:
            break
        unit, scale = u, s
    per = "op" if d.unit == "op" else "run"
    return [(n, round(b * scale), round(k * scale)) for n, b, k in out], f"{unit} per {per}"


def tool(name):
    path = shutil.which(name)
    if not path:
        raise FlameError(f"{name} not found: ./lab installs inferno (INFERNO_VERSION in versions.env)")
    return path


def svg(d, title=None, interactive=True):
    """The differential flame graph of differential d, as SVG text."""
    stacks, countname = sides(d)
    stacks = [s for s in stacks if s[1] > 0 or s[2] > 0]
    if not stacks:
        raise FlameError("no stacks to draw (no on-CPU or off-CPU evidence)")
    if title is None:
        title = (f"{d.placement or 'placement'}: {d.base_threads} → {d.knee_threads} threads, "
                 "cost per unit of work")
    with tempfile.TemporaryDirectory(prefix="why-flame-") as tmp:
        paths = []
        for i, side in enumerate((1, 2)):
            p = os.path.join(tmp, f"side{side}.folded")
            with open(p, "w", encoding="utf-8") as f:
                for name, *counts in stacks:
                    if counts[i] > 0:
                        f.write(f"{name} {counts[i]}\n")
            paths.append(p)
        try:
            diffed = subprocess.run([tool("inferno-diff-folded"), "--quiet", *paths], capture_output=True,
                                    text=True, timeout=TIMEOUT_S, check=True).stdout
            args = [tool("inferno-flamegraph"), "--quiet", "--title", title, "--countname", countname,
                    "--minwidth", "0.1", "--subtitle", "red grew, blue shrank, grey: no finding (too few samples "
                    "or within noise); widths: the knee"]
            if not interactive:
                args.append("--no-javascript")
            out = subprocess.run(args, input=diffed, capture_output=True, text=True, timeout=TIMEOUT_S,
                                 check=True).stdout
        except subprocess.CalledProcessError as e:
            raise FlameError(f"inferno failed: {e.stderr.strip()[:300]}") from None
        except subprocess.TimeoutExpired:
            raise FlameError(f"inferno took more than {TIMEOUT_S} s") from None
    if len(out.encode()) > MAX_BYTES:
        raise FlameError(f"flame graph larger than {MAX_BYTES} bytes")
    return out.replace(ZERO_DELTA, GREY)


def external_refs(text):
    """Resources an SVG would load from elsewhere (must be none): href/src attributes and CSS url()s that
    do not point inside the document."""
    refs = re.findall(r'(?:href|src)\s*=\s*"([^"#][^"]*)"', text)
    refs += [u for u in re.findall(r"url\(([^)]*)\)", text) if not u.strip("'\" ").startswith("#")]
    return refs
