# A KEY=VALUE file (versions.env, an instrument's build.env) as an attribute set, with builtins only,
# so that the lab's tests can evaluate it without nixpkgs. Comment and blank lines are skipped.
path:
let
  lines = builtins.filter builtins.isString (builtins.split "\n" (builtins.readFile path));
  pairs = builtins.filter (m: m != null) (map (builtins.match "([A-Z][A-Z0-9_]*)=(.*)") lines);
in
builtins.listToAttrs (map (m: { name = builtins.elemAt m 0; value = builtins.elemAt m 1; }) pairs)
