"""The samplers on the run's clock (/proc/meminfo, /proc/stat, pg_stat_*, snapshots), throughput on that clock,
and the server logs' checkpoints."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pgfslab.analysis.queries.connection import RUN_COLS, frame, has_table, of_ok_runs, target_condition


def meminfo(db: str | Path, study: str, keys: list[str], targets: Sequence[str] | None = None) -> pl.DataFrame:
    """/proc/meminfo samples of `keys` per successful run; `t_s` = seconds since the run's first
    sample, `epoch_s` the sample's time."""
    cols = f"""{RUN_COLS}, epoch(m.ts) AS epoch_s,
               epoch(m.ts) - epoch(min(m.ts) OVER (PARTITION BY m.run_id)) AS t_s, m.key, m.kb"""
    return of_ok_runs(
        db,
        study,
        "meminfo m",
        cols,
        "r.plan_index, m.ts",
        targets=targets,
        where="AND list_contains(?, m.key)",
        params=[keys],
    )


def cpu_stat(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The /proc/stat sampler's aggregate `cpu` line (all CPUs) per successful run: `epoch_s` and the
    counters (user ... guest_nice, ticks of USER_HZ since boot; null where the kernel does not print them).
    Empty for raw folders recorded before the lab sampled /proc/stat (no stat.log)."""
    counters = "c.user, c.nice, c.system, c.idle, c.iowait, c.irq, c.softirq, c.steal, c.guest, c.guest_nice"
    if not has_table(db, "cpu_stat"):
        return pl.DataFrame()
    cols = f"{RUN_COLS}, epoch(c.ts) AS epoch_s, {counters}"
    return of_ok_runs(db, study, "cpu_stat c", cols, "r.plan_index, c.ts", targets=targets, where="AND c.cpu = 'cpu'")


def run_clock_origin(db: str | Path, study: str) -> dict[str, float]:
    """run_id -> epoch of its first /proc/meminfo sample: t = 0 of the sampler series."""
    df = frame(
        db,
        """SELECT m.run_id, epoch(min(m.ts)) AS t0 FROM meminfo m JOIN runs r USING (run_id)
                       WHERE r.study = ? GROUP BY m.run_id""",
        [study],
    )
    return dict(df.iter_rows())


def snapshot_events(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The snapshot scheduler's events of every successful run (snapshots.csv): `epoch_s` when the
    action started, `action` (create, delete, ...), `duration_ms`. Empty without snapshots."""
    if not has_table(db, "snapshots"):
        return pl.DataFrame(
            schema={"run_id": pl.Utf8, "epoch_s": pl.Float64, "action": pl.Utf8, "duration_ms": pl.Float64}
        )
    cols = f"{RUN_COLS}, epoch(s.ts) AS epoch_s, s.action, s.duration_ms"
    return of_ok_runs(db, study, "snapshots s", cols, "r.plan_index, s.ts", targets=targets)


def pgstat(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The pg_stat sampler's rows (pgstat.csv) with `epoch_s`, and per-sample differences:
    `commits_per_s` (xact_commit increase / elapsed), `checkpoints` (checkpoints_timed + _req
    increase since the previous sample) and `buffers_checkpoint_delta`."""
    if not has_table(db, "pgstat"):
        return pl.DataFrame()
    tc, tp = target_condition(targets)
    return frame(
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


def pg_io_reads(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """pg_stat_io's reads per successful run (PostgreSQL 16+, table `pgstat_io`): every (backend type, object,
    context) row's increase from the run's first sample to its last, summed, over the seconds between them:
    `pg_reads_per_s` (read operations: PostgreSQL 18 may combine several blocks into one) and
    `pg_read_bytes_per_s`. Empty when the table is absent (older servers, older raw folders)."""
    if not has_table(db, "pgstat_io"):
        return pl.DataFrame(schema={"run_id": pl.Utf8, "pg_reads_per_s": pl.Float64, "pg_read_bytes_per_s": pl.Float64})
    tc, tp = target_condition(targets)
    return frame(
        db,
        f"""
        WITH k AS (
            SELECT i.run_id, i.backend_type, i.object, i.context,
                   arg_max(i.reads, i.ts) - arg_min(i.reads, i.ts) AS reads,
                   arg_max(i.read_bytes, i.ts) - arg_min(i.read_bytes, i.ts) AS read_bytes
            FROM pgstat_io i JOIN runs r USING (run_id)
            WHERE r.study = ? AND r.status = 'ok' {tc}
            GROUP BY ALL),
        span AS (
            SELECT run_id, epoch(max(ts)) - epoch(min(ts)) AS seconds FROM pgstat_io GROUP BY run_id)
        SELECT k.run_id,
               (sum(k.reads) / nullif(any_value(span.seconds), 0))::DOUBLE AS pg_reads_per_s,
               (sum(k.read_bytes) / nullif(any_value(span.seconds), 0))::DOUBLE AS pg_read_bytes_per_s
        FROM k JOIN span USING (run_id)
        GROUP BY k.run_id
        ORDER BY k.run_id""",
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
    tc, tp = target_condition(targets)
    parts: list[pl.DataFrame] = []
    have: set[str] = set()
    if has_table(db, "pgbench_aggregate"):
        agg = frame(
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


CHECKPOINT_LOG = pl.Schema(
    {
        "run_id": pl.Utf8,
        "start_epoch": pl.Float64,
        "end_epoch": pl.Float64,
        "reason": pl.Utf8,
        "buffers": pl.Int64,
        "write_s": pl.Float64,
        "sync_s": pl.Float64,
        "total_s": pl.Float64,
        "complete": pl.Boolean,
    }
)


def checkpoint_log(db: str | Path, study: str, targets: Sequence[str] | None = None) -> pl.DataFrame:
    """The checkpoints in each successful run's server log (`pg_checkpoints`, the pg-log parser's rows): start
    and end as epoch seconds (end null for one the log ended in), reason, buffers, write/sync/total seconds.
    A run whose raw folder kept no postgresql.log has no rows; empty for databases from before the table."""
    if not has_table(db, "pg_checkpoints"):
        return pl.DataFrame(schema=CHECKPOINT_LOG)
    cols = (
        "c.run_id, epoch(c.start_ts)::DOUBLE AS start_epoch, epoch(c.end_ts)::DOUBLE AS end_epoch, c.reason, "
        "c.buffers, c.write_s, c.sync_s, c.total_s, c.complete"
    )
    rows = of_ok_runs(db, study, "pg_checkpoints c", cols, "r.plan_index, c.start_ts", targets=targets)
    return rows.cast(CHECKPOINT_LOG)
