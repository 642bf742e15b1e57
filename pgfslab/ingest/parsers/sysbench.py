"""sysbench's stdout of `sysbench <oltp_* script> ... run` (sysbench 1.0 and 1.1, any database driver):
the per-interval reports of `--report-interval`, the end-of-run report and the `--histogram`.

Intermediate reports (db_report_intermediate in src/db_driver.c, the same in 1.0 and 1.1):

    [ 1s ] thds: 2 tps: 190.82 qps: 3868.35 (r/w/o: 2713.44/765.28/389.63) lat (ms,95%): 0.84 err/s: 1.00 reconn/s: 0.00
    [ 1s ] queue length: 0, concurrency: 0          (with --rate: joined onto the interval's row)

The Lua helper `sysbench.report_default` (a script's own report hook) prints `err/s 1.00` without
the colon: read the same. `--percentile=0` prints `lat (ms,0%): 0.00`: latency_pct and latency_ms
are then null (the percentile is disabled, the 0.00 is no measurement).

End-of-run report (db_report_cumulative + sb_report_cumulative):

    SQL statistics:
        queries performed:
            read:                            9352
            write:                           2637
            other:                           1351
            total:                           13340
        transactions:                        660    (208.47 per sec.)
        queries:                             13340  (4213.70 per sec.)
        ignored errors:                      8      (2.53 per sec.)
        reconnects:                          0      (0.00 per sec.)

    General statistics:                                (1.0 and early 1.1 builds)
        total time:                          3.1652s
        total number of events:              660
    Throughput:                                        (later 1.1 builds instead)
        events/s (eps):                      208.4700
        time elapsed:                        3.1652s
        total number of events:              660

    Latency (ms):
             min:                                    0.30
             avg:                                    9.58
             max:                                 1001.96
             95th percentile:                        0.81     (`percentile stats: disabled` with --percentile=0)
             sum:                                 6324.22

    Threads fairness:
        events (avg/stddev):           330.0000/6.00
        execution time (avg/stddev):   3.1621/0.00

`--histogram` prints before the report `Latency histogram (values are in milliseconds)`, a
`value --- distribution --- count` header and one `<value> |**** <count>` line per non-empty
bucket, ascending; values are printed to 0.001 ms, so neighbouring buckets can show the same value.

A run killed before its report keeps its interval rows (the summary table is then empty, with a
warning); a report that stops before its last line (`execution time (avg/stddev)`) is truncated and
raises ParseError, as does a file with neither interval lines nor a report (e.g. the output of
`prepare`), a second report (one file must hold one run; --report-checkpoints is not supported)
and numbers beyond 64-bit integers. The header lines (`sysbench 1.0.20 ...`, `Number of threads`,
`Target transaction rate`, ...) fill the summary's version, threads and target_tps; any other
unrecognised line gives a warning.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    NUM,
    ParseError,
    Schema,
    check_finite,
    check_int64,
    conform,
    decode,
    empty,
    excerpt,
    nan_to_null,
    read_bytes,
    result,
    split_lines,
    torn_warning,
)

NAME = "sysbench"
DESCRIPTION = "sysbench 1.0/1.1 stdout of `run`: per-interval tps/qps/latency, end-of-run report, --histogram"

INTERVAL_SCHEMA: Schema = {
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
}
SUMMARY_SCHEMA: Schema = {
    "sysbench_version": pl.String,
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
}
HISTOGRAM_SCHEMA: Schema = {"value_ms": pl.Float64, "count": pl.Int64}
TABLES: dict[str, Schema] = {
    "sysbench_interval": INTERVAL_SCHEMA,
    "sysbench_summary": SUMMARY_SCHEMA,
    "sysbench_histogram": HISTOGRAM_SCHEMA,
}

_T = r"^\[ (?P<t_s>\d+(?:\.\d+)?)s \] "
INTERVAL = (
    _T + rf"thds: (?P<threads>\d+) tps: (?P<tps>{NUM}) qps: (?P<qps>{NUM}) "
    rf"\(r/w/o: (?P<qps_read>{NUM})/(?P<qps_write>{NUM})/(?P<qps_other>{NUM})\) "
    rf"lat \(ms,(?P<latency_pct>\d+)%\): (?P<latency_ms>{NUM}) "
    rf"err/s:? (?P<errors_per_s>{NUM}) reconn/s: (?P<reconnects_per_s>{NUM})$"
)
QUEUE = _T + r"queue length: (?P<queue_length>\d+), concurrency: (?P<concurrency>\d+)$"
INTERVAL_START = r"^\[ \d+(?:\.\d+)?s \] "

HIST_HEADER = r"^Latency histogram \(values are in milliseconds\)$"
HIST_COLUMNS = r"^\s*value\s+-+ distribution -+\s+count$"
HIST_ROW = rf"^\s*({NUM}) \|\**\s*(\d+)$"

_N = r"(\d+)"
_PER_SEC = rf"\s+\(({NUM}) per sec\.\)"
# column(s) -> (pattern, label for messages); one or two groups (a count and its rate)
FIELDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("sysbench_version",): (r"^sysbench (\d+\.\d+(?:\.\d+)?\S*)(?: .*)?$", "sysbench <version>"),
    ("threads",): (r"^Number of threads: (\d+)$", "Number of threads: N"),
    ("target_tps",): (rf"^Target transaction rate: ({NUM})/sec$", "Target transaction rate: N/sec"),
    ("queries_read",): (rf"^\s+read:\s+{_N}$", "read: N"),
    ("queries_write",): (rf"^\s+write:\s+{_N}$", "write: N"),
    ("queries_other",): (rf"^\s+other:\s+{_N}$", "other: N"),
    ("queries_total",): (rf"^\s+total:\s+{_N}$", "total: N"),
    ("transactions", "tps"): (rf"^\s+transactions:\s+{_N}{_PER_SEC}$", "transactions: N (X per sec.)"),
    ("_queries", "qps"): (rf"^\s+queries:\s+{_N}{_PER_SEC}$", "queries: N (X per sec.)"),
    ("ignored_errors", "ignored_errors_per_s"): (
        rf"^\s+ignored errors:\s+{_N}{_PER_SEC}$",
        "ignored errors: N (X per sec.)",
    ),
    ("reconnects", "reconnects_per_s"): (rf"^\s+reconnects:\s+{_N}{_PER_SEC}$", "reconnects: N (X per sec.)"),
    ("total_time_s",): (rf"^\s+(?:total time|time elapsed):\s+({NUM})s$", "total time: Xs"),
    ("total_events",): (rf"^\s+total number of events:\s+{_N}$", "total number of events: N"),
    ("events_per_s",): (rf"^\s+events/s \(eps\):\s+({NUM})$", "events/s (eps): X"),
    ("latency_min_ms",): (rf"^\s+min:\s+({NUM})$", "min: X"),
    ("latency_avg_ms",): (rf"^\s+avg:\s+({NUM})$", "avg: X"),
    ("latency_max_ms",): (rf"^\s+max:\s+({NUM})$", "max: X"),
    ("latency_pct", "latency_pct_ms"): (rf"^\s+(\d+)th percentile:\s+({NUM})$", "NNth percentile: X"),
    ("_pct_disabled",): (r"^\s+(percentile stats):\s+disabled$", "percentile stats: disabled"),
    ("latency_sum_ms",): (rf"^\s+sum:\s+({NUM})$", "sum: X"),
    ("events_per_thread_avg", "events_per_thread_stddev"): (
        rf"^\s+events \(avg/stddev\):\s+({NUM})/({NUM})$",
        "events (avg/stddev): X/Y",
    ),
    ("execution_time_per_thread_avg_s", "execution_time_per_thread_stddev_s"): (
        rf"^\s+execution time \(avg/stddev\):\s+({NUM})/({NUM})$",
        "execution time (avg/stddev): X/Y",
    ),
}
# the report's lines, in the order sysbench prints them: each must be there once a report starts
REQUIRED = (
    "queries_read",
    "queries_write",
    "queries_other",
    "queries_total",
    "transactions",
    "_queries",
    "ignored_errors",
    "reconnects",
    "total_time_s",
    "total_events",
    "latency_min_ms",
    "latency_avg_ms",
    "latency_max_ms",
    "latency_sum_ms",
    "events_per_thread_avg",
    "execution_time_per_thread_avg_s",
)
REPORT_START = r"^SQL statistics:$"
HEADER_LINES = [
    r"^\s*$",
    r"^Running the test with following options:$",
    r"^Report intermediate results every \d+ second",
    r"^Initializing random number generator",
    r"^Initializing worker threads\.\.\.$",
    r"^Threads started!$",
    r"^\s+queries performed:$",
    r"^(?:General statistics|Throughput|Latency \(ms\)|Threads fairness):$",
    r"^Warmup time: ",
    r"^Number of unfinished transactions on forced shutdown: ",
]

_SNIFF = re.compile(
    r"^(?:sysbench \d+\.\d+[.\d]*\S* \(using |\[ \d+s \] thds: \d+ tps: |SQL statistics:\n\s+queries "
    r"performed:)",
    re.M,
)


def sniff(head: str, path: Path) -> bool:
    return _SNIFF.search(head) is not None


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None:
        warnings.append(torn_warning(*lines.torn))
    frame = lines.frame
    text = pl.col("text")
    if frame.height == 0 or frame.select((text.str.strip_chars() == "").all()).item():
        raise ParseError(path, 1, "empty file; expected sysbench's output of `run`")
    frame = frame.with_columns(
        text.str.contains(INTERVAL).alias("is_interval"),
        text.str.contains(QUEUE).alias("is_queue"),
        text.str.contains(INTERVAL_START).alias("is_t"),
        text.str.contains(REPORT_START).alias("is_report"),
        text.str.contains(HIST_HEADER).cum_sum().alias("hist_zone"),
        text.str.contains(HIST_COLUMNS).alias("is_hist_columns"),
        text.str.contains(HIST_ROW).alias("hist_like"),
    ).with_columns((pl.col("hist_like") & (pl.col("hist_zone") > 0)).alias("is_hist"))
    reports = frame.filter(pl.col("is_report"))
    n_intervals = int(frame["is_interval"].sum())
    if reports.height == 0 and n_intervals == 0:
        first = frame.filter(text.str.strip_chars() != "").row(0, named=True)
        raise ParseError(
            path,
            first["line"],
            "not sysbench's output of `run`: no '[ Ns ] thds: ... tps: ...' "
            f"interval line and no 'SQL statistics:' report; found {excerpt(first['text'])}",
        )
    if reports.height > 1:
        raise ParseError(
            path,
            int(reports["line"][1]),
            "a second 'SQL statistics:' report: one file must hold one "
            "sysbench run (--report-checkpoints is not supported)",
        )

    stamped = int(frame["is_t"].sum())
    n_queue = int(frame["is_queue"].sum())
    if stamped and (stamped - n_intervals - n_queue) * 2 > stamped:
        bad = frame.filter(pl.col("is_t") & ~pl.col("is_interval") & ~pl.col("is_queue")).row(0, named=True)
        raise ParseError(
            path,
            bad["line"],
            f"unrecognised interval line ({stamped - n_intervals - n_queue} of "
            f"{stamped} do not parse), expected '[ Ns ] thds: N tps: X qps: X "
            f"(r/w/o: X/X/X) lat (ms,P%): X err/s: X reconn/s: X': "
            f"{excerpt(bad['text'])}",
        )
    intervals = _intervals(path, frame, warnings)
    histogram = _histogram(path, frame)
    known = (
        pl.col("is_interval")
        | pl.col("is_queue")
        | pl.col("is_report")
        | pl.col("is_hist")
        | pl.col("is_hist_columns")
        | text.str.contains(HIST_HEADER)
    )
    for pattern in HEADER_LINES:
        known = known | text.str.contains(pattern)
    summary, matched = _summary(path, frame, reports, warnings)
    frame = frame.with_columns((known | matched).alias("known"))
    for r in frame.filter(~pl.col("known") & pl.col("is_t")).iter_rows(named=True):
        warnings.append((int(r["line"]), f"interval line not understood, dropped: {excerpt(r['text'])}"))
    for r in frame.filter(~pl.col("known") & ~pl.col("is_t")).iter_rows(named=True):
        warnings.append((int(r["line"]), f"unrecognised line ignored: {excerpt(r['text'])}"))
    warnings.sort(key=lambda w: (w[0] is not None, w[0] or 0))
    return result(
        {"sysbench_interval": intervals, "sysbench_summary": summary, "sysbench_histogram": histogram}, warnings
    )


def _intervals(path: Path, frame: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> pl.DataFrame:
    text = pl.col("text")
    rows = frame.filter(pl.col("is_interval"))
    if rows.height == 0:
        return empty(INTERVAL_SCHEMA)
    raw = rows.select("line", "text", text.str.extract_groups(INTERVAL).alias("g")).unnest("g")
    check_int64(path, raw, ["threads", "latency_pct"])
    floats = [
        "t_s",
        "tps",
        "qps",
        "qps_read",
        "qps_write",
        "qps_other",
        "latency_ms",
        "errors_per_s",
        "reconnects_per_s",
    ]
    values = raw.with_columns(
        [pl.col(c).cast(pl.Float64) for c in floats] + [pl.col(c).cast(pl.Int64) for c in ("threads", "latency_pct")]
    )
    check_finite(path, values, floats)
    disabled = pl.col("latency_pct") == 0
    values = values.with_columns(nan_to_null(*floats)).with_columns(
        pl.when(disabled).then(None).otherwise(pl.col("latency_ms")).alias("latency_ms"),
        pl.when(disabled).then(None).otherwise(pl.col("latency_pct")).alias("latency_pct"),
    )
    queue = frame.filter(pl.col("is_queue"))
    if queue.height:
        q = queue.select("line", "text", text.str.extract_groups(QUEUE).alias("g")).unnest("g")
        check_int64(path, q, ["queue_length", "concurrency"])
        q = q.select(
            pl.col("t_s").cast(pl.Float64),
            pl.col("queue_length").cast(pl.Int64),
            pl.col("concurrency").cast(pl.Int64),
            pl.col("line").alias("q_line"),
            pl.col("text").alias("q_text"),
        )
        dup = q.filter(pl.col("t_s").is_duplicated()).head(1)
        if dup.height:
            raise ParseError(
                path, int(dup["q_line"][0]), f"a second queue line for the same second: {excerpt(dup['q_text'][0])}"
            )
        orphans = q.join(values.select("t_s"), on="t_s", how="anti")
        for r in orphans.iter_rows(named=True):
            warnings.append(
                (
                    int(r["q_line"]),
                    f"queue line without an interval line for {r['t_s']:g} s, dropped: {excerpt(r['q_text'])}",
                )
            )
        values = values.join(q.drop("q_line", "q_text"), on="t_s", how="left", maintain_order="left")
    return conform(values, INTERVAL_SCHEMA)


def _histogram(path: Path, frame: pl.DataFrame) -> pl.DataFrame:
    rows = frame.filter(pl.col("is_hist"))
    if rows.height == 0:
        return empty(HISTOGRAM_SCHEMA)
    raw = rows.select(
        "line",
        "text",
        pl.col("text").str.extract(HIST_ROW, 1).alias("value_ms"),
        pl.col("text").str.extract(HIST_ROW, 2).alias("count"),
    )
    check_int64(path, raw, ["count"])
    values = raw.with_columns(pl.col("value_ms").cast(pl.Float64), pl.col("count").cast(pl.Int64))
    check_finite(path, values, ["value_ms"])
    return conform(values.with_columns(nan_to_null("value_ms")), HISTOGRAM_SCHEMA)


def _summary(
    path: Path, frame: pl.DataFrame, reports: pl.DataFrame, warnings: list[tuple[int | None, str]]
) -> tuple[pl.DataFrame, pl.Expr]:
    """The one-row report (empty when the run has none) and the expression of the lines it used."""
    text = pl.col("text")
    report_line = int(reports["line"][0]) if reports.height else None
    row: dict[str, object] = {}
    matched = pl.lit(False)
    found: dict[str, int] = {}
    for cols, (pattern, label) in FIELDS.items():
        in_report = cols[0] not in ("sysbench_version", "threads", "target_tps")
        hits = frame.filter(text.str.contains(pattern))
        if in_report:
            hits = hits.filter(pl.col("line") > (report_line or 2**62))
        matched = matched | (
            text.str.contains(pattern) & ((pl.col("line") > (report_line or 2**62)) if in_report else pl.lit(True))
        )
        if hits.height == 0:
            for c in cols:
                row[c] = None
            continue
        if hits.height > 1 and in_report:
            raise ParseError(path, int(hits["line"][1]), f"'{label}' repeated: {excerpt(hits['text'][1])}")
        hits = hits.head(1)  # a header line repeated (e.g. `prepare` and `run` captured together): the first
        found[cols[0]] = int(hits["line"][0])
        for i, c in enumerate(cols, 1):
            raw = hits.select(text.str.extract(pattern, i)).item()
            dtype = SUMMARY_SCHEMA.get(c, pl.String)
            value = pl.Series([raw]).cast(dtype, strict=False)[0] if dtype != pl.String else raw
            if value is None:
                raise ParseError(path, int(hits["line"][0]), f"number out of range: {excerpt(hits['text'][0])}")
            if isinstance(value, float) and value in (float("inf"), float("-inf")):
                raise ParseError(path, int(hits["line"][0]), f"number too large: {excerpt(hits['text'][0])}")
            row[c] = value
    if report_line is None:
        warnings.append(
            (
                None,
                "no end-of-run report ('SQL statistics:'): the run was killed or its output cut; "
                "interval lines kept, sysbench_summary left empty",
            )
        )
        return empty(SUMMARY_SCHEMA), matched
    last_line = int(frame["line"][-1])
    for col in REQUIRED:
        if col not in found:
            label = next(lb for cs, (_, lb) in FIELDS.items() if cs[0] == col)
            raise ParseError(
                path,
                last_line,
                f"truncated sysbench report: no '{label}' line after 'SQL statistics:' "
                f"(line {report_line}; the file ends here)",
            )
    order = [found[c] for c in REQUIRED]
    if order != sorted(order):
        bad = REQUIRED[next(i for i in range(1, len(order)) if order[i] < order[i - 1])]
        raise ParseError(path, found[bad], "sysbench report lines out of order: not one sysbench report")
    summary = pl.DataFrame([{c: row.get(c) for c in SUMMARY_SCHEMA}], schema=SUMMARY_SCHEMA)
    summary = summary.with_columns(nan_to_null(*[c for c, t in SUMMARY_SCHEMA.items() if t == pl.Float64]))
    if summary["latency_pct"][0] == 0:
        summary = summary.with_columns(
            pl.lit(None, dtype=pl.Int64).alias("latency_pct"), pl.lit(None, dtype=pl.Float64).alias("latency_pct_ms")
        )
    return conform(summary, SUMMARY_SCHEMA), matched
