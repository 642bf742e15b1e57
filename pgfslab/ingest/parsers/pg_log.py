"""PostgreSQL's server log as a run folder keeps it (`postgresql.log`, from the server's start to its stop; the
durability check's `durability/postgresql*.log`): its checkpoint lines (log_checkpoints, on by default since
PostgreSQL 15), one row per checkpoint or restartpoint:

    2026-11-28 23:04:32.397 UTC [19265] LOG:  checkpoint starting: wal
    2026-11-28 23:05:37.241 UTC [19265] LOG:  checkpoint complete: wrote 1184 buffers (28.9%); ...;
        write=45.480 s, sync=18.502 s, total=64.844 s; ...

A `starting` line opens a checkpoint (`reason`: time, wal, immediate force wait, shutdown, ...), the next
`complete` line closes it with the buffers written and the write, sync and total seconds. A checkpoint the log
ends in (the run stopped the server first, or it was still writing when the log was copied) has no end:
`complete` false. This is what the pg_stat sampler cannot see: PostgreSQL 15 reports a checkpoint's counters
only once it completes, and one on a slow disk can outlast a run.

Only the checkpoint lines are read: the rest of the log is PostgreSQL's own free text (start-up, connections,
errors), kept as it is in the run folder. Times need the log line prefix's timestamp (`%m` or `%t`, the
default) in UTC or with a numeric offset; a checkpoint line without one is dropped with a warning naming it.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import ParseError, Schema, conform, result

NAME = "pg-log"
DESCRIPTION = "PostgreSQL's server log (postgresql.log of a run): its checkpoints, started and completed"

SCHEMA: Schema = {
    "start_ts": pl.Datetime("us", "UTC"),
    "end_ts": pl.Datetime("us", "UTC"),
    "kind": pl.String,
    "reason": pl.String,
    "buffers": pl.Int64,
    "write_s": pl.Float64,
    "sync_s": pl.Float64,
    "total_s": pl.Float64,
    "complete": pl.Boolean,
}
TABLES: dict[str, Schema] = {"pg_checkpoints": SCHEMA}
UNITS = {"pg_checkpoints": {"buffers": "buffers (blocks of block_size, 8 kB by default)"}}

LINE = re.compile(
    r"^(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?)\s*(?P<tz>[A-Za-z]{1,5}|[+-]\d{2}(?::?\d{2})?)?\s.*?"
    r"LOG:\s+(?P<kind>checkpoint|restartpoint) (?P<what>starting|complete)(?::\s*(?P<rest>.*))?$"
)
TOTAL = re.compile(r"total=(?P<total>[0-9.]+) s")
WROTE = re.compile(r"wrote (?P<buffers>\d+) buffers")
PHASES = re.compile(r"write=(?P<write>[0-9.]+) s, sync=(?P<sync>[0-9.]+) s")


def epoch(ts: str, tz: str | None) -> float:
    """A log line's timestamp as epoch seconds (UTC or a numeric offset; a zone name other than UTC/GMT is
    ambiguous and refused)."""
    t = dt.datetime.fromisoformat(ts.replace(" ", "T"))
    if tz is None or tz.upper() in ("UTC", "GMT", "Z"):
        off = dt.timedelta(0)
    elif tz[0] in "+-":
        digits = tz[1:].replace(":", "")
        off = dt.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
        off = off if tz[0] == "+" else -off
    else:
        raise ValueError(f"log time zone {tz!r} is ambiguous: set log_timezone = 'UTC' (or a numeric offset)")
    return t.replace(tzinfo=dt.timezone(off)).timestamp()


def sniff(head: str, path: Path) -> bool:
    return path.name.startswith("postgresql") and path.name.endswith(".log")


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    rows: list[dict[str, object]] = []
    warnings: list[tuple[int | None, str]] = []
    open_row: dict[str, object] | None = None
    for no, line in enumerate(text.splitlines(), 1):  # a server log: a few hundred lines, not samples
        if "checkpoint" not in line and "restartpoint" not in line:
            continue
        m = LINE.match(line.strip())
        if m is None:
            continue  # another line naming a checkpoint (a HINT, a statement): PostgreSQL's free text
        try:
            t = epoch(m["ts"], m["tz"])
        except ValueError as exc:
            warnings.append((no, f"checkpoint line dropped: {exc}"))
            continue
        rest = m["rest"] or ""
        if m["what"] == "starting":
            if open_row is not None:  # two starts in a row: the first never completed in this log
                rows.append(open_row)
            open_row = {"start_ts": t, "kind": m["kind"], "reason": rest.strip() or None, "complete": False}
            continue
        total, wrote, phases = TOTAL.search(rest), WROTE.search(rest), PHASES.search(rest)
        # a `complete` without its `starting` (the log began mid-checkpoint) started total seconds before
        row = open_row or {"start_ts": t - float(total["total"]) if total else None, "kind": m["kind"], "reason": None}
        row |= {
            "end_ts": t,
            "complete": True,
            "buffers": int(wrote["buffers"]) if wrote else None,
            "write_s": float(phases["write"]) if phases else None,
            "sync_s": float(phases["sync"]) if phases else None,
            "total_s": float(total["total"]) if total else None,
        }
        rows.append(row)
        open_row = None
    if open_row is not None:
        rows.append(open_row)
    frame = pl.DataFrame(rows, schema={k: (pl.Float64 if k.endswith("_ts") else v) for k, v in SCHEMA.items()})
    out = frame.with_columns(
        (pl.col(c) * 1e6).round(0).cast(pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone("UTC").alias(c)
        for c in ("start_ts", "end_ts")
    )
    return result({"pg_checkpoints": conform(out, SCHEMA)}, warnings)
