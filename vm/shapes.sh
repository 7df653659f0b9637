# Guest shapes (sourced): shape_args NAME prints QEMU's machine arguments, one per line.
# Each shape is a host this project does not have; what hwloc must see in it is in check.py.
#   2s-numa-smt  2 sockets x 2 cores x 2 threads, a NUMA node per socket (distance 21), an L3 per socket
#   chiplet      1 socket, 4 dies x 2 cores (QEMU 7.2: one L3 per die), 2 NUMA nodes of 2 dies each
#                (an NPS2-like Zen part: same-l3, cross-die inside a node, cross-numa)
# -cpu max,vendor=GenuineIntel: without it the guest sees no SMT (measured with QEMU 7.2 TCG).
# shellcheck shell=bash
SHAPES="2s-numa-smt chiplet"

shape_args() {
  # shellcheck disable=SC2054  # commas are inside QEMU option values
  local mem=(-object memory-backend-ram,id=m0,size=1G -object memory-backend-ram,id=m1,size=1G)
  case $1 in
    2s-numa-smt)
      printf '%s\n' -cpu max,vendor=GenuineIntel -smp 8,sockets=2,dies=1,cores=2,threads=2 -m 2G "${mem[@]}" \
        -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1 \
        -numa dist,src=0,dst=1,val=21 ;;
    chiplet)
      printf '%s\n' -cpu max,vendor=GenuineIntel -smp 8,sockets=1,dies=4,cores=2,threads=1 -m 2G "${mem[@]}" \
        -numa node,nodeid=0,cpus=0-3,memdev=m0 -numa node,nodeid=1,cpus=4-7,memdev=m1 \
        -numa dist,src=0,dst=1,val=12 ;;
    *) echo "unknown shape '$1' (known: $SHAPES)" >&2; return 2 ;;
  esac
}
