"""Client-bound points: where the load generator, not the server, may have set the rate.

A closed-loop client whose CPUs were saturated cannot send faster, so the server's rate at that point
is a lower bound on what the server can do, not a measurement of it. The load generator prints its own
CPU use over the measured window (cache-server/loadgen/cpu.c): `client_cpu_util_pct`, its user + system
time as a share of the CPUs its threads could run on, and `client_thread_busy_max_pct`, its busiest
thread's. A point is client-bound when the median over its repeats of either reaches CLIENT_BOUND_PCT:
one saturated thread already stalls the connections it drives.

The words also say how busy the server was (`server_cpu_share`, % of one CPU, against the CPUs it
could use: its threads, at most the point's CPUs). When it too reached CLIENT_BOUND_PCT, both were at
their limit: the rate is then near what the server does at that load, not a bound far below it. On
loopback TCP on the project's VM every point measured was so, as each side pays about the same kernel work per request
(cache-server/README.md, "a load generator on io_uring is not cheaper per request").
"""
from topo import PlacementError, parse_cpus

CLIENT_BOUND_PCT = 90.0
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


def bound(pts):
    """[{variant, placement, threads, cpus, util, busiest, words}] for each client-bound point, in the
    order of pts; pts are the report model's points (one per metric, with their repeats)."""
    by = {}
    for p in pts:
        if p["metric"] in (UTIL, BUSIEST, SERVER):
            k = (p["variant"], p["placement"], p["threads"], p["cpus"])
            by.setdefault(k, {})[p["metric"]] = p["s"]["median"]
    out = []
    for (variant, placement, threads, cpus), m in by.items():
        util, busiest = m.get(UTIL), m.get(BUSIEST)
        if max(x for x in (util, busiest, -1.0) if x is not None) < CLIENT_BOUND_PCT:
            continue
        what = [f"{util:.0f}% of its CPUs" if util is not None else "",
                f"busiest thread {busiest:.0f}%" if busiest is not None else ""]
        words = (f"client-bound: the load generator used {', '.join(w for w in what if w)} "
                 f"(≥ {CLIENT_BOUND_PCT:.0f}% is saturated)")
        server, n = m.get(SERVER), server_cpus(threads, cpus)
        if server is not None and n:
            pct = server / n
            words += f"; the server used {pct:.0f}% of its {n} CPU{'s' if n > 1 else ''}"
            if pct >= CLIENT_BOUND_PCT:
                words += (": both were at their limit, so the rate is near what the server does at this "
                          "load, not a bound far below it")
            else:
                words += ": the server's rate here is a lower bound, not a measurement of the server"
        else:
            words += ": the server's rate here is a lower bound, not a measurement of the server"
        out.append({"variant": variant, "placement": placement, "threads": threads, "cpus": cpus,
                    "util": util, "busiest": busiest, "words": words})
    return out
