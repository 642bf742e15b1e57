"""The lab's /proc/meminfo sampler log (pgfslab.run.sampler.ProcSampler): blocks, each a line
`@ <epoch seconds>` followed by the verbatim content of /proc/meminfo:

    @ 1795371161.730893
    MemTotal:       24684096 kB
    HugePages_Total:       0

One row per (sample, key); `sample` numbers the samples from 1 in file order. `kb` is the value in kB, or the raw count for the keys without a unit
(HugePages_*), whose `unit` is null. A cut-off last sample (the run was killed mid-write) keeps
its complete lines, with a warning; a torn last line is dropped. Anything else that is not a
marker or a `Key: value [kB]` line, a sample without lines, or a key repeated inside one sample
raises ParseError.
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

NAME = "meminfo"
DESCRIPTION = "the lab's /proc/meminfo sampler log: '@ <epoch>' then the file, per sample"

SCHEMA: Schema = {
    "ts": pl.Datetime("us", "UTC"),
    "key": pl.String,
    "kb": pl.Int64,
    "unit": pl.String,
    "sample": pl.Int64,
}
TABLES: dict[str, Schema] = {"meminfo": SCHEMA}

ENTRY = r"^([A-Za-z][A-Za-z0-9_()]*):[ \t]+(\d+)(?: (kB))?$"

_SNIFF_ENTRY = re.compile(r"[A-Za-z][A-Za-z0-9_()]*:\s+\d+(?: kB)?")


def sniff(head: str, path: Path) -> bool:
    return sniff_sampler(head, _SNIFF_ENTRY)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    s = read_samples(path, ENTRY, "meminfo", "'Key:  <number> [kB]'")
    text = pl.col("text")
    f = s.entries.with_columns(
        text.str.extract(ENTRY, 1).alias("key"),
        text.str.extract(ENTRY, 2).alias("raw"),
        text.str.extract(ENTRY, 3).alias("unit"),
    )
    check_int64(path, f, ["raw"])
    check_repeated_key(path, f, "key", "key")
    out = f.with_columns(pl.col("raw").cast(pl.Int64).alias("kb"))
    return result({"meminfo": conform(out, SCHEMA)}, s.warnings + cut_off_warning(s.sizes))
