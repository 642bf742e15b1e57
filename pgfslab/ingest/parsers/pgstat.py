"""The lab's PostgreSQL statistics sampler (pgfslab.run.sampler.PgStatSampler): `pgstat.csv`, one row
per sample of the cumulative counters of pg_stat_bgwriter and pg_stat_database (the benchmark's
database), stamped with the server's clock_timestamp() in epoch seconds (the /proc samplers' clock):

    # pgfs-lab pgstat v1: pg_stat_bgwriter + pg_stat_database samples
    ts,checkpoints_timed,checkpoints_req,buffers_checkpoint,buffers_clean,...,deadlocks
    1795420845.535607,0,3,394,5642,38638,30709,456,0,96627,3712277,1000256,44,64,60235776,0

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

NAME = "pgstat"
DESCRIPTION = "the lab's pg_stat_bgwriter + pg_stat_database sampler (pgstat.csv): cumulative counters per sample"

COMMENT = "# pgfs-lab pgstat v1"
COUNTERS = [
    "checkpoints_timed",
    "checkpoints_req",
    "buffers_checkpoint",
    "buffers_clean",
    "buffers_backend",
    "buffers_alloc",
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "temp_bytes",
    "deadlocks",
]
COLUMNS = [
    _labcsv.Column("ts", pl.Float64, "an epoch time in seconds"),
    *[_labcsv.Column(c, pl.Int64, "a 64-bit integer counter") for c in COUNTERS],
]

SCHEMA: Schema = {"ts": pl.Datetime("us", "UTC"), **{c: pl.Int64 for c in COUNTERS}}
TABLES: dict[str, Schema] = {"pgstat": SCHEMA}


def sniff(head: str, path: Path) -> bool:
    return _labcsv.sniff_header(head, COMMENT, [c.name for c in COLUMNS])


def parse(path: Path) -> dict[str, pl.DataFrame]:
    frame, warnings = _labcsv.read(
        Path(path), COLUMNS, comment=COMMENT, allow_empty=True, what="pgstat samples (the lab's PgStatSampler CSV)"
    )
    out = frame.with_columns(_labcsv.epoch_seconds("ts").alias("ts"))
    return result({"pgstat": conform(out, SCHEMA)}, warnings)
