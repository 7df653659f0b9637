"""The dev shell provides every command the recipes and drivers call: the command list is read from the
code (tests/nix/commands.py), the shell's list from nix/shell.nix as the flake evaluates it. Commands
that only leak in from the host (hostname, getconf) are what `nix develop -i` or a container lacks."""
import os
import re
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "nix"))
import commands  # noqa: E402
import flake_eval  # noqa: E402

needs_nix = pytest.mark.skipif(flake_eval.NIX is None,
                               reason="nix-instantiate not installed (./lab test installs nix-bin)")


def test_scanner_finds_commands_where_bash_runs_them():
    text = """
f() { local n=$1; shift; "$@" > log; }
case $x in
  up) start ;;
  a|b) ;;
esac
for t in just perf; do "$t" --version; done
out=$(hostname -s)
timeout 5 flock -x /tmp/l taskset -c 0 lscpu | grep -q x && echo "$(getconf PAGESIZE)"
f label numactl --hardware
arr=(perf record -g)
(( i++ ))
cat <<END
not-a-command here
END
awk '{ print "sed" }' file
"""
    cmds, funcs = commands.shell_commands(text)
    assert funcs == {"f"}
    assert cmds == {"start", "hostname", "timeout", "flock", "taskset", "lscpu", "grep", "getconf", "numactl",
                    "cat", "awk"}


def guarded(path):
    """Commands a file only runs after `command -v NAME` finds them: optional by the code's own rule."""
    return set(re.findall(r"command -v ([A-Za-z0-9_.+-]+)", open(os.path.join(ROOT, path)).read()))


@needs_nix
def test_shell_provides_every_command_the_lab_calls():
    called = commands.called_commands(ROOT)
    # The Makefiles run the compiler named in build.env.
    for folder in ("c-probes", "cache-server"):
        for line in open(os.path.join(ROOT, folder, "build.env")):
            if line.startswith("CC="):
                called.setdefault(line.strip().split("=", 1)[1], []).append(f"{folder}/build.env")
    table = flake_eval.flake_outputs(ROOT)["shellCommands"]
    provided = set(table["stdenv"]).union(*(set(p["commands"]) for p in table["packages"]))
    missing = {}
    for cmd, where in called.items():
        if cmd in provided:
            continue
        required = [w for w in where if cmd not in guarded(w)]
        if required:
            missing[cmd] = required
    assert not missing, f"called but not in nix/shell.nix (command: files): {missing}"
    assert len(called) > 30, sorted(called)   # the scan read the code


@needs_nix
def test_shell_table_names_the_packages_the_flake_installs():
    out = flake_eval.flake_outputs(ROOT)
    assert [p["package"] for p in out["shellCommands"]["packages"]] == out["shell"]["packages"]
