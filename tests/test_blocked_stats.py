"""van Elteren's stratified rank test and the between-host variance share (pgfslab.analysis.stats.blocked),
against hand-worked examples, scipy's Mann-Whitney test (one stratum) and an exact enumeration of the
permutation distribution (the moments the test's normal approximation uses)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from pgfslab.analysis.stats.blocked import blocked_comparison, host_variance_share, van_elteren


def test_hand_worked_two_strata() -> None:
    # host a: baseline 1, 2; candidate 3 -> ranks 1 2 3, W = 3, weight 1/(3+1)
    # host b: baseline 10; candidate 20, 30 -> ranks 1 2 3, W = 2 + 3 = 5, weight 1/4
    # T = 3/4 + 5/4 = 2; E = 1/2 + 2/2 = 1.5; Var = 2*1/(12*4) + 1*2/(12*4) = 1/12
    # z = 0.5 / sqrt(1/12) = sqrt(3) = 1.7320508; p = 2 * (1 - Phi(1.7320508)) = 0.0832645
    r = van_elteren([1, 2, 3, 10, 20, 30], [False, False, True, False, True, True], ["a", "a", "a", "b", "b", "b"])
    assert r.statistic == pytest.approx(2.0)
    assert r.expected == pytest.approx(1.5)
    assert r.variance == pytest.approx(1 / 12)
    assert r.z == pytest.approx(1.7320508, abs=1e-7)
    assert r.p == pytest.approx(0.0832645, abs=1e-6)
    assert r.strata == 2


def test_hand_worked_ties() -> None:
    # one stratum: baseline 1, 2, 2; candidate 2, 3 -> midranks 1, 3, 3 | 3, 5; W = 8, n = 5, weight 1/6
    # T = 8/6; E = 2/2 = 1; ties: one group of t = 3 -> 1 - (27 - 3)/(125 - 5) = 0.8
    # Var = 3*2/(12*6) * 0.8 = 1/15; z = (1/3) / sqrt(1/15) = 1.2909944
    r = van_elteren([1, 2, 2, 2, 3], [False, False, False, True, True], [0] * 5)
    assert r.statistic == pytest.approx(8 / 6)
    assert r.variance == pytest.approx(1 / 15)
    assert r.z == pytest.approx(1.2909944, abs=1e-7)


@pytest.mark.parametrize("seed", range(5))
def test_one_stratum_is_mann_whitney_normal_approximation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = np.round(rng.normal(100, 10, 7), 0)  # rounded: ties happen
    b = np.round(rng.normal(105, 10, 6), 0)
    r = van_elteren(np.r_[a, b], np.r_[np.zeros(7, bool), np.ones(6, bool)], np.zeros(13))
    mw = sps.mannwhitneyu(b, a, use_continuity=False, method="asymptotic")
    assert r.p == pytest.approx(mw.pvalue, rel=1e-9)


def _exact_moments(values: list[float], strata: list[int], k_per: dict[int, int]) -> tuple[float, float]:
    """Mean and variance of T over every assignment of k_h candidates within each stratum (scipy's rankdata)."""
    per_stratum = []
    for s in sorted(set(strata)):
        idx = [i for i, x in enumerate(strata) if x == s]
        ranks = sps.rankdata([values[i] for i in idx])
        n = len(idx)
        per_stratum.append([sum(ranks[list(c)]) / (n + 1) for c in itertools.combinations(range(n), k_per[s])])
    totals = [sum(c) for c in itertools.product(*per_stratum)]
    return float(np.mean(totals)), float(np.var(totals))


def test_moments_match_exact_enumeration() -> None:
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0]
    strata = [0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    cand = [True, False, True, False, False, True, False, True, True, False, True]
    k_per = {s: sum(c for c, x in zip(cand, strata) if x == s) for s in set(strata)}
    mean, var = _exact_moments(values, strata, k_per)
    r = van_elteren(values, cand, strata)
    assert r.expected == pytest.approx(mean)
    assert r.variance == pytest.approx(var)


def test_the_host_is_a_block() -> None:
    """Three hosts, 1x, 2x and 3x as fast; on each the candidate is 3.5 tps better in every run. Shifting one
    host's runs changes nothing stratified; the pooled rank test drowns the effect in the host's."""
    base = np.array([100.0, 101, 102, 103, 104, 105])
    values, group, hosts = [], [], []
    for h, speed in enumerate((1, 2, 3)):
        values += [*(base * speed), *((base + 3.5) * speed)]
        group += [False] * 6 + [True] * 6
        hosts += [h] * 12
    x, g, s = np.array(values), np.array(group), np.array(hosts)
    blocked = van_elteren(x, g, s)
    assert blocked.p < 0.001
    assert sps.mannwhitneyu(x[g], x[~g]).pvalue > 0.1
    shifted = x + np.where(s == 1, 1000.0, 0.0)  # host 1 even faster, for every target
    assert van_elteren(shifted, g, s).p == pytest.approx(blocked.p)


def test_strata_without_both_groups_are_left_out() -> None:
    r = van_elteren([1, 2, 3, 7, 8], [False, True, False, True, True], ["a", "a", "a", "b", "b"])
    assert r.strata == 1
    only_a = van_elteren([1, 2, 3], [False, True, False], ["a"] * 3)
    assert r.z == pytest.approx(only_a.z)


def test_host_variance_share_hand_worked() -> None:
    # host a: 1, 3; host b: 5, 7. Means 2, 6; grand mean 4. SSB = 2*4 + 2*4 = 16, MSB = 16;
    # SSW = 4, MSW = 4/2 = 2; n0 = (4 - 8/4)/1 = 2; sigma2_host = (16 - 2)/2 = 7; share = 7/9
    s = host_variance_share([1, 3, 5, 7], ["a", "a", "b", "b"])
    assert s.between == pytest.approx(7.0)
    assert s.within == pytest.approx(2.0)
    assert s.share == pytest.approx(7 / 9)
    # no host effect at all: the between-host estimate is truncated at 0
    assert host_variance_share([1, 3, 1, 3], ["a", "a", "b", "b"]).share == 0.0
    assert math.isnan(host_variance_share([1, 3], ["a", "a"]).share)


def test_blocked_comparison_table() -> None:
    rows = []
    for host, speed in (("h1", 1.0), ("h2", 2.0)):
        for i, v in enumerate([100.0, 102, 98, 101, 99]):
            rows.append({"workload": "tpcb", "clients": 4, "host": host, "target": "ext4", "value": v * speed})
            rows.append(
                {"workload": "tpcb", "clients": 4, "host": host, "target": "xfs", "value": (v + 10 + 0.1 * i) * speed}
            )
    out = blocked_comparison(pl.DataFrame(rows), "ext4")
    assert out.height == 1
    row = out.row(0, named=True)
    assert row["hosts"] == 2 and row["runs"] == 20
    # every xfs run beats every ext4 run on its host: W_h is its maximum, 5*(6+10)/2 = 40 of n=10
    # T = 2 * 40/11; E = 5; Var = 2 * 25/(12*11); z = (80/11 - 5)/sqrt(50/132)
    assert row["z"] == pytest.approx((80 / 11 - 5) / math.sqrt(50 / 132))
    assert row["ratio_per_host"] == "h1 1.100, h2 1.100"  # medians 110/100 on each host
    assert row["host_share_baseline"] > 0.9  # h2 is twice as fast: nearly all variance is the host's
