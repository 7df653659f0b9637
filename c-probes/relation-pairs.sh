#!/usr/bin/env bash
# relation-pairs.sh RELATION K: up to K CPU pairs with that hwloc relation (smt, same-l2, same-l3, cross-l3,
# cross-die, cross-numa, cross-package, cross-kind), spread evenly over the full list, in c2c's --pairs form "a:b,c:d".
# One pair per relation says little on a big host; every pair takes long: K is the middle way.
set -euo pipefail
[[ $# -eq 2 && $2 =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 RELATION K" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/topo.py" pairs "$1" | awk -v k="$2" '
  { p[NR] = $0 }
  END {
    if (NR == 0) exit 2
    n = NR < k ? NR : k
    for (i = 0; i < n; i++) { q = p[1 + int(i * NR / n)]; sub(",", ":", q); printf "%s%s", (i ? "," : ""), q }
    print ""
  }'
