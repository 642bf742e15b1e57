"""The lab's statistics, in one module (tested against scipy and hand-worked cases).

Cells are all repeats of one configuration (target x workload x clients). Repeats are the unit
of comparison: per-second samples within a run are autocorrelated and are not independent.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import polars as pl
from scipy import stats as sps


@cache
def median_ci_ranks(n: int, confidence: float = 0.95) -> tuple[int, int, float]:
    """Distribution-free CI for the median from order statistics.

    Returns 1-based ranks (lo, hi) and the exact coverage P(x_(lo) <= median <= x_(hi)), from the
    binomial(n, 1/2) distribution. The widest interval (min, max) is returned when n is too small
    to reach `confidence`; its coverage then says how far short it falls (n=5: 93.75 %).
    """
    if n < 1:
        raise ValueError("n must be >= 1")
    best = (1, n, 1 - 2 * 0.5**n)
    for k in range(1, n // 2 + 1):
        coverage = 1 - 2 * float(sps.binom.cdf(k - 1, n, 0.5))
        if coverage >= confidence:
            best = (k, n - k + 1, coverage)
        else:
            break
    return best


def cell_summary(df: pl.DataFrame, value: str, by: list[str], confidence: float = 0.95) -> pl.DataFrame:
    """n, mean, median (with a distribution-free CI), stdev, CV, min and max of `value` per cell."""
    agg = (
        df.filter(pl.col(value).is_not_null())
        .group_by(by, maintain_order=True)
        .agg(
            pl.len().alias("n"),
            pl.col(value).mean().alias("mean"),
            pl.col(value).median().alias("median"),
            pl.col(value).std().alias("stdev"),
            pl.col(value).min().alias("min"),
            pl.col(value).max().alias("max"),
            pl.col(value).sort().alias("_sorted"),
        )
    )
    ranks = pl.DataFrame(
        [{"n": n, "_lo": lo - 1, "_hi": hi - 1, "ci_coverage": cov}
         for n in agg["n"].unique().to_list() for lo, hi, cov in [median_ci_ranks(int(n), confidence)]],
        schema={"n": pl.UInt32, "_lo": pl.Int64, "_hi": pl.Int64, "ci_coverage": pl.Float64},
    )
    return (
        agg.with_columns(pl.col("n").cast(pl.UInt32))
        .join(ranks, on="n", how="left")
        .with_columns(
            pl.col("_sorted").list.get(pl.col("_lo")).alias("median_ci_low"),
            pl.col("_sorted").list.get(pl.col("_hi")).alias("median_ci_high"),
            (pl.col("stdev") / pl.col("mean")).alias("cv"),
        )
        .drop("_sorted", "_lo", "_hi")
    )


def mann_whitney_p(a: np.ndarray | list[float], b: np.ndarray | list[float]) -> float:
    """Two-sided Mann-Whitney U p-value (exact when there are no ties and samples are small)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) == 0 or len(b) == 0:
        return math.nan
    return float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def min_possible_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided p a rank test can give for these sample sizes (2 / C(n_a+n_b, n_a))."""
    return min(1.0, 2.0 / math.comb(n_a + n_b, n_a))


def compare_to_baseline(df: pl.DataFrame, value: str, cell: list[str], group: str, baseline: str,
                        alpha: float = 0.05) -> pl.DataFrame:
    """For each cell, each `group` level vs `baseline`: medians, delta %, Mann-Whitney p, verdict.

    `significant` is False (shown as `~`) where p >= alpha or where the sample sizes cannot reach
    alpha at all (`reachable` False) — the benchstat convention, with the reason kept.
    """
    rows = []
    for key, part in df.filter(pl.col(value).is_not_null()).group_by(cell, maintain_order=True):
        base = part.filter(pl.col(group) == baseline)[value].to_numpy()
        for other in part[group].unique(maintain_order=True).to_list():
            if other == baseline:
                continue
            cand = part.filter(pl.col(group) == other)[value].to_numpy()
            if len(base) == 0 or len(cand) == 0:
                continue
            p = mann_whitney_p(base, cand)
            reachable = min_possible_p(len(base), len(cand)) < alpha
            mb, mc = float(np.median(base)), float(np.median(cand))
            rows.append({**dict(zip(cell, key)), "baseline": baseline, group: other,
                         "n_baseline": len(base), "n": len(cand), "median_baseline": mb, "median": mc,
                         "delta_pct": 100.0 * (mc - mb) / mb if mb else math.nan, "p": p,
                         "reachable": reachable, "significant": bool(reachable and p < alpha)})
    return pl.DataFrame(rows)


def trim_warmup(df: pl.DataFrame, trim_s: float, time: str = "t_s") -> pl.DataFrame:
    """Drop the first `trim_s` seconds of every run (fixed trim; recorded by the caller)."""
    return df.filter(pl.col(time) > trim_s)
