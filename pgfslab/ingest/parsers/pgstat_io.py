"""The lab's pg_stat_io sampler (pgfslab.run.sampler.PgStatSampler, PostgreSQL 16+): `pgstat_io.csv`, every
row of pg_stat_io once a second, stamped with the server's statement_timestamp() in epoch seconds (one time
for all rows of a sample; the /proc samplers' clock):

    # pgfs-lab pgstat-io v1: pg_stat_io samples (PostgreSQL 16+), bytes as 18 counts them
    ts,backend_type,object,context,reads,read_bytes,writes,write_bytes,writebacks,extends,extend_bytes,hits,evictions,reuses,fsyncs,read_time,write_time,writeback_time,extend_time,fsync_time
    1795746523.312901,client backend,relation,bulkread,9728,79691776,0,0,0,,,18,0,9696,,38.129,0.000,0.000,,

One row per backend type, object (relation, temp relation, and from 18 wal) and context (normal, init,
bulkread, bulkwrite, vacuum), the view's cumulative counters since its last reset: subtract consecutive
samples of the same (backend_type, object, context) for rates. The byte columns are PostgreSQL 18's (a
read may combine several blocks); from a 16 or 17 server they are the operations times op_bytes (one block
each). Times are milliseconds and stay 0 unless track_io_timing (track_wal_io_timing for wal) was on. An
empty field is the view's NULL: an operation that combination never does (not a zero).

A file with the header and no rows is valid (an empty table and a warning); a torn last line is dropped with a
warning; a wrong header, field count or a field that is not a number raises ParseError with its line.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _labcsv
from pgfslab.ingest.parsers._common import Schema, conform, result
from pgfslab.run.pgstat_format import IO_COLUMNS, IO_COMMENT, IO_COUNTERS, IO_KEYS, IO_TIMES

NAME = "pgstat-io"
DESCRIPTION = "the lab's pg_stat_io sampler (pgstat_io.csv, PostgreSQL 16+): cumulative I/O counters per sample"

COLUMNS = [
    _labcsv.Column("ts", pl.Float64, "an epoch time in seconds"),
    *[_labcsv.Column(c, pl.String, "a name of pg_stat_io") for c in IO_KEYS],
    *[_labcsv.Column(c, pl.Int64, "a 64-bit integer counter or empty", nullable=True) for c in IO_COUNTERS],
    *[_labcsv.Column(c, pl.Float64, "a time in milliseconds or empty", nullable=True) for c in IO_TIMES],
]

SCHEMA: Schema = {
    "ts": pl.Datetime("us", "UTC"),
    **{c: pl.String for c in IO_KEYS},
    **{c: pl.Int64 for c in IO_COUNTERS},
    **{c: pl.Float64 for c in IO_TIMES},
}
TABLES: dict[str, Schema] = {"pgstat_io": SCHEMA}
UNITS = {
    "pgstat_io": {
        **{c: "count (operations)" for c in ("reads", "writes", "writebacks", "extends", "fsyncs")},
        **{c: "count (blocks)" for c in ("hits", "evictions", "reuses")},
        **{c: "ms" for c in IO_TIMES},
    }
}


def sniff(head: str, path: Path) -> bool:
    return _labcsv.sniff_header(head, IO_COMMENT, IO_COLUMNS)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    frame, warnings = _labcsv.read(
        Path(path), COLUMNS, comment=IO_COMMENT, allow_empty=True, what="pg_stat_io samples (the lab's sampler CSV)"
    )
    out = frame.with_columns(_labcsv.epoch_seconds("ts").alias("ts"))
    return result({"pgstat_io": conform(out, SCHEMA)}, warnings)
