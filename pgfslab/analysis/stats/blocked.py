"""Target comparisons with the host as a blocking factor (a study measured on several machines).

* `van_elteren`: van Elteren's stratified Wilcoxon rank-sum test (van Elteren 1960; Lehmann,
  *Nonparametrics*, 2006, sec. 3.3). Each stratum (host) ranks its own values (midranks for ties); the
  rank sum W_h of the candidate's values in stratum h is weighted by 1/(n_h + 1), so every host counts
  about equally however many runs it has, and a host that is faster overall cannot make a target look
  faster. T = sum_h W_h/(n_h+1), E[T] = sum_h k_h/2, Var[T] = sum_h m_h k_h/(12 (n_h+1)) * (1 - sum_t
  (t^3 - t)/(n_h^3 - n_h)) (ties t within the stratum), Z = (T - E[T])/sqrt(Var[T]), two-sided normal
  p. scipy has no such test; with one stratum it is the Mann-Whitney test in its normal approximation
  without continuity correction (the tests check that, and the moments against an exact enumeration).
* `host_variance_share`: how much of a target's run-to-run variance lies between hosts: the one-way
  random-effects variance components (ANOVA estimators, unbalanced n0), sigma2_host / (sigma2_host +
  sigma2_run), truncated at 0.
* `blocked_comparison`: both per cell (workload, clients) for a baseline and each other target.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import ArrayLike, NDArray
from scipy import stats as sps


@dataclass(frozen=True)
class VanElteren:
    statistic: float  # T = sum_h W_h / (n_h + 1)
    expected: float
    variance: float
    z: float  # positive: the candidate (group True) ranks higher
    p: float  # two-sided, normal approximation
    strata: int  # strata with both groups present (the others carry no information)


def _stratum_midranks(
    values: NDArray[np.float64], strata: NDArray[np.int64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Midranks of `values` within each stratum, and per stratum sum(t^3 - t) over its tie groups."""
    order = np.lexsort((values, strata))
    v, s = values[order], strata[order]
    n = len(v)
    new_stratum = np.r_[True, s[1:] != s[:-1]]
    stratum_start = np.maximum.accumulate(np.where(new_stratum, np.arange(n), 0))
    rank = np.arange(n) - stratum_start + 1.0
    new_tie = new_stratum | np.r_[True, v[1:] != v[:-1]]
    tie_id = np.cumsum(new_tie) - 1
    tie_size = np.bincount(tie_id)
    tie_mean = np.bincount(tie_id, weights=rank) / tie_size
    ranks = np.empty(n)
    ranks[order] = tie_mean[tie_id]
    tie_term = np.zeros(int(strata.max()) + 1 if n else 0)
    first_of_tie = np.flatnonzero(new_tie)
    t = tie_size.astype(np.float64)
    np.add.at(tie_term, s[first_of_tie], t**3 - t)
    return ranks, tie_term


def van_elteren(values: ArrayLike, candidate: ArrayLike, strata: ArrayLike) -> VanElteren:
    """van Elteren's test of `values` where `candidate` is True against where it is False, stratified by
    `strata` (any labels). Strata lacking one of the two groups are left out; NaN values are dropped."""
    x = np.asarray(values, dtype=np.float64)
    g = np.asarray(candidate, dtype=bool)
    _, s = np.unique(np.asarray(strata), return_inverse=True)
    keep = ~np.isnan(x)
    x, g, s = x[keep], g[keep], s[keep].astype(np.int64)
    if len(x) == 0:
        return VanElteren(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
    ranks, tie_term = _stratum_midranks(x, s)
    size = np.bincount(s, minlength=len(tie_term)).astype(np.float64)
    k = np.bincount(s, weights=g.astype(np.float64), minlength=len(size))
    m = size - k
    w = np.bincount(s, weights=np.where(g, ranks, 0.0), minlength=len(size))
    both = (m > 0) & (k > 0)
    n, m, k, w, tie_term = size[both], m[both], k[both], w[both], tie_term[both]
    stat = float(np.sum(w / (n + 1)))
    expected = float(np.sum(k / 2))
    correction = np.where(n > 1, 1 - tie_term / np.maximum(n**3 - n, 1), 1.0)
    variance = float(np.sum(m * k / (12 * (n + 1)) * correction))
    if variance <= 0:
        return VanElteren(stat, expected, variance, math.nan, math.nan, int(both.sum()))
    z = (stat - expected) / math.sqrt(variance)
    return VanElteren(stat, expected, variance, z, float(2 * sps.norm.sf(abs(z))), int(both.sum()))


@dataclass(frozen=True)
class HostShare:
    between: float  # sigma^2 between hosts (>= 0)
    within: float  # sigma^2 between runs on one host
    share: float  # between / (between + within); NaN with fewer than 2 hosts or no variance


def host_variance_share(values: ArrayLike, hosts: ArrayLike) -> HostShare:
    """One-way random-effects variance components of `values` grouped by `hosts` (ANOVA estimators)."""
    x = np.asarray(values, dtype=np.float64)
    _, h = np.unique(np.asarray(hosts), return_inverse=True)
    keep = ~np.isnan(x)
    x, h = x[keep], h[keep]
    a, total = len(np.unique(h)), len(x)
    if a < 2 or total <= a:
        return HostShare(math.nan, math.nan, math.nan)
    n_i = np.bincount(h).astype(np.float64)  # codes from np.unique: every host has runs
    means = np.bincount(h, weights=x) / n_i
    ss_between = float(np.sum(n_i * (means - x.mean()) ** 2))
    ss_within = float(np.sum((x - means[h]) ** 2))
    ms_between, ms_within = ss_between / (a - 1), ss_within / (total - a)
    n0 = (total - np.sum(n_i**2) / total) / (a - 1)
    between = max(0.0, (ms_between - ms_within) / n0)
    denom = between + ms_within
    return HostShare(between, ms_within, between / denom if denom > 0 else math.nan)


def blocked_comparison(
    frame: pl.DataFrame,
    baseline: str,
    candidates: Sequence[str] | None = None,
    *,
    value: str = "value",
    cell: Sequence[str] = ("workload", "clients"),
) -> pl.DataFrame:
    """Per cell and candidate target: hosts, runs, the median ratio candidate/baseline on each host and their
    geometric mean, van Elteren's z and p (host as the block), and the between-host share of the variance
    of the baseline's and the candidate's runs. `frame` has columns target, host, `value` and the cell's."""
    rows = []
    targets = (
        list(candidates)
        if candidates is not None
        else [t for t in frame["target"].unique(maintain_order=True) if t != baseline]
    )
    for key, part in frame.filter(pl.col(value).is_not_null()).group_by(list(cell), maintain_order=True):
        for cand in targets:
            sub = part.filter(pl.col("target").is_in([baseline, cand]))
            per_host = (
                sub.group_by("host", maintain_order=True)
                .agg(
                    pl.col(value).filter(pl.col("target") == baseline).median().alias("base"),
                    pl.col(value).filter(pl.col("target") == cand).median().alias("cand"),
                )
                .drop_nulls()
                .sort("host")
            )
            if per_host.height == 0:
                continue
            ratios = (per_host["cand"] / per_host["base"]).to_list()
            ve = van_elteren(sub[value].to_numpy(), (sub["target"] == cand).to_numpy(), sub["host"].to_numpy())
            shares = {
                t: host_variance_share(
                    sub.filter(pl.col("target") == t)[value].to_numpy(),
                    sub.filter(pl.col("target") == t)["host"].to_numpy(),
                ).share
                for t in (baseline, cand)
            }
            rows.append(
                {
                    **dict(zip(cell, key)),
                    "baseline": baseline,
                    "candidate": cand,
                    "hosts": per_host.height,
                    "runs": sub.height,
                    "ratio_per_host": ", ".join(f"{h} {r:.3f}" for h, r in zip(per_host["host"], ratios)),
                    "ratio": float(np.exp(np.mean(np.log(ratios)))) if all(r > 0 for r in ratios) else math.nan,
                    "z": ve.z,
                    "p": ve.p,
                    "host_share_baseline": shares[baseline],
                    "host_share_candidate": shares[cand],
                }
            )
    return pl.DataFrame(rows)
