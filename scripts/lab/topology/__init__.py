"""The host's topology and the lab's placements (topo.py)."""
