"""What a comparison could have detected: the smallest shift the Mann-Whitney U test (two-sided, exact)
finds with a given power, for the sample sizes and run-to-run noise a study had.

A comparison that is not significant is an answer only with this number beside it: "no difference
found, and a difference of 4 % or more would have been found 80 % of the time" says something;
"not significant" alone does not. The shift is computed for normal run-to-run noise with the pooled
standard deviation of the two samples (by simulation with common random numbers, against the exact
null distribution of U), so it is an estimate for that model, stated as such.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np

from pgfslab.analysis.stats.utest import u_null_distribution


@cache
def u_null_cdf(n1: int, n2: int) -> np.ndarray:
    """P(U <= u) for u = 0..n1*n2 under the null (no ties), U = #{(i, j): x_i > y_j}: the exact
    distribution of `utest.u_null_distribution` without ties (it holds 2 U; odd entries are 0)."""
    cdf = np.cumsum(u_null_distribution(n1, [1] * (n1 + n2))[::2])
    cdf.flags.writeable = False  # cached: shared by every caller
    return cdf


def critical_u(n1: int, n2: int, alpha: float) -> int | None:
    """The largest c such that the two-sided exact test rejects when min(U, n1*n2 - U) <= c at level
    alpha (P <= alpha under the null); None when no outcome is that extreme (too few runs)."""
    cdf = u_null_cdf(n1, n2)
    ok = np.nonzero(2 * cdf <= alpha)[0]
    return int(ok[-1]) if len(ok) else None


def power(n1: int, n2: int, shift_sd: float, alpha: float, reps: int = 4000, seed: int = 20261124) -> float:
    """Probability that the exact two-sided U test rejects at `alpha` when the second sample is shifted
    by `shift_sd` standard deviations (normal noise), estimated from `reps` simulated studies."""
    c = critical_u(n1, n2, alpha)
    if c is None:
        return 0.0
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((reps, n1, 1))
    y = rng.standard_normal((reps, 1, n2)) + shift_sd
    u = (x > y).sum(axis=(1, 2))
    extreme = np.minimum(u, n1 * n2 - u)
    return float((extreme <= c).mean())


def smallest_shift(power_at: Callable[[float], float], target_power: float) -> float:
    """The smallest shift (in standard deviations) at which a test's power, `power_at(shift)`, reaches
    `target_power`: doubling from 1, then bisection to 0.001; infinity beyond 64."""
    lo, hi = 0.0, 1.0
    while power_at(hi) < target_power:
        lo, hi = hi, hi * 2
        if hi > 64:
            return math.inf
    for _ in range(30):
        mid = (lo + hi) / 2
        if power_at(mid) >= target_power:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1e-3:
            break
    return hi


def detectable_shift_sd(n1: int, n2: int, alpha: float, target_power: float = 0.8) -> float:
    """The smallest shift, in standard deviations, that the test detects with `target_power`;
    infinity when the sample sizes cannot reach `alpha` at all."""
    if critical_u(n1, n2, alpha) is None:
        return math.inf
    return smallest_shift(lambda shift: power(n1, n2, shift, alpha), target_power)


def pooled_sd(a: np.ndarray, b: np.ndarray) -> float:
    """Pooled standard deviation of two samples (ddof 1 each)."""
    na, nb = len(a), len(b)
    if na + nb <= 2:
        return math.nan
    va = float(np.var(a, ddof=1)) if na > 1 else 0.0
    vb = float(np.var(b, ddof=1)) if nb > 1 else 0.0
    return math.sqrt(((na - 1) * va + (nb - 1) * vb) / (na + nb - 2))
