"""Latency: pgbench's per-transaction and aggregate logs, sysbench's percentiles and histograms."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pgfslab.analysis.queries.connection import (
    RUN_COLS,
    MissingData,
    frame,
    has_table,
    of_ok_runs,
    target_condition,
    workload_condition,
)


def latency_source(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> str:
    """How this workload's latency over time can be known, best first: "exact" (pgbench
    per-transaction log), "aggregate" (pgbench --aggregate-interval log: per-interval mean, min,
    max), "sysbench" (sysbench's per-interval percentile). MissingData when none."""
    wc, wp = workload_condition(workload)
    tc, tp = target_condition(targets)
    checks = [("exact", "pgbench_txlog"), ("aggregate", "pgbench_aggregate"), ("sysbench", "sysbench_interval")]
    for kind, table in checks:
        if not has_table(db, table):
            continue
        extra = "AND t.latency_ms IS NOT NULL" if table == "sysbench_interval" else ""
        n = frame(
            db,
            f"""SELECT count(*) AS n FROM (SELECT 1 FROM {table} t JOIN runs r USING (run_id)
                           WHERE r.study = ? AND r.status = 'ok' {wc} {tc} {extra} LIMIT 1)""",
            [study, *wp, *tp],
        )
        if n["n"][0]:
            return kind
    raise MissingData(
        f"no latency data for workload {workload!r} in this study database (no pgbench "
        "per-transaction or aggregate log, no sysbench interval percentile)"
    )


def txlog_latency(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Every logged transaction of the workload's successful runs: the run's cell columns, `t_s`
    (the second of the run the transaction finished in: 1 = the first second, like pgbench -P),
    latency_us and status. From pgbench's per-transaction log (`log: transactions`)."""
    cols = f"""{RUN_COLS}, t.latency_us, t.status,
               floor((t.epoch_us - min(t.epoch_us) OVER (PARTITION BY t.run_id)) / 1e6)::BIGINT + 1 AS t_s"""
    return of_ok_runs(db, study, "pgbench_txlog t", cols, "r.plan_index, t_s", workload=workload, targets=targets)


def txlog_p95(db: str | Path, study: str, trim_s: float) -> pl.DataFrame:
    """Per successful run with a per-transaction log: `latency_p95_tx`, the 95th percentile (linear, as the
    per-second one) of its logged transactions' latency in ms, counted from the second after `trim_s` (t_s as in
    `txlog_latency`, the seconds `within_run` keeps), and `n_tx`, the transactions it rests on. Empty when
    no run logged transactions."""
    schema = {"run_id": pl.Utf8, "latency_p95_tx": pl.Float64, "n_tx": pl.Int64}
    if not has_table(db, "pgbench_txlog"):
        return pl.DataFrame(schema=schema)
    got = frame(
        db,
        """WITH t AS (
               SELECT t.run_id, t.latency_us,
                      floor((t.epoch_us - min(t.epoch_us) OVER (PARTITION BY t.run_id)) / 1e6) + 1 AS t_s
               FROM pgbench_txlog t JOIN runs r USING (run_id)
               WHERE r.study = ? AND r.status = 'ok')
           SELECT run_id, quantile_cont(latency_us, 0.95) / 1e3 AS latency_p95_tx, count(*) AS n_tx
           FROM t WHERE t_s > ? AND latency_us IS NOT NULL GROUP BY run_id""",
        [study, trim_s],
    )
    return got.cast(schema) if got.height else pl.DataFrame(schema=schema)  # type: ignore[arg-type]


def aggregate_latency(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """pgbench's aggregate log rows (per interval: n_tx, latency sum/sum2/min/max in µs) of the
    workload's successful runs, with `t_s` = end of the interval in seconds since the run's first
    interval started (1 = the first second) and `epoch_s` = the interval's start (epoch)."""
    cols = f"""{RUN_COLS}, a.interval_start_s AS epoch_s,
               (a.interval_start_s - min(a.interval_start_s) OVER (PARTITION BY a.run_id)
                + coalesce(try_cast(rp.value AS BIGINT), 1))::DOUBLE AS t_s,
               a.n_tx, a.latency_sum_us, a.latency_sum2_us2, a.latency_min_us, a.latency_max_us, a.failures"""
    return of_ok_runs(
        db,
        study,
        "pgbench_aggregate a",
        cols,
        "r.plan_index, a.interval_start_s",
        workload=workload,
        targets=targets,
        join="LEFT JOIN run_params rp ON rp.run_id = r.run_id AND rp.key = 'run.aggregate_interval_s'",
    )


def sysbench_latency(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """sysbench's per-interval latency percentile (`--percentile`, default 95) of the workload's runs."""
    cols = f"{RUN_COLS}, s.t_s, s.latency_pct, s.latency_ms"
    return of_ok_runs(
        db,
        study,
        "sysbench_interval s",
        cols,
        "r.plan_index, s.t_s",
        workload=workload,
        targets=targets,
        where="AND s.latency_ms IS NOT NULL",
    )


def sysbench_histogram(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """sysbench's end-of-run latency histogram (`--histogram`) buckets of the workload's runs."""
    if not has_table(db, "sysbench_histogram"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, h.value_ms, h.count"
    return of_ok_runs(
        db, study, "sysbench_histogram h", cols, "r.plan_index, h.value_ms", workload=workload, targets=targets
    )


def sysbench_summaries(
    db: str | Path, study: str, workload: str | None = None, targets: Sequence[str] | None = None
) -> pl.DataFrame:
    if not has_table(db, "sysbench_summary"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, s.* EXCLUDE (file_id, source_file, run_id, threads)"
    return of_ok_runs(db, study, "sysbench_summary s", cols, "r.plan_index", workload=workload, targets=targets)
