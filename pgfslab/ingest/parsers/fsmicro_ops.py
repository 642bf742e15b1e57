"""Per-operation latencies of the lab's file-system micro-benchmark (pgfslab/runners/fsmicro.py):
`fsmicro_ops.csv`, one row per timed operation:

    op,start_ns,latency_ns
    create_empty,1795419256394409667,3578388

`op` is the benchmark name (seed 003's, e.g. `create_empty`, `delete_10k_2MB`), `start_ns` the
operation's start in epoch nanoseconds (the /proc samplers' clock), `latency_ns` the timed part.
The summary of the same run (ops/s, p50/p95/p99/max) is the `fs-ops` format (fsmicro.stdout); this
table holds every latency, for exact percentiles and latency over time. A run that was stopped
before its first operation has only the header: an empty table and a warning. A torn last line is
dropped with a warning; anything else that is not `name,integer,integer` raises ParseError.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _labcsv
from pgfslab.ingest.parsers._common import ParseError, Schema, conform, first_true, result

NAME = "fsmicro-ops"
DESCRIPTION = "per-operation latencies of the lab's fsmicro runner (fsmicro_ops.csv): op, start, latency"

COLUMNS = [
    _labcsv.Column("op", pl.String, "a benchmark name"),
    _labcsv.Column("start_ns", pl.Int64, "an epoch time in nanoseconds"),
    _labcsv.Column("latency_ns", pl.Int64, "a latency in nanoseconds"),
]
SCHEMA: Schema = {"op": pl.String, "start_ns": pl.Int64, "latency_ns": pl.Int64}
TABLES: dict[str, Schema] = {"fsmicro_ops": SCHEMA}


def sniff(head: str, path: Path) -> bool:
    return _labcsv.sniff_header(head, None, [c.name for c in COLUMNS])


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    frame, warnings = _labcsv.read(
        path, COLUMNS, comment=None, allow_empty=True, what="per-operation latencies 'op,start_ns,latency_ns'"
    )
    neg = first_true(frame.select((pl.col("latency_ns") < 0) | (pl.col("start_ns") < 0)).to_series())
    if neg is not None:
        raise ParseError(path, int(frame["line"][neg]), "negative time or latency")
    return result({"fsmicro_ops": conform(frame, SCHEMA)}, warnings)
