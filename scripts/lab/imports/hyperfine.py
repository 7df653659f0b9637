"""hyperfine's JSON export (`--export-json`): each command's `times` are repeats of `wall_s`.

A `-P`/`-L` parameter named like a thread count (model.THREAD_NAMES, or threads=NAME) gives `threads`;
the other parameters name the variant (`name=value,…`; without parameters, several commands are
variants by their text). `user` and `system` are hyperfine's means over the runs: one row each
(cpu_user_s, cpu_sys_s, repeat 1), not repeats. `memory_usage_byte` (hyperfine ≥ 1.16, one per run)
gives max_rss_kib per repeat. Exit codes are kept in env/imported.json, and a non-zero one marks its
repeat suspect (hyperfine -i kept a failed run). hyperfine's export has no version field and no host."""
from collections import Counter

from .jsonfile import Doc
from .model import Imported, scaling_charts, slug, thread_of

MAX_COMMANDS = 10_000


def recognise(doc):
    return isinstance(doc, dict) and isinstance(doc.get("results"), list) and \
        all(isinstance(r, dict) and "command" in r and "times" in r for r in doc["results"][:1]) and \
        bool(doc["results"])


def parse(doc, path, threads_name):
    d = Doc(path)
    results = d.arr(doc["results"], "results", MAX_COMMANDS)
    first = d.text(d.obj(results[0], "results[0]").get("command"), "results[0].command")
    imp = Imported("hyperfine", "export", slug((first.split() or ["hyperfine"])[0].rsplit("/", 1)[-1], "hyperfine"))
    exp = imp.default_name
    seen, exits, params_seen = {}, {}, set()
    for i, r in enumerate(results):
        at = f"results[{i}]"
        d.obj(r, at)
        command = d.text(r.get("command"), f"{at}.command")
        params = d.obj(r.get("parameters", {}) or {}, f"{at}.parameters")
        for k, v in params.items():
            d.text(k, f"{at}.parameters")
            d.text(v, f"{at}.parameters.{k[:40]}")
        params_seen |= set(params)
        tname = thread_of(params, threads_name)
        threads = d.whole(params[tname], f"{at}.parameters.{tname}") if tname else 1
        others = [f"{k}={v}" for k, v in sorted(params.items()) if k != tname]
        variant = ",".join(others) if params else (command if len(results) > 1 else "")
        key = (variant, threads)
        if key in seen:
            raise d.bad(at, f"the same point (variant {variant[:40]!r}, {threads} threads) as results[{seen[key]}]")
        seen[key] = i
        times = d.arr(r.get("times"), f"{at}.times")
        if not times:
            raise d.bad(f"{at}.times", "no times")
        codes = d.arr(r.get("exit_codes", []) or [], f"{at}.exit_codes")
        if codes and len(codes) != len(times):
            raise d.bad(f"{at}.exit_codes", f"{len(codes)} exit codes for {len(times)} times")
        codes = [int(d.num(c, f"{at}.exit_codes[{j}]")) if c is not None else None for j, c in enumerate(codes)]
        mem = r.get("memory_usage_byte")
        if mem is not None:
            d.arr(mem, f"{at}.memory_usage_byte")
            if len(mem) != len(times):
                raise d.bad(f"{at}.memory_usage_byte", f"{len(mem)} values for {len(times)} times")
        for j, t in enumerate(times):
            code = codes[j] if codes else 0
            why = f"exit code {code} (kept by hyperfine -i)" if code not in (0, None) else ""
            imp.add(exp, variant, threads, j + 1, "wall_s", d.num(t, f"{at}.times[{j}]"), "s", suspect=why)
            if mem is not None:
                imp.add(exp, variant, threads, j + 1, "max_rss_kib",
                        d.num(mem[j], f"{at}.memory_usage_byte[{j}]") / 1024, "KiB", suspect=why)
        for field, metric in (("user", "cpu_user_s"), ("system", "cpu_sys_s")):
            if r.get(field) is not None:
                imp.add(exp, variant, threads, 1, metric, d.num(r[field], f"{at}.{field}"), "s")
        # how many runs ended with each exit code ({"0": 20000}), not one code a run: a real 20 × 20,000-run
        # file's list outgrew what the record's reader takes (runfolder.LIMITS["json"])
        exits[f"{variant} t{threads}".lstrip()[:200]] = {str(c): n for c, n in Counter(codes).items()}
        imp.extra.setdefault("commands", []).append({"command": command, "parameters": params})
    if threads_name and threads_name not in params_seen:
        raise d.bad("results", f"no parameter named {threads_name!r} (threads={threads_name}); "
                    f"parameters: {' '.join(sorted(params_seen)) or 'none'}")
    imp.extra["exit_codes"] = exits
    imp.charts[exp] = scaling_charts("wall_s")
    return imp
