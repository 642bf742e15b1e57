"""Which file system is faster at the file operations a database leans on (notebook fs_micro)?

Per benchmark (operation) and target: ops/s over the repeats, latency percentiles (exact from every timed
operation when the runner logged them, else its printed summary), and the benchstat comparison with the
baseline target.
"""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import report, stats

STATS = ("mean", "p50", "p95", "p99", "max")
_PRINTED = ("avg", "p50", "p95", "p99", "max")  # the runner's printed summary: avg_ms, p50_ms, ...
_STAT_ORDER = {"mean": -1, "p50": 0, "p95": 1, "p99": 2, "max": 3}


def baseline_label(ops: pl.DataFrame, baseline_target: str) -> str:
    """The label the comparison uses for `baseline_target`, or the first target's when it did not run."""
    base = ops.filter(pl.col("target") == baseline_target)["target_label"]
    return base[0] if base.len() else ops["target_label"][0]


def per_operation(ops: pl.DataFrame) -> pl.DataFrame:
    """Per benchmark and target (`queries.fs_ops`, one row per repeat): repeats `n`, median, min and max
    ops/s, medians of the printed latency summary (`avg_ms` .. `max_ms`) and the errors summed."""
    return ops.group_by("benchmark", "target", "target_label", maintain_order=True).agg(
        pl.len().alias("n"),
        pl.col("ops_per_s").median().alias("ops_med"),
        pl.col("ops_per_s").min().alias("ops_min"),
        pl.col("ops_per_s").max().alias("ops_max"),
        *[pl.col(f"{s}_ms").median().alias(f"{s}_ms") for s in _PRINTED],
        pl.col("errors").sum().alias("errors"),
    )


def latencies(per: pl.DataFrame, op_lat: pl.DataFrame) -> pl.DataFrame:
    """How long does each operation take? Per benchmark, target and `stat` (mean, p50, p95, p99, max),
    `ms`: with `op_lat` (every timed operation, `queries.fs_op_latencies`) the exact nearest-rank
    percentiles per run, median over repeats; without it the medians of the runner's printed summary
    (`per_operation`, 0.1 ms resolution). Sorted by benchmark, stat, target."""
    if op_lat.height:
        pr = stats.latency_percentiles(
            op_lat, "latency_ms", ["benchmark", "target_label", "run_id"], percentiles=(50, 95, 99), scale=1.0
        )
        lat = (
            pr.filter(pl.col("stat").is_in(list(STATS)))
            .group_by("benchmark", "target_label", "stat")
            .agg(pl.col("value").median().alias("ms"))
        )
    else:
        lat = per.unpivot(
            index=["benchmark", "target_label"],
            on=[f"{s}_ms" for s in _PRINTED],
            variable_name="stat",
            value_name="ms",
        ).with_columns(pl.col("stat").str.replace("_ms", "").str.replace("avg", "mean"))
    return lat.sort("benchmark", pl.col("stat").replace_strict(_STAT_ORDER, return_dtype=pl.Int64), "target_label")


def benchstat_table(grid: pl.DataFrame, baseline: str) -> pl.DataFrame:
    """`stats.benchstat_grid` as seed 003 printed it: `median ± %` per side, delta, and `p=… n=…+…`."""
    return grid.select(
        pl.col("benchmark").alias("name"),
        pl.col("candidate").alias("target"),
        report.pm_expr("center_baseline", "pm_baseline").alias(f"{baseline} ops/s"),
        report.pm_expr("center_candidate", "pm_candidate").alias("ops/s"),
        pl.col("delta"),
        pl.when(pl.col("p").is_null())
        .then(pl.lit(""))
        .otherwise(
            pl.format(
                "p={} n={}+{}",
                pl.col("p_adjusted").map_elements(report.pvalue, return_dtype=pl.Utf8),
                "n_baseline",
                "n_candidate",
            )
        )
        .alias("test"),
    )


def with_latencies(per: pl.DataFrame, lat: pl.DataFrame) -> pl.DataFrame:
    """`per_operation` with its printed latency columns replaced by `latencies` (`mean_ms` .. `max_ms`)."""
    wide = lat.pivot("stat", index=["benchmark", "target_label"], values="ms")
    return per.drop(*[f"{s}_ms" for s in _PRINTED]).join(
        wide.rename({s: f"{s}_ms" for s in STATS}), on=["benchmark", "target_label"], how="left"
    )


def operation_table(per: pl.DataFrame) -> pl.DataFrame:
    """`with_latencies` as the reader sees it."""
    return per.select(
        "benchmark",
        pl.col("target_label").alias("target"),
        "n",
        pl.col("ops_med").alias("ops/s"),
        *[pl.col(f"{s}_ms").alias(f"{s} ms") for s in STATS],
        "errors",
    )


def summary(per: pl.DataFrame, grid: pl.DataFrame) -> pl.DataFrame:
    """The notebook's saved table: `with_latencies` with each comparison's delta_pct, p, p_adjusted and
    significant (null for the baseline)."""
    rows = grid.filter(pl.col("benchmark") != "geomean").select(
        "benchmark", pl.col("candidate").alias("target_label"), "delta_pct", "p", "p_adjusted", "significant"
    )
    return per.join(rows, on=["benchmark", "target_label"], how="left")
