"""flake.nix evaluated by Nix itself against a stand-in for nixpkgs (tests/nix/stand-in.nix) that records
what each derivation is given: the shell and the packages get what issue 10 asks of them."""
import os
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "nix"))
import flake_eval  # noqa: E402

pytestmark = pytest.mark.skipif(flake_eval.NIX is None,
                                reason="nix-instantiate not installed (./lab test installs nix-bin)")


def outputs():
    return flake_eval.flake_outputs(ROOT)


def build_env(folder):
    out = {}
    for line in open(os.path.join(ROOT, folder, "build.env")):
        if "=" in line and not line.startswith("#"):
            k, v = line.rstrip("\n").split("=", 1)
            out[k] = v
    return out


def test_every_benchmark_binary_is_built_without_hardening():
    pk = outputs()["packages"]
    for name in ("c-probes", "cache-server", "runner", "mcperf"):
        assert pk[name]["hardeningDisable"] == ["all"], name
    assert outputs()["shell"]["hardeningDisable"] == ["all"]


def test_shell_compiler_is_the_one_of_build_env():
    hook = outputs()["shell"]["shellHook"]
    ccs = {build_env(f)["CC"] for f in ("c-probes", "cache-server")}
    assert len(ccs) == 1
    cc = ccs.pop()
    # after every setup hook (clang's would otherwise make CC=clang)
    assert f"export CC={cc}\n" in hook
    assert cc in outputs()["shell"]["packages"]


def test_shell_uses_current_package_names():
    pkgs = outputs()["shell"]["packages"]
    assert "perf" in pkgs and not any("linuxPackages" in p for p in pkgs)
    assert outputs()["shell"]["pythonWith"] == ["pytest", "numpy", "scipy", "jinja2", "jsonschema", "pyperf"]
    text = open(os.path.join(ROOT, "flake.nix")).read() + open(os.path.join(ROOT, "nix", "shell.nix")).read()
    assert "linuxPackages.perf" not in text


def test_runner_src_holds_what_its_tests_read():
    r = outputs()["packages"]["runner"]
    files = set(r["src"]["files"])
    crate = r["sourceRoot"].split("/", 1)[1]
    assert r["sourceRoot"].split("/", 1)[0] == r["src"]["name"]
    assert f"{crate}/Cargo.toml" in files and f"{crate}/Cargo.lock" in files
    # tests/it/interrupt.rs runs ../workloads/empty.rn from the crate's parent folder
    assert "workloads/empty.rn" in files
    assert not any("/target/" in f for f in files)
    assert r["cargoLockFile"] == os.path.join(ROOT, crate, "Cargo.lock")


def test_c_package_sources_are_what_the_makefile_needs():
    for name in ("c-probes", "cache-server"):
        src = outputs()["packages"][name]["src"]
        assert src["root"] == os.path.join(ROOT, name)
        assert "Makefile" in src["files"] and "build.env" in src["files"]
        assert not any(f.startswith("build/") for f in src["files"])
