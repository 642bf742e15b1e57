"""The lab's pg_aios sampler (pgfslab.run.sampler.PgStatSampler, PostgreSQL 18+): `pg_aios.csv`, one row per
sample summing the asynchronous I/O handles in use at that moment, stamped with the server's
clock_timestamp() in epoch seconds (the /proc samplers' clock):

    # pgfs-lab pg-aios v1: pg_aios summed per sample (PostgreSQL 18+)
    ts,handles,handed_out,defined,staged,submitted,completed_io,completed_shared,completed_local,readv,writev,bytes,f_sync,f_buffered
    1795746524.328372,2,0,0,0,2,0,0,0,2,0,49152,0,2

`handles` is every row of pg_aios; then how many are in each state (HANDED_OUT ... COMPLETED_LOCAL), of each
operation (readv, writev), their `bytes` (the sum of `length`), and how many are flagged synchronous
(f_sync) and buffered (f_buffered). A gauge, not a counter: a once-a-second glimpse of the I/O in flight (the
queue depth PostgreSQL's asynchronous I/O keeps), zero between bursts.

A file with the header and no rows is valid (an empty table and a warning); a torn last line is dropped with a
warning; a wrong header, field count or a field that is not a number raises ParseError with its line.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _labcsv
from pgfslab.ingest.parsers._common import Schema, conform, result
from pgfslab.run.pgstat_format import AIOS_COLUMNS, AIOS_COMMENT, AIOS_COUNTERS

NAME = "pg-aios"
DESCRIPTION = "the lab's pg_aios sampler (pg_aios.csv, PostgreSQL 18+): asynchronous I/O handles in use per sample"

COLUMNS = [
    _labcsv.Column("ts", pl.Float64, "an epoch time in seconds"),
    *[_labcsv.Column(c, pl.Int64, "a 64-bit integer") for c in AIOS_COUNTERS],
]
SCHEMA: Schema = {"ts": pl.Datetime("us", "UTC"), **{c: pl.Int64 for c in AIOS_COUNTERS}}
TABLES: dict[str, Schema] = {"pg_aios": SCHEMA}
UNITS = {
    "pg_aios": {
        **{c: "count (I/O handles in use)" for c in AIOS_COUNTERS},
        "bytes": "bytes (the handles' lengths summed)",
    }
}


def sniff(head: str, path: Path) -> bool:
    return _labcsv.sniff_header(head, AIOS_COMMENT, AIOS_COLUMNS)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    frame, warnings = _labcsv.read(
        Path(path), COLUMNS, comment=AIOS_COMMENT, allow_empty=True, what="pg_aios samples (the lab's sampler CSV)"
    )
    out = frame.with_columns(_labcsv.epoch_seconds("ts").alias("ts"))
    return result({"pg_aios": conform(out, SCHEMA)}, warnings)
