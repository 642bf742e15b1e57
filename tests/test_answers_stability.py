"""pgfslab.analysis.answers.stability on hand-made runs: every expected value worked out by hand here."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pgfslab.analysis.answers import stability
from pgfslab.errors import LabError

STEADY_BATCH = [9.0, 11.0, 9.0, 11.0, 10.0]  # a batch of five with mean 10, squares of deviations 1, 1, 1, 1, 0


def run(run_id: str, target: str, clients: int, repeat: int, tps: list[float]) -> pl.DataFrame:
    n = len(tps)
    return pl.DataFrame(
        {
            "run_id": [run_id] * n,
            "target": [target] * n,
            "target_label": [target] * n,
            "workload": ["tpcb"] * n,
            "clients": [clients] * n,
            "repeat": [repeat] * n,
            "t_s": [float(t) for t in range(1, n + 1)],
            "tps": tps,
        }
    )


@pytest.fixture
def progress() -> pl.DataFrame:
    return pl.concat(
        [
            # t 1, 2 dropped by trim_s = 2; then batches of five with means 1, 10, 10, 10: MSER-5 drops the
            # first batch (t 3..7), d = 1 < k/2 = 2, steady; 15 samples of mean 10 remain
            run("a", "ext4", 1, 2, [0.0, 0.0, *[1.0] * 5, *STEADY_BATCH * 3]),
            # batches 1, 10 after the floor: MSER-5 drops the first, d = 1 = k/2: not steady; 5 samples left
            run("b", "xfs", 1, 1, [0.0, 0.0, *[1.0] * 5, *STEADY_BATCH]),
            # batch means 20, 20: nothing to drop beyond the fixed 2 s; 10 samples of mean 20
            run("c", "ext4", 1, 1, [0.0, 0.0, *[2 * x for x in STEADY_BATCH] * 2]),
        ]
    )


def test_steady_run_means_trims_and_means(progress: pl.DataFrame) -> None:
    out = stability.steady_run_means(progress, 2.0)
    assert out.columns == stability.RUN_COLUMNS
    assert out["repeat"].to_list() == sorted(out["repeat"].to_list())
    by = {r["run_id"]: r for r in out.iter_rows(named=True)}
    assert by["a"]["trim_s"] == 7.0 and by["a"]["steady"] is True and by["a"]["n"] == 15
    assert by["b"]["trim_s"] == 7.0 and by["b"]["steady"] is False and by["b"]["n"] == 5
    assert by["c"]["trim_s"] == 2.0 and by["c"]["steady"] is True and by["c"]["n"] == 10
    assert by["a"]["mean"] == pytest.approx(10.0)
    assert by["b"]["mean"] == pytest.approx(10.0)
    assert by["c"]["mean"] == pytest.approx(20.0)
    # run a: 12 squared deviations of 1 over 14 degrees of freedom; run c: 8 of 4 over 9
    assert by["a"]["stdev"] == pytest.approx(math.sqrt(12 / 14))
    assert by["a"]["cv"] == pytest.approx(math.sqrt(12 / 14) / 10)
    assert by["c"]["cv"] == pytest.approx(math.sqrt(32 / 9) / 20)
    assert {r["trim_method"] for r in by.values()} == {"fixed 2 s + MSER-5"}
    for r in by.values():
        assert r["ci_lo"] < r["mean"] < r["ci_hi"]


def test_steady_run_means_floor_is_kept_when_larger(progress: pl.DataFrame) -> None:
    # a 10 s floor leaves run c with t 11, 12 only: fewer than two batches, MSER-5 drops nothing
    out = stability.steady_run_means(progress.filter(pl.col("run_id") == "c"), 10.0)
    assert out["trim_s"].to_list() == [10.0]
    assert out["n"].to_list() == [2]
    assert out["mean"].to_list() == pytest.approx([(2 * 11.0 + 2 * 10.0) / 2])


def hand_runs() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "target_label": ["ext4", "ext4", "ext4", "xfs"],
            "clients": [1, 1, 1, 1],
            "mean": [100.0, 120.0, 90.0, 50.0],
            "ci_lo": [90.0, 114.0, 72.0, 40.0],
            "ci_hi": [110.0, 126.0, 108.0, 60.0],
            "n_eff": [10.0, 30.0, 20.0, 5.0],
            "cv": [0.1, 0.3, 0.2, 0.5],
            "trim_s": [2.0, 7.0, 12.0, 2.0],
            "steady": [True, False, True, False],
        }
    )


def test_cell_stability_by_hand() -> None:
    cells = stability.cell_stability(hand_runs()).sort("target_label")
    ext4, xfs = cells.row(0, named=True), cells.row(1, named=True)
    assert ext4["n"] == 3 and ext4["median"] == 100.0
    # relative half-widths 10/100, 6/120, 18/90 -> 0.1, 0.05, 0.2: median 0.1
    assert ext4["half_width"] == pytest.approx(0.1)
    assert ext4["n_eff"] == 20.0 and ext4["within_cv"] == pytest.approx(0.2)
    assert ext4["trim_med"] == 7.0 and ext4["trim_max"] == 12.0 and ext4["not_steady"] == 1
    # three repeats: the interval over repeats is their minimum to maximum
    assert (ext4["median_ci_low"], ext4["median_ci_high"]) == (90.0, 120.0)
    assert xfs["n"] == 1 and xfs["median"] == 50.0 and xfs["half_width"] == pytest.approx(0.2)
    assert xfs["not_steady"] == 1


def test_cell_table_names_and_percentages() -> None:
    table = stability.cell_table(stability.cell_stability(hand_runs()).sort("target_label"))
    assert table.columns == [
        "target",
        "clients",
        "runs",
        "median tps",
        "its CI",
        "run CI ± %",
        "n_eff",
        "CV in run %",
        "trim s median / max",
        "not steady",
    ]
    assert table["run CI ± %"].to_list() == pytest.approx([10.0, 20.0])
    assert table["CV in run %"].to_list() == pytest.approx([20.0, 50.0])


def test_runs_that_end_within_the_warm_up_are_named() -> None:
    # run d has samples at t 1, 2 only: a 2 s floor leaves it nothing; run c keeps its t 3..12
    short = run("d", "xfs", 1, 1, [5.0, 5.0])
    both = pl.concat([short, run("c", "ext4", 1, 1, [0.0, 0.0, *[2 * x for x in STEADY_BATCH] * 2])])
    out = stability.steady_run_means(both, 2.0)
    assert out["run_id"].to_list() == ["c"]
    assert stability.ended_in_warmup(both, out) == ["d"]
    assert "1 run(s) ended within the fixed 2 s warm-up" in stability.ended_in_warmup_text(both, out, 2.0)
    assert stability.ended_in_warmup_text(both.filter(pl.col("run_id") == "c"), out, 2.0) == ""


def test_every_run_within_the_warm_up_is_a_clear_error() -> None:
    # 3 s pgbench runs that printed progress at t 1 and 2 only (as CI saw): the 2 s floor leaves nothing
    short = pl.concat([run("d", "xfs", 1, 1, [5.0, 5.0]), run("e", "ext4", 1, 1, [4.0, 4.0])])
    with pytest.raises(LabError, match=r"end by t = 2 s, within the fixed warm-up of analysis.trim_s = 2 s"):
        stability.steady_run_means(short, 2.0)
