"""why=1's measuring half: where evidence runs go (points), how they are recorded (collect, pmu), folded
(fold), kept or redone (gate), and the evidence folder's format (store). The reading half is lab.why."""
