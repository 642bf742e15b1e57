"""The paper's "WAL flushes and the WAL device" results: commits per WAL flush and WAL bytes per commit per
cell (pgfslab.analysis.wal, from pg_stat_wal), compared between targets with intervals; and, for targets
whose WAL lives on another target (`wal_on`), the WAL device's writes beside the data device's, each on
its own (pgfslab.analysis.wal_device, from /proc/diskstats).

Every number is computed from the study database; the per-run values behind each table and figure are
written beside it (`<tables_dir>/wal_flushes.parquet`, `wal_device.parquet`: one row per run, with its
run id; `wal_flushes_per_second.parquet`: each sample interval, lumpy because PostgreSQL publishes a
backend's counters about once a second), so any number can be traced to its runs.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl

from pgfslab.analysis import charts, device, queries, report, wal, wal_device
from pgfslab.paper.context import Context, figure, show


def interval(center: str, low: str, high: str, digits: int) -> pl.Expr:
    """'1.23 [1.10, 1.40]': a median with its interval, as text (null when the median is; '[too few runs]'
    when benchstat's interval is infinite: too few runs to reach its confidence)."""

    def f(c: str) -> pl.Expr:
        return pl.col(c).round(digits).cast(pl.Utf8)

    wide = pl.col(low).is_infinite() | pl.col(high).is_infinite()  # benchstat: too few runs for the confidence
    return (
        pl.when(pl.col(center).is_null())
        .then(None)
        .when(wide)
        .then(pl.format("{} [too few runs]", f(center)))
        .otherwise(pl.format("{} [{}, {}]", f(center), f(low), f(high)))
    )


def _labels(ctx: Context) -> dict[str, str]:
    runs = ctx.runs.select("target", "target_label").unique("target")
    return {t: lab or t for t, lab in runs.iter_rows()}


def writing_runs(ctx: Context) -> pl.DataFrame:
    """The successful runs whose workload writes (a read-only commit needs no flush)."""
    ok = ctx.runs.filter(pl.col("status") == "ok")
    keep = [r for r in ok["run_id"].to_list() if r in ctx.records and device.writes(ctx.records[r])]
    return ok.filter(pl.col("run_id").is_in(keep)).select(
        "run_id", "target", pl.col("cell_workload").alias("workload"), "clients", "repeat", "plan_index"
    )


def flush_runs(ctx: Context) -> pl.DataFrame:
    """`wal.per_run` of the study's writing runs (empty without pg_stat_wal samples)."""
    runs = writing_runs(ctx)
    if runs.height == 0:
        return pl.DataFrame()
    return wal.per_run(queries.pgstat(ctx.db, ctx.study), runs, ctx.records)


def flush_table(per_run: pl.DataFrame, labels: dict[str, str]) -> pl.DataFrame:
    c = wal.cells(per_run)
    extra = per_run.group_by("target", "workload", "clients").agg(
        pl.col("fpi_share").median().alias("fpi"),
        pl.col("sync_ms_per_flush").median().alias("sync_ms"),
        pl.col("commits_per_s").median().alias("commits_s"),
    )
    return c.join(extra, on=["target", "workload", "clients"], how="left").select(
        pl.col("target").replace_strict(labels, default=pl.col("target")).alias("target"),
        "workload",
        "clients",
        "runs",
        pl.col("commits_s").alias("commits/s"),
        interval("commits_per_flush", "commits_per_flush_low", "commits_per_flush_high", 3).alias(
            "commits per WAL flush"
        ),
        interval("wal_bytes_per_commit", "wal_bytes_per_commit_low", "wal_bytes_per_commit_high", 0).alias(
            "WAL bytes per commit"
        ),
        (100 * pl.col("fpi")).alias("full-page images %"),
        pl.col("sync_ms").alias("ms per WAL sync"),
    )


def comparison_table(per_run: pl.DataFrame, baseline: str, labels: dict[str, str], alpha: float) -> pl.DataFrame:
    """Commits per WAL flush of each target against the baseline, per cell: both medians with the same
    order-statistic intervals as the cell table (`wal.cells`), benchstat's change and its exact Mann-Whitney p,
    Holm-adjusted over the grid (`wal.compare`)."""
    g = wal.compare(per_run, "commits_per_flush", baseline, alpha)
    if g.height == 0:
        return g
    c = wal.cells(per_run).select(
        pl.format("{} c={}", "workload", "clients").alias("benchmark"),
        "target",
        interval("commits_per_flush", "commits_per_flush_low", "commits_per_flush_high", 3).alias("ci"),
    )
    base = c.filter(pl.col("target") == baseline).select("benchmark", pl.col("ci").alias("ci_base"))
    return (
        g.join(base, on="benchmark", how="left")
        .join(c.rename({"target": "candidate"}), on=["benchmark", "candidate"], how="left")
        .select(
            pl.col("benchmark").alias("cell"),
            pl.col("candidate").replace_strict(labels, default=pl.col("candidate")).alias("target"),
            pl.col("ci_base").alias(labels.get(baseline, baseline)),
            pl.col("ci").alias("this target"),
            pl.col("delta"),
            pl.col("p_adjusted").map_elements(report.pvalue, return_dtype=pl.Utf8).alias("p (Holm)"),
            pl.format("{}+{}", "n_baseline", "n_candidate").alias("runs"),
        )
    )


def coverage_sentence(per_run: pl.DataFrame) -> str:
    """What the brackets cover: the exact coverage of the order-statistic interval at these run counts."""
    cov = wal.cells(per_run)["commits_per_flush_coverage"].drop_nulls()
    if cov.len() == 0:
        return ""
    lo, hi = 100 * float(cov.min()), 100 * float(cov.max())  # type: ignore[arg-type]
    what = f"{lo:.2f} %" if abs(hi - lo) < 1e-9 else f"{lo:.2f}–{hi:.2f} %"
    return f" The brackets are the distribution-free interval of the median from order statistics (coverage {what})."


def flush_chart(per_run: pl.DataFrame, labels: dict[str, str]) -> Any:
    """Each run's commits per WAL flush (a dot, its run id in the tooltip) and the cell's median (a tick),
    per target, one panel per client count."""
    df = per_run.select(
        pl.col("target").replace_strict(labels, default=pl.col("target")).alias("target"),
        "workload",
        "clients",
        "run_id",
        "commits_per_flush",
    ).drop_nulls("commits_per_flush")
    base = alt.Chart(df).encode(
        x=alt.X("target:N", title=None, axis=alt.Axis(labelAngle=-45, labelAlign="right", labelLimit=260)),
        color=alt.Color("target:N", legend=None),
    )
    dots = base.mark_circle(size=40, opacity=0.7).encode(
        y=alt.Y("commits_per_flush:Q", title="commits per WAL flush (run)"),
        tooltip=["run_id", "workload", "clients", alt.Tooltip("commits_per_flush:Q", format=".2f")],
    )
    med = base.mark_tick(thickness=2, size=24).encode(y="median(commits_per_flush):Q")
    return (
        alt.layer(dots, med, data=df)
        .facet(column=alt.Column("clients:O", title="clients"))
        .properties(title="Commits per WAL flush")
    )


def device_table(io: pl.DataFrame, labels: dict[str, str]) -> pl.DataFrame:
    c = wal_device.cells(io)
    return c.select(
        pl.col("target").replace_strict(labels, default=pl.col("target")).alias("target"),
        "workload",
        "clients",
        pl.col("role").alias("device holds"),
        pl.format("{} ({})", "devices", "on_target").alias("device (target)"),
        "runs",
        interval("write_iops", "write_iops_low", "write_iops_high", 0).alias("write IOPS"),
        interval("write_mb_s", "write_mb_s_low", "write_mb_s_high", 2).alias("write MB/s"),
        interval("write_await_ms", "write_await_ms_low", "write_await_ms_high", 3).alias("write await ms"),
        pl.col("flushes_per_s").round(0).alias("flushes/s"),
    )


def device_chart(io: pl.DataFrame, labels: dict[str, str]) -> Any:
    """Write IOPS per device role (data, WAL, data+WAL), median and interval per target and client count."""
    c = wal_device.cells(io).with_columns(
        pl.format("{} · {}", pl.col("target").replace_strict(labels, default=pl.col("target")), pl.col("role")).alias(
            "target · device"
        ),
    )
    return charts.grouped_bars_with_error(
        c,
        "clients",
        "write_iops",
        "target · device",
        "write_iops_low",
        "write_iops_high",
        x_title="clients",
        y_title="write IOPS (median of runs)",
        title="Writes per second on each device, the WAL device apart",
    )


def wal_results(ctx: Context) -> None:
    """The section, when the study sampled pg_stat_wal (writing runs) or kept WAL on another target."""
    labels = _labels(ctx)
    per_run = flush_runs(ctx)
    io = wal_device.per_run(ctx.db, ctx.study)
    apart = wal_device.has_wal_device(io)
    if per_run.height == 0 and not apart:
        return
    show("### WAL flushes and the WAL device")
    alpha = float(ctx.cfg.analysis.alpha)
    if per_run.height:
        ctx.tables_dir.mkdir(parents=True, exist_ok=True)
        per_run.write_parquet(ctx.tables_dir / "wal_flushes.parquet")
        seconds = wal.per_second(queries.pgstat(ctx.db, ctx.study), ctx.records)
        seconds.filter(pl.col("run_id").is_in(per_run["run_id"].to_list())).write_parquet(
            ctx.tables_dir / "wal_flushes_per_second.parquet"
        )
        methods = sorted(set(per_run["wal_sync_method"].drop_nulls().to_list()))
        timing = bool(per_run["io_timing"].any())
        show(
            "With synchronous_commit on a commit returns once WAL up to its record is flushed, and one flush can "
            "make the commits of several waiting backends durable (group commit). From pg_stat_wal and "
            "pg_stat_database, sampled during each run: commits per WAL flush = committed transactions (less the "
            "sampler's own two per sample) / WAL flushes "
            f"({'wal_sync' if set(methods) <= wal.SYNC_METHODS_COUNTED else 'wal_sync, or wal_write where wal_sync_method is open_sync/open_datasync'}"
            f", wal_sync_method {', '.join(methods)}), over each run from its first to its last sample; WAL bytes "
            "per commit likewise. Read-only workloads are left out. A cell is the median of its runs."
            + coverage_sentence(per_run)
            + " "
            + (
                "The time per WAL sync is pg_stat_wal's wal_sync_time / wal_sync (track_wal_io_timing on)."
                if timing
                else "No run had track_wal_io_timing on, so pg_stat_wal has no sync times."
            )
        )
        table = flush_table(per_run, labels)
        ctx.defer(
            "WAL flushes and the WAL device",
            report.markdown_table(
                table,
                digits={"commits/s": 0, "full-page images %": 1, "ms per WAL sync": 3},
                caption="Commits per WAL flush and WAL bytes per commit, median [interval] of each cell's runs; "
                "per-run values with their run ids in wal_flushes.parquet beside the study's tables.",
            ),
        )
        comp = comparison_table(per_run, ctx.baseline, labels, alpha)
        if comp.height:
            ctx.defer(
                "WAL flushes and the WAL device",
                report.markdown_table(
                    comp,
                    caption=f"Commits per WAL flush against {labels.get(ctx.baseline, ctx.baseline)}, per cell: "
                    "medians with their intervals, the change (`~`: not significant), exact Mann-Whitney p "
                    f"Holm-adjusted over the table, α = {alpha}.",
                ),
            )
        paths = charts.save_chart(flush_chart(per_run, labels), ctx.figures_dir / "wal_commits_per_flush")
        figure(
            paths["svg"],
            "Commits per WAL flush of each run (dots; the run ids are in wal_flushes.parquet and the figure's "
            "tooltips) and each cell's median (tick), per client count." + ctx.provenance(),
        )
    if apart:
        ctx.tables_dir.mkdir(parents=True, exist_ok=True)
        io.write_parquet(ctx.tables_dir / "wal_device.parquet")
        show(
            "Where a target keeps its WAL on another target (`wal_on`), the WAL device and the data device are two "
            "loop devices, and /proc/diskstats was sampled for both; each run's counters are taken per device "
            "(which device held what is read from that run's run.json), never summed. A target with its WAL in "
            "PGDATA has one device for both (`data+WAL`). Rates are over each run's sampled interval; write await "
            "is the mean time per completed write (iostat's w_await)."
        )
        ctx.defer(
            "WAL flushes and the WAL device",
            report.markdown_table(
                device_table(io, labels),
                digits={"flushes/s": 0},
                caption="Writes on the data device and on the WAL device, each on its own: median [interval] of the "
                "cell's runs; per-run values with their run ids in wal_device.parquet beside the study's tables.",
            ),
        )
        paths = charts.save_chart(device_chart(io, labels), ctx.figures_dir / "wal_device")
        figure(
            paths["svg"],
            "Write IOPS of each device, the WAL device apart from the data device (median of the cell's runs "
            "with its distribution-free interval)." + ctx.provenance(),
        )
