"""Read the study database for notebooks and the paper: one function per question, SQL in
DuckDB, results as polars frames. A question without the data it needs raises MissingData
with one clear sentence (notebooks show it instead of a traceback).

Conventions:
* `targets`: an optional list of target names; None (or empty) means every target of the study.
* Only the study's own runs (`runs.study = study`, origin 'local'); the published reference
  results have their own functions (`published_*`).
* Times: `t_s` is seconds since the start of the benchmark for the tool's own series (pgbench -P,
  sysbench intervals, pgbench logs), and seconds since the run's first /proc sample for the
  samplers (`run_clock_origin`), which share one epoch clock with pgstat.csv and postgresql.log.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl


class MissingData(Exception):
    """The study database lacks what a notebook needs.

    In a notebook it prints as one line (IPython's `_render_traceback_` hook), not a traceback.
    """

    def _render_traceback_(self) -> list[str]:
        return [f"STOP: {self}"]


def connect(db: str | Path) -> duckdb.DuckDBPyConnection:
    """A new read-only connection (the caller closes it)."""
    p = Path(db)
    if not p.exists():
        raise MissingData(f"{p}: no such database (run the study, or `make analyse STUDY=...` on its raw folder)")
    return duckdb.connect(str(p), read_only=True)


# Opening the database costs about 35 ms here (DuckDB reads its catalog) and a notebook or the paper asks a
# few dozen questions, so questions asked together share one read-only connection per database: inside
# `sharing()`, and in IPython (a notebook's kernel, the paper's) within one cell. The shared connection is
# closed when the scope or the cell ends, so no lock is held between cells (`pgfslab ingest` writes into a
# database in place, and a kernel left open in JupyterLab must not block it), and a database replaced since
# (a new ingest) is opened afresh.
_shared: dict[str, tuple[tuple[int, int, int], duckdb.DuckDBPyConnection]] = {}
_depth = 0
_ipython_hooked = False


def _identity(p: Path) -> tuple[int, int, int]:
    st = p.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def close_shared() -> None:
    """Close the shared connections (the end of a scope or cell)."""
    while _shared:
        _, (_, con) = _shared.popitem()
        con.close()


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """The questions asked inside share one read-only connection per database, closed at the end."""
    global _depth
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if not _depth:
            close_shared()


def _in_ipython_cell() -> bool:
    """True in an IPython shell, whose cells end by closing the shared connections (hooked once)."""
    global _ipython_hooked
    if _ipython_hooked:
        return True
    if "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    if shell is None:
        return False
    shell.events.register("post_run_cell", lambda *_: close_shared())
    _ipython_hooked = True
    return True


@contextlib.contextmanager
def _reading(db: str | Path) -> Iterator[duckdb.DuckDBPyConnection]:
    if not (_depth or _in_ipython_cell()):
        with connect(db) as con:
            yield con
        return
    p = Path(db)
    if not p.exists():
        connect(p)  # raises MissingData
    key, ident = str(p.resolve()), _identity(p)
    held = _shared.get(key)
    if held is None or held[0] != ident:
        if held is not None:
            held[1].close()
        _shared[key] = held = (ident, connect(p))
    yield held[1]


def _frame(db: str | Path, sql: str, params: list[object] | None = None) -> pl.DataFrame:
    with _reading(db) as con:
        return con.sql(sql, params=params or None).pl()


def require(df: pl.DataFrame, what: str) -> pl.DataFrame:
    if df.height == 0:
        raise MissingData(f"no {what} in this study database")
    return df


def _has(db: str | Path, table: str) -> bool:
    with _reading(db) as con:
        # fetchall: a shared connection must not be left with an unfinished result
        rows = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [table]).fetchall()
        return bool(rows[0][0])


def _tcond(targets: Sequence[str] | None, alias: str = "r") -> tuple[str, list[object]]:
    """SQL condition and parameter for the optional target filter."""
    if not targets:
        return "", []
    return f"AND list_contains(?, {alias}.target)", [list(targets)]


def _wcond(workload: str | None, alias: str = "r") -> tuple[str, list[object]]:
    if not workload:
        return "", []
    return f"AND {alias}.workload = ?", [workload]


RUN_COLS = (
    "r.run_id, r.target, r.target_label, r.fallback, r.fs, r.workload, r.base_workload, r.tool, r.clients, r.repeat, "
    "r.plan_index"
)


def _of_ok_runs(
    db: str | Path,
    study: str,
    source: str,
    columns: str,
    order: str,
    *,
    workload: str | None = None,
    targets: Sequence[str] | None = None,
    join: str = "",
    where: str = "",
    params: Sequence[object] = (),
) -> pl.DataFrame:
    """`columns` of `source` (a table and its alias) for the study's successful runs (joined as `r`), of one
    workload and some targets when given, in `order`. `join` adds joins; `where` adds conditions whose
    `params` are bound after the study's."""
    wc, wp = _wcond(workload)
    tc, tp = _tcond(targets)
    return _frame(
        db,
        f"""
        SELECT {columns}
        FROM {source} JOIN runs r USING (run_id) {join}
        WHERE r.study = ? AND r.status = 'ok' {where} {wc} {tc}
        ORDER BY {order}""",
        [study, *params, *wp, *tp],
    )


# ---------------------------------------------------------------------------- study, runs, targets


# the study's record and its parsed config, by database file (path and identity): asked by most sections
_study_rows: dict[tuple[str, tuple[int, int, int]], dict[str, object]] = {}


def study_info(db: str | Path) -> dict[str, object]:
    p = Path(db)
    key = (str(p.resolve()), _identity(p)) if p.exists() else None
    row = _study_rows.get(key) if key else None
    if row is None:
        df = _frame(db, "SELECT * FROM study")  # MissingData without the file
        row = require(df, "study record").row(0, named=True)
        if key:
            _study_rows.clear()
            _study_rows[key] = row
    return dict(row)


@functools.lru_cache(maxsize=4)
def _parsed_config(text: str) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(text)  # type: ignore[no-any-return]


def study_config(db: str | Path) -> dict[str, Any]:
    """The study's resolved config (study.yaml as ingested); the caller's own copy."""
    return copy.deepcopy(_parsed_config(str(study_info(db)["config_yaml"])))


def runs(db: str | Path, study: str, *, only_ok: bool = False, targets: Sequence[str] | None = None) -> pl.DataFrame:
    cond = "AND status = 'ok'" if only_ok else ""
    tc, tp = _tcond(targets, "runs")
    return _frame(
        db, f"SELECT * EXCLUDE (run_json) FROM runs WHERE study = ? {cond} {tc} ORDER BY plan_index", [study, *tp]
    )


def targets(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    tc, tp = _tcond(targets, "targets")
    return _frame(db, f"SELECT * EXCLUDE (target_json) FROM targets WHERE study = ? {tc} ORDER BY target", [study, *tp])


def target_names(db: str | Path, study: str, targets: Sequence[str] | None = None) -> list[str]:
    """Every target of the study (the colour scale's domain), in the config's order."""
    cfg = study_config(db)
    names = list(cfg.get("targets") or {})
    if not names:
        names = runs(db, study)["target"].unique(maintain_order=True).to_list()
    return [t for t in names if not targets or t in targets]


def in_config_order(
    df: pl.DataFrame, db: str | Path, study: str, by: Sequence[str] = (), col: str = "target"
) -> pl.DataFrame:
    """`df` sorted by `by` columns, then by `col` in the order the config lists the targets (labels
    such as `x (FALLBACK: ...)` sort with their target)."""
    rank = {t: i for i, t in enumerate(target_names(db, study))}
    key = (
        pl.col(col)
        .cast(pl.Utf8)
        .str.replace(r" \(FALLBACK.*$", "")
        .replace_strict(rank, default=len(rank), return_dtype=pl.Int64)
    )
    return df.sort([*by, key, col]) if by else df.sort([key, col])


def baseline_target(db: str | Path, study: str, targets: Sequence[str] | None = None) -> str:
    """The comparison baseline: the first target of the config (among `targets`)."""
    names = target_names(db, study, targets)
    if not names:
        raise MissingData("no targets in this study database")
    return names[0]


def run_records(
    db: str | Path, study: str, *, targets: Sequence[str] | None = None, only_ok: bool = True
) -> dict[str, dict[str, Any]]:
    """run_id -> the run's run.json (as ingested), in plan order."""
    cond = "AND status = 'ok'" if only_ok else ""
    tc, tp = _tcond(targets, "r")
    df = _frame(
        db, f"SELECT run_id, run_json FROM runs r WHERE study = ? {cond} {tc} ORDER BY plan_index", [study, *tp]
    )
    return {r: json.loads(j) for r, j in df.iter_rows()}


def target_records(db: str | Path, study: str) -> dict[str, dict[str, Any]]:
    """target -> its target.json (set-up record: mkfs, mount, bulk load)."""
    df = _frame(db, "SELECT target, target_json FROM targets WHERE study = ? ORDER BY target", [study])
    return {t: json.loads(j) for t, j in df.iter_rows()}


def workloads_with_tool(db: str | Path, study: str, tools: Sequence[str]) -> list[str]:
    cfg = study_config(db)
    return [w for w, wl in (cfg.get("workloads") or {}).items() if wl.get("tool") in tools]


# ---------------------------------------------------------------------------- per-second throughput


def progress(db: str | Path, study: str, workload: str | None = None) -> pl.DataFrame:
    """Per-second pgbench progress of every successful run, with the run's cell columns."""
    wc, wp = _wcond(workload)
    return _frame(
        db,
        f"""
        SELECT r.run_id, r.target, r.target_label, r.fallback, r.workload, r.clients, r.repeat,
               p.t_s, p.tps, p.latency_avg_ms, p.latency_stddev_ms, p.failed
        FROM pgbench_progress p JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' {wc}
        ORDER BY r.target, r.clients, r.repeat, p.t_s""",
        [study, *wp],
    )


def throughput(
    db: str | Path, study: str, workload: str | None = None, targets: Sequence[str] | None = None
) -> pl.DataFrame:
    """Per-second throughput of every successful run, whatever the tool: pgbench's `-P` progress
    and sysbench's `--report-interval` lines, as one frame (t_s, tps, latency_ms, errors_per_s,
    latency_kind saying what latency_ms is: pgbench's mean, or sysbench's percentile)."""
    wc, wp = _wcond(workload)
    tc, tp = _tcond(targets)
    params: list[object] = [study, *wp, *tp]
    cols = "r.run_id, r.target, r.target_label, r.fallback, r.workload, r.base_workload, r.tool, r.clients, r.repeat"
    parts = [
        f"""
        SELECT {cols}, p.t_s, p.tps, p.latency_avg_ms AS latency_ms, 'mean' AS latency_kind,
               p.failed::DOUBLE / greatest(p.t_s - coalesce(lag(p.t_s) OVER (PARTITION BY p.run_id ORDER BY p.t_s), 0), 1e-9)
                   AS errors_per_s
        FROM pgbench_progress p JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' {wc} {tc}"""
    ]
    if _has(db, "sysbench_interval"):
        parts.append(f"""
        SELECT {cols}, s.t_s, s.tps, s.latency_ms, 'p' || s.latency_pct::VARCHAR AS latency_kind,
               s.errors_per_s
        FROM sysbench_interval s JOIN runs r USING (run_id)
        WHERE r.study = ? AND r.status = 'ok' {wc} {tc}""")
    sql = " UNION ALL ".join(parts) + " ORDER BY target, clients, repeat, t_s"
    return _frame(db, sql, params * len(parts))


def sysbench_qps(
    db: str | Path, study: str, workload: str | None = None, targets: Sequence[str] | None = None
) -> pl.DataFrame:
    """sysbench's per-second report lines of every successful run (`--report-interval`): the run's cell
    columns, t_s, tps and queries per second in total and by kind, `qps_read` / `qps_write` / `qps_other`
    (sysbench's `(r/w/o: ...)`: SELECTs; INSERT/UPDATE/DELETE; BEGIN/COMMIT and the rest)."""
    if not _has(db, "sysbench_interval"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, s.t_s, s.tps, s.qps, s.qps_read, s.qps_write, s.qps_other"
    return _of_ok_runs(
        db, study, "sysbench_interval s", cols, "r.plan_index, s.t_s", workload=workload, targets=targets
    )


# ---------------------------------------------------------------------------- one number per run


@dataclass(frozen=True)
class Metric:
    """What a run's headline number is: pgbench/sysbench transactions per second, fsmicro ops/s."""

    name: str
    unit: str
    higher_is_better: bool = True


METRICS = {
    "pgbench": Metric("throughput", "tps"),
    "sysbench": Metric("throughput", "tps"),
    "fsmicro": Metric("operations", "ops/s"),
}


def headline(db: str | Path, study: str, targets: Sequence[str] | None = None, *, only_ok: bool = True) -> pl.DataFrame:
    """One headline number per run, whatever the tool: pgbench's tps (without connection time),
    sysbench's transactions per second, fsmicro's ops/s. Columns: the run's cell (run_id, target,
    target_label, fs, workload, tool, clients, repeat, plan_index, status, duration_s), `value`,
    `unit`, `higher_is_better`, and for goodput `transactions` (completed), `failed` (pgbench
    failed transactions, sysbench ignored errors, fsmicro errors) and `elapsed_s`."""
    tc, tp = _tcond(targets)
    cond = "AND r.status = 'ok'" if only_ok else ""
    has_sb, has_fs = _has(db, "sysbench_summary"), _has(db, "fs_ops")
    sb_join = "LEFT JOIN sysbench_summary sb USING (run_id)" if has_sb else ""
    fs_join = (
        """LEFT JOIN (SELECT run_id, sum(ops_per_s) AS ops_per_s, sum(ops) AS ops, max(elapsed_s) AS elapsed_s,
                                    sum(coalesce(errors, 0)) AS errors
                             FROM fs_ops GROUP BY run_id) fo USING (run_id)"""
        if has_fs
        else ""
    )
    sb = lambda c: f"sb.{c}" if has_sb else "NULL"  # noqa: E731
    fo = lambda c: f"fo.{c}" if has_fs else "NULL"  # noqa: E731
    df = _frame(
        db,
        f"""
        SELECT {RUN_COLS}, r.status, r.duration_s, r.scale, r.rung, r.dataset_bytes, r.mount_options,
               CASE r.tool WHEN 'pgbench' THEN ps.tps WHEN 'sysbench' THEN {sb("tps")}
                           WHEN 'fsmicro' THEN {fo("ops_per_s")} END AS value,
               CASE r.tool WHEN 'fsmicro' THEN 'ops/s' ELSE 'tps' END AS unit,
               TRUE AS higher_is_better,
               (CASE r.tool WHEN 'pgbench' THEN ps.transactions_processed WHEN 'sysbench' THEN {sb("transactions")}
                           WHEN 'fsmicro' THEN {fo("ops")} END)::BIGINT AS transactions,
               (CASE r.tool WHEN 'pgbench' THEN coalesce(ps.failed_transactions, 0)
                           WHEN 'sysbench' THEN {sb("ignored_errors")} WHEN 'fsmicro' THEN {fo("errors")} END)::BIGINT AS failed,
               CASE r.tool WHEN 'pgbench' THEN ps.duration_s WHEN 'sysbench' THEN {sb("total_time_s")}
                           WHEN 'fsmicro' THEN {fo("elapsed_s")} END AS elapsed_s
        FROM runs r LEFT JOIN pgbench_summary ps USING (run_id) {sb_join} {fs_join}
        WHERE r.study = ? {cond} {tc}
        ORDER BY r.plan_index""",
        [study, *tp],
    )
    return df


def summaries(db: str | Path, study: str) -> pl.DataFrame:
    """pgbench's end-of-run summary per run, with the run's cell columns (every run, also failed
    ones; summary columns null where pgbench left none). For any tool: `headline`."""
    return _frame(
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


# ---------------------------------------------------------------------------- latency


def latency_source(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> str:
    """How this workload's latency over time can be known, best first: "exact" (pgbench
    per-transaction log), "aggregate" (pgbench --aggregate-interval log: per-interval mean, min,
    max), "sysbench" (sysbench's per-interval percentile). MissingData when none."""
    wc, wp = _wcond(workload)
    tc, tp = _tcond(targets)
    checks = [("exact", "pgbench_txlog"), ("aggregate", "pgbench_aggregate"), ("sysbench", "sysbench_interval")]
    for kind, table in checks:
        if not _has(db, table):
            continue
        extra = "AND t.latency_ms IS NOT NULL" if table == "sysbench_interval" else ""
        n = _frame(
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
    return _of_ok_runs(db, study, "pgbench_txlog t", cols, "r.plan_index, t_s", workload=workload, targets=targets)


def aggregate_latency(db: str | Path, study: str, workload: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """pgbench's aggregate log rows (per interval: n_tx, latency sum/sum2/min/max in µs) of the
    workload's successful runs, with `t_s` = end of the interval in seconds since the run's first
    interval started (1 = the first second) and `epoch_s` = the interval's start (epoch)."""
    cols = f"""{RUN_COLS}, a.interval_start_s AS epoch_s,
               (a.interval_start_s - min(a.interval_start_s) OVER (PARTITION BY a.run_id)
                + coalesce(try_cast(rp.value AS BIGINT), 1))::DOUBLE AS t_s,
               a.n_tx, a.latency_sum_us, a.latency_sum2_us2, a.latency_min_us, a.latency_max_us, a.failures"""
    return _of_ok_runs(
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
    return _of_ok_runs(
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
    if not _has(db, "sysbench_histogram"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, h.value_ms, h.count"
    return _of_ok_runs(
        db, study, "sysbench_histogram h", cols, "r.plan_index, h.value_ms", workload=workload, targets=targets
    )


def sysbench_summaries(
    db: str | Path, study: str, workload: str | None = None, targets: Sequence[str] | None = None
) -> pl.DataFrame:
    if not _has(db, "sysbench_summary"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, s.* EXCLUDE (file_id, source_file, run_id, threads)"
    return _of_ok_runs(db, study, "sysbench_summary s", cols, "r.plan_index", workload=workload, targets=targets)


# ---------------------------------------------------------------------------- samplers on the run's clock


def meminfo(db: str | Path, study: str, keys: list[str], targets: Sequence[str] | None = None) -> pl.DataFrame:
    """/proc/meminfo samples of `keys` per successful run; `t_s` = seconds since the run's first
    sample, `epoch_s` the sample's time."""
    cols = f"""{RUN_COLS}, epoch(m.ts) AS epoch_s,
               epoch(m.ts) - epoch(min(m.ts) OVER (PARTITION BY m.run_id)) AS t_s, m.key, m.kb"""
    return _of_ok_runs(
        db,
        study,
        "meminfo m",
        cols,
        "r.plan_index, m.ts",
        targets=targets,
        where="AND list_contains(?, m.key)",
        params=[keys],
    )


def run_clock_origin(db: str | Path, study: str) -> dict[str, float]:
    """run_id -> epoch of its first /proc/meminfo sample: t = 0 of the sampler series."""
    df = _frame(
        db,
        """SELECT m.run_id, epoch(min(m.ts)) AS t0 FROM meminfo m JOIN runs r USING (run_id)
                       WHERE r.study = ? GROUP BY m.run_id""",
        [study],
    )
    return dict(df.iter_rows())


def snapshot_events(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The snapshot scheduler's events of every successful run (snapshots.csv): `epoch_s` when the
    action started, `action` (create, delete, ...), `duration_ms`. Empty without snapshots."""
    if not _has(db, "snapshots"):
        return pl.DataFrame(
            schema={"run_id": pl.Utf8, "epoch_s": pl.Float64, "action": pl.Utf8, "duration_ms": pl.Float64}
        )
    cols = f"{RUN_COLS}, epoch(s.ts) AS epoch_s, s.action, s.duration_ms"
    return _of_ok_runs(db, study, "snapshots s", cols, "r.plan_index, s.ts", targets=targets)


def pgstat(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The pg_stat sampler's rows (pgstat.csv) with `epoch_s`, and per-sample differences:
    `commits_per_s` (xact_commit increase / elapsed), `checkpoints` (checkpoints_timed + _req
    increase since the previous sample) and `buffers_checkpoint_delta`."""
    if not _has(db, "pgstat"):
        return pl.DataFrame()
    tc, tp = _tcond(targets)
    return _frame(
        db,
        f"""
        WITH s AS (
            SELECT {RUN_COLS}, epoch(p.ts) AS epoch_s, p.*
            FROM pgstat p JOIN runs r USING (run_id)
            WHERE r.study = ? AND r.status = 'ok' {tc})
        SELECT * EXCLUDE (file_id, source_file, ts),
               (xact_commit - lag(xact_commit) OVER w) / nullif(epoch_s - lag(epoch_s) OVER w, 0) AS commits_per_s,
               (checkpoints_timed + checkpoints_req) - lag(checkpoints_timed + checkpoints_req) OVER w AS checkpoints,
               buffers_checkpoint - lag(buffers_checkpoint) OVER w AS buffers_checkpoint_delta
        FROM s WINDOW w AS (PARTITION BY run_id ORDER BY epoch_s)
        ORDER BY plan_index, epoch_s""",
        [study, *tp],
    )


def throughput_on_sampler_clock(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Transactions per second of every successful PostgreSQL run on the samplers' clock (`t_s` =
    seconds since the run's first /proc sample, the end of each interval), so that it lines up with
    meminfo, pgstat and the server log: from pgbench's aggregate log (per-interval committed
    transactions, epoch-stamped) when the run has one, else from the pg_stat sampler's xact_commit
    increments (any tool; PostgreSQL flushes these counters about once a second, so single seconds
    are lumpy). `source` says which."""
    origin = run_clock_origin(db, study)
    tc, tp = _tcond(targets)
    parts: list[pl.DataFrame] = []
    have: set[str] = set()
    if _has(db, "pgbench_aggregate"):
        agg = _frame(
            db,
            f"""
            SELECT {RUN_COLS}, a.interval_start_s::DOUBLE AS epoch_s,
                   coalesce(try_cast(any_value(rp.value) AS DOUBLE), 1.0) AS interval_s, sum(a.n_tx) AS n_tx
            FROM pgbench_aggregate a JOIN runs r USING (run_id)
            LEFT JOIN run_params rp ON rp.run_id = r.run_id AND rp.key = 'run.aggregate_interval_s'
            WHERE r.study = ? AND r.status = 'ok' {tc}
            -- pgbench -j N writes one aggregate log per thread: an interval's transactions are their sum
            GROUP BY ALL""",
            [study, *tp],
        )
        if agg.height:
            agg = agg.with_columns(
                (
                    pl.col("epoch_s") + pl.col("interval_s") - pl.col("run_id").replace_strict(origin, default=None)
                ).alias("t_s"),
                (pl.col("n_tx") / pl.col("interval_s")).alias("tps"),
                pl.lit("pgbench aggregate log").alias("source"),
            )
            parts.append(agg.drop("interval_s", "n_tx"))
            have = set(agg["run_id"].unique().to_list())
    ps = pgstat(db, study, targets)
    if ps.height:
        ps = ps.filter(~pl.col("run_id").is_in(list(have)) & pl.col("commits_per_s").is_not_null())
        ps = ps.select(
            *[c.split(".")[-1] for c in RUN_COLS.split(", ")],
            "epoch_s",
            (pl.col("epoch_s") - pl.col("run_id").replace_strict(origin, default=None)).alias("t_s"),
            pl.col("commits_per_s").alias("tps"),
            pl.lit("pg_stat_database xact_commit").alias("source"),
        )
        parts.append(ps)
    if not parts:
        return pl.DataFrame()
    return pl.concat(parts, how="vertical_relaxed").filter(pl.col("t_s").is_not_null()).sort("plan_index", "t_s")


def run_folders(db: str | Path, study: str, raw_dir: str | Path) -> dict[str, Path]:
    """run_id -> its raw folder under `raw_dir` (the folder that holds `<study>/`), from the
    ingested files' source names (`<study>/<run-id>/<file>`); only folders that exist."""
    df = _frame(
        db,
        """SELECT DISTINCT f.run_id, f.source_file FROM files f JOIN runs r USING (run_id)
                       WHERE r.study = ? AND f.origin = 'local'""",
        [study],
    )
    out: dict[str, Path] = {}
    for run_id, source in df.iter_rows():
        folder = Path(raw_dir) / Path(source).parent
        if folder.is_dir():
            out[run_id] = folder
    return out


def server_logs(db: str | Path, study: str, raw_dir: str | Path) -> dict[str, str]:
    """run_id -> the text of the run's postgresql.log (kept in the raw folder, not ingested)."""
    out = {}
    for run_id, folder in run_folders(db, study, raw_dir).items():
        log = folder / "postgresql.log"
        if log.is_file():
            out[run_id] = log.read_text(errors="replace")
    return out


# ---------------------------------------------------------------------------- storage facts

_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "16MB": 16 * 1024**2, "GB": 1024**3}


def setting_bytes(settings: dict[str, Any], name: str) -> float | None:
    """A pg_settings entry ({setting, unit}) in bytes (shared_buffers 16384 x 8kB -> 134217728)."""
    s = (settings or {}).get(name) or {}
    value, unit = s.get("setting"), s.get("unit")
    if value is None or unit not in _UNIT_BYTES or not str(value).lstrip("-").isdigit():
        return None
    return float(int(value) * _UNIT_BYTES[unit])


def _fillfactor(rec: dict[str, Any]) -> int | None:
    ds = rec.get("dataset") or {}
    sb = ds.get("sysbench") or {}
    if rec.get("tool") == "sysbench" or (sb and "fillfactor" in sb and ds.get("fillfactor") is None):
        return sb.get("fillfactor") or 100
    return ds.get("fillfactor") or 100


def dataset_label(rec: dict[str, Any]) -> str:
    """The data set a run used: `pgbench scale 20` or `sysbench 4 x 250,000 rows`."""
    ds = rec.get("dataset") or {}
    if rec.get("tool") == "sysbench":
        sb = ds.get("sysbench") or {}
        return f"sysbench {sb.get('tables', '?')} x {sb.get('table_size', 0):,} rows"
    if rec.get("tool") == "fsmicro":
        return "files (fsmicro)"
    return f"pgbench scale {ds.get('scale', '?')}"


def storage(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Per successful run, its footprint at the end of the run, from run.json: PostgreSQL's sizes
    (`database_bytes` = pg_database_size of the benchmark database, `all_databases_bytes`,
    `relations_bytes` = sum of the listed relations' total size), the file system's
    (`fs_used_bytes`, statvfs of the target; ZFS's `used` on zfs), btrfs `compsize` (`compsize_disk_bytes` on
    disk after compression, `compsize_uncompressed_bytes` the files' logical size, `compsize_referenced_bytes`),
    ZFS's own accounting of the target's dataset (`zfs get`, run.json `zfs_footprint`: `zfs_used_bytes`,
    `zfs_logicalused_bytes` where the pool has the property, else null, `zfs_logicalused_est_bytes` = used x
    compressratio where it has not (zfs-fuse), `zfs_compressratio`, `zfs_implementation`), with the cell
    columns, `fillfactor` and `dataset`."""
    rows = []
    info = runs(db, study, only_ok=True, targets=targets)
    recs = run_records(db, study, targets=targets)
    for r in info.iter_rows(named=True):
        rec = recs.get(r["run_id"]) or {}
        pg = rec.get("postgres") or {}
        comp = rec.get("compsize") or {}
        zfp = rec.get("zfs_footprint") or {}
        rels = pg.get("relations") or []
        rows.append(
            {
                "run_id": r["run_id"],
                "target": r["target"],
                "target_label": r["target_label"],
                "fs": r["fs"],
                "mount_options": r["mount_options"],
                "workload": r["workload"],
                "tool": r["tool"],
                "clients": r["clients"],
                "repeat": r["repeat"],
                "plan_index": r["plan_index"],
                "fillfactor": _fillfactor(rec),
                "dataset": dataset_label(rec),
                "database_bytes": pg.get("database_bytes"),
                "all_databases_bytes": pg.get("all_databases_bytes"),
                "relations_bytes": sum(int(x.get("total_bytes") or 0) for x in rels) if rels else None,
                "fs_used_bytes": rec.get("fs_used_bytes"),
                "compsize_disk_bytes": comp.get("disk_bytes"),
                "compsize_uncompressed_bytes": comp.get("uncompressed_bytes"),
                "compsize_referenced_bytes": comp.get("referenced_bytes"),
                "zfs_used_bytes": zfp.get("used"),
                "zfs_logicalused_bytes": zfp.get("logicalused"),
                "zfs_logicalused_est_bytes": zfp.get("logicalused_est"),
                "zfs_compressratio": zfp.get("compressratio"),
                "zfs_implementation": zfp.get("implementation"),
            }
        )
    schema = {
        "run_id": pl.Utf8,
        "target": pl.Utf8,
        "target_label": pl.Utf8,
        "fs": pl.Utf8,
        "mount_options": pl.Utf8,
        "workload": pl.Utf8,
        "tool": pl.Utf8,
        "clients": pl.Int64,
        "repeat": pl.Int64,
        "plan_index": pl.Int64,
        "fillfactor": pl.Int64,
        "dataset": pl.Utf8,
        "database_bytes": pl.Int64,
        "all_databases_bytes": pl.Int64,
        "relations_bytes": pl.Int64,
        "fs_used_bytes": pl.Int64,
        "compsize_disk_bytes": pl.Int64,
        "compsize_uncompressed_bytes": pl.Int64,
        "compsize_referenced_bytes": pl.Int64,
        "zfs_used_bytes": pl.Int64,
        "zfs_logicalused_bytes": pl.Int64,
        "zfs_logicalused_est_bytes": pl.Int64,
        "zfs_compressratio": pl.Float64,
        "zfs_implementation": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


def memory_facts(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """Per successful run the memory sizes that bound a data set: `shared_buffers_bytes` (as in
    force), `ram_bytes` (MemTotal), `cgroup_limit_bytes` (the study's memory limit when the cgroup
    was applied, else null), `cgroup_applied`, and the run's `database_bytes` and `dataset`."""
    rows = []
    info = runs(db, study, only_ok=True, targets=targets)
    recs = run_records(db, study, targets=targets)
    for r in info.iter_rows(named=True):
        rec = recs.get(r["run_id"]) or {}
        pg = rec.get("postgres") or {}
        limit_mb = (rec.get("resources") or {}).get("memory_limit_mb")
        applied = bool((rec.get("cgroup") or {}).get("applied"))
        rows.append(
            {
                "run_id": r["run_id"],
                "target": r["target"],
                "workload": r["workload"],
                "shared_buffers_bytes": setting_bytes(pg.get("settings") or {}, "shared_buffers"),
                "ram_bytes": float((rec.get("host") or {}).get("mem_total_kb") or 0) * 1024 or None,
                "cgroup_limit_bytes": float(limit_mb) * 2**20 if limit_mb and applied else None,
                "cgroup_limit_requested_bytes": float(limit_mb) * 2**20 if limit_mb else None,
                "cgroup_applied": applied,
                "database_bytes": pg.get("database_bytes"),
                "dataset": dataset_label(rec),
            }
        )
    schema = {
        "run_id": pl.Utf8,
        "target": pl.Utf8,
        "workload": pl.Utf8,
        "shared_buffers_bytes": pl.Float64,
        "ram_bytes": pl.Float64,
        "cgroup_limit_bytes": pl.Float64,
        "cgroup_limit_requested_bytes": pl.Float64,
        "cgroup_applied": pl.Boolean,
        "database_bytes": pl.Int64,
        "dataset": pl.Utf8,
    }
    return pl.DataFrame(rows, schema=schema)


# ---------------------------------------------------------------------------- file-system micro-benchmarks

_SIZE_SUFFIX = re.compile(r"_\d+(?:\.\d+)?(?:[kKMG]i?B?|B)$")


def fs_ops(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The fsmicro result row of every successful run: the run's cell columns, `benchmark` (the
    benchmark name the runner printed, `fsbench/<name>`'s name, e.g. `create_empty`), and ops,
    ops_per_s, avg/p50/p95/p99/max latency in ms, errors."""
    if not _has(db, "fs_ops"):
        return pl.DataFrame()
    cols = f"""{RUN_COLS}, f.table_no, f.optype, f.elapsed_s, f.ops, f.ops_per_s, f.avg_ms, f.p50_ms, f.p95_ms,
               f.p99_ms, f.max_ms, coalesce(f.errors, 0) AS errors"""
    df = _of_ok_runs(db, study, "fs_ops f", cols, "r.plan_index, f.table_no", targets=targets)
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
    if _has(db, "fsmicro_ops"):
        df = _frame(
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
    if not _has(db, "fsmicro_ops"):
        return pl.DataFrame()
    cols = f"""{RUN_COLS}, o.op AS benchmark, o.latency_ns / 1e6 AS latency_ms,
               (o.start_ns - min(o.start_ns) OVER (PARTITION BY o.run_id)) / 1e9 AS t_s"""
    return _of_ok_runs(db, study, "fsmicro_ops o", cols, "r.plan_index, o.start_ns", targets=targets)


def benchmark_family(name: str) -> str:
    """A benchmark name without its size suffix: `delete_small_dir_2MB` -> `delete_small_dir`."""
    return _SIZE_SUFFIX.sub("", name.removeprefix("fsbench/"))


# ---------------------------------------------------------------------------- published reference results


def published(db: str | Path, table: str) -> pl.DataFrame:
    """A published reference table (data/external/, origin 'published'): published_sysbench_variance,
    published_space, published_compression or published_benchstat; empty when not ingested."""
    if not _has(db, table):
        return pl.DataFrame()
    return _frame(db, f"SELECT * EXCLUDE (file_id, run_id) FROM {table}")


def published_pgbench(db: str | Path) -> pl.DataFrame:
    """Published pgbench summaries (seed 001): one row per published run with its setup."""
    df = _frame(
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
    if not _has(db, "fs_ops"):
        return pl.DataFrame()
    return _frame(
        db,
        """
        SELECT r.run_id, r.target, r.fs, r.workload AS benchmark, f.table_no AS repeat, f.ops_per_s, f.avg_ms,
               f.p50_ms, f.p95_ms, f.p99_ms, f.max_ms
        FROM fs_ops f JOIN runs r USING (run_id)
        WHERE r.origin = 'published' ORDER BY r.run_id, f.table_no""",
    )
