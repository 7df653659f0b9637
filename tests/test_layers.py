"""The layering rules of docs/design.md, read from the source (ast, nothing imported): the engine
imports nothing from reporting/ or fleetlib/ (the spec owns its grammar), and the import graph among
scripts/ modules, imports inside functions included, has no circle."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")


def modules():
    """{dotted name: path} of every Python module under scripts/ (sys.path's root for the programs)."""
    out = {}
    for folder, dirs, files in os.walk(SCRIPTS):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for f in files:
            if f.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, f), SCRIPTS)[:-3].split(os.sep)
                out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(folder, f)
    return out


def graph():
    """{module: {module it imports}} among scripts/ modules (an outside library is no edge)."""
    mods = modules()

    def known(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges = {}
    for m, path in mods.items():
        package = m if path.endswith("__init__.py") else m.rpartition(".")[0]
        out = set()
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                out |= {known(a.name) for a in n.names}
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    up = package.split(".")[:len(package.split(".")) - n.level + 1] if package else []
                    base = ".".join(up + ([n.module] if n.module else []))
                # `from engine import spec` names the module engine.spec; `from engine.spec import X` engine.spec
                out |= {known(f"{base}.{a.name}" if base else a.name) or known(base) for a in n.names}
        edges[m] = out - {None, m}
    return edges


def test_the_engine_imports_nothing_from_reporting_or_fleetlib():
    edges = graph()
    engine = [m for m in edges if m.startswith("lab.engine.")]
    assert len(engine) > 10, engine    # the walk found the engine
    bad = {m: sorted(d for d in edges[m] if d.split(".")[:2] in (["lab", "report"], ["lab", "fleet"]))
           for m in engine}
    assert not {m: d for m, d in bad.items() if d}


def test_the_import_graph_of_scripts_has_no_circle():
    edges = graph()
    assert "lab.report.goals" in edges["lab.report.model"]     # the walk sees edges
    done, path, circles = set(), [], []

    def visit(m):
        if m in path:
            circles.append(path[path.index(m):] + [m])
            return
        if m in done:
            return
        path.append(m)
        for d in sorted(edges.get(m, ())):
            visit(d)
        path.pop()
        done.add(m)

    for m in sorted(edges):
        visit(m)
    assert not circles, " ; ".join(" → ".join(c) for c in circles)
