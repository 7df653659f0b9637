"""The pinned environment, checked by reading (this host cannot fetch nixpkgs): flake.lock pins the
nixpkgs of design.md, flake.nix parses, and the Nix path reads the same versions.env as ./lab."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

REV = "8fd9daa3db09ced9700431c5b7ad0e8ba199b575"
NAR = "sha256-Ti+ZBvW6yrWWAg2szExVTwCd4qOJ3KlVr1tFHfyfi8Q="


def versions_env():
    out = {}
    for line in open(os.path.join(ROOT, "versions.env")):
        if "=" in line and not line.startswith("#"):
            k, v = line.strip().split("=", 1)
            out[k] = v
    return out


def test_lock_pins_nixpkgs_of_the_design():
    lock = json.load(open(os.path.join(ROOT, "flake.lock")))
    assert lock["version"] == 7 and lock["root"] == "root"
    assert lock["nodes"]["root"]["inputs"] == {"nixpkgs": "nixpkgs"}
    node = lock["nodes"]["nixpkgs"]
    assert node["locked"] == {"lastModified": 1778430510, "narHash": NAR, "owner": "NixOS",
                              "repo": "nixpkgs", "rev": REV, "type": "github"}
    assert node["original"] == {"owner": "NixOS", "ref": "nixos-25.11", "repo": "nixpkgs", "type": "github"}
    assert versions_env()["NIXPKGS_REV"] == REV


def test_flake_names_every_tool_of_the_dev_shell():
    """By name, as a reader sees them (tests/test_nix_shell.py checks them against the code's commands)."""
    text = open(os.path.join(ROOT, "flake.nix")).read()
    shell = open(os.path.join(ROOT, "nix", "shell.nix")).read()
    assert 'inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11"' in text
    assert "import ./nix/shell.nix" in text and "autoreconfHook" in text
    for tool in ("just", "hyperfine", "perf", "numactl", "hwloc", "gnuplot", "jdk17_headless", "memcached",
                 "cargo", "rustc", "gcc", "clang", "shellcheck", "hostname-debian", "getconf"):
        assert f"pkgs.{tool};" in shell, tool
    assert "linuxPackages" not in text + shell   # deprecated alias: a warning at every evaluation


nix = shutil.which("nix-instantiate")


@pytest.mark.skipif(nix is None, reason="nix-instantiate not installed (./lab test installs nix-bin)")
def test_flake_and_package_expressions_parse():
    exprs = ["flake.nix", "nix/versions.nix", "nix/read-env.nix", "nix/shell.nix", "tests/nix/stand-in.nix",
             "tests/nix/eval-flake.nix"] + [p for p in ("c-probes/package.nix", "cache-server/package.nix",
                                                           "rust-runner/package.nix", "cassandra/jars.nix")
                                                 if os.path.exists(os.path.join(ROOT, p))]
    for e in exprs:
        p = subprocess.run([nix, "--parse", e], cwd=ROOT, capture_output=True, text=True)
        assert p.returncode == 0, f"{e}: {p.stderr}"


@pytest.mark.skipif(nix is None, reason="nix-instantiate not installed (./lab test installs nix-bin)")
def test_nix_reads_the_same_versions_as_lab():
    p = subprocess.run([nix, "--eval", "--strict", "--json", "nix/versions.nix"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == versions_env()


@pytest.mark.skipif(nix is None, reason="nix-instantiate not installed (./lab test installs nix-bin)")
def test_nix_jar_set_is_the_locked_one(tmp_path):
    """cassandra/jars.nix, evaluated with stand-ins for fetchurl and linkFarm (no nixpkgs offline), asks
    for exactly the jars of jars.lock, by Maven Central URL and sha256."""
    shim = tmp_path / "eval.nix"
    shim.write_text(f"""
let
  lib = {{
    filter = builtins.filter;
    hasPrefix = p: s: builtins.substring 0 (builtins.stringLength p) s == p;
    replaceStrings = builtins.replaceStrings;
    splitString = sep: s: builtins.filter builtins.isString (builtins.split sep s);
  }};
in import {ROOT}/cassandra/jars.nix {{
  inherit lib;
  fetchurl = a: a;
  linkFarm = name: entries: {{ inherit name entries; }};
}}
""")
    p = subprocess.run([nix, "--eval", "--strict", "--json", str(shim)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    farm = json.loads(p.stdout)
    assert farm["name"] == "cassandra-5.0.9-jars"
    got = {(e["name"], e["path"]["sha256"], e["path"]["url"]) for e in farm["entries"]}
    want = set()
    for line in open(os.path.join(ROOT, "cassandra", "jars.lock")):
        if line.strip() and not line.startswith("#"):
            sha, coords, file = line.split()
            group, artifact, version = coords.split(":")[:3]
            url = f"https://repo1.maven.org/maven2/{group.replace('.', '/')}/{artifact}/{version}/{file}"
            want.add((file, sha, url))
    assert len(want) >= 50 and got == want


@pytest.mark.skipif(nix is None, reason="nix-instantiate not installed (./lab test installs nix-bin)")
@pytest.mark.parametrize("folder", ["c-probes", "cache-server"])
def test_nix_reads_build_env_as_make_does(folder):
    """package.nix and the shell read build.env with nix/read-env.nix; make includes the same file."""
    path = os.path.join(ROOT, folder, "build.env")
    p = subprocess.run([nix, "--eval", "--strict", "--json", "--expr", f"import {ROOT}/nix/read-env.nix {path}"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    made = subprocess.run(["make", "-s", "--no-print-directory", "-C", os.path.join(ROOT, folder), "-f", "Makefile",
                           "-f", "-", "show"], input="show:\n\t@echo \"$(CC)|$(CFLAGS)\"\n",
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == f"{got['CC']}|{got['CFLAGS']}"
