"""Parsers for the raw logs the lab keeps: one module per format, each turning a file into polars
frames whose columns carry their units.

Every format module has:

* ``NAME`` (the format's name, the key in ``FORMATS``) and ``DESCRIPTION`` (one line);
* ``TABLES``: ``{table name: {column: polars dtype}}``, the exact schema of every table it produces
  (the ingest creates the DuckDB tables from it and adds its own ``file_id``/``source_file``/``run_id``);
* ``sniff(head, path) -> bool``: whether the first few KB of text (and the name) look like the format;
* ``parse(path) -> {table name: frame}``: frames with exactly the ``TABLES`` columns and dtypes.

A module may also offer a fast path for the ingest of big files: ``load_direct(con, path, scan,
link, table)`` inserts the rows straight from DuckDB's CSV reader and returns ``(rows, warnings)``,
or None when the file is not plainly well-formed (``DIRECT_ALPHABET``/``DIRECT_COUNT``/
``NUMERIC_ALPHABET`` tell ``pgfslab.ingest.scan.scan_file`` what to check); the ingest then uses ``parse()``,
which stays the reference: both must give the same rows (pgbench-txlog has one).

Errors: a file that is empty, truncated, garbage or another tool's raises :class:`ParseError`,
whose text is ``path:line: message`` with the 1-based line and what was expected there.

Warnings: some damage is recoverable and is dropped rather than failing the file: above all the
torn last line of a log of a run killed mid-write (no newline at the end of the file, or missing
fields on the last line), a cut-off last meminfo sample, an interleaved progress line, a summary
line of an unknown kind. The returned dict then also holds the key ``"_warnings"``: a frame
``{"line": Int64 (null when about the whole file), "message": String}``. The key is there only when
there are warnings; it is not a table: pop it before storing the others.

Formats (see each module's docstring for the layouts per PostgreSQL version):

=================== ===================== ==========================================================
format              tables                source
=================== ===================== ==========================================================
pgbench-summary     pgbench_summary,      pgbench's stdout (end-of-run report, ``-r`` statements)
                    pgbench_statement
pgbench-progress    pgbench_progress      pgbench's stderr (``-P`` progress lines)
pgbench-aggregate   pgbench_aggregate     ``--log --aggregate-interval`` files ``prefix.PID[.N]``
pgbench-txlog       pgbench_txlog         ``--log`` per-transaction files ``prefix.PID[.N]``
meminfo             meminfo               the lab's /proc/meminfo sampler (``pgfslab.run.sampler``)
diskstats           diskstats             the lab's /proc/diskstats sampler (per device, 11/15/17 counters)
vmstat              vmstat                the lab's /proc/vmstat sampler (long: ts, key, value)
proc-stat           cpu_stat              the lab's /proc/stat sampler (CPU time per state, 4-10 counters)
sysbench            sysbench_interval,    sysbench 0.4-1.1 stdout of ``run`` (OLTP, cpu, fileio, memory):
                    sysbench_summary,     ``--report-interval`` lines, the end-of-run report, the
                    sysbench_histogram,   ``--histogram``, the set-up lines; runs appended in one
                    sysbench_options      file (``run_index``)
iostat-json         iostat                sysstat ``iostat -o JSON`` (the same long table as the text form)
fs-ops              fs_ops,               file-system micro-benchmark result tables in cockroach
                    fs_ops_interval       ``workload``'s layout (totals, and per-second progress)
published-table     published_*           curated CSV of published results (``data/external/``)
durability          durability            the durability check's ``durability.json``
pgstat              pgstat                the lab's pg_stat_bgwriter/pg_stat_database sampler (``pgstat.csv``)
pgstat-io           pgstat_io             the lab's pg_stat_io sampler (``pgstat_io.csv``, PostgreSQL 16+)
pg-aios             pg_aios               the lab's pg_aios sampler (``pg_aios.csv``, PostgreSQL 18+)
fsmicro-ops         fsmicro_ops           per-operation latencies of the fsmicro runner (``fsmicro_ops.csv``)
snapshots           snapshots             the btrfs snapshot scheduler's log (``snapshots.csv``)
fio                 fio_job, fio_text     fio ``--output-format=json`` reports of the device baseline
pg-test-fsync       pg_test_fsync,        pg_test_fsync's stdout, 9.1-17 (ops/s, usecs/op from 9.3)
                    pg_test_fsync_unrecognised
pg-log              pg_checkpoints        the server log of a run (``postgresql.log``): its checkpoints
=================== ===================== ==========================================================
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

import polars as pl

from pgfslab.ingest.parsers import (
    diskstats,
    durability,
    fs_ops,
    iostat,
    iostat_json,
    meminfo,
    meminfo_capture,
    pgbench_aggregate,
    pgbench_progress,
    pgbench_summary,
    pgbench_txlog,
    procstat,
    published_table,
    sysbench,
    vmstat,
    vmstat_text,
)
from pgfslab.ingest.parsers._common import (
    LINES_KEY,
    LINES_SCHEMA,
    NOISE,
    NOT_UNDERSTOOD,
    PARSED,
    WARNINGS_KEY,
    WARNINGS_SCHEMA,
    ParseError,
    Schema,
    read_head,
)

__all__ = [
    "FORMATS",
    "HEADLINES",
    "LINES_KEY",
    "LINES_SCHEMA",
    "NOISE",
    "NOT_UNDERSTOOD",
    "PARSED",
    "WARNINGS_KEY",
    "WARNINGS_SCHEMA",
    "ParseError",
    "ParserModule",
    "detect_format",
    "parse",
    "units_of",
]


class ParserModule(Protocol):
    NAME: str
    DESCRIPTION: str
    TABLES: dict[str, Schema]

    def sniff(self, head: str, path: Path) -> bool: ...

    def parse(self, path: Path) -> dict[str, pl.DataFrame]: ...


# in detection order: the first whose sniff() accepts a file names its format
FORMATS: dict[str, ParserModule] = {
    m.NAME: m
    for m in (
        meminfo,
        pgbench_summary,
        pgbench_progress,
        pgbench_aggregate,
        pgbench_txlog,
        diskstats,
        vmstat,
        procstat,
        sysbench,
        meminfo_capture,
        vmstat_text,
        iostat,
        iostat_json,
        fs_ops,
        published_table,
        durability,
    )
}

HEAD_BYTES = 8192


def detect_format(path: Path) -> str | None:
    """The format of a file, from its first few KB and its name; None when no parser claims it.
    Raises ParseError when the file cannot be read."""
    path = Path(path)
    try:
        head = read_head(path, HEAD_BYTES)
    except OSError as exc:
        raise ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
    for name, mod in FORMATS.items():
        if mod.sniff(head, path):
            return name
    return None


def parse(path: Path, fmt: str | None = None, **options: Any) -> dict[str, pl.DataFrame]:
    """Parse a file (format detected when `fmt` is None) into {table name: frame}, plus
    ``"_warnings"`` when something was dropped. `options` go to the format's parse() (e.g.
    ``seventh_column="retries"`` for pgbench-txlog). Raises ParseError."""
    path = Path(path)
    if fmt is None:
        fmt = detect_format(path)
        if fmt is None:
            raise ParseError(path, None, f"unknown format: none of {', '.join(FORMATS)} recognises this file")
    mod = FORMATS.get(fmt)
    if mod is None:
        raise ParseError(path, None, f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    # the user's time zone (`ingest --tz`) goes to the formats that read local times (their OPTIONS)
    if "tz" in options and "tz" not in getattr(mod, "OPTIONS", ()):
        options = {k: v for k, v in options.items() if k != "tz"}
    return mod.parse(path, **options)


# The lab's own CSV logs (pgstat.csv, fsmicro_ops.csv, snapshots.csv, disk_series.csv): exact headers, so last in
# detection order.
from pgfslab.ingest.parsers import btrfs_snapshots, disk_series, fsmicro_ops, pg_aios, pgstat, pgstat_io  # noqa: E402

FORMATS.update({m.NAME: m for m in (pgstat, pgstat_io, pg_aios, fsmicro_ops, btrfs_snapshots, disk_series)})

# The device baseline's tools (pgfslab.run.device_baseline): fio's JSON report and pg_test_fsync's text.
from pgfslab.ingest.parsers import fio, pg_test_fsync  # noqa: E402

FORMATS.update({m.NAME: m for m in (fio, pg_test_fsync)})

# The server's own log, by its name in a run folder (its checkpoints: pgfslab.ingest.parsers.pg_log).
from pgfslab.ingest.parsers import pg_log  # noqa: E402

FORMATS.update({pg_log.NAME: pg_log})


# each workload tool's headline, from the format whose table holds it (a module's HEADLINE: tool, table, and a
# SELECT of run_id, value, transactions, failed, elapsed_s): pgfslab.analysis.queries.headline unions them
HEADLINES: dict[str, tuple[str, str]] = {
    h[0]: (h[1], h[2]) for h in (getattr(m, "HEADLINE", None) for m in FORMATS.values()) if h is not None
}


def units_of(table: str) -> dict[str, str | None]:
    """The unit of each column of a parser table (None: not numeric): pgfslab.ingest.parsers._units."""
    from pgfslab.ingest.parsers._units import unit_of

    for mod in FORMATS.values():
        if table in mod.TABLES:
            explicit = getattr(mod, "UNITS", {}).get(table, {})
            return {c: unit_of(table, c, t, explicit) for c, t in mod.TABLES[table].items()}
    return {}
