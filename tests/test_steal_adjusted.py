"""Comparisons adjusted for CPU steal (pgfslab.analysis.stats.steal_adjusted), checked against the same least
squares computed another way (within-target centring, Frisch-Waugh) and against data built to a known ratio."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats

from pgfslab.analysis.answers import exchangeability as ex
from pgfslab.analysis.stats import steal_adjusted


def cell(values: dict[str, list[float]], contention: dict[str, list[float]]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "target": [t for t, v in values.items() for _ in v],
            "value": [x for v in values.values() for x in v],
            "contention": [x for t in values for x in contention[t]],
        }
    )


def test_a_known_ratio_under_a_known_steal_effect_is_recovered_exactly() -> None:
    # tps = level x exp(-2 x contention), xfs's level 0.8 of ext4's; no other noise, so the fit is exact
    c_ext4, c_xfs = [0.02, 0.10, 0.25], [0.05, 0.15, 0.30]
    values = {"ext4": [1000 * math.exp(-2 * c) for c in c_ext4], "xfs": [800 * math.exp(-2 * c) for c in c_xfs]}
    out = steal_adjusted.fit(cell(values, {"ext4": c_ext4, "xfs": c_xfs}), "ext4").row(0, named=True)
    assert out["ratio"] == pytest.approx(0.8) and out["slope"] == pytest.approx(-2.0)
    assert out["resid_sd"] == pytest.approx(0.0, abs=1e-9) and out["lo"] == pytest.approx(0.8)
    assert out["plain_sd"] > 0.1  # without the covariate the runs spread (the steal moved them)


def test_a_slower_day_is_shifted_apart_not_read_as_a_target_difference() -> None:
    # the same steal effect, day2 20 % slower as a whole, xfs's runs mostly on day2: without the day's shift the
    # slow day would be charged to xfs; with it the built ratio 0.8 comes back exactly
    rows = [("ext4", "day1", 0.02), ("ext4", "day1", 0.10), ("ext4", "day2", 0.25),
            ("xfs", "day1", 0.05), ("xfs", "day2", 0.15), ("xfs", "day2", 0.30)]  # fmt: skip
    level = {"ext4": 1000.0, "xfs": 800.0}
    day = {"day1": 1.0, "day2": 0.8}
    f = pl.DataFrame(
        {
            "target": [t for t, _, _ in rows],
            "host": [d for _, d, _ in rows],
            "value": [level[t] * day[d] * math.exp(-2 * c) for t, d, c in rows],
            "contention": [c for _, _, c in rows],
        }
    )
    shifted = steal_adjusted.fit(f, "ext4", block="host").row(0, named=True)
    assert shifted["ratio"] == pytest.approx(0.8) and shifted["slope"] == pytest.approx(-2.0)
    assert shifted["blocks"] == 2
    pooled = steal_adjusted.fit(f, "ext4").row(0, named=True)
    assert pooled["ratio"] < 0.79 and pooled["blocks"] == 1  # the slow day read as xfs being slower


def test_against_the_within_target_regression_by_hand() -> None:
    rng = np.random.default_rng(7)
    con = {t: list(rng.uniform(0, 0.3, 5)) for t in ("ext4", "xfs", "btrfs")}
    level = {"ext4": 7.0, "xfs": 6.9, "btrfs": 6.3}
    values = {t: [math.exp(level[t] - 3 * c + rng.normal(0, 0.05)) for c in con[t]] for t in con}
    out = steal_adjusted.fit(cell(values, con), "ext4", alpha=0.05)
    # Frisch-Waugh: the common slope is the regression of within-target centred log values on centred contention
    yc = np.concatenate([np.log(values[t]) - np.mean(np.log(values[t])) for t in con])
    cc = np.concatenate([np.asarray(con[t]) - np.mean(con[t]) for t in con])
    b = float(cc @ yc / (cc @ cc))
    resid = yc - b * cc
    n, k = 15, 4
    s2 = float(resid @ resid) / (n - k)
    q = stats.t.ppf(0.975, n - k)
    for t in ("xfs", "btrfs"):
        row = out.filter(pl.col("target") == t).row(0, named=True)
        d = (np.mean(np.log(values[t])) - b * np.mean(con[t])) - (
            np.mean(np.log(values["ext4"])) - b * np.mean(con["ext4"])
        )
        # var(a_t - a_ext4) = s2 (1/n_t + 1/n_ext4 + (mean c_t - mean c_ext4)^2 / Sxx)
        se = math.sqrt(s2 * (1 / 5 + 1 / 5 + (np.mean(con[t]) - np.mean(con["ext4"])) ** 2 / float(cc @ cc)))
        assert row["ratio"] == pytest.approx(math.exp(d))
        assert (row["lo"], row["hi"]) == pytest.approx((math.exp(d - q * se), math.exp(d + q * se)))
        assert row["slope"] == pytest.approx(b) and row["resid_sd"] == pytest.approx(math.sqrt(s2))


def test_cells_that_cannot_carry_the_model_give_nothing() -> None:
    assert (
        steal_adjusted.fit(cell({"ext4": [1.0, 2.0], "xfs": [1.0]}, {"ext4": [0.1, 0.2], "xfs": [0.1]}), "ext4").height
        == 0
    )
    same = {"ext4": [0.1, 0.1], "xfs": [0.1, 0.1]}  # no spread in the contention
    assert steal_adjusted.fit(cell({"ext4": [1.0, 2.0], "xfs": [1.5, 2.5]}, same), "ext4").height == 0
    assert steal_adjusted.fit(cell({"xfs": [1.0, 2.0]}, {"xfs": [0.1, 0.2]}), "ext4").height == 0  # no baseline


def test_per_cell_from_runs_and_their_cpu_measures() -> None:
    # contention = steal / busy per run; burn-in runs are left out as everywhere
    runs = pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(7)],
            "target": ["ext4"] * 3 + ["xfs"] * 3 + ["ext4"],
            "workload": ["tpcb"] * 7,
            "clients": [4] * 7,
            "value": [1000 * math.exp(-2 * c) for c in (0.02, 0.10, 0.25)]
            + [800 * math.exp(-2 * c) for c in (0.05, 0.15, 0.30)]
            + [1.0],
            "burn_in": [False] * 6 + [True],
        }
    )
    busy = [0.5, 0.8, 0.4, 0.5, 0.6, 0.9, 0.5]
    contention = [0.02, 0.10, 0.25, 0.05, 0.15, 0.30, 0.5]
    cpu = pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(7)],
            "cpu_busy": busy,
            "cpu_steal": [c * b for c, b in zip(contention, busy)],
        }
    )
    out = ex.steal_adjusted_comparisons(runs, cpu, "ext4", 0.05)
    assert out.select("workload", "clients", "target", "n").row(0) == ("tpcb", 4, "xfs", 6)
    assert out["ratio"][0] == pytest.approx(0.8)
    assert ex.steal_adjusted_comparisons(runs, cpu.head(0), "ext4", 0.05).height == 0


def test_an_interval_past_the_float_range_is_infinite_not_an_error() -> None:
    # 2+2 runs, one degree of freedom (t = 12.7), and a contention column almost the target's indicator: the
    # target effect is barely identified, its interval's upper end is beyond exp's range (math.exp raised
    # OverflowError in the exchangeability notebook of a tiny study)
    f = pl.DataFrame(
        {
            "target": ["a", "a", "b", "b"],
            "value": [100.0, 130.0, 100.0, 80.0],
            "contention": [0.0, 1e-4, 1.0, 1.0 + 2e-4],
        }
    )
    row = steal_adjusted.fit(f, "a").row(0, named=True)
    assert row["hi"] == float("inf") and row["lo"] == 0.0
