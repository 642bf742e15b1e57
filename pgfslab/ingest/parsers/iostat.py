"""The text output of sysstat's `iostat` (`-x` extended or not, `-k`/`-m`, `-t`), as captured:

* sysstat 9.x (EL6): `Device:  rrqm/s wrqm/s r/s w/s rsec/s|rMB/s ... avgrq-sz avgqu-sz await
  [r_await w_await] svctm %util` (a colon after Device);
* sysstat 10/11: `... await r_await w_await svctm %util`; 11.6: `Device r/s w/s rMB/s ... aqu-sz
  rareq-sz wareq-sz svctm %util` (no colon);
* sysstat 12.x: `r/s rkB/s rrqm/s %rrqm r_await rareq-sz ... d/s ... f/s f_await aqu-sz %util`;
* non-extended `Device tps kB_read/s kB_wrtn/s ...`;
* pgbench-tools' `iostat.log` (`iostat -mx 1`, every line prefixed `<local datetime>\\t`);
* a non-C locale's decimal commas (`0,21`).

Long table `iostat`: one row per (sample, device, metric), `metric` as iostat names it (`r/s`,
`rkB/s`, `%util`, ...), `device` null for the `avg-cpu:` metrics (`%user`, `%iowait`, ...). A
sample is one report (it starts at `avg-cpu:`, or at the device header with `-d`); `ts` comes
from `-t`'s time line before the report (`11/23/26 23:53:56`, ISO with S_TIME_FORMAT=ISO) or the
line prefix; null without either. The first report is the averages since boot (`sample` 1). The
banner (`Linux ... (host) date _x86_64_ (N CPU)`), blank lines and the prompt running iostat are
noise; a row whose field count does not match its header is not understood.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _capture
from pgfslab.ingest.parsers._common import (
    BLANK,
    NUM,
    ParseError,
    Schema,
    check_finite,
    classify,
    conform,
    prompt,
    result,
)

NAME = "iostat"
DESCRIPTION = "sysstat iostat text output (-x or not, -k/-m, -t; sysstat 9-12 layouts; pgbench-tools iostat.log)"

SCHEMA: Schema = {
    "sample": pl.Int64,
    "ts": _capture.UTC,
    "device": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
}
TABLES: dict[str, Schema] = {"iostat": SCHEMA}

CPU_HEADER = r"^avg-cpu:\s+%user"
DEVICE_HEADER = r"^Device:?\s+\S+/s|^Device:?\s+tps\s"
BANNER = r"^Linux \S+ \([^)]*\)\s+\S+\s+_[A-Za-z0-9_]+_\s+\(\d+ CPU\)\s*$"
_DEC = r"(?:\d+(?:[.,]\d+)?)"
CPU_ROW = rf"^\s+{_DEC}(?:\s+{_DEC})+\s*$"
DEVICE_ROW = rf"^\S+(?:\s+{_DEC})+\s*$"

_SNIFF = re.compile(rf"{CPU_HEADER}|{DEVICE_HEADER}")


def sniff(head: str, path: Path) -> bool:
    return any(_SNIFF.match(ln) for ln in _capture.head_lines(head))


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines, f, warnings = _capture.read_captured(path, keep_last=True)
    body = pl.col("body").str.strip_chars_end()
    time_ts, time_exact = _capture.time_line(body)
    f = f.with_columns(
        body.str.contains(CPU_HEADER).alias("is_cpu_hdr"),
        body.str.contains(DEVICE_HEADER).alias("is_dev_hdr"),
        body.str.contains(BLANK).alias("is_blank"),
        body.str.contains(_capture.TIME_LINE).alias("is_time"),
        body.str.extract_all(r"\S+").alias("tokens"),
    ).with_columns(
        pl.when(pl.col("is_time")).then(time_ts).alias("time_ts"),
        pl.when(pl.col("is_time")).then(time_exact).alias("time_exact"),
        (pl.col("is_cpu_hdr") | pl.col("is_dev_hdr")).alias("is_hdr"),
    )
    if not f["is_hdr"].any():
        raise ParseError(path, 1, "no iostat header ('avg-cpu:  %user ...' or 'Device ... r/s ...') in the file")
    # the header in force: set by a header line, ended by a blank line or a time line
    starts_or_ends = pl.col("is_hdr") | pl.col("is_blank") | pl.col("is_time")
    f = f.with_columns(
        pl.when(starts_or_ends).then(pl.when(pl.col("is_hdr")).then(pl.col("line"))).forward_fill().alias("header"),
        # a report starts at avg-cpu (or at the device header when there is no avg-cpu at all)
        (pl.col("is_cpu_hdr") if f["is_cpu_hdr"].any() else pl.col("is_dev_hdr")).cum_sum().alias("sample"),
    )
    headers = f.filter(pl.col("is_hdr")).select(
        pl.col("line").alias("header"),
        pl.col("is_cpu_hdr").alias("cpu"),
        pl.col("tokens").list.slice(1).alias("names"),  # without `avg-cpu:` / `Device[:]`
    )
    f = f.join(headers, on="header", how="left", maintain_order="left")
    n_values = pl.col("tokens").list.len() - pl.when(pl.col("cpu")).then(0).otherwise(1)
    f = f.with_columns(
        (
            ~pl.col("is_hdr")
            & pl.col("names").is_not_null()
            & pl.when(pl.col("cpu")).then(body.str.contains(CPU_ROW)).otherwise(body.str.contains(DEVICE_ROW))
            & (n_values == pl.col("names").list.len())
        ).alias("is_row")
    )
    # a last line without a newline is data when complete for its header (all fields, last number whole)
    f, torn = _capture.settle_last(f, lines, "is_row", _capture.complete_decimals(body))
    warnings += torn
    # the time of a report: -t's time line before it, else the line's own prefix
    f = f.with_columns(
        pl.col("time_ts").forward_fill().alias("_t"),
        pl.col("time_exact").forward_fill().alias("_e"),
    )
    rows = f.filter(pl.col("is_row")).with_columns(
        pl.when(pl.col("cpu")).then(None).otherwise(pl.col("tokens").list.first()).alias("device"),
        pl.when(pl.col("cpu")).then(pl.col("tokens")).otherwise(pl.col("tokens").list.slice(1)).alias("values"),
        pl.coalesce(pl.col("_t"), pl.col("prefix_ts")).alias("ts"),
        pl.when(pl.col("_t").is_not_null()).then(pl.col("_e")).otherwise(pl.col("prefix_exact")).alias("exact"),
    )
    warnings += _capture.local_time_warning(rows, "ts", "exact")
    long = (
        rows.select("line", "text", "sample", "ts", "device", pl.col("names").alias("metric"), "values")
        .explode(["metric", "values"])
        .with_columns(pl.col("values").str.replace(",", ".").cast(pl.Float64).alias("value"))
    )
    check_finite(path, long, ["value"])
    if f.select(~pl.col("is_cpu_hdr").any()).item() and rows.height == 0:
        raise ParseError(path, 1, "an iostat header but no row under it")
    _ = NUM  # the same number syntax as the other parsers, decimal commas aside
    noise = pl.col("is_blank") | body.str.contains(BANNER) | body.str.contains(prompt("iostat"))
    kinds = classify(f, pl.col("is_row") | pl.col("is_hdr") | pl.col("is_time"), noise)
    return result({"iostat": conform(long, SCHEMA)}, warnings, _capture.unterminated_kind(kinds, f, "is_row"))
