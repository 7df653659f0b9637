"""What set a cache point's rate: the load generator (client-bound), or neither side (latency-bound).

A closed-loop client whose CPUs were saturated cannot send faster, so the server's rate at that point
is a lower bound on what the server can do, not a measurement of it. The load generator prints its own
CPU use over the measured window (cache-server/loadgen/cpu.c): `client_cpu_util_pct`, its user + system
time as a share of the CPUs its threads could run on, and `client_thread_busy_max_pct`, its busiest
thread's. A point is client-bound when the median over its repeats of either reaches SATURATED_PCT:
one saturated thread already stalls the connections it drives.

The words also say how busy the server was (`server_cpu_share`, % of one CPU, against the CPUs it
could use: its threads, at most the point's CPUs). When it too reached SATURATED_PCT, both were at
their limit: the rate is then near what the server does at that load, not a bound far below it. On
loopback TCP on the project's VM every saturated point measured was so, as each side pays about the
same kernel work per request (cache-server/README.md, "a load generator on io_uring is not cheaper per
request").

A point where neither reached SATURATED_PCT is latency-bound: with a fixed number of requests in
flight (closed loop), the rate is what the round trips allow, and both sides wait for each other. A
comparison of two servers there compares their round trips (on a VM, largely the wake-ups of idle
vCPUs), not what either can serve (cache-server/README.md, "the 1-thread points are latency-bound").
`capacity_doubts` gives a goal the points whose server was not saturated, in short words.
"""
from lab.topology.topo import PlacementError, parse_cpus

SATURATED_PCT = 90.0
UTIL, BUSIEST, SERVER = "client_cpu_util_pct", "client_thread_busy_max_pct", "server_cpu_share"


def server_cpus(threads, cpus):
    """how many CPUs the point's server could use: its threads, at most its CPUs; None if unknown"""
    try:
        n = int(threads)
    except (TypeError, ValueError):
        return None
    try:
        return min(n, len(parse_cpus(cpus))) if cpus else n
    except PlacementError:                   # a received row's cell: not ours to trust
        return n


def _medians(pts):
    """{(variant, placement, threads, cpus): {metric: median}} of the three CPU rows"""
    by = {}
    for p in pts:
        if p.metric in (UTIL, BUSIEST, SERVER):
            k = (p.variant, p.placement, p.threads, p.cpus)
            by.setdefault(k, {})[p.metric] = p.summary.median
    return by


def bound(pts):
    """[{variant, placement, threads, cpus, kind, server_pct, words}] for each point that is
    client-bound or latency-bound, in the order of pts; pts are the report model's points (one per
    metric, with their repeats). kind is "client-bound" or "latency-bound"; server_pct is the server's
    share of its CPUs (None when not measured)."""
    out = []
    for (variant, placement, threads, cpus), m in _medians(pts).items():
        util, busiest = m.get(UTIL), m.get(BUSIEST)
        server, n = m.get(SERVER), server_cpus(threads, cpus)
        pct = server / n if server is not None and n else None
        client = [x for x in (util, busiest) if x is not None]
        if not client:
            continue
        what = ", ".join(w for w in (f"{util:.0f}% of its CPUs" if util is not None else "",
                                     f"busiest thread {busiest:.0f}%" if busiest is not None else "") if w)
        on = f"{pct:.0f}% of its {n} CPU{'s' if n > 1 else ''}" if pct is not None else ""
        if max(client) >= SATURATED_PCT:
            kind = "client-bound"
            words = f"client-bound: the load generator used {what} (≥ {SATURATED_PCT:.0f}% is saturated)"
            if pct is not None:
                words += f"; the server used {on}"
            if pct is not None and pct >= SATURATED_PCT:
                words += (": both were at their limit, so the rate is near what the server does at this "
                          "load, not a bound far below it")
            else:
                words += ": the server's rate here is a lower bound, not a measurement of the server"
        elif pct is not None and pct < SATURATED_PCT:
            kind = "latency-bound"
            words = (f"latency-bound: neither side was saturated (the server used {on}, the load generator "
                     f"{what}; ≥ {SATURATED_PCT:.0f}% is saturated): the rate was set by the round trips of "
                     "the requests in flight, not by what either side can do; a comparison of servers here "
                     "compares their round trips, not their capacity")
        else:
            continue
        out.append({"variant": variant, "placement": placement, "threads": threads, "cpus": cpus,
                    "kind": kind, "server_pct": pct, "words": words})
    return out


def capacity_doubts(bounds):
    """{(variant, placement, threads): short words} for the points of bound() whose server was not
    saturated, so that a goal judged on them can say that its ratio is not one of capacities."""
    out = {}
    for b in bounds:
        if b["server_pct"] is None or b["server_pct"] < SATURATED_PCT:
            server = (f"the server at {b['server_pct']:.0f}%" if b["server_pct"] is not None
                      else "the server not measured")
            out[(b["variant"], b["placement"], str(b["threads"]))] = f"{b['kind']}, {server}"
    return out
