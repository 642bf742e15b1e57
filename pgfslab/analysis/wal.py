"""Commits per WAL flush (group commit) and WAL bytes per transaction, from the pg_stat sampler
(pgstat.csv v2: pg_stat_database's xact_commit beside pg_stat_wal's counters, PostgreSQL 14+).

With synchronous_commit on, a commit returns only once WAL up to its record is flushed; when several
backends wait at once, one flush (an fdatasync of the WAL file) can make all their commits durable:
commits per WAL flush above 1 is group commit, and it is how a target's tps can exceed its device
ceiling (1 / median fdatasync latency). With synchronous_commit off the WAL writer flushes on its own
clock, and the ratio says how many commits each of its flushes covered.

Definitions (per run, over its pgstat samples; `wal_flush_counter` says which counter is the flush):

* flushes: pg_stat_wal.wal_sync, the number of issue_xlog_fsync calls, when wal_sync_method is fsync,
  fdatasync (Linux's default) or fsync_writethrough; with open_sync/open_datasync wal_sync stays 0 and
  every WAL write is itself durable, so wal_write is the flush count instead. wal_sync counts the flushes
  of every backend and of the WAL writer, cluster-wide.
* commits: the increase of pg_stat_database.xact_commit of the benchmark's database, less the sampler's
  own two read-only transactions per sample interval (its query and pg_stat_clear_snapshot(), both in
  autocommit on a connection to that database). Read-only transactions commit without a flush, so only
  workloads that write are analysed (`device.writes`).
* commits_per_flush = commits / flushes over the run (a ratio of sums, first to last sample);
  wal_bytes_per_commit = wal_bytes increase / commits; fpi_share = wal_fpi / wal_records (full-page
  images after each checkpoint); sync_ms_per_flush = wal_sync_time / wal_sync, only when the server ran
  with track_wal_io_timing = on (otherwise PostgreSQL leaves the times at 0: null here).

PostgreSQL 15 publishes a backend's counters at most about once a second (when it goes idle), so single
seconds are lumpy; the per-second ratios (`per_second`) are for looking at, the per-run ratios are what
is compared. Repeats, not seconds, are the unit: a cell's value is the median of its runs with the
distribution-free interval (`stats.cell_summary`), and targets are compared benchstat-style
(`stats.benchstat_grid`: medians with their intervals, Mann-Whitney, Holm over the grid).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from pgfslab.analysis import stats
from pgfslab.records.run_record import RunRecord

SAMPLER_COMMITS_PER_SAMPLE = 2  # the sampler's own SELECT and pg_stat_clear_snapshot(), each a transaction
SYNC_METHODS_COUNTED = {"fsync", "fdatasync", "fsync_writethrough"}  # wal_sync counts these (PG docs)
DEFAULT_SYNC_METHOD = "fdatasync"  # Linux's default when run.json's settings do not name one
METRICS = {
    "commits_per_flush": "commits per WAL flush",
    "wal_bytes_per_commit": "WAL bytes per commit",
}

RUN_SCHEMA: dict[str, Any] = {
    "run_id": pl.Utf8,
    "samples": pl.Int64,
    "seconds": pl.Float64,
    "commits": pl.Int64,
    "wal_sync": pl.Int64,
    "wal_write": pl.Int64,
    "wal_bytes": pl.Int64,
    "wal_records": pl.Int64,
    "wal_fpi": pl.Int64,
    "wal_buffers_full": pl.Int64,
    "wal_sync_time_ms": pl.Float64,
}


def _setting(rec: RunRecord, name: str) -> str | None:
    """A setting in force after the run (pg_settings' `setting`), None when not listed."""
    v = ((rec.postgres.settings if rec.postgres else {}).get(name) or {}).get("setting")
    return None if v is None else str(v)


def run_facts(records: dict[str, RunRecord]) -> pl.DataFrame:
    """Per run, from run.json: `wal_sync_method` (as in force; Linux's default when not listed among the
    non-default settings), `io_timing` (track_wal_io_timing on), `synchronous_commit`."""
    rows = [
        {
            "run_id": rid,
            "wal_sync_method": _setting(rec, "wal_sync_method") or DEFAULT_SYNC_METHOD,
            "io_timing": (_setting(rec, "track_wal_io_timing") or "off") == "on",
            "synchronous_commit": _setting(rec, "synchronous_commit") or "on",
        }
        for rid, rec in records.items()
    ]
    schema = {"run_id": pl.Utf8, "wal_sync_method": pl.Utf8, "io_timing": pl.Boolean, "synchronous_commit": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)


def _has_wal(pgstat: pl.DataFrame) -> bool:
    """Rows with every pg_stat_wal column the analysis reads (a database from v1 files only has none)."""
    need = {"epoch_s", "xact_commit", "wal_sync", "wal_write", "wal_bytes", "wal_records", "wal_fpi"}
    return pgstat.height > 0 and need <= set(pgstat.columns)


def run_deltas(pgstat: pl.DataFrame) -> pl.DataFrame:
    """Per run with pg_stat_wal samples (v2 files; v1 runs are left out): the increases from its first to
    its last sample (`RUN_SCHEMA`), commits net of the sampler's own transactions."""
    if not _has_wal(pgstat):
        return pl.DataFrame(schema=RUN_SCHEMA)
    v2 = pgstat.filter(pl.col("wal_sync").is_not_null()).sort("run_id", "epoch_s")

    def d(c: str) -> pl.Expr:
        return pl.col(c).last() - pl.col(c).first()

    return (
        v2.group_by("run_id", maintain_order=True)
        .agg(
            pl.len().cast(pl.Int64).alias("samples"),
            d("epoch_s").alias("seconds"),
            d("xact_commit").alias("_xact"),
            *[d(c).alias(c) for c in ("wal_sync", "wal_write", "wal_bytes", "wal_records", "wal_fpi")],
            d("wal_buffers_full").alias("wal_buffers_full"),
            d("wal_sync_time").alias("wal_sync_time_ms"),
        )
        .filter(pl.col("samples") >= 2)
        .with_columns((pl.col("_xact") - SAMPLER_COMMITS_PER_SAMPLE * (pl.col("samples") - 1)).clip(0).alias("commits"))
        .select(list(RUN_SCHEMA))
        .cast(RUN_SCHEMA)  # type: ignore[arg-type]
    )


def _flushes(counted: pl.Expr) -> pl.Expr:
    return pl.when(counted).then(pl.col("wal_sync")).otherwise(pl.col("wal_write"))


def per_run(pgstat: pl.DataFrame, runs: pl.DataFrame, records: dict[str, RunRecord]) -> pl.DataFrame:
    """`run_deltas` joined with the run's cell (`runs`: run_id, target, workload, clients, repeat, ...) and
    `run_facts`, with `flushes`, `wal_flush_counter`, `commits_per_flush`, `wal_bytes_per_commit`,
    `fpi_share`, `sync_ms_per_flush` (null without track_wal_io_timing) and `commits_per_s`."""
    deltas = run_deltas(pgstat)
    facts = run_facts(records)
    counted = pl.col("wal_sync_method").is_in(list(SYNC_METHODS_COUNTED))
    cell = [c for c in ("run_id", "target", "workload", "clients", "repeat", "plan_index") if c in runs.columns]
    return (
        deltas.join(runs.select(cell), on="run_id", how="inner")
        .join(facts, on="run_id", how="left")
        .with_columns(
            _flushes(counted).alias("flushes"),
            pl.when(counted).then(pl.lit("wal_sync")).otherwise(pl.lit("wal_write")).alias("wal_flush_counter"),
        )
        .with_columns(
            (pl.col("commits") / pl.col("flushes").replace(0, None)).alias("commits_per_flush"),
            (pl.col("wal_bytes") / pl.col("commits").replace(0, None)).alias("wal_bytes_per_commit"),
            (pl.col("wal_fpi") / pl.col("wal_records").replace(0, None)).alias("fpi_share"),
            pl.when(pl.col("io_timing") & counted)
            .then(pl.col("wal_sync_time_ms") / pl.col("wal_sync").replace(0, None))
            .alias("sync_ms_per_flush"),
            (pl.col("commits") / pl.col("seconds").replace(0, None)).alias("commits_per_s"),
        )
        .sort("plan_index" if "plan_index" in cell else "run_id")
    )


def per_second(pgstat: pl.DataFrame, records: dict[str, RunRecord]) -> pl.DataFrame:
    """Per sample interval of every v2 run: `commits` (net of the sampler's two), `flushes` (the run's flush
    counter's increase) and `commits_per_flush` (null for an interval without a flush)."""
    if not _has_wal(pgstat):
        return pl.DataFrame()
    facts = run_facts(records)
    counted = pl.col("wal_sync_method").is_in(list(SYNC_METHODS_COUNTED))
    keep = [c for c in ("run_id", "target", "workload", "clients", "repeat", "epoch_s") if c in pgstat.columns]
    return (
        pgstat.filter(pl.col("wal_sync").is_not_null())
        .join(facts, on="run_id", how="left")
        .with_columns(
            (pl.col("xact_commit").diff().over("run_id", order_by="epoch_s") - SAMPLER_COMMITS_PER_SAMPLE)
            .clip(0)
            .alias("commits"),
            _flushes(counted).diff().over("run_id", order_by="epoch_s").alias("flushes"),
            pl.col("epoch_s").diff().over("run_id", order_by="epoch_s").alias("seconds"),
        )
        .filter(pl.col("seconds").is_not_null())
        .select(
            *keep,
            "seconds",
            "commits",
            "flushes",
            (pl.col("commits") / pl.col("flushes").replace(0, None)).alias("commits_per_flush"),
        )
    )


def cells(df: pl.DataFrame, confidence: float = 0.95) -> pl.DataFrame:
    """Per target, workload and clients: n runs, median and its distribution-free interval of each of
    `METRICS` (columns `<metric>`, `<metric>_low`, `<metric>_high`) and the runs' ids (provenance)."""
    by = ["target", "workload", "clients"]
    out = df.group_by(by, maintain_order=True).agg(
        pl.len().alias("runs"), pl.col("run_id").sort().str.join(", ").alias("run_ids")
    )
    for m in METRICS:
        s = stats.cell_summary(df, m, by, confidence).select(
            *by,
            pl.col("median").alias(m),
            pl.col("median_ci_low").alias(f"{m}_low"),
            pl.col("median_ci_high").alias(f"{m}_high"),
            pl.col("ci_coverage").alias(f"{m}_coverage"),
        )
        out = out.join(s, on=by, how="left")
    return out


def compare(
    df: pl.DataFrame, metric: str, baseline: str, alpha: float = 0.05, confidence: float = 0.95
) -> pl.DataFrame:
    """`metric` of every target against `baseline` per cell (workload, clients): benchstat's grid (medians
    with their intervals, delta, Mann-Whitney p Holm-adjusted over the grid). Empty without the baseline."""
    if baseline not in df["target"].to_list():
        return pl.DataFrame()
    cell = df.with_columns(pl.format("{} c={}", "workload", "clients").alias("cell"))
    grid = stats.benchstat_grid(cell, metric, "cell", "target", baseline, alpha=alpha, confidence=confidence)
    return grid.filter(pl.col("benchmark") != "geomean") if "benchmark" in grid.columns else grid
