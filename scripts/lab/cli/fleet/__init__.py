"""Several hosts through Ansible (fleet/): the same sweep on every host of an inventory.

  fleet check inventory=FILE [hosts=PATTERN] [known_hosts=FILE]
  fleet plan  inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [KEY=VALUE…] [experiments/X.spec…]
  fleet sweep inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [poll=SECONDS] [timeout=SECONDS]
              [clients=PATTERN [client_identity=PATH]] [KEY=VALUE…] [experiments/X.spec…]
  fleet cluster-up inventory=FILE [hosts=PATTERN] [known_hosts=FILE] [nodes=N] [plan=1] work=DIR
  fleet cluster-down record=FILE
(python3 -m lab.cli.fleet VERB …: the recipes fleet-check, fleet-plan, fleet-sweep, and cassandra/cluster.sh)

check: reach every host, read its topology (lstopo XML), lscpu, kernel, VM or bare metal: one row per
host; and its history summary (scripts/lab/cli/history.py run there: what its own earlier runs took). plan: the
dry run of the sweep (./lab sweep dry=1) on each host's fetched topology, priced from that host's
history (a summary that is not one is refused by the host's name: that host is priced from the specs'
cost), and the fleet's ETA (the hosts measure at once: the slowest host's). sweep: ship this checkout (git archive of
the commit with the uncommitted diff) to every host, start `./lab sweep` on all of them at once, print
each host's progress, fetch every run folder (a failed host's partial one too) into
results/fleet-<time>/<host>/, and write fleet.md and fleet.html, one column per host. Rerun the same
command to resume: every host's run folder is resumed by the engine (run=), a running one reattached.
Host keys are checked (known_hosts=FILE, else the user's). KEY=VALUE and specs go to every host's sweep.
Nix hosts (lab/fleet/nix.py; the inventory's lab_nix, else nix on the host when this controller is in the
lab's Nix shell) get the shell's store paths by `nix copy` and run their sweep in that shell.
clients=PATTERN (sweep): those hosts run the cache point's load generators: the code is shipped there and
loadgen built (fleet/clients.yml), and each server host's sweep gets `clients=` their names with an ssh
config and their host keys from known_hosts (its own ssh identity reaches them, or the key file at
client_identity=PATH on the server hosts; no key is shipped).
cluster-up, cluster-down: the Ansible half of cassandra/cluster.sh for an inventory's hosts (`./lab cluster-up
inventory=FILE`; cluster.sh keeps the record, cluster.py says how).
Exit: 0 every host complete, 1 a host failed or could not be reached, 2 bad input (nothing run).

One module a verb (this package, scripts/lab/cli/fleet/): check.py, plan.py, sweep.py, cluster.py; common.py holds
their arguments and printer, __main__.py picks the verb.
"""
