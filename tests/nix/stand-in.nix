# A small stand-in for nixpkgs (this host cannot fetch it): the parts of lib and pkgs that flake.nix and
# the package.nix files use, each recording what it is given instead of building anything, so that
# tests/test_nix_eval.py can evaluate the flake's real outputs with `nix-instantiate --eval` and check
# what every derivation would receive (src files, makeFlags, hardeningDisable, the shell's packages).
# Package attributes that the flake reads from nixpkgs are listed by name; a name missing here fails
# the evaluation with "attribute missing", which is the point: the list is the flake's claim.
{ system ? "x86_64-linux" }:
let
  inherit (builtins) attrNames concatMap filter isList listToAttrs map readDir stringLength substring toString;

  hasPrefix = p: s: substring 0 (stringLength p) s == p;
  hasSuffix = x: s: let n = stringLength s; k = stringLength x; in n >= k && substring (n - k) k s == x;

  # Every regular file under a path, as absolute path strings (a fileset is a list of those here).
  filesUnder = p:
    let s = toString p; in
    if (readDir (dirOf s)).${baseNameOf s} or "missing" == "directory" then
      concatMap (n: let t = (readDir s).${n}; in
        if t == "directory" then filesUnder "${s}/${n}" else [ "${s}/${n}" ]) (attrNames (readDir s))
    else [ s ];
  toSet = x: if isList x then x else filesUnder x;
  uniq = l: attrNames (listToAttrs (map (n: { name = n; value = null; }) l));

  fileset = {
    unions = sets: uniq (concatMap toSet sets);
    # b: a path (everything under it goes) or a list of files; a missing path removes nothing.
    difference = a: b:
      let gone = if isList b then b else [ (toString b) ]; in
      filter (f: !(builtins.any (d: f == d || hasPrefix "${d}/" f) gone)) (toSet a);
    maybeMissing = p: if builtins.pathExists p then p else [ ];
    fileFilter = pred: root: filter (f:
      let name = baseNameOf f; in pred { inherit name; type = "regular"; hasExt = e: hasSuffix ".${e}" name; })
      (filesUnder root);
    toSource = { root, fileset }:
      let
        r = toString root;
        files = toSet fileset;
        outside = filter (f: !(hasPrefix "${r}/" f)) files;
      in
      assert outside == [ ] || throw "fileset.toSource: ${builtins.head outside} is not under ${r}";
      {
        name = "source";
        outPath = "/nix/store/stand-in-source";
        standIn = "source";
        root = r;
        files = map (f: substring (stringLength r + 1) (stringLength f) f) files;
      };
  };

  lib = {
    inherit fileset;
    genAttrs = names: f: listToAttrs (map (n: { name = n; value = f n; }) names);
    optionalAttrs = c: a: if c then a else { };
    optionalString = c: s: if c then s else "";
    assertMsg = c: msg: c || throw msg;
    filter = builtins.filter;
    inherit hasPrefix;
    replaceStrings = builtins.replaceStrings;
    splitString = sep: s: filter builtins.isString (builtins.split sep s);
    licenses.asl20 = "asl20";
    platforms.linux = [ "x86_64-linux" "aarch64-linux" ];
  };

  # A derivation that remembers its arguments; outPath keeps string interpolation working.
  drv = kind: attrs: {
    type = "derivation";
    standIn = kind;
    name = attrs.name or "${attrs.pname or kind}-${attrs.version or "0"}";
    outPath = "/nix/store/stand-in-${attrs.pname or attrs.name or kind}";
    args = attrs;
  };
  tool = name: drv "tool" { pname = name; };

  callPackage = path: extra:
    let f = import path; in f (builtins.intersectAttrs (builtins.functionArgs f) pkgs // extra);

  gcc = tool "gcc" // { isGNU = true; isClang = false; targetPrefix = ""; };

  pkgs = lib.genAttrs [
    "just" "hyperfine" "likwid" "perf" "numactl" "hwloc" "gnuplot" "util-linux" "hostname-debian" "getconf"
    "dmidecode" "jdk17_headless" "maven" "memcached" "cargo" "rustc" "clippy" "rustfmt" "clang" "llvm"
    "gnumake" "pkg-config" "shellcheck" "git" "autoreconfHook" "kmod" "cpio" "zstd" "ansible" "openssh" "iproute2"
    "nix" "inferno" "gbenchmark" "ruff"
  ] tool // {
    inherit lib callPackage gcc;
    glibc = tool "glibc" // { bin = tool "glibc-bin"; };
    stdenv = {
      cc = gcc;
      hostPlatform.system = system;
      mkDerivation = drv "stdenv.mkDerivation";
    };
    rustPlatform.buildRustPackage = drv "rustPlatform.buildRustPackage";
    mkShell = drv "mkShell";
    python3 = tool "python3" // {
      withPackages = f: drv "python3.withPackages" { pname = "python3-env"; extra = map (p: p.args.pname) (f (lib.genAttrs [ "pytest" "numpy" "scipy" "jinja2" "jsonschema" "pyperf" ] tool)); };
    };
    fetchFromGitHub = a: { standIn = "fetchFromGitHub"; outPath = "/nix/store/stand-in-github"; } // a;
    fetchurl = a: { standIn = "fetchurl"; outPath = "/nix/store/stand-in-fetchurl"; } // a;
    linkFarm = name: entries: drv "linkFarm" { inherit name entries; };
  };
in
{
  inherit lib;
  legacyPackages = lib.genAttrs [ "x86_64-linux" "aarch64-linux" ] (s: pkgs);
}
