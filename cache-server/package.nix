# The cache server and its load generator as a nixpkgs package:
#   pkgs.callPackage ./cache-server/package.nix { }
# Installs bin/cache-server and bin/cache-loadgen. Only libc and pthreads are needed.
{ lib, stdenv }:

let
  # Compiler and flags come from build.env, which the Makefile includes: the Debian path builds the
  # same way. The stdenv must bring that compiler (`gcc` on its PATH).
  build = import ../nix/read-env.nix ./build.env;
in
assert lib.assertMsg (build.CC != "gcc" || stdenv.cc.isGNU)
  "cache-server/build.env says CC=${build.CC}, but this stdenv's compiler is not gcc";
stdenv.mkDerivation {
  pname = "scaling-lab-cache-server";
  version = "0.1.0";

  src = lib.fileset.toSource {
    root = ./.;
    fileset = lib.fileset.unions [
      ./Makefile
      ./build.env
      ./src
      ./loadgen
      ./tests/test_proto.c
      ./tests/test_hist.c
    ];
  };

  # No compiler or flags here: they are build.env's (the Makefile adds -std=gnu11 -Wall -Wextra
  # -Werror -D_GNU_SOURCE). stdenv splits makeFlags on spaces, so no entry may contain one
  # (tests/test_nix_packages.py builds this package as stdenv would). `all` builds the server, the
  # load generator and the protocol unit tests.
  makeFlags = [ "PREFIX=${placeholder "out"}" ];

  # A benchmark binary is the code build.env asks for, as on Debian: none of nixpkgs' hardening flags.
  hardeningDisable = [ "all" ];

  # Protocol unit tests only (no sockets, fine in the sandbox). The differential test needs a
  # running memcached and the sanitizer/fuzz runs need their runtimes: those are `just test-cache`.
  doCheck = true;
  checkPhase = ''
    runHook preCheck
    for mode in global striped rwlock optimistic sharded; do
      build/test-proto "$mode"
    done
    build/test-hist
    runHook postCheck
  '';

  installTargets = [ "install" ];

  passthru.buildEnv = build;

  meta = {
    description = "memcached-protocol cache server with switchable lock modes, and a closed/open-loop load generator (scaling lab, seed 001)";
    platforms = lib.platforms.linux;
    mainProgram = "cache-server";
  };
}
