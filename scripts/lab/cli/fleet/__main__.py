"""python3 -m lab.cli.fleet VERB …: picks the verb (one module each, beside this one) after the arguments
every verb shares are checked; the usage is the package's docstring."""
import sys

import lab.cli.fleet as package
from lab.cli.fleet import check, cluster, plan, sweep
from lab.cli.fleet.common import parse
from lab.errors import LabError, program, run
from lab.fleet import play

VERBS = {"check": check.main, "plan": plan.main, "sweep": sweep.main, "cluster-up": cluster.up}


@program("fleet: error")
def main(argv):
    if argv and argv[0] == "cluster-down":
        return cluster.down(argv[1:])
    if not argv or argv[0] not in VERBS:
        print(package.__doc__.strip(), file=sys.stderr)
        return 2
    if argv[0] == "cluster-up" and not any(a.startswith("hosts=") for a in argv[1:]):
        argv = argv + ["hosts=cassandra"]
    keys, args = parse(argv[1:])
    if argv[0] == "check" and args:
        raise LabError(f"check takes inventory=, hosts= and known_hosts= only, not {args[0]!r}")
    if argv[0] != "sweep" and (keys["clients"] or keys["client_identity"]):
        raise LabError("clients= and client_identity= are fleet-sweep's (the cache experiment's load generators)")
    if keys["client_identity"] and not keys["clients"]:
        raise LabError("client_identity= goes with clients=GROUP")
    env = play.environment(keys["known_hosts"])
    try:
        return VERBS[argv[0]](keys, args, env)
    except KeyboardInterrupt:
        # The hosts' sweeps are detached: they go on, and the same command follows them again.
        print("fleet: interrupted; sweeps already started go on, on their hosts: run the same command again "
              "to follow them and fetch their run folders", file=sys.stderr)
        return 130


if __name__ == "__main__":
    run(main)
