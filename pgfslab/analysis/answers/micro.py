"""Which file system is faster at the file operations a database leans on (notebook fs_micro)?

Per benchmark (operation) and target: ops/s over the repeats, latency percentiles (exact from every timed
operation when the runner logged them, else its printed summary), and the benchstat comparison with the
baseline target, also as seed 003 printed it.

What is compared is each run's *timed* operations per second (`timed_rates`), the number seed 003's
benchstat table holds: for a benchmark whose loop is the timed operation alone (create_empty, the deletes
of pre-created files) the printed ops/s, for one whose loop also does untimed work (the deletes in a
small or large directory create and write a file each time, write_sync writes before its timed sync,
statfs writes a file) 1000 / the mean latency of the timed part, as the seed's methodology says
("average latency can be used to calculate deletion throughput").
"""

from __future__ import annotations

import re

import polars as pl

from pgfslab.analysis import report, stats

STATS = ("mean", "p50", "p95", "p99", "max")
_PRINTED = ("avg", "p50", "p95", "p99", "max")  # the runner's printed summary: avg_ms, p50_ms, ...
_STAT_ORDER = {"mean": -1, "p50": 0, "p95": 1, "p99": 2, "max": 3}


# benchmarks whose loop does untimed work around the timed operation (pgfslab.tools.fsmicro_ops.label)
UNTIMED_WORK = re.compile(r"^(?:delete_small_dir|delete_large_dir|write_sync|statfs)_")


def timed_rates(ops: pl.DataFrame, op_lat: pl.DataFrame) -> pl.DataFrame:
    """`ops` (`queries.fs_ops`, one row per run) with `timed_ops_per_s`: the printed ops/s where the whole
    loop is timed, else 1000 / the mean latency of the timed part (ms): exact from every timed operation
    (`op_lat`, `queries.fs_op_latencies`) when the run logged them, else from the printed `avg_ms` (null when
    it printed 0.0: below its resolution)."""
    exact = (
        op_lat.group_by("run_id").agg(
            pl.when(pl.col("latency_ms").sum() > 0).then(1000 * pl.len() / pl.col("latency_ms").sum()).alias("_exact")
        )
        if op_lat.height
        else pl.DataFrame(schema={"run_id": pl.Utf8, "_exact": pl.Float64})
    )
    from_latency = pl.coalesce(pl.col("_exact"), pl.when(pl.col("avg_ms") > 0).then(1000 / pl.col("avg_ms")))
    return (
        ops.join(exact, on="run_id", how="left")
        .with_columns(
            pl.when(pl.col("benchmark").str.contains(UNTIMED_WORK.pattern))
            .then(from_latency)
            .otherwise(pl.col("ops_per_s"))
            .alias("timed_ops_per_s")
        )
        .drop("_exact")
    )


def baseline_label(ops: pl.DataFrame, baseline_target: str) -> str:
    """The label the comparison uses for `baseline_target`, or the first target's when it did not run."""
    base = ops.filter(pl.col("target") == baseline_target)["target_label"]
    return base[0] if base.len() else ops["target_label"][0]


def per_operation(ops: pl.DataFrame) -> pl.DataFrame:
    """Per benchmark and target (`queries.fs_ops`, one row per repeat): repeats `n`, median, min and max
    ops/s (the printed loop rate), the same of `timed_ops_per_s` (`timed_med`, `timed_min`, `timed_max`;
    null unless `timed_rates` added it), medians of the printed latency summary (`avg_ms` .. `max_ms`) and
    the errors summed."""
    timed = pl.col("timed_ops_per_s") if "timed_ops_per_s" in ops.columns else pl.lit(None, pl.Float64)
    return ops.group_by("benchmark", "target", "target_label", maintain_order=True).agg(
        pl.len().alias("n"),
        pl.col("ops_per_s").median().alias("ops_med"),
        pl.col("ops_per_s").min().alias("ops_min"),
        pl.col("ops_per_s").max().alias("ops_max"),
        timed.median().alias("timed_med"),
        timed.min().alias("timed_min"),
        timed.max().alias("timed_max"),
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


def seed_benchstat(ops: pl.DataFrame, baseline: str, alpha: float = 0.05) -> dict[str, str]:
    """benchstat's text as seed 003 printed it, one block per other target against the target named
    `baseline` (columns headed by target names, short enough for a page, as the seed's `ext4`, `zfs`):

        name                          ext4 ops/sec  zfs ops/sec  delta
        fsbench/delete_small_dir_2MB   15.6k ±14%    6.8k ±16%   ~     (p=0.100 n=3+3)

    computed as the seed's (old) benchstat did: per benchmark the mean of the repeats left after its IQR
    outlier rule ± their largest deviation from it in %, the exact two-sided Mann-Whitney p, not adjusted
    for the other rows, and the delta only when p < alpha. `ops` needs `timed_ops_per_s` (`timed_rates`)."""
    df = ops.filter(pl.col("timed_ops_per_s").is_not_null()).with_columns(
        pl.format("fsbench/{}", "benchmark").alias("_name")
    )
    out: dict[str, str] = {}
    for cand in df["target"].unique(maintain_order=True).to_list():
        if cand == baseline:
            continue
        table = stats.benchstat(df, "timed_ops_per_s", "_name", "target", baseline, cand, alpha, center="v1")
        out[cand] = stats.format_benchstat(table.filter(pl.col("benchmark") != "geomean"), "ops/sec")
    return out


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
        pl.col("timed_med").alias("timed ops/s"),
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
