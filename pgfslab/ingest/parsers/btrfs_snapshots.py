"""The snapshot scheduler's event log (pgfslab/host/snapshots.py): `snapshots.csv` in a run folder, one
row per snapshot created or deleted while the workload ran (seed 000's schedule):

    ts,action,name,duration_ms
    1795420900.123,create,pgfslab-snap-0001,41.7

`ts` is the epoch time the action started (the /proc samplers' clock), `action` one of create,
delete, delete-at-exit, delete-stale or error (a failed create/delete: duration 0, the message is in
the runner's stderr and run.json), `duration_ms` how long the btrfs command took. A file with only
the header is valid (no snapshot was due during the run). A torn last line is dropped with a
warning; a wrong header or field raises ParseError with its line.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _labcsv
from pgfslab.ingest.parsers._common import ParseError, Schema, conform, excerpt, first_true, result

NAME = "snapshots"
DESCRIPTION = "the lab's btrfs snapshot scheduler log (snapshots.csv): create/delete events with durations"

ACTIONS = ("create", "delete", "delete-at-exit", "delete-stale", "error")
COLUMNS = [
    _labcsv.Column("ts", pl.Float64, "an epoch time in seconds"),
    _labcsv.Column("action", pl.String, "an action"),
    _labcsv.Column("name", pl.String, "a snapshot name"),
    _labcsv.Column("duration_ms", pl.Float64, "a duration in milliseconds"),
]
SCHEMA: Schema = {"ts": pl.Datetime("us", "UTC"), "action": pl.String, "name": pl.String, "duration_ms": pl.Float64}
TABLES: dict[str, Schema] = {"snapshots": SCHEMA}


def sniff(head: str, path: Path) -> bool:
    return _labcsv.sniff_header(head, None, [c.name for c in COLUMNS])


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    frame, warnings = _labcsv.read(
        path, COLUMNS, comment=None, allow_empty=True, what="snapshot events 'ts,action,name,duration_ms'"
    )
    bad = first_true(frame.select(~pl.col("action").is_in(ACTIONS)).to_series())
    if bad is not None:
        raise ParseError(
            path,
            int(frame["line"][bad]),
            f"unknown action {excerpt(frame['action'][bad])}; expected one of {', '.join(ACTIONS)}",
        )
    out = frame.with_columns(_labcsv.epoch_seconds("ts").alias("ts"))
    return result({"snapshots": conform(out, SCHEMA)}, warnings)
