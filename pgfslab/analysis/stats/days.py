"""The same answer on another day: two raw folders of one study (day 1, day 2), compared per comparison.

A study's precision says how well one day's runs pin a ratio down; reproducibility asks whether another
day, on the same machine and config, gives the same ratio. Per cell and compared target (B/A, A the
baseline):

* **the ratio per day** with the interval the study's verdicts use (`analysis.primary`, through
  `aa.primary_ratio`: paired by round where the study pairs, else `verdicts.ratio.ratio_ci`'s Hodges-Lehmann
  ratio with its exact Mann-Whitney interval), each day's runs alone;
* **a blocked-by-day estimate**: the median of the within-day pairwise ratios B/A (a run is only ever
  set against a run of the same day, so a day that is faster for both targets moves nothing), with the
  interval that inverts van Elteren's day-stratified rank test (`blocked.van_elteren`, the test the lab
  uses with hosts as blocks): every shift of B's logs that the test does not reject at alpha. The
  rejected and accepted shifts change only at within-day pairwise log-ratios, so the bounds are two of
  them. With one day this is the Mann-Whitney interval of the normal approximation (no continuity
  correction), so it can be a little narrower than the exact one of `ratio_ci` for few runs;
* **the between-day share of variance** of each target's log throughput: a one-way random-effects
  variance component with days as groups (`blocked.host_variance_share`, ANOVA estimators):
  sigma2_day / (sigma2_day + sigma2_run). Near 0: a day is like any other; near 1: the day, not the
  run, decides the throughput (the blocked estimate removes that, the pooled one does not);
* the verdict in words: "days agree" when the two days' intervals overlap, "days differ: ..." when
  they do not (two 95 % intervals that do not overlap mean a difference between the days well beyond
  alpha; overlap is the lenient reading, stated so);
* the strict reading beside it, `covers_other`: each day's interval covers the other day's estimate (what
  a reader quoting one day's interval expects of the next: the lab's goal is 90 % of comparisons); null where
  a day's runs give no interval at 1 - alpha.

Input: one row per run with columns `day` (any label), `target`, the cell's columns and the value;
`by_day` builds it from two per-run tables (e.g. `queries.headline` of each day's database).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from numpy.typing import ArrayLike
from scipy import stats as sps

from pgfslab.analysis.stats.aa import primary_ratio
from pgfslab.analysis.stats.blocked import host_variance_share, van_elteren

CELL = ("workload", "clients")
LARGE_DAY_SHARE = 0.5  # above it the reason says that the day moved the runs


def by_day(day1: pl.DataFrame, day2: pl.DataFrame, labels: tuple[str, str] = ("day 1", "day 2")) -> pl.DataFrame:
    """Two per-run tables of the same study stacked, with a `day` column."""
    return pl.concat(
        [d.with_columns(pl.lit(lab).alias("day")) for d, lab in zip((day1, day2), labels)], how="diagonal_relaxed"
    )


@dataclass(frozen=True)
class Blocked:
    ratio: float
    lo: float
    hi: float
    z: float
    p: float


def blocked_ratio(a: ArrayLike, a_days: ArrayLike, b: ArrayLike, b_days: ArrayLike, alpha: float = 0.05) -> Blocked:
    """B/A blocked by day: the median within-day pairwise ratio and the van Elteren interval (module
    docstring), with van Elteren's z and p at ratio 1."""
    la, lb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    da, db = np.asarray(a_days), np.asarray(b_days)
    diffs = np.sort(np.concatenate([(lb[db == d][None, :] - la[da == d][:, None]).ravel() for d in np.unique(da)]))
    if len(diffs) == 0:
        return Blocked(math.nan, math.nan, math.nan, math.nan, math.nan)
    days = np.concatenate([da, db])
    cand = np.r_[np.zeros(len(la), bool), np.ones(len(lb), bool)]

    def z(shift: float) -> float:
        return van_elteren(np.concatenate([la, lb - shift]), cand, days).z

    at_one = van_elteren(np.concatenate([la, lb]), cand, days)
    crit = float(sps.norm.ppf(1 - alpha / 2))
    edges = np.unique(diffs)
    # z changes only at the pairwise differences: test one shift inside every gap between them, and beyond
    probes = np.r_[edges[0] - 1, (edges[:-1] + edges[1:]) / 2, edges[-1] + 1]
    accepted = np.flatnonzero([abs(z(s)) <= crit for s in probes])
    if len(accepted) == 0:  # cannot happen for a monotone z, kept so the result is never wrong silently
        lo, hi = math.nan, math.nan
    else:
        first, last = accepted[0], accepted[-1]
        lo = math.exp(edges[first - 1]) if first > 0 else 0.0
        hi = math.exp(edges[last]) if last < len(edges) else math.inf
    return Blocked(float(np.exp(np.median(diffs))), lo, hi, at_one.z, at_one.p)


def _fmt(r: float, lo: float, hi: float) -> str:
    return f"{r:.3g} [{lo:.3g}, {hi:.3g}]"


def days_agreement(
    frame: pl.DataFrame,
    baseline: str,
    candidates: Sequence[str] | None = None,
    *,
    value: str = "value",
    cell: Sequence[str] = CELL,
    day: str = "day",
    alpha: float = 0.05,
    primary: str = "runs",
) -> pl.DataFrame:
    """Per cell and candidate target: each day's ratio candidate/baseline with its interval (as `primary`, the
    study's comparison, says: `repeat` in `frame` is the round where it pairs), the blocked
    estimate with its interval and p, each target's between-day share of variance, `agree` (the intervals
    overlap), `covers_other` (each covers the other day's estimate) and `verdict` ("days agree" / "days
    differ: ...")."""
    data = frame.filter(pl.col(value).is_not_null() & (pl.col(value) > 0))
    days = data[day].unique(maintain_order=True).sort().to_list()
    if len(days) != 2:
        raise ValueError(f"days_agreement needs runs of exactly two days, got {days}")
    targets = (
        list(candidates)
        if candidates is not None
        else [t for t in data["target"].unique(maintain_order=True) if t != baseline]
    )
    rows = []
    for key, part in data.group_by(list(cell), maintain_order=True):
        base = part.filter(pl.col("target") == baseline)
        for cand in targets:
            other = part.filter(pl.col("target") == cand)
            per_day = []
            for d in days:
                a, b = base.filter(pl.col(day) == d), other.filter(pl.col(day) == d)
                per_day.append(primary_ratio(a, b, value, alpha, primary) if a.height and b.height else None)
            if any(ci is None for ci in per_day):
                continue
            c1, c2 = per_day
            assert c1 is not None and c2 is not None
            bl = blocked_ratio(base[value], base[day], other[value], other[day], alpha)
            share = {
                t: host_variance_share(np.log(f[value].to_numpy()), f[day].to_numpy()).share
                for t, f in ((baseline, base), (cand, other))
            }
            agree = not (c1.lo > c2.hi or c2.lo > c1.hi)
            # null where a day's runs give no interval at 1 - alpha (too few runs: 0 to infinity, or the widest
            # there is at a lower coverage, which says little when it covers)
            bounded = all(0 < c.lo and math.isfinite(c.hi) and c.confidence >= 1 - alpha - 1e-9 for c in (c1, c2))
            covers_other = (c1.lo <= c2.ratio <= c1.hi and c2.lo <= c1.ratio <= c2.hi) if bounded else None
            days_words = f"{days[0]} {_fmt(c1.ratio, c1.lo, c1.hi)}, {days[1]} {_fmt(c2.ratio, c2.lo, c2.hi)}"
            verdict = "days agree" if agree else f"days differ: {days_words} do not overlap"
            moved = [t for t, s in share.items() if s > LARGE_DAY_SHARE]
            if moved:
                verdict += "; the day itself moved " + " and ".join(
                    f"{t} ({100 * share[t]:.0f} % of its variance lies between days)" for t in moved
                )
            rows.append(
                {
                    **dict(zip(cell, key)),
                    "baseline": baseline,
                    "target": cand,
                    "day_1": days[0],
                    "day_2": days[1],
                    "n_day_1": f"{c1.n_a}+{c1.n_b}",
                    "n_day_2": f"{c2.n_a}+{c2.n_b}",
                    "ratio_day_1": c1.ratio,
                    "lo_day_1": c1.lo,
                    "hi_day_1": c1.hi,
                    "coverage_day_1": c1.confidence,
                    "ratio_day_2": c2.ratio,
                    "lo_day_2": c2.lo,
                    "hi_day_2": c2.hi,
                    "coverage_day_2": c2.confidence,
                    "ratio_blocked": bl.ratio,
                    "lo_blocked": bl.lo,
                    "hi_blocked": bl.hi,
                    "p_blocked": bl.p,
                    "day_share_baseline": share[baseline],
                    "day_share_target": share[cand],
                    "agree": agree,
                    "covers_other": covers_other,
                    "verdict": verdict,
                }
            )
    out = pl.DataFrame(rows)
    return out.with_columns(pl.col("covers_other").cast(pl.Boolean)) if out.height else out  # all null: still a flag
