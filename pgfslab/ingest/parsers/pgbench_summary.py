"""pgbench's end-of-run report on stdout (PostgreSQL 9.5 through 17), one row per file, plus the
per-statement latencies of `-r` (`--report-per-command`).

Fields come and go with versions; a field a version does not print is null:

* `pgbench (15.18 (Debian ...))` / `pgbench (16.1, server 15.4)`: first line since PG 14.
* `maximum number of tries`, `number of failed transactions: N (x%)`, with --failures-detailed the
  serialization/deadlock counts, with --max-tries the retried/retries counts: PG 15+.
* `number of transactions actually processed: N/M` with -t, `: N` with -T (`duration: 20 s`).
* `latency average = X ms` (9.6+; `latency average: X ms` in 9.5), `latency stddev` only with
  -P, --rate or --latency-limit; PG 15 appends ` (including failures)` when it is computed from
  the run time and some transactions failed.
* `tps = X (including connections establishing)` and `tps = X (excluding connections
  establishing)` up to PG 13; `initial connection time = X ms` and `tps = X (without initial
  connection time)` since PG 14; with -C since PG 14 `average connection time = X ms` and
  `tps = X (including reconnection times)`. `tps` is the figure without connection set-up time
  (the "excluding" one in old versions; with -C the only one there is); `tps_including_connections`
  is the old versions' "including" figure.
* `partition method` / `partitions` (PG 13+ when pgbench_accounts is partitioned).
* `-r` tables: `statement latencies in milliseconds:` (latency, statement), PG 15+ `... and
  failures:` (latency, failures, statement) or `..., failures and retries:` (latency, failures,
  retries, statement); with several scripts, one table per `SQL script N:` block
  (` - statement latencies ...`), in 9.5 `statement latencies in milliseconds, file N:`.
  script_no and statement_no are 0-based, script_no as in the per-transaction log.

Lines that pgbench writes to stderr (`starting vacuum...end.`, `progress: ...`, `pgbench: ...`)
and the shell prompt line of a pasted terminal session (`user@host:dir$ pgbench ...`) are ignored, so stdout and stderr captured together parse too. The per-script details (` - ...`)
are ignored. Any other unrecognised line gives a warning. A file without a `transaction type:`
line is not a pgbench report; a file whose report stops before its last mandatory line (the
`tps = ` line, unless no transaction completed) is truncated: both raise ParseError.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    NUM,
    ParseError,
    Schema,
    conform,
    decode,
    excerpt,
    first_true,
    nan_to_null,
    read_bytes,
    result,
    split_lines,
    torn_warning,
)

NAME = "pgbench-summary"
DESCRIPTION = "pgbench stdout: end-of-run report (tps, latency, counts) and -r per-statement latencies"

SCHEMA: Schema = {
    "pgbench_version": pl.String,
    "server_version": pl.String,
    "transaction_type": pl.String,
    "scaling_factor": pl.Int64,
    "partition_method": pl.String,
    "partitions": pl.Int64,
    "query_mode": pl.String,
    "clients": pl.Int64,
    "threads": pl.Int64,
    "max_tries": pl.Int64,
    "duration_s": pl.Float64,
    "transactions_target": pl.Int64,
    "transactions_processed": pl.Int64,
    "failed_transactions": pl.Int64,
    "serialization_failures": pl.Int64,
    "deadlock_failures": pl.Int64,
    "retried_transactions": pl.Int64,
    "total_retries": pl.Int64,
    "skipped_transactions": pl.Int64,
    "latency_limit_ms": pl.Float64,
    "late_transactions": pl.Int64,
    "latency_avg_ms": pl.Float64,
    "latency_stddev_ms": pl.Float64,
    "lag_avg_ms": pl.Float64,
    "lag_max_ms": pl.Float64,
    "initial_connection_time_ms": pl.Float64,
    "average_connection_time_ms": pl.Float64,
    "tps": pl.Float64,
    "tps_including_connections": pl.Float64,
}
STATEMENT_SCHEMA: Schema = {
    "script_no": pl.Int64,
    "statement_no": pl.Int64,
    "latency_ms": pl.Float64,
    "failures": pl.Int64,
    "retries": pl.Int64,
    "statement": pl.String,
}
TABLES: dict[str, Schema] = {"pgbench_summary": SCHEMA, "pgbench_statement": STATEMENT_SCHEMA}

_PCT = rf"\({NUM} ?%\)"
# column -> (pattern with one group, label for messages). Lines are matched whole.
FIELDS: dict[str, tuple[str, str]] = {
    "pgbench_version": (r"^pgbench \((\d[^ ,()]*).*\)$", "pgbench (<version>)"),
    "server_version": (r"^pgbench \(.*, server (\d[^ ,()]*).*\)$", "pgbench (<version>, server <version>)"),
    "transaction_type": (r"^transaction type: (.+)$", "transaction type: ..."),
    "scaling_factor": (r"^scaling factor: (\d+)$", "scaling factor: N"),
    "partition_method": (r"^partition method: (\S+)$", "partition method: ..."),
    "partitions": (r"^partitions: (\d+)$", "partitions: N"),
    "query_mode": (r"^query mode: (\S+)$", "query mode: ..."),
    "clients": (r"^number of clients: (\d+)$", "number of clients: N"),
    "threads": (r"^number of threads: (\d+)$", "number of threads: N"),
    "max_tries": (r"^maximum number of tries: (\d+)$", "maximum number of tries: N"),
    "duration_s": (rf"^duration: ({NUM}) s$", "duration: N s"),
    "transactions_target": (r"^number of transactions per client: (\d+)$", "number of transactions per client: N"),
    "transactions_processed": (
        r"^number of transactions actually processed: (\d+)(?:/\d+)?$",
        "number of transactions actually processed: N",
    ),
    "failed_transactions": (rf"^number of failed transactions: (\d+) {_PCT}$", "number of failed transactions: N (x%)"),
    "serialization_failures": (
        rf"^number of serialization failures: (\d+) {_PCT}$",
        "number of serialization failures: N (x%)",
    ),
    "deadlock_failures": (rf"^number of deadlock failures: (\d+) {_PCT}$", "number of deadlock failures: N (x%)"),
    "retried_transactions": (
        rf"^number of transactions retried: (\d+) {_PCT}$",
        "number of transactions retried: N (x%)",
    ),
    "total_retries": (r"^total number of retries: (\d+)$", "total number of retries: N"),
    "skipped_transactions": (rf"^number of transactions skipped: (\d+) {_PCT}$", "number of transactions skipped: N"),
    "latency_limit_ms": (
        rf"^number of transactions above the ({NUM}) ms latency limit: \d+(?:/\d+)? {_PCT}$",
        "number of transactions above the X ms latency limit: N",
    ),
    "late_transactions": (
        rf"^number of transactions above the {NUM} ms latency limit: (\d+)(?:/\d+)? {_PCT}$",
        "number of transactions above the X ms latency limit: N",
    ),
    "latency_avg_ms": (rf"^latency average(?: =|:) ({NUM}) ms(?: \(including failures\))?$", "latency average = X ms"),
    "latency_stddev_ms": (rf"^latency stddev(?: =|:) ({NUM}) ms$", "latency stddev = X ms"),
    "lag_avg_ms": (rf"^rate limit schedule lag: avg ({NUM}) \(max {NUM}\) ms$", "rate limit schedule lag: ..."),
    "lag_max_ms": (rf"^rate limit schedule lag: avg {NUM} \(max ({NUM})\) ms$", "rate limit schedule lag: ..."),
    "initial_connection_time_ms": (rf"^initial connection time = ({NUM}) ms$", "initial connection time = X ms"),
    "average_connection_time_ms": (rf"^average connection time = ({NUM}) ms$", "average connection time = X ms"),
    "tps": (
        rf"^tps = ({NUM}) \((?:excluding connections establishing|without initial connection time|"
        r"including reconnection times)\)$",
        "tps = X (...)",
    ),
    "tps_including_connections": (
        rf"^tps = ({NUM}) \(including connections establishing\)$",
        "tps = X (including connections establishing)",
    ),
}
# must be present in every report, in this order
REQUIRED = ("transaction_type", "scaling_factor", "query_mode", "clients", "threads", "transactions_processed")

STMT_HEADER = (
    r"^(?: - )?statement latencies in milliseconds(?P<kind>| and failures|, failures and retries)"
    r"(?:, file (?P<file>\d+))?:$"
)
SCRIPT_HEADER = r"^SQL script (\d+): "
_STMT = {
    "": rf"^\s*({NUM})\s+()()(\S.*)$",
    " and failures": rf"^\s*({NUM})\s+(\d+)\s+()(\S.*)$",
    ", failures and retries": rf"^\s*({NUM})\s+(\d+)\s+(\d+)\s+(\S.*)$",
}
# a terminal session pasted with the report (published results): `user@host:dir$ pgbench ...`
SHELL_PROMPT = r"^[\w.-]+@[\w.-]+:[^\s$#]*[$#] pgbench(?: |$)"
# pgbench's stderr lines and the per-script details: silently ignored
IGNORED = (
    r"^\s*$|^starting vacuum|^progress: |^pgbench: |^client \d+ |^ - |^SQL script \d+: |" + SHELL_PROMPT + "|"
    r"^dropping old tables|^creating tables|^generating data|^vacuuming\.\.\.|^creating primary keys|"
    r"^done in |^\d+ of \d+ tuples"
)
ABORTED = r"Run was aborted"

_SNIFF_TYPE = re.compile(r"^transaction type: ", re.M)
_SNIFF_VERSION = re.compile(r"pgbench \(\d[^()]*(?:\([^()]*\))?[^()]*\)")
_SNIFF_OTHER = re.compile(r"^(?:scaling factor|query mode|number of clients|number of threads): ", re.M)


def sniff(head: str, path: Path) -> bool:
    if _SNIFF_TYPE.search(head) and _SNIFF_OTHER.search(head):
        return True
    # pgbench 14+ starts its stdout with its version; a run killed early leaves only that line
    first = head.lstrip().split("\n", 1)[0].rstrip("\r")
    return _SNIFF_VERSION.fullmatch(first) is not None


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None:
        warnings.append(torn_warning(*lines.torn))
    frame = lines.frame
    if frame.height == 0 or frame.select((pl.col("text").str.strip_chars() == "").all()).item():
        raise ParseError(path, 1, "empty file; expected pgbench's report (its stdout)")
    text = pl.col("text")
    types = frame.filter(text.str.contains(FIELDS["transaction_type"][0]))
    if types.height == 0:
        first = frame.filter(text.str.strip_chars() != "").row(0, named=True)
        raise ParseError(
            path,
            first["line"],
            "not a pgbench report: expected a 'transaction type: ...' line "
            f"(pgbench's stdout), found {excerpt(first['text'])}",
        )
    if types.height > 1:
        raise ParseError(
            path, int(types["line"][1]), "a second 'transaction type:' line: one file must hold one pgbench run"
        )

    row: dict[str, object] = {}
    matched = pl.lit(False)
    for col, (pattern, _) in FIELDS.items():
        hit = frame.filter(text.str.contains(pattern)).head(1)
        matched = matched | text.str.contains(pattern)
        if hit.height == 0:
            row[col] = None
            continue
        raw = hit.select(text.str.extract(pattern, 1)).item()
        dtype = SCHEMA[col]
        value = pl.Series([raw]).cast(dtype, strict=False)[0] if dtype != pl.String else raw
        if value is None:
            raise ParseError(path, int(hit["line"][0]), f"number out of range: {excerpt(hit['text'][0])}")
        row[col] = value
    summary = conform(pl.DataFrame([row], schema=SCHEMA), SCHEMA).with_columns(
        nan_to_null(*[c for c, t in SCHEMA.items() if t == pl.Float64])
    )
    for col, t in SCHEMA.items():
        if t == pl.Float64 and summary.select(pl.col(col).is_infinite().any()).item():
            hit = frame.filter(text.str.contains(FIELDS[col][0])).row(0, named=True)
            raise ParseError(path, hit["line"], f"number too large: {excerpt(hit['text'])}")

    last_line = int(frame["line"][-1])
    for col in REQUIRED:
        if row[col] is None:
            raise ParseError(
                path, last_line, f"truncated or not a pgbench report: no '{FIELDS[col][1]}' line (the file ends here)"
            )
    completed = int(row["transactions_processed"] or 0) + int(row["skipped_transactions"] or 0)  # type: ignore[call-overload]
    if completed > 0 and row["tps"] is None:
        raise ParseError(path, last_line, "truncated pgbench report: no 'tps = ...' line (the file ends here)")

    statements, stmt_lines = _statements(path, frame, warnings)
    known = frame.select((matched | text.str.contains(IGNORED) | text.str.contains(STMT_HEADER)).alias("k"))
    frame = frame.with_columns(known.to_series().alias("known"))
    if stmt_lines.len():
        frame = frame.with_columns(pl.col("known") | pl.col("line").is_in(stmt_lines.implode()))
    for r in frame.filter(text.str.contains(ABORTED)).iter_rows(named=True):
        warnings.append((int(r["line"]), f"pgbench says the results are incomplete: {excerpt(r['text'])}"))
    for r in frame.filter(~pl.col("known") & ~text.str.contains(ABORTED)).iter_rows(named=True):
        warnings.append((int(r["line"]), f"unrecognised line ignored: {excerpt(r['text'])}"))
    return result({"pgbench_summary": summary, "pgbench_statement": statements}, warnings)


def _statements(
    path: Path, frame: pl.DataFrame, warnings: list[tuple[int | None, str]]
) -> tuple[pl.DataFrame, pl.Series]:
    """The -r tables: the run of statement lines right after each 'statement latencies' header."""
    text = pl.col("text")
    f = frame.with_columns(
        text.str.contains(STMT_HEADER).alias("is_header"),
        text.str.extract(STMT_HEADER, 1).alias("kind"),
        text.str.extract(STMT_HEADER, 2).cast(pl.Int64).alias("file_no"),
        text.str.extract(SCRIPT_HEADER, 1).cast(pl.Int64, strict=False).alias("script_hdr"),
    )
    if not f["is_header"].any():
        return pl.DataFrame(schema=STATEMENT_SCHEMA), pl.Series("line", [], dtype=pl.Int64)
    f = f.with_columns(
        pl.col("is_header").cum_sum().alias("block"),
        pl.col("kind").forward_fill(),
        # script of a block: 'SQL script N:' before it, or the header's 'file N'; scripts are 1-based there
        pl.coalesce(pl.col("file_no"), pl.col("script_hdr")).forward_fill().fill_null(1).sub(1).alias("script_no"),
    )
    stmt_match = pl.lit(False)
    for kind, pattern in _STMT.items():
        stmt_match = pl.when(pl.col("kind") == kind).then(text.str.contains(pattern)).otherwise(stmt_match)
    f = f.with_columns(stmt_match.fill_null(False).alias("stmt_like"))
    f = f.with_columns((~pl.col("is_header") & ~pl.col("stmt_like")).cast(pl.Int64).alias("brk"))
    f = f.with_columns(pl.col("brk").cum_sum().over("block").alias("brk_run"))
    rows = f.filter((pl.col("block") > 0) & ~pl.col("is_header") & pl.col("stmt_like") & (pl.col("brk_run") == 0))
    headers = f.filter(pl.col("is_header"))
    counts = rows.group_by("block").len()
    lonely = headers.join(counts, on="block", how="left").filter(pl.col("len").is_null())
    for r in lonely.iter_rows(named=True):
        warnings.append((int(r["line"]), "statement latency header followed by no statement lines"))
    parts = []
    for kind, pattern in _STMT.items():
        sub = rows.filter(pl.col("kind") == kind)
        if sub.height:
            parts.append(
                sub.select(
                    "line",
                    "block",
                    "script_no",
                    text.str.extract(pattern, 1).cast(pl.Float64, strict=False).alias("latency_ms"),
                    text.str.extract(pattern, 2).cast(pl.Int64, strict=False).alias("failures"),
                    text.str.extract(pattern, 3).cast(pl.Int64, strict=False).alias("retries"),
                    text.str.extract(pattern, 2).alias("_f"),
                    text.str.extract(pattern, 3).alias("_r"),
                    text.str.extract(pattern, 4).alias("statement"),
                    text.alias("_text"),
                )
            )
    out = pl.concat(parts).sort("line")
    bad = first_true(
        out.select(
            (pl.col("_f").fill_null("") != "") & pl.col("failures").is_null()
            | (pl.col("_r").fill_null("") != "") & pl.col("retries").is_null()
            | pl.col("latency_ms").is_infinite()
        ).to_series()
    )
    if bad is not None:
        raise ParseError(path, int(out["line"][bad]), f"number out of range: {excerpt(out['_text'][bad])}")
    out = out.with_columns(
        (pl.col("line").rank("ordinal").over("block") - 1).cast(pl.Int64).alias("statement_no"),
        *nan_to_null("latency_ms"),
    )
    return conform(out, STATEMENT_SCHEMA), out["line"]
