"""The ratio of two targets' typical values with a distribution-free interval, and what it says of a claim.

The ratio is B/A of the runs' headline values (e.g. btrfs's tps over ext4's in one cell). Its point
estimate is the Hodges-Lehmann shift of the logarithms (the median of all pairwise log-ratios,
exponentiated); its interval inverts the exact Mann-Whitney test that the significance tables use
(order statistics of the pairwise log-ratios at the test's critical value), so the interval and the
test agree: the interval excludes 1 exactly when the rank test is significant at the same level.
It needs no normality and no equal variances, only that B is A shifted on the log scale.

Few runs (3 against 3, 2 against 2) cannot give an interval at 95 %: the widest one, from the smallest to
the largest pairwise ratio, covers 1 - 2 / C(n_a + n_b, n_a) (90 % for 3 against 3). It is reported with
that coverage, so the reader sees what the runs say, and no verdict is drawn from it (`verdict` asks for
the coverage that was asked for).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pgfslab.analysis.stats.power import critical_u, u_null_cdf

Direction = Literal["within", "greater", "less"]
Verdict = Literal["holds", "does not hold", "not resolved"]


@dataclass(frozen=True)
class RatioCI:
    ratio: float
    lo: float
    hi: float
    n_a: int
    n_b: int
    confidence: float  # exact coverage of the interval (>= the asked one), nan when none exists

    @property
    def half_width_pct(self) -> float:
        """Half the interval's width in % of the ratio (its precision); infinite without an interval."""
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            return math.inf
        return 100 * (self.hi - self.lo) / 2 / self.ratio


def ratio_ci(a: np.ndarray | list[float], b: np.ndarray | list[float], alpha: float = 0.05) -> RatioCI:
    """B/A with its 1 - alpha (or more) distribution-free interval; when the run counts are too small for
    any interval at that level (n = 3 vs 3 at alpha 0.05), the widest there is (the smallest to the largest
    pairwise ratio) with its lower exact coverage."""
    xa, xb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    n_a, n_b = len(xa), len(xb)
    if n_a == 0 or n_b == 0:
        return RatioCI(math.nan, 0.0, math.inf, n_a, n_b, math.nan)
    d = np.sort((xb[None, :] - xa[:, None]).ravel())
    point = float(np.exp(np.median(d)))
    c = critical_u(n_a, n_b, alpha)
    if c is None:  # no interval reaches 1 - alpha: the widest one, with the coverage it has
        if len(d) < 2:
            return RatioCI(point, 0.0, math.inf, n_a, n_b, math.nan)
        c = 0
    coverage = 1 - 2 * float(u_null_cdf(n_a, n_b)[c])
    return RatioCI(point, float(np.exp(d[c])), float(np.exp(d[len(d) - 1 - c])), n_a, n_b, coverage)


def verdict(ci: RatioCI, direction: Direction, threshold: float, level: float = 0.95) -> Verdict:
    """What the interval says of a claim about B/A; an interval covering less than `level` (too few runs
    for one that does) resolves nothing.

    within t:   holds if the whole interval lies in [1 - t, 1 + t]; does not hold if none of it does.
    greater f:  holds if the interval lies at or above f; does not hold if it lies below f.
    less f:     holds if the interval lies at or below f; does not hold if it lies above f.
    Anything else is not resolved at the precision reached (the interval straddles the claim's edge)."""
    lo, hi = ci.lo, ci.hi
    if math.isnan(ci.ratio) or not ci.confidence >= level - 1e-9:
        return "not resolved"
    if direction == "within":
        if 1 - threshold <= lo and hi <= 1 + threshold:
            return "holds"
        if hi < 1 - threshold or lo > 1 + threshold:
            return "does not hold"
        return "not resolved"
    if direction == "greater":
        if lo >= threshold:
            return "holds"
        if hi < threshold:
            return "does not hold"
        return "not resolved"
    if lo > threshold:
        return "does not hold"
    if hi <= threshold:
        return "holds"
    return "not resolved"
