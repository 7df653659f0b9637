# versions.env as a Nix attribute set: the pins ./lab reads, read here too, with builtins only
# (so that the lab's tests can evaluate it without fetching nixpkgs).
import ./read-env.nix ../versions.env
