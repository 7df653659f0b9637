"""What every fleet verb shares: its arguments, the hosts they select, and the one printer."""
import os
import re

from lab import ROOT
from lab.core.term import visible
from lab.errors import LabError
from lab.fleet.inventory import load, select

FLEET_KEYS = {"inventory": None, "hosts": "all", "known_hosts": None, "poll": "30", "timeout": "172800",
              "clients": None, "client_identity": None}
NOT_HERE = {"run": "each host's run folder is chosen by fleet-sweep (one per fleet sweep, resumed by a rerun)",
            "dry": "use fleet-plan for the dry run", "topology": "fleet-plan reads each host's own topology",
            "history": "fleet-plan reads each host's own history"}


# What a host sends back (its CPU model, kernel, errors, progress) is shown, never obeyed: every line the
# fleet prints goes through term.visible, so a control sequence in it is written out, not run.
def say(msg):
    print(visible(msg, lines=True), flush=True)


def parse(argv):
    """({fleet key: value}, the sweep's own KEY=VALUE and specs); bad input is a LabError, nothing run."""
    keys, sweep_args = dict(FLEET_KEYS), []
    for a in argv:
        if a.endswith(".spec") and "=" not in a:
            rel = os.path.relpath(os.path.abspath(a), ROOT)
            if not os.path.isfile(a) or rel.startswith(".."):
                raise LabError(f"{a}: not a spec file of this lab (every host runs this checkout's experiments/)")
            sweep_args.append(rel)
        elif "=" in a:
            k, v = a.split("=", 1)
            if k in NOT_HERE:
                raise LabError(f"{k}= is not for a fleet: {NOT_HERE[k]}")
            if k in FLEET_KEYS:
                keys[k] = v
            elif re.match(r"^[a-z_][a-z0-9_]*$", k):
                sweep_args.append(a)
            else:
                raise LabError(f"argument {a!r}: expected KEY=VALUE with a lowercase key")
        else:
            raise LabError(f"unknown argument {a!r} (expected KEY=VALUE or experiments/NAME.spec)")
    if not keys["inventory"]:
        raise LabError("inventory=FILE is required (an Ansible inventory: fleet/inventory.example.ini)")
    for k, lo, hi in (("poll", 1, 3600), ("timeout", 60, 30 * 86400)):
        if not keys[k].isdigit() or not lo <= int(keys[k]) <= hi:
            raise LabError(f"{k}={keys[k]!r}: a whole number of seconds from {lo} to {hi}")
    if keys["known_hosts"] and not os.path.isfile(keys["known_hosts"]):
        raise LabError(f"known_hosts={keys['known_hosts']}: no such file")
    return keys, sweep_args


def hosts_of(keys, env):
    """The hosts keys["hosts"] selects in the inventory (InventoryError: one line, file:line)."""
    return select(load(keys["inventory"], env), keys["hosts"], keys["inventory"], env)


def table(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(str(x).ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])
