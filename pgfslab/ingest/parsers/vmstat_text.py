"""The text output of the `vmstat` command (procps 3.x/4.x), as captured: `vmstat 1`, `-n`, `-t`
(a timestamp at the end of each row, the zone's name ending the column header), `-w` (wide),
`-a` (inact/active instead of buff/cache), and pgbench-tools' `vmstat.log` (every line prefixed
`<local datetime>\\t`, rows possibly ending with a TAB). The lab's /proc/vmstat sampler log is
the `vmstat` format.

One row per data row in `vmstat_text`, columns as vmstat names them (`in` and `cs` included);
a column a layout does not print is null. `sample` numbers the rows from 1; `since_boot` marks the
file's first row (vmstat's averages since boot, not an interval; one invocation per file). Values are read by
position under the column header above them (whitespace-separated: numbers too wide for their
column still parse); a row with another number of fields is not understood. The two header lines
are parsed lines, the shell prompt running vmstat and blank lines noise.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _capture
from pgfslab.ingest.parsers._common import (
    BLANK,
    ParseError,
    Schema,
    classify,
    conform,
    prompt,
    result,
)

NAME = "vmstat-text"
DESCRIPTION = "vmstat command output (procps; -t, -w, -a, -n; pgbench-tools vmstat.log): one row per interval"

COLUMNS = (
    "r b swpd free buff cache inact active si so bi bo in cs us sy id wa st gu".split()  # noqa: SIM905
)
SCHEMA: Schema = {
    "sample": pl.Int64,
    "ts": _capture.UTC,
    "since_boot": pl.Boolean,
    **{c: pl.Int64 for c in COLUMNS},
}
TABLES: dict[str, Schema] = {"vmstat_text": SCHEMA}

GROUP_HEADER = r"^\s*-*procs-* +-+memory-+"
COLUMN_HEADER = r"^\s*r\s+b\s+swpd\s+"
ROW = r"^\s*\d+(?:\s+\d+)+(?:\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)?\s*$"
ROW_TIME = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$"

_SNIFF_GROUP = re.compile(GROUP_HEADER)
_SNIFF_COLS = re.compile(COLUMN_HEADER)


def sniff(head: str, path: Path) -> bool:
    lines = _capture.head_lines(head)
    return any(_SNIFF_GROUP.match(ln) for ln in lines) and any(_SNIFF_COLS.match(ln) for ln in lines)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines, f, warnings = _capture.read_captured(path, keep_last=True)
    body = pl.col("body")
    f = f.with_columns(
        body.str.contains(GROUP_HEADER).alias("is_group"),
        body.str.contains(COLUMN_HEADER).alias("is_cols"),
        body.str.contains(ROW).alias("row_like"),
        body.str.extract_all(r"\S+").alias("tokens"),
    )
    if not f["is_cols"].any():
        raise ParseError(path, 1, "no vmstat column header (' r  b   swpd   free ...') in the file")
    # the header in force for each line: its column names (the zone name of -t dropped), whether
    # rows end with a date and time, and whether it follows a group header with `timestamp`
    f = f.with_columns(
        pl.when(pl.col("is_group")).then(body.str.contains("timestamp")).forward_fill().alias("timed"),
        pl.when(pl.col("is_cols")).then(pl.col("line")).forward_fill().alias("header"),
    )
    headers = f.filter(pl.col("is_cols")).select(
        pl.col("line").alias("header"),
        pl.when(pl.col("timed").fill_null(False))
        .then(pl.col("tokens").list.head(pl.col("tokens").list.len() - 1))
        .otherwise(pl.col("tokens"))
        .alias("names"),
    )
    f = f.join(headers, on="header", how="left", maintain_order="left")
    n_time = pl.when(pl.col("timed").fill_null(False)).then(2).otherwise(0)
    f = f.with_columns(
        (
            pl.col("row_like")
            & pl.col("names").is_not_null()
            & (pl.col("tokens").list.len() == pl.col("names").list.len() + n_time)
        ).alias("is_row")
    )
    # a last line without a newline is data when it has all its fields (a cut time stamp does not match ROW)
    f, torn = _capture.settle_last(f, lines, "is_row", pl.lit(True))
    warnings += torn
    rows = f.filter(pl.col("is_row")).with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("sample"),
        pl.col("tokens").list.head(pl.col("names").list.len()).alias("values"),
    )
    if rows.height == 0:
        raise ParseError(path, 1, "a vmstat header but no data row under it")
    long = rows.select("line", "names", "values").explode(["names", "values"]).filter(pl.col("names").is_in(COLUMNS))
    too_big = long.filter(pl.col("values").cast(pl.Int64, strict=False).is_null()).head(1)
    if too_big.height:
        raise ParseError(path, int(too_big["line"][0]), f"value too large for a 64-bit integer: {too_big['values'][0]}")
    wide = long.with_columns(pl.col("values").cast(pl.Int64)).pivot(on="names", index="line", values="values")
    row_ts, row_exact = _capture.iso_to_utc(body.str.extract(ROW_TIME, 1))
    zone = pl.col("tokens").list.last()
    rows = rows.with_columns(
        pl.coalesce(pl.col("prefix_ts"), row_ts).alias("ts"),
        pl.when(pl.col("prefix_ts").is_not_null()).then(pl.col("prefix_exact")).otherwise(row_exact).alias("exact"),
        # vmstat's first row: averages since boot (one vmstat invocation per file)
        (pl.col("line") == pl.col("line").min()).alias("since_boot"),
    )
    tz = f.filter(pl.col("is_cols") & pl.col("timed").fill_null(False)).select(zone.alias("zone"))["zone"].unique()
    if tz.len() and set(tz.to_list()) <= {"UTC", "GMT"}:
        rows = rows.with_columns(pl.lit(True).alias("exact"))
    warnings += _capture.local_time_warning(rows, "ts", "exact")
    out = rows.select("line", "sample", "ts", "since_boot").join(wide, on="line", how="left")
    noise = body.str.contains(BLANK) | body.str.contains(prompt("vmstat"))
    kinds = classify(f, pl.col("is_row") | pl.col("is_group") | pl.col("is_cols"), noise)
    return result({"vmstat_text": conform(out, SCHEMA)}, warnings, _capture.unterminated_kind(kinds, f, "is_row"))
