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


def read_captured(path: Path) -> tuple[Any, pl.DataFrame, list[tuple[int | None, str]]]:
    """A captured log as read (`_common.read_lines`: for the line accounting), its lines with their
    prefixes split off (`split_prefix`), and the warning about a torn last line when there is one: what
    every capture parser starts from."""
    from pgfslab.ingest.parsers._common import read_lines, torn_warning

    lines = read_lines(Path(path))
    warnings: list[tuple[int | None, str]] = [torn_warning(*lines.torn)] if lines.torn is not None else []
    return lines, split_prefix(lines.frame), warnings
