"""Google Benchmark's JSON (`--benchmark_format=json` or `--benchmark_out=FILE`).

Each benchmark's name without its `/threads:N` part is the variant, N (or its `threads` field) the
thread count. With repetitions, the raw runs (`run_type` "iteration") are the repeats and the
aggregates (mean, median, stddev, cv, BigO) are left out: the lab computes its own from the runs. A file
of aggregates only (--benchmark_report_aggregates_only) gives each benchmark's median as one repeat
(no interval: n = 1), and env/imported.json names them.
Metrics: real_time and cpu_time in the file's time_unit (per iteration, as the library reports them),
items_per_second and bytes_per_second, and every user counter (a number beside them), unit "" for
counters (the JSON does not say theirs). `context` (CPUs, MHz, caches, load, build type) is the file's
word on its machine, kept in env/. The chart is items_per_second where the file has it, else
real_time."""
import json

from .jsonfile import Doc
from .model import Imported, scaling_charts, slug

TIME_UNITS = ("ns", "us", "ms", "s")
# Fields of a run that are not measurements (the rest that are numbers are user counters).
NOT_METRICS = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
               "repetition_index", "threads", "iterations", "time_unit", "aggregate_name", "aggregate_unit",
               "label", "error_occurred", "error_message", "big_o", "rms", "complexity_n", "skipped",
               "skip_message"}
RATES = {"items_per_second": "1/s", "bytes_per_second": "B/s"}
MOST_BENCHMARKS = 100_000


def recognise(doc):
    return isinstance(doc, dict) and isinstance(doc.get("context"), dict) and isinstance(doc.get("benchmarks"), list)


def split_threads(name):
    """(name without its /threads:N part, N or None)."""
    parts = name.split("/")
    for i, p in enumerate(parts):
        if p.startswith("threads:") and p[8:].isascii() and p[8:].isdigit():
            return "/".join(parts[:i] + parts[i + 1:]), int(p[8:])
    return name, None


def runs(d, benches):
    """([(index, run)] to import, {names measured by their median aggregate only}): the raw runs, and
    where a file has only aggregates (--benchmark_report_aggregates_only) the `median` one as a single
    repeat; errors and skipped runs left out."""
    raw, medians = [], {}
    for i, b in enumerate(benches):
        d.obj(b, f"benchmarks[{i}]")
        if b.get("error_occurred") or b.get("skipped"):
            continue
        if b.get("run_type", "iteration") == "iteration" and "aggregate_name" not in b:
            raw.append((i, b))
        elif b.get("aggregate_name") == "median":
            medians[b.get("run_name")] = (i, b)
    have = {b.get("run_name", b.get("name")) for _i, b in raw}
    extra = {k: v for k, v in medians.items() if k not in have}
    return sorted(raw + list(extra.values()), key=lambda x: x[0]), {str(k) for k in extra}


def parse(doc, path, threads_name):
    d = Doc(path)
    ctx = d.obj(doc["context"], "context")
    version = ctx.get("json_schema_version", 1)
    if version not in (1,):
        raise d.bad("context.json_schema_version", f"{str(version)[:20]!r} is a Google Benchmark JSON version "
                    "this lab does not know (known: 1)")
    exe = d.text(ctx.get("executable", "gbench"), "context.executable")
    imp = Imported("gbench", str(version), slug(exe.rsplit("/", 1)[-1], "gbench"))
    exp = imp.default_name
    benches = d.arr(doc["benchmarks"], "benchmarks", MOST_BENCHMARKS)
    reps, metrics = {}, set()
    chosen, medians_only = runs(d, benches)
    if medians_only:
        imp.extra["aggregates_only"] = sorted(medians_only)[:100]
    for i, b in chosen:
        at = f"benchmarks[{i}]"
        name = d.text(b.get("run_name", b.get("name")), f"{at}.name")
        variant, t = split_threads(name)
        threads = d.whole(b.get("threads", t or 1), f"{at}.threads")
        if t is not None and t != threads:
            raise d.bad(at, f"/threads:{t} in its name but threads {threads}")
        unit = d.text(b.get("time_unit", "ns"), f"{at}.time_unit")
        if unit not in TIME_UNITS:
            raise d.bad(f"{at}.time_unit", f"{unit[:10]!r} is not one of {' '.join(TIME_UNITS)}")
        n = reps[(variant, threads)] = reps.get((variant, threads), 0) + 1
        for k, v in b.items():
            if k in NOT_METRICS or isinstance(v, (str, bool, type(None))):
                continue
            u = unit if k in ("real_time", "cpu_time") else RATES.get(k, "")
            imp.add(exp, variant, threads, n, k[:64], d.num(v, f"{at}.{k[:40]}"), u)
            metrics.add(k)
    if not imp.rows:
        raise d.bad("benchmarks", "no benchmark runs (only aggregates, errors, or none)")
    imp.one_variant()
    primary = "items_per_second" if "items_per_second" in metrics else "real_time"
    imp.charts[exp] = scaling_charts(primary) + [("scaling", "cpu_time")]
    imp.host = d.text(ctx.get("host_name", ""), "context.host_name")
    caches = ctx.get("caches") if isinstance(ctx.get("caches"), list) else []
    imp.machine = {
        "host_name": imp.host, "num_cpus": ctx.get("num_cpus"), "mhz_per_cpu": ctx.get("mhz_per_cpu"),
        "cpu_scaling_enabled": ctx.get("cpu_scaling_enabled"), "load_avg": ctx.get("load_avg"),
        "library_build_type": ctx.get("library_build_type"), "date": ctx.get("date"),
        "caches": " ".join(f"L{c.get('level')}{(c.get('type') or '?')[0]}={c.get('size')}/{c.get('num_sharing')}"
                           for c in caches if isinstance(c, dict)),
    }
    imp.env_files["gbench-context.json"] = json.dumps(ctx, indent=1, sort_keys=True) + "\n"
    return imp
