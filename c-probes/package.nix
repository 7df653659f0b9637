# The C probes as a nixpkgs package: pkgs.callPackage ./c-probes/package.nix { }
# Installs bin/c2c, bin/counters, bin/channel. Only libc and pthreads are needed.
{ lib, stdenv }:

stdenv.mkDerivation {
  pname = "scaling-lab-c-probes";
  version = "0.1.0";

  src = lib.fileset.toSource {
    root = ./.;
    fileset = lib.fileset.unions [
      ./Makefile
      (lib.fileset.fileFilter (f: f.hasExt "c" || f.hasExt "h") ./.)
    ];
  };

  # The Makefile's own flags (-std=c11 -Wall -Wextra -Werror) stay; CFLAGS only sets optimisation.
  makeFlags = [
    "CC=${stdenv.cc.targetPrefix}cc"
    "CFLAGS=-O2"
    "BUILD=build"
    "PREFIX=${placeholder "out"}"
  ];

  # Unit tests only: the probe runs of tests/run.sh need two free CPUs and sanitizer runtimes.
  doCheck = true;
  checkPhase = ''
    runHook preCheck
    make $makeFlags tests
    build/test_stats
    build/test_ring 200000
    runHook postCheck
  '';

  installTargets = [ "install" ];

  meta = {
    description = "Core-to-core latency, shared vs padded counters and channel-slot probes of the scaling lab";
    platforms = lib.platforms.linux;
    mainProgram = "c2c";
  };
}
