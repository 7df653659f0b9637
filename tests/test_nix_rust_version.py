"""The runner's declared minimum Rust (Cargo.toml rust-version, versions.env RUST_MIN, which ./lab checks)
is at least what every locked crate declares: a toolchain at the minimum must build the locked tree,
as nixpkgs' rustc and rustup's must both. Crates are read from cargo's registry (filled by any build)."""
import glob
import os
import tomllib

import pytest

from conftest import ROOT


def version(v):
    """"1.89" and "1.89.0" are the same minimum."""
    parts = [int(x) for x in v.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


def declared():
    return tomllib.load(open(os.path.join(ROOT, "rust-runner", "Cargo.toml"), "rb"))["package"]["rust-version"]


def test_cargo_toml_and_versions_env_name_the_same_minimum():
    env = dict(l.strip().split("=", 1) for l in open(os.path.join(ROOT, "versions.env"))
               if "=" in l and not l.startswith("#"))
    assert env["RUST_MIN"] == declared()


@pytest.mark.rust_build   # reads the crates that cargo fetches
def test_minimum_covers_every_locked_crate():
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    registries = glob.glob(os.path.join(home, "registry", "src", "*"))
    lock = tomllib.load(open(os.path.join(ROOT, "rust-runner", "Cargo.lock"), "rb"))
    ours = version(declared())
    read, too_new = 0, []
    for pkg in lock["package"]:
        if "source" not in pkg:
            continue
        manifests = [m for r in registries if os.path.exists(m := os.path.join(r, f"{pkg['name']}-{pkg['version']}",
                                                                                "Cargo.toml"))]
        if not manifests:
            continue   # not downloaded: a crate for another platform (windows-sys, wasm-bindgen…)
        read += 1
        need = tomllib.load(open(manifests[0], "rb")).get("package", {}).get("rust-version")
        if isinstance(need, str) and version(need) > ours:
            too_new.append(f"{pkg['name']} {pkg['version']} needs {need}")
    if read == 0:
        pytest.skip(f"no locked crate in {home}/registry/src yet (run `just build-runner` once)")
    assert not too_new, f"rust-version {declared()} is below: {too_new}"
