"""The DuckDB fast path of the `pgbench-txlog` format (a per-transaction log read by DuckDB's CSV
reader straight into its table), and the facts it shares with the exact parser: the status words,
the first line's shape, the 7th column's meaning. No polars here: the ingest command takes this path
for a plain log before polars is imported (pgfslab.ingest.fast). Outside the parsers package, whose
import loads every parser (and polars)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pgfslab.ingest.scan import FileScan, first_line

# words pgbench writes instead of a latency (getResultString in pgbench.c)
STATUS_WORDS = ("skipped", "failed", "serialization", "deadlock")


_SNIFF = re.compile(r"\d+ \d+ (?:\d+|" + "|".join(STATUS_WORDS) + r") \d+ \d{9,11} \d{1,6}(?: \d+){0,2}")

Seventh = Literal["lag", "retries"]


@dataclass(frozen=True)
class SeventhStats:
    has_skipped: bool  # a `skipped` transaction exists
    n_failed: int  # transactions that failed (failed, serialization, deadlock)
    failed_positive: bool  # one of them has a non-zero 7th column
    zero_share: float  # share of zeros in the 7th column of the completed transactions
    biggest: float  # the largest 7th value of a completed transaction


def decide_seventh(s: SeventhStats, warnings: list[tuple[int | None, str]]) -> Seventh:
    """The 7th column's meaning from the facts above (see the module docstring), with a warning
    when it is a guess."""
    if s.has_skipped:
        return "lag"  # skipped transactions exist only under --rate
    if s.failed_positive:
        return "retries"  # pgbench logs lag 0 for a failed transaction, but its retries (tries - 1)
    if s.n_failed:
        guess: Seventh = "lag"
        why = f"all {s.n_failed} failed transactions have 0 there"
    else:
        guess = "retries" if s.zero_share >= 0.5 and s.biggest <= 1000 else "lag"
        why = f"{s.zero_share:.0%} zeros, max {s.biggest:.0f}"
    other = "lag" if guess == "retries" else "retries"
    warnings.append(
        (
            None,
            f"7 columns: the 7th is schedule_lag (--rate) or retries (--max-tries); read as "
            f"{guess} ({why}); pass seventh_column='{other}' if the run used "
            f"{'--rate' if other == 'lag' else '--max-tries'}",
        )
    )
    return guess


# ----------------------------------------------------------------------------- DuckDB fast path for the ingest

# what pgbench writes into a per-transaction log: digits, spaces, newlines and the status words
DIRECT_ALPHABET = b"0123456789 \n" + bytes(sorted(set("".join(STATUS_WORDS).encode())))
DIRECT_COUNT = b"e"  # each status word holds exactly one 'e'; so does no number pgbench writes
NUMERIC_ALPHABET = b"0123456789 \n"  # a log without any status word


def load_direct(
    con: Any,
    path: Path,
    scan: FileScan | None,
    link: dict[str, Any],
    table: str = "pgbench_txlog",
    *,
    seventh_column: Seventh | None = None,
) -> tuple[int, list[tuple[int | None, str]]] | None:
    """Insert the log straight from DuckDB's CSV reader into `table` (inside the caller's
    transaction), with the `link` columns as constants (ints as BIGINT, the others as VARCHAR; the
    rows inserted must be the only ones of `table` with these values). `status` is null for an ok
    transaction, as the compact storage keeps it (`ingest.COMPACT_OK`). Returns (rows, warnings), or
    None when the file is not plainly well-formed (a byte pgbench never writes, a torn end): the
    exact parser then decides. Raises when a row breaks a rule: the caller rolls back and asks the
    exact parser for the diagnosis. Both paths give the same rows and warnings for the files this
    one accepts (tests/test_ingest.py compares them).

    DuckDB's reader is laxer than pgbench's output (it reads `1.5` or `1e3` as integers, skips blank
    lines): the alphabet, the row count (= newlines), the count of 'e' (one per status word) and the
    column count (strict_mode: an empty field makes one too many) close those gaps. With `scan` None
    the file is assumed to hold only digits, spaces and newlines (no status word): the caller runs
    `scan_file(path, NUMERIC_ALPHABET)` meanwhile and must check it (no foreign byte, a newline at
    the end, as many newlines as rows) before it commits."""
    if scan is not None and (scan.size == 0 or scan.foreign or not scan.ends_with_newline):
        return None
    head = first_line(path).decode("utf-8", errors="replace")
    n = len(head.split(" "))
    if n not in (6, 7, 8) or seventh_column not in (None, "lag", "retries"):
        return None
    # no 'e' in the file: no status word, every time is a latency and DuckDB reads it as a number
    numeric = scan is None or scan.counts.get(ord("e"), 0) == 0
    types = {
        "client_id": "BIGINT",
        "tx_no": "BIGINT",
        "time": "DOUBLE" if numeric else "VARCHAR",
        "script_no": "BIGINT",
        "epoch_s": "BIGINT",
        "time_us": "BIGINT",
    }
    types |= {6: {}, 7: {"x7": "DOUBLE"}, 8: {"x8_lag": "DOUBLE", "x8_retries": "BIGINT"}}[n]
    spec = "{" + ", ".join(f"'{k}': '{v}'" for k, v in types.items()) + "}"
    quoted = str(path).replace("'", "''")
    lat = "time" if numeric else "TRY_CAST(time AS DOUBLE)"
    src = (
        f"(SELECT *, {lat} AS lat FROM read_csv('{quoted}', delim=' ', header=false, "
        f"quote='', escape='', comment='', auto_detect=false, strict_mode=true, null_padding=false, "
        f"columns={spec}))"
    )
    words = ", ".join(f"'{w}'" for w in STATUS_WORDS)
    status = "CASE WHEN lat IS NULL THEN time END"  # null: ok (the compact storage's convention)
    skipped = "false" if numeric else "time = 'skipped'"
    failed = "false" if numeric else "lat IS NULL AND time <> 'skipped'"
    nulls = " OR ".join(f"{c} IS NULL" for c in types)
    bad = (
        f"({nulls}) OR NOT isfinite(lat) OR time_us >= 1000000 OR epoch_s > 32503680000"
        if numeric
        else f"({nulls}) OR (lat IS NULL AND time NOT IN ({words})) OR (lat IS NOT NULL AND NOT isfinite(lat)) "
        "OR time_us >= 1000000 OR epoch_s > 32503680000"
    )
    warnings: list[tuple[int | None, str]] = []
    if n == 7:
        bad += " OR NOT isfinite(x7)"
        choice = seventh_column
        if choice is None:
            row = con.execute(
                f"SELECT bool_or({skipped}), count(*) FILTER ({failed}), "
                f"coalesce(bool_or(x7 > 0) FILTER ({failed}), false), "
                f"coalesce(avg((x7 = 0)::DOUBLE) FILTER (lat IS NOT NULL), 0), "
                f"coalesce(max(x7) FILTER (lat IS NOT NULL), 0), count(*) FILTER ({bad}) FROM {src}"
            ).fetchall()[0]
            if row[5]:
                raise ValueError("a row breaks a rule")
            choice = decide_seventh(
                SeventhStats(bool(row[0]), int(row[1]), bool(row[2]), float(row[3]), float(row[4])), warnings
            )
        if choice == "retries":
            bad += " OR x7 <> round(x7) OR x7 > 4611686018427387904"
            lag, retries = "NULL::DOUBLE", "CAST(x7 AS BIGINT)"
        else:
            lag, retries = "x7", "NULL::BIGINT"
    elif n == 8:
        bad += " OR NOT isfinite(x8_lag)"
        lag, retries = "x8_lag", "x8_retries"
    else:
        lag, retries = "NULL::DOUBLE", "NULL::BIGINT"
    # literals, not parameters: a prepared INSERT ... SELECT ran single-threaded in DuckDB 2.0 here;
    # a column left out of an INSERT ... BY NAME is null and costs nothing to write
    select = (
        [f'{_sql_literal(v)} AS "{k}"' for k, v in link.items()]
        + [
            "client_id",
            "tx_no",
            "lat AS latency_us",
            *([] if numeric else [f"{status} AS status"]),
            "script_no",
            f"CASE WHEN {bad} THEN error('a row breaks a rule') ELSE epoch_s * 1000000 + time_us END AS epoch_us",
        ]
        + [f"{e} AS {c}" for e, c in ((lag, "lag_us"), (retries, "retries")) if not e.startswith("NULL")]
    )
    inserted = con.execute(f'INSERT INTO "{table}" BY NAME SELECT {", ".join(select)} FROM {src}').fetchall()
    rows = int(inserted[0][0]) if inserted else -1
    if scan is None:
        return rows, warnings
    if rows != scan.newlines:
        raise ValueError(f"DuckDB read {rows} rows, the file has {scan.newlines} lines")
    if numeric:
        return rows, warnings
    mine = " AND ".join(f'"{k}" IS NOT DISTINCT FROM {_sql_literal(v)}' for k, v in link.items())
    n_words = con.execute(f'SELECT count(*) FROM "{table}" WHERE {mine} AND status IS NOT NULL').fetchall()
    if int(n_words[0][0]) != scan.counts.get(ord("e"), -1):
        raise ValueError("an 'e' outside the status words: a number in exponent notation?")
    return rows, warnings


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL::VARCHAR"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"no SQL literal for {value!r}")
    if isinstance(value, int):
        return f"{value}::BIGINT"
    return "'" + value.replace("'", "''") + "'::VARCHAR"
