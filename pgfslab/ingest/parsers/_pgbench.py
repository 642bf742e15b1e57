"""One reader for everything pgbench prints, as researchers capture it: stdout (the end-of-run
report, the `-r` tables), stderr (`-P` progress lines, `starting vacuum...end.`, messages), both
interleaved (`> run.log 2>&1`, `| tee`), several runs appended by a shell loop, the output of
`pgbench -i`, wrapper lines around them. Used by the `pgbench-summary` and `pgbench-progress`
formats (the same parser under the two names the lab's stdout and stderr files have).

Every line is accounted for (`_common.LINES_KEY`): parsed (a report field, a progress line, a
statement line, the version line), noise (blank, `starting vacuum...`, `pgbench -i` steps,
NOTICEs, `pgbench: ...` messages, the per-script ` - ...` details, a shell prompt running pgbench,
`Password:`), or not understood (everything else: counted, shown, stored by the ingest).

Runs. A run's lines come in this order: pre-report lines (version line, `starting vacuum`,
progress lines) then report lines (`transaction type:` ... `tps = `, the `-r` tables). A new run
starts at a pre-report line that follows a report line, or at a `transaction type:` line that
follows a report line; `run_index` (1-based, in file order) is on every row of the three tables,
so that appended runs stay apart. A run without a report (killed, or a stderr file) has progress
rows and no summary row.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    BLANK,
    NUM,
    Lines,
    ParseError,
    Schema,
    cast_checked,
    classify,
    conform,
    empty,
    excerpt,
    prompt,
    read_lines,
    result,
    torn_warning,
    with_torn,
)

RUN_INDEX: Schema = {"run_index": pl.Int64}

SUMMARY_SCHEMA: Schema = {
    **RUN_INDEX,
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
    **RUN_INDEX,
    "script_no": pl.Int64,
    "statement_no": pl.Int64,
    "latency_ms": pl.Float64,
    "failures": pl.Int64,
    "retries": pl.Int64,
    "statement": pl.String,
}
PROGRESS_SCHEMA: Schema = {
    **RUN_INDEX,
    "t_s": pl.Float64,
    "tps": pl.Float64,
    "latency_avg_ms": pl.Float64,
    "latency_stddev_ms": pl.Float64,
    "lag_ms": pl.Float64,
    "skipped": pl.Int64,
    "failed": pl.Int64,
    "retried": pl.Int64,
    "retries": pl.Int64,
}
TABLES: dict[str, Schema] = {
    "pgbench_summary": SUMMARY_SCHEMA,
    "pgbench_statement": STATEMENT_SCHEMA,
    "pgbench_progress": PROGRESS_SCHEMA,
}

# ----------------------------------------------------------------------------- the report

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
# in every report of every version since 8.x (query mode came in 8.4, threads in 9.0)
REQUIRED = ("transaction_type", "scaling_factor", "clients", "transactions_processed")

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

# ----------------------------------------------------------------------------- stderr

PROGRESS = (
    rf"^progress: (?P<t_s>{NUM}) s, (?P<tps>{NUM}) tps, lat (?P<latency_avg_ms>{NUM}) ms"
    rf"(?: stddev (?P<latency_stddev_ms>{NUM}))?"
    r"(?:, (?P<failed>\d+) failed)?"
    rf"(?:, lag (?P<lag_ms>{NUM}) ms)?"
    r"(?:, (?P<skipped>\d+) skipped)?"
    r"(?:, (?P<retried>\d+) retried, (?P<retries>\d+) retries)?$"
)
PROGRESS_START = r"^progress: "
PROGRESS_EXPECTED = (
    "expected 'progress: <t> s, <tps> tps, lat <ms> ms[ stddev <ms>][, N failed][, lag <ms> ms]"
    "[, N skipped][, N retried, N retries]'"
)
VERSION = FIELDS["pgbench_version"][0]
VACUUM = r"^starting vacuum\.\.\."
# `pgbench -i` (every version), the server's NOTICEs it relays, and its password prompt. 8.x-9.3 count
# rows as `10000 tuples done.` and end with `set primary key...` and `vacuum...done.`; 9.4 prints
# `vacuum...` and `set primary keys...` (from pgbench 8.2, 8.4, 9.1 and 9.4 run here: tests/data/captured)
INIT = (
    r"^(?:dropping old tables\.\.\.|creating tables\.\.\.|generating data|\d+ of \d+ tuples \(\d+%\) done|"
    r"\d+ tuples done\.$|vacuum\.\.\.(?:done\.)?$|"
    r"vacuuming\.\.\.|creating primary keys\.\.\.|creating foreign keys\.\.\.|done\.?$|done in |set primary key|"
    r"(?:NOTICE|WARNING|DETAIL|HINT):  )"
)
# pgbench's own messages; 9.x and older: `Scale option ignored, using pgbench_branches table count = 32` (a
# run given -s: the scale is the report's `scaling factor`)
MESSAGE = r"^pgbench: |^client \d+ |^Password(?: for user \S+)?: ?$|^Scale option ignored, using pgbench_branches table count = \d+$"
# pgbench 8.3 and older, run with -d (debug), printed its connection parameters first:
# `pghost:  pgport:  nclients: 10 nxacts: 100 dbName: x`
OLD_BANNER = r"^pghost: .* nclients: \d+ nxacts: \d+ dbName: "
# the per-script details of a report with several scripts (9.6+), and the `-r` block's title
DETAILS = r"^ - |^SQL script \d+: |^script statistics:$|^Run was aborted"
ABORTED = r"Run was aborted|aborted in command"
PROMPT = prompt("pgbench")

STDERR_HINT = rf"{VACUUM}|{PROGRESS_START}|{MESSAGE}|{INIT}|{VERSION}|{OLD_BANNER}"


def sniff_any(head: str) -> bool:
    """Whether some line of `head` is one that only pgbench prints."""
    return pl.Series(head.split("\n")).str.strip_suffix("\r").str.contains(STDERR_HINT).any()


def parse(path: Path, what: str) -> dict[str, pl.DataFrame]:
    """Parse a pgbench capture into the three tables, with its line accounting. `what` names the
    format for messages."""
    path = Path(path)
    lines = read_lines(path)
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None and complete_last_line(lines.torn[1]):
        # a whole report or progress line that lost only its newline (a capture by command substitution,
        # a paste): data, like the others
        no, last = lines.torn
        tail = pl.DataFrame({"line": [no], "text": [last.removesuffix("\r")]}, schema=lines.frame.schema)
        lines = Lines(pl.concat([lines.frame, tail]), None)
    elif lines.torn is not None:
        warnings.append(torn_warning(*lines.torn))
    frame = lines.frame
    text = pl.col("text")
    if frame.height == 0 or frame.select((text.str.strip_chars() == "").all()).item():
        raise ParseError(path, 1, f"empty file; expected pgbench's output ({what})")
    stmt_hdr = text.str.contains(STMT_HEADER)
    field_hit = pl.any_horizontal([text.str.contains(p) for p, _ in FIELDS.values()])
    frame = frame.with_columns(
        text.str.contains(PROGRESS_START).alias("is_progress"),
        text.str.contains(PROGRESS).alias("progress_ok"),
        text.str.contains(VERSION).alias("is_version"),
        text.str.contains(VACUUM).alias("is_vacuum"),
        text.str.contains(FIELDS["transaction_type"][0]).alias("is_type"),
        (field_hit & ~text.str.contains(VERSION)).alias("is_field"),
        stmt_hdr.alias("is_stmt_header"),
        text.str.contains(DETAILS).alias("is_detail"),
        (
            text.str.contains(BLANK)
            | text.str.contains(INIT)
            | text.str.contains(MESSAGE)
            | text.str.contains(OLD_BANNER)
            | text.str.contains(PROMPT)
        ).alias("is_noise"),
    )
    if (
        not frame.select(
            pl.any_horizontal("is_progress", "is_version", "is_vacuum", "is_type", "is_stmt_header").any()
        ).item()
        and not frame.select(text.str.contains(STDERR_HINT).any()).item()
    ):
        first = frame.filter(text.str.strip_chars() != "").row(0, named=True)
        raise ParseError(
            path,
            first["line"],
            f"not pgbench's output: no report ('transaction type: ...'), no 'progress: ...' line and "
            f"nothing else pgbench prints; found {excerpt(first['text'])}",
        )
    frame = _runs(frame)
    statements, stmt_lines = _statements(path, frame, warnings)
    frame = frame.with_columns(pl.col("line").is_in(stmt_lines.to_list()).alias("is_stmt"))
    progress = _progress(path, frame, warnings)
    summary = _summary(path, frame, warnings)

    parsed = (
        pl.col("progress_ok") | pl.col("is_version") | pl.col("is_field") | pl.col("is_stmt_header") | pl.col("is_stmt")
    )
    noise = pl.col("is_noise") | pl.col("is_vacuum") | (pl.col("is_detail") & ~pl.col("is_progress"))
    kinds = with_torn(classify(frame, parsed, noise), lines)
    for r in frame.filter(text.str.contains(ABORTED)).iter_rows(named=True):
        warnings.append((int(r["line"]), f"pgbench says the run was aborted: {excerpt(r['text'])}"))
    warnings.sort(key=lambda w: (w[0] is not None, w[0] or 0))
    return result(
        {"pgbench_summary": summary, "pgbench_statement": statements, "pgbench_progress": progress},
        warnings,
        kinds,
    )


_WHOLE = [re.compile(p) for p, _ in FIELDS.values()] + [re.compile(STMT_HEADER), re.compile(VACUUM + r"end\.$")]
_PROGRESS_RE = re.compile(PROGRESS)
_LAST_NUMBER = re.compile(r"\d(?:\.(\d*))?$")


def complete_last_line(text: str) -> bool:
    """Whether a last line without a newline is whole for its layout: a report field (each ends in its own
    words: ` ms`, `)`, or a number), a `-r` table title, `starting vacuum...end.`, or a progress line that
    ends in a word or in `stddev` with pgbench's three decimals (a cut `stddev 0.6` of `0.634` is torn).
    A `-r` statement line or anything else is not: its end cannot be told."""
    t = text.removesuffix("\r")
    if any(r.match(t) for r in _WHOLE):
        return True
    if _PROGRESS_RE.match(t):
        last = _LAST_NUMBER.search(t)
        return last is None or len(last.group(1) or "") == 3
    return False


def _runs(frame: pl.DataFrame) -> pl.DataFrame:
    """`run_index` on every line: a run is pre-report lines then report lines (module docstring).
    Lines that are neither (noise, not understood) belong to the run of the line before them."""
    pre = pl.col("is_version") | pl.col("is_vacuum") | pl.col("is_progress")
    report = (pl.col("is_field") | pl.col("is_stmt_header")) & ~pl.col("is_version")
    markers = frame.filter(pre | report).select(
        "line", report.alias("is_report"), pl.col("is_type").alias("starts_report")
    )
    prev_report = pl.col("is_report").shift(1, fill_value=False)
    markers = markers.with_columns(
        (prev_report & (~pl.col("is_report") | pl.col("starts_report"))).cast(pl.Int64).cum_sum().add(1).alias("run")
    )
    out = frame.join(markers.select("line", "run"), on="line", how="left", maintain_order="left")
    return out.with_columns(pl.col("run").forward_fill().fill_null(1).alias("run_index")).drop("run")


def _progress(path: Path, frame: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> pl.DataFrame:
    prog = frame.filter(pl.col("is_progress"))
    if prog.height == 0:
        return empty(PROGRESS_SCHEMA)
    bad = prog.filter(~pl.col("progress_ok"))
    if bad.height * 2 > prog.height:
        raise ParseError(
            path,
            int(bad["line"][0]),
            f"unrecognised progress line ({bad.height} of {prog.height} do not parse), "
            f"{PROGRESS_EXPECTED}: {excerpt(bad['text'][0])}",
        )
    warnings += [
        (int(r["line"]), f"progress line not understood, dropped ({PROGRESS_EXPECTED}): {excerpt(r['text'])}")
        for r in bad.iter_rows(named=True)
    ]
    good = prog.filter(pl.col("progress_ok"))
    raw = good.select(pl.col("text").str.extract_groups(PROGRESS).alias("g")).unnest("g")
    values = cast_checked(path, good, raw, PROGRESS_SCHEMA)
    return conform(values.with_columns(good["run_index"]), PROGRESS_SCHEMA)


def _summary(path: Path, frame: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> pl.DataFrame:
    """One row per run that has a report; ParseError for a report cut before its mandatory lines."""
    text = pl.col("text")
    fields = frame.filter(pl.col("is_field") | pl.col("is_version"))
    raw = fields.select("run_index", "line", *[text.str.extract(p, 1).alias(c) for c, (p, _) in FIELDS.items()])
    typed = cast_checked(path, fields, raw.drop("run_index", "line"), SUMMARY_SCHEMA).with_columns(
        raw["run_index"], raw["line"]
    )
    per_run = typed.group_by("run_index", maintain_order=True).agg(
        *[pl.col(c).drop_nulls().first() for c in FIELDS], pl.col("line").max().alias("_last")
    )
    last = frame.group_by("run_index").agg(pl.col("line").max().alias("_end"))
    per_run = per_run.join(last, on="run_index", how="left")
    reports = per_run.filter(pl.col("transaction_type").is_not_null())
    all_runs = frame["run_index"].unique().sort()
    no_report = all_runs.filter(~all_runs.is_in(reports["run_index"].to_list()))
    has_progress = frame.filter(pl.col("is_progress"))["run_index"].unique()
    for run in no_report.to_list():
        if run in has_progress.to_list() and reports.height:
            warnings.append((None, f"run {run}: progress lines but no end-of-run report (killed, or cut off?)"))
    if reports.height == 0:
        if not frame["is_progress"].any() and frame["is_version"].any():
            warnings.append((None, "no end-of-run report ('transaction type: ...'): the run did not finish"))
        return empty(SUMMARY_SCHEMA)
    checks = [pl.col(c).is_null().alias(c) for c in REQUIRED]
    completed = pl.col("transactions_processed").fill_null(0) + pl.col("skipped_transactions").fill_null(0)
    checks.append(((completed > 0) & pl.col("tps").is_null()).alias("tps"))
    missing = reports.select("_end", *checks)
    for r in missing.iter_rows(named=True):
        for col in REQUIRED:
            if r[col]:
                label = FIELDS[col][1]
                raise ParseError(
                    path, int(r["_end"]), f"truncated or not a pgbench report: no '{label}' line (the run ends here)"
                )
        if r["tps"]:
            raise ParseError(path, int(r["_end"]), "truncated pgbench report: no 'tps = ...' line (the run ends here)")
    return conform(reports, SUMMARY_SCHEMA)


def _statements(
    path: Path, frame: pl.DataFrame, warnings: list[tuple[int | None, str]]
) -> tuple[pl.DataFrame, pl.Series]:
    """The -r tables: the run of statement lines right after each 'statement latencies' header."""
    text = pl.col("text")
    f = frame.select(
        "line",
        "text",
        "run_index",
        pl.col("is_stmt_header").alias("is_header"),
        text.str.extract(STMT_HEADER, 1).alias("kind"),
        text.str.extract(STMT_HEADER, 2).cast(pl.Int64).alias("file_no"),
        text.str.extract(SCRIPT_HEADER, 1).cast(pl.Int64, strict=False).alias("script_hdr"),
    )
    if not f["is_header"].any():
        return empty(STATEMENT_SCHEMA), pl.Series("line", [], dtype=pl.Int64)
    f = f.with_columns(
        pl.col("is_header").cum_sum().alias("block"),
        pl.col("kind").forward_fill(),
        # script of a block: 'SQL script N:' before it (same run), or the header's 'file N'; 1-based there
        pl.coalesce(pl.col("file_no"), pl.col("script_hdr"))
        .forward_fill()
        .over("run_index")
        .fill_null(1)
        .sub(1)
        .alias("script_no"),
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
    if rows.height == 0:
        return empty(STATEMENT_SCHEMA), pl.Series("line", [], dtype=pl.Int64)
    parts = []
    for kind, pattern in _STMT.items():
        sub = rows.filter(pl.col("kind") == kind)
        if sub.height:
            parts.append(
                sub.select(
                    "line",
                    "text",
                    "run_index",
                    "block",
                    "script_no",
                    text.str.extract(pattern, 1).alias("latency_ms"),
                    text.str.extract(pattern, 2).replace("", None).alias("failures"),
                    text.str.extract(pattern, 3).replace("", None).alias("retries"),
                    text.str.extract(pattern, 4).alias("statement"),
                )
            )
    out = pl.concat(parts).sort("line")
    typed = cast_checked(path, out, out.select("latency_ms", "failures", "retries"), STATEMENT_SCHEMA)
    out = out.with_columns(typed).with_columns(
        (pl.col("line").rank("ordinal").over("block") - 1).cast(pl.Int64).alias("statement_no")
    )
    return conform(out, STATEMENT_SCHEMA), out["line"]
