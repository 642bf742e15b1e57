"""pgbench's stderr with `-P` progress reports, one line per interval:

    progress: 5.0 s, 403.2 tps, lat 9.897 ms stddev 3.481                       (PG <= 14)
    progress: 5.0 s, 403.2 tps, lat 9.897 ms stddev 3.481, lag 0.123 ms, 3 skipped  (--rate, -L)
    progress: 1.0 s, 2497.6 tps, lat 1.586 ms stddev 0.634, 0 failed           (PG 15+)
    progress: 1.0 s, 289.0 tps, lat 0.314 ms stddev 0.109, 0 failed, lag 0.056 ms, 0 skipped, 18 retried, 18 retries

With --progress-timestamp the time is a Unix epoch (`progress: 1795371130.620 s, ...`): t_s is then
that epoch. Older pgbench (before the zero-division guard) prints `lat -nan ms stddev -nan` for an
interval without transactions: such values become null.

9.4 prints `lag` without `skipped`; a form without `stddev` is read too (stddev null).

Read by the same parser as `pgbench-summary` (`_pgbench`): a stderr file gives progress rows (with
`run_index` when runs were appended), and a file that also holds the report gives its summary too.
Every line is accounted for; a `progress:` line that does not parse (stderr lines of several
threads can interleave) is not understood, with a warning; when most do not parse the format is
not understood and ParseError is raised. A file with nothing pgbench prints raises ParseError.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _pgbench
from pgfslab.ingest.parsers._common import Schema

NAME = "pgbench-progress"
DESCRIPTION = "pgbench stderr with -P progress lines: per-interval tps, latency, lag, failures, retries"

SCHEMA: Schema = _pgbench.PROGRESS_SCHEMA
TABLES: dict[str, Schema] = _pgbench.TABLES
PROGRESS = _pgbench.PROGRESS

_HEAD_PROGRESS = re.compile(r"^progress: [0-9.]+ s, [0-9.]+ tps, lat ", re.M)
# pgbench -i's row counts: `100000 of 100000 tuples (100%) done` (9.4+), `10000 tuples done.` (8.x-9.3)
_HEAD_STDERR = re.compile(
    r"^(?:starting vacuum\.\.\.|dropping old tables\.\.\.|pgbench: |\d+ of \d+ tuples \(\d+%\) done|\d+ tuples done\.$)",
    re.M,
)


def sniff(head: str, path: Path) -> bool:
    if _HEAD_PROGRESS.search(head) or _HEAD_STDERR.search(head):
        return True
    return head.strip() == "" and path.name.endswith(".stderr") and "pgbench" in path.name


def parse(path: Path) -> dict[str, pl.DataFrame]:
    path = Path(path)
    if path.stat().st_size == 0:  # the lab's stderr of a run that printed nothing there
        return {t: pl.DataFrame(schema=s) for t, s in TABLES.items()}
    return _pgbench.parse(path, "its progress lines on stderr")
