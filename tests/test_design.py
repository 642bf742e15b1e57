"""What a plan can resolve before it runs (pgfslab.analysis.design): the runs per cell and the smallest ratio
the verdicts' exact rank interval resolves, with alpha split over a claim's primary cells."""

from __future__ import annotations

import math

from pgfslab.analysis import design
from pgfslab.config.study import Study, validate


def test_too_few_runs_can_never_resolve_anything() -> None:
    # 3+3 runs: the smallest two-sided exact p is 2 / C(6, 3) = 0.1 > 0.05; 4+4: 2 / C(8, 4) = 0.029, below 0.05
    # but above 0.025, so two primary cells (alpha 0.025 each) cannot decide with 4+4 either
    assert design.smallest_ratio(3, 3, 0.1, 0.05) == math.inf
    assert math.isfinite(design.smallest_ratio(4, 4, 0.1, 0.05))
    assert design.smallest_ratio(4, 4, 0.1, 0.025) == math.inf
    # more runs resolve smaller effects, and more noise larger ones
    assert design.smallest_ratio(10, 10, 0.1, 0.05) < design.smallest_ratio(6, 6, 0.1, 0.05)
    assert design.smallest_ratio(10, 10, 0.2, 0.05) > design.smallest_ratio(10, 10, 0.1, 0.05)


def test_the_plan_says_per_cell_and_claim_what_it_can_resolve() -> None:
    cfg = {
        "study": "t",
        "seeds": ["004"],
        "targets": {"ext4": {"fs": "ext4"}, "btrfs": {"fs": "btrfs"}},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 8], "repeats": 3}},
        "run": {"duration_s": 30},
    }
    study = Study.from_dict(validate(cfg, "t.yaml"))
    cells = design.cells(study)
    assert cells["runs_per_target"].to_list() == [3, 3]
    assert set(cells["sigma_from"]) == {"default"} and set(cells["sigma"]) == {design.DEFAULT_SIGMA}
    # 3 runs x 2 targets x (30 s + the stated overhead) per cell
    assert cells["minutes"][0] == 3 * 2 * (30 + design.RUN_OVERHEAD_S) / 60
    text = design.report(study)
    assert "smallest B/A inf" in text and "s004-btrfs-2x-ext4-magnetic" in text and "CANNOT resolve it" in text
