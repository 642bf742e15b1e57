"""Throughput: per-second series of every tool, and one headline number per run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pgfslab.analysis.queries.connection import (
    NOT_BURN_IN,
    RUN_COLS,
    frame,
    has_table,
    of_ok_runs,
    target_condition,
    workload_condition,
)
from pgfslab.ingest.parsers import HEADLINES
from pgfslab.tools import TOOLS


def progress(db: str | Path, study: str, workload: str | None = None) -> pl.DataFrame:
    """Per-second pgbench progress of every successful run (burn-in rounds left out), with the run's cell columns."""
    wc, wp = workload_condition(workload)
    return frame(
        db,
        f"""
        SELECT r.run_id, r.target, r.target_label, r.fallback, r.workload, r.clients, r.repeat,
               p.t_s, p.tps, p.latency_avg_ms, p.latency_stddev_ms, p.failed
        FROM pgbench_progress p JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' AND {NOT_BURN_IN} {wc}
        ORDER BY r.target, r.clients, r.repeat, p.t_s""",
        [study, *wp],
    )


def throughput(
    db: str | Path, study: str, workload: str | None = None, targets: Sequence[str] | None = None
) -> pl.DataFrame:
    """Per-second throughput of every successful run (burn-in rounds left out), whatever the tool: pgbench's `-P` progress
    and sysbench's `--report-interval` lines, as one frame (t_s, tps, latency_ms, errors_per_s,
    latency_kind saying what latency_ms is: pgbench's mean, or sysbench's percentile)."""
    wc, wp = workload_condition(workload)
    tc, tp = target_condition(targets)
    params: list[object] = [study, *wp, *tp]
    cols = "r.run_id, r.target, r.target_label, r.fallback, r.workload, r.base_workload, r.tool, r.clients, r.repeat"
    parts = [
        f"""
        SELECT {cols}, p.t_s, p.tps, p.latency_avg_ms AS latency_ms, 'mean' AS latency_kind,
               p.failed::DOUBLE / greatest(p.t_s - coalesce(lag(p.t_s) OVER (PARTITION BY p.run_id ORDER BY p.t_s), 0), 1e-9)
                   AS errors_per_s
        FROM pgbench_progress p JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' AND {NOT_BURN_IN} {wc} {tc}"""
    ]
    if has_table(db, "sysbench_interval"):
        parts.append(f"""
        SELECT {cols}, s.t_s, s.tps, s.latency_ms, 'p' || s.latency_pct::VARCHAR AS latency_kind,
               s.errors_per_s
        FROM sysbench_interval s JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' AND {NOT_BURN_IN} {wc} {tc}""")
    sql = " UNION ALL ".join(parts) + " ORDER BY target, clients, repeat, t_s"
    return frame(db, sql, params * len(parts))


def sysbench_qps(
    db: str | Path, study: str, workload: str | None = None, targets: Sequence[str] | None = None
) -> pl.DataFrame:
    """sysbench's per-second report lines of every successful run (`--report-interval`): the run's cell
    columns, t_s, tps and queries per second in total and by kind, `qps_read` / `qps_write` / `qps_other`
    (sysbench's `(r/w/o: ...)`: SELECTs; INSERT/UPDATE/DELETE; BEGIN/COMMIT and the rest)."""
    if not has_table(db, "sysbench_interval"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, s.t_s, s.tps, s.qps, s.qps_read, s.qps_write, s.qps_other"
    return of_ok_runs(db, study, "sysbench_interval s", cols, "r.plan_index, s.t_s", workload=workload, targets=targets)


@dataclass(frozen=True)
class Metric:
    """What a run's headline number is: pgbench/sysbench transactions per second, fsmicro ops/s."""

    name: str
    unit: str
    higher_is_better: bool = True


# each tool's headline as figures and tables name it (the registry's, pgfslab.tools)
METRICS = {name: Metric(t.metric, unit) for name, t in TOOLS.items() if (unit := t.unit) is not None}


def headline(
    db: str | Path, study: str, targets: Sequence[str] | None = None, *, only_ok: bool = True, burn_in: bool = False
) -> pl.DataFrame:
    """One headline number per run, whatever the tool: pgbench's tps (without connection time),
    sysbench's transactions per second, fsmicro's ops/s. Columns: the run's cell (run_id, target,
    target_label, fs, workload, tool, clients, repeat, plan_index, status, duration_s), `value`,
    `unit`, `higher_is_better`, and for goodput `transactions` (completed), `failed` (pgbench
    failed transactions, sysbench ignored errors, fsmicro errors) and `elapsed_s`. Burn-in rounds
    (run.burn_in_rounds) are never compared: left out unless `burn_in` (the exchangeability checks show them)."""
    tc, tp = target_condition(targets)
    cond = "AND r.status = 'ok'" if only_ok else ""
    cond += "" if burn_in else f" AND {NOT_BURN_IN}"
    # each tool's headline from its own format's table (ingest.parsers.HEADLINES), for the tables this database has
    sources = [
        f"SELECT '{name}' AS headline_tool, * FROM ({sql})"
        for name, (table, sql) in HEADLINES.items()
        if has_table(db, table)
    ]
    empty = "SELECT NULL AS headline_tool, NULL AS run_id, NULL::DOUBLE AS value, NULL::BIGINT AS transactions, "
    empty += "NULL::BIGINT AS failed, NULL::DOUBLE AS elapsed_s WHERE FALSE"
    units = " ".join(f"WHEN '{name}' THEN '{m.unit}'" for name, m in METRICS.items())
    df = frame(
        db,
        f"""
        WITH hl AS ({" UNION ALL BY NAME ".join(sources) or empty})
        SELECT {RUN_COLS}, r.host, r.burn_in, r.position, r.predecessor, r.status, r.duration_s, r.scale, r.rung, r.dataset_bytes, r.mount_options,
               hl.value AS value,
               CASE r.tool {units} END AS unit,
               TRUE AS higher_is_better,
               hl.transactions::BIGINT AS transactions,
               hl.failed::BIGINT AS failed,
               hl.elapsed_s AS elapsed_s
        FROM runs r LEFT JOIN hl ON hl.run_id = r.run_id AND hl.headline_tool = r.tool
        WHERE r.study = ? {cond} {tc}
        ORDER BY r.plan_index""",
        [study, *tp],
    )
    return df


def summaries(db: str | Path, study: str) -> pl.DataFrame:
    """pgbench's end-of-run summary per run, with the run's cell columns (every run, also failed
    ones; summary columns null where pgbench left none). For any tool: `headline`."""
    return frame(
        db,
        """
        SELECT r.run_id, r.target, r.target_label, r.fallback, r.fs, r.workload, r.builtin, r.clients,
               r.repeat, r.plan_index, r.status, s.tps, s.latency_avg_ms, s.latency_stddev_ms,
               s.transactions_processed, s.failed_transactions, s.initial_connection_time_ms
        FROM runs r LEFT JOIN pgbench_summary s USING (run_id)
        WHERE r.study = ?
        ORDER BY r.plan_index""",
        [study],
    )


def cell_label(workload: str, clients: int | None, tool: str | None = None) -> str:
    """`tpcb/c=4` (benchstat's benchmark name of a cell); fsmicro workloads have no client count."""
    return workload if tool == "fsmicro" or clients is None else f"{workload}/c={clients}"
