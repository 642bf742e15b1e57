"""sysbench's stdout of `run`, 0.4 to 1.1, any test (OLTP, cpu, fileio, memory), as researchers
capture it: the per-interval lines of `--report-interval`, the end-of-run report, the `--histogram`,
and the lines that say how the run was set up. The layouts of each version are in
`_sysbench_lines` (one regex per line kind, from sysbench's sources and real outputs).

Tables (all with `run_index`: several runs appended to one file, a shell loop's `prepare`/`run`/
`cleanup`, stay apart):

* `sysbench_interval`: one row per interval line, whatever its version: OLTP (tps, qps, reads/writes
  per second, latency percentile, errors), 1.x cpu/memory (`eps`), 1.x fileio (MiB/s read and
  written, fsyncs/s); `--rate`'s `queue length` line joins its interval's row.
* `sysbench_summary`: one row per run with a report: the test (`oltp`, `cpu`, `fileio`, `memory`,
  from what the run printed), the version, threads, and every value of the report under the one
  column it means in every version (0.4/0.5's `total time taken by event execution` is 1.x's latency
  `sum`, stored in ms; `per-request statistics`/`response time` are 1.x's `Latency (ms)`; `Requests/sec
  executed` and `events per second` are `events_per_s`); values only one version prints have their
  own columns (0.4/0.5 `deadlocks`, `read/write requests`, `other operations`; fileio and memory
  totals and rates).
* `sysbench_histogram`: the `--histogram` buckets (`<value> |**** <count>`, ascending).
* `sysbench_options`: the lines that describe the run's set-up (fileio mode, file and block sizes,
  sync mode; 0.4's OLTP mode; the seed; memory's options; `prepare`'s files), as printed.

Runs: a `sysbench <version>` line that follows an interval or report line starts a new run. The
percentile `--percentile=0` disables prints `0.00`: latency_pct and latency_ms are then null.

Errors (ParseError, `path:line: message`): a file with neither interval lines nor a report (e.g. the
output of `prepare` alone); a report cut before one of its lines (named); a second report in one
run (--report-checkpoints is not supported); a value repeated within a report; numbers beyond 64-bit
integers; more interval-like lines that parse than not. A run killed before its report keeps its
interval rows (warning). Every line is accounted for: parsed, noise (blank lines, start/stop
messages, prepare's progress, 1.x's deprecation warnings, the shell prompt) or not understood
(wrapper banners, a garbled line: stored and shown by the ingest).
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _sysbench_lines as sb
from pgfslab.ingest.parsers._common import (
    Lines,
    ParseError,
    Schema,
    cast_checked,
    classify,
    conform,
    empty,
    excerpt,
    read_lines,
    result,
    torn_warning,
    with_torn,
)

NAME = "sysbench"
DESCRIPTION = (
    "sysbench 0.4-1.1 stdout of `run` (OLTP, cpu, fileio, memory): interval lines, end-of-run report, "
    "--histogram, set-up lines; runs appended in one file"
)

RUN_INDEX: Schema = {"run_index": pl.Int64}
INTERVAL_SCHEMA: Schema = {
    **RUN_INDEX,
    "t_s": pl.Float64,
    "threads": pl.Int64,
    "tps": pl.Float64,
    "qps": pl.Float64,
    "qps_read": pl.Float64,
    "qps_write": pl.Float64,
    "qps_other": pl.Float64,
    "latency_pct": pl.Int64,
    "latency_ms": pl.Float64,
    "errors_per_s": pl.Float64,
    "reconnects_per_s": pl.Float64,
    "queue_length": pl.Int64,
    "concurrency": pl.Int64,
    "events_per_s": pl.Float64,
    "read_mib_per_s": pl.Float64,
    "written_mib_per_s": pl.Float64,
    "fsyncs_per_s": pl.Float64,
}
SUMMARY_SCHEMA: Schema = {
    **RUN_INDEX,
    "sysbench_version": pl.String,
    "test": pl.String,
    "threads": pl.Int64,
    "target_tps": pl.Float64,
    "queries_read": pl.Int64,
    "queries_write": pl.Int64,
    "queries_other": pl.Int64,
    "queries_total": pl.Int64,
    "transactions": pl.Int64,
    "tps": pl.Float64,
    "qps": pl.Float64,
    "ignored_errors": pl.Int64,
    "ignored_errors_per_s": pl.Float64,
    "reconnects": pl.Int64,
    "reconnects_per_s": pl.Float64,
    "total_time_s": pl.Float64,
    "total_events": pl.Int64,
    "events_per_s": pl.Float64,
    "latency_min_ms": pl.Float64,
    "latency_avg_ms": pl.Float64,
    "latency_max_ms": pl.Float64,
    "latency_pct": pl.Int64,
    "latency_pct_ms": pl.Float64,
    "latency_sum_ms": pl.Float64,
    "events_per_thread_avg": pl.Float64,
    "events_per_thread_stddev": pl.Float64,
    "execution_time_per_thread_avg_s": pl.Float64,
    "execution_time_per_thread_stddev_s": pl.Float64,
    # OLTP 0.4/0.5
    "deadlocks": pl.Int64,
    "deadlocks_per_s": pl.Float64,
    "rw_requests": pl.Int64,
    "rw_requests_per_s": pl.Float64,
    "other_operations": pl.Int64,
    "other_operations_per_s": pl.Float64,
    # cpu
    "cpu_max_prime": pl.Int64,
    # fileio: 1.x rates, 0.4/0.5 totals (MiB: units of 1024)
    "file_reads_per_s": pl.Float64,
    "file_writes_per_s": pl.Float64,
    "file_fsyncs_per_s": pl.Float64,
    "file_read_mib_per_s": pl.Float64,
    "file_written_mib_per_s": pl.Float64,
    "file_reads": pl.Int64,
    "file_writes": pl.Int64,
    "file_other_ops": pl.Int64,
    "file_total_ops": pl.Int64,
    "file_read_mib": pl.Float64,
    "file_written_mib": pl.Float64,
    "file_transferred_mib": pl.Float64,
    "file_transferred_mib_per_s": pl.Float64,
    # memory 1.x
    "memory_ops": pl.Int64,
    "memory_ops_per_s": pl.Float64,
    "memory_mib": pl.Float64,
    "memory_mib_per_s": pl.Float64,
}
HISTOGRAM_SCHEMA: Schema = {**RUN_INDEX, "value_ms": pl.Float64, "count": pl.Int64}
OPTIONS_SCHEMA: Schema = {**RUN_INDEX, "line": pl.Int64, "text": pl.String}
TABLES: dict[str, Schema] = {
    "sysbench_interval": INTERVAL_SCHEMA,
    "sysbench_summary": SUMMARY_SCHEMA,
    "sysbench_histogram": HISTOGRAM_SCHEMA,
    "sysbench_options": OPTIONS_SCHEMA,
}

# the headline of a sysbench run (pgfslab.analysis.queries.headline): transactions per second, the transactions
# done, the errors it ignored, and the time measured
HEADLINE = (
    "sysbench",
    "sysbench_summary",
    """SELECT run_id, tps AS value, transactions, ignored_errors AS failed, total_time_s AS elapsed_s
       FROM sysbench_summary""",
)

_SNIFF = re.compile(
    r"^(?:sysbench \d+\.\d+[.\d]*\S*(?: \(using |:\s+multi-threaded system evaluation benchmark)"
    r"|\[ \d+s \] (?:thds: \d+ (?:tps|eps): |reads: \S+ MiB/s writes: )"
    r"|\[\s*\d+s\] threads: \d+, tps: "
    r"|(?:SQL|OLTP test) statistics:\n\s+queries performed:)",
    re.M,
)
_UNIT_MIB = {"": 1 / 1024**2, "K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0**2}


def sniff(head: str, path: Path) -> bool:
    return _SNIFF.search(head.replace("\r\n", "\n")) is not None


def _any(patterns: list[str]) -> pl.Expr:
    return pl.any_horizontal([pl.col("text").str.contains(p) for p in patterns])


_WHOLE = [re.compile(p) for p in (*sb.INTERVALS.values(), sb.QUEUE, *(f.pattern for f in sb.FIELDS))]
_DECIMALS = re.compile(r"\d\.(\d+)")
_ENDS_IN_NUMBER = re.compile(r"\d(?:\.(\d*))?$")


def complete_last_line(text: str) -> bool:
    """Whether a last line without a newline is whole for its layout: an interval line or a report field
    whose last number, when it ends in one and the line has decimals, has at least the two decimals every
    sysbench float has (%.2f, %.3f, %.4f): a cut `0.0` of `0.00`, or `4` of `4.57`, is torn. (A cut from three
    or four decimals down to two cannot be told.)"""
    t = text.removesuffix("\r")
    if not any(r.search(t) for r in _WHOLE):
        return False
    end = _ENDS_IN_NUMBER.search(t)
    if end is None or not _DECIMALS.search(t):
        return True
    return len(end.group(1) or "") >= 2


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines = read_lines(path)
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None and complete_last_line(lines.torn[1]):
        # a whole interval or report line that lost only its newline (a capture by command substitution, a
        # paste): data, like the others
        no, last = lines.torn
        tail = pl.DataFrame({"line": [no], "text": [last.removesuffix("\r")]}, schema=lines.frame.schema)
        lines = Lines(pl.concat([lines.frame, tail]), None)
    elif lines.torn is not None:
        warnings.append(torn_warning(*lines.torn))
    text = pl.col("text")
    frame = lines.frame
    if frame.height == 0 or frame.select((text.str.strip_chars() == "").all()).item():
        raise ParseError(path, 1, "empty file; expected sysbench's output of `run`")
    report_field = pl.any_horizontal([text.str.contains(f.pattern) for f in sb.FIELDS if not f.header])
    f = frame.with_columns(
        _any(list(sb.INTERVALS.values())).alias("is_interval"),
        text.str.contains(sb.QUEUE).alias("is_queue"),
        text.str.contains(sb.INTERVAL_START).alias("is_t"),
        text.str.contains(sb.VERSION).alias("is_version"),
        text.str.contains(sb.REPORT_START).alias("is_report"),
        text.str.contains(sb.SECTIONS).alias("is_section"),
        report_field.alias("is_field"),
        _any([f.pattern for f in sb.FIELDS if f.header]).alias("is_header"),
        text.str.contains(sb.HIST_HEADER).cum_sum().alias("hist_zone"),
        text.str.contains(sb.HIST_COLUMNS).alias("is_hist_columns"),
        _any(sb.OPTIONS).alias("is_option"),
        _any(sb.NOISE).alias("is_noise"),
    ).with_columns((text.str.contains(sb.HIST_ROW) & (pl.col("hist_zone") > 0)).alias("is_hist"))
    n_intervals = int(f["is_interval"].sum())
    if n_intervals == 0 and not f["is_field"].any():
        first = f.filter(text.str.strip_chars() != "").row(0, named=True)
        raise ParseError(
            path,
            first["line"],
            "not sysbench's output of `run`: no '[ Ns ] ...' interval line and no end-of-run report "
            f"('SQL statistics:', 'General statistics:', ...); found {excerpt(first['text'])}",
        )
    _check_interval_lines(path, f)
    f = _runs(f)
    _check_one_report_per_run(path, f)

    intervals = _intervals(path, f, warnings)
    summary = _summary(path, f, warnings)
    histogram = _histogram(path, f)
    options = f.filter(pl.col("is_option")).select("run_index", "line", "text")

    parsed = pl.any_horizontal(
        "is_interval",
        "is_queue",
        "is_version",
        "is_section",
        "is_field",
        "is_header",
        "is_hist",
        "is_hist_columns",
        "is_option",
    )
    kinds = with_torn(classify(f, parsed, pl.col("is_noise")), lines)
    for r in f.filter(pl.col("is_t") & ~pl.col("is_interval") & ~pl.col("is_queue")).iter_rows(named=True):
        warnings.append(
            (int(r["line"]), f"interval line not understood ({sb.INTERVAL_EXPECTED}): {excerpt(r['text'])}")
        )
    warnings.sort(key=lambda w: (w[0] is not None, w[0] or 0))
    return result(
        {
            "sysbench_interval": intervals,
            "sysbench_summary": summary,
            "sysbench_histogram": histogram,
            "sysbench_options": conform(options, OPTIONS_SCHEMA),
        },
        warnings,
        kinds,
    )


def _check_interval_lines(path: Path, f: pl.DataFrame) -> None:
    """ParseError when most `[ Ns ]` lines are in no known layout (a layout this parser lacks)."""
    stamped = int(f["is_t"].sum())
    bad = f.filter(pl.col("is_t") & ~pl.col("is_interval") & ~pl.col("is_queue"))
    if stamped and bad.height * 2 > stamped:
        raise ParseError(
            path,
            int(bad["line"][0]),
            f"unrecognised interval line ({bad.height} of {stamped} do not parse), {sb.INTERVAL_EXPECTED}: "
            f"{excerpt(bad['text'][0])}",
        )


def _runs(f: pl.DataFrame) -> pl.DataFrame:
    """`run_index` on every line: a version line after an interval or report line starts a run;
    other lines belong to the run of the line before them."""
    body = pl.any_horizontal("is_interval", "is_queue", "is_field", "is_report", "is_hist")
    markers = f.filter(pl.col("is_version") | body).select("line", body.alias("body"))
    markers = markers.with_columns(
        (pl.col("body").shift(1, fill_value=False) & ~pl.col("body")).cast(pl.Int64).cum_sum().add(1).alias("run")
    )
    out = f.join(markers.select("line", "run"), on="line", how="left", maintain_order="left")
    return out.with_columns(pl.col("run").forward_fill().fill_null(1).alias("run_index")).drop("run")


def _check_one_report_per_run(path: Path, f: pl.DataFrame) -> None:
    starts = f.filter(pl.col("is_report")).with_columns(pl.int_range(pl.len()).over("run_index").alias("nth"))
    second = starts.filter(pl.col("nth") == 1)
    if second.height:
        raise ParseError(
            path,
            int(second["line"][0]),
            f"a second {second['text'][0]!r} report in one run (no `sysbench <version>` line between): "
            "--report-checkpoints is not supported",
        )


def _intervals(path: Path, f: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> pl.DataFrame:
    text = pl.col("text")
    parts = []
    for pattern in sb.INTERVALS.values():
        rows = f.filter(text.str.contains(pattern))
        if rows.height:
            raw = rows.select(text.str.extract_groups(pattern).alias("g")).unnest("g")
            parts.append(cast_checked(path, rows, raw, INTERVAL_SCHEMA).with_columns(rows["run_index"], rows["line"]))
    if not parts:
        return empty(INTERVAL_SCHEMA)
    values = pl.concat(parts, how="diagonal_relaxed").sort("line")
    disabled = pl.col("latency_pct") == 0  # --percentile=0
    values = values.with_columns(
        pl.when(disabled).then(None).otherwise(pl.col("latency_ms")).alias("latency_ms"),
        pl.when(disabled).then(None).otherwise(pl.col("latency_pct")).alias("latency_pct"),
    )
    queue = f.filter(pl.col("is_queue"))
    if queue.height:
        raw = queue.select(text.str.extract_groups(sb.QUEUE).alias("g")).unnest("g")
        q = cast_checked(path, queue, raw, {"t_s": pl.Float64, "queue_length": pl.Int64, "concurrency": pl.Int64})
        q = q.with_columns(queue["run_index"], queue["line"].alias("q_line"), queue["text"].alias("q_text"))
        dup = q.filter(pl.struct("run_index", "t_s").is_duplicated()).head(1)
        if dup.height:
            raise ParseError(
                path, int(dup["q_line"][0]), f"a second queue line for the same second: {excerpt(dup['q_text'][0])}"
            )
        orphans = q.join(values.select("run_index", "t_s"), on=["run_index", "t_s"], how="anti")
        for r in orphans.iter_rows(named=True):
            warnings.append(
                (
                    int(r["q_line"]),
                    f"queue line without an interval line for {r['t_s']:g} s, dropped: {excerpt(r['q_text'])}",
                )
            )
        values = values.join(q.drop("q_line", "q_text"), on=["run_index", "t_s"], how="left", maintain_order="left")
    return conform(values, INTERVAL_SCHEMA)


def _histogram(path: Path, f: pl.DataFrame) -> pl.DataFrame:
    rows = f.filter(pl.col("is_hist"))
    if rows.height == 0:
        return empty(HISTOGRAM_SCHEMA)
    raw = rows.select(
        pl.col("text").str.extract(sb.HIST_ROW, 1).alias("value_ms"),
        pl.col("text").str.extract(sb.HIST_ROW, 2).alias("count"),
    )
    values = cast_checked(path, rows, raw, HISTOGRAM_SCHEMA).with_columns(rows["run_index"])
    return conform(values, HISTOGRAM_SCHEMA)


def _field_values(path: Path, f: pl.DataFrame) -> pl.DataFrame:
    """Every field's value as text, long: run_index, line, text, column, value, header."""
    text = pl.col("text")
    parts = []
    for fld in sb.FIELDS:
        hits = f.filter(text.str.contains(fld.pattern))
        if hits.height == 0:
            continue
        value = text.str.extract(fld.pattern, fld.group)
        if fld.unit is not None:  # a size with its unit: in MiB
            unit = text.str.extract(fld.pattern, fld.unit).replace_strict(_UNIT_MIB, return_dtype=pl.Float64)
            value = (value.cast(pl.Float64, strict=False) * unit).cast(pl.String)
        elif fld.scale != 1.0:
            value = (value.cast(pl.Float64, strict=False) * fld.scale).cast(pl.String)
        parts.append(
            hits.select(
                "run_index",
                "line",
                "text",
                pl.lit(fld.column).alias("column"),
                value.alias("value"),
                pl.lit(fld.header).alias("header"),
                pl.lit(fld.label).alias("label"),
            )
        )
    if not parts:
        return pl.DataFrame(
            schema={
                "run_index": pl.Int64,
                "line": pl.Int64,
                "text": pl.String,
                "column": pl.String,
                "value": pl.String,
                "header": pl.Boolean,
                "label": pl.String,
            }
        )
    return pl.concat(parts).sort("line", "column")


def _summary(path: Path, f: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> pl.DataFrame:
    """One row per run that has a report; ParseError for a report cut before one of its lines."""
    long = _field_values(path, f)
    report = long.filter(~pl.col("header"))
    twice = report.filter(pl.struct("run_index", "column").is_duplicated())
    if twice.height:
        again = twice.filter(~pl.struct("run_index", "column").is_first_distinct()).row(0, named=True)
        raise ParseError(path, again["line"], f"'{again['label']}' repeated in one report: {excerpt(again['text'])}")
    runs_with_report = report["run_index"].unique().sort()
    runs_with_intervals = f.filter(pl.col("is_interval"))["run_index"].unique()
    for run in runs_with_intervals.filter(~runs_with_intervals.is_in(runs_with_report.to_list())).to_list():
        warnings.append(
            (
                None,
                f"run {run}: no end-of-run report: the run was killed or its output cut; "
                "interval lines kept, no sysbench_summary row",
            )
        )
    if runs_with_report.len() == 0:
        return empty(SUMMARY_SCHEMA)
    first = long.filter(pl.col("run_index").is_in(runs_with_report.to_list())).unique(
        ["run_index", "column"], keep="first", maintain_order=True
    )
    for run in runs_with_report.to_list():
        _check_complete(path, f, first.filter(pl.col("run_index") == run), run)
    _check_numbers(path, first)
    wide = first.pivot(on="column", index="run_index", values="value", aggregate_function="first")
    typed = wide.with_columns(
        pl.col(c).cast(t) for c, t in SUMMARY_SCHEMA.items() if c in wide.columns and t != pl.String
    ).join(_tests(f), on="run_index", how="left")
    # `percentile stats: disabled` (1.1) or a 0th percentile (1.0) with --percentile=0: no measurement
    disabled = pl.col("_pct_disabled").is_not_null() if "_pct_disabled" in typed.columns else pl.lit(False)
    off_rows = typed.sort("run_index").with_columns(disabled.alias("_off"))
    out = conform(off_rows, SUMMARY_SCHEMA).with_columns(off_rows["_off"])
    off = pl.col("_off") | (pl.col("latency_pct") == 0).fill_null(False)
    return out.with_columns(
        pl.when(off).then(None).otherwise(pl.col(c)).alias(c) for c in ("latency_pct", "latency_pct_ms")
    ).drop("_off")


def _check_numbers(path: Path, fields: pl.DataFrame) -> None:
    """ParseError at the first value that does not fit its column (beyond 64 bits, or a double)."""
    ints = [c for c, t in SUMMARY_SCHEMA.items() if t == pl.Int64]
    value = pl.col("value")
    int_bad = pl.when(pl.col("column").is_in(ints)).then(value.cast(pl.Int64, strict=False).is_null())
    bad = int_bad.otherwise(
        pl.col("column").is_in([c for c, t in SUMMARY_SCHEMA.items() if t == pl.Float64])
        & value.cast(pl.Float64, strict=False).is_infinite()
    )
    over = fields.filter(value.is_not_null() & bad)
    if over.height:
        raise ParseError(path, int(over["line"][0]), f"number out of range: {excerpt(over['text'][0])}")


def _tests(f: pl.DataFrame) -> pl.DataFrame:
    """run_index -> the test it ran (`oltp`, `cpu`, `fileio`, `memory`), from the first line that says."""
    text = pl.col("text")
    test = pl.lit(None, dtype=pl.String)
    for pattern, name in reversed(sb.TESTS):
        test = pl.when(text.str.contains(pattern)).then(pl.lit(name)).otherwise(test)
    return (
        f.select("run_index", test.alias("test"))
        .drop_nulls("test")
        .unique("run_index", keep="first", maintain_order=True)
    )


def _check_complete(path: Path, f: pl.DataFrame, fields: pl.DataFrame, run: int) -> None:
    """ParseError when a run's report lacks one of its lines or has them out of order."""
    found = dict(fields.select("column", "line").iter_rows())
    run_lines = f.filter(pl.col("run_index") == run)
    old = run_lines.select(pl.col("text").str.contains(sb.OLD_TAIL_MARK).any()).item()
    required = list(sb.TAIL_OLD if old else sb.TAIL_1X)
    starts = run_lines.filter(pl.col("is_report"))["text"].to_list()
    if starts:
        required = list(sb.OLTP_1X if starts[0].startswith("SQL") else sb.OLTP_OLD) + required
    end = int(run_lines["line"].max())  # type: ignore[arg-type]
    for col in required:
        if col not in found:
            label = next(fl.label for fl in sb.FIELDS if fl.column == col)
            raise ParseError(path, end, f"truncated sysbench report: no '{label}' line (run {run} ends here)")
    order = [found[c] for c in required]
    if order != sorted(order):
        bad = required[next(i for i in range(1, len(order)) if order[i] < order[i - 1])]
        raise ParseError(path, found[bad], "sysbench report lines out of order: not one sysbench report")
