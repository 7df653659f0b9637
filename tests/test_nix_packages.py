"""Each package.nix built the way the Nix sandbox sees it, on this host's toolchain (this host cannot
reach the Nix cache): only the package's src, as the flake evaluates it, copied into a fresh folder (for
the runner, shown at the checkout's own path in a private mount namespace, so that cargo's build is
shared with `just test-runner`); its makeFlags split as stdenv splits them; its build, check and install
phases run. The facts come from evaluating flake.nix itself (tests/nix/eval-flake.nix), never from a
copy of them here."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "nix"))
import flake_eval  # noqa: E402

PHASES = os.path.join(ROOT, "tests", "nix", "phases.sh")
MAKE_PACKAGES = ["c-probes", "cache-server"]

pytestmark = [pytest.mark.skipif(flake_eval.NIX is None,
                                 reason="nix-instantiate not installed (./lab test installs nix-bin)"),
              pytest.mark.slow]   # each test replays a package's build phases


def package(name):
    return flake_eval.flake_outputs(ROOT)["packages"][name]


def sandbox_env(pkg, out, make_flags=None):
    """The variables stdenv's builder would see for this derivation (no structuredAttrs)."""
    ph = flake_eval.flake_outputs(ROOT)["placeholderOut"]
    flags = make_flags if make_flags is not None else [f.replace(ph, out) for f in pkg.get("makeFlags", [])]
    env = {"PATH": os.environ["PATH"], "HOME": "/homeless-shelter", "TZ": "UTC", "SHELL": shutil.which("bash"),
           "NIX_BUILD_CORES": "2", "out": out, "prefix": out, "CC": "gcc",
           "makeFlags": " ".join(flags), "installTargets": " ".join(pkg.get("installTargets", []))}
    if pkg.get("doCheck"):
        env["doCheck"] = "1"
    if pkg.get("checkPhase"):
        env["checkPhase"] = pkg["checkPhase"]
    if pkg.get("enableParallelBuilding"):
        env["enableParallelBuilding"] = "1"
    return env


def run_phases(pkg, tmp_path, make_flags=None):
    out = str(tmp_path / "out")
    src = flake_eval.copy_src(pkg["src"], str(tmp_path / "build"))
    p = subprocess.run([PHASES], cwd=src, env=sandbox_env(pkg, out, make_flags), capture_output=True,
                       text=True, timeout=600)
    return p, src, out


@pytest.mark.parametrize("name", MAKE_PACKAGES)
def test_make_package_builds_checks_and_installs_in_the_sandbox_layout(name, tmp_path):
    pkg = package(name)
    p, src, out = run_phases(pkg, tmp_path)
    assert p.returncode == 0, f"{name}: exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    main = os.path.join(out, "bin", pkg["mainProgram"])
    assert os.access(main, os.X_OK), f"{name}: no {main} after the install phase: {os.listdir(out)}"


@pytest.mark.parametrize("name", MAKE_PACKAGES)
def test_nix_and_debian_paths_build_with_the_same_compiler_and_flags(name, tmp_path):
    """The package's source copy, with its makeFlags, and the checkout (what `just build-*` runs)
    print the same build: compiler, version and every flag."""
    pkg = package(name)
    src = flake_eval.copy_src(pkg["src"], str(tmp_path / "build"))
    env = sandbox_env(pkg, str(tmp_path / "out"))
    flags = env["makeFlags"].split()
    nix = subprocess.run(["make", "-s", *flags, "print-build"], cwd=src, env=env, capture_output=True, text=True)
    deb = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, name), "print-build"], capture_output=True,
                         text=True)
    assert nix.returncode == 0 and deb.returncode == 0, nix.stderr + deb.stderr
    assert nix.stdout == deb.stdout and "cflags=" in deb.stdout


def test_the_replay_splits_make_flags_as_stdenv_does(tmp_path):
    """Guards the test itself: the flag that broke `nix build .#cache-server` ("CFLAGS=-O2 -g") fails
    here as it did under Nix, so the builds above would have caught it."""
    pkg = package("c-probes")
    p, _, _ = run_phases(pkg, tmp_path, make_flags=["CFLAGS=-O2 -g", "BUILD=build"])
    assert p.returncode != 0 and "invalid option -- 'g'" in p.stderr, p.stderr[-2000:]


@pytest.mark.parametrize("name", MAKE_PACKAGES)
def test_make_flags_leave_the_build_to_build_env(name):
    pkg = package(name)
    for flag in pkg["makeFlags"]:
        assert not any(c.isspace() for c in flag), f"{name}: makeFlags entry {flag!r}: stdenv splits it on spaces"
        assert flag.split("=")[0] not in ("CC", "CFLAGS", "LDFLAGS"), \
            f"{name}: {flag!r} in package.nix: the build definition is {name}/build.env"
    assert {"Makefile", "build.env"} <= set(pkg["src"]["files"])
    makefile = open(os.path.join(ROOT, name, "Makefile")).read()
    assert "build.env" in makefile.split("include", 1)[1].splitlines()[0]


# Runs a command where the checkout's folder shows only the package's src (a private mount namespace;
# the runner's target folder is mounted back in): the tree the Nix sandbox sees, at the checkout's own
# path, so cargo's build of it is the very one `just test-runner` reuses, not a second compile.
VIEW = """set -e
mount --bind "$1" "$2"
mount --rbind "$3" "$4"
cd "$5"
shift 5
exec "$@"
"""


def private_mounts():
    """The unshare prefix that can mount here: as root plainly, else in a user namespace."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "-m", "--propagation", "private"], ["unshare", "-rm", "--propagation", "private"]):
        if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return None


@pytest.mark.rust_build
def test_runner_package_builds_checks_and_installs_in_the_sandbox_layout(tmp_path):
    """buildRustPackage's phases (cargo build, cargo test, install) over the package's src only, in its
    sourceRoot, offline with the locked crates. The check phase runs tests/it/interrupt.rs, which reads
    ../workloads/empty.rn: a src without it fails here as it failed under Nix."""
    if shutil.which("cargo") is None:
        pytest.skip("cargo not installed")
    prefix = private_mounts()
    if prefix is None:
        pytest.skip("no private mount namespace here (unshare -m and unshare -rm both refused)")
    pkg = package("runner")
    top = flake_eval.copy_src(pkg["src"], str(tmp_path / "view"))
    crate = pkg["sourceRoot"].split("/", 1)[1]
    assert pkg["sourceRoot"].split("/", 1)[0] == pkg["src"]["name"]
    assert open(os.path.join(top, crate, "Cargo.lock")).read() == open(pkg["cargoLockFile"]).read()
    target = os.path.join(ROOT, crate, "target")
    os.makedirs(target, exist_ok=True)
    os.makedirs(os.path.join(top, crate, "target"))
    env = dict(os.environ)
    for k in ("RUNNER_IT", "LAB_RAW", "RUSTFLAGS", "CARGO_BUILD_RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS",
              "CARGO_TARGET_DIR"):
        env.pop(k, None)
    flags = ["-j", "2", "--offline", "--locked", "--profile", pkg["buildType"]]
    here = os.path.join(ROOT, crate)
    for step in (["cargo", "build", *flags], ["cargo", "test", *flags, "--", "--test-threads=2"],
                 ["ls", "-A", ROOT]):
        p = subprocess.run([*prefix, "bash", "-c", VIEW, "view", target, os.path.join(top, crate, "target"),
                            top, ROOT, here, *step], env=env, capture_output=True, text=True, timeout=1800)
        assert p.returncode == 0, (f"{' '.join(step)} in {here}: exit {p.returncode}\n"
                                   f"{p.stdout[-3000:]}\n{p.stderr[-4000:]}")
    # what the build saw at the checkout's place: the src, nothing else
    assert sorted(p.stdout.split()) == sorted({f.split("/")[0] for f in pkg["src"]["files"]})
    built = os.path.join(target, pkg["buildType"], pkg["mainProgram"])
    os.makedirs(tmp_path / "out" / "bin")
    installed = shutil.copy2(built, tmp_path / "out" / "bin")
    v = subprocess.run([installed, "--version"], capture_output=True, text=True)
    assert v.returncode == 0 and v.stdout.startswith("runner "), v.stdout + v.stderr


def test_phases_replay_passes_shellcheck():
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck not installed")
    p = subprocess.run(["shellcheck", "-S", "warning", PHASES], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout
