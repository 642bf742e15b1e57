"""The Wilcoxon signed-rank test's exact null distribution, its critical value, and what a paired comparison
can detect: the statistics of a comparison paired by round (the runs of two targets in one round of the
interleaved plan ran minutes apart, on the host as it was then).

W+ is the sum of the ranks of the positive differences among n nonzero paired differences. Under the null
(differences symmetric about 0, no ties) each of the 2^n sign patterns is equally likely, so P(W+ = w) is the
number of subsets of {1, ..., n} summing to w over 2^n (Hollander, Wolfe & Chicken, *Nonparametric
Statistical Methods*, 3rd ed., 2014, sec. 3.1). The Hodges-Lehmann estimate of the shift is the median of the
n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j, and the exact 1 - alpha interval runs from the (c+1)-th smallest
to the (c+1)-th largest of them, c the test's critical value (sec. 3.3): the interval excludes 0 exactly when
the test rejects at the same level.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from pgfslab.analysis.stats.power import smallest_shift


@cache
def w_null_cdf(n: int) -> np.ndarray:
    """P(W+ <= w) for w = 0..n(n+1)/2 under the null: subset-sum counts of {1..n} over 2^n."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1, dtype=np.float64)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k]  # the right side is built before it is assigned
    cdf = np.cumsum(counts) / 2.0**n
    cdf.flags.writeable = False  # cached: shared by every caller
    return cdf


def critical_w(n: int, alpha: float) -> int | None:
    """The largest c such that the two-sided exact test rejects when min(W+, M - W+) <= c at level alpha
    (M = n(n+1)/2); None when no outcome is that extreme (too few pairs: fewer than 6 at alpha 0.05)."""
    if n < 1:
        return None
    ok = np.nonzero(2 * w_null_cdf(n) <= alpha + 1e-12)[0]
    return int(ok[-1]) if len(ok) else None


def walsh_averages(d: np.ndarray) -> np.ndarray:
    """The n(n+1)/2 averages (d_i + d_j)/2 over i <= j, sorted."""
    i, j = np.triu_indices(len(d))
    return np.sort((d[i] + d[j]) / 2)


def shift_interval(d: np.ndarray, alpha: float) -> tuple[float, float, float, float]:
    """The Hodges-Lehmann shift of paired differences `d` with its exact interval: (estimate, lo, hi,
    coverage). With too few pairs for any interval at 1 - alpha, the widest there is (the smallest to the
    largest Walsh average) with its lower coverage; no pairs: nan."""
    n = len(d)
    if n == 0:
        return math.nan, -math.inf, math.inf, math.nan
    w = walsh_averages(np.asarray(d, float))
    point = float(np.median(w))
    c = critical_w(n, alpha)
    if c is None:
        if n < 2:
            return point, -math.inf, math.inf, math.nan
        c = 0
    coverage = 1 - 2 * float(w_null_cdf(n)[c])
    return point, float(w[c]), float(w[len(w) - 1 - c]), coverage


def pairs_needed(alpha: float) -> int:
    """The fewest pairs whose exact signed-rank interval exists at `alpha`."""
    return next(n for n in range(1, 64) if critical_w(n, alpha) is not None)


def power(n: int, shift_sd: float, alpha: float, reps: int = 4000, seed: int = 20261129) -> float:
    """Probability that the exact two-sided signed-rank test rejects at `alpha` when the paired differences
    are normal with mean `shift_sd` standard deviations (of the differences), from `reps` simulated studies."""
    c = critical_w(n, alpha)
    if c is None:
        return 0.0
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((reps, n)) + shift_sd
    ranks = np.argsort(np.argsort(np.abs(d), axis=1), axis=1) + 1
    w_plus = (ranks * (d > 0)).sum(axis=1)
    extreme = np.minimum(w_plus, n * (n + 1) // 2 - w_plus)
    return float((extreme <= c).mean())


def detectable_shift_sd(n: int, alpha: float, target_power: float = 0.8) -> float:
    """The smallest mean paired difference, in standard deviations of the differences, that the test detects
    with `target_power`; infinity when n pairs cannot reach `alpha` at all."""
    if critical_w(n, alpha) is None:
        return math.inf
    return smallest_shift(lambda shift: power(n, shift, alpha), target_power)
