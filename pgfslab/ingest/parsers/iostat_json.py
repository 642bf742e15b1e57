"""sysstat's `iostat -o JSON` (sysstat 11+; `-x` or not, `-k`/`-m`, `-t`), into the same long table
as the text form (`iostat`: sample, ts, device, metric, value).

    {"sysstat": {"hosts": [{"nodename": ..., "date": "11/23/26", "statistics": [
        {"timestamp": "11/23/26 23:53:56",                      (only with -t; ISO with S_TIME_FORMAT=ISO)
         "avg-cpu":  {"user": 8.85, "nice": 0.00, ..., "idle": 87.11},   (not with -d)
         "disk": [{"disk_device": "vda", "r/s": 125.87, ..., "rrqm": 11.32, ..., "util": 2.52}, ...]},
        ...]}]}}

Metrics are named as the text form's header names them, so that both forms give the same rows: the
avg-cpu keys get their `%` (`user` -> `%user`), and so do the disk percentages JSON writes without it
(`util` -> `%util`, `rrqm`/`wrqm`/`drqm` -> `%rrqm`/...); every other key is the header's name
(`r/s`, `rkB/s`, `aqu-sz`, `tps`, `kB_read`, ...). `sample` is the report's place in the file (1: the
averages since boot), `ts` its `timestamp` (null without -t). The file is one JSON document: every
line is part of it (parsed), and anything that is not valid JSON or not iostat's layout is an error
naming the line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from pgfslab.ingest.parsers import _capture, iostat
from pgfslab.ingest.parsers._common import ParseError, Schema, conform, decode, read_bytes, result

NAME = "iostat-json"
DESCRIPTION = "sysstat `iostat -o JSON` (-x or not, -k/-m, -t): the same long table as the text form"

TABLES: dict[str, Schema] = {"iostat": iostat.SCHEMA}

# JSON keys that the text form's header writes with a `%`
PERCENT = {"rrqm", "wrqm", "drqm", "util"}
_SNIFF = re.compile(r'^\s*\{\s*"sysstat"\s*:\s*\{\s*"hosts"\s*:[\s\S]*"(?:avg-cpu|disk)"\s*:')


def sniff(head: str, path: Path) -> bool:
    return _SNIFF.match(head) is not None


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    text = decode(path, read_bytes(path))
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(path, exc.lineno, f"not valid JSON ({exc.msg}); expected `iostat -o JSON` output") from None
    hosts = _get(path, doc, "sysstat", "hosts")
    stats: list[dict[str, Any]] = []
    for host in hosts if isinstance(hosts, list) else []:
        stats += host.get("statistics") or [] if isinstance(host, dict) else []
    if not stats or not all(isinstance(s, dict) and ("disk" in s or "avg-cpu" in s) for s in stats):
        raise ParseError(
            path, None, "no iostat report: expected sysstat.hosts[].statistics[] with 'avg-cpu' and/or 'disk'"
        )
    reports = pl.DataFrame(
        {"sample": pl.int_range(1, len(stats) + 1, eager=True), "timestamp": [s.get("timestamp") for s in stats]},
        schema={"sample": pl.Int64, "timestamp": pl.String},
    )
    ts, exact = _capture.time_line(pl.col("timestamp"))
    reports = reports.with_columns(ts.alias("ts"), exact.alias("exact"))
    cpu = [{"sample": i, **s["avg-cpu"]} for i, s in enumerate(stats, 1) if isinstance(s.get("avg-cpu"), dict)]
    disk = [{"sample": i, **d} for i, s in enumerate(stats, 1) for d in s.get("disk") or [] if isinstance(d, dict)]
    long = pl.concat([_long(cpu, None), _long(disk, "disk_device")], how="vertical_relaxed")
    long = long.join(reports.select("sample", "ts"), on="sample", how="left").sort("sample", "_order")
    long = long.with_columns(
        pl.when(pl.col("metric").is_in(list(PERCENT)) | pl.col("device").is_null())
        .then(pl.lit("%") + pl.col("metric"))
        .otherwise(pl.col("metric"))
        .alias("metric")
    )
    if long.select(pl.col("value").is_infinite().any()).item():
        raise ParseError(path, None, "a value too large for a double (or Infinity) in the JSON")
    warnings = _capture.local_time_warning(reports, "ts", "exact")
    long = long.with_columns(iostat.metric_unit(pl.col("metric")).alias("unit"))
    long = iostat.rate_checks(long.with_columns(pl.lit(None, dtype=pl.Int64).alias("line")))
    warnings += iostat.check_warnings(long)
    return result({"iostat": conform(long, iostat.SCHEMA)}, warnings)


def _get(path: Path, doc: Any, *keys: str) -> Any:
    for i, key in enumerate(keys):
        if not isinstance(doc, dict) or key not in doc:
            raise ParseError(path, 1, f"not iostat's JSON: no {'.'.join(keys[: i + 1])!r}")
        doc = doc[key]
    return doc


def _long(rows: list[dict[str, Any]], device_key: str | None) -> pl.DataFrame:
    """One row per value of the avg-cpu (`device_key` None: device null) or disk entries, in the
    order iostat printed them (`_order`)."""
    if not rows:
        return pl.DataFrame(schema=_LONG)
    wide = pl.from_dicts(rows, infer_schema_length=None).with_row_index("_entry")
    names = [c for c in wide.columns if c not in ("_entry", "sample", device_key)]
    wide = wide.with_columns(pl.col(names).cast(pl.Float64, strict=False))
    if device_key is None:
        wide = wide.with_columns(pl.lit(None, dtype=pl.String).alias("device"))
    else:
        wide = wide.rename({device_key: "device"})
    out = wide.unpivot(index=["sample", "device", "_entry"], on=names, variable_name="metric", value_name="value")
    rank = pl.col("metric").replace_strict({n: i for i, n in enumerate(names)}, return_dtype=pl.Int64)
    offset = 0 if device_key is None else 1_000  # the avg-cpu values before the devices
    out = out.with_columns((offset + pl.col("_entry").cast(pl.Int64) * 1_000 + rank).alias("_order"))
    return out.drop("_entry").drop_nulls("value").select(list(_LONG))


_LONG: Schema = {
    "sample": pl.Int64,
    "device": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "_order": pl.Int64,
}
