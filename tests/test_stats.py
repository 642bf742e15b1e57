from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as sps

from pipeline import stats


def brute_force_coverage(n: int, lo: int, hi: int) -> float:
    # P(x_(lo) <= median <= x_(hi)) = P(lo <= #obs below median <= hi - 1), #below ~ Binomial(n, 1/2)
    return sum(math.comb(n, k) for k in range(lo, hi)) / 2**n


@pytest.mark.parametrize("n", range(1, 30))
def test_median_ci_ranks_exact_coverage(n):
    lo, hi, cov = stats.median_ci_ranks(n)
    assert cov == pytest.approx(brute_force_coverage(n, lo, hi))
    if n >= 6:
        assert cov >= 0.95
        # and it is the narrowest such symmetric interval
        if lo + 1 <= hi - 1:
            assert brute_force_coverage(n, lo + 1, hi - 1) < 0.95
    else:
        assert (lo, hi) == (1, n)


def test_median_ci_n5_is_min_max_with_9375():
    assert stats.median_ci_ranks(5) == (1, 5, pytest.approx(0.9375))


def test_cell_summary_matches_numpy():
    rng = np.random.default_rng(1)
    vals = {"a": rng.normal(100, 10, 7), "b": rng.normal(50, 5, 5)}
    df = pl.DataFrame({"target": ["a"] * 7 + ["b"] * 5, "tps": np.concatenate([vals["a"], vals["b"]])})
    out = stats.cell_summary(df, "tps", ["target"]).sort("target")
    for row in out.iter_rows(named=True):
        v = np.sort(vals[row["target"]])
        assert row["n"] == len(v)
        assert row["mean"] == pytest.approx(v.mean())
        assert row["median"] == pytest.approx(np.median(v))
        assert row["stdev"] == pytest.approx(v.std(ddof=1))
        assert row["cv"] == pytest.approx(v.std(ddof=1) / v.mean())
        lo, hi, _ = stats.median_ci_ranks(len(v))
        assert row["median_ci_low"] == pytest.approx(v[lo - 1])
        assert row["median_ci_high"] == pytest.approx(v[hi - 1])


def test_mann_whitney_agrees_with_scipy_and_exact_enumeration():
    a, b = [10.0, 11, 12, 13, 14], [20.0, 21, 22, 23, 24]
    assert stats.mann_whitney_p(a, b) == pytest.approx(sps.mannwhitneyu(a, b).pvalue)
    # complete separation with 5 vs 5: exact two-sided p = 2 / C(10, 5)
    assert stats.mann_whitney_p(a, b) == pytest.approx(2 / 252)


@pytest.mark.parametrize("na, nb", [(3, 3), (5, 5), (2, 7), (4, 6)])
def test_min_possible_p_by_enumeration(na, nb):
    pooled = list(range(na + nb))
    ps = [stats.mann_whitney_p(list(c), [x for x in pooled if x not in c]) for c in itertools.combinations(pooled, na)]
    assert min(ps) == pytest.approx(stats.min_possible_p(na, nb))


def test_three_repeats_can_never_be_significant():
    assert stats.min_possible_p(3, 3) == pytest.approx(0.1)
    df = pl.DataFrame({"cell": ["x"] * 6, "fs": ["a"] * 3 + ["b"] * 3, "tps": [1.0, 2, 3, 100, 200, 300]})
    out = stats.compare_to_baseline(df, "tps", ["cell"], "fs", "a")
    row = out.row(0, named=True)
    assert row["reachable"] is False and row["significant"] is False


def test_compare_to_baseline_delta_and_significance():
    df = pl.DataFrame({"cell": ["x"] * 10, "fs": ["a"] * 5 + ["b"] * 5,
                       "tps": [100.0, 101, 99, 102, 98, 150, 151, 149, 152, 148]})
    row = stats.compare_to_baseline(df, "tps", ["cell"], "fs", "a").row(0, named=True)
    assert row["delta_pct"] == pytest.approx(50.0)
    assert row["significant"] is True and row["p"] < 0.05


def test_trim_warmup():
    df = pl.DataFrame({"t_s": [1.0, 2, 3, 4], "tps": [1, 2, 3, 4]})
    assert stats.trim_warmup(df, 2)["t_s"].to_list() == [3.0, 4.0]
