# The runner (binary `runner`), built from rust-runner/ with the committed Cargo.lock.
# How it is built is Cargo.toml's [profile.release], which cargo reads on both paths; nothing here
# adds to it (no RUSTFLAGS, no features), and nixpkgs' hardening of the link is off, as on Debian.
{ lib, rustPlatform }:

let
  fs = lib.fileset;
  # The crate and the workloads its tests run (tests/it/interrupt.rs runs ../workloads/empty.rn from the
  # crate's parent folder), laid out as in the repository; the build happens in rust-runner/.
  src = fs.toSource {
    root = ../.;
    fileset = fs.unions [
      (fs.difference ./. (fs.maybeMissing ./target))
      ../workloads
    ];
  };
in
rustPlatform.buildRustPackage {
  pname = "runner";
  version = "0.1.0";

  inherit src;
  sourceRoot = "${src.name}/rust-runner";
  cargoLock.lockFile = ./Cargo.lock;

  buildType = "release";
  hardeningDisable = [ "all" ];

  # tests/it/cassandra.rs skips itself without RUNNER_IT=1 (it needs a live Cassandra), so the
  # sandboxed check phase runs the unit tests and the offline integration tests (no server needed).
  meta = {
    description = "Rune-scripted Cassandra benchmark (Latte-compatible workloads) of the scaling lab";
    license = lib.licenses.asl20;
    mainProgram = "runner";
    platforms = lib.platforms.linux;
  };
}
