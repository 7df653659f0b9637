"""Client-bound points: where the load generator, not the server, may have set the rate.

A closed-loop client whose CPUs were saturated cannot send faster, so the server's rate at that point
is a lower bound on what the server can do, not a measurement of it. The load generator prints its own
CPU use over the measured window (cache-server/loadgen/cpu.c): `client_cpu_util_pct`, its user + system
time as a share of the CPUs its threads could run on, and `client_thread_busy_max_pct`, its busiest
thread's. A point is client-bound when the median over its repeats of either reaches CLIENT_BOUND_PCT:
one saturated thread already stalls the connections it drives.
"""
CLIENT_BOUND_PCT = 90.0
UTIL, BUSIEST = "client_cpu_util_pct", "client_thread_busy_max_pct"


def bound(pts):
    """[{variant, placement, threads, cpus, util, busiest, words}] for each client-bound point, in the
    order of pts; pts are the report model's points (one per metric, with their repeats)."""
    by = {}
    for p in pts:
        if p["metric"] in (UTIL, BUSIEST):
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
                 f"(≥ {CLIENT_BOUND_PCT:.0f}% is saturated): the server's rate here is a lower bound, "
                 "not a measurement of the server")
        out.append({"variant": variant, "placement": placement, "threads": threads, "cpus": cpus,
                    "util": util, "busiest": busiest, "words": words})
    return out
