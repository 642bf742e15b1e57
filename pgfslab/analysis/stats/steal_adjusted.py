"""Comparisons adjusted for the hypervisor's share of the CPU: a model-based sensitivity analysis shown beside
the lab's distribution-free comparisons, never in their place.

On a virtual machine the hypervisor takes CPU time for other guests (steal, /proc/stat). Where a run's
throughput follows what was taken from it, much of the run-to-run noise is the host's, not the file system's.
Per cell, each run's contention is its steal over the CPU time the guest wanted (all but idle and I/O wait:
`cpu_steal / cpu_busy`, pgfslab.analysis.cpu_time, so a target that keeps the CPUs busier is not charged more
for it), and the model is

    log(value) = a_target + d_block + b * contention + e

with one slope for every target, fitted by least squares; `d_block` is a shift per block (a study's days or
hosts, `block`) when the runs come from more than one, so that a day that was slower as a whole is not read
as noise or, where the targets' runs fall unevenly on the days, as a difference between targets. The adjusted ratio B/A is exp(a_B - a_A) with its
t interval; `resid_sd` is the residual standard deviation on the log scale (about the run-to-run CV once the
steal is accounted for), `plain_sd` the same without the covariate (the pooled within-target spread).

What it assumes, and the paper says beside it: the host's contention does not depend on the target (the file
system under test cannot make the hypervisor take more), the effect is log-linear and the same for every
target. The verdicts never use it: they stay on the Hodges-Lehmann ratio and its exact interval.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats

SCHEMA = {
    "target": pl.Utf8,
    "baseline": pl.Utf8,
    "n": pl.Int64,
    "ratio": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "slope": pl.Float64,  # change in log(value) per unit of contention
    "resid_sd": pl.Float64,
    "plain_sd": pl.Float64,
    "contention_target": pl.Float64,  # the side's mean contention
    "contention_baseline": pl.Float64,
    "blocks": pl.Int64,  # days or hosts the model shifted apart (1: none)
}


def _exp(x: float) -> float:
    """exp(x), infinite past the float range: with few runs beyond the model's parameters (one degree of freedom,
    t = 12.7) and a contention column close to a target's, an interval's end can overflow."""
    return math.exp(x) if x < 709.0 else math.inf


def fit(frame: pl.DataFrame, baseline: str, alpha: float = 0.05, block: str | None = None) -> pl.DataFrame:
    """One cell's runs (target, value, contention, and the `block` column when given) -> per target other
    than `baseline`: SCHEMA. Empty when the cell cannot carry the model: fewer than two runs of a target with
    contention, no spread in the contention, or no residual degrees of freedom."""
    f = frame.filter(pl.col("value").is_not_null() & (pl.col("value") > 0) & pl.col("contention").is_not_null())
    sizes = dict(f.group_by("target").len().iter_rows())
    if baseline not in sizes or min(sizes.values()) < 2 or f["contention"].n_unique() < 2:
        return pl.DataFrame(schema=SCHEMA)
    targets = [baseline] + sorted(t for t in sizes if t != baseline)
    y = np.log(f["value"].to_numpy())
    c = f["contention"].to_numpy().astype(float)
    col = block if block and block in f.columns else None
    blocks = sorted(f[col].drop_nulls().unique().to_list()) if col is not None else []
    shifts = [(f[col] == b).fill_null(False).to_numpy().astype(float) for b in blocks[1:]] if col is not None else []
    x = np.column_stack([(f["target"] == t).to_numpy().astype(float) for t in targets] + shifts + [c])
    n, k = x.shape
    if n - k < 1 or np.linalg.matrix_rank(x) < k:
        return pl.DataFrame(schema=SCHEMA)
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    s2 = float(resid @ resid) / (n - k)
    cov = s2 * np.linalg.inv(x.T @ x)
    q = float(stats.t.ppf(1 - alpha / 2, n - k))
    plain = f.with_columns(pl.col("value").log().alias("_y")).with_columns(
        (pl.col("_y") - pl.col("_y").mean().over("target")).alias("_d")
    )
    plain_sd = math.sqrt(float((plain["_d"] ** 2).sum()) / (n - len(targets)))
    mean_c = dict(f.group_by("target").agg(pl.col("contention").mean()).iter_rows())
    rows = []
    for i, t in enumerate(targets[1:], start=1):
        d = float(beta[i] - beta[0])
        se = math.sqrt(float(cov[i, i] + cov[0, 0] - 2 * cov[i, 0]))
        rows.append(
            {
                "target": t,
                "baseline": baseline,
                "n": n,
                "ratio": _exp(d),
                "lo": _exp(d - q * se),
                "hi": _exp(d + q * se),
                "slope": float(beta[-1]),
                "resid_sd": math.sqrt(s2),
                "plain_sd": plain_sd,
                "contention_target": mean_c[t],
                "contention_baseline": mean_c[baseline],
                "blocks": max(1, len(blocks)),
            }
        )
    return pl.DataFrame(rows, schema=SCHEMA)
