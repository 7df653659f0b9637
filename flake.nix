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
        # The load generator of the cross-check: built as our own instruments are, without hardening.
        hardeningDisable = [ "all" ];
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
          shell = import ./nix/shell.nix { inherit pkgs own; };
          # The C instruments' compiler, from their build.env (the Makefiles include it too); both
          # must name the same one, which the shell then makes the default CC.
          cc = (import ./nix/read-env.nix ./c-probes/build.env).CC;
        in
        assert lib.assertMsg (cc == (import ./nix/read-env.nix ./cache-server/build.env).CC)
          "c-probes/build.env and cache-server/build.env name different compilers";
        {
          default = pkgs.mkShell {
            packages = map (p: p.pkg) shell.packages;
            # Benchmark binaries built in the shell are the code build.env asks for, as on Debian:
            # none of nixpkgs' hardening flags from the compiler wrappers.
            hardeningDisable = [ "all" ];
            # Cassandra's locked jar set, fetched by Nix instead of by the Maven step of ./lab;
            # cassandra/cassandra.sh reads CASSANDRA_LIB and JAVA. CC: clang's setup hook runs after
            # gcc's and would make clang the default; the shellHook runs after every setup hook.
            shellHook = lib.optionalString (own ? cassandra-jars) ''
              export CASSANDRA_LIB=${own.cassandra-jars}
            '' + ''
              export JAVA=${pkgs.jdk17_headless}/bin/java
              export CC=${cc}
              export LAB_NIX_PINNED_NIXPKGS=${versions.NIXPKGS_REV}
            '';
          };
        });
    };
}
