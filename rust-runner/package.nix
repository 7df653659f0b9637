# The runner (binary `runner`), built from rust-runner/ with the committed Cargo.lock.
# The integration tests skip themselves without RUNNER_IT=1 (they need a live Cassandra), so the
# sandboxed check phase runs the unit tests only.
{ lib, rustPlatform }:

rustPlatform.buildRustPackage {
  pname = "runner";
  version = "0.1.0";
  src = lib.cleanSourceWith {
    src = ./.;
    filter = path: type: baseNameOf path != "target";
  };
  cargoLock.lockFile = ./Cargo.lock;
  meta = {
    description = "Rune-scripted Cassandra benchmark (Latte-compatible workloads) of the scaling lab";
    license = lib.licenses.asl20;
    mainProgram = "runner";
    platforms = lib.platforms.linux;
  };
}
