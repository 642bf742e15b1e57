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
    "unit": pl.String,  # of `value`, read from the metric's name (sysstat's -k/-m, sectors, versions)
    "check": pl.String,  # null, or how a rate and its total (kB_read/s, kB_read) disagree
}
TABLES: dict[str, Schema] = {"iostat": SCHEMA}
UNITS = {
    "iostat": {
        "sample": "count (report number; 1 = averages since boot)",
        "value": "as `unit` says, per row: sysstat names the unit in the metric (rkB/s, rMB/s, rsec/s) and "
        "changed it across versions (avgrq-sz in sectors before 11.6, rareq-sz in kB after)",
    }
}


def metric_unit(metric: pl.Expr) -> pl.Expr:
    """The unit of an iostat metric, from its name as sysstat prints it (9.x to 12.x; kB = 1024 bytes,
    MB = 1024 kB, a sector or block = 512 bytes)."""
    per_s = metric.str.ends_with("/s")
    return (
        pl.when(metric.str.starts_with("%"))
        .then(pl.lit("%"))
        .when(metric.str.contains("kB"))
        .then(pl.when(per_s).then(pl.lit("kB/s")).otherwise(pl.lit("kB")))
        .when(metric.str.contains("MB"))
        .then(pl.when(per_s).then(pl.lit("MB/s")).otherwise(pl.lit("MB")))
        .when(metric.str.contains(r"^[rw]sec/s$|^Blk_"))
        .then(pl.when(per_s).then(pl.lit("sectors/s")).otherwise(pl.lit("sectors")))
        .when(metric.str.contains(r"await$|^svctm$"))
        .then(pl.lit("ms"))
        .when(metric == "avgrq-sz")
        .then(pl.lit("sectors"))
        .when(metric.str.contains(r"^[rwdf]?areq-sz$"))
        .then(pl.lit("kB"))
        .when(metric.str.contains(r"^(?:avgqu-sz|aqu-sz)$"))
        .then(pl.lit("requests"))
        .when(per_s | (metric == "tps"))
        .then(pl.lit("1/s"))
    )


def rate_checks(long: pl.DataFrame) -> pl.DataFrame:
    """`check` on the rows of a rate whose total the same report prints (`kB_read/s` and `kB_read`, ...):
    rate x interval = total, the interval being the time between this report's and the previous one's time
    stamps, or without time stamps the interval the report's other rates and totals agree on (their median);
    within the rounding of the rate (2 decimals) and 2 %. The first report (since boot) is not checked."""
    rates = long.filter(pl.col("metric").str.ends_with("/s") & pl.col("device").is_not_null()).select(
        "sample",
        "device",
        pl.col("metric").str.strip_suffix("/s").alias("total_metric"),
        pl.col("metric").alias("rate_metric"),
        pl.col("value").alias("rate"),
        "line",
    )
    totals = long.select("sample", "device", pl.col("metric").alias("total_metric"), pl.col("value").alias("total"))
    pairs = rates.join(totals, on=["sample", "device", "total_metric"], how="inner").filter(pl.col("sample") > 1)
    if pairs.height == 0:
        return long.with_columns(pl.lit(None, dtype=pl.String).alias("check"))
    stamps = long.group_by("sample").agg(pl.col("ts").min()).sort("sample")
    stamps = stamps.with_columns((pl.col("ts") - pl.col("ts").shift(1)).dt.total_microseconds().alias("_dt_us"))
    implied = (
        pairs.filter(pl.col("rate") > 0)
        .group_by("sample")
        .agg((pl.col("total") / pl.col("rate")).median().alias("_implied_s"))
    )
    pairs = (
        pairs.join(stamps.select("sample", "_dt_us"), on="sample", how="left")
        .join(implied, on="sample", how="left")
        .with_columns(pl.coalesce(pl.col("_dt_us") / 1e6, pl.col("_implied_s")).alias("_interval"))
        .with_columns((pl.col("rate") * pl.col("_interval")).alias("_expected"))
        .with_columns(
            pl.when(
                pl.col("_interval").is_not_null()
                & (
                    (pl.col("_expected") - pl.col("total")).abs()
                    > 0.005 * pl.col("_interval") + 1 + 0.02 * pl.col("total")
                )
            )
            .then(
                pl.format(
                    "{} x {} s = {}, {} = {}",
                    pl.col("rate_metric"),
                    pl.col("_interval").round(3),
                    pl.col("_expected").round(2),
                    pl.col("total_metric"),
                    pl.col("total"),
                )
            )
            .alias("check")
        )
    )
    flagged = pairs.filter(pl.col("check").is_not_null()).select("sample", "device", "rate_metric", "check")
    return long.join(
        flagged.rename({"rate_metric": "metric"}), on=["sample", "device", "metric"], how="left", maintain_order="left"
    )


def check_warnings(long: pl.DataFrame) -> list[tuple[int | None, str]]:
    bad = long.filter(pl.col("check").is_not_null())
    return [
        (None if ln is None else int(ln), f"inconsistent report: {c}")
        for ln, c in bad.select("line", "check").iter_rows()
    ]


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
    long = rate_checks(long.with_columns(metric_unit(pl.col("metric")).alias("unit")))
    warnings += check_warnings(long)
    if f.select(~pl.col("is_cpu_hdr").any()).item() and rows.height == 0:
        raise ParseError(path, 1, "an iostat header but no row under it")
    _ = NUM  # the same number syntax as the other parsers, decimal commas aside
    noise = pl.col("is_blank") | body.str.contains(BANNER) | body.str.contains(prompt("iostat"))
    kinds = classify(f, pl.col("is_row") | pl.col("is_hdr") | pl.col("is_time"), noise)
    return result({"iostat": conform(long, SCHEMA)}, warnings, _capture.unterminated_kind(kinds, f, "is_row"))
