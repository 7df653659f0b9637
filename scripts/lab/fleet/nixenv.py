#!/usr/bin/env python3
"""The lab's Nix shell as a run sees it: its variables and the store paths they name.

  nixenv.py paths     the store paths of this shell, sorted, one a line (nothing outside a Nix shell)
  nixenv.py digest    one line for env/build.txt: how many store paths, and the sha256 of their list

One owner for one rule, read on both sides of a fleet sweep: the controller (scripts/lab/cli/fleet/, inside
`nix develop`) copies these store paths to a Nix host (`nix copy`) and starts the host's sweep with these
variables; the host's env.sh then records the same list (env/nix.txt) and digest (env/build.txt), so the
two say whether they ran the same store paths.

The shell's variables are IN_NIX_SHELL, every NIX_* variable (the compiler wrapper's flags) but Nix's own
client settings, the ones the flake's shellHook and mkShell set without naming the store (CC,
hardeningDisable, LAB_NIX_*), and every other variable whose value names a store path; PATH only by its
store entries (the host's own PATH follows them there, as the shell's PATH is followed by the outer one).
"""
import hashlib
import os
import re
import sys

from lab.errors import LabError, program, run

STORE_PATH = re.compile(r"/nix/store/[0-9a-df-np-sv-z]{32}-[A-Za-z0-9+._?=-]+")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Set by the flake's shellHook or mkShell without a store path in them (flake.nix).
OWN = ("IN_NIX_SHELL", "CC", "hardeningDisable", "LAB_NIX_PINNED_NIXPKGS")
# Nix's own settings and this machine's session: never the shell's, never shipped to another host.
NOT_SHELL = {"NIX_REMOTE", "NIX_SSHOPTS", "NIX_PATH", "NIX_CONF_DIR", "NIX_USER_CONF_FILES", "NIX_STORE_DIR",
             "NIX_STATE_DIR", "NIX_LOG_DIR", "NIX_DAEMON_SOCKET_PATH", "NIX_PROFILES", "NIX_BUILD_TOP", "_",
             "PWD", "OLDPWD", "HOME", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP", "TEMPDIR", "TERM", "SHLVL",
             "DISPLAY", "SSH_AUTH_SOCK", "SSH_CONNECTION", "SSH_CLIENT", "SSH_TTY", "LAB_RESULTS"}
MOST_PATHS = 4096
MOST_BYTES = 1 << 20


class NixEnvError(LabError):
    """The shell's variables are too many or too large to ship; str() is the one line to show."""


def shell(environ):
    """({name: value} of the Nix shell's variables, [store paths] sorted); ({}, []) outside a Nix shell.
    PATH is kept as its store entries only."""
    if not environ.get("IN_NIX_SHELL"):
        return {}, []
    out = {}
    for k, v in environ.items():
        if not NAME.match(k) or k in NOT_SHELL or k.startswith("LAB_FLEET"):
            continue
        if k == "PATH":
            v = ":".join(p for p in v.split(":") if STORE_PATH.match(p))
            if v:
                out[k] = v
        elif k in OWN or k.startswith(("NIX_", "LAB_NIX_")) or STORE_PATH.search(v):
            out[k] = v
    if sum(len(k) + len(v) for k, v in out.items()) > MOST_BYTES:
        raise NixEnvError(f"the Nix shell's variables hold more than {MOST_BYTES} bytes: not a shell to ship")
    paths = sorted({m.group(0) for v in out.values() for m in STORE_PATH.finditer(v)})
    if len(paths) > MOST_PATHS:
        raise NixEnvError(f"the Nix shell's variables name {len(paths)} store paths (at most {MOST_PATHS})")
    return out, paths


def digest(paths):
    """env/build.txt's line: the count and the sha256 of the sorted list (the list is env/nix.txt's)."""
    if not paths:
        return "none (not in a Nix shell: this host's own packages, versions.env)"
    h = hashlib.sha256("".join(p + "\n" for p in paths).encode()).hexdigest()
    return f"{len(paths)} paths, sha256 {h[:16]} of their list (env/nix.txt)"


@program("nixenv")
def main(argv):
    if argv not in (["paths"], ["digest"]):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        _vars, paths = shell(os.environ)
    except NixEnvError as e:
        print(f"nixenv: {e}", file=sys.stderr)
        return 1
    print("\n".join(paths) if argv == ["paths"] else digest(paths))
    return 0


if __name__ == "__main__":
    run(main)
