"""/proc/meminfo as people collect it without the lab's sampler (the lab's `@ <epoch>` layout is
the `meminfo` format):

* a single `cat /proc/meminfo` (one sample, no time);
* snapshots appended by a loop with a time line before each: `date` output
  (`Mon Nov 23 23:53:56 UTC 2026`, also after `Timestamp: `), `date +%s`, an ISO time;
* an ISO time prefixed to every line (`sed "s/^/$(date -Iseconds) /" /proc/meminfo`);
* pgbench-tools' `meminfo.log` (`timed-os-stats meminfo`): `<local datetime>\\t<Key>\\t<value>`, with
  `:` and `kB` stripped (the unit is put back: kB for every key but `HugePages_*`);
* such snapshots inside a wrapper's report (banners and other commands' output around them: not
  understood, counted and shown).

Rows go to the `meminfo` table (ts, key, kb, unit, sample): a sample starts at a time line, or at
the first key of the file seen again (every snapshot of /proc/meminfo starts with MemTotal).
`ts` is null when the capture has no time. See `_capture` for the time stamps (local times
without a zone are stored as if UTC, with a warning).
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
    check_int64,
    classify,
    conform,
    result,
)
from pgfslab.ingest.parsers.meminfo import SCHEMA

NAME = "meminfo-capture"
DESCRIPTION = (
    "/proc/meminfo captured by hand or by pgbench-tools: single cat, loops with date/epoch/ISO times, "
    "ISO-prefixed lines, pgbench-tools meminfo.log"
)
TABLES: dict[str, Schema] = {"meminfo": SCHEMA}

ENTRY = r"^([A-Za-z][A-Za-z0-9_()]*):[ \t]+(\d+)(?: (kB))?[ \t]*$"
TAB_ENTRY = r"^([A-Za-z][A-Za-z0-9_()]*)\t(\d+)$"  # pgbench-tools: `:` and ` kB` stripped
NO_UNIT = r"^HugePages_"

_SNIFF_ENTRY = re.compile(r"^[A-Za-z][A-Za-z0-9_()]*(?::[ \t]+|\t)\d+(?: kB)?[ \t]*$")


def sniff(head: str, path: Path) -> bool:
    lines = _capture.head_lines(head)
    hits = [ln for ln in lines if _SNIFF_ENTRY.match(ln)]
    return len(hits) >= 3 and any(ln.startswith("MemTotal") for ln in hits)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines, f, warnings = _capture.read_captured(path, keep_last=True)
    body = pl.col("body")
    time_ts, time_exact = _capture.time_line(body)
    key = pl.coalesce(body.str.extract(ENTRY, 1), body.str.extract(TAB_ENTRY, 1))
    f = f.with_columns(
        key.alias("key"),
        pl.coalesce(body.str.extract(ENTRY, 2), body.str.extract(TAB_ENTRY, 2)).alias("raw"),
        pl.when(body.str.contains(TAB_ENTRY))
        .then(pl.when(key.str.contains(NO_UNIT)).then(None).otherwise(pl.lit("kB")))
        .otherwise(body.str.extract(ENTRY, 3))
        .alias("unit"),
        body.str.contains(_capture.TIME_LINE).alias("is_time"),
        pl.when(body.str.contains(_capture.TIME_LINE)).then(time_ts).alias("time_ts"),
        pl.when(body.str.contains(_capture.TIME_LINE)).then(time_exact).alias("time_exact"),
    ).with_columns(pl.col("key").is_not_null().alias("is_entry"))
    # a last line without a newline is data when whole: its ` kB` printed (or a key that has no unit)
    complete = pl.col("unit").is_not_null() | pl.col("key").str.contains(NO_UNIT)
    f, torn = _capture.settle_last(f, lines, "is_entry", complete)
    warnings += torn
    entries = f.filter(pl.col("is_entry"))
    if entries.height == 0:
        raise ParseError(path, 1, "no /proc/meminfo line ('Key:  <number> [kB]') in the file")
    first_key = entries["key"][0]
    marks = f.filter(pl.col("is_entry") | pl.col("is_time")).with_columns(
        (pl.col("is_time") | ((pl.col("key") == first_key) & ~pl.col("is_time").shift(1, fill_value=False))).alias(
            "start"
        )
    )
    marks = marks.with_columns(
        (pl.col("start").cum_sum() + pl.lit(0 if marks["start"][0] else 1)).cast(pl.Int64).alias("sample"),
        pl.col("time_ts").forward_fill().alias("_time"),
        pl.col("time_exact").forward_fill().alias("_exact"),
    ).with_columns(
        # a time line belongs to the sample it opens; an entry takes its own prefix, else the sample's time
        pl.coalesce(pl.col("prefix_ts"), pl.col("_time").forward_fill().over("sample")).alias("ts"),
        pl.when(pl.col("prefix_ts").is_not_null())
        .then(pl.col("prefix_exact"))
        .otherwise(pl.col("_exact"))
        .alias("exact"),
    )
    rows = marks.filter(pl.col("is_entry"))
    check_int64(path, rows, ["raw"])
    warnings += _capture.local_time_warning(rows, "ts", "exact")
    out = rows.with_columns(pl.col("raw").cast(pl.Int64).alias("kb"))
    kinds = classify(f, pl.col("is_entry") | pl.col("is_time"), body.str.contains(BLANK))
    return result({"meminfo": conform(out, SCHEMA)}, warnings, _capture.unterminated_kind(kinds, f, "is_entry"))
