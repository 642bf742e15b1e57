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

from pgfslab.ingest.parsers import _capture, _zones
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
OPTIONS = ("tz",)  # parse() options the ingest passes on (pgfslab ingest --tz)
DESCRIPTION = "vmstat command output (procps; -t, -w, -a, -n; pgbench-tools vmstat.log): one row per interval"

COLUMNS = (
    "r b swpd free buff cache inact active si so bi bo in cs us sy id wa st gu".split()  # noqa: SIM905
)
SCHEMA: Schema = {
    "sample": pl.Int64,
    "ts": _capture.UTC,
    "tz": pl.String,  # the zone the time stamp was read in: "JST (+09:00)", "Asia/Shanghai (--tz)"
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


def _times(
    path: Path, f: pl.DataFrame, rows: pl.DataFrame, tz: str | None
) -> tuple[pl.DataFrame, list[tuple[int | None, str]]]:
    """`ts` (UTC) and `tz` (the zone it was read in) of every row: a capture prefix's time, else the row's
    -t time stamp in the zone its header names, resolved when unambiguous, else in the user's `tz`;
    without either a ParseError at the header (never a silent shift). A prefix without a zone is read in
    `tz` when given, else stored as if UTC with the local-time warning."""
    warnings: list[tuple[int | None, str]] = []
    user = None
    if tz is not None:
        try:
            user = _zones.user_zone(tz)
        except ValueError as exc:
            raise ParseError(path, None, str(exc)) from None
    naive = pl.col("body").str.extract(ROW_TIME, 1).str.to_datetime("%Y-%m-%d %H:%M:%S", strict=False, time_unit="us")
    rows = rows.with_columns(naive.alias("_row_t"), pl.lit(None, dtype=_capture.UTC).alias("ts"))
    rows = rows.with_columns(pl.lit(None, dtype=pl.String).alias("tz"))
    parts = []
    headers = f.filter(pl.col("is_cols")).select("line", pl.col("tokens").list.last().alias("zone"), "timed")
    for h_line, name, timed in headers.iter_rows():
        part = rows.filter(pl.col("header") == h_line)
        if part.height == 0:
            continue
        zone = None
        if timed and part["_row_t"].is_not_null().any():
            zone = _zones.resolve(name)
            if zone is None and user is None:
                raise ParseError(
                    path,
                    h_line,
                    f"{_zones.why_not(name)}: the vmstat -t time stamps cannot be placed in time; "
                    "name the zone with --tz (an IANA name like Asia/Shanghai, or an offset like +08:00)",
                )
            if zone is None:
                zone = user
            elif user is not None and user.label.split(" ")[0] != name:
                warnings.append((h_line, f"--tz {tz} not used for these rows: the vmstat -t header names {zone.label}"))
        row_ts = zone.to_utc(pl.col("_row_t")) if zone is not None else pl.lit(None, dtype=_capture.UTC)
        prefix_local = pl.col("prefix_ts").is_not_null() & ~pl.col("prefix_exact")
        prefix_ts = (
            pl.when(prefix_local).then(user.to_utc(pl.col("prefix_ts"))).otherwise(pl.col("prefix_ts"))
            if user is not None
            else pl.col("prefix_ts")
        )
        part = part.with_columns(
            pl.coalesce(prefix_ts, row_ts).alias("ts"),
            pl.when(pl.col("prefix_ts").is_not_null())
            .then(pl.col("prefix_exact") | pl.lit(user is not None))
            .otherwise(pl.lit(zone is not None))
            .alias("exact"),
            pl.when(pl.col("prefix_ts").is_not_null())
            .then(
                pl.when(pl.col("prefix_exact"))
                .then(pl.lit("as prefixed"))
                .otherwise(pl.lit(user.label if user else "none: stored as UTC"))
            )
            .otherwise(pl.lit(zone.label if zone is not None else None))
            .alias("tz"),
        )
        parts.append(part)
    rows = pl.concat(parts, how="vertical_relaxed").sort("line") if parts else rows
    rows = rows.with_columns(pl.when(pl.col("ts").is_null()).then(None).otherwise(pl.col("tz")).alias("tz"))
    warnings += _capture.local_time_warning(rows, "ts", "exact")
    return rows, warnings


def parse(path: Path, tz: str | None = None) -> dict[str, pl.DataFrame]:
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
    rows = rows.with_columns(
        # vmstat's first row: averages since boot (one vmstat invocation per file)
        (pl.col("line") == pl.col("line").min()).alias("since_boot"),
    )
    rows, zone_warnings = _times(path, f, rows, tz)
    warnings += zone_warnings
    out = rows.select("line", "sample", "ts", "tz", "since_boot").join(wide, on="line", how="left")
    noise = body.str.contains(BLANK) | body.str.contains(prompt("vmstat"))
    kinds = classify(f, pl.col("is_row") | pl.col("is_group") | pl.col("is_cols"), noise)
    return result({"vmstat_text": conform(out, SCHEMA)}, warnings, _capture.unterminated_kind(kinds, f, "is_row"))
