"""pgfslab.analysis.answers.significance on hand-made runs: expected values worked out by hand here."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pgfslab.analysis.answers import significance


def samples(run_id: str, target: str, workload: str, tps: list[float], clients: int = 1) -> pl.DataFrame:
    n = len(tps)
    return pl.DataFrame(
        {
            "run_id": [run_id] * n,
            "target": [target] * n,
            "target_label": [f"{target} (label)"] * n,
            "workload": [workload] * n,
            "clients": [clients] * n,
            "t_s": [float(t) for t in range(3, 3 + n)],
            "tps": tps,
        }
    )


def two_targets() -> pl.DataFrame:
    # ext4: runs at 2 and 6 (within-run deviations ±1); xfs: runs at 10 and 30 (deviations ±2, ±4)
    return pl.concat(
        [
            samples("r1", "ext4", "tpcb", [1.0, 3.0]),
            samples("r2", "ext4", "tpcb", [5.0, 7.0]),
            samples("r3", "xfs", "tpcb", [8.0, 12.0]),
            samples("r4", "xfs", "tpcb", [26.0, 34.0]),
        ]
    )


def test_design_several_targets_compares_targets() -> None:
    d = significance.design(two_targets(), "ext4", ["tpcb"])
    assert d == significance.Design("target_label", ["workload", "clients"], "ext4 (label)")
    assert d.noun == "target"


def test_design_one_target_compares_workloads() -> None:
    one = pl.concat([samples("r1", "ext4", "b", [1.0]), samples("r2", "ext4", "c", [1.0])])
    d = significance.design(one, "ext4", ["a", "b", "c"])  # a did not run: the first that ran
    assert d == significance.Design("workload", ["target_label", "clients"], "b")
    assert significance.design(one, "ext4", ["c", "b"]).baseline == "c"
    assert d.noun == "workload"


def test_within_run_and_variance_cells() -> None:
    d = significance.design(two_targets(), "ext4", ["tpcb"])
    steady = significance.with_within_run(two_targets(), d)
    # ext4: level mean 4, runs 2 and 6 -> within samples 3, 5, 3, 5; xfs: level mean 20 -> 18, 22, 16, 24
    assert steady["tps_within"].to_list() == [3.0, 5.0, 3.0, 5.0, 18.0, 22.0, 16.0, 24.0]
    stab = significance.variance_cells(steady, d).sort("target_label")
    ext4, xfs = stab.row(0, named=True), stab.row(1, named=True)
    assert ext4["n"] == 4 and ext4["mean"] == 4.0 and (ext4["min"], ext4["max"]) == (1.0, 7.0)
    assert ext4["variance"] == pytest.approx(20 / 3)  # 9 + 1 + 1 + 9 over 3
    assert ext4["variance_within"] == pytest.approx(4 / 3)  # 1 + 1 + 1 + 1 over 3
    assert ext4["cv_within"] == pytest.approx(math.sqrt(4 / 3) / 4)
    assert xfs["variance_within"] == pytest.approx(40 / 3)  # 4 + 4 + 16 + 16 over 3
    table = significance.variance_cells_table(stab, d)
    assert table.columns[:4] == ["workload", "clients", "target", "seconds"]
    assert table["CV within %"][0] == pytest.approx(100 * math.sqrt(4 / 3) / 4)


def test_variance_ratios_against_the_baseline() -> None:
    d = significance.design(two_targets(), "ext4", ["tpcb"])
    steady = significance.with_within_run(two_targets(), d)
    vtab = significance.variance_ratios(steady, d, n_boot=99)
    assert vtab.height == 1 and vtab["target_label"][0] == "xfs (label)"
    assert vtab["ratio"][0] == pytest.approx((40 / 3) / (4 / 3))
    assert vtab["f_lo"][0] < 10 < vtab["f_hi"][0]
    # with two levels in the cell, the test over all levels is the test of the pair
    assert vtab["bf_p_all"][0] == pytest.approx(vtab["bf_p"][0])
    table = significance.variance_ratio_table(vtab, d)
    assert "σ² / σ² ext4 (label)" in table.columns
    one = significance.with_within_run(two_targets().filter(pl.col("target") == "ext4"), d)
    assert significance.variance_ratios(one, d, n_boot=0).height == 0


def test_with_cell_label() -> None:
    runs = pl.DataFrame({"workload": ["tpcb", "ro"], "clients": [4, 16]})
    assert significance.with_cell_label(runs, ["workload", "clients"])["cell"].to_list() == ["tpcb/c=4", "ro/c=16"]
    runs = pl.DataFrame({"target_label": ["ext4"], "clients": [1]})
    assert significance.with_cell_label(runs, ["target_label", "clients"])["cell"].to_list() == ["ext4/c=1"]


def hand_runs() -> pl.DataFrame:
    # ext4: 1000 transactions, none failed; xfs: 980 done and 20 failed per run -> error rate 2 % (> 1 %)
    return pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(6)],
            "target_label": ["ext4"] * 3 + ["xfs"] * 3,
            "workload": ["tpcb"] * 6,
            "clients": [1] * 6,
            "value": [100.0, 101.0, 102.0, 200.0, 201.0, 202.0],
            "transactions": [1000] * 3 + [980] * 3,
            "failed": [0] * 3 + [20] * 3,
            "elapsed_s": [10.0] * 6,
            "duration_s": [10.0] * 6,
        }
    )


def test_compare_runs_with_goodput() -> None:
    d = significance.Design("target_label", ["workload", "clients"], "ext4")
    runs = significance.with_cell_label(hand_runs(), d.cell)
    cmp, good = significance.compare_runs(runs, d, 0.05)
    assert cmp.height == 1
    row = cmp.row(0, named=True)
    assert (row["benchmark"], row["candidate"]) == ("tpcb/c=1", "xfs")
    assert (row["center_baseline"], row["center_candidate"]) == (101.0, 201.0)
    assert row["err"] == pytest.approx(0.02) and row["flagged"] is True
    assert row["err_base"] == 0.0 and row["flag_base"] is False
    # 3 against 3 repeats: the smallest two-sided U-test p is 0.1, never below alpha
    assert row["significant"] is False and row["delta"] == "~"
    assert good.filter(pl.col("flagged"))["target_label"].to_list() == ["xfs"]
    table = significance.run_comparison_table(cmp, d)
    assert table.columns == ["cell", "target", "ext4 tps", "tps", "delta", "p (Holm)", "n", "errors %", "goodput"]
    assert (table["n"][0], table["errors %"][0], table["goodput"][0]) == ("3+3", pytest.approx(2.0), "FAILS")


def test_summary_joins_runs_and_ratios() -> None:
    d = significance.design(two_targets(), "ext4", ["tpcb"])
    steady = significance.with_within_run(two_targets(), d)
    stab = significance.variance_cells(steady, d)
    vtab = significance.variance_ratios(steady, d, n_boot=0)
    runs = hand_runs().with_columns(pl.col("target_label") + " (label)")
    out = significance.summary(stab, vtab, runs, d, 2.0).sort("level")
    assert out["level"].to_list() == ["ext4 (label)", "xfs (label)"]
    assert out["compared"].to_list() == ["target_label"] * 2 and out["baseline"][0] == "ext4 (label)"
    assert out["run_median"].to_list() == [101.0, 201.0] and out["runs"].to_list() == [3, 3]
    assert out["ratio"][0] is None and out["ratio"][1] == pytest.approx(10.0)
    assert out["trim_s"].to_list() == [2.0, 2.0]
    no_ratios = significance.summary(stab, pl.DataFrame(), runs, d, 2.0)
    assert "ratio" not in no_ratios.columns
