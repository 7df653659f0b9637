"""The flake's outputs as data: flake.nix and the package.nix files evaluated by the real Nix evaluator
(nix-instantiate, from Debian's nix-bin) against tests/nix/stand-in.nix instead of nixpkgs."""
import functools
import json
import os
import shutil
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
NIX = shutil.which("nix-instantiate")


@functools.lru_cache(maxsize=None)
def flake_outputs(root):
    p = subprocess.run([NIX, "--eval", "--strict", "--json", os.path.join(HERE, "eval-flake.nix"),
                        "--arg", "root", root], capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise AssertionError("evaluating flake.nix against tests/nix/stand-in.nix failed:\n"
                             + "\n".join(l for l in p.stderr.splitlines() if "nixbld" not in l))
    return json.loads(p.stdout)


def copy_src(src, dest):
    """What the sandbox sees: only the files of the package's src, below dest/<src name>/."""
    top = os.path.join(dest, src["name"])
    if os.path.exists(top):
        shutil.rmtree(top)
    for rel in src["files"]:
        target = os.path.join(top, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(src["root"], rel), target)   # mtimes kept: cargo's cache stays valid
    return top
