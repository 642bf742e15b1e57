"""What does sysbench do each second, and how steady is it (notebook sysbench_qps; seed 002)?

Seed 002 drew, per device and thread count, sysbench's per-second queries: the total and its read, write and
other parts (`qps (r/w/o)` of `--report-interval` lines), and tabulated per thread count the average and
variance (σ²) of the per-second TPS, one row per device, one pair of columns per thread count. Here: the
same per target, after each run's first `trim_s` seconds (the warm-up); with several repeats of a cell the
table gives the median over them of each run's average and variance (the whitepaper ran each cell once).
"""

from __future__ import annotations

import polars as pl

from pgfslab.analysis import stats

RUN_KEYS = ["run_id", "target", "target_label", "workload", "clients", "repeat"]
# sysbench's columns and the names the figure gives them (gnuplot's titles in seed 002's script)
SERIES = {"qps": "QPS (total)", "qps_read": "qps: read", "qps_write": "qps: write", "qps_other": "qps: other"}


def per_run(qps: pl.DataFrame, trim_s: float) -> pl.DataFrame:
    """Per run (`queries.sysbench_qps` rows): after dropping its first `trim_s` seconds, the number of
    per-second samples `n`, the average and variance (n - 1) of per-second TPS (`tps_avg`, `tps_var`) and
    the average total, read, write and other QPS."""
    kept = stats.trim_warmup(qps, trim_s)
    tps = stats.stability_table(kept, "tps", RUN_KEYS).select(
        *RUN_KEYS, "n", pl.col("mean").alias("tps_avg"), pl.col("variance").alias("tps_var")
    )
    q = kept.group_by("run_id").agg(pl.col(c).mean().alias(f"{c}_avg") for c in SERIES)
    return tps.join(q, on="run_id", how="left").sort("clients", "target", "repeat")


def representative_runs(runs: pl.DataFrame) -> pl.DataFrame:
    """One run per cell (target, clients) to draw: the one whose average TPS is the cell's median (the
    lower of the two middle runs for an even count; ties: the earlier repeat)."""
    ranked = runs.sort("tps_avg", "repeat").with_columns(
        pl.int_range(pl.len()).over("target", "clients").alias("_rank"),
        ((pl.len().over("target", "clients") - 1) // 2).alias("_mid"),
    )
    return ranked.filter(pl.col("_rank") == pl.col("_mid")).drop("_rank", "_mid").sort("clients", "target")


def series(qps: pl.DataFrame, run_ids: pl.Series) -> pl.DataFrame:
    """The chosen runs' per-second QPS in long form: target, target_label, clients, t_s, `series` (the
    figure's name of each column, in SERIES order) and `qps`."""
    return (
        qps.filter(pl.col("run_id").is_in(run_ids.implode()))
        .unpivot(index=["target", "target_label", "clients", "t_s"], on=list(SERIES), variable_name="series")
        .with_columns(pl.col("series").replace_strict(SERIES, return_dtype=pl.Utf8), pl.col("value").alias("qps"))
        .drop("value")
    )


def whitepaper_table(runs: pl.DataFrame, targets_in_order: list[str]) -> pl.DataFrame:
    """Seed 002's "TPS (average and variance)" table: one row per target (in `targets_in_order`), then per
    thread count `<c> thr avg` and `<c> thr σ²`, the medians over the cell's runs of each run's per-second
    TPS average and variance (one run: its own)."""
    cells = runs.group_by("target", "target_label", "clients").agg(
        pl.col("tps_avg").median().alias("avg"), pl.col("tps_var").median().alias("var")
    )
    order = {t: i for i, t in enumerate(targets_in_order)}
    wide = cells.pivot("clients", index=["target", "target_label"], values=["avg", "var"], sort_columns=True)
    clients = sorted(cells["clients"].unique().to_list())
    cols = [
        expr
        for c in clients
        for expr in (pl.col(f"avg_{c}").alias(f"{c} thr avg"), pl.col(f"var_{c}").alias(f"{c} thr σ²"))
    ]
    return (
        wide.with_columns(pl.col("target").replace_strict(order, default=len(order), return_dtype=pl.Int64).alias("_o"))
        .sort("_o", "target")
        .select(pl.col("target_label").alias("target"), *cols)
    )


def runs_per_cell(runs: pl.DataFrame) -> pl.DataFrame:
    """How many runs each thread count has (the fewest and most over targets), for the table's caption."""
    per = runs.group_by("target", "clients").len("runs")
    return (
        per.group_by("clients")
        .agg(pl.col("runs").min().alias("min"), pl.col("runs").max().alias("max"))
        .sort("clients")
    )
