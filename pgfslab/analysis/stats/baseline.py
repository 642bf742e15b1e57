"""Each group against a baseline, per cell: medians, their difference, the U test's p and whether the
sample sizes could reach significance at all (the benchstat convention, without adjustment)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl

from pgfslab.analysis.stats.utest import mann_whitney_p, min_possible_p


def compare_to_baseline(
    df: pl.DataFrame, value: str, cell: list[str], group: str, baseline: str, alpha: float = 0.05
) -> pl.DataFrame:
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
            rows.append(
                {
                    **dict(zip(cell, key)),
                    "baseline": baseline,
                    group: other,
                    "n_baseline": len(base),
                    "n": len(cand),
                    "median_baseline": mb,
                    "median": mc,
                    "delta_pct": 100.0 * (mc - mb) / mb if mb else math.nan,
                    "p": p,
                    "reachable": reachable,
                    "significant": bool(reachable and p < alpha),
                }
            )
    return pl.DataFrame(rows)
