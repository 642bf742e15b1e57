"""The lab's /proc/diskstats sampler log (pgfslab.run.sampler.ProcSampler): blocks, each a line
`@ <epoch seconds>` followed by the verbatim content of /proc/diskstats, one line per block device:

    @ 1795418815.633136
     254       0 vda 220544 41642 9825882 123314 526742 34380 17226197 165170 0 86944 297924 4436 57 188768 840 104642 8599

One row per (sample, device). The counters are cumulative since boot (subtract consecutive samples
for rates); `*_ms` are milliseconds, sectors are 512 bytes whatever the device's block size
(Documentation/admin-guide/iostats.rst of the Linux kernel). The number of fields tells the kernel:

=======  ==================================================================================================
fields   layout after `major minor device`
=======  ==================================================================================================
11       up to 4.17: reads_completed reads_merged sectors_read read_ms writes_completed writes_merged
         sectors_written write_ms ios_in_progress io_ms weighted_io_ms
15       4.18+: ... discards_completed discards_merged sectors_discarded discard_ms (null before)
17       5.5+: ... flushes_completed flush_ms (null before)
=======  ==================================================================================================

More than 17 fields (a future kernel) keeps the first 17 with one warning; fewer than 11 or 12-14
or 16 is an error. Devices may come and go between samples (loop devices attached by a study).
A torn last line is dropped with a warning; a last sample whose devices stop early, in the order
of the sample before it, is kept with a warning (the sampler may have been killed mid-write). A
device repeated within one sample (a lost marker), a line that is neither a marker nor a
diskstats line, or a counter beyond 64-bit integers raises ParseError.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    ParseError,
    Schema,
    check_int64,
    check_repeated_key,
    conform,
    read_samples,
    result,
    sniff_sampler,
)

NAME = "diskstats"
DESCRIPTION = "the lab's /proc/diskstats sampler log: '@ <epoch>' then the file, per sample"

COUNTERS = [
    "reads_completed",
    "reads_merged",
    "sectors_read",
    "read_ms",
    "writes_completed",
    "writes_merged",
    "sectors_written",
    "write_ms",
    "ios_in_progress",
    "io_ms",
    "weighted_io_ms",
    "discards_completed",
    "discards_merged",
    "sectors_discarded",
    "discard_ms",
    "flushes_completed",
    "flush_ms",
]
SCHEMA: Schema = {
    "ts": pl.Datetime("us", "UTC"),
    "device": pl.String,
    "major": pl.Int64,
    "minor": pl.Int64,
    **{c: pl.Int64 for c in COUNTERS},
}
TABLES: dict[str, Schema] = {"diskstats": SCHEMA}

LAYOUTS = {11: "kernel < 4.18", 15: "kernel 4.18+ (discards)", 17: "kernel 5.5+ (discards, flushes)"}
ENTRY = r"^\s*(\d+)\s+(\d+)\s+(\S+)((?:\s+\d+)+)\s*$"
EXPECTED = "'major minor device' and 11, 15 or 17 counters"

_SNIFF_ENTRY = re.compile(r"\s*\d+\s+\d+\s+\S+(?:\s+\d+){11,}\s*")


def sniff(head: str, path: Path) -> bool:
    return sniff_sampler(head, _SNIFF_ENTRY)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    s = read_samples(path, ENTRY, "/proc/diskstats", EXPECTED)
    warnings = s.warnings
    text = pl.col("text")
    f = s.entries.with_columns(
        text.str.extract(ENTRY, 1).alias("major"),
        text.str.extract(ENTRY, 2).alias("minor"),
        text.str.extract(ENTRY, 3).alias("device"),
        text.str.extract(ENTRY, 4).str.extract_all(r"\d+").alias("values"),
    ).with_columns(pl.col("values").list.len().alias("n_values"))
    bad = f.filter(~pl.col("n_values").is_in(list(LAYOUTS)) & (pl.col("n_values") < max(LAYOUTS))).head(1)
    if bad.height:
        raise ParseError(
            path,
            int(bad["line"][0]),
            f"{bad['n_values'][0]} counters after the device name, "
            f"expected 11 ({LAYOUTS[11]}), 15 ({LAYOUTS[15]}) or 17 "
            f"({LAYOUTS[17]}): {bad['text'][0]!r}",
        )
    extra = f.filter(pl.col("n_values") > max(LAYOUTS)).head(1)
    if extra.height:
        warnings.append(
            (
                int(extra["line"][0]),
                f"{extra['n_values'][0]} counters (a kernel newer than this "
                f"parser?): the first {max(LAYOUTS)} kept, the others ignored",
            )
        )
    f = f.with_columns([pl.col("values").list.get(i, null_on_oob=True).alias(c) for i, c in enumerate(COUNTERS)])
    check_int64(path, f, ["major", "minor", *COUNTERS])
    check_repeated_key(path, f, "device", "device")
    _last_sample_cut(f, s.sizes, warnings)
    out = f.with_columns([pl.col(c).cast(pl.Int64) for c in ("major", "minor", *COUNTERS)])
    return result({"diskstats": conform(out, SCHEMA)}, warnings)


def _last_sample_cut(f: pl.DataFrame, sizes: pl.DataFrame, warnings: list[tuple[int | None, str]]) -> None:
    """Warn when the last sample's devices are a strict prefix of the sample before it."""
    if sizes.height < 2:
        return
    last, prev = sizes.row(sizes.height - 1, named=True), sizes.row(sizes.height - 2, named=True)
    if last["n"] >= prev["n"]:
        return
    last_devs = f.filter(pl.col("sample") == last["sample"])["device"].to_list()
    prev_devs = f.filter(pl.col("sample") == prev["sample"])["device"].to_list()
    if prev_devs[: len(last_devs)] == last_devs:
        warnings.append(
            (
                int(last["marker_line"]),
                f"last sample cut off? {last['n']} of the {prev['n']} devices "
                "of the sample before it, in the same order; kept",
            )
        )
