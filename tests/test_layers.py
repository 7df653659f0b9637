"""The layering rules of docs/design.md, read from the source (ast, nothing imported): every package
imports only from the packages before it (topology < core < engine < why, fleet < report < exports <
imports < cli), and the import graph among scripts/ modules, imports inside functions included, has no
circle."""
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


# docs/design.md's package order: a package imports only from packages before it (why and fleet share a rank
# and import neither the other); `lab.__init__` and the top-level modules are no layer
ORDER = [("topology",), ("core",), ("engine",), ("why", "fleet"), ("report",), ("exports",), ("imports",), ("cli",)]
RANK = {p: i for i, ps in enumerate(ORDER) for p in ps}


def package(m):
    parts = m.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "lab" else None


def test_every_package_imports_only_from_the_packages_before_it():
    edges = graph()
    assert {package(m) for m in edges} >= set(RANK)     # the walk found every package
    bad = sorted(f"{m} → {d}" for m, ds in edges.items() for d in ds
                 if package(m) in RANK and package(d) in RANK and package(d) != package(m)
                 and RANK[package(d)] >= RANK[package(m)])
    assert not bad, "\n".join(bad)


def test_the_measuring_half_of_why_is_the_engines():
    # what the engine runs (lab.engine.evidence) is not under lab.why, which only reads
    edges = graph()
    assert "lab.engine.evidence.collect" in edges and not [m for m in edges if m.startswith("lab.why.collect")]


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
