"""The published reference results ingested from data/external/ (origin 'published')."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from pgfslab.analysis.queries.connection import frame, has_table


def published(db: str | Path, table: str) -> pl.DataFrame:
    """A published reference table (data/external/, origin 'published'): published_sysbench_variance,
    published_space, published_compression or published_benchstat; empty when not ingested."""
    if not has_table(db, table):
        return pl.DataFrame()
    return frame(db, f"SELECT * EXCLUDE (file_id, run_id) FROM {table}")


def published_pgbench(db: str | Path) -> pl.DataFrame:
    """Published pgbench summaries (seed 001): one row per published run with its setup."""
    df = frame(
        db,
        """
        SELECT r.run_id, r.target, r.fs, r.workload, r.builtin, r.clients, r.threads, r.scale, r.pg_version,
               s.tps, s.latency_avg_ms, s.transactions_processed, s.failed_transactions, r.run_json
        FROM runs r JOIN pgbench_summary s USING (run_id)
        WHERE r.origin = 'published' ORDER BY r.run_id""",
    )
    if df.height == 0:
        return df
    extra = [json.loads(j) for j in df["run_json"]]
    return df.drop("run_json").with_columns(
        pl.Series("settings", [str((e.get("run") or e).get("settings") or e.get("settings") or "") for e in extra]),
        pl.Series("note", [str((e.get("run") or e).get("note") or e.get("note") or "") for e in extra]),
        pl.Series("seed", [str(e.get("seed") or "") for e in extra]),
    )


def published_fs_ops(db: str | Path) -> pl.DataFrame:
    """Published fs micro-benchmark tables (seed 003): one row per published run table (a repeat)."""
    if not has_table(db, "fs_ops"):
        return pl.DataFrame()
    return frame(
        db,
        """
        SELECT r.run_id, r.target, r.fs, r.workload AS benchmark, f.table_no AS repeat, f.ops_per_s, f.avg_ms,
               f.p50_ms, f.p95_ms, f.p99_ms, f.max_ms
        FROM fs_ops f JOIN runs r USING (run_id)
        WHERE r.origin = 'published' ORDER BY r.run_id, f.table_no""",
    )
