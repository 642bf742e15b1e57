"""Run-level questions: how stable is throughput (variance), and is a fast run fast because it fails?"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import polars as pl
from scipy import stats as sps

from pgfslab.analysis.stats.series import politis_white_block_length

F_NOTE = (
    "F interval assumes independent normal samples: it is not robust to heavy tails or to the "
    "autocorrelation of per-second samples; read it as descriptive, prefer the bootstrap interval"
)


# ---------------------------------------------------------------------------- stability (seed 002)


def stability_table(df: pl.DataFrame, value: str, by: list[str]) -> pl.DataFrame:
    """Average and variance (sigma^2, n - 1) of `value` per group, as seed 002's tables ("TPS
    average and variance per thread count per device"), with stdev, CV, min and max. Feed it
    per-second TPS (after trimming the warm-up) with by = [target, threads] (or clients)."""
    col = pl.col(value).cast(pl.Float64)
    return (
        df.filter(pl.col(value).is_not_null())
        .group_by(by, maintain_order=True)
        .agg(
            pl.len().alias("n"),
            col.mean().alias("mean"),
            col.var().alias("variance"),
            col.std().alias("stdev"),
            col.min().alias("min"),
            col.max().alias("max"),
        )
        .with_columns((pl.col("stdev") / pl.col("mean")).alias("cv"))
    )


def variance_test(
    df: pl.DataFrame, value: str, group: str, by: list[str] | None = None, center: Literal["median", "mean"] = "median"
) -> pl.DataFrame:
    """Test of equal variances across the levels of `group`, per cell of `by`.

    center "median" is the Brown-Forsythe test (Levene's test on |x - median|), robust to
    non-normal data; "mean" is Levene's original. scipy.stats.levene computes it. Per-second samples
    are autocorrelated, which makes the p-value optimistic (too small): `note` says so when more than
    one sample per run is passed; comparing per-run variances across repeats avoids it.
    """
    keys = by or []
    data = df.filter(pl.col(value).is_not_null())
    groups = data.group_by([*keys, group], maintain_order=True).agg(pl.col(value).cast(pl.Float64).alias("_v"))
    rows = []
    cells = groups.group_by(keys, maintain_order=True) if keys else [((), groups)]
    for key, part in cells:  # one iteration per cell: small
        samples = [np.asarray(v, float) for v in part["_v"].to_list()]
        usable = [s for s in samples if len(s) >= 2]
        stat = p = math.nan
        if len(usable) >= 2:
            res = sps.levene(*usable, center=center)
            stat, p = float(res.statistic), float(res.pvalue)
        rows.append(
            {
                **dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                "groups": part[group].cast(pl.Utf8).to_list(),
                "n": [len(s) for s in samples],
                "statistic": stat,
                "p": p,
                "test": "Brown-Forsythe" if center == "median" else "Levene",
                "note": "samples within a run are autocorrelated: p is optimistic"
                if max(map(len, samples), default=0) > 10
                else None,
            }
        )
    return pl.DataFrame(rows)


def variance_ratio(
    a: np.ndarray | list[float],
    b: np.ndarray | list[float],
    confidence: float = 0.95,
    n_boot: int = 0,
    block: bool = False,
    seed: int = 0,
) -> dict[str, float | str]:
    """Ratio var(a) / var(b) with the F-based confidence interval, optionally a bootstrap one.

    F: [r / F_{1-alpha/2}(na-1, nb-1), r / F_{alpha/2}(na-1, nb-1)], exact for independent normal
    samples only (see F_NOTE: heavy tails make it far too narrow). With n_boot > 0 a percentile
    bootstrap interval of the ratio is added (resampling each sample independently; with block=True
    by circular blocks of Politis-White length, for autocorrelated per-second series).
    """
    x, y = np.asarray(a, float), np.asarray(b, float)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    na, nb = len(x), len(y)
    out: dict[str, float | str] = {
        "n_a": na,
        "n_b": nb,
        "var_a": math.nan,
        "var_b": math.nan,
        "ratio": math.nan,
        "f_lo": math.nan,
        "f_hi": math.nan,
        "f_p": math.nan,
        "boot_lo": math.nan,
        "boot_hi": math.nan,
        "note": F_NOTE,
    }
    if na < 2 or nb < 2:
        return out
    va, vb = float(x.var(ddof=1)), float(y.var(ddof=1))
    r = va / vb if vb > 0 else math.inf
    alpha = 1 - confidence
    out.update(
        {
            "var_a": va,
            "var_b": vb,
            "ratio": r,
            "f_lo": r / float(sps.f.ppf(1 - alpha / 2, na - 1, nb - 1)),
            "f_hi": r / float(sps.f.ppf(alpha / 2, na - 1, nb - 1)),
            "f_p": float(min(1.0, 2 * min(sps.f.cdf(r, na - 1, nb - 1), sps.f.sf(r, na - 1, nb - 1)))),
        }
    )
    if n_boot > 0 and vb > 0:
        rng = np.random.default_rng(seed)

        def boot_vars(s: np.ndarray) -> np.ndarray:
            n = len(s)
            if block:
                blk = max(1, round(politis_white_block_length(s)))
                k = math.ceil(n / blk)
                starts = rng.integers(0, n, size=(n_boot, k))
                idx = ((starts[:, :, None] + np.arange(blk)[None, None, :]) % n).reshape(n_boot, -1)[:, :n]
            else:
                idx = rng.integers(0, n, size=(n_boot, n))
            return s[idx].var(axis=1, ddof=1)

        ratios = boot_vars(x) / boot_vars(y)
        ratios = ratios[np.isfinite(ratios)]
        lo, hi = np.quantile(ratios, [alpha / 2, 1 - alpha / 2])
        out.update({"boot_lo": float(lo), "boot_hi": float(hi)})
    return out


def variance_comparison(
    df: pl.DataFrame,
    value: str,
    group: str,
    baseline: str,
    by: list[str] | None = None,
    confidence: float = 0.95,
    n_boot: int = 0,
    block: bool = True,
    seed: int = 0,
) -> pl.DataFrame:
    """Per cell of `by`, each level of `group` against `baseline`: variances, their ratio
    (level / baseline) with the F interval (and a bootstrap one with n_boot > 0) and the
    Brown-Forsythe p-value of the pair. Seed 002's "Intel sigma^2 = 35,942 vs ScaleFlux 5,540" is one
    such row: ratio 0.154 with the ScaleFlux as level and the Intel drive as baseline."""
    keys = by or []
    data = df.filter(pl.col(value).is_not_null())
    cells = data.group_by(keys, maintain_order=True) if keys else [((), data)]
    rows = []
    for key, part in cells:  # one iteration per cell: small
        base = part.filter(pl.col(group) == baseline)[value].cast(pl.Float64).to_numpy()
        for level in part[group].unique(maintain_order=True).to_list():
            if level == baseline:
                continue
            other = part.filter(pl.col(group) == level)[value].cast(pl.Float64).to_numpy()
            vr = variance_ratio(other, base, confidence, n_boot, block, seed)
            bf = (
                float(sps.levene(other, base, center="median").pvalue)
                if len(other) >= 2 and len(base) >= 2
                else math.nan
            )
            rows.append(
                {
                    **dict(zip(keys, key if isinstance(key, tuple) else (key,))),
                    "baseline": baseline,
                    group: level,
                    **vr,
                    "bf_p": bf,
                }
            )
    return pl.DataFrame(rows)


# ---------------------------------------------------------------------------- goodput

_COUNT_KINDS = {
    "failed": "failed_per_s",
    "retried": "retried_per_s",
    "retries": "retries_per_s",
    "skipped": "skipped_per_s",
}
_RATE_KINDS = {"errors_per_s": "errors_per_s", "reconnects_per_s": "reconnects_per_s"}


def goodput(
    df: pl.DataFrame,
    by: list[str] | None = None,
    *,
    tps: str = "tps",
    time: str = "t_s",
    threshold: float = 0.01,
    per_interval: bool = False,
) -> pl.DataFrame:
    """Throughput next to its errors per second by kind, with a flag when the error rate exceeds
    `threshold` (default 1 %): a run that is fast because it fails is flagged.

    Understands three shapes (columns present decide):
    * pgbench progress (-P): `tps` (successful transactions/s) and per-interval counts `failed`,
      `retried`, `retries`, `skipped`; the interval is the difference of `time` (the first one the
      run's median interval);
    * sysbench intervals: `tps`, `errors_per_s`, `reconnects_per_s` (rates already);
    * pgbench summaries: `transactions_processed`, `failed_transactions` (and `retried_transactions`,
      `duration_s`);
    * sysbench summaries: `transactions`, `ignored_errors` (and `reconnects`, `total_time_s`).
    error_rate = failed attempts / (successful + failed) (pgbench's "number of failed transactions
    (x %)"); for sysbench errors count as failed attempts, reconnects are reported but not counted.
    Returns one row per group (`by`, default the whole frame), or with per_interval=True every input
    row with its *_per_s, error_rate and flagged columns.
    """
    keys = by or []
    data = df if keys else df.with_columns(pl.lit(0).alias("_all"))
    gkeys = keys or ["_all"]
    cols = set(df.columns)
    if {"transactions", "ignored_errors"} <= cols and "transactions_processed" not in cols:
        data = data.rename(
            {
                "transactions": "transactions_processed",
                "ignored_errors": "failed_transactions",
                **({"total_time_s": "duration_s"} if "total_time_s" in cols else {}),
            }
        )
        cols = set(data.columns)
    if {"transactions_processed", "failed_transactions"} <= cols:
        dur = pl.col("duration_s") if "duration_s" in cols else pl.col("transactions_processed") / pl.col(tps)
        rows = data.with_columns(
            (pl.col("failed_transactions") / dur).alias("failed_per_s"),
            *(
                [(pl.col("retried_transactions") / dur).alias("retried_per_s")]
                if "retried_transactions" in cols
                else []
            ),
            *([(pl.col("reconnects") / dur).alias("reconnects_per_s")] if "reconnects" in cols else []),
            pl.col(tps).alias("tps_"),
            (pl.col("failed_transactions") / (pl.col("transactions_processed") + pl.col("failed_transactions"))).alias(
                "error_rate"
            ),
            dur.alias("_dt"),
        )
        kinds = (
            ["failed_per_s"]
            + (["retried_per_s"] if "retried_transactions" in cols else [])
            + (["reconnects_per_s"] if "reconnects" in cols else [])
        )
        fail_col: str | None = "failed_per_s"
        agg_fail = pl.col("failed_transactions").sum() / (
            pl.col("transactions_processed").sum() + pl.col("failed_transactions").sum()
        )
    else:
        counts = [c for c in _COUNT_KINDS if c in cols]
        rates = [c for c in _RATE_KINDS if c in cols]
        if counts:
            dt = pl.col(time).diff().over(gkeys)
            data = data.sort([*gkeys, time]).with_columns(
                dt.fill_null(dt.median().over(gkeys)).fill_null(1.0).alias("_dt")
            )
        else:
            data = data.with_columns(pl.lit(1.0).alias("_dt"))
        rows = data.with_columns(
            *[(pl.col(c).cast(pl.Float64) / pl.col("_dt")).alias(_COUNT_KINDS[c]) for c in counts],
            pl.col(tps).alias("tps_"),
        )
        kinds = [_COUNT_KINDS[c] for c in counts] + rates
        fail_col = "failed_per_s" if "failed" in counts else ("errors_per_s" if "errors_per_s" in rates else None)
        fail = pl.col(fail_col).fill_null(0.0) if fail_col else pl.lit(0.0)
        rows = rows.with_columns((fail / (pl.col(tps) + fail)).alias("error_rate"))
        w = pl.col("_dt")
        agg_fail = ((fail * w).sum() / ((pl.col(tps) * w).sum() + (fail * w).sum())) if fail_col else pl.lit(0.0)
    flag = pl.col("error_rate") > threshold
    reason = (
        pl.when(flag)
        .then(pl.format("error rate {}% > {}%", (pl.col("error_rate") * 100).round(2), pl.lit(threshold * 100)))
        .otherwise(None)
    )
    if per_interval:
        out = rows.with_columns(flag.alias("flagged"), reason.alias("flag")).drop("tps_", "_dt")
        return out.drop("_all") if not keys else out
    w = pl.col("_dt")
    summary = rows.group_by(gkeys, maintain_order=True).agg(
        pl.len().alias("n"),
        ((pl.col("tps_") * w).sum() / w.sum()).alias("tps"),
        *[((pl.col(k).fill_null(0.0) * w).sum() / w.sum()).alias(k) for k in kinds],
        agg_fail.alias("error_rate"),
    )
    summary = summary.with_columns(flag.alias("flagged"), reason.alias("flag"), pl.lit(fail_col).alias("error_kind"))
    return summary.drop("_all") if not keys else summary
