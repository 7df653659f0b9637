"""pyperf's JSON (`-o FILE`, `--append`): each benchmark's run values are repeats (warm-ups and the
calibration run are left out). The benchmark's name is its variant; a thread count in it
(`threads=2`, `threads:2`, `-t 2`…: a name of model.THREAD_NAMES, or of threads=NAME, then `=`, `:`
or a space, then digits) is its `threads`, and is taken out of the variant. A value in seconds is
`wall_s` (pyperf measures wall time); other units keep pyperf's name. Each run's `command_max_rss`
(pyperf command) is a max_rss_kib row. The metadata (CPU model, count, affinity, config, frequency,
platform…) is the file's word on its machine, kept in env/."""
import json
import re

from .jsonfile import Doc
from .model import THREAD_NAMES, Imported, scaling_charts, slug

VERSIONS = ("1.0",)
UNITS = {"second": ("wall_s", "s"), "byte": ("bytes", "B"), "integer": ("value", "")}
MACHINE = ("cpu_model_name", "cpu_model_str", "cpu_count", "cpu_affinity", "cpu_config", "cpu_freq",
           "hostname", "platform", "boot_time", "aslr", "python_version", "perf_version", "date")


def recognise(doc):
    return isinstance(doc, dict) and "version" in doc and isinstance(doc.get("benchmarks"), list)


def threads_in(name, threads_name):
    names = (threads_name,) if threads_name else THREAD_NAMES
    alt = "|".join(re.escape(n) for n in names)
    m = re.search(rf"(?<![A-Za-z0-9_])-{{0,2}}({alt})[=: ](\d{{1,4}})(?![0-9])", name)
    if not m:
        return name, None
    rest = (name[:m.start()] + name[m.end():]).strip(" ,;/-_")
    return re.sub(r"\s{2,}", " ", rest), int(m.group(2))


def parse(doc, path, threads_name):
    d = Doc(path)
    version = doc["version"]
    if version not in VERSIONS:
        raise d.bad("version", f"{str(version)[:20]!r} is a pyperf JSON version this lab does not know "
                    f"(known: {' '.join(VERSIONS)})")
    common = d.obj(doc.get("metadata", {}), "metadata")
    benches = d.arr(doc["benchmarks"], "benchmarks")
    if not benches:
        raise d.bad("benchmarks", "no benchmarks")
    first = d.obj(d.obj(benches[0], "benchmarks[0]").get("metadata", {}), "benchmarks[0].metadata")
    cmd = first.get("command") if isinstance(first.get("command"), str) else ""
    imp = Imported("pyperf", version, slug((cmd.split() or ["pyperf"])[0].rsplit("/", 1)[-1], "pyperf"))
    exp = imp.default_name
    seen, metas, any_thread = {}, {}, False
    for i, b in enumerate(benches):
        at = f"benchmarks[{i}]"
        meta = {**common, **d.obj(d.obj(b, at).get("metadata", {}), f"{at}.metadata")}
        name = d.text(meta.get("name", f"benchmark {i + 1}"), f"{at}.metadata.name")
        unit = meta.get("unit", "second")
        if unit not in UNITS:
            raise d.bad(f"{at}.metadata.unit", f"{str(unit)[:20]!r} is not a pyperf unit (second, byte, integer)")
        metric, u = UNITS[unit]
        variant, threads = threads_in(name, threads_name)
        any_thread |= threads is not None
        threads = threads or 1
        if (variant, threads) in seen:
            raise d.bad(at, f"the same point ({variant[:40]!r}, {threads} threads) as "
                            f"benchmarks[{seen[(variant, threads)]}]")
        seen[(variant, threads)] = i
        n = rss = 0
        for j, run in enumerate(d.arr(b.get("runs"), f"{at}.runs")):
            rat = f"{at}.runs[{j}]"
            d.obj(run, rat)
            for k, v in enumerate(d.arr(run.get("values", []), f"{rat}.values")):
                n += 1
                imp.add(exp, variant, threads, n, metric, d.num(v, f"{rat}.values[{k}]"), u)
            m = run.get("metadata") if isinstance(run.get("metadata"), dict) else {}
            if "command_max_rss" in m and run.get("values"):
                rss += 1
                imp.add(exp, variant, threads, rss, "max_rss_kib",
                        d.num(m["command_max_rss"], f"{rat}.metadata.command_max_rss") / 1024, "KiB")
        if not n:
            raise d.bad(f"{at}.runs", f"benchmark {name[:40]!r} has no values (only warm-ups)")
        metas[name] = {k: v for k, v in meta.items() if isinstance(v, (str, int, float))}
    if threads_name and not any_thread:
        raise d.bad("benchmarks", f"no benchmark name holds {threads_name}=N (threads={threads_name})")
    imp.one_variant()
    imp.charts[exp] = scaling_charts(metric)
    imp.host = common.get("hostname", "") if isinstance(common.get("hostname"), str) else ""
    imp.machine = {k: common.get(k, first.get(k)) for k in MACHINE if common.get(k, first.get(k)) is not None}
    imp.env_files["pyperf-metadata.json"] = json.dumps({"common": common, "benchmarks": metas},
                                                       indent=1, sort_keys=True) + "\n"
    return imp
