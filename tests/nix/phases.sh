#!/usr/bin/env bash
# The build, check and install phases that nixpkgs' stdenv.mkDerivation runs for a Makefile package,
# replayed here on this host's toolchain (tests/test_nix_packages.py). The derivation's attributes
# arrive as environment variables, as Nix passes them without structuredAttrs: a list attribute
# (makeFlags, installTargets) becomes one string of its elements joined by spaces.
set -euo pipefail

runHook() { :; }   # the lab's packages define no hooks

# stdenv's rule for collecting flags: an array is taken whole, a plain string is split on
# whitespace (this is what turned "CFLAGS=-O2 -g" into a bare -g for make).
collect() {
  local -n into=$1
  shift
  local name
  for name in "$@"; do
    if [[ $(declare -p "$name" 2>/dev/null) == "declare -a"* ]]; then
      local -n arr=$name
      into+=("${arr[@]}")
      unset -n arr
    elif [[ -n ${!name-} ]]; then
      local -a words
      set -f
      # shellcheck disable=SC2206  # word splitting is the point
      words=(${!name})
      set +f
      into+=("${words[@]}")
    fi
  done
}

flags=(${enableParallelBuilding:+-j${NIX_BUILD_CORES}} SHELL="$SHELL")
collect flags makeFlags makeFlagsArray buildFlags buildFlagsArray
echo "build flags: ${flags[*]}" >&2
make "${flags[@]}"

if [[ -n ${doCheck-} ]]; then
  if [[ -n ${checkPhase-} ]]; then
    eval "$checkPhase"
  else
    flags=(SHELL="$SHELL")
    collect flags makeFlags makeFlagsArray checkFlags checkFlagsArray
    make "${flags[@]}" "${checkTarget:-check}"
  fi
fi

flags=(SHELL="$SHELL")
collect flags makeFlags makeFlagsArray installFlags installFlagsArray
# shellcheck disable=SC2206
flags+=(${installTargets:-install})
echo "install flags: ${flags[*]}" >&2
make "${flags[@]}"
