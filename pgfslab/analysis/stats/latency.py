"""Latency percentiles, exact or with an error bound, in one long format for tables and charts.

Every function returns one row per (group, stat) with columns
`<by...>, stat, percentile, value, lo, hi, error_bound, method, n`:

* stat: "mean", "stdev", "min", "p50", "p90", "p95", "p99", "p99_9", "max" (what the source allows);
* lo <= true value <= hi; error_bound = max(hi - value, value - lo) (0 when exact);
* method: "exact" (from per-transaction latencies, or a moment that aggregates keep exactly),
  "aggregate-bounds" (pgbench --aggregate-interval: only per-interval n, sum, sum2, min, max survive,
  so a percentile is only known to lie between the values of the two extreme data sets consistent
  with them), "histogram" (sysbench --histogram buckets: the percentile is known to its bucket).

Percentiles follow the nearest-rank definition x_(k), k = ceil(p N / 100), which is what the bounds
refer to and what pgbench/sysbench-style reports use; `interpolation="linear"` is available for the
exact path (numpy's default, Hyndman-Fan type 7).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import polars as pl

PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9)

# sysbench 1.0 latency histogram (sb_logger.c): 1024 log-spaced buckets from 0.001 ms to 100 s
SYSBENCH_BUCKETS = 1024
SYSBENCH_MIN_MS = 1e-3
SYSBENCH_MAX_MS = 1e5

_LONG = {
    "stat": pl.Utf8,
    "percentile": pl.Float64,
    "value": pl.Float64,
    "lo": pl.Float64,
    "hi": pl.Float64,
    "error_bound": pl.Float64,
    "method": pl.Utf8,
    "n": pl.Int64,
}


def stat_name(p: float) -> str:
    """Column/stat name of a percentile: 50 -> "p50", 99.9 -> "p99_9"."""
    text = f"{p:g}".replace(".", "_")
    return f"p{text}"


def _percentile_frame(percentiles: Sequence[float]) -> pl.DataFrame:
    return pl.DataFrame({"stat": [stat_name(p) for p in percentiles], "percentile": [float(p) for p in percentiles]})


def _with_key(df: pl.DataFrame, by: list[str] | None) -> tuple[pl.DataFrame, list[str]]:
    if by:
        return df, list(by)
    return df.with_columns(pl.lit(0).alias("_all")), ["_all"]


def _finish(out: pl.DataFrame, keys: list[str], by: list[str] | None) -> pl.DataFrame:
    out = out.with_columns(
        pl.max_horizontal(pl.col("hi") - pl.col("value"), pl.col("value") - pl.col("lo")).alias("error_bound")
    )
    order = {"mean": 0, "stdev": 1, "min": 2, "max": 1000}
    out = out.with_columns(
        pl.col("stat")
        .replace_strict(order, default=None, return_dtype=pl.Float64)
        .fill_null(pl.col("percentile") + 10)
        .alias("_o")
    )
    out = out.sort([*keys, "_o"]).drop("_o")
    cols = [*(by or []), *_LONG]
    return out.select([pl.col(c).cast(_LONG[c]) if c in _LONG else pl.col(c) for c in cols])


def latency_percentiles(
    df: pl.DataFrame,
    latency: str = "latency_us",
    by: list[str] | None = None,
    percentiles: Sequence[float] = PERCENTILES,
    interpolation: Literal["nearest-rank", "linear"] = "nearest-rank",
    scale: float = 1e-3,
) -> pl.DataFrame:
    """Exact latency statistics from per-transaction latencies (the pgbench_txlog table by default:
    `latency_us` scaled to ms): n, mean, stdev (n - 1), min, the percentiles and max per group.
    Exact, so lo = hi = value and error_bound = 0. A sampled log (--sampling-rate) gives exact
    statistics of the sample, not of all transactions."""
    data, keys = _with_key(df.filter(pl.col(latency).is_not_null()), by)
    col = pl.col(latency).cast(pl.Float64) * scale
    moments = data.group_by(keys).agg(
        pl.len().alias("n"),
        col.mean().alias("mean"),
        col.std().alias("stdev"),
        col.min().alias("min"),
        col.max().alias("max"),
        col.sort().alias("_sorted"),
    )
    pf = _percentile_frame(percentiles)
    pct = moments.select(*keys, "n", "_sorted").join(pf, how="cross")
    if interpolation == "nearest-rank":
        k = (pl.col("percentile") * pl.col("n") / 100).round(9).ceil().cast(pl.Int64).clip(1, None)
        pct = pct.with_columns(pl.col("_sorted").list.get(k - 1).alias("value"))
    else:
        h = (pl.col("n") - 1) * pl.col("percentile") / 100
        lo_i, hi_i = h.floor().cast(pl.Int64), h.ceil().cast(pl.Int64)
        lo_v, hi_v = pl.col("_sorted").list.get(lo_i), pl.col("_sorted").list.get(hi_i)
        pct = pct.with_columns((lo_v + (h - h.floor()) * (hi_v - lo_v)).alias("value"))
    pct = pct.select(*keys, "stat", "percentile", "value", "n")
    mom = moments.unpivot(index=[*keys, "n"], on=["mean", "stdev", "min", "max"], variable_name="stat").with_columns(
        pl.when(pl.col("stat") == "min")
        .then(0.0)
        .when(pl.col("stat") == "max")
        .then(100.0)
        .otherwise(None)
        .alias("percentile")
    )
    out = pl.concat([mom.select(pct.columns), pct], how="vertical_relaxed").with_columns(
        pl.col("value").alias("lo"), pl.col("value").alias("hi"), pl.lit("exact").alias("method")
    )
    return _finish(out, keys, by)


def aggregate_latency_summary(
    df: pl.DataFrame,
    by: list[str] | None = None,
    *,
    n: str = "n_tx",
    total: str = "latency_sum_us",
    total2: str = "latency_sum2_us2",
    lo: str = "latency_min_us",
    hi: str = "latency_max_us",
    scale: float = 1e-3,
    percentiles: Sequence[float] = PERCENTILES,
) -> pl.DataFrame:
    """Latency statistics from pgbench's aggregate log (per interval: n, sum, sum of squares, min,
    max; microseconds, scaled by `scale`, default to ms).

    Exact: n, mean = sum / n, stdev = sqrt((sum2 - sum^2/n) / (n - 1)), min, max. Percentiles are
    not recoverable; each is bounded by the tighter of two distribution-free bounds:
    * per-interval min/max: the lowest possible k-th smallest value comes from putting, in every
      interval, n_i - 1 transactions at its min and one at its max, the highest from one at the min
      and n_i - 1 at the max (every data set with these n/min/max lies between the two);
    * Cantelli's one-sided inequality with the exact overall mean and (population) stdev:
      mu - sigma sqrt((1-p)/p) <= x_(k) <= mu + sigma sqrt(p/(1-p)) (tight near the median).
    `value` is the midpoint of [lo, hi] and error_bound the half-width: with 1 s intervals the
    bounds are wide, which is the honest answer; use per-transaction logs for tail percentiles.
    Intervals with n = 0 are ignored.
    """
    data, keys = _with_key(df.filter(pl.col(n) > 0), by)
    c_n, c_s, c_s2 = pl.col(n).cast(pl.Float64), pl.col(total).cast(pl.Float64), pl.col(total2).cast(pl.Float64)
    mom = data.group_by(keys).agg(
        c_n.sum().alias("_n"),
        c_s.sum().alias("_s"),
        c_s2.sum().alias("_s2"),
        (pl.col(lo).min() * scale).alias("min"),
        (pl.col(hi).max() * scale).alias("max"),
    )
    mom = mom.with_columns(
        (pl.col("_s") / pl.col("_n") * scale).alias("mean"),
        (((pl.col("_s2") - pl.col("_s") ** 2 / pl.col("_n")) / (pl.col("_n") - 1)).clip(0, None).sqrt() * scale).alias(
            "stdev"
        ),
        pl.col("_n").cast(pl.Int64).alias("n"),
    )
    moments = mom.unpivot(index=[*keys, "n"], on=["mean", "stdev", "min", "max"], variable_name="stat").with_columns(
        pl.when(pl.col("stat") == "min")
        .then(0.0)
        .when(pl.col("stat") == "max")
        .then(100.0)
        .otherwise(None)
        .alias("percentile"),
        pl.col("value").alias("lo"),
        pl.col("value").alias("hi"),
        pl.lit("exact").alias("method"),
    )

    w_n = pl.col(n).cast(pl.Int64)
    pts = data.select(*keys, (pl.col(lo) * scale).alias("_lo"), (pl.col(hi) * scale).alias("_hi"), w_n.alias("_w"))

    def bound(low: bool) -> pl.DataFrame:
        at_min = pl.col("_w") - 1 if low else pl.lit(1, dtype=pl.Int64)
        at_max = pl.lit(1, dtype=pl.Int64) if low else pl.col("_w") - 1
        parts = pl.concat(
            [
                pts.select(*keys, pl.col("_lo").alias("v"), at_min.alias("w")),
                pts.select(*keys, pl.col("_hi").alias("v"), at_max.alias("w")),
            ]
        )
        parts = (
            parts.filter(pl.col("w") > 0)
            .sort([*keys, "v"])
            .with_columns(pl.col("w").cum_sum().over(keys).alias("cw"), pl.col("w").sum().over(keys).alias("N"))
        )
        k = (pl.col("percentile") * pl.col("N") / 100).round(9).ceil().clip(1, None)
        return (
            parts.join(_percentile_frame(percentiles), how="cross")
            .filter(pl.col("cw") >= k)
            .group_by([*keys, "stat", "percentile"])
            .agg(pl.col("v").min().alias("lo" if low else "hi"))
        )

    pop_sd = (pl.col("_s2") / pl.col("_n") - (pl.col("_s") / pl.col("_n")) ** 2).clip(0, None).sqrt() * scale
    pct = (
        bound(True)
        .join(bound(False), on=[*keys, "stat", "percentile"])
        .join(mom.select(*keys, "n", "mean", pop_sd.alias("_sd")), on=keys)
    )
    q = pl.col("percentile") / 100
    pct = pct.with_columns(
        pl.max_horizontal("lo", pl.col("mean") - pl.col("_sd") * ((1 - q) / q).sqrt()).alias("lo"),
        pl.min_horizontal("hi", pl.col("mean") + pl.col("_sd") * (q / (1 - q)).sqrt()).alias("hi"),
    )
    pct = pct.with_columns(
        ((pl.col("lo") + pl.col("hi")) / 2).alias("value"), pl.lit("aggregate-bounds").alias("method")
    )
    cols = [*keys, "stat", "percentile", "value", "lo", "hi", "method", "n"]
    return _finish(pl.concat([moments.select(cols), pct.select(cols)], how="vertical_relaxed"), keys, by)


def sysbench_bucket_bounds(
    value: pl.Expr,
    buckets: int = SYSBENCH_BUCKETS,
    range_min: float = SYSBENCH_MIN_MS,
    range_max: float = SYSBENCH_MAX_MS,
    printed_decimals: int = 3,
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The sysbench histogram bucket printed as `value`: (exact bucket value, lower, upper bound).

    sysbench puts a latency v in bucket i = floor((ln v - ln min) * mult + 0.5), mult = (buckets - 1)
    / (ln max - ln min), and prints exp(i / mult + ln min) with 3 decimals. The bucket index is
    recovered from the printed value, giving the unrounded bucket value (what sysbench's own
    percentile is) and the bucket [e^((i - 1/2) / mult + ln min), e^((i + 1/2) / mult + ln min)),
    widened by the printing's rounding where that could hide the index (values below ~0.06 ms).
    The first and last buckets also hold everything below/above the range (bounds 0 and +inf)."""
    deduct = math.log(range_min)
    mult = (buckets - 1) / (math.log(range_max) - deduct)
    half = math.exp(0.5 / mult)
    rnd = 0.5 * 10.0 ** (-printed_decimals)
    i = ((value.log() - deduct) * mult).round(0).clip(0, buckets - 1)
    exact = ((i / mult) + deduct).exp()
    known = ((exact - value).abs() <= rnd) & (value * (half * half - 1) / 2 > rnd)  # index unambiguous
    center = pl.when((exact - value).abs() <= rnd).then(exact).otherwise(value)
    b_lo, b_hi = ((i - 0.5) / mult + deduct).exp(), ((i + 0.5) / mult + deduct).exp()
    lo = pl.when(known).then(b_lo).otherwise(pl.min_horizontal(b_lo, (value - rnd) / half))
    hi = pl.when(known).then(b_hi).otherwise(pl.max_horizontal(b_hi, (value + rnd) * half))
    lo = pl.when(i <= 0).then(0.0).otherwise(lo)
    hi = pl.when(i >= buckets - 1).then(math.inf).otherwise(hi)
    return center, lo, hi


def histogram_percentiles(
    df: pl.DataFrame,
    value: str = "value_ms",
    count: str = "count",
    by: list[str] | None = None,
    percentiles: Sequence[float] = PERCENTILES,
    lower: str | None = None,
    upper: str | None = None,
) -> pl.DataFrame:
    """Percentiles from a latency histogram (value, count rows; the sysbench_histogram table by
    default), each with its bucket as the bound.

    The percentile is the bucket where the cumulative count first reaches round(N p / 100) (sysbench's
    own rule, so the result equals the percentile sysbench prints); value = the bucket's value
    (sysbench's, unrounded), lo/hi = the bucket's bounds (`lower`/`upper` columns if given, else sysbench's log-spaced
    buckets, `sysbench_bucket_bounds`). min and max are reported the same way (lowest/highest
    non-empty bucket). mean/stdev are not derivable from buckets exactly and are omitted.
    """
    data, keys = _with_key(df.filter(pl.col(count) > 0), by)
    v = pl.col(value).cast(pl.Float64)
    if lower and upper:
        v_e, lo_e, hi_e = v, pl.col(lower).cast(pl.Float64), pl.col(upper).cast(pl.Float64)
    else:
        v_e, lo_e, hi_e = sysbench_bucket_bounds(v)
    b = data.select(
        *keys, v_e.alias("value"), lo_e.alias("lo"), hi_e.alias("hi"), pl.col(count).cast(pl.Int64).alias("w")
    )
    b = b.sort([*keys, "value"]).with_columns(
        pl.col("w").cum_sum().over(keys).alias("cw"), pl.col("w").sum().over(keys).alias("n")
    )
    k = (pl.col("n") * pl.col("percentile") / 100 + 0.5).round(9).floor().clip(1, None)
    pct = (
        b.join(_percentile_frame(percentiles), how="cross")
        .filter(pl.col("cw") >= k)
        .sort([*keys, "stat", "value"])
        .group_by([*keys, "stat", "percentile"], maintain_order=True)
        .agg(pl.col("value", "lo", "hi", "n").first())
    )
    ends = pl.concat(
        [
            b.group_by(keys)
            .agg(pl.col("value", "lo", "hi", "n").sort_by("value").first())
            .with_columns(pl.lit("min").alias("stat"), pl.lit(0.0).alias("percentile")),
            b.group_by(keys)
            .agg(pl.col("value", "lo", "hi", "n").sort_by("value").last())
            .with_columns(pl.lit("max").alias("stat"), pl.lit(100.0).alias("percentile")),
        ]
    )
    cols = [*keys, "stat", "percentile", "value", "lo", "hi", "n"]
    out = pl.concat([ends.select(cols), pct.select(cols)], how="vertical_relaxed").with_columns(
        pl.lit("histogram").alias("method")
    )
    return _finish(out, keys, by)
