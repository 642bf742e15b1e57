"""The durability check's result (pgfslab/runners/durability.py): `durability.json` in a run folder,
one JSON object marked ``"format": "pgfs-lab durability v1"``:

    {"format": "pgfs-lab durability v1", "run_id": "ext4.crash.c4.r1", "target": "ext4",
     "crash": "power-loss", "crashes": 1, "committed_ids": 675, "lost_ids": 0, "violations": 0,
     "balances_ok": true, "synchronous_commit": "on", "window_ms": 0.0, ...}

One row per file (one crash-restart-verify cycle). `committed_ids` counts the transactions whose
COMMIT returned before the crash; `lost_ids` those of them missing after the restart;
`lost_allowed` the lost ones the settings allow (synchronous_commit=off within its documented
window of 3 x wal_writer_delay, or anything with fsync=off after a power loss); `violations` the
rest. A restart that failed has `restart_error` and null counts. A file that is not such an
object, or misses `format`/`crash`/`crashes`, raises ParseError.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.ingest.parsers._common import ParseError, Schema, decode, read_bytes, result

NAME = "durability"
DESCRIPTION = "the durability check's durability.json: committed/lost transactions after a crash"
FORMAT = "pgfs-lab durability v1"

SCHEMA: Schema = {
    "target": pl.String,
    "workload": pl.String,
    "clients": pl.Int64,
    "crash": pl.String,
    "crash_requested": pl.String,
    "crash_note": pl.String,
    "crashes": pl.Int64,
    "crash_after_s": pl.Float64,
    "write_s": pl.Float64,
    "committed_ids": pl.Int64,
    "present_ids": pl.Int64,
    "lost_ids": pl.Int64,
    "lost_within_window": pl.Int64,
    "lost_allowed": pl.Int64,
    "lost_allowed_reason": pl.String,
    "violations": pl.Int64,
    "in_doubt_present": pl.Int64,
    "oldest_lost_ms": pl.Float64,
    "balances_ok": pl.Boolean,
    "synchronous_commit": pl.String,
    "fsync": pl.String,
    "full_page_writes": pl.String,
    "wal_writer_delay_ms": pl.Float64,
    "window_ms": pl.Float64,
    "restart_s": pl.Float64,
    "restart_error": pl.String,
    "amcheck": pl.String,
    "verdict": pl.String,
}
TABLES: dict[str, Schema] = {"durability": SCHEMA}
REQUIRED = ("format", "crash", "crashes")


def sniff(head: str, path: Path) -> bool:
    return head.lstrip().startswith("{") and f'"format": "{FORMAT}"' in head


def _value(rec: dict[str, Any], key: str, dtype: Any, path: Path) -> Any:
    v = rec.get(key)
    if v is None:
        return None
    ok = {pl.String: (str,), pl.Int64: (int,), pl.Float64: (int, float), pl.Boolean: (bool,)}[dtype]
    if isinstance(v, bool) and dtype is not pl.Boolean or not isinstance(v, ok):
        raise ParseError(path, None, f"key {key!r}: expected {dtype}, found {type(v).__name__} {v!r}")
    return float(v) if dtype is pl.Float64 and isinstance(v, int | float) else v


def parse(path: Path) -> dict[str, pl.DataFrame]:
    text = decode(path, read_bytes(path))
    if not text.strip():
        raise ParseError(path, None, "empty file; expected a durability.json object")
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(path, exc.lineno, f"not valid JSON ({exc.msg}): a durability.json cut short?") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise ParseError(path, None, f'not a durability check result: expected "format": "{FORMAT}"')
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        raise ParseError(path, None, f"missing key(s) {', '.join(missing)}")
    row = {k: _value(rec, k, t, path) for k, t in SCHEMA.items()}
    return result({"durability": pl.DataFrame([row], schema=SCHEMA)}, [])
