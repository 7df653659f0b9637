# The dev shell's packages, each with the commands the lab's recipes and drivers call from it.
# flake.nix puts `packages` in the shell; tests/test_nix_shell.py derives the commands from the code
# (justfiles, drivers, specs, subprocess calls) and checks that this file provides every one, so a
# command that only leaks in from the host (`nix develop -i`, a minimal container) fails a test.
{ pkgs, own }:
{
  # Already in every mkShell: stdenv's own path (coreutils, findutils, diffutils, gnused, gnugrep,
  # gawk, gnutar, gzip, bzip2, xz, gnumake, bash, patch, file).
  stdenv = [
    "awk" "basename" "bash" "cat" "cp" "cut" "date" "dirname" "du" "env" "find" "grep" "head" "id"
    "ls" "make" "mkdir" "mktemp" "mv" "nice" "nohup" "nproc" "paste" "rm" "sed" "seq" "sha256sum"
    "sleep" "sort" "stdbuf" "tail" "tar" "tee" "timeout" "touch" "tr" "uname" "uniq" "wc" "xargs"
    "gzip" "xz" "install" "readlink" "truncate"
    "nm" "strip"   # stdenv's bintools (cache-server/tests/callgraph.py; a stripped binary in test_why_collect.py)
  ];
  packages = [
    { pkg = pkgs.just; commands = [ "just" ]; }
    { pkg = pkgs.hyperfine; commands = [ "hyperfine" ]; }
    # bench-mem: the memory probe's bandwidth beside likwid-bench's load and update kernels.
    { pkg = pkgs.likwid; commands = [ "likwid-bench" ]; }
    { pkg = pkgs.perf; commands = [ "perf" ]; }
    { pkg = pkgs.numactl; commands = [ "numactl" ]; }
    { pkg = pkgs.hwloc; commands = [ "lstopo-no-graphics" "lstopo" "hwloc-ls" ]; }
    { pkg = pkgs.gnuplot; commands = [ "gnuplot" ]; }
    { pkg = pkgs.util-linux; commands = [ "lscpu" "taskset" "setsid" "setarch" "flock" "prlimit" "mount" "umount" "unshare" "setpriv" "mountpoint" ]; }
    { pkg = pkgs.hostname-debian; commands = [ "hostname" ]; }
    { pkg = pkgs.getconf; commands = [ "getconf" ]; }
    { pkg = pkgs.dmidecode; commands = [ "dmidecode" ]; }
    # vm/initramfs.sh builds the simulated hosts' initramfs (test-multisocket).
    { pkg = pkgs.kmod; commands = [ "modinfo" ]; }
    { pkg = pkgs.glibc.bin; commands = [ "ldd" ]; }
    { pkg = pkgs.cpio; commands = [ "cpio" ]; }
    { pkg = pkgs.zstd; commands = [ "zstd" ]; }
    { pkg = pkgs.jdk17_headless; commands = [ "java" ]; }
    { pkg = pkgs.maven; commands = [ "mvn" ]; }
    { pkg = pkgs.memcached; commands = [ "memcached" ]; }
    { pkg = own.mcperf; commands = [ "mcperf" ]; }
    { pkg = pkgs.cargo; commands = [ "cargo" ]; }
    { pkg = pkgs.rustc; commands = [ "rustc" ]; }
    { pkg = pkgs.clippy; commands = [ "cargo-clippy" ]; }
    { pkg = pkgs.rustfmt; commands = [ "rustfmt" ]; }
    { pkg = pkgs.gcc; commands = [ "gcc" "cc" "g++" ]; }
    # tests/test_import.py builds a real Google Benchmark program (Debian's libbenchmark-dev on ./lab).
    { pkg = pkgs.gbenchmark; commands = [ ]; }
    { pkg = pkgs.clang; commands = [ "clang" ]; }
    { pkg = pkgs.llvm; commands = [ "llvm-symbolizer" ]; }
    { pkg = pkgs.gnumake; commands = [ "make" ]; }
    { pkg = pkgs.pkg-config; commands = [ "pkg-config" ]; }
    { pkg = pkgs.shellcheck; commands = [ "shellcheck" ]; }
    # just lint's Python linter (versions.env pins the same ruff for ./lab).
    { pkg = pkgs.ruff; commands = [ "ruff" ]; }
    { pkg = pkgs.git; commands = [ "git" ]; }
    # fleet/: Ansible drives several hosts over ssh (versions.env pins ansible-core for ./lab; this is
    # nixpkgs' ansible at the pinned rev, whose version each fleet folder records in controller.txt).
    { pkg = pkgs.ansible; commands = [ "ansible" "ansible-playbook" "ansible-inventory" ]; }
    # ssh for Ansible; sshd and ssh-keyscan for tests/test_fleet.py's loopback hosts.
    { pkg = pkgs.openssh; commands = [ "ssh" "ssh-keygen" "ssh-keyscan" "sshd" ]; }
    # nix copy of the shell's store paths to a fleet's Nix hosts (scripts/lab/fleet/nix.py; `nix develop -i`
    # keeps the host's nix out), and nix-store/nix-daemon for tests/test_fleet.py's loopback copy.
    { pkg = pkgs.nix; commands = [ "nix" "nix-store" "nix-daemon" ]; }
    # ip: the route toward a cache point's client host (scripts/lab/fleet/clients.py, "between hosts").
    { pkg = pkgs.iproute2; commands = [ "ip" ]; }
    # why=1: on-CPU and off-CPU stacks and futex waits come from perf (its scheduler tracepoints); inferno
    # folds, diffs and draws them (versions.env pins the same inferno for ./lab).
    { pkg = pkgs.inferno; commands = [ "inferno-collapse-perf" "inferno-diff-folded" "inferno-flamegraph" ]; }
    # The reading side's libraries: statistics and fits (SciPy), report.html (Jinja2), the run format
    # (jsonschema), pyperf's files; versions.env pins the same ones from PyPI for ./lab.
    { pkg = pkgs.python3.withPackages (ps: [ ps.pytest ps.numpy ps.scipy ps.jinja2 ps.jsonschema ps.pyperf ]);
      commands = [ "python3" "pytest" ]; }
  ];
}
