"""File-system micro-benchmarks: fsbench tables and fsmicro per-operation latencies."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pgfslab.analysis.queries.connection import RUN_COLS, frame, has_table, of_ok_runs
from pgfslab.analysis.queries.study_runs import runs

SIZE_SUFFIX = re.compile(r"_\d+(?:\.\d+)?(?:[kKMG]i?B?|B)$")


def fs_ops(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The fsmicro result row of every successful run: the run's cell columns, `benchmark` (the
    benchmark name the runner printed, `fsbench/<name>`'s name, e.g. `create_empty`), and ops,
    ops_per_s, avg/p50/p95/p99/max latency in ms, errors."""
    if not has_table(db, "fs_ops"):
        return pl.DataFrame()
    cols = f"""{RUN_COLS}, f.table_no, f.optype, f.elapsed_s, f.ops, f.ops_per_s, f.avg_ms, f.p50_ms, f.p95_ms,
               f.p99_ms, f.max_ms, coalesce(f.errors, 0) AS errors"""
    df = of_ok_runs(db, study, "fs_ops f", cols, "r.plan_index, f.table_no", targets=targets)
    if df.height == 0:
        return df
    names = fs_benchmark_names(db, study)
    return df.with_columns(
        pl.col("run_id").replace_strict(names, default=None).fill_null(pl.col("optype")).alias("benchmark")
    )


def fs_benchmark_names(db: str | Path, study: str) -> dict[str, str]:
    """run_id -> the full benchmark name of an fsmicro run (the `fsbench/<name>` line's, which the
    result table cuts to 10 characters), from the per-operation log when ingested, else the workload."""
    out: dict[str, str] = {}
    if has_table(db, "fsmicro_ops"):
        df = frame(
            db,
            """SELECT DISTINCT o.run_id, o.op FROM fsmicro_ops o JOIN runs r USING (run_id)
                           WHERE r.study = ?""",
            [study],
        )
        out.update(dict(df.iter_rows()))
    for r in runs(db, study).filter(pl.col("tool") == "fsmicro").iter_rows(named=True):
        out.setdefault(r["run_id"], r["workload"])
    return out


def fs_op_latencies(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Every timed fsmicro operation (fsmicro_ops.csv): cell columns, `benchmark`, latency_ms and
    t_s (seconds since the run's first operation started)."""
    if not has_table(db, "fsmicro_ops"):
        return pl.DataFrame()
    cols = f"""{RUN_COLS}, o.op AS benchmark, o.latency_ns / 1e6 AS latency_ms,
               (o.start_ns - min(o.start_ns) OVER (PARTITION BY o.run_id)) / 1e9 AS t_s"""
    return of_ok_runs(db, study, "fsmicro_ops o", cols, "r.plan_index, o.start_ns", targets=targets)


def benchmark_family(name: str) -> str:
    """A benchmark name without its size suffix: `delete_small_dir_2MB` -> `delete_small_dir`."""
    return SIZE_SUFFIX.sub("", name.removeprefix("fsbench/"))
