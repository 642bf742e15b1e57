"""Helpers for the OS-statistics logs people capture themselves (`cat /proc/meminfo` in a loop,
`vmstat`, `iostat -x`, pgbench-tools' collectors): the time stamps they carry and the prefixes
that wrappers put before every line.

Time stamps (all vectorized, as polars expressions on a String column):

* a prefix on every line: pgbench-tools' `str(datetime.now())` + TAB (`2015-01-03 16:40:43.758519\t`,
  local time, no zone) or an ISO time + space (`2026-11-23T23:54:02+00:00 `, `sed "s/^/$ts /"`);
* a line of its own: `date` (`Mon Nov 23 23:53:56 UTC 2026`), `date +%s` (epoch seconds), ISO
  (`2026-11-23T23:54:09+0000`), iostat -t's `11/23/26 23:53:56` / `11/23/2026 11:53:56 PM`.

Times with a zone offset, epoch seconds, or a `date` line in UTC/GMT are exact; a local time
without a zone (pgbench-tools, iostat -t, `date` in another zone) is stored as if it were UTC and
the parser says so in a warning (`LOCAL_TIME_WARNING`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

UTC = pl.Datetime("us", "UTC")

# pgbench-tools' `YYYY-MM-DD HH:MM:SS.ffffff<TAB>` or an ISO time and a space, before every line
PREFIX = (
    r"^(?P<pfx>\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)"
    r"(?:\t| )"
)
EPOCH_LINE = r"^\s*(\d{9,11}(?:\.\d{1,9})?)\s*$"
_DAYS = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)"
_MONTHS = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
# `date` (C locale): `Mon Nov 23 23:53:56 UTC 2026`
DATE_LINE = rf"^(?:Timestamp: )?{_DAYS} ({_MONTHS}) +(\d{{1,2}}) (\d\d:\d\d:\d\d) (?:([A-Z][A-Za-z0-9+-]*) )?(\d{{4}})$"
ISO_LINE = r"^(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)$"
# iostat -t (and sar): `11/23/26 23:53:56`, `11/23/2026 11:53:56 PM`
SLASH_LINE = r"^(\d\d/\d\d/\d{2,4} \d\d:\d\d:\d\d(?: [AP]M)?)$"
TIME_LINE = rf"{EPOCH_LINE}|{DATE_LINE}|{ISO_LINE}|{SLASH_LINE}"

LOCAL_TIME_WARNING = "time stamps without a time zone (local time of the machine): stored as if UTC"


def iso_to_utc(col: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(timestamp in UTC, whether it had a zone) of ISO-like text: `YYYY-MM-DD[T ]HH:MM:SS[.f][zone]`."""
    s = col.str.replace(",", ".").str.replace(r"Z$", "+00:00").str.replace(r"([+-]\d\d)(\d\d)$", "$1:$2")
    s = s.str.replace(" ", "T")
    has_zone = s.str.contains(r"[+-]\d\d:\d\d$")
    with_zone = s.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f%:z", strict=False, time_unit="us", time_zone="UTC")
    naive = s.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="us").dt.replace_time_zone("UTC")
    return pl.when(has_zone).then(with_zone).otherwise(naive), has_zone


def time_line(col: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """(timestamp in UTC, exact: it carried a zone or is epoch) of a line matching TIME_LINE."""
    epoch = col.str.extract(EPOCH_LINE, 1).cast(pl.Float64, strict=False)
    epoch_ts = (epoch * 1_000_000).round(0).cast(pl.Int64).cast(UTC)
    month, day, clock, zone, year = (col.str.extract(DATE_LINE, i) for i in (1, 2, 3, 4, 5))
    date_ts = (
        pl.concat_str([year, month, day.str.pad_start(2, "0"), clock], separator=" ")
        .str.to_datetime("%Y %b %d %H:%M:%S", strict=False, time_unit="us")
        .dt.replace_time_zone("UTC")
    )
    date_exact = zone.is_in(["UTC", "GMT", "Z"]).fill_null(False)
    iso_ts, iso_exact = iso_to_utc(col.str.extract(ISO_LINE, 1))
    slash = col.str.extract(SLASH_LINE, 1)
    slash_ts = pl.coalesce(
        slash.str.to_datetime("%m/%d/%y %H:%M:%S", strict=False, time_unit="us"),
        slash.str.to_datetime("%m/%d/%Y %H:%M:%S", strict=False, time_unit="us"),
        slash.str.to_datetime("%m/%d/%y %I:%M:%S %p", strict=False, time_unit="us"),
        slash.str.to_datetime("%m/%d/%Y %I:%M:%S %p", strict=False, time_unit="us"),
    ).dt.replace_time_zone("UTC")
    ts = pl.coalesce(epoch_ts, date_ts, iso_ts, slash_ts)
    exact = (
        pl.when(epoch.is_not_null())
        .then(True)
        .when(date_ts.is_not_null())
        .then(date_exact)
        .when(iso_ts.is_not_null())
        .then(iso_exact)
        .otherwise(False)
    )
    return ts, exact


def split_prefix(frame: pl.DataFrame) -> pl.DataFrame:
    """Add `body` (the line without a time-stamp prefix), `prefix_ts` (UTC, null without a
    prefix) and `prefix_exact` (the prefix had a zone) to a frame of `line`, `text`."""
    text = pl.col("text")
    pfx = text.str.extract(PREFIX, 1)
    ts, exact = iso_to_utc(pfx)
    return frame.with_columns(
        pl.when(pfx.is_not_null()).then(text.str.replace(PREFIX, "")).otherwise(text).alias("body"),
        ts.alias("prefix_ts"),
        (exact & pfx.is_not_null()).alias("prefix_exact"),
    )


def local_time_warning(frame: pl.DataFrame, ts: str, exact: str) -> list[tuple[int | None, str]]:
    """The warning when some time stamp used (`ts` not null) had no zone (`exact` false)."""
    local = frame.select((pl.col(ts).is_not_null() & ~pl.col(exact).fill_null(False)).any()).item()
    return [(None, LOCAL_TIME_WARNING)] if local else []


_PREFIX_RE = re.compile(PREFIX)


def head_lines(head: str) -> list[str]:
    """The lines of a file's first KB without the capture prefixes (`sniff` looks at what the tool wrote)."""
    return [_PREFIX_RE.sub("", ln.rstrip("\r")) for ln in head.split("\n")]


def read_captured(path: Path, *, keep_last: bool = False) -> tuple[Any, pl.DataFrame, list[tuple[int | None, str]]]:
    """A captured log as read (`_common.read_lines`: for the line accounting), its lines with their
    prefixes split off (`split_prefix`), and the warning about a torn last line when there is one: what
    every capture parser starts from. With `keep_last` a last line without a newline stays in the frame
    (column `unterminated` marks it) and no warning is made: the parser decides, with `settle_last`,
    whether it is complete for its layout (data) or torn."""
    from pgfslab.ingest.parsers._common import read_lines, torn_warning

    lines = read_lines(Path(path))
    frame = lines.frame
    if keep_last and lines.torn is not None:
        no, text = lines.torn
        last = pl.DataFrame({"line": [no], "text": [text.removesuffix("\r")]}, schema=frame.schema)
        frame = pl.concat([frame, last])
    torn_no = lines.torn[0] if keep_last and lines.torn is not None else -1
    warnings: list[tuple[int | None, str]] = (
        [torn_warning(*lines.torn)] if lines.torn is not None and not keep_last else []
    )
    out = split_prefix(frame).with_columns((pl.col("line") == torn_no).alias("unterminated"))
    return lines, out, warnings


def complete_decimals(body: pl.Expr) -> pl.Expr:
    """Whether a row's last number is not cut short: if it has decimals, as many as the row's other
    decimal numbers (sysstat prints every rate and percentage with the same number of decimals)."""
    last = body.str.extract(r"[.,](\d+)\s*$", 1).str.len_chars()
    widest = body.str.extract_all(r"[.,]\d+").list.eval(pl.element().str.len_chars() - 1).list.max()
    return last.is_null() | (last >= widest)


def settle_last(
    f: pl.DataFrame, lines: Any, is_row: str, complete: pl.Expr
) -> tuple[pl.DataFrame, list[tuple[int | None, str]]]:
    """The last line without a newline (`unterminated`, see `read_captured`) stays a row only when it is
    `complete` for its layout; otherwise `is_row` is cleared for it and the torn-line warning returned
    (the accounting then counts it not understood: `unterminated_kind`)."""
    from pgfslab.ingest.parsers._common import torn_warning

    if lines.torn is None:
        return f, []
    f = f.with_columns((pl.col(is_row) & (~pl.col("unterminated") | complete.fill_null(False))).alias(is_row))
    kept = f.filter(pl.col("unterminated") & pl.col(is_row)).height > 0
    return f, ([] if kept else [torn_warning(*lines.torn)])


def unterminated_kind(kinds: pl.DataFrame, f: pl.DataFrame, is_row: str) -> pl.DataFrame:
    """The accounting with a torn last line (unterminated, not a row) counted as not understood."""
    from pgfslab.ingest.parsers._common import NOT_UNDERSTOOD

    torn = f.filter(pl.col("unterminated") & ~pl.col(is_row))["line"].to_list()
    if not torn:
        return kinds
    return kinds.with_columns(
        pl.when(pl.col("line").is_in(torn)).then(pl.lit(NOT_UNDERSTOOD)).otherwise(pl.col("kind")).alias("kind")
    )
