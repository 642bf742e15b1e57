"""pgbench's aggregate log (`--log --aggregate-interval=N`): one line per interval and per thread,
in files named `<prefix>.<pid>` (thread 0) and `<prefix>.<pid>.<n>` (thread n).

The layout is told by the number of columns, which is unambiguous across released versions:

==========  ============================================================================================
columns     layout (µs for latencies and lags)
==========  ============================================================================================
6           PG ≤ 14: interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency
10          PG ≤ 14 with --rate: ... sum_lag sum_lag_2 min_lag max_lag
11          PG ≤ 14 with --rate and --latency-limit: ... skipped
15          PG 15-17: all of interval_start num_transactions sum_latency sum_latency_2 min_latency
            max_latency sum_lag sum_lag_2 min_lag max_lag skipped retried retries
            serialization_failures deadlock_failures, always written; a column that the run's options
            do not measure is written as 0 (lag without --rate, skipped without --latency-limit,
            retried/retries with --max-tries=1, the failure columns without --failures-detailed)
16          pgbench's development branch (with --continue-on-error): ... other_sql_failures
==========  ============================================================================================

PostgreSQL 15's development tree briefly wrote `{ failures | serialization_failures
deadlock_failures }` right after max_latency, with optional lag and retry columns (the `failures`
of this table's schema); that layout was replaced before 15.0 (commit "Change aggregated log format
of pgbench") and no release writes it, so a line of 7-9 or 12-14 columns is an error here and
`failures` stays null. Only 15+ logs carry failure counts, and only with --failures-detailed.

`num_transactions` counts successful transactions only, and pgbench does not write the last,
partial interval of a run: the sum of n_tx over a run's files is smaller than the summary's
"number of transactions actually processed" by up to one interval's worth of transactions.

An interval without a transaction (a stall, or a thread that had nothing to do) is written with
min and max latency (and lag) 0: those have no value, and are null here, so that a minimum over
intervals or a log-scale chart is not pulled to 0 by an interval in which nothing happened.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    Field,
    ParseError,
    Schema,
    check_rows,
    conform,
    first_line,
    read_space_separated,
    result,
    v_uint,
    v_unum,
)

NAME = "pgbench-aggregate"
DESCRIPTION = "pgbench aggregate log (--log --aggregate-interval): per-interval latency/lag sums, counts"

SCHEMA: Schema = {
    "interval_start_s": pl.Int64,
    "n_tx": pl.Int64,
    "latency_sum_us": pl.Float64,
    "latency_sum2_us2": pl.Float64,
    "latency_min_us": pl.Float64,
    "latency_max_us": pl.Float64,
    "lag_sum_us": pl.Float64,
    "lag_sum2_us2": pl.Float64,
    "lag_min_us": pl.Float64,
    "lag_max_us": pl.Float64,
    "skipped": pl.Int64,
    "retried": pl.Int64,
    "retries": pl.Int64,
    "serialization_failures": pl.Int64,
    "deadlock_failures": pl.Int64,
    "failures": pl.Int64,
    "other_sql_failures": pl.Int64,
}
TABLES: dict[str, Schema] = {"pgbench_aggregate": SCHEMA}

_BASE = [
    Field("interval_start_s", pl.Int64, "interval_start", v_uint),
    Field("n_tx", pl.Int64, "num_transactions", v_uint),
    Field("latency_sum_us", pl.Float64, "sum_latency", v_unum),
    Field("latency_sum2_us2", pl.Float64, "sum_latency_2", v_unum),
    Field("latency_min_us", pl.Float64, "min_latency", v_unum),
    Field("latency_max_us", pl.Float64, "max_latency", v_unum),
]
_LAG = [
    Field("lag_sum_us", pl.Float64, "sum_lag", v_unum),
    Field("lag_sum2_us2", pl.Float64, "sum_lag_2", v_unum),
    Field("lag_min_us", pl.Float64, "min_lag", v_unum),
    Field("lag_max_us", pl.Float64, "max_lag", v_unum),
]
_SKIPPED = [Field("skipped", pl.Int64, "skipped", v_uint)]
_PG15 = [
    Field("retried", pl.Int64, "retried", v_uint),
    Field("retries", pl.Int64, "retries", v_uint),
    Field("serialization_failures", pl.Int64, "serialization_failures", v_uint),
    Field("deadlock_failures", pl.Int64, "deadlock_failures", v_uint),
]
_OTHER = [Field("other_sql_failures", pl.Int64, "other_sql_failures", v_uint)]

VARIANTS: dict[int, tuple[str, list[Field]]] = {
    6: ("PostgreSQL <= 14", _BASE),
    10: ("PostgreSQL <= 14 with --rate", _BASE + _LAG),
    11: ("PostgreSQL <= 14 with --rate and --latency-limit", _BASE + _LAG + _SKIPPED),
    15: ("PostgreSQL 15-17", _BASE + _LAG + _SKIPPED + _PG15),
    16: ("pgbench with other_sql_failures (development branch)", _BASE + _LAG + _SKIPPED + _PG15 + _OTHER),
}

WHAT = "pgbench aggregate log lines (interval_start num_transactions sum_latency sum_latency_2 min_latency max_latency ...)"

_LINE = re.compile(r"\d+(?: \d+(?:\.\d+)?)+")
_EPOCH = re.compile(r"\d{9,11}")


def sniff(head: str, path: Path) -> bool:
    line = head.split("\n", 1)[0].rstrip("\r")
    if not _LINE.fullmatch(line):
        return False
    tokens = line.split(" ")
    # an aggregate line starts with an epoch; a per-transaction line with a small client id
    return len(tokens) in VARIANTS and _EPOCH.fullmatch(tokens[0]) is not None


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    head = _first_line_text(path)
    n = len(head.split(" ")) if head else 0
    if n not in VARIANTS:
        known = ", ".join(str(k) for k in VARIANTS)
        raise ParseError(
            path,
            1,
            f"expected a pgbench aggregate log line of {known} space-separated numbers, "
            f"found {n} fields: {head[:80]!r}",
        )
    _, fields = VARIANTS[n]
    table = read_space_separated(path, fields, WHAT)
    frame = table.frame
    floats = [f.name for f in fields if f.dtype == pl.Float64]
    ints = [f.name for f in fields if f.dtype == pl.Int64]
    check_rows(
        path,
        frame,
        [
            (pl.any_horizontal([~pl.col(c).is_finite() for c in floats]), "number too large"),
            (pl.any_horizontal([pl.col(c) < 0 for c in floats + ints]), "negative value"),
            (pl.col("interval_start_s") == 0, "interval_start is 0, expected a Unix epoch time stamp"),
        ],
    )
    empty = pl.col("n_tx") == 0
    undefined = [c for c in ("latency_min_us", "latency_max_us", "lag_min_us", "lag_max_us") if c in frame.columns]
    frame = frame.with_columns(pl.when(~empty).then(pl.col(c)).alias(c) for c in undefined)
    return result({"pgbench_aggregate": conform(frame, SCHEMA)}, table.warnings)


def _first_line_text(path: Path) -> str:
    try:
        raw = first_line(path)
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    return raw.decode("utf-8", errors="backslashreplace")
