# The cache server and its load generator as a nixpkgs package:
#   pkgs.callPackage ./cache-server/package.nix { }
# Installs bin/cache-server and bin/cache-loadgen. Only libc and pthreads are needed.
{ lib, stdenv }:

stdenv.mkDerivation {
  pname = "scaling-lab-cache-server";
  version = "0.1.0";

  src = lib.fileset.toSource {
    root = ./.;
    fileset = lib.fileset.unions [
      ./Makefile
      ./src
      ./loadgen
      ./tests/test_proto.c
      ./tests/test_hist.c
    ];
  };

  # The Makefile's own flags (-std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE) stay; CFLAGS only
  # sets optimisation. `all` builds the server, the load generator and the protocol unit tests.
  makeFlags = [
    "CC=${stdenv.cc.targetPrefix}cc"
    "CFLAGS=-O2 -g"
    "PREFIX=${placeholder "out"}"
  ];

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

  meta = {
    description = "memcached-protocol cache server with switchable lock modes, and a closed/open-loop load generator (scaling lab, seed 001)";
    platforms = lib.platforms.linux;
    mainProgram = "cache-server";
  };
}
