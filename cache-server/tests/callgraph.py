#!/usr/bin/env python3
"""The cache server's files call only downwards: the dependency graph between src/*.c has no cycle.

An edge A -> B means A.o uses a symbol (function or variable) that B.o defines, as the compiler and
`nm` see it (calls through inline functions of cache.h included), so nothing is guessed from text.
First checks that the detector finds a cycle planted in two scratch files, then checks src/.
  tests/callgraph.py            ok/FAIL lines (run.sh counts them); exit 1 on a cycle
  tests/callgraph.py --print    also print every edge with the symbols behind it
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compiler():
    """build.env's CC: the compiler the Makefile uses."""
    for line in open(os.path.join(HERE, "build.env")):
        if line.startswith("CC="):
            return line.strip().split("=", 1)[1]
    return "cc"


def graph(files, workdir):
    """{file: {file it uses: {symbols}}} for C files compiled to objects in workdir."""
    defined, used = {}, {}
    for path in files:
        name = os.path.basename(path)
        obj = os.path.join(workdir, name + ".o")
        subprocess.run([compiler(), "-O2", "-std=gnu11", "-D_GNU_SOURCE", "-c", path, "-o", obj],
                       check=True)
        out = subprocess.run(["nm", obj], check=True, capture_output=True, text=True).stdout
        used[name] = set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                used[name].add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRCV":   # global text, data, bss, rodata, common
                defined[parts[2]] = name
    edges = {name: {} for name in used}
    for name, symbols in used.items():
        for sym in symbols:
            owner = defined.get(sym)
            if owner is not None and owner != name:
                edges[name].setdefault(owner, set()).add(sym)
    return edges


def find_cycle(edges):
    """One cycle as a list of files (first == last), or None: depth-first search with colours."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, {})):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def describe(edges, cycle):
    return " -> ".join(cycle) + "  (" + "; ".join(
        f"{a} uses {' '.join(sorted(edges[a][b]))}" for a, b in zip(cycle, cycle[1:])) + ")"


def main():
    show = "--print" in sys.argv[1:]
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        a, b = os.path.join(tmp, "a.c"), os.path.join(tmp, "b.c")
        with open(a, "w") as f:
            f.write("int b(int);\nint a(int x) { return x ? b(x - 1) : 0; }\n")
        with open(b, "w") as f:
            f.write("int a(int);\nint b(int x) { return a(x); }\n")
        planted = find_cycle(graph([a, b], tmp))
        if planted and set(planted) == {"a.c", "b.c"}:
            print("ok - call graph: the detector finds a cycle planted in a.c <-> b.c")
        else:
            print(f"FAIL - call graph: the planted cycle a.c <-> b.c was not found ({planted})")
            failed = True
        src = os.path.join(HERE, "src")
        files = sorted(os.path.join(src, f) for f in os.listdir(src) if f.endswith(".c"))
        edges = graph(files, tmp)
    if show:
        for n in sorted(edges):
            for m in sorted(edges[n]):
                print(f"  {n} -> {m}: {' '.join(sorted(edges[n][m]))}")
    cycle = find_cycle(edges)
    nedges = sum(len(v) for v in edges.values())
    if cycle:
        print(f"FAIL - call graph of src/*.c has a cycle: {describe(edges, cycle)}")
        failed = True
    else:
        print(f"ok - call graph of src/*.c has no cycle ({len(edges)} files, {nedges} edges)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
