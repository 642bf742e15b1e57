"""benchstat's summary of one sample: its center and interval (median with the order-statistic
confidence interval, or old benchstat's outlier-trimmed mean with min/max) and the `± x%` printed
beside it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pgfslab.analysis.stats.median_ci import median_ci_samples_needed, quantile_ci_orders


@dataclass(frozen=True)
class Summary:
    """Center of a sample and its confidence interval (lo/hi may be infinite)."""

    n: int
    center: float
    lo: float
    hi: float
    confidence: float
    note: str | None = None


def median_summary(values: np.ndarray | list[float], confidence: float = 0.95) -> Summary:
    """Median with benchstat's distribution-free CI (order statistics, see `quantile_ci_orders`)."""
    xs = np.sort(np.asarray(values, float))
    n = len(xs)
    if n == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, "no samples")
    lo_o, hi_o, cov = quantile_ci_orders(n, 0.5, confidence)
    lo = float(xs[lo_o - 1]) if lo_o >= 1 else -math.inf
    hi = float(xs[hi_o - 1]) if hi_o <= n else math.inf
    note = None
    if math.isinf(lo) or math.isinf(hi):
        need = median_ci_samples_needed(confidence)
        note = (
            f"need >= {need} samples for confidence interval at level {confidence:g}"
            if need
            else f"need > 50 samples for confidence interval at level {confidence:g}"
        )
    return Summary(n, float(np.median(xs)), lo, hi, cov, note)


def v1_kept_values(values: np.ndarray | list[float]) -> np.ndarray:
    """The values old benchstat kept: those inside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (R8 quartiles)."""
    xs = np.sort(np.asarray(values, float))
    if len(xs) == 0:
        return xs
    # Hyndman-Fan type 8 quartiles, as go-moremath's Sample.Percentile (old benchstat)
    q1, q3 = (float(q) for q in np.quantile(xs, [0.25, 0.75], method="median_unbiased"))
    lo, hi = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    return xs[(xs >= lo) & (xs <= hi)]


def v1_summary(values: np.ndarray | list[float]) -> Summary:
    """Old benchstat's (pre-2023, seed 003's) summary: mean of the non-outliers, with lo/hi their
    min/max; its `± x%` is max(1 - min/mean, max/mean - 1). Not a confidence interval."""
    kept = v1_kept_values(values)
    if len(kept) == 0:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, "no samples")
    return Summary(len(kept), float(kept.mean()), float(kept.min()), float(kept.max()), math.nan)


def pct_range(center: float, lo: float, hi: float) -> float:
    """benchstat's `± x%` of a summary as a fraction: max(hi/center - 1, 1 - lo/center); inf when a
    bound is infinite, NaN ("?") when the bounds' signs differ from the center's, 0 when all are 0."""
    if math.isnan(center) or math.isnan(lo) or math.isnan(hi):
        return math.nan
    if math.isinf(lo) or math.isinf(hi):
        return math.inf
    s = np.sign(center)
    if s != np.sign(lo) or s != np.sign(hi):
        return math.nan
    if center == 0:
        return 0.0
    return max(hi / center - 1, 1 - lo / center)
