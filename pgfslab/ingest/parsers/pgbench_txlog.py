"""pgbench's per-transaction log (`--log` without --aggregate-interval, optionally with
--sampling-rate): one line per (sampled) transaction, one file per thread (`<prefix>.<pid>[.<n>]`).

    client_id transaction_no time script_no time_epoch time_us [schedule_lag] [retries]

`time` is the latency in µs, or a word for a transaction that did not complete: `skipped` (--rate
with --latency-limit), `failed` (PG 15+), or with --failures-detailed `serialization` / `deadlock`
(PG 15+). schedule_lag (µs) is written with --rate, retries (PG 15+) when --max-tries is not 1.

The 7-column layout is ambiguous: its last column is schedule_lag (--rate, every version) or retries
(PG 15+, --max-tries other than 1, no --rate); 8 columns are lag then retries. Pass
`seventh_column="lag"` or `"retries"` when the run's options are known. Otherwise it is inferred
from facts of pgbench 15's logging: `skipped` rows exist only with --rate (so: lag); a failed
transaction is logged with lag 0 but with its retries, which are mostly above 0 (so: a failed row
with a non-zero value means retries; silently). With no skipped row and no failed row with a
non-zero value, it is a guess and a warning says which was made: lag if there are failed rows
(all 0), else retries when over the completed transactions at least half the values are 0 and
none exceeds 1000 (retries are mostly 0, a schedule lag in µs almost never is), lag otherwise.
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
    excerpt,
    first_line,
    read_space_separated,
    result,
    v_uint,
    v_unum,
)

# the DuckDB fast path (load_direct and what the ingest checks before it) lives without polars
from pgfslab.ingest.txlog_direct import (
    _SNIFF,
    DIRECT_ALPHABET,
    DIRECT_COUNT,
    NUMERIC_ALPHABET,
    STATUS_WORDS,
    Seventh,
    SeventhStats,
    decide_seventh,
    load_direct,
)

NAME = "pgbench-txlog"
DESCRIPTION = "pgbench per-transaction log (--log): latency, status, timestamp, lag, retries per transaction"

SCHEMA: Schema = {
    "client_id": pl.Int64,
    "tx_no": pl.Int64,
    "latency_us": pl.Float64,
    "status": pl.String,
    "script_no": pl.Int64,
    "epoch_us": pl.Int64,
    "lag_us": pl.Float64,
    "retries": pl.Int64,
}
TABLES: dict[str, Schema] = {"pgbench_txlog": SCHEMA}
__all__ = ["DIRECT_ALPHABET", "DIRECT_COUNT", "NUMERIC_ALPHABET", "load_direct", "parse", "sniff"]

INT_MAX = 2**31 - 1

_TIME = re.compile(rb"\d+(?:\.\d+)?|" + b"|".join(w.encode() for w in STATUS_WORDS))


def _v_time(tok: bytes) -> str | None:
    if _TIME.fullmatch(tok):
        return None
    return f"is neither a latency in µs nor one of {', '.join(STATUS_WORDS)}"


_BASE = [
    Field("client_id", pl.Int64, "client_id", v_uint),
    Field("tx_no", pl.Int64, "transaction_no", v_uint),
    Field("time", pl.String, "time", _v_time),
    Field("script_no", pl.Int64, "script_no", v_uint),
    Field("epoch_s", pl.Int64, "time_epoch", v_uint),
    Field("time_us", pl.Int64, "time_us", v_uint),
]
_X7 = Field("x7", pl.Float64, "schedule_lag|retries", v_unum)
_LAG = Field("lag_us", pl.Float64, "schedule_lag", v_unum)
_RETRIES = Field("retries", pl.Int64, "retries", v_uint)

WHAT = "pgbench per-transaction log lines (client_id transaction_no time script_no time_epoch time_us ...)"


def sniff(head: str, path: Path) -> bool:
    line = head.split("\n", 1)[0].rstrip("\r")
    return _SNIFF.fullmatch(line) is not None


def parse(path: Path, *, seventh_column: Seventh | None = None) -> dict[str, pl.DataFrame]:
    path = Path(path)
    try:
        head = first_line(path).decode("utf-8", errors="backslashreplace")
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    n = len(head.split(" ")) if head else 0
    if n not in (6, 7, 8):
        raise ParseError(
            path,
            1,
            f"expected a pgbench per-transaction log line of 6 to 8 space-separated fields "
            f"(client_id transaction_no time script_no time_epoch time_us [schedule_lag] "
            f"[retries]), found {n}: {excerpt(head)}",
        )
    if seventh_column not in (None, "lag", "retries"):
        raise ValueError(f"seventh_column must be 'lag' or 'retries', not {seventh_column!r}")
    fields = _BASE + {6: [], 7: [_X7], 8: [_LAG, _RETRIES]}[n]
    table = read_space_separated(path, fields, WHAT)
    warnings = table.warnings
    raw = table.frame
    latency = pl.col("time").cast(pl.Float64, strict=False)
    frame = raw.with_columns(
        latency.alias("latency_us"),
        pl.when(latency.is_not_null()).then(pl.lit("ok")).otherwise(pl.col("time")).alias("status"),
        (pl.col("epoch_s") * 1_000_000 + pl.col("time_us")).alias("epoch_us"),
    )
    rules: list[tuple[pl.Expr, str]] = [
        (
            pl.col("latency_us").is_null() & ~pl.col("time").is_in(STATUS_WORDS),
            f"time is neither a latency in µs nor one of {', '.join(STATUS_WORDS)}",
        ),
        (pl.col("latency_us").is_not_null() & ~pl.col("latency_us").is_finite(), "latency too large"),
        (pl.col("latency_us") < 0, "negative latency"),
        (pl.col("time_us") >= 1_000_000, "time_us is not below 1000000"),
        (
            pl.any_horizontal([pl.col(c) < 0 for c in ("client_id", "tx_no", "script_no", "epoch_s", "time_us")]),
            "negative value",
        ),
        (pl.col("epoch_s") > 32_503_680_000, "time_epoch beyond year 3000"),
        # pgbench writes both from a C int (and the lab stores them as INTEGER)
        (pl.max_horizontal("client_id", "script_no") > INT_MAX, "client_id or script_no beyond a 32-bit int"),
    ]
    extra = "x7" if n == 7 else "lag_us" if n == 8 else None
    if extra is not None:
        rules += [(~pl.col(extra).is_finite(), "number too large"), (pl.col(extra) < 0, "negative value")]
    check_rows(path, frame, rules)
    if n == 7:
        choice = seventh_column or _infer_seventh(frame, warnings)
        if choice == "retries":
            check_rows(
                path,
                frame,
                [
                    (pl.col("x7") != pl.col("x7").round(0), "retries is not an integer"),
                    (pl.col("x7") > 2**62, "retries too large"),
                ],
            )
            frame = frame.with_columns(pl.col("x7").cast(pl.Int64).alias("retries"))
        else:
            frame = frame.rename({"x7": "lag_us"})
    return result({"pgbench_txlog": conform(frame, SCHEMA)}, warnings)


def _infer_seventh(frame: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> Seventh:
    status = pl.col("status")
    failed = frame.filter((status != "ok") & (status != "skipped")).get_column("x7")
    values = frame.filter(status == "ok").get_column("x7")
    stats = SeventhStats(
        has_skipped=bool(frame.select((status == "skipped").any()).item()),
        n_failed=failed.len(),
        failed_positive=bool(failed.len() and (failed > 0).any()),
        zero_share=float((values == 0).mean() or 0.0),  # type: ignore[arg-type]
        biggest=float(values.max() or 0.0),  # type: ignore[arg-type]
    )
    return decide_seventh(stats, warnings)
