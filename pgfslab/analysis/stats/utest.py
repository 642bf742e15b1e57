"""The Mann-Whitney U test as benchstat computes it (go-moremath `MannWhitneyUTest`), and the exact
null distribution of U that the lab's power and ratio-interval calculations also use.

scipy's `mannwhitneyu(method="exact")` ignores ties and gives a p-value, not the distribution; the
exact distribution conditional on the tie pattern (Klotz 1966) is computed here, once, by dynamic
programming. The normal approximation (large samples) is scipy's, with tie and continuity
corrections, which is go-moremath's formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Literal

import numpy as np
from scipy import stats as sps

# go-moremath: exact U distribution up to these sample sizes (per side)
UTEST_EXACT_LIMIT = 50
UTEST_TIES_EXACT_LIMIT = 25


@dataclass(frozen=True)
class UTestResult:
    """Mann-Whitney U test: U of the first sample (pairs x1 > x2, ties 0.5), two-sided p, method."""

    n1: int
    n2: int
    u: float
    p: float
    method: Literal["exact", "exact-ties", "normal", "none"]
    note: str | None = None


def u_null_distribution(n1: int, tie_sizes: tuple[int, ...] | list[int]) -> np.ndarray:
    """Null distribution of 2 U1 (index = 2 U1) for a first sample of n1 values, conditional on the
    tie pattern of the pooled sample (`tie_sizes`: the size of each group of equal values, in
    ascending order of value; all 1 without ties). Exact, by dynamic programming over the doubled
    mid-rank sum of a random n1-subset of the pooled sample."""
    return _u_null_distribution(n1, tuple(tie_sizes))


@lru_cache(maxsize=256)  # tie patterns repeat across a grid; bounded, as they are many
def _u_null_distribution(n1: int, tie_sizes: tuple[int, ...]) -> np.ndarray:
    n = sum(tie_sizes)
    total2 = n * (n + 1)  # doubled sum of all ranks
    dp = np.zeros((n1 + 1, total2 + 1))
    dp[0, 0] = 1.0
    start = 1
    for t in tie_sizes:
        r2 = 2 * start + t - 1  # doubled mid-rank of this tie group
        new = dp.copy()
        for c in range(1, min(t, n1) + 1):
            new[c:, c * r2 :] += math.comb(t, c) * dp[: n1 + 1 - c, : total2 + 1 - c * r2]
        dp = new
        start += t
    dist = dp[n1] / dp[n1].sum()
    offset = n1 * (n1 + 1)  # 2 U1 = 2 R1 - n1 (n1 + 1)
    dist = dist[offset:]
    dist.flags.writeable = False  # cached: shared by every caller
    return dist


def utest(x1: np.ndarray | list[float], x2: np.ndarray | list[float]) -> UTestResult:
    """Two-sided Mann-Whitney U test as benchstat computes it (go-moremath `MannWhitneyUTest`).

    Exact null distribution when n1, n2 <= 50 without ties or <= 25 with ties (then conditional on
    the ties, as Klotz 1966), p = 2 min(P(U1 <= u1), P(U1 >= u1)) (1 when U1 = U2); otherwise the normal
    approximation with tie and continuity corrections. scipy's `mannwhitneyu(method="exact")` ignores
    ties, and its "auto" switches to the normal approximation at n >= 8: for tied or mid-sized
    samples the two differ, which is why this exists. All values equal: p = 1 with a note.

    One deliberate difference from go-moremath: it doubles the lower tail at min(U1, U2) of U1's
    distribution, which with ties is not symmetric, so an asymmetric tie pattern can give p = 0
    (its own test: {1,2,3,5} vs {1,1,1,1,1} -> 0). Here both tails of U1 are used (0.095 there);
    without ties, or with a symmetric tie pattern, the two agree.
    """
    a, b = np.asarray(x1, float), np.asarray(x2, float)
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return UTestResult(n1, n2, math.nan, math.nan, "none", "too few samples")
    pooled = np.concatenate([a, b])
    ranks = sps.rankdata(pooled)  # mid-ranks
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    _, tie_sizes = np.unique(pooled, return_counts=True)
    has_ties = len(tie_sizes) < n1 + n2
    if len(tie_sizes) == 1:
        return UTestResult(n1, n2, u1, 1.0, "none", "all samples are equal")
    limit = UTEST_TIES_EXACT_LIMIT if has_ties else UTEST_EXACT_LIMIT
    if n1 > limit or n2 > limit:
        p = float(sps.mannwhitneyu(a, b, alternative="two-sided", method="asymptotic").pvalue)
        return UTestResult(n1, n2, u1, p, "normal")
    if u1 == u2:
        p = 1.0
    else:
        dist = u_null_distribution(n1, tie_sizes.tolist())
        k = round(2 * u1)
        p = min(1.0, 2 * min(float(dist[: k + 1].sum()), float(dist[k:].sum())))
    return UTestResult(n1, n2, u1, p, "exact-ties" if has_ties else "exact")


@cache
def utest_min_p(n1: int, n2: int) -> float:
    """Smallest two-sided p the U test can give for these sizes (complete separation, no ties):
    2 / C(n1 + n2, n1), at most 1."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def utest_samples_needed(alpha: float = 0.05, limit: int = 10) -> int | None:
    """Smallest n per side for which n vs n can reach p <= alpha (benchstat's "need >= N samples to
    detect a difference"): 4 at alpha 0.05, 5 at 0.01. None beyond `limit`."""
    for n in range(1, limit + 1):
        if utest_min_p(n, n) <= alpha:
            return n
    return None


def mann_whitney_p(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> float:
    """Two-sided Mann-Whitney U p-value as benchstat computes it (`utest`): exact up to
    50 per side without ties and 25 with ties (conditional on the ties), else the normal
    approximation with tie and continuity corrections. Without ties and for n < 8 this equals
    scipy's default; scipy would switch to the normal approximation from n = 8 and ignore ties in
    its exact method. NaN for an empty sample; 1 when all values are equal."""
    return utest(a, b).p


# the smallest two-sided p a rank test can give for these sample sizes (2 / C(n_a + n_b, n_a))
min_possible_p = utest_min_p
