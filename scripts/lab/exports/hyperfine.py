"""hyperfine's export shape ({"results": [{command, mean, stddev, median, user, system, min, max, times,
exit_codes, parameters}]}) for the points of a run that have wall_s, so hyperfine's scripts
(plot_whisker.py, welch_ttest.py, …) read a lab run. Read from the Run (lab/core/run.py): its points'
repeats. `command` is the command the engine ran for the point's first repeat (the journal's), else
`experiment variant placement tN`; `user`/`system` are the means of the point's cpu_user_s/cpu_sys_s
repeats (null when it has none); exit codes are 0: the lab keeps only repeats whose command succeeded.
parameters: threads, placement, experiment (and variant). A point measured once for several placements
(Point.shared) is its own placement's only, as in the JSON document."""
import statistics

from lab.core.stats import median


def mean_of(points, key, metric):
    xs = [r.value for p in points.get((key, metric), []) for r in p.repeats]
    return statistics.fmean(xs) if xs else None


def hyperfine(run):
    results = []
    for e in run.experiments:
        by = {}
        for p in e.points + e.noise:
            if not p.shared:
                by.setdefault(((p.variant, p.placement, int(p.threads)), p.metric), []).append(p)
        for (key, metric), ps in sorted(by.items(), key=lambda kv: (kv[0][0][0], kv[0][0][1], kv[0][0][2])):
            if metric != "wall_s":
                continue
            variant, placement, threads = key
            times = [r.value for p in ps for r in p.repeats]
            cmd = next((str(r.command) for p in ps for r in p.repeats if r.command), None)   # a journal's word
            params = {"threads": str(threads), "placement": placement, "experiment": e.name}
            if variant:
                params["variant"] = variant
            mem = [r.value * 1024 for p in by.get((key, "max_rss_kib"), []) for r in p.repeats]
            results.append({
                "command": cmd or " ".join(x for x in (e.name, variant, placement, f"t{threads}") if x),
                "mean": statistics.fmean(times), "stddev": statistics.stdev(times) if len(times) > 1 else None,
                "median": median(times), "user": mean_of(by, key, "cpu_user_s"),
                "system": mean_of(by, key, "cpu_sys_s"), "min": min(times), "max": max(times), "times": times,
                "exit_codes": [0] * len(times), "parameters": params,
                **({"memory_usage_byte": [int(m) for m in mem]} if len(mem) == len(times) else {})})
    return {"results": results}
