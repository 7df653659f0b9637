#!/usr/bin/env python3
"""mcperf's (twemperf's) text summary on stdin -> the loadgen's tidy rows (metric,value,unit) on stdout.

Used by point.sh --driver=mcperf, so that a cross-check run lands in the same CSV columns as loadgen's.
mcperf's latency is the seed's definition (send() to epoll readiness), like loadgen's `latency_*`.
Its percentiles come from a histogram of 1 ms bins, so only `latency_avg` and `latency_max` are exact.
A percentile within one bin width of zero (mcperf prints 1.0 for anything from 0 to 1 ms, i.e. every
percentile of a 20-100 us server) is not a measurement: it is left out, with a note on stderr.
Percentiles above one bin are passed through as mcperf printed them (1 ms resolution).

    mcperf_csv.py [--method get] < mcperf.out
Exit 2 when the summary is missing or does not parse (a crashed or cut-off mcperf).
"""
import re
import sys

NUM = r"([0-9]+(?:\.[0-9]+)?)"
BIN_MS = 1.0    # width of mcperf's response-time histogram bins


def pairs(text):
    """'avg 0.2 min 0.1 max 13.4' -> {'avg': 0.2, ...}: mcperf prints `name value` runs after a label."""
    return {k: float(v) for k, v in re.findall(r"([a-z_\-]+[0-9]*) " + NUM, text)}


def parse(out):
    """The labelled lines of one summary, merged per label (mcperf splits long lines)."""
    lines = {}
    for ln in out.splitlines():
        label, sep, rest = ln.strip().partition(": ")
        if sep:
            lines.setdefault(label, {}).update(pairs(rest))
            if label == "Response rate":
                m = re.match(NUM + " rsp/s", rest)
                if m:
                    lines[label]["rate"] = float(m.group(1))
            elif label == "CPU time [s]":
                m = re.search(r"total " + NUM + "%", rest)
                if m:
                    lines[label]["total_pct"] = float(m.group(1))
    return lines


def rows(out, method="get", notes=None):
    """The tidy rows; percentiles below mcperf's resolution are omitted, each with a line in notes."""
    notes = [] if notes is None else notes
    s = parse(out)
    need = ("Total", "Response rate", "Response time [ms]", "Response type", "Errors")
    missing = [k for k in need if k not in s]
    if missing:
        raise ValueError(f"no mcperf summary (missing: {', '.join(missing)})")
    total, rt, types, err = s["Total"], s["Response time [ms]"], s["Response type"], s["Errors"]
    rate = s["Response rate"]["rate"]
    out = [("ops_per_s", rate, "1/s")]
    if method in ("get", "gets"):
        out.append(("get_per_s", rate, "1/s"))
    out.append(("latency_avg", rt["avg"], "ms"))
    for q in ("p50", "p95", "p99", "p999"):
        if q not in rt:
            continue
        if rt[q] <= BIN_MS:
            notes.append(f"latency_{q} omitted: mcperf printed {rt[q]:g} ms, within one {BIN_MS:g} ms "
                         "histogram bin of zero (below its resolution, not a measurement)")
            continue
        out.append((f"latency_{q}", rt[q], "ms"))
    out.append(("latency_max", rt["max"], "ms"))
    out.append(("ops", total["responses"], "count"))
    if method in ("get", "gets"):
        gets = types.get("value", 0) + types.get("end", 0)
        # a hit answers VALUE…END, counted by mcperf as `value`; a miss only END
        out.append(("get_hit_ratio", types.get("value", 0) / gets if gets else 0, "ratio"))
    wrong = types.get("error", 0) + types.get("client_error", 0) + types.get("server_error", 0)
    out.append(("errors", err["total"] + wrong, "count"))
    if "total_pct" in s.get("CPU time [s]", {}):
        out.append(("client_cpu_share", s["CPU time [s]"]["total_pct"], "%"))
    out.append(("client_threads", 1, "threads"))          # mcperf is single-threaded
    out.append(("client_conns", total["connections"], "count"))
    return out


def main():
    method = "get"
    if sys.argv[1:2] == ["--method"] and len(sys.argv) > 2:
        method = sys.argv[2]
    elif sys.argv[1:]:
        sys.exit("usage: mcperf_csv.py [--method METHOD] < mcperf.out")
    notes = []
    try:
        result = rows(sys.stdin.read(), method, notes)
    except (ValueError, KeyError) as e:
        print(f"mcperf_csv.py: {e}", file=sys.stderr)
        sys.exit(2)
    for n in notes:
        print(f"mcperf_csv.py: {n}", file=sys.stderr)
    print("metric,value,unit")
    for metric, value, unit in result:
        print(f"{metric},{value:.6g},{unit}")


if __name__ == "__main__":
    main()
