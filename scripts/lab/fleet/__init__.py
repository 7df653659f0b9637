"""Several hosts through Ansible (fleet/): the inventory, running a playbook and reading what it did,
the code shipped to every host, and the fleet folder results/fleet-<time>/. scripts/lab/cli/fleet/ tells
the story; nothing here times a measurement (each host's own engine does)."""
