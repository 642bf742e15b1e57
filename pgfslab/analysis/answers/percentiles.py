"""Does the storage change the latency distribution, and when (notebook latency_percentiles)?

What can be said depends on what the workload logged (`method`): "exact" (pgbench's per-transaction
log), "aggregate" (pgbench's per-second aggregate log: count, sum, min, max) or "sysbench" (one
percentile per interval, and an end-of-run histogram with --histogram).
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from pgfslab.analysis import stats

PERCENTILES = (25, 50, 75, 95, 99)
SHOWN = ["mean", "min", "p25", "p50", "p75", "p95", "p99", "max"]


class Bands(NamedTuple):
    """Latency (ms) per second and cell: the band's columns, lowest to highest, and its middle line."""

    frame: pl.DataFrame
    columns: list[str]
    median: str


def sysbench_percentile(lat: pl.DataFrame) -> int:
    """The percentile sysbench reported per interval (`--percentile`, the most common over the runs)."""
    return int(lat["latency_pct"].drop_nulls().mode()[0])


def per_second_bands(lat: pl.DataFrame, method: str, cell: list[str]) -> Bands:
    """How is latency spread in each second, pooled over the repeats of a cell?

    exact: p25, p50, p75, p95, p99 of every transaction that ended in the second (line: p50);
    aggregate: min, the exact mean (sum / count) and max of the second's transactions, seconds without
    any left out (line: mean); sysbench: the lowest, median and highest of the repeats' per-interval
    percentile (line: median)."""
    if method == "exact":
        per_s = stats.latency_percentiles(lat, "latency_us", [*cell, "t_s"], percentiles=PERCENTILES)
        frame = per_s.filter(pl.col("stat").str.starts_with("p")).pivot("stat", index=[*cell, "t_s"], values="value")
        return Bands(frame, ["p25", "p50", "p75", "p95", "p99"], "p50")
    if method == "aggregate":
        # seconds in which no transaction ended have no latency (pgbench writes 0 for their min and max)
        frame = (
            lat.filter(pl.col("n_tx") > 0)
            .group_by([*cell, "t_s"])
            .agg(
                (pl.col("latency_min_us").min() / 1e3).alias("min"),
                (pl.col("latency_sum_us").sum() / pl.col("n_tx").sum() / 1e3).alias("mean"),
                (pl.col("latency_max_us").max() / 1e3).alias("max"),
            )
        )
        return Bands(frame, ["min", "mean", "max"], "mean")
    frame = lat.group_by([*cell, "t_s"]).agg(
        pl.col("latency_ms").min().alias("lowest"),
        pl.col("latency_ms").median().alias("median"),
        pl.col("latency_ms").max().alias("highest"),
    )
    return Bands(frame, ["lowest", "median", "highest"], "median")


def run_summary(
    steady: pl.DataFrame, method: str, by: list[str], hist: pl.DataFrame | None = None, pct: int | None = None
) -> pl.DataFrame:
    """Latency (ms) over each cell's runs (`by`), one row per statistic (mean, min, percentiles, max)
    with `lo`/`hi` bounds and its `method`: exact percentiles; bounds from the aggregate log
    (`stats.aggregate_latency_summary`); sysbench's end-of-run histogram (`hist`) when it has one, else
    the median over the cell's seconds of the per-interval percentile (`pct`, default
    `sysbench_percentile(steady)`)."""
    if method == "exact":
        return stats.latency_percentiles(steady, "latency_us", by, percentiles=PERCENTILES)
    if method == "aggregate":
        return stats.aggregate_latency_summary(steady, by, percentiles=PERCENTILES)
    if hist is not None and hist.height:  # the end-of-run histogram: every transaction, known to its bucket
        return stats.histogram_percentiles(hist, "value_ms", "count", by, percentiles=PERCENTILES)
    pct = sysbench_percentile(steady) if pct is None else pct
    return (
        steady.group_by(by)
        .agg(pl.col("latency_ms").median().alias("value"), pl.len().alias("n"))
        .with_columns(
            pl.lit(f"p{pct}").alias("stat"),
            pl.lit(float(pct)).alias("percentile"),
            pl.col("value").alias("lo"),
            pl.col("value").alias("hi"),
            pl.lit(0.0).alias("error_bound"),
            pl.lit("sysbench interval (median of seconds)").alias("method"),
        )
    )


def summary_table(summary: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """`run_summary` as the reader sees it: one row per cell, one column per statistic (a percentile only
    known to lie in a range written lo–hi), the method of its percentiles."""
    cell_text = (
        pl.when((pl.col("method") == "aggregate-bounds") & (pl.col("error_bound") > 0))
        .then(pl.format("{}–{}", pl.col("lo").round(2), pl.col("hi").round(2)))
        .otherwise(pl.col("value").round(2).cast(pl.Utf8))
    )
    pct_method = summary.filter(pl.col("percentile").is_between(1, 99.99)).group_by(by).agg(pl.col("method").first())
    wide = (
        summary.filter(pl.col("stat").is_in(SHOWN))
        .with_columns(cell_text.alias("v"))
        .pivot("stat", index=[*by, "n"], values="v")
        .join(pct_method, on=by, how="left")
    )
    return wide.select(
        pl.col("target_label").alias("target"),
        "clients",
        pl.col("n").alias("transactions"),
        "method",
        *[c for c in SHOWN if c in wide.columns],
    )
