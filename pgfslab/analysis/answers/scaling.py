"""How does throughput fall as the data set outgrows shared_buffers, the memory limit and RAM (notebook
scaling)?

Each run's throughput at its data set's database size (`queries.memory_facts`), per target and cell the
median over repeats (`stats.scaling_table`) and where the size sits against the memory thresholds.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pgfslab.analysis import report, stats
from pgfslab.analysis.scalar import number
from pgfslab.analysis.stats import Scaling

MEMORY_FACTS = [
    "run_id",
    "dataset",
    "database_bytes",
    "shared_buffers_bytes",
    "ram_bytes",
    "cgroup_limit_bytes",
    "cgroup_limit_requested_bytes",
    "cgroup_applied",
]


def with_sizes(runs: pl.DataFrame, mem: pl.DataFrame) -> pl.DataFrame:
    """`runs` (one row per run, `value` its throughput) with their memory facts, `size_mib` (the median
    database size of the target's data set: it grows a little during a run) and the `cell` label
    (`tpcb/c=4`, as `queries.cell_label`)."""
    base = _base(runs)  # a ladder's rungs (`tpcb.d1`, `tpcb.d2`) are one line of the chart: `tpcb`
    out = runs.join(mem.select(MEMORY_FACTS), on="run_id").with_columns(
        (pl.col("database_bytes") / 2**20).alias("size_mib"),
        pl.when(pl.col("clients").is_null()).then(base).otherwise(pl.format("{}/c={}", base, "clients")).alias("cell"),
    )
    return out.with_columns(pl.col("size_mib").median().over("target", "dataset").alias("size_mib"))


def _base(runs: pl.DataFrame) -> pl.Expr:
    return pl.coalesce("base_workload", "workload") if "base_workload" in runs.columns else pl.col("workload")


def thresholds(runs: pl.DataFrame) -> dict[str, Any]:
    """The memory thresholds in force (medians over the runs), as `stats.scaling_table`'s keywords:
    shared_buffers, RAM and the cgroup limit when it was applied; sizes in MiB."""
    return dict(
        shared_buffers_bytes=runs["shared_buffers_bytes"].median(),
        ram_bytes=runs["ram_bytes"].median(),
        cgroup_limit_bytes=runs["cgroup_limit_bytes"].median() if runs["cgroup_applied"].any() else None,
        bytes_per_size_unit=float(2**20),
    )


def is_ladder(runs: pl.DataFrame) -> bool:
    """Does any workload, client count and file system run at several data-set sizes?"""
    sizes = runs.group_by(_base(runs).alias("w"), "clients", "fs").agg(pl.col("dataset").n_unique().alias("k"))
    return bool((sizes["k"] > 1).any())


def scaling(runs: pl.DataFrame) -> Scaling:
    """Median run throughput per cell, target and size with its interval over repeats, relative to the
    smallest size, and the regime (`stats.scaling_table`), with the thresholds for the chart."""
    return stats.scaling_table(runs, "size_mib", "value", ["cell", "target_label"], **thresholds(runs))


def threshold_table(runs: pl.DataFrame) -> pl.DataFrame:
    """The memory thresholds as the reader sees them (human units; the cgroup limit as requested)."""
    requested = runs["cgroup_limit_requested_bytes"]
    cgroup = (
        report.bytes_h(number(requested.median())) + ("" if runs["cgroup_applied"].any() else " (not applied)")
        if requested.is_not_null().any()
        else "none"
    )
    return pl.DataFrame(
        {
            "threshold": ["shared_buffers", "cgroup memory limit", "RAM (MemTotal)"],
            "size": [
                report.bytes_h(number(runs["shared_buffers_bytes"].median())),
                cgroup,
                report.bytes_h(number(runs["ram_bytes"].median())),
            ],
        }
    )


def data_sets(runs: pl.DataFrame, table: pl.DataFrame) -> pl.DataFrame:
    """Per target and data set: its size (MiB), runs, and the regime of the target in `table`."""
    facts = runs.group_by("target_label", "dataset", maintain_order=True).agg(
        pl.col("size_mib").first(), pl.len().alias("runs")
    )
    if "regime" not in table.columns:
        return facts.with_columns(pl.lit(None, pl.Utf8).alias("regime"))
    regime = table.group_by("target_label", "size_mib", maintain_order=True).agg(pl.col("regime").first())
    return facts.join(regime, on=["target_label", "size_mib"], how="left", maintain_order="left")


def data_set_table(sets: pl.DataFrame) -> pl.DataFrame:
    """`data_sets` as the reader sees it."""
    return sets.select(
        pl.col("target_label").alias("target"),
        "dataset",
        pl.col("size_mib").alias("database MiB"),
        "runs",
        pl.col("regime").fill_null("–"),
    )


def scaling_cells_table(table: pl.DataFrame, ladder: bool) -> pl.DataFrame:
    """`scaling`'s table as the reader sees it (`vs smallest` only with several sizes)."""
    return table.select(
        pl.col("target_label").alias("target"),
        "cell",
        pl.col("size_mib").alias("MiB"),
        "n",
        pl.col("median").alias("median tps"),
        pl.col("median_ci_low").alias("CI low"),
        pl.col("median_ci_high").alias("CI high"),
        *([pl.col("rel_to_smallest").alias("vs smallest")] if ladder else []),
    )
