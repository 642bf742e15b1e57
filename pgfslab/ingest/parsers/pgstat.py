"""The lab's PostgreSQL statistics sampler (pgfslab.run.sampler.PgStatSampler): `pgstat.csv`, one row
per sample of the cumulative counters of pg_stat_bgwriter, pg_stat_database (the benchmark's database)
and, from v2 on, pg_stat_wal (PostgreSQL 14+), stamped with the server's clock_timestamp() in epoch
seconds (the /proc samplers' clock):

    # pgfs-lab pgstat v2: pg_stat_bgwriter + pg_stat_database + pg_stat_wal samples
    ts,checkpoints_timed,...,deadlocks,wal_records,wal_fpi,wal_bytes,wal_buffers_full,wal_write,wal_sync,wal_write_time,wal_sync_time
    1795420845.535607,0,3,394,...,0,104857,3120,9834516,0,1450,1449,0.000,0.000

Two versions, told apart by the first line:

* v1 (`# pgfs-lab pgstat v1`, raw folders recorded before pg_stat_wal was sampled, and servers older than
  PostgreSQL 14, which have no pg_stat_wal): pg_stat_bgwriter + pg_stat_database only. The WAL columns are
  null in the table.
* v2 (`# pgfs-lab pgstat v2`): the same, then pg_stat_wal's counters. `wal_bytes` is PostgreSQL's numeric
  cast to bigint; `wal_write_time` and `wal_sync_time` are milliseconds and stay 0 unless the server ran with
  track_wal_io_timing = on (run.json's postgres settings say whether it did). `wal_sync` counts
  issue_xlog_fsync calls only for wal_sync_method fsync, fdatasync and fsync_writethrough; with
  open_sync/open_datasync it stays 0 and every WAL write is itself durable (PostgreSQL's documentation of
  pg_stat_wal).

pg_stat_wal is cluster-wide, pg_stat_database is the benchmark's database only.

The counters are cumulative since the cluster's statistics were last reset: subtract consecutive
samples for rates (a checkpoint started between two samples when checkpoints_timed or
checkpoints_req grew). A file with the header and no rows is valid (the server went away before the
first sample; run.json's sampler.pgstat_error says why): an empty table and a warning. A torn last
line is dropped with a warning; a wrong header, a wrong field count or a field that is not a number
raises ParseError with its line.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _labcsv
from pgfslab.ingest.parsers._common import Schema, conform, result
from pgfslab.run.pgstat_format import COMMENT_V1, COMMENT_V2, COUNTERS, WAL_COUNTERS, WAL_TIMES

NAME = "pgstat"
DESCRIPTION = (
    "the lab's pg_stat_bgwriter + pg_stat_database (+ pg_stat_wal, v2) sampler (pgstat.csv): cumulative "
    "counters per sample"
)

COLUMNS_V1 = [
    _labcsv.Column("ts", pl.Float64, "an epoch time in seconds"),
    *[_labcsv.Column(c, pl.Int64, "a 64-bit integer counter") for c in COUNTERS],
]
COLUMNS_V2 = [
    *COLUMNS_V1,
    *[_labcsv.Column(c, pl.Int64, "a 64-bit integer counter") for c in WAL_COUNTERS],
    *[_labcsv.Column(c, pl.Float64, "a time in milliseconds") for c in WAL_TIMES],
]
COLUMNS = COLUMNS_V2  # what the sampler writes now

SCHEMA: Schema = {
    "ts": pl.Datetime("us", "UTC"),
    **{c: pl.Int64 for c in COUNTERS},
    **{c: pl.Int64 for c in WAL_COUNTERS},
    **{c: pl.Float64 for c in WAL_TIMES},
}
TABLES: dict[str, Schema] = {"pgstat": SCHEMA}


def _columns(first_line: str) -> tuple[str, list[_labcsv.Column]]:
    if first_line.startswith(COMMENT_V2):
        return COMMENT_V2, COLUMNS_V2
    return COMMENT_V1, COLUMNS_V1


def sniff(head: str, path: Path) -> bool:
    comment, columns = _columns(head.split("\n", 1)[0])
    return _labcsv.sniff_header(head, comment, [c.name for c in columns])


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    with open(path, "rb") as fh:
        first = fh.readline(200).decode("utf-8", errors="replace")
    comment, columns = _columns(first)
    frame, warnings = _labcsv.read(
        path, columns, comment=comment, allow_empty=True, what="pgstat samples (the lab's PgStatSampler CSV)"
    )
    out = frame.with_columns(_labcsv.epoch_seconds("ts").alias("ts"))
    return result({"pgstat": conform(out, SCHEMA)}, warnings)
