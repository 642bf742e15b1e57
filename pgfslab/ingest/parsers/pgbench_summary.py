"""pgbench's output as captured: the end-of-run report on stdout (pgbench 8.x through 18), one row
per run, the per-statement latencies of `-r` (`--report-per-command`), and the `-P` progress lines
of stderr when both streams were captured together (`> run.log 2>&1`, `| tee`). Several runs
appended to one file (a shell loop) are told apart by `run_index`. The reading itself is in
`_pgbench` (shared with the `pgbench-progress` format).

Fields come and go with versions; a field a version does not print is null:

* `pgbench (15.18 (Debian ...))` / `pgbench (16.1, server 15.4)`: first line since PG 14.
* `maximum number of tries`, `number of failed transactions: N (x%)`, with --failures-detailed the
  serialization/deadlock counts, with --max-tries the retried/retries counts: PG 15+.
* `number of transactions actually processed: N/M` with -t, `: N` with -T (`duration: 20 s`).
* `latency average = X ms` (9.6+; `latency average: X ms` in 9.5), `latency stddev` only with
  -P, --rate or --latency-limit; PG 15 appends ` (including failures)` when it is computed from
  the run time and some transactions failed.
* `tps = X (including connections establishing)` and `tps = X (excluding connections
  establishing)` up to PG 13; `initial connection time = X ms` and `tps = X (without initial
  connection time)` since PG 14; with -C since PG 14 `average connection time = X ms` and
  `tps = X (including reconnection times)`. `tps` is the figure without connection set-up time
  (the "excluding" one in old versions; with -C the only one there is); `tps_including_connections`
  is the old versions' "including" figure.
* `partition method` / `partitions` (PG 13+ when pgbench_accounts is partitioned).
* `-r` tables: `statement latencies in milliseconds:` (latency, statement), PG 15+ `... and
  failures:` (latency, failures, statement) or `..., failures and retries:` (latency, failures,
  retries, statement); with several scripts, one table per `SQL script N:` block
  (` - statement latencies ...`), in 9.5 `statement latencies in milliseconds, file N:`.
  script_no and statement_no are 0-based, script_no as in the per-transaction log.

Since pgbench 8.x: `tps = X (including connections establishing)` / `(excluding ...)`, no query
mode before 8.4, no threads before 9.0, no latency line before 9.4 (`latency average: X ms` with a
colon in 9.4/9.5); 9.2-9.4 `-r` tables have 6-decimal latencies and `\\setrandom` lines.

Every line is accounted for: parsed, noise (`starting vacuum...end.`, `pgbench -i` steps, messages,
per-script ` - ` details, a shell prompt running pgbench) or not understood (kept in the ingest's
`unparsed_lines`). A report cut before its mandatory lines (`transaction type`, `scaling factor`,
`number of clients`, `number of transactions actually processed`, and `tps = ` once a transaction
completed) raises ParseError, as does a file with nothing pgbench prints.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from pgfslab.ingest.parsers import _pgbench
from pgfslab.ingest.parsers._common import Schema

NAME = "pgbench-summary"
DESCRIPTION = (
    "pgbench output (stdout, or stdout+stderr captured together; 8.x-18): end-of-run report per run, "
    "-r per-statement latencies, -P progress lines"
)

SCHEMA: Schema = _pgbench.SUMMARY_SCHEMA
STATEMENT_SCHEMA: Schema = _pgbench.STATEMENT_SCHEMA
TABLES: dict[str, Schema] = _pgbench.TABLES

# the headline of a pgbench run, read from this format's table (pgfslab.analysis.queries.headline): tps without
# the connection time, the transactions done and failed, and the time measured
HEADLINE = (
    "pgbench",
    "pgbench_summary",
    """SELECT run_id, tps AS value, transactions_processed AS transactions,
              coalesce(failed_transactions, 0) AS failed, duration_s AS elapsed_s
       FROM pgbench_summary""",
)
FIELDS = _pgbench.FIELDS
REQUIRED = _pgbench.REQUIRED

_SNIFF_TYPE = re.compile(r"^transaction type: ", re.M)
_SNIFF_VERSION = re.compile(r"pgbench \(\d[^()]*(?:\([^()]*\))?[^()]*\)")
_SNIFF_OTHER = re.compile(r"^(?:scaling factor|query mode|number of clients|number of threads): ", re.M)


def sniff(head: str, path: Path) -> bool:
    if _SNIFF_TYPE.search(head) and _SNIFF_OTHER.search(head):
        return True
    # pgbench 14+ starts its stdout with its version; a run killed early leaves only that line
    first = head.lstrip().split("\n", 1)[0].rstrip("\r")
    return _SNIFF_VERSION.fullmatch(first) is not None


def parse(path: Path) -> dict[str, pl.DataFrame]:
    return _pgbench.parse(Path(path), "its report on stdout, progress on stderr")
