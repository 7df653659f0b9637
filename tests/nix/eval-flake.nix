# The flake's outputs for one system, evaluated against tests/nix/stand-in.nix, as plain data (no
# derivation objects) for `nix-instantiate --eval --strict --json`.
{ root, system ? "x86_64-linux" }:
let
  flake = import (root + "/flake.nix");
  nixpkgs = import ./stand-in.nix { inherit system; };
  self = flake.outputs { inherit self nixpkgs; };
  plain = d: builtins.removeAttrs d.args [ "src" "meta" "passthru" "cargoLock" ] // {
    mainProgram = d.args.meta.mainProgram or null;
    standIn = d.standIn;
    src = if d.args ? src then builtins.removeAttrs d.args.src [ "outPath" ] else null;
    hasPassthru = d.args ? passthru;
    cargoLockFile = if d.args ? cargoLock then toString d.args.cargoLock.lockFile else null;
  };
  packages = self.packages.${system};
  shell = self.devShells.${system}.default.args;
in
{
  packages = builtins.mapAttrs (n: d: if n == "cassandra-jars" then { standIn = d.standIn; } else plain d) packages;
  placeholderOut = builtins.placeholder "out";
  shell = {
    packages = map (p: p.args.pname or p.name) shell.packages;
    pythonWith = builtins.concatMap (p: p.args.extra or [ ]) shell.packages;
    inherit (shell) hardeningDisable shellHook;
  };
  shellCommands =
    let s = import (root + "/nix/shell.nix") { pkgs = nixpkgs.legacyPackages.${system}; own = packages; }; in
    { stdenv = s.stdenv; packages = map (p: { package = p.pkg.args.pname or p.pkg.name; inherit (p) commands; }) s.packages; };
}
