"""The emulated disk's per-second counters (pgfslab/host/native/pgfslab_disk.c, `device_profile: hdd`):
`disk_series.csv` in a run folder, one row per second of the daemon's life, each the increments of its
counters in the second that ends at `ts`:

    # pgfslab-disk: the emulated disk's counters, per second (increments in the second ending at ts)
    ts,reads,writes,read_bytes,write_bytes,read_busy_ns,write_busy_ns,queued,queued_reads,reads_after_write,flushes
    1795893330.109,107,38,2027520,417792,650855550,287982210,20,18,3,29

`read_busy_ns` and `write_busy_ns` are the head's time serving reads and writes (their sum over a second is at
most about 1e9: the disk is busy that share of it); `queued` the requests already waiting when the head became
free, `queued_reads` the reads among them, `reads_after_write` the queued reads served right after a write (a
read that waited behind a write); `flushes` cache flushes (no cost: no write cache). Seconds in which the daemon
served nothing are rows of zeros. A torn last line is dropped with a warning; a wrong header or field raises
ParseError with its line.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _labcsv
from pgfslab.ingest.parsers._common import Schema, conform, result

NAME = "disk-series"
DESCRIPTION = "the emulated disk's per-second counters (disk_series.csv): reads, writes, the head's busy time, queueing"

COMMENT = "# pgfslab-disk"
COUNTS = ("reads", "writes", "queued", "queued_reads", "reads_after_write", "flushes")
COLUMNS = [
    _labcsv.Column("ts", pl.Float64, "an epoch time in seconds"),
    _labcsv.Column("reads", pl.Int64, "a count"),
    _labcsv.Column("writes", pl.Int64, "a count"),
    _labcsv.Column("read_bytes", pl.Int64, "a byte count"),
    _labcsv.Column("write_bytes", pl.Int64, "a byte count"),
    _labcsv.Column("read_busy_ns", pl.Int64, "nanoseconds"),
    _labcsv.Column("write_busy_ns", pl.Int64, "nanoseconds"),
    _labcsv.Column("queued", pl.Int64, "a count"),
    _labcsv.Column("queued_reads", pl.Int64, "a count"),
    _labcsv.Column("reads_after_write", pl.Int64, "a count"),
    _labcsv.Column("flushes", pl.Int64, "a count"),
]
SCHEMA: Schema = {"ts": pl.Datetime("us", "UTC"), **{c.name: pl.Int64 for c in COLUMNS[1:]}}
TABLES: dict[str, Schema] = {"disk_series": SCHEMA}
UNITS = {"disk_series": {c: "count (in the second ending at ts)" for c in COUNTS}}


def sniff(head: str, path: Path) -> bool:
    return _labcsv.sniff_header(head, COMMENT, [c.name for c in COLUMNS])


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    frame, warnings = _labcsv.read(
        path, COLUMNS, comment=COMMENT, allow_empty=True, what="the emulated disk's per-second counters"
    )
    out = frame.with_columns(_labcsv.epoch_seconds("ts").alias("ts"))
    return result({"disk_series": conform(out, SCHEMA)}, warnings)
