"""The two ways in: README shows both commands, CI runs exactly the README's test command, every recipe
is documented, and ./lab is quiet when everything is installed."""
import os
import re

from conftest import ROOT, sh


def test_ci_runs_the_readme_test_command_and_nothing_else():
    readme = open(os.path.join(ROOT, "README.md")).read()
    for cmd in ("./lab sweep", "./lab test", "nix develop", "just sweep", "just test"):
        assert cmd in readme, cmd
    ci = [ln.strip() for ln in open(os.path.join(ROOT, ".ci", "run"))
          if ln.strip() and not ln.startswith("#") and not ln.startswith("set ") and not ln.startswith("cd ")]
    assert ci == ["./lab test"]


def test_every_recipe_is_documented():
    listing = sh("just", "--list", "--unsorted").stdout
    recipes = [ln for ln in listing.splitlines() if ln.startswith("    ") and not ln.strip().startswith("[")]
    assert len(recipes) > 10
    undocumented = [r.strip() for r in recipes if r.strip() and "#" not in r]
    assert undocumented == []


def test_lab_is_quiet_and_idempotent_when_everything_is_installed():
    p = sh("./lab", "--list")
    assert not re.search(r"^lab: (installing|creating)", p.stderr, re.M), p.stderr
    assert "sweep" in p.stdout
