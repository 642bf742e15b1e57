"""pgbench's stderr with `-P` progress reports, one line per interval:

    progress: 5.0 s, 403.2 tps, lat 9.897 ms stddev 3.481                       (PG <= 14)
    progress: 5.0 s, 403.2 tps, lat 9.897 ms stddev 3.481, lag 0.123 ms, 3 skipped  (--rate, -L)
    progress: 1.0 s, 2497.6 tps, lat 1.586 ms stddev 0.634, 0 failed           (PG 15+)
    progress: 1.0 s, 289.0 tps, lat 0.314 ms stddev 0.109, 0 failed, lag 0.056 ms, 0 skipped, 18 retried, 18 retries

With --progress-timestamp the time is a Unix epoch (`progress: 1795371130.620 s, ...`): t_s is then
that epoch. Older pgbench (before the zero-division guard) prints `lat -nan ms stddev -nan` for an
interval without transactions: such values become null.

Every other line (`starting vacuum...end.`, `pgbench (15.x)`, errors, `pgbench -i` output) is
ignored. An empty file gives an empty frame, and so does a file without progress lines as long as
it looks like pgbench's stderr (some line mentions pgbench, `starting vacuum`, `client N`, or
`pgbench -i`'s steps); any other file is not pgbench's stderr and raises ParseError. A `progress:`
line that does not parse (stderr lines of several threads can interleave) is dropped with a
warning; when most of them do not parse the format is not understood and ParseError is raised.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers._common import (
    NUM,
    ParseError,
    Schema,
    conform,
    decode,
    empty,
    excerpt,
    nan_to_null,
    read_bytes,
    result,
    split_lines,
    torn_warning,
)

NAME = "pgbench-progress"
DESCRIPTION = "pgbench stderr with -P progress lines: per-interval tps, latency, lag, failures, retries"

SCHEMA: Schema = {
    "t_s": pl.Float64,
    "tps": pl.Float64,
    "latency_avg_ms": pl.Float64,
    "latency_stddev_ms": pl.Float64,
    "lag_ms": pl.Float64,
    "skipped": pl.Int64,
    "failed": pl.Int64,
    "retried": pl.Int64,
    "retries": pl.Int64,
}
TABLES: dict[str, Schema] = {"pgbench_progress": SCHEMA}

PROGRESS = (
    rf"^progress: (?P<t_s>{NUM}) s, (?P<tps>{NUM}) tps, lat (?P<latency_avg_ms>{NUM}) ms "
    rf"stddev (?P<latency_stddev_ms>{NUM})"
    r"(?:, (?P<failed>\d+) failed)?"
    rf"(?:, lag (?P<lag_ms>{NUM}) ms)?"
    r"(?:, (?P<skipped>\d+) skipped)?"
    r"(?:, (?P<retried>\d+) retried, (?P<retries>\d+) retries)?$"
)
PROGRESS_START = r"^progress: "

# lines that only pgbench writes to stderr (run and -i modes)
PGBENCH_STDERR = (
    r"pgbench|^starting vacuum|^client \d+ |^dropping old tables\.\.\.|^creating tables\.\.\.|"
    r"^generating data|^\d+ of \d+ tuples \(\d+%\) done|^creating primary keys\.\.\.|^vacuuming\.\.\."
)

_HEAD_PROGRESS = re.compile(r"^progress: [0-9.]+ s, [0-9.]+ tps, lat ", re.M)
_HEAD_STDERR = re.compile(r"^(?:starting vacuum\.\.\.|dropping old tables\.\.\.|pgbench: )", re.M)


def sniff(head: str, path: Path) -> bool:
    if _HEAD_PROGRESS.search(head) or _HEAD_STDERR.search(head):
        return True
    return head.strip() == "" and path.name.endswith(".stderr") and "pgbench" in path.name


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    lines = split_lines(decode(path, read_bytes(path)))
    warnings: list[tuple[int | None, str]] = []
    if lines.torn is not None:
        line_no, text = lines.torn
        if text.startswith("progress:"):
            warnings.append(torn_warning(line_no, text))
        else:  # a torn non-progress line carries no data: keep it for the stderr check below
            lines.frame.vstack(pl.DataFrame({"line": [line_no], "text": [text]}), in_place=True)
    frame = lines.frame
    if frame.height == 0:
        return result({"pgbench_progress": empty(SCHEMA)}, warnings)
    text = pl.col("text")
    frame = frame.with_columns(
        text.str.contains(PROGRESS_START).alias("is_progress"),
        text.str.contains(PROGRESS).alias("ok"),
    )
    prog = frame.filter(pl.col("is_progress"))
    if prog.height == 0:
        if not frame.select(text.str.contains(PGBENCH_STDERR).any()).item():
            first = frame.filter(text.str.strip_chars() != "").head(1)
            line_no = int(first["line"][0]) if first.height else 1
            shown = first["text"][0] if first.height else ""
            raise ParseError(
                path,
                line_no,
                "not pgbench's stderr: no 'progress: ...' line and nothing else pgbench "
                f"writes there; found {excerpt(shown)}",
            )
        return result({"pgbench_progress": empty(SCHEMA)}, warnings)
    bad = prog.filter(~pl.col("ok"))
    expected = (
        "expected 'progress: <t> s, <tps> tps, lat <ms> ms stddev <ms>[, N failed][, lag <ms> ms]"
        "[, N skipped][, N retried, N retries]'"
    )
    if bad.height * 2 > prog.height:
        raise ParseError(
            path,
            int(bad["line"][0]),
            f"unrecognised progress line ({bad.height} of {prog.height} "
            f"do not parse), {expected}: {excerpt(bad['text'][0])}",
        )
    warnings += [
        (int(r["line"]), f"progress line not understood, dropped ({expected}): {excerpt(r['text'])}")
        for r in bad.iter_rows(named=True)
    ]
    good = prog.filter(pl.col("ok"))
    raw = good.select(text.str.extract_groups(PROGRESS).alias("g")).unnest("g")
    floats = ["t_s", "tps", "latency_avg_ms", "latency_stddev_ms", "lag_ms"]
    ints = ["failed", "skipped", "retried", "retries"]
    values = raw.with_columns(
        [pl.col(c).cast(pl.Float64, strict=False) for c in floats]
        + [pl.col(c).cast(pl.Int64, strict=False) for c in ints]
    )
    # digits that matched the pattern but do not fit in Int64 turn null on cast
    overflow = raw.select(
        pl.any_horizontal([pl.col(c).is_not_null() & pl.col(c).cast(pl.Int64, strict=False).is_null() for c in ints])
    ).to_series()
    if overflow.any():
        row = int(overflow.arg_true()[0])
        raise ParseError(path, int(good["line"][row]), f"count too large: {excerpt(good['text'][row])}")
    values = values.with_columns(nan_to_null(*floats))
    infinite = values.select(pl.any_horizontal([pl.col(c).is_infinite() for c in floats])).to_series()
    if infinite.any():
        row = int(infinite.arg_true()[0])
        raise ParseError(path, int(good["line"][row]), f"number too large: {excerpt(good['text'][row])}")
    return result({"pgbench_progress": conform(values, SCHEMA)}, warnings)
