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


def _study(rw: dict[str, object], seeds: tuple[str, ...] = ("004",)) -> Study:
    cfg = {
        "study": "t",
        "seeds": list(seeds),
        "targets": {"ext4": {"fs": "ext4"}, "btrfs": {"fs": "btrfs"}},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 8], **rw}},
        "run": {"duration_s": 30},
    }
    return Study.from_dict(validate(cfg, "t.yaml"))


def test_a_claim_resting_on_a_cell_without_an_interval_is_refused_before_anything_runs() -> None:
    import pytest

    from pgfslab.errors import LabError

    # 3 runs per target at 1 and at 8 clients: seed 004's crossover claims match tpcb-like at any client count
    bad = design.undecidable(_study({"repeats": 3}))
    assert bad and all("cannot give a 95 % interval" in b and "(3 runs per target)" in b for b in bad)
    assert any(b.startswith("s004-one-client-no-crossover: its primary cell rw/c=1 ") for b in bad)
    with pytest.raises(LabError, match=r"t\.yaml: the plan cannot decide what its seeds claim"):
        design.refuse_undecidable(_study({"repeats": 3}), "t.yaml")
    # 4 runs give an interval at 95 %: not refused (a claim with several primary cells may still not resolve its
    # Bonferroni-adjusted level; the report says so)
    assert design.undecidable(_study({"repeats": 4})) == []
    # the same 3-run cells kept as context, with a reason: no claim rests on them, so nothing to refuse
    kept = _study({"repeats": 3, "context": {"why": "shown beside the seed study that decides it"}})
    assert design.undecidable(kept) == []
    assert "context, not a claim's primary cell: shown beside" in design.report(kept)
    # only the 1-client cell as context: the 8-client one still carries the claims and is refused
    one = design.undecidable(_study({"repeats": 3, "context": {"why": "the 1-client cell is shown", "clients": [1]}}))
    assert one and all("rw/c=8" in b and "rw/c=1 " not in b for b in one)
    assert len(one) == len(bad) - 1  # the 1-client claim has no primary cell left to rest on
    # no seeds: nothing claimed, nothing to refuse
    assert design.undecidable(_study({"repeats": 1}, seeds=())) == []


def test_context_clients_must_be_the_workloads_own() -> None:
    import pytest

    from pgfslab.errors import LabError

    with pytest.raises(LabError, match=r"workloads\.rw\.context\.clients: \[4\] not among the workload's clients"):
        _study({"repeats": 4, "context": {"why": "shown, never judged here", "clients": [4]}})
    with pytest.raises(LabError, match="context"):
        _study({"repeats": 4, "context": {"clients": [1]}})  # a context cell says why


def test_a_claim_whose_sides_are_client_counts_uses_only_those_cells() -> None:
    cfg = {
        "study": "t",
        "seeds": ["002"],
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {
            "rw": {
                "tool": "sysbench",
                "test": "oltp_read_write",
                "clients": [1, 4, 64],
                "repeats": {"1": 4, "4": 1, "64": 4},
            }
        },
    }
    study = Study.from_dict(validate(cfg, "t.yaml"))
    per_claim = design.claims(study, design.cells(study)).filter(
        design.pl.col("claim") == "s002-variance-grows-with-threads"
    )
    assert per_claim["cells"].to_list() == ["rw/c=1, rw/c=64"]  # 1 against 64 threads: the 4-thread cell is neither
