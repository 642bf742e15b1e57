"""The lab's /proc/stat sampler log (pgfslab.run.sampler.ProcSampler, `stat.log`): blocks, each a line
`@ <epoch seconds>` followed by the verbatim content of /proc/stat:

    @ 1795754347.825600
    cpu  1395230 29294 366969 399873 58049 0 26439 83073 0 0
    cpu0 694364 13984 183246 217589 31814 0 962 37456 0 0
    intr 22872406 0 0 ...
    ctxt 104922298

One row per (sample, CPU line): `cpu` is `cpu` for the aggregate of all CPUs, `cpu0`, `cpu1`, ... for
each. The counters are the time spent in each state since boot, in ticks of USER_HZ (1/100 s on Linux,
whatever the kernel's HZ; proc(5)); subtract consecutive samples for shares. The number of fields tells
the kernel (proc(5)); a counter a kernel does not print is null:

=======  ==================================================================================================
fields   layout after the `cpu` name
=======  ==================================================================================================
4        2.4: user nice system idle
7        2.6: ... iowait irq softirq
8        2.6.11+: ... steal (time taken by the hypervisor for other guests)
9        2.6.24+: ... guest (time running a guest's virtual CPU, also counted in user)
10       2.6.33+: ... guest_nice (also counted in nice)
=======  ==================================================================================================

More than 10 fields (a future kernel) keeps the first 10 with one warning; 5, 6 or fewer than 4 is an
error. The other lines of /proc/stat (`intr`, `ctxt`, `btime`, `processes`, `procs_running`,
`procs_blocked`, `softirq`, and 2.4's `page`, `swap`, `disk_io:`, `disk*`) are known and not stored: the
line accounting counts them as noise. A torn last line is dropped with a warning; a last sample whose CPU
lines stop early is kept with a warning (the sampler stopped mid-write). A CPU repeated within one sample
(a lost marker), a line that is neither a marker nor a known /proc/stat line, or a counter beyond 64-bit
integers raises ParseError.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    BLANK,
    SAMPLE_MARKER,
    ParseError,
    Schema,
    check_int64,
    check_repeated_key,
    classify,
    conform,
    cut_off_warning,
    read_lines,
    read_samples,
    result,
    sniff_sampler,
    with_torn,
)

NAME = "proc-stat"
DESCRIPTION = "the lab's /proc/stat sampler log: '@ <epoch>' then the file, per sample (CPU time per state)"

COUNTERS = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"]
SCHEMA: Schema = {"ts": pl.Datetime("us", "UTC"), "cpu": pl.String, **{c: pl.Int64 for c in COUNTERS}}
TABLES: dict[str, Schema] = {"cpu_stat": SCHEMA}
TICKS = "ticks of USER_HZ (1/100 s on Linux), since boot"
UNITS: dict[str, dict[str, str]] = {"cpu_stat": {c: TICKS for c in COUNTERS}}

LAYOUTS = {4: "kernel 2.4", 7: "kernel 2.6", 8: "kernel 2.6.11+ (steal)", 9: "kernel 2.6.24+ (guest)",
           10: "kernel 2.6.33+ (guest_nice)"}  # fmt: skip
CPU = r"^(cpu\d*)((?:\s+\d+)+)\s*$"
# the lines of /proc/stat the lab knows and does not store (proc(5); `page`, `swap`, `disk*` are 2.4's)
OTHER_KEYS = ("intr", "ctxt", "btime", "processes", "procs_running", "procs_blocked", "softirq", "page", "swap",
              "disk", "disk_rio", "disk_wio", "disk_rblk", "disk_wblk")  # fmt: skip
OTHER = rf"^(?:(?:{'|'.join(OTHER_KEYS)})(?:\s+\d+)+|disk_io:(?:\s+\(\d+,\d+\):\([\d,]+\))*)\s*$"
ENTRY = rf"(?:{CPU})|(?:{OTHER})"
EXPECTED = f"'cpuN' and 4, 7, 8, 9 or 10 counters, or one of {', '.join(OTHER_KEYS)}, disk_io:"

_SNIFF_ENTRY = re.compile(r"cpu\s+\d+(?:\s+\d+){3,}\s*")


def sniff(head: str, path: Path) -> bool:
    return sniff_sampler(head, _SNIFF_ENTRY)


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    s = read_samples(path, ENTRY, "/proc/stat", EXPECTED)
    warnings = s.warnings
    text = pl.col("text")
    f = (
        s.entries.filter(text.str.contains(CPU))
        .with_columns(
            text.str.extract(CPU, 1).alias("cpu"), text.str.extract(CPU, 2).str.extract_all(r"\d+").alias("values")
        )
        .with_columns(pl.col("values").list.len().alias("n_values"))
    )
    bad = f.filter(~pl.col("n_values").is_in(list(LAYOUTS)) & (pl.col("n_values") < max(LAYOUTS))).head(1)
    if bad.height:
        known = ", ".join(f"{n} ({what})" for n, what in LAYOUTS.items())
        raise ParseError(
            path,
            int(bad["line"][0]),
            f"{bad['n_values'][0]} counters after {bad['cpu'][0]!r}, expected {known}: {bad['text'][0]!r}",
        )
    extra = f.filter(pl.col("n_values") > max(LAYOUTS)).head(1)
    if extra.height:
        warnings.append(
            (
                int(extra["line"][0]),
                f"{extra['n_values'][0]} counters (a kernel newer than this parser?): "
                f"the first {max(LAYOUTS)} kept, the others ignored",
            )
        )
    f = f.with_columns([pl.col("values").list.get(i, null_on_oob=True).alias(c) for i, c in enumerate(COUNTERS)])
    check_int64(path, f, COUNTERS)
    check_repeated_key(path, f, "cpu", "CPU line")
    cpu_lines = f.group_by("sample").len().rename({"len": "n"})
    sizes = s.sizes.drop("n").join(cpu_lines, on="sample", how="left").with_columns(pl.col("n").fill_null(0))
    warnings += cut_off_warning(sizes)
    out = f.with_columns([pl.col(c).cast(pl.Int64) for c in COUNTERS])
    return result({"cpu_stat": conform(out, SCHEMA)}, warnings, _accounting(path))


def _accounting(path: Path) -> pl.DataFrame:
    """Every line: markers and CPU lines parsed, the other known lines and blank lines noise (read_samples
    has refused anything else), the torn last line not understood."""
    lines = read_lines(path)
    text = pl.col("text")
    kinds = classify(
        lines.frame,
        text.str.contains(SAMPLE_MARKER) | text.str.contains(CPU),
        text.str.contains(OTHER) | text.str.contains(BLANK),
    )
    return with_torn(kinds, lines)
