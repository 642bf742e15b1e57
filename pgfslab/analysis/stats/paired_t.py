"""Student's paired t on per-round log-ratios: the interval of a comparison paired by round that is not limited by
a rank test's granularity.

With n rounds the exact signed-rank test can reject no more often than its 2^n sign patterns allow: at 6 rounds
its 95 % interval is the range of the Walsh averages, and at the 97.5 % a claim of two primary cells needs (Bonferroni)
it needs 7 rounds before any interval exists. The paired t interval (Student 1908; Hollander, Wolfe & Chicken,
*Nonparametric Statistical Methods*, 3rd ed., 2014, sec. 3.1 compare it with the signed-rank one) uses the
differences' standard deviation: mean(d) ± t(1 - alpha/2, n - 1) · sd(d) / sqrt(n). It assumes the per-round
log-ratios are independent and roughly normal; the lab checks that on its own recorded runs instead of assuming
it (`pgfslab.analysis.verdicts.calibration`: twins' labels swapped within rounds and a known ratio injected,
the share of intervals that cover it).

The differences d are B's log value minus A's in each round where both ran: whatever a round shares (the host's
speed over those few minutes, a drift of every target over the study) cancels in d, and B's and A's own noise
need not be alike (no pooled variance).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from pgfslab.analysis.stats.power import smallest_shift

# fewer rounds give an interval, but one whose t quantile (12.7 at 2 rounds) makes it a formality
MIN_ROUNDS = 3


def shift_interval(d: np.ndarray, alpha: float) -> tuple[float, float, float, float]:
    """The mean of the paired differences `d` with its 1 - alpha t interval: (estimate, lo, hi, coverage).
    Fewer than MIN_ROUNDS pairs: the mean alone (an infinite interval, nan coverage); every difference
    equal: a zero-width interval at the mean."""
    x = np.asarray(d, float)
    x = x[np.isfinite(x)]
    n = len(x)
    if n == 0:
        return math.nan, -math.inf, math.inf, math.nan
    mean = float(x.mean())
    if n < MIN_ROUNDS:
        return mean, -math.inf, math.inf, math.nan
    half = float(sps.t.ppf(1 - alpha / 2, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return mean, mean - half, mean + half, 1 - alpha


def power(n: int, shift_sd: float, alpha: float) -> float:
    """Probability that the two-sided paired t test rejects at `alpha` when the differences are normal with mean
    `shift_sd` standard deviations (of the differences): the noncentral t with n - 1 degrees of freedom."""
    if n < MIN_ROUNDS:
        return 0.0
    q = float(sps.t.ppf(1 - alpha / 2, n - 1))
    nc = shift_sd * math.sqrt(n)
    return float(sps.nct.sf(q, n - 1, nc) + sps.nct.cdf(-q, n - 1, nc))


def detectable_shift_sd(n: int, alpha: float, target_power: float = 0.8) -> float:
    """The smallest mean paired difference, in standard deviations of the differences, that the test detects with
    `target_power`; infinity below MIN_ROUNDS pairs."""
    if n < MIN_ROUNDS:
        return math.inf
    return smallest_shift(lambda shift: power(n, shift, alpha), target_power)
