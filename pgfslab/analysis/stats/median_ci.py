"""The lab's one distribution-free confidence interval of a median (or any quantile): order
statistics chosen from binomial probabilities as go-moremath's `QuantileCI` chooses them, which is
what benchstat prints, so that a cell's interval and a benchstat table's `± x%` are the same interval.
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache

from scipy import stats as sps

# go-moremath QuantileCI: exact binomial up to this n, normal approximation above
QUANTILE_CI_EXACT_LIMIT = 30


def _binom_pmf(n: int, q: float) -> list[float]:
    if q == 0.5:  # exact, so that symmetric probabilities compare equal
        return [float(Fraction(math.comb(n, k), 2**n)) for k in range(n + 1)]
    return [math.comb(n, k) * q**k * (1 - q) ** (n - k) for k in range(n + 1)]


@cache
def quantile_ci_orders(n: int, q: float = 0.5, confidence: float = 0.95) -> tuple[int, int, float]:
    """1-based order statistics (lo, hi) bounding the confidence interval of the q-quantile, and the
    interval's actual coverage, as go-moremath's `QuantileCI` (which benchstat uses) computes them.

    lo = 0 or hi = n + 1 means an unbounded side (too few samples): benchstat then prints `± ∞`.
    For n <= 30 it accumulates binomial(n, q) probabilities outwards from the mode (left-biased on
    ties) until the coverage reaches `confidence`, which gives the narrowest interval reaching it
    (not always an equal-tailed one: n = 8 gives (1, 7)); above, the normal approximation with
    continuity correction. Example: n = 6 at 95 % gives (1, 6) with coverage 1 - 2/64; n = 5 gives (0, 5).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    if confidence >= 1:
        return 0, n + 1, 1.0
    if n <= QUANTILE_CI_EXACT_LIMIT:
        pmf = _binom_pmf(n, q)

        def p(k: int) -> float:
            return pmf[k] if 0 <= k <= n else 0.0

        x = 0 if q == 0 else math.ceil((n + 1) * q) - 1
        accum = p(x)
        lo, hi = x, x + 1
        lp, rp = p(lo - 1), p(hi)
        while accum < confidence and (lp > 0 or rp > 0):
            if lp >= rp:  # left bias
                accum += lp
                lo -= 1
                lp = p(lo - 1)
            else:
                accum += rp
                hi += 1
                rp = p(hi)
        coverage = accum
    else:
        mu, sigma = n * q, math.sqrt(n * q * (1 - q))
        norm = sps.norm(mu, sigma)
        l1 = float(norm.ppf((1 - confidence) / 2))
        r1 = 2 * mu - l1
        lo = math.floor(l1 - 0.5) + 1
        hi = math.ceil(r1 - 0.5) + 1

        def cdf(a: int, b: int) -> float:
            return float(norm.cdf(b - 0.5) - norm.cdf(a - 0.5))

        coverage = cdf(lo, hi)
        biased = cdf(lo, hi - 1)
        if confidence <= biased < coverage:
            coverage, hi = biased, hi - 1
        if lo <= 0 and hi >= n + 1:
            coverage = 1.0
    return max(lo, 0), min(hi, n + 1), coverage


def median_ci_samples_needed(confidence: float = 0.95, limit: int = 50) -> int | None:
    """Smallest n whose median CI at `confidence` is finite on both sides (benchstat's "need >= N
    samples for confidence interval"); None when more than `limit` would be needed."""
    for n in range(2, limit + 1):
        lo, hi, _ = quantile_ci_orders(n, 0.5, confidence)
        if lo > 0 and hi <= n:
            return n
    return None


@cache
def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int, float]:
    """The median's interval of `quantile_ci_orders` as 1-based ranks of the sample (lo, hi) with its
    exact coverage P(x_(lo) <= median <= x_(hi)) from binomial(n, 1/2). Where the interval would be
    unbounded (n too small for `confidence`) the side is the sample's min or max, and the coverage
    says how far short it falls (n = 5: (1, 5) with 93.75 %)."""
    lo, hi, _ = quantile_ci_orders(n, 0.5, confidence)
    lo, hi = max(lo, 1), min(hi, n)
    # P(lo <= #values below the median <= hi - 1)
    coverage = float(sps.binom.cdf(hi - 1, n, 0.5) - sps.binom.cdf(lo - 1, n, 0.5))
    return lo, hi, coverage
