"""`perf c2c report --stdio` read into typed results, and the lab's words for them (docs/design.md, "The
hardware tier"). Only recorded text has gone through this module: no host of the lab has a PMU yet.

perf changed its headers between 5.x and 6.0 (Leo Yan's 2022 series: "LLC Load Hitm" became "Load
Hitm", Rmt/Lcl became RmtHitm/LclHitm, a store "N/A" column and, in the peer display, a Snoop/Peer
column appeared), so the Shared Data Cache Line Table is read by its own header: the dotted line under
the names gives each column's extent, and each column's name is its group (`--- Load Hitm ---`) or
upper word (`Tot`, `Total`) with the name under it. A Pareto row carries no header of its own in the
published excerpts (the kernel's false-sharing.rst quotes only rows), so it is read by shape: its
percentages, the offset, the code address, the cycles and counts, then `[.]`/`[k]` symbol, object,
source:line and the nodes.

A `--double-cl` report (perf 6.3 and later: Feng Tang's "perf c2c: Add report option to show false sharing
in adjacent cachelines", commit 1470a108a60e, in perf-tools-for-v6.3) has the same layout at twice the
line size: the table's group is named "Double-Cacheline" (ui_quirks' fill_line), its addresses are
128-byte aligned and the Pareto's offsets run to 0x7f; `double_cl` says which a report is. The rule for
when the lab reads one (`adjacent_pairs`, `pair_words`) is below the words.

Everything else refuses with one PerfTextError line: a section cut short, a row of the wrong width, a
cache line whose rows are missing (the text ended), a number that is not one.
"""
import re
from dataclasses import dataclass

from .perftext import PerfTextError, hexnum, integer, lines, percent

WHAT = "perf c2c report"
TRACE = "Trace Event Information"
GLOBAL = "Global Shared Cache Line Event Information"
DETAILS = "c2c details"
TABLE = "Shared Data Cache Line Table"
PARETO = "Shared Cache Line Distribution Pareto"
TITLES = (TRACE, GLOBAL, DETAILS, TABLE, PARETO)
MAX_ROWS = 100000            # cache lines or Pareto rows of one report
LAYOUT_5 = "perf <= 5.x"     # "LLC Load Hitm", Rmt/Lcl
LAYOUT_6 = "perf >= 6.0"     # "Load Hitm", RmtHitm/LclHitm
_SEPARATOR = re.compile(r"^\s*#?\s*-{10,}\s*$")
# a header group's name between dashes: words, single spaces and inner hyphens ("Double-Cacheline")
_GROUP = re.compile(r"-+\s+((?:[^\s-]|(?<=\w)-(?=\w)|(?<=\S) (?=\S))+)\s+-+")
_MARKER = re.compile(r"^\[[.kgHujs]\]$")     # perf's privilege marker before a symbol
_NODE_TOKEN = re.compile(r"^[0-9{}.,%\-]+$|^N/A$")


@dataclass(frozen=True)
class CacheLine:
    """A row of the Shared Data Cache Line Table."""
    index: int
    address: int
    node: object                # int, or None where perf printed N/A or no Node column
    hitm_share: float           # percent of all HITM (or of remote HITM in perf <= 4.x's "Rmt Hitm")
    hitm: int
    local_hitm: int
    remote_hitm: int
    records: object             # int or None
    columns: tuple              # (column name, text) of every column, as perf printed it


@dataclass(frozen=True)
class Access:
    """A Pareto row: one offset of a cache line touched from one code address."""
    remote_hitm_share: float    # percent of the line's remote HITM
    local_hitm_share: float
    store_shares: tuple         # percent of the line's stores: L1 hit, L1 miss[, N/A]
    peer_share: object          # percent of peer snoops (perf's peer display), or None
    offset: int
    data_node: object           # int or None
    code_address: int
    cycles: tuple               # mean cycles: remote HITM, local HITM, load[, peer]
    records: object             # int or None (perf 4.x has no Total records here)
    cpus: int                   # CPUs that made these accesses
    symbol: str
    kernel: bool
    object: str
    source: str                 # file:line, or sym+off, as perf printed it
    nodes: tuple                # NUMA nodes whose CPUs made these accesses

    @property
    def stores(self):
        return sum(self.store_shares) > 0


@dataclass(frozen=True)
class LineAccesses:
    """A cache line of the Pareto: its HITM counts and the rows under it."""
    num: int
    address: int
    remote_hitm: int
    local_hitm: int
    accesses: tuple


@dataclass(frozen=True)
class C2CReport:
    layout: str                 # LAYOUT_5, LAYOUT_6
    totals: tuple               # (name, number) of the Trace Event and Global sections
    events: tuple               # the events recorded (c2c details)
    lines: tuple                # CacheLine, hottest first
    pareto: tuple               # LineAccesses
    double_cl: bool = False     # `perf c2c report --double-cl`: each "line" is a 128-byte aligned pair

    def total(self, name, default=None):
        return dict(self.totals).get(name, default)


def _sections(numbered):
    """{title: [(n, line)…]}: each title's lines, up to the next title (its ==== rules left out)."""
    out, current = {}, None
    for n, line in numbered:
        stripped = line.strip()
        if stripped in TITLES:
            if stripped in out:
                raise PerfTextError(WHAT, n, f"section {stripped!r} twice")
            current = stripped
            out[current] = []
        elif current is not None and not (stripped and set(stripped) == {"="}):
            out[current].append((n, line))
    return out


def _totals(section):
    out, events = [], []
    for n, line in section:
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep:
            continue
        if key in ("Events", "") and value:
            events.append(value[:200])
            continue
        if re.fullmatch(r"-?\d{1,20}", value):
            out.append((key[:80], int(value)))
        elif re.fullmatch(r"-?\d{1,6}(?:\.\d{1,6})?%", value):
            out.append((key[:80], float(value[:-1])))
    return out, events


def _header_columns(head):
    """Column names from the two header lines and the dotted line (equal prefixes: positions align)."""
    upper, names, dots = head
    spans = [(m.start(), m.end()) for m in re.finditer(r"\.+", dots)]
    if not spans:
        return []
    groups = [(m.start(), m.end(), m.group(1)) for m in _GROUP.finditer(upper)]

    def nearest(a, b):
        best = max(range(len(spans)), key=lambda i: (min(b, spans[i][1]) - max(a, spans[i][0]),
                                                     -abs((a + b) / 2 - sum(spans[i]) / 2)))
        return best

    parts = [[[], []] for _ in spans]
    for line, slot in ((upper, 0), (names, 1)):
        for m in re.finditer(r"\S+", line):
            if m.group() == "#" or (slot == 0 and any(g0 <= m.start() < g1 for g0, g1, _ in groups)):
                continue
            parts[nearest(m.start(), m.end())][slot].append(m.group())
    out = []
    for (s, e), (up, low) in zip(spans, parts):
        group = next((g for g0, g1, g in groups if g0 <= e - 1 and s < g1), None)
        out.append(" ".join(([group] if group else []) + up + low))
    return out


def _find(columns, *candidates):
    for c in candidates:
        if c in columns:
            return columns.index(c)
    return None


def _table(section):
    rows = [(n, line) for n, line in section if line.strip() and line.strip() != "#"]
    dots = next((i for i, (_, line) in enumerate(rows) if re.fullmatch(r"\s*#\s*\.[.\s]*", line)), None)
    if dots is None or dots < 2:
        n = rows[0][0] if rows else 0
        raise PerfTextError(WHAT, n, f"{TABLE}: no column header (the text was cut short or is not perf's)")
    columns = _header_columns([rows[dots - 2][1], rows[dots - 1][1], rows[dots][1]])
    if "LLC Load Hitm Total" in columns:
        layout = LAYOUT_5
        hitm = ("LLC Load Hitm Total", "LLC Load Hitm Lcl", "LLC Load Hitm Rmt")
    else:
        layout = LAYOUT_6
        hitm = ("Load Hitm Total", "Load Hitm LclHitm", "Load Hitm RmtHitm")
    double_cl = "Double-Cacheline Address" in columns
    want = {"address": _find(columns, "Cacheline Address", "Double-Cacheline Address", "Cacheline"),
            "hitm": _find(columns, hitm[0]),
            "local": _find(columns, hitm[1]), "remote": _find(columns, hitm[2])}
    missing = [k for k, v in want.items() if v is None]
    if missing:
        raise PerfTextError(WHAT, rows[dots][0], f"{TABLE}: no {', '.join(missing)} column in the header "
                                                 f"(columns: {', '.join(columns)[:120]})")
    node = _find(columns, "Cacheline Node", "Double-Cacheline Node")
    records = _find(columns, "Total records")
    share = next((i for i, c in enumerate(columns) if c in ("Tot Hitm", "Rmt Hitm")), None)
    out = []
    for n, line in rows[dots + 1:]:
        if line.lstrip().startswith("#"):
            continue            # perf prints a comment line under a row it annotates
        tokens = line.split()
        if len(tokens) != len(columns):
            raise PerfTextError(WHAT, n, f"{TABLE}: {len(columns)} columns expected, got {len(tokens)} "
                                         "(the row was cut short or garbled)")
        if len(out) >= MAX_ROWS:
            raise PerfTextError(WHAT, n, f"more than {MAX_ROWS} cache lines")
        nd = tokens[node] if node is not None else "N/A"
        out.append(CacheLine(
            index=integer(tokens[0], WHAT, n), address=hexnum(tokens[want["address"]], WHAT, n),
            node=None if nd == "N/A" else integer(nd, WHAT, n),
            hitm_share=percent(tokens[share], WHAT, n) if share is not None else 0.0,
            hitm=integer(tokens[want["hitm"]], WHAT, n), local_hitm=integer(tokens[want["local"]], WHAT, n),
            remote_hitm=integer(tokens[want["remote"]], WHAT, n),
            records=integer(tokens[records], WHAT, n) if records is not None else None,
            columns=tuple(zip(columns, tokens))))
    return layout, double_cl, out


def _nodes(tokens):
    """'0', '0,1', '0{0-1,4}  1{24-25}', '0  1', 'N/A' → node ids (the CPU lists in braces dropped)."""
    text = re.sub(r"\{[^}]*\}?", " ", " ".join(tokens))
    return tuple(sorted({int(x) for x in re.findall(r"\d+", text)}))


def _access(n, tokens):
    at = next((i for i, t in enumerate(tokens) if _MARKER.match(t)), None)
    if at is None or len(tokens) - at < 4:
        raise PerfTextError(WHAT, n, f"{PARETO}: a row without `[.] symbol object source` (cut short or garbled)")
    head, tail = tokens[:at], tokens[at + 1:]
    k = 0
    while k < len(head) and head[k].endswith("%"):
        k += 1
    if not 4 <= k <= 6:
        raise PerfTextError(WHAT, n, f"{PARETO}: a row with {k} percentages (4 to 6: HITM, stores[, peer])")
    shares = [percent(t, WHAT, n) for t in head[:k]]
    rest = head[k:]
    code = max((i for i, t in enumerate(rest) if t.startswith("0x")), default=None)
    if code is None or code == 0 or len(rest) - code < 3:
        raise PerfTextError(WHAT, n, f"{PARETO}: a row without offset, code address and counts")
    middle = rest[1:code]          # node and PA cnt (perf >= 4.17), or pid (4.x's grouping by pid)
    counts = [integer(t, WHAT, n) for t in rest[code + 1:]]
    nodes_at = len(tail)
    while nodes_at > 3 and _NODE_TOKEN.match(tail[nodes_at - 1]):
        nodes_at -= 1
    if nodes_at < 3:
        raise PerfTextError(WHAT, n, f"{PARETO}: a row without symbol, object and source")
    node = middle[0] if len(middle) == 2 else "N/A"
    return Access(
        remote_hitm_share=shares[0], local_hitm_share=shares[1],
        store_shares=tuple(shares[3:] if k == 6 else shares[2:]), peer_share=shares[2] if k == 6 else None,
        offset=hexnum(rest[0], WHAT, n), data_node=None if node == "N/A" else integer(node, WHAT, n),
        code_address=hexnum(rest[code], WHAT, n),
        cycles=tuple(counts[:-2] if len(counts) >= 5 else counts[:-1]),
        records=counts[-2] if len(counts) >= 5 else None, cpus=counts[-1],
        symbol=" ".join(tail[:nodes_at - 2])[:512], kernel=tokens[at] == "[k]",
        object=tail[nodes_at - 2][:512], source=tail[nodes_at - 1][:512], nodes=_nodes(tail[nodes_at:]))


def parse_pareto(text_or_lines):
    """The Pareto's cache lines and rows; takes a whole report's Pareto section or the rows alone (as
    the kernel's false-sharing.rst quotes them)."""
    numbered = lines(text_or_lines, WHAT) if isinstance(text_or_lines, (str, bytes)) else text_or_lines
    out, current, rows = [], None, 0
    for n, line in numbered:
        stripped = line.strip()
        if not stripped or _SEPARATOR.match(line) or stripped.startswith("#") or stripped in TITLES \
                or set(stripped) == {"="}:
            continue
        tokens = stripped.split()
        if "%" not in stripped and tokens[-1].startswith("0x"):
            # a cache line's own row between two rules: Num, Rmt, Lcl, stores…, address
            if len(tokens) < 5 or not all(re.fullmatch(r"\d{1,20}", t) for t in tokens[:-1]):
                raise PerfTextError(WHAT, n, f"{PARETO}: a cache line's row is not `Num Rmt Lcl … address`")
            if current is not None and not current["accesses"]:
                raise PerfTextError(WHAT, n, f"{PARETO}: cache line {current['num']} has no rows")
            if len(out) >= MAX_ROWS:
                raise PerfTextError(WHAT, n, f"more than {MAX_ROWS} cache lines")
            current = {"num": integer(tokens[0], WHAT, n), "address": hexnum(tokens[-1], WHAT, n),
                       "remote_hitm": integer(tokens[1], WHAT, n), "local_hitm": integer(tokens[2], WHAT, n),
                       "accesses": [], "line": n}
            out.append(current)
            continue
        if current is None:
            raise PerfTextError(WHAT, n, f"{PARETO}: a row before any cache line")
        rows += 1
        if rows > MAX_ROWS:
            raise PerfTextError(WHAT, n, f"more than {MAX_ROWS} Pareto rows")
        current["accesses"].append(_access(n, tokens))
    if current is not None and not current["accesses"]:
        raise PerfTextError(WHAT, current["line"], f"{PARETO}: cache line {current['num']} has no rows "
                                                   "(the text ended)")
    return tuple(LineAccesses(c["num"], c["address"], c["remote_hitm"], c["local_hitm"], tuple(c["accesses"]))
                 for c in out)


def totals(text):
    """(name, number) pairs of `Name : number` lines, as the Trace Event and Global sections print them."""
    return tuple(_totals(lines(text, WHAT))[0])


def parse(text):
    """A whole `perf c2c report --stdio` → C2CReport; anything else → PerfTextError (one line)."""
    numbered = lines(text, WHAT)
    sections = _sections(numbered)
    if TABLE not in sections:
        raise PerfTextError(WHAT, len(numbered), f"no {TABLE!r} (not a c2c report, or cut short)")
    if PARETO not in sections:
        raise PerfTextError(WHAT, len(numbered), f"no {PARETO!r} (the report was cut short)")
    totals, events = [], []
    for title in (TRACE, GLOBAL, DETAILS):
        t, e = _totals(sections.get(title, []))
        totals += t
        events += e
    layout, double_cl, table = _table(sections[TABLE])
    pareto = parse_pareto(sections[PARETO])
    if table and not pareto:
        raise PerfTextError(WHAT, len(numbered), f"{PARETO}: empty while the table has {len(table)} lines "
                                                 "(the report was cut short)")
    return C2CReport(layout=layout, totals=tuple(totals), events=tuple(events), lines=tuple(table),
                     pareto=pareto, double_cl=double_cl)


# --- words --------------------------------------------------------------------------------------
def _and(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _who(access):
    sym = access.symbol if not re.fullmatch(r"0x[0-9a-fA-F]+", access.symbol) else f"{access.object}+{access.symbol}"
    return sym


def _offsets(cl):
    """('offset 0x0 written by f; offset 0x8 read by g', 'from nodes 0 and 1', offsets written, offsets) of
    one Pareto line: who touches each offset, stores first."""
    offsets = {}
    for a in cl.accesses:
        o = offsets.setdefault(a.offset, {"written": [], "read": [], "nodes": set()})
        role = "written" if a.stores else "read"
        if _who(a) not in o[role]:
            o[role].append(_who(a))
        o["nodes"] |= set(a.nodes)
    parts = []
    for off in sorted(offsets):
        o = offsets[off]
        by = [f"{role} by {_and(o[role][:3])}" for role in ("written", "read") if o[role]]
        parts.append(f"offset {off:#x} {' and '.join(by)}")
    nodes = sorted(set().union(*(o["nodes"] for o in offsets.values())))
    where = f"from node{'s' if len(nodes) > 1 else ''} {_and([str(x) for x in nodes])}" if nodes else ""
    written = [off for off, o in offsets.items() if o["written"]]
    return "; ".join(parts), where, written, offsets


def words(report_or_pareto, line=0):
    """The lab's words for the hottest contended line (or the `line`-th of the Pareto):
    'shared data confirmed: line 0x… with R remote and L local HITM; offset 0x0 written by f, offset 0x8
    read by g, from nodes 0 and 1 → false sharing (different data in one cache line)'. A line touched at
    one offset is true sharing; no HITM at all confirms nothing."""
    pareto = report_or_pareto.pareto if isinstance(report_or_pareto, C2CReport) else tuple(report_or_pareto)
    if len(pareto) <= line:
        return "shared data not confirmed: perf c2c found no contended cache line"
    cl = pareto[line]
    if cl.remote_hitm + cl.local_hitm == 0:
        return f"shared data not confirmed: line {cl.address:#x} has no HITM (no load found it modified elsewhere)"
    parts, where, written, offsets = _offsets(cl)
    if len(offsets) > 1 and written:
        verdict = "false sharing (different data in one cache line)"
    elif len(offsets) > 1:
        verdict = "sharing of a line that is only read here (its writer was not sampled)"
    else:
        verdict = "true sharing (one datum contended)"
    remote = "remote HITM: the line crosses sockets" if cl.remote_hitm else "local HITM only: within one socket"
    return (f"shared data confirmed: line {cl.address:#x} with {cl.remote_hitm} remote and {cl.local_hitm} local "
            f"HITM ({remote}); {parts}{', ' + where if where else ''} → {verdict}")


# --- adjacent-line prefetch: when the lab reads a --double-cl report ------------------------------
# Intel's optimization manual (§2.3.5.4 "Data Prefetching", Spatial Prefetcher: it "strives to complete every
# cache line fetched to the L2 cache with the pair line that completes it to a 128-byte aligned chunk", as
# quoted in dlang/dmd issue 17386) and Feng Tang's --double-cl patch (data in "2 cachelines (2N and 2N+1)"
# fetched together) name the same unit: two 64-byte lines, the lower one 128-byte aligned.
LINE = 64                   # perf c2c's line on x86 and most Arm64 (perf's cacheline_size(), from sysfs)
PAIR = 2 * LINE             # the adjacent-line prefetcher's unit
HOT_LINES = 10              # the Pareto's first lines (hottest first) among which pairs are looked for
SUSPECT = ("a suspect, not shown by these counts: c2c samples demand loads and stores, not prefetches; the "
           "pair's contention falling with the two lines' data in different 128-byte pairs (128-byte "
           "alignment), or with the adjacent-line prefetcher off in firmware, would confirm it")


@dataclass(frozen=True)
class Pair:
    """Two hot lines of a 64-byte report that are the halves of one 128-byte aligned pair, both with HITM."""
    address: int                # the pair's address: its lower line's, a multiple of PAIR
    lines: tuple                # (LineAccesses at address, LineAccesses at address + LINE)


def adjacent_pairs(report_or_pareto, hot=HOT_LINES):
    """Where adjacent-line prefetch is a suspect (the rule for reading a --double-cl report): pairs among the
    report's hot lines (the Pareto's first `hot`) that are line N and N+64 with N 128-byte aligned, both with
    HITM. Two lines 64 bytes apart across a 128-byte boundary are no pair (the prefetcher completes a line to
    its aligned chunk); a --double-cl report gives () (its lines are pairs already)."""
    if isinstance(report_or_pareto, C2CReport):
        if report_or_pareto.double_cl:
            return ()
        pareto = report_or_pareto.pareto
    else:
        pareto = tuple(report_or_pareto)
    hot_lines = {cl.address: cl for cl in pareto[:hot] if cl.remote_hitm + cl.local_hitm > 0}
    return tuple(Pair(a, (hot_lines[a], hot_lines[a + LINE])) for a in sorted(hot_lines)
                 if a % PAIR == 0 and a + LINE in hot_lines)


def pair_words(pair, double=None, why="no --double-cl report was made"):
    """The words for one Pair: with `double` (the same recording's parsed --double-cl report) what perf
    groups at the pair's address — its HITM and who touches which offset, 0x40 and up being the upper
    line's; without, `why` there is none ("perf 6.1.187 lacks --double-cl"). Adjacent-line prefetch is only
    ever named a suspect, with what would confirm it (SUSPECT)."""
    low, high = pair.lines
    lines = (f"adjacent lines {low.address:#x}/{high.address:#x} both contended "
             f"({low.remote_hitm + low.local_hitm} and {high.remote_hitm + high.local_hitm} HITM)")
    if double is None:
        return f"{why}; {lines}: adjacent-line prefetch may be the cause ({SUSPECT})"
    cl = next((c for c in double.pareto if c.address == pair.address), None)
    if cl is None:
        return (f"{lines}; the --double-cl report has no pair at {pair.address:#x}: adjacent-line prefetch may "
                f"be the cause ({SUSPECT})")
    parts, where, _, _ = _offsets(cl)
    return (f"{lines}; perf c2c --double-cl groups them as the 128-byte pair {cl.address:#x} with "
            f"{cl.remote_hitm} remote and {cl.local_hitm} local HITM: {parts} (offsets from 0x40 are "
            f"{high.address:#x}'s){', ' + where if where else ''} → adjacent-line prefetch may be the cause "
            f"({SUSPECT})")
