"""How much dirty page cache builds up, how fast is it written back, and do checkpoints line up with the
throughput dips (notebook dirty_memory_checkpoints)?

Everything is on the samplers' clock (seconds since a run's first /proc/meminfo sample): `Dirty` and
`Writeback` from meminfo, throughput from `queries.throughput_on_sampler_clock`, checkpoint windows from
the server log's ingested checkpoints (or, without them, the pg_stat sample after which the checkpoint counters
grew).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pgfslab.analysis import charts, report, stats

WINDOW_SCHEMA = {"run_id": pl.Utf8, "start_s": pl.Float64, "end_s": pl.Float64, "from": pl.Utf8}
CELL = ["target", "target_label", "workload", "clients"]
ATTRIBUTION = [
    "n",
    "n_in",
    "time_share",
    "variance_share",
    "mean_in",
    "mean_out",
    "delta_pct",
    "delta_pct_lo",
    "delta_pct_hi",
]


def benchmark_ends(mem: pl.DataFrame, tps: pl.DataFrame) -> pl.DataFrame:
    """When did each run's benchmark end (`run_id`, `t_end`)? Its last throughput sample, or for a run
    without throughput on the samplers' clock its last meminfo sample."""
    ends = mem.group_by("run_id").agg(pl.col("t_s").max().cast(pl.Float64).alias("_mem"))
    if tps.height:
        last = tps.group_by("run_id").agg(pl.col("t_s").max().cast(pl.Float64).alias("_tps"))
        ends = ends.join(last, on="run_id", how="left")
    else:
        ends = ends.with_columns(pl.lit(None, pl.Float64).alias("_tps"))
    return ends.select("run_id", pl.coalesce("_tps", "_mem").alias("t_end"))


def checkpoint_windows(
    mem: pl.DataFrame,
    tps: pl.DataFrame,
    logged: pl.DataFrame,
    origin: Mapping[str, float],
    pgs: pl.DataFrame,
) -> pl.DataFrame:
    """When did checkpoints run during each benchmark (the runs of `mem`, in its order)?

    A run with rows in `logged` (`queries.checkpoint_log`: the server log's checkpoints, epoch seconds) gets
    those windows, without shutdown checkpoints and those that started after the benchmark ended
    (`benchmark_ends`); `from` = "server log". A run without any gets, from the pg_stat sampler (`pgs`), a
    zero-length window at each sample after which the checkpoint counters grew (known to a second); `from` =
    "pg_stat counters". Times are seconds since `origin[run_id]`."""
    run_ids = mem["run_id"].unique(maintain_order=True)
    order = pl.DataFrame({"run_id": run_ids}).with_row_index("_order")
    parts = []
    logged = logged.filter(pl.col("run_id").is_in(run_ids.implode()) & pl.col("start_epoch").is_not_null())
    if logged.height:
        at = pl.col("run_id").replace_strict(dict(origin), default=None, return_dtype=pl.Float64)
        parts.append(
            logged.select(
                "run_id",
                (pl.col("start_epoch") - at).alias("start_s"),
                (pl.col("end_epoch") - at).alias("end_s"),
                "reason",
            )
            .join(benchmark_ends(mem, tps), on="run_id", how="left", maintain_order="left")
            .filter(~pl.col("reason").fill_null("").str.contains("shutdown") & (pl.col("start_s") <= pl.col("t_end")))
            .drop("t_end")
            .with_columns(pl.lit("server log").alias("from"))
        )
    if pgs.height:
        at = pl.col("epoch_s") - pl.col("run_id").replace_strict(dict(origin), return_dtype=pl.Float64)
        parts.append(
            pgs.filter(
                pl.col("run_id").is_in(run_ids.implode())
                & ~pl.col("run_id").is_in(logged["run_id"].unique().implode())
                & (pl.col("checkpoints") > 0)
            ).select("run_id", at.alias("start_s"), at.alias("end_s"), pl.lit("pg_stat counters").alias("from"))
        )
    if not parts:
        return pl.DataFrame(schema=WINDOW_SCHEMA)
    windows = pl.concat(parts, how="diagonal_relaxed")
    return (
        windows.join(order, on="run_id", how="left", maintain_order="left")
        .sort("_order", maintain_order=True)
        .drop("_order")
    )


def representative_runs(heads: pl.DataFrame, run_ids: pl.Series) -> pl.DataFrame:
    """Which run stands for each cell (`CELL`)? The repeat with the median throughput (`value` of
    `queries.headline`; the upper median for an even count), among `run_ids`."""
    return (
        heads.filter(pl.col("run_id").is_in(run_ids.implode()))
        .sort("value")
        .group_by(CELL, maintain_order=True)
        .agg(pl.col("run_id").get(pl.len() // 2).alias("run_id"))
    )


def figure_data(mem: pl.DataFrame, shown_runs: pl.Series, windows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The figure's two layers for `shown_runs`: their meminfo samples in MiB with a `panel` label
    (`charts.panel_labels`), and their checkpoint windows with the same `panel` (an open window ends
    where it starts)."""
    shown = charts.panel_labels(
        mem.filter(pl.col("run_id").is_in(shown_runs.implode())).with_columns((pl.col("kb") / 1024).alias("MiB"))
    )
    panels = shown.select("run_id", "panel").unique()
    wins = windows.join(panels, on="run_id", how="inner", maintain_order="left").with_columns(
        pl.col("end_s").fill_null(pl.col("start_s"))
    )
    return shown, wins


def throughput_figure_data(
    tps: pl.DataFrame,
    shown_runs: pl.Series,
    windows: pl.DataFrame,
    snapshots: pl.DataFrame,
    origin: Mapping[str, float],
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """The throughput figure's three layers for `shown_runs`, on the samplers' clock: their per-second
    throughput with a `panel` label (the cells side by side, e.g. seed 000's two dirty_background_bytes
    settings), their checkpoint windows, and the snapshot creations (`at_s` = the event's epoch minus
    the run's clock origin) as marks, each with the same `panel`."""
    shown = charts.panel_labels(tps.filter(pl.col("run_id").is_in(shown_runs.implode())))
    panels = shown.select("run_id", "panel").unique()
    wins = windows.join(panels, on="run_id", how="inner", maintain_order="left").with_columns(
        pl.col("end_s").fill_null(pl.col("start_s"))
    )
    marks = (
        snapshots.filter(pl.col("action") == "create")
        .join(panels, on="run_id", how="inner", maintain_order="left")
        .select(
            "run_id",
            "panel",
            (pl.col("epoch_s") - pl.col("run_id").replace_strict(dict(origin), default=None)).alias("at_s"),
        )
        .drop_nulls("at_s")
    )
    return shown, wins, marks


def per_run(mem: pl.DataFrame, tps: pl.DataFrame, windows: pl.DataFrame, pgs: pl.DataFrame) -> pl.DataFrame:
    """Per run: how much dirty memory, how many checkpoints, and how much of the throughput's variation
    falls in them?

    Dirty mean and max and Writeback max (MiB) and the number of meminfo samples; checkpoints from the
    server log (`checkpoints_log`) and the pg_stat counters' increase (`checkpoints_pgstat`, null when
    the study has no pg_stat samples); the throughput's source, and `stats.checkpoint_attribution` of the
    run's throughput to its windows (n, n_in, time_share, variance_share, mean_in/out, delta_pct with its
    interval; null for a run without throughput). One row per run, ordered by repeat."""
    kb, key = pl.col("kb"), pl.col("key")
    out = mem.group_by("run_id", maintain_order=True).agg(
        *[pl.col(c).first() for c in ("target", "target_label", "workload", "clients", "repeat")],
        (kb.filter(key == "Dirty").mean() / 1024).alias("dirty_mean_mib"),
        (kb.filter(key == "Dirty").max() / 1024).alias("dirty_max_mib"),
        (kb.filter(key == "Writeback").max() / 1024).alias("writeback_max_mib"),
        (key == "Dirty").sum().cast(pl.Int64).alias("samples"),
    )
    from_log = windows.filter(pl.col("from") == "server log").group_by("run_id").agg(pl.len().alias("checkpoints_log"))
    out = out.join(from_log, on="run_id", how="left", maintain_order="left").with_columns(
        pl.col("checkpoints_log").fill_null(0).cast(pl.Int64)
    )
    if pgs.height:
        counted = pgs.group_by("run_id").agg(pl.col("checkpoints").sum().alias("checkpoints_pgstat"))
        out = out.join(counted, on="run_id", how="left", maintain_order="left").with_columns(
            pl.col("checkpoints_pgstat").fill_null(0)
        )
    else:
        out = out.with_columns(pl.lit(None).alias("checkpoints_pgstat"))
    series = tps.filter(pl.col("run_id").is_in(out["run_id"].implode())) if tps.height else tps
    if series.height:
        out = out.join(
            series.group_by("run_id").agg(pl.col("source").first().alias("tps_source")),
            on="run_id",
            how="left",
            maintain_order="left",
        )
    else:
        out = out.with_columns(pl.lit(None, pl.Utf8).alias("tps_source"))
    attribution = [
        {
            "run_id": run_id,
            **stats.checkpoint_attribution(part, windows.filter(pl.col("run_id") == run_id), "tps", "t_s"),
        }
        for (run_id,), part in (series.group_by("run_id", maintain_order=True) if series.height else [])
    ]  # one call per run: the attribution works on a run's whole series
    if attribution:
        att = pl.DataFrame(attribution, infer_schema_length=None).select("run_id", *ATTRIBUTION)
        out = out.join(att, on="run_id", how="left", maintain_order="left")
    else:
        out = out.with_columns(*[pl.lit(None).alias(c) for c in ATTRIBUTION])
    return out.sort("repeat")


def per_cell(runs: pl.DataFrame) -> pl.DataFrame:
    """Per cell (target_label, workload, clients): runs, medians over them of the dirty and write-back
    memory and the checkpoint shares, checkpoint counts summed."""
    return runs.group_by("target_label", "workload", "clients", maintain_order=True).agg(
        pl.len().alias("runs"),
        pl.col("dirty_mean_mib").median(),
        pl.col("dirty_max_mib").median(),
        pl.col("writeback_max_mib").median(),
        pl.col("checkpoints_log").sum(),
        pl.col("checkpoints_pgstat").sum(),
        pl.col("time_share").median(),
        pl.col("variance_share").median(),
        pl.col("delta_pct").median(),
    )


def cell_table(cells: pl.DataFrame) -> pl.DataFrame:
    """`per_cell` as the reader sees it (shares in %)."""
    return cells.select(
        pl.col("target_label").alias("target"),
        "workload",
        "clients",
        "runs",
        report.pair_expr("dirty_mean_mib", "dirty_max_mib").alias("dirty mean / max"),
        pl.col("writeback_max_mib").alias("writeback max"),
        report.pair_expr("checkpoints_log", "checkpoints_pgstat").alias("ckpts log / pg_stat"),
        (100 * pl.col("time_share")).alias("time in ckpt %"),
        (100 * pl.col("variance_share")).alias("tps var in ckpt %"),
        pl.col("delta_pct").alias("tps in vs out %"),
    )
