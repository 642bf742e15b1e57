"""The lab's /proc/vmstat sampler log (pgfslab.run.sampler.ProcSampler): blocks, each a line
`@ <epoch seconds>` followed by the verbatim content of /proc/vmstat, one `key value` per line:

    @ 1795418815.633136
    nr_free_pages 1283739
    nr_dirty 412

One row per (sample, key), like the meminfo table: `value` is the kernel's number as printed. Keys
are gauges (`nr_*`, in pages) or event counters since boot (`pgpgin`, `pgmajfault`, ...: subtract
consecutive samples for rates); which one is the kernel's business, the table keeps them as they
are. A cut-off last sample (the run was killed mid-write) keeps its complete lines, with a warning;
a torn last line is dropped. A line that is neither a marker nor `key value`, a sample without lines,
a key repeated inside one sample or a value beyond 64-bit integers raises ParseError.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    Schema,
    check_int64,
    check_repeated_key,
    conform,
    cut_off_warning,
    read_samples,
    result,
    sniff_sampler,
)

NAME = "vmstat"
DESCRIPTION = "the lab's /proc/vmstat sampler log: '@ <epoch>' then the file, per sample"

SCHEMA: Schema = {
    "ts": pl.Datetime("us", "UTC"),
    "key": pl.String,
    "value": pl.Int64,
}
TABLES: dict[str, Schema] = {"vmstat": SCHEMA}

ENTRY = r"^([a-z][a-z0-9_]*) (\d+)$"

_SNIFF_ENTRY = re.compile(r"[a-z][a-z0-9_]* \d+")


def sniff(head: str, path: Path) -> bool:
    return sniff_sampler(head, _SNIFF_ENTRY)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    s = read_samples(path, ENTRY, "/proc/vmstat", "'key value'")
    warnings = s.warnings
    text = pl.col("text")
    f = s.entries.with_columns(text.str.extract(ENTRY, 1).alias("key"), text.str.extract(ENTRY, 2).alias("raw"))
    check_int64(path, f, ["raw"])
    check_repeated_key(path, f, "key", "key")
    warnings += cut_off_warning(s.sizes)
    out = f.with_columns(pl.col("raw").cast(pl.Int64).alias("value"))
    return result({"vmstat": conform(out, SCHEMA)}, warnings)
