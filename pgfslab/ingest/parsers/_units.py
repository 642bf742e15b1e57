"""The unit of every numeric column of every parser table, for the schema documentation
(`pgfslab schema`): from the column's name where the name says it (`_ms`, `_us`, `_kb`, `_per_s`, ...),
from a format module's ``UNITS`` (``{table: {column: unit}}``) where the unit is not in the name or
changed between the tool's versions, from ``TABLE_UNITS`` below for the older formats, and "count" for
the remaining integer columns (numbers of events, rows, transactions)."""

from __future__ import annotations

from typing import Any

import polars as pl

SUFFIXES: tuple[tuple[str, str], ...] = (
    ("_per_s_cum", "1/s (cumulative since the start)"),
    ("_per_s_a", "1/s"),
    ("_per_s_b", "1/s"),
    ("_per_s", "1/s"),
    ("_pct_a", "%"),
    ("_pct_b", "%"),
    ("_pct", "%"),
    ("_us2", "µs²"),
    ("_us", "µs"),
    ("_ms", "ms"),
    ("_ns", "ns"),
    ("_s", "s"),
    ("_kb", "kB (1024 bytes)"),
    ("_mib", "MiB"),
    ("_gb", "GB (10⁹ bytes)"),
    ("_mb", "MB (as published)"),
    ("_tb", "TB (as published)"),
    ("_bytes", "bytes"),
)
IDENTIFIERS = {
    "line": "line number (1-based)",
    "sample": "number (1-based)",
    "run_index": "number (1-based, run in the file)",
    "table_no": "number (1-based)",
    "script_no": "number (pgbench's script index)",
    "statement_no": "number (1-based)",
    "client_id": "number (pgbench's client)",
    "tx_no": "number (pgbench's transaction counter)",
    "major": "device number",
    "minor": "device number",
}
_VMSTAT_KIB = "KiB (vmstat's default unit, -S K)"
# the older formats' columns whose unit is not in their name and is not a count
TABLE_UNITS: dict[str, dict[str, str]] = {
    "meminfo": {"kb": "kB (1024 bytes), as /proc/meminfo prints it; the HugePages_* counts are counts"},
    "vmstat": {"value": "as /proc/vmstat keeps it: pages (nr_*) or events (pgfault, ...) since boot"},
    "vmstat_text": {
        **{c: _VMSTAT_KIB for c in ("swpd", "free", "buff", "cache", "inact", "active")},
        "si": "KiB/s",
        "so": "KiB/s",
        "bi": "blocks/s (1024-byte blocks)",
        "bo": "blocks/s (1024-byte blocks)",
        "in": "1/s (interrupts)",
        "cs": "1/s (context switches)",
        **{c: "% of CPU time" for c in ("us", "sy", "id", "wa", "st", "gu")},
    },
    "diskstats": {c: "sectors (512 bytes)" for c in ("sectors_read", "sectors_written", "sectors_discarded")},
    "pgbench_summary": {"tps": "1/s", "tps_including_connections": "1/s", "scaling_factor": "pgbench scale"},
    "pgbench_progress": {"tps": "1/s"},
    "pgbench_aggregate": {},
    "sysbench_interval": {c: "1/s" for c in ("tps", "qps", "qps_read", "qps_write", "qps_other")},
    "sysbench_summary": {
        **{c: "1/s" for c in ("tps", "qps", "target_tps")},
        "events_per_thread_avg": "count",
        "events_per_thread_stddev": "count",
        "cpu_max_prime": "number (the largest prime checked)",
    },
    "published_sysbench_variance": {"fillfactor": "%", "tps_avg": "1/s", "tps_variance": "(1/s)²"},
    "published_space": {"fillfactor": "%", "compression_ratio": "ratio"},
    "published_compression": {"scale": "pgbench scale"},
    "published_benchstat": {"p_value": "probability"},
    "pgstat": {
        "wal_write_time": "ms",
        "wal_sync_time": "ms",
        "blks_read": "blocks (8 kB)",
        "blks_hit": "blocks (8 kB)",
    },
}


def _numeric(dtype: Any) -> bool:
    try:
        return bool(dtype.is_numeric())
    except (AttributeError, TypeError):
        return False


def _integer(dtype: Any) -> bool:
    return dtype in (pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64)


def unit_of(table: str, column: str, dtype: Any, explicit: dict[str, str] | None = None) -> str | None:
    """The unit of `table.column` (None for a non-numeric column, or a numeric one nobody documented)."""
    if explicit and column in explicit:
        return explicit[column]
    if column in TABLE_UNITS.get(table, {}):
        return TABLE_UNITS[table][column]
    if not _numeric(dtype):
        return None
    if column in IDENTIFIERS:
        return IDENTIFIERS[column]
    for suffix, unit in SUFFIXES:
        if column.endswith(suffix):
            return unit
    return "count" if _integer(dtype) else None
