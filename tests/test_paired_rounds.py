"""The comparison paired by round (`analysis.primary: rounds`): the signed-rank statistics against enumeration and
scipy, the paired ratio's interval, the verdicts and the plan that use it."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from pgfslab.analysis import design
from pgfslab.analysis.stats import signed_rank
from pgfslab.analysis.verdicts import evaluate
from pgfslab.analysis.verdicts import ratio as R
from tests.test_verdicts import claim, facts_frame


@pytest.mark.parametrize("n", range(1, 9))
def test_the_null_distribution_is_the_enumeration_of_sign_patterns(n: int) -> None:
    sums = [sum(r for r, s in zip(range(1, n + 1), signs) if s) for signs in itertools.product((0, 1), repeat=n)]
    counts = np.bincount(sums, minlength=n * (n + 1) // 2 + 1)
    assert signed_rank.w_null_cdf(n) == pytest.approx(np.cumsum(counts) / 2**n)


def test_the_fewest_pairs_for_an_interval() -> None:
    # the most extreme outcome (all signs alike) has two-sided p = 2 / 2^n: 1/16 at 5 pairs, 1/32 at 6, 1/64 at 7
    assert signed_rank.critical_w(5, 0.05) is None
    assert signed_rank.critical_w(6, 0.05) == 0
    assert signed_rank.pairs_needed(0.05) == 6
    assert signed_rank.pairs_needed(0.025) == 7
    assert signed_rank.pairs_needed(0.01) == 8
    assert design.runs_needed(0.05, pairing="signed-rank") == 6
    assert design.runs_needed(0.05) == 4  # the rank-sum interval: 4 against 4


def test_the_interval_excludes_zero_exactly_when_scipys_exact_test_rejects() -> None:
    rng = np.random.default_rng(7)
    for n in (6, 7, 9, 12):
        for shift in (0.0, 0.4, 0.8, 1.5):
            for _ in range(25):
                d = rng.standard_normal(n) + shift
                _, lo, hi, coverage = signed_rank.shift_interval(d, 0.05)
                p = sps.wilcoxon(d, method="exact").pvalue
                assert (lo > 0 or hi < 0) == (p <= 0.05), (d, lo, hi, p)
                assert coverage >= 0.95


def test_six_rounds_give_the_range_of_the_walsh_averages_at_their_coverage() -> None:
    d = np.array([0.01, 0.02, 0.03, 0.05, 0.08, 0.13])
    walsh = sorted((d[i] + d[j]) / 2 for i in range(6) for j in range(i, 6))
    point, lo, hi, coverage = signed_rank.shift_interval(d, 0.05)
    assert (lo, hi) == pytest.approx((0.01, 0.13))  # c = 0: the smallest and largest Walsh average
    assert point == pytest.approx(np.median(walsh))
    assert coverage == pytest.approx(1 - 2 / 64)


def test_an_injected_ratio_moves_the_estimate_and_the_interval_by_exactly_that_ratio() -> None:
    rng = np.random.default_rng(11)
    a = 1000 * np.exp(rng.normal(0, 0.05, 8))
    b = a * np.exp(rng.normal(0, 0.02, 8))
    base = R.paired_ratio_ci(a, b, 0.05)
    for k in (0.9, 1.05, 1.5):
        moved = R.paired_ratio_ci(a, b * k, 0.05)
        assert (moved.ratio, moved.lo, moved.hi) == pytest.approx((k * base.ratio, k * base.lo, k * base.hi))
        assert moved.lo <= k * base.ratio <= moved.hi


def test_the_signed_rank_test_holds_its_level_and_gains_power_with_the_shift() -> None:
    assert signed_rank.power(8, 0.0, 0.05) <= 0.05 + 0.01  # the exact test's size, give or take the simulation
    assert signed_rank.power(8, 1.5, 0.05) > signed_rank.power(8, 0.5, 0.05)
    assert math.isinf(signed_rank.detectable_shift_sd(5, 0.05))


def drifting(rounds: int, ratio: float, *, twin: bool = False, seed: int = 3) -> list[dict]:
    """ext4 and xfs run once per round; every round's level falls (a data set growing alike on both) and a
    little noise of each run's own: B/A is `ratio` in every round."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(1, rounds + 1):
        level = 1000 * (1 - 0.04 * r)
        sides = [("ext4", "ext4", 1.0, None), ("xfs", "xfs", ratio, None)]
        if twin:
            sides.append(("ext4-aa", "ext4", 1.0, "ext4"))
        for target, fs, k, twin_of in sides:
            rows.append({"target": target, "target_label": target, "fs": fs, "repeat": r, "aa_twin_of": twin_of,
                         "value": level * k * math.exp(rng.normal(0, 0.004)), "run_id": f"{target}.r{r}"})  # fmt: skip
    return rows


def test_pairing_by_round_resolves_what_a_shared_drift_hides_from_the_unpaired_comparison() -> None:
    c = claim(expect="greater", band=None, band_why=None)
    f = facts_frame(drifting(8, 1.03))
    plain = evaluate.evaluate(f, c, 0.05, "runs").row(0, named=True)
    paired = evaluate.evaluate(f, c, 0.05, "rounds").row(0, named=True)
    assert plain["verdict"] == R.UNRESOLVED  # the drift (28 % over the rounds) swamps 3 %
    # each run's own noise is 0.4 %: a round's ratio carries about 0.6 %, and 8 rounds pin 3 % down to about ±1 %
    assert paired["verdict"] == R.DIRECTION_ONLY and 1.015 < paired["lo"] < 1.03 < paired["hi"] < 1.045
    assert (paired["n_a"], paired["n_b"]) == (8, 8)
    assert "paired by round" in paired["test"]
    assert f"the runs unpaired: {R.interval_text(R.ratio_ci(*sides(f)))}" in paired["unchecked"]


def sides(f: pl.DataFrame) -> tuple[list[float], list[float]]:
    by = {t: f.filter(pl.col("target") == t).sort("repeat")["value"].to_list() for t in ("ext4", "xfs")}
    return by["ext4"], by["xfs"]


def test_the_twin_is_paired_by_round_too() -> None:
    c = claim(expect="greater", band=None, band_why=None)
    row = evaluate.evaluate(facts_frame(drifting(8, 1.03, twin=True)), c, 0.05, "rounds").row(0, named=True)
    assert row["aa_lo"] < 1 < row["aa_hi"] and row["aa_hi"] - row["aa_lo"] < 0.02  # the twin, paired: ±1 %
    assert row["verdict"] == R.DIRECTION_ONLY


def test_a_round_with_two_runs_of_one_side_falls_back_to_the_unpaired_comparison_and_says_so() -> None:
    rows = drifting(8, 1.03)
    rows.append({**rows[0], "run_id": "ext4.extra"})  # a second ext4 run in round 1
    row = evaluate.evaluate(facts_frame(rows), claim(expect="greater"), 0.05, "rounds").row(0, named=True)
    assert "not paired by round" in row["unchecked"] and "paired by round," not in row["test"]
    assert row["n_a"] == 9


def test_a_run_without_a_partner_in_its_round_is_left_out_and_counted() -> None:
    rows = [r for r in drifting(8, 1.03) if not (r["target"] == "xfs" and r["repeat"] == 8)]
    row = evaluate.evaluate(facts_frame(rows), claim(expect="greater"), 0.05, "rounds").row(0, named=True)
    assert (row["n_a"], row["n_b"]) == (7, 7)
    assert "1 run(s) without a partner in their round left out" in row["unchecked"]


def test_the_plan_sizes_a_paired_comparison_with_the_signed_rank_test() -> None:
    assert math.isinf(design.smallest_ratio(5, 5, 0.05, 0.05, pairing="signed-rank"))  # 5 rounds: no 95 % interval
    paired = design.smallest_ratio(8, 8, 0.05, 0.05, pairing="signed-rank")
    unpaired = design.smallest_ratio(8, 8, 0.05, 0.05)
    # at the same per-run noise, nothing shared: a round's ratio carries the noise of two runs, so pairing
    # resolves no smaller effect (it pays where the rounds share their drift: `measured_sigma(rounds=True)`)
    assert 1 < unpaired <= paired < 1.2


def test_the_measured_paired_noise_leaves_out_what_the_rounds_share() -> None:
    f = pl.DataFrame(drifting(8, 1.03)).with_columns(
        pl.lit("tpcb").alias("workload"), pl.lit(4).alias("clients"), pl.lit(None, pl.Int64).alias("rung")
    )
    paired = design._paired_sigma(f).row(0, named=True)
    per_target = f.group_by("target").agg(pl.col("value").log().std())["value"].median()
    assert paired["sigma"] < 0.01 < per_target  # 0.4 % per run, against the drift's ~9 %


def test_a_twin_that_cannot_be_paired_is_compared_unpaired_and_said_so() -> None:
    rows = drifting(8, 1.03, twin=True)
    rows.append({**next(r for r in rows if r["target"] == "ext4-aa"), "run_id": "ext4-aa.extra"})
    row = evaluate.evaluate(facts_frame(rows), claim(expect="greater"), 0.05, "rounds").row(0, named=True)
    assert "A's A/A twin not paired by round" in row["unchecked"]
    assert "paired by round, exact signed-rank" in row["test"]  # B against A still is
