"""report.md sets the published figure beside the measured one, with ratio and shape verdict."""
import os
import sys

from conftest import ROOT, sh


def make_run(tmp_path, values):
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    for (variant, threads), xs in values.items():
        for i, x in enumerate(xs, 1):
            lines.append(f"r,runner-empty,{variant},compact,{threads},0,{i},calls_per_s,{x},1/s")
    (run / "data" / "runner-empty.csv").write_text("\n".join(lines) + "\n")
    return run


def test_published_beside_measured_with_ratio_and_shape(tmp_path):
    # Report input (not measurements): per-thread doubles, shared-arc falls.
    run = make_run(tmp_path, {("per-thread", 1): [4e6, 4.1e6, 3.9e6], ("per-thread", 2): [8e6, 7.9e6, 8.1e6],
                              ("shared-arc", 1): [4e6, 4e6, 4e6], ("shared-arc", 2): [2.2e6, 2.3e6, 2.1e6]})
    sh("scripts/report.py", str(run))
    text = (run / "report.md").read_text()
    # seed 000's Xeon: per-thread 2 threads = 2.65M; measured 8M → ratio 3.02.
    assert "| seed-000 | 2x Xeon E5-2650L v3 24C/48T 1.8GHz | per-thread | 2 | calls_per_s | 2.65 M 1/s | 8 M 1/s (compact) | 3.02 |" in text
    assert "| per-thread | 1 → 2 | ×1.96 (near-linear) | ×2.00 (near-linear) | yes |" in text
    assert "| shared-arc | 1 → 2 | ×1.44 (sublinear) | ×0.55 (flat or falling) | no |" in text
    assert "| per-thread | compact | 2 | 0 | calls_per_s | 8 M | 7.9 M – 8.1 M | 2.5% | 3 | 1/s |" in text


def test_published_ratios_between_variants_use_the_variant_map(tmp_path):
    # Report input: padded slots 2x slower than unpadded on same-l3; cross-l3 never measured.
    run = tmp_path / "run"
    for d in ("data", "plots", "env", "sweep/specs"):
        (run / d).mkdir(parents=True)
    lines = ["run_id,experiment,variant,placement,threads,cpus,repeat,metric,value,unit"]
    for variant, x in (("unpadded", 10), ("padded", 20)):
        for i in (1, 2, 3):
            lines.append(f"r,channel,{variant},same-l3,2,\"0,1\",{i},ns_per_msg,{x},ns")
    (run / "data" / "channel.csv").write_text("\n".join(lines) + "\n")
    (run / "sweep" / "specs" / "channel.spec").write_text("experiment = channel\nchart = bars ns_per_msg\n")
    sh("scripts/report.py", str(run))
    text = (run / "report.md").read_text()
    # seed 004: padded same-ccx 630 us / unpadded same-ccx 818 us = 0.77 (lower); here 2.00 (higher).
    assert ("| padded same-ccx (0->1) ÷ unpadded same-ccx (0->1) | 2 | ×0.77 (lower) | ×2.00 (higher) | no |"
            in text)
    assert "| ×3.47 (higher) | not measured here (unpadded cross-l3) | – |" in text
    # The spec's chart has no PNG in this folder: the report names no image it does not have.
    assert "![" not in text


def test_numbers_have_three_significant_digits_and_a_prefix():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from report import fmt
    assert [fmt(x) for x in (1.02e9, 9330, 26.34, 11800, 8e6, 999999, float("nan"))] == \
        ["1.02 G", "9330", "26.3", "11.8 k", "8 M", "1 M", "–"]
