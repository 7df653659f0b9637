# versions.env as a Nix attribute set: the pins ./lab reads, read here too, with builtins only
# (so that the lab's tests can evaluate it without fetching nixpkgs).
let
  lines = builtins.filter builtins.isString (builtins.split "\n" (builtins.readFile ../versions.env));
  pairs = builtins.filter (m: m != null) (map (builtins.match "([A-Z_]+)=(.*)") lines);
in
builtins.listToAttrs (map (m: { name = builtins.elemAt m 0; value = builtins.elemAt m 1; }) pairs)
