"""The code every host runs: a `git archive` of this checkout's commit with its uncommitted (tracked)
changes, plus `.lab-source/` naming the commit and holding the diff, so that a host's env/ and the
engine's run identity say exactly what it measured, as on the controller."""
import io
import json
import os
import subprocess
import tarfile
import zipfile

from lab.core.runfolder import output_of
from lab.engine.rounds import identity
from lab.errors import LabError


class CodeError(LabError):
    pass


def git(root, *args, text=True):
    p = subprocess.run(["git", "-C", root, *args], capture_output=True, text=text)
    if p.returncode != 0:
        raise CodeError(f"git {' '.join(args)}: {(p.stderr if text else p.stderr.decode()).strip()}")
    return p.stdout


def pack(root, dest_dir):
    """Write <dest_dir>/code-<id>.tar (once per identity); returns (path, code_id, identity)."""
    ident = identity(root)
    if ident["commit"].startswith("unavailable"):
        raise CodeError(f"{root} is not a git checkout: fleet-sweep ships a git archive of it")
    code_id = f"{ident['commit'][:12]}-{ident['diff_sha256'][:8]}"
    path = os.path.join(dest_dir, f"code-{code_id}.tar")
    if os.path.exists(path):
        return path, code_id, ident
    # `git stash create` makes a commit object of the working tree's tracked changes without touching
    # the checkout or the stash list; with no change it prints nothing and HEAD is archived.
    tree = git(root, "stash", "create").strip() or "HEAD"
    diff = git(root, "diff", "HEAD", "--binary", "--", ".", ":(exclude)results")
    with output_of(path, dest_dir) as tmp:
        with open(tmp, "wb") as f:
            f.write(git(root, "archive", "--format=tar", tree, text=False))
        with tarfile.open(tmp, "a") as t:
            for name, data in ((".lab-source/diff.patch", diff.encode()),
                               (".lab-source/commit", ident["commit"].encode() + b"\n"),
                               # identity.json last: start.yml's `creates` takes it as a whole extraction
                               (".lab-source/identity.json", json.dumps(ident).encode())):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                t.addfile(info, io.BytesIO(data))
    return path, code_id, ident


def untracked(root):
    """Files neither tracked nor ignored: the archive does not hold them (nor does the run identity)."""
    try:
        return [x for x in git(root, "ls-files", "--others", "--exclude-standard").splitlines() if x]
    except CodeError:
        return []


# What scripts/lab/cli/history.py needs on a host that may hold no copy of the lab: the lab's own modules, in one
# zip that python runs. fleet/check.yml sends it base64 on the stdin of `python3 -c HISTORY_BOOT RESULTS`,
# which keeps it in a temporary file only while it runs: one task instead of a temporary file, a copy and
# a removal (~7 s less per play here), and nothing left on the host if the play is killed half-way.
HISTORY_MODULES = ("lab/cli/history.py",
                   "lab/core/runfolder.py",
                   "lab/core/stats.py",
                   "lab/core/term.py",
                   "lab/engine/pricehistory.py",
                   "lab/engine/journal.py",
                   "lab/errors.py",
                   "lab/__init__.py",
                   "lab/cli/__init__.py",
                   "lab/core/__init__.py",
                   "lab/engine/__init__.py")
HISTORY_BOOT = """import base64, runpy, sys, tempfile
with tempfile.NamedTemporaryFile(suffix=".pyz") as f:
    f.write(base64.b64decode(sys.stdin.read()))
    f.flush()
    sys.argv = [f.name] + sys.argv[1:]
    runpy.run_path(f.name, run_name="__main__")
"""


def history_reader(root, dest_dir):
    """Write <dest_dir>/history.pyz from this checkout's scripts/; returns its path."""
    path = os.path.join(dest_dir, "history.pyz")
    with output_of(path, dest_dir) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as z:
        for m in HISTORY_MODULES:
            z.write(os.path.join(root, "scripts", m), m)
        z.writestr("__main__.py", "import sys\nfrom lab.cli import history\nsys.exit(history.main(sys.argv[1:]))\n")
    return path
