"""Every run records how each instrument was built (env/build.txt, written by scripts/env.sh): the
compiler, its version and the exact flags, as the instrument's own build prints them."""
import os
import subprocess

from conftest import ROOT


def test_env_records_compiler_version_and_flags_per_instrument(tmp_path, lab_run):
    lab_run.record_host(tmp_path)
    lines = dict(l.split(": ", 1) for l in (tmp_path / "build.txt").read_text().splitlines() if ": " in l)
    for name in ("c-probes", "cache-server"):
        env = dict(l.strip().split("=", 1) for l in open(os.path.join(ROOT, name, "build.env"))
                   if "=" in l and not l.startswith("#"))
        version = subprocess.run([env["CC"], "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        assert lines[name].startswith(f"cc={env['CC']} | {version} | cflags="), lines[name]
        assert env["CFLAGS"] in lines[name]
    rustc = subprocess.run(["rustc", "--version"], capture_output=True, text=True).stdout.strip()
    assert lines["rust-runner"].startswith(rustc + " | profile.release: opt-level=")
    assert "NIX_HARDENING_ENABLE=" in lines["wrapper"]
