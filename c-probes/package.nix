# The C probes as a nixpkgs package: pkgs.callPackage ./c-probes/package.nix { }
# Installs bin/c2c, bin/counters, bin/channel, bin/mem, bin/capacity, bin/rusage. Only libc and pthreads are needed.
{ lib, stdenv }:

let
  # Compiler and flags come from build.env, which the Makefile includes: the Debian path builds the
  # same way. The stdenv must bring that compiler (`gcc` on its PATH).
  build = import ../nix/read-env.nix ./build.env;
in
assert lib.assertMsg (build.CC != "gcc" || stdenv.cc.isGNU)
  "c-probes/build.env says CC=${build.CC}, but this stdenv's compiler is not gcc";
stdenv.mkDerivation {
  pname = "scaling-lab-c-probes";
  version = "0.1.0";

  src = lib.fileset.toSource {
    root = ./.;
    fileset = lib.fileset.unions [
      ./Makefile
      ./build.env
      (lib.fileset.fileFilter (f: f.hasExt "c" || f.hasExt "h") ./.)
    ];
  };

  # No compiler or flags here: they are build.env's. stdenv splits makeFlags on spaces, so no entry
  # may contain one (tests/test_nix_packages.py builds this package as stdenv would).
  makeFlags = [
    "BUILD=build"
    "PREFIX=${placeholder "out"}"
  ];

  # A benchmark binary is the code build.env asks for, as on Debian: none of nixpkgs' hardening flags.
  hardeningDisable = [ "all" ];

  # Unit tests only: the probe runs of tests/run.sh need two free CPUs and sanitizer runtimes.
  doCheck = true;
  checkPhase = ''
    runHook preCheck
    make $makeFlags tests
    build/test_stats
    build/test_ring 200000
    build/test_chase
    runHook postCheck
  '';

  installTargets = [ "install" ];

  passthru.buildEnv = build;

  meta = {
    description = "Core-to-core latency, shared vs padded counters, channel-slot and NUMA memory probes of the scaling lab";
    platforms = lib.platforms.linux;
    mainProgram = "c2c";
  };
}
