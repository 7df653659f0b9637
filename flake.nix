{
  description = "The scaling lab: reproducible benchmarks of multi-socket and chiplet scaling problems";

  # Pinned in flake.lock (nixos-25.11 at 8fd9daa3…); versions.env names the same rev for the non-Nix path.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.11";

  outputs = { self, nixpkgs }:
    let
      lib = nixpkgs.lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAll = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # versions.env is read by ./lab too: one list of pins for both paths.
      versions = import ./nix/versions.nix;

      # An instrument's package exists once its folder brings a package.nix.
      optionalPackage = pkgs: name: path:
        lib.optionalAttrs (builtins.pathExists path) { ${name} = pkgs.callPackage path { }; };

      # mcperf (twemperf) for the cache sweep's cross-check; Debian does not package it.
      mcperf = pkgs: pkgs.stdenv.mkDerivation {
        pname = "mcperf";
        version = "0.1.1-unstable-${builtins.substring 0 7 versions.MCPERF_REV}";
        src = pkgs.fetchFromGitHub {
          owner = "twitter-archive";
          repo = "twemperf";
          rev = versions.MCPERF_REV;
          hash = "sha256-ZEYtI3v8/xcxMWSPmhR7qHyPy7s/bHeODMudBSnYUwg=";
        };
        nativeBuildInputs = [ pkgs.autoreconfHook ];
        meta.mainProgram = "mcperf";
      };
    in
    {
      packages = forAll (pkgs:
        { mcperf = mcperf pkgs; }
        // optionalPackage pkgs "c-probes" ./c-probes/package.nix
        // optionalPackage pkgs "cache-server" ./cache-server/package.nix
        // optionalPackage pkgs "runner" ./rust-runner/package.nix
        // optionalPackage pkgs "cassandra-jars" ./cassandra/jars.nix);

      devShells = forAll (pkgs:
        let
          own = self.packages.${pkgs.stdenv.hostPlatform.system};
        in
        {
          default = pkgs.mkShell {
            packages = with pkgs; [
              just hyperfine linuxPackages.perf numactl hwloc gnuplot util-linux
              jdk17_headless maven memcached own.mcperf
              cargo rustc clippy rustfmt
              gcc clang llvm gnumake pkg-config
              shellcheck git (python3.withPackages (ps: [ ps.pytest ]))
            ];
            # Cassandra's locked jar set, fetched by Nix instead of by the Maven step of ./lab;
            # cassandra/cassandra.sh reads CASSANDRA_LIB and JAVA.
            shellHook = lib.optionalString (own ? cassandra-jars) ''
              export CASSANDRA_LIB=${own.cassandra-jars}
            '' + ''
              export JAVA=${pkgs.jdk17_headless}/bin/java
              export LAB_NIX_PINNED_NIXPKGS=${versions.NIXPKGS_REV}
            '';
          };
        });
    };
}
