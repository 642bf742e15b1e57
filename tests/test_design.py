"""What a plan can resolve before it runs (pgfslab.analysis.design): the runs per cell and the smallest ratio
the verdicts' exact rank interval resolves, with alpha split over a claim's primary cells."""

from __future__ import annotations

import math

import polars as pl

from pgfslab.analysis import design
from pgfslab.config.study import Study, load_study, validate


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
    assert bad and all("cannot give" in b and "(3 runs per target)" in b for b in bad)
    assert any(b.startswith("s004-ext4-faster-small-scale: its primary cell rw/c=8 ") for b in bad)
    # the one-client claim is an interaction across memory regimes: without a ladder it has no cell to rest on
    assert not any(b.startswith("s004-one-client-no-crossover") for b in bad)
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
    # 1 against 64 threads on the one target: one cell; the 4-thread cell is neither side
    assert per_claim["cells"].to_list() == ["rw/c=1 on ext4 against rw/c=64 on ext4"]


def _ladder(workloads: dict[str, object]) -> Study:
    """Seed 004's design: scale 15 (about 230 MB) fits a 512 MiB limit, scale 60 (about 900 MB) does not."""
    cfg = {
        "study": "t",
        "seeds": ["004"],
        "targets": {"ext4": {"fs": "ext4"}, "btrfs": {"fs": "btrfs"}},
        "postgres": {"settings": {"shared_buffers": "32MB"}},
        "ladder": {"scales": [15, 60], "memory_limit_mb": 512},
        "workloads": workloads,
        "run": {"duration_s": 30, "repeats": 5},
    }
    return Study.from_dict(validate(cfg, "t.yaml"))


def test_a_ladders_cells_are_per_rung_and_placed_in_their_memory_regime() -> None:
    """The plan counted a workload's runs over both rungs as one cell (10 runs per target), while the verdicts
    compare each rung's 5 on its own: it promised effects twice as small as the runs can resolve."""
    study = _ladder({"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [8]}})
    cells = design.cells(study)
    assert cells.select("cell", "runs_per_target", "regime").rows() == [
        ("rw/c=8/d1", 5, "fits_ram"),
        ("rw/c=8/d2", 5, "exceeds_ram"),
    ]
    per_claim = {r["claim"]: r for r in design.claims(study, cells).iter_rows(named=True)}
    # a claim about the regime beyond memory rests on the rung beyond memory only, at the level of one cell
    assert per_claim["s004-btrfs-overtakes-ext4-beyond-ram"]["cells"] == "rw/c=8/d2"
    assert per_claim["s004-btrfs-overtakes-ext4-beyond-ram"]["smallest_ratio"] == design.smallest_ratio(
        5, 5, design.DEFAULT_SIGMA, 0.05
    )
    assert per_claim["s004-ext4-faster-small-scale"]["cells"] == "rw/c=8/d1"
    # the gain from one regime to the other is one cell of the two rungs: a ratio of ratios, sqrt(2) the noise
    gains = per_claim["s004-btrfs-gains-beyond-ram"]
    assert gains["cells"] == "rw/c=8/d1 against rw/c=8/d2"
    assert gains["smallest_ratio"] == design.smallest_ratio(5, 5, design.DEFAULT_SIGMA * 2**0.5, 0.05)


def test_an_interaction_over_a_setting_pairs_the_workloads_that_differ_in_it() -> None:
    study = _ladder({
        "rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [8]},
        "nofsync": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [8], "rungs": [2],
                    "postgres_settings": {"fsync": "off"}},
    })  # fmt: skip
    per_claim = {r["claim"]: r for r in design.claims(study, design.cells(study)).iter_rows(named=True)}
    assert per_claim["s004-fsync-off-removes-crossover"]["cells"] == "rw/c=8/d2 against nofsync/c=8/d2"
    # the runs with fsync off are context to the claims that do not name fsync (the seed's runs had it on)
    assert per_claim["s004-btrfs-overtakes-ext4-beyond-ram"]["cells"] == "rw/c=8/d2"


def test_without_a_memory_limit_the_plan_leaves_the_regime_to_the_runs() -> None:
    study = _study({"repeats": 4})
    assert design.cells(study)["regime"].to_list() == [None, None]
    assert design.regime_at(study, "rw", None) is None


def test_a_claim_whose_cells_split_alpha_needs_the_runs_for_its_own_level() -> None:
    """Two primary cells are judged at 97.5 % each: 4+4 runs give a 95 % interval but never a 97.5 % one, so a
    plan of 4 runs per cell could never decide such a claim. Refused, saying how many runs its level needs."""
    cfg = {
        "study": "t",
        "seeds": ["002"],
        "targets": {"ext4": {"fs": "ext4"}, "xfs": {"fs": "xfs"}},
        "workloads": {"rw": {"tool": "sysbench", "test": "oltp_read_write", "clients": [1, 64], "repeats": 4}},
    }
    study = Study.from_dict(validate(cfg, "t.yaml"))
    per_claim = design.claims(study, design.cells(study))
    two = per_claim.filter(design.pl.col("k") == 2)
    assert two.height, "seed 002 has claims over both thread counts"
    bad = design.undecidable(study)
    assert any("over its 2 primary cells, Bonferroni" in b and "needs 5 runs per side" in b for b in bad)
    cfg["workloads"]["rw"]["repeats"] = 5  # type: ignore[index]
    assert design.undecidable(Study.from_dict(validate(cfg, "t.yaml"))) == []


def test_a_claim_of_no_difference_says_whether_the_runs_can_show_it_inside_its_band() -> None:
    """The one-client finding says the ratio stays the same (within ±10 % here): a plan whose interval is wider
    than that band cannot show it, whatever the runs give, and says so before they run."""
    study = _ladder({"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 8]}})
    line = next(ln for ln in design.report(study).splitlines() if "s004-one-client-no-crossover" in ln)
    assert "rw/c=1/d1 against rw/c=1/d2" in line and "band B/A 0.90-1.10 - CANNOT show it" in line
    many = _ladder({"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1, 8], "repeats": 60}})
    line = next(ln for ln in design.report(many).splitlines() if "s004-one-client-no-crossover" in ln)
    assert "- can show it" in line


def test_a_claim_across_targets_counts_each_pair_of_targets_the_verdicts_form() -> None:
    """btrfs against ext4 in a study with two ext4 targets and a btrfs with snapshots: the verdicts compare each
    ext4 with the btrfs that agrees with it in what the claim does not name (no snapshots), never the A/A twin as
    a side; each pair is a primary cell, so the claim's level is split over them."""
    cfg = {
        "study": "t",
        "seeds": ["004"],
        "targets": {
            "ext4": {"fs": "ext4"},
            "ext4-journal": {"fs": "ext4", "mount_options": ["data=journal"]},
            "ext4-aa": {"fs": "ext4", "aa_twin_of": "ext4"},
            "btrfs": {"fs": "btrfs"},
            "btrfs-snap": {"fs": "btrfs"},
        },
        "snapshots": {"interval_s": 5, "keep_s": 15, "targets": ["btrfs-snap"]},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [8], "repeats": 5}},
    }
    study = Study.from_dict(validate(cfg, "t.yaml"))
    claim = next(c for c in design.for_seeds(["004"]) if c.id == "s004-btrfs-2x-ext4-magnetic")
    assert design._target_pairs(study, claim, "rw") == [("ext4", "btrfs"), ("ext4-journal", "btrfs")]
    row = design.claims(study, design.cells(study)).filter(design.pl.col("claim") == claim.id).row(0, named=True)
    assert row["k"] == 2 and "(btrfs / ext4)" in row["cells"] and "(btrfs / ext4-journal)" in row["cells"]


def _dirty_study(repeats: int, primary: str = "runs") -> Study:
    """seed 000's dirty_background_bytes claims: two workloads on one ext4 target, 1 GB against 32 MB."""
    cfg = {
        "study": "t",
        "seeds": ["000"],
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {
            name: {
                "tool": "pgbench",
                "builtin": "tpcb-like",
                "clients": [4],
                "repeats": repeats,
                "os": {"vm_dirty_background_bytes": size},
            }
            for name, size in (("dirty-1gb", "1GB"), ("dirty-32mb", "32MB"))
        },  # fmt: skip
        "run": {"duration_s": 60},
        "analysis": {"primary": primary},
    }
    return Study.from_dict(validate(cfg, "t.yaml"))


def test_a_claim_about_an_os_setting_compares_the_workloads_that_set_it() -> None:
    study = _dirty_study(5)
    per_claim = {r["claim"]: r for r in design.claims(study, design.cells(study)).iter_rows(named=True)}
    for claim in ("s000-dirty-bg-32mb-steadier", "s000-dirty-bg-32mb-same-mean"):
        assert per_claim[claim]["cells"] == "dirty-1gb/c=4 on ext4 against dirty-32mb/c=4 on ext4"


def test_a_steadiness_claim_is_sized_at_the_noise_of_its_own_quantity() -> None:
    study = _dirty_study(5)
    per_claim = {r["claim"]: r for r in design.claims(study, design.cells(study)).iter_rows(named=True)}
    steadier, mean = per_claim["s000-dirty-bg-32mb-steadier"], per_claim["s000-dirty-bg-32mb-same-mean"]
    assert steadier["noise"] == f"SD of log cv per run {design.SPREAD_SIGMA['cv_ratio']:.3f} (default)"
    assert mean["noise"] is None  # throughput: the cell's own noise
    assert steadier["smallest_ratio"] == design.smallest_ratio(5, 5, design.SPREAD_SIGMA["cv_ratio"], 0.05)
    assert mean["smallest_ratio"] == design.smallest_ratio(5, 5, design.DEFAULT_SIGMA, 0.05)
    # a CV ratio of 0.8 ("much" steadier) is beyond 5 runs a side at that noise; a measured, smaller one is used
    assert steadier["resolves_seed"] is False
    spread = pl.DataFrame(
        {
            "quantity": ["cv_ratio"] * 2,
            "workload": ["dirty-1gb", "dirty-32mb"],
            "clients": [4, 4],
            "sigma": [0.05, 0.04],
        }
    )
    again = design.claims(study, design.cells(study), spread)
    measured = again.filter(pl.col("claim") == steadier["claim"]).row(0, named=True)
    assert measured["noise"] == "SD of log cv per run 0.050 (the study's last runs here)"
    assert measured["smallest_ratio"] == design.smallest_ratio(5, 5, 0.05, 0.05)


def test_a_study_paired_by_round_needs_six_rounds_for_a_claim_of_one_cell() -> None:
    # one primary cell per claim (one target): 5 rounds give no 95 % signed-rank interval, where 5+5 runs unpaired do
    assert not design.undecidable(_dirty_study(5))
    bad = design.undecidable(_dirty_study(5, "rounds"))
    assert bad and all("the signed-rank test over rounds needs 6 runs per side" in b for b in bad)
    assert not design.undecidable(_dirty_study(6, "rounds"))


def test_a_study_paired_with_the_t_interval_decides_from_three_rounds() -> None:
    bad = design.undecidable(_dirty_study(2, "rounds-t"))
    assert bad and all("the paired t test over rounds needs 3 runs per side" in b for b in bad)
    assert not design.undecidable(_dirty_study(3, "rounds-t"))


def test_seed_000s_cached_case_rests_on_the_read_only_cells_below_memory() -> None:
    """fs-compare's plan put all 18 cells (both workloads, three rungs) under "the file system does not matter when
    CPU-bound", split alpha 18 ways and refused the study; the claim's own cells are read-only below memory."""
    study = load_study("config/fs-compare.yaml")
    per_claim = {r["claim"]: r for r in design.claims(study, design.cells(study)).iter_rows(named=True)}
    cells = per_claim["s000-fs-matters-only-io-bound"]["cells"].split(", ")
    assert len(cells) == 6 and {c.split(" ")[0] for c in cells} == {"ro/c=4/d1", "ro/c=4/d2"}


def test_the_measured_noise_is_per_rung_not_the_gap_between_rungs() -> None:
    """A ladder's rungs differ by a factor in throughput: pooled per target, that gap passed for run-to-run noise
    (sigma near 0.8 here, where each rung's runs scatter by 1-2 %), and the plan refused cells that can decide."""
    rows = [
        # the database names a ladder's workload per rung; the plan's cells name the config's workload
        {
            "workload": f"rw.d{rung}",
            "clients": 4,
            "rung": rung,
            "target": t,
            "repeat": i,
            "value": base * (1 + 0.01 * (i % 3)),
        }
        for rung, base in ((1, 2000.0), (2, 400.0))
        for t in ("ext4", "xfs")
        for i in range(1, 6)
    ]
    runs = pl.DataFrame(rows)
    for rounds in (False, True):
        sigma = design.sigma_per_cell(runs, rounds).sort("rung")
        assert sigma["rung"].to_list() == [1, 2] and set(sigma["workload"]) == {"rw"}
        assert sigma["sigma"].max() < 0.02
    # without a ladder (no rung column, or a null rung) a cell is its workload and clients
    flat = runs.filter(pl.col("rung") == 1).with_columns(
        pl.lit("rw").alias("workload"), pl.lit(None, pl.Int64).alias("rung")
    )
    assert design.sigma_per_cell(flat, rounds=True).height == 1
    assert design.sigma_per_cell(flat.drop("rung")).height == 1


def test_a_run_of_fixed_transactions_is_not_costed_at_the_studys_duration() -> None:
    """sync-commit's `-t 1000` runs took seconds, and the plan costed 99 of them at the study's 30 s: 61 minutes
    for a 9-minute study."""
    cfg = {
        "study": "t",
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {"t": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [8], "transactions": 1000}},
        "run": {"duration_s": 30, "repeats": 4},
    }
    cells = design.cells(Study.from_dict(validate(cfg, "t.yaml")))
    assert cells["minutes"][0] == 4 * design.RUN_OVERHEAD_S / 60
    assert "of 1000 transactions per client" in design.report(Study.from_dict(validate(cfg, "t.yaml")))


def test_an_estimated_cost_says_a_reload_is_not_in_it() -> None:
    """space's runs each load their data set again (a minute for sysbench's 4 x 800k rows); an estimate at a run's
    length + 7 s said nothing of it."""
    cfg = {
        "study": "t",
        "targets": {"ext4": {"fs": "ext4"}},
        "workloads": {"t": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [8]}},
        "run": {"duration_s": 20, "repeats": 4},
    }
    plain = design.report(Study.from_dict(validate(cfg, "t.yaml")))
    cfg["run"] = {"duration_s": 20, "repeats": 4, "reload": True}
    reloaded = design.report(Study.from_dict(validate(cfg, "t.yaml")))
    assert "reload of its data set on top" in reloaded
    assert "reload" not in plain


def test_the_plan_costs_each_targets_runs_as_they_took_last_time() -> None:
    """btrfs-hdd's plan said 100 minutes at a run's length + 7 s; its runs had taken 122 minutes for 65 runs: on the
    emulated disk btrfs's prewarm took 223 s a run and each server's shutdown checkpoint half a minute."""
    cfg = {
        "study": "t",
        "targets": {"ext4": {"fs": "ext4"}, "btrfs": {"fs": "btrfs"}},
        "ladder": {"scales": [1, 2], "memory_limit_mb": 512},
        "workloads": {"rw": {"tool": "pgbench", "builtin": "tpcb-like", "clients": [1]}},
        "run": {"duration_s": 60, "repeats": 5},
    }
    study = Study.from_dict(validate(cfg, "t.yaml"))
    # last time the runs were 20 s long: ext4's took 30 s of wall time, btrfs's 340 s at rung 1; a skipped round
    # (wall 0) and a run without a wall time say nothing
    runs = pl.DataFrame(
        [
            {"workload": "rw.d1", "clients": 1, "rung": 1, "target": "ext4", "status": "ok", "wall_s": 30.0, "duration_s": 20.0},
            {"workload": "rw.d1", "clients": 1, "rung": 1, "target": "btrfs", "status": "ok", "wall_s": 340.0, "duration_s": 20.0},
            {"workload": "rw.d1", "clients": 1, "rung": 1, "target": "btrfs", "status": "failed", "wall_s": 330.0, "duration_s": 20.0},
            {"workload": "rw.d1", "clients": 1, "rung": 1, "target": "ext4", "status": "skipped", "wall_s": 0.0, "duration_s": None},
            {"workload": "rw.d2", "clients": 1, "rung": 2, "target": "ext4", "status": "ok", "wall_s": None, "duration_s": 20.0},
        ]
    )  # fmt: skip
    cost = design.cost_per_cell(runs)
    cells = design.cells(study, cost=cost).sort("rung")
    # rung 1: 5 runs x (ext4: 60 s + 10 s beyond, btrfs: 60 s + 315 s beyond), each with the job's start
    per_round = (60 + 10 + design.JOB_START_S) + (60 + 315 + design.JOB_START_S)
    assert cells["minutes"][0] == 5 * per_round / 60
    assert cells["cost_from"].to_list() == ["the study's last runs here", "estimate"]
    # rung 2 has no run with a wall time on record: its length + the stated overhead, said so
    assert cells["minutes"][1] == 5 * 2 * (60 + design.RUN_OVERHEAD_S) / 60
    text = design.report(study)
    assert "no runs of this study on record here" in text


def test_seed_003s_claims_are_sized_on_the_fsmicro_cells_they_compare() -> None:
    """The plan sized pgbench and sysbench cells only: fs-sync's rounds were sized by hand. A file-system call's
    claim rests on the cells of its op and of the size both its sides name (the 10 MB write of "10 MB writes are
    similar"), a claim on the size itself on each target's 10 MB cell against its 100 MB one."""
    study = load_study("config/fs-sync.yaml")
    table = design.cells(study)
    assert {"create/c=1", "write-sync-10mb/c=1", "write-sync-100mb/c=1"} <= set(table["cell"].to_list())
    per_claim = {r["claim"]: r for r in design.claims(study, table).iter_rows(named=True)}
    assert per_claim["s003-create-fsync-zfs-faster"]["cells"] == "create/c=1"
    assert per_claim["s003-write-sync-10mb-similar"]["cells"] == "write-sync-10mb/c=1"
    linear = per_claim["s003-sync-latency-linear-in-size"]
    assert linear["k"] == 4 and linear["cells"].count("write-sync-10mb/c=1 on ") == 4
    assert "s003-three-runs-cannot-reach-p05" not in per_claim  # an exact test's floor, no ratio to size
