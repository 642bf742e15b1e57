"""Where each server counter the lab reads lives in each PostgreSQL major (by server_version_num), as SQL:
the facts before and after a run (pgfslab.host.postgres.Cluster.facts) and the per-second samplers
(pgfslab.run.sampler) read the same expressions.

* checkpoints and buffers: pg_stat_bgwriter until 16; from 17 the checkpoint counters are
  pg_stat_checkpointer's (num_timed, num_requested, buffers_written) and buffers_backend is gone from the
  view: it is read from pg_stat_io (writes of relation blocks by every process but the checkpointer and the
  background writer, the view's own replacement for it).
* WAL: pg_stat_wal from 14; in 18 its wal_write, wal_sync and their times moved to pg_stat_io (object
  `wal`, context `normal`: writes and fsyncs of WAL by XLogWrite and issue_xlog_fsync, as before).
* pg_stat_io (16+): one row per backend type, object and context; 16 and 17 count operations of op_bytes
  each, 18 counts bytes (read_bytes, write_bytes, extend_bytes) since reads and writes may combine blocks.
* pg_aios (18): the asynchronous I/O handles in use at that moment.
"""

from __future__ import annotations

CHECKPOINTER_SINCE = 170000
WAL_SINCE = 140000
WAL_IN_STAT_IO_SINCE = 180000
STAT_IO_SINCE = 160000
STAT_IO_BYTES_SINCE = 180000
AIOS_SINCE = 180000

BGWRITER = [
    "checkpoints_timed",
    "checkpoints_req",
    "buffers_checkpoint",
    "buffers_clean",
    "buffers_backend",
    "buffers_alloc",
]
WAL = [
    "wal_records",
    "wal_fpi",
    "wal_bytes",
    "wal_buffers_full",
    "wal_write",
    "wal_sync",
    "wal_write_time",
    "wal_sync_time",
]

_BACKEND_WRITES = (
    "(SELECT coalesce(sum(writes), 0) FROM pg_stat_io WHERE object = 'relation' "
    "AND backend_type NOT IN ('checkpointer', 'background writer'))::bigint"
)


def _wal_io(column: str, cast: str) -> str:
    return f"(SELECT coalesce(sum({column}), 0) FROM pg_stat_io WHERE object = 'wal' AND context = 'normal')::{cast}"


def bgwriter_sources(num: int) -> tuple[str, dict[str, str]]:
    """(FROM items, {BGWRITER column: expression}) of a server of version `num`."""
    if num < CHECKPOINTER_SINCE:
        return "pg_stat_bgwriter b", {c: f"b.{c}" for c in BGWRITER}
    return "pg_stat_bgwriter b, pg_stat_checkpointer k", {
        "checkpoints_timed": "k.num_timed",
        "checkpoints_req": "k.num_requested",
        "buffers_checkpoint": "k.buffers_written",
        "buffers_clean": "b.buffers_clean",
        "buffers_backend": _BACKEND_WRITES,
        "buffers_alloc": "b.buffers_alloc",
    }


def wal_sources(num: int) -> tuple[str, dict[str, str]]:
    """(FROM items, {WAL column: expression}) of a server of version `num` (nothing before 14)."""
    if num < WAL_SINCE:
        return "", {}
    exprs = {c: f"w.{c}" for c in WAL}
    exprs["wal_bytes"] = "w.wal_bytes::bigint"  # numeric in pg_stat_wal
    if num >= WAL_IN_STAT_IO_SINCE:
        exprs |= {
            "wal_write": _wal_io("writes", "bigint"),
            "wal_sync": _wal_io("fsyncs", "bigint"),
            "wal_write_time": _wal_io("write_time", "float8"),
            "wal_sync_time": _wal_io("fsync_time", "float8"),
        }
    return "pg_stat_wal w", exprs


# pg_stat_io's columns as the lab records them (the same for 16, 17 and 18): key, counters, times (ms)
STAT_IO_KEYS = ["backend_type", "object", "context"]
STAT_IO_COUNTS = [
    "reads",
    "read_bytes",
    "writes",
    "write_bytes",
    "writebacks",
    "extends",
    "extend_bytes",
    "hits",
    "evictions",
    "reuses",
    "fsyncs",
]
STAT_IO_TIMES = ["read_time", "write_time", "writeback_time", "extend_time", "fsync_time"]


def stat_io_sql(num: int) -> str | None:
    """The query of pg_stat_io's rows (None before 16): bytes as 18 counts them, or operations times op_bytes."""
    if num < STAT_IO_SINCE:
        return None

    def count(c: str) -> str:
        if c.endswith("_bytes") and num < STAT_IO_BYTES_SINCE:
            return f"({c.removesuffix('_bytes')}s * op_bytes)::bigint"
        return f"{c}::bigint"

    cols = [*STAT_IO_KEYS, *(count(c) for c in STAT_IO_COUNTS), *(f"{c}::float8" for c in STAT_IO_TIMES)]
    # statement_timestamp(): one time for every row of a sample (clock_timestamp() would differ row by row)
    return (
        "SELECT extract(epoch FROM statement_timestamp())::float8, "
        + ", ".join(cols)
        + " FROM pg_stat_io ORDER BY backend_type, object, context"
    )


# pg_aios summed over the handles in use: how many, in which state, of which operation, how many bytes
AIOS_STATES = ["HANDED_OUT", "DEFINED", "STAGED", "SUBMITTED", "COMPLETED_IO", "COMPLETED_SHARED", "COMPLETED_LOCAL"]
AIOS_COLUMNS = [
    "handles",
    *[s.lower() for s in AIOS_STATES],
    "readv",
    "writev",
    "bytes",
    "f_sync",
    "f_buffered",
]


def aios_sql(num: int) -> str | None:
    """One row per sample summing pg_aios (None before 18)."""
    if num < AIOS_SINCE:
        return None
    parts = [
        "count(*)",
        *[f"count(*) FILTER (WHERE state = '{s}')" for s in AIOS_STATES],
        "count(*) FILTER (WHERE operation = 'readv')",
        "count(*) FILTER (WHERE operation = 'writev')",
        "coalesce(sum(length), 0)::bigint",
        "count(*) FILTER (WHERE f_sync)",
        "count(*) FILTER (WHERE f_buffered)",
    ]
    return "SELECT extract(epoch FROM clock_timestamp())::float8, " + ", ".join(parts) + " FROM pg_aios"
