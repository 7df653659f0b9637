"""What every part uses: the run folder, the tidy CSV, statistics, terminal text."""
