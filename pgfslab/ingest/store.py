"""How the ingest stores a file in DuckDB, without polars: the compact tables' layout, the `files`
row, replacing what an earlier ingest of the same content or source stored, and the one transaction
of a format's DuckDB fast path (`direct`). `pgfslab.ingest.load` (every format) and
`pgfslab.ingest.fast` (the ingest command's start for plain per-transaction logs, before polars is
imported) both store through here."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from pgfslab.ingest.scan import FileScan, scan_file

# Tables whose rows can number in the tens of millions are stored compactly: `<table>_rows` holds
# `file_no` (BIGINT) and the format's columns, and `<table>` is a view that adds file_id,
# source_file and run_id from `files`. Repeating the 64-character file_id and the source name on
# every row cost a third of the time of ingesting a 10-million-line log (benchmarks/ingest.py).
COMPACT: set[str] = {"pgbench_txlog"}
# How the compact tables store their rows, narrower than they show them (their views give back the
# documented types): 32-bit integers where the writer's own values are C ints, and a column's
# commonest value stored as null (`status` 'ok': every row but the failed and skipped ones)
COMPACT_TYPES: dict[str, dict[str, str]] = {
    "pgbench_txlog": {"file_no": "INTEGER", "client_id": "INTEGER", "script_no": "INTEGER"}
}
COMPACT_OK: dict[str, tuple[str, str]] = {"pgbench_txlog": ("status", "ok")}

# a format's tables (None: a format this caller does not know)
TablesOf = Callable[[str], Iterable[str] | None]


def storage_table(table: str) -> str:
    """Where a table's rows are stored: itself, or `<table>_rows` for the compact tables."""
    return f"{table}_rows" if table in COMPACT else table


@dataclass
class LineCounts:
    """What became of a file's lines: total = parsed + noise + not_understood."""

    total: int
    parsed: int
    noise: int
    not_understood: int
    unparsed: Any = None  # a polars frame (line, text) of the lines not understood; None when there are none
    first_unparsed: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class FileResult:
    path: Path
    format: str | None
    rows: int = 0
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    direct: bool = False  # loaded by DuckDB's CSV reader (the fast path), not the polars parser
    lines: LineCounts | None = None
    tables: dict[str, int] = field(default_factory=dict)  # rows per table

    def summary(self, shown: int = 5) -> list[str]:
        """The ingest's report of this file: rows per table, the line accounting, and the first
        `shown` lines not understood (path:line: text)."""
        per_table = ", ".join(f"{t} {n}" for t, n in self.tables.items() if n) or "no rows"
        out = [f"{self.path}: {self.format}, {self.rows} rows ({per_table})"]
        if self.lines is not None:
            lc = self.lines
            out[0] += f"; {lc.total} lines: {lc.parsed} parsed, {lc.noise} noise, {lc.not_understood} not understood"
            for line, text in lc.first_unparsed[:shown]:
                out.append(f"  not understood: {self.path}:{line}: {text[:120]!r}")
            if lc.not_understood > shown:
                out.append(f"  ... and {lc.not_understood - shown} more (table unparsed_lines)")
        # rows whose file states a quantity two ways that disagree (the parsers' `check` columns)
        flagged = [w for w in self.warnings if "inconsistent report: " in w]
        if flagged:
            out.append(f"  {len(flagged)} row(s) fail a consistency check (stored as read, column `check`):")
            out += [f"  inconsistent: {w}" for w in flagged[:shown]]
        return out


def insert_row(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, Any]) -> None:
    """One row by parameters (no frame, no Arrow conversion: cheap for the per-file bookkeeping)."""
    names = ", ".join(f'"{c}"' for c in row)
    con.execute(f'INSERT INTO "{table}" ({names}) VALUES ({", ".join("?" for _ in row)})', list(row.values()))


def next_file_no(con: duckdb.DuckDBPyConnection) -> int:
    return int(con.execute("SELECT nextval('file_no_seq')").fetchall()[0][0])


def rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:  # no transaction open any more (a failed COMMIT ends it)
        pass


def numeric_head(path: Path, alphabet: bytes) -> bool:
    """Whether the first 64 KiB hold only `alphabet` (a log without status words, most likely)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    return bool(head) and not head.translate(None, alphabet)


def warning_texts(path: Path, items: Iterable[tuple[int | None, str]]) -> list[str]:
    return [f"{path}:{line}: {msg}" if line is not None else f"{path}: {msg}" for line, msg in items]


class UnknownFormat(Exception):
    """`forget` met rows of a format its caller does not know the tables of (nothing was deleted)."""


def forget(
    con: duckdb.DuckDBPyConnection,
    file_id: str,
    source: str,
    fmt: str,
    run_id: str | None,
    tables_of: TablesOf,
) -> None:
    """Delete what an earlier ingest of this file stored: the same content (file_id) for the same run
    (re-ingesting a log, under any name), or anything stored under this source name. The same content
    in another run's folder is another file: two runs whose logs happen to be byte-identical (two
    crashed runs that printed only pgbench's version line) keep one row each. Raises UnknownFormat,
    before deleting anything, when an earlier row's format is one `tables_of` does not know."""
    prev = con.execute(
        "SELECT file_no, file_id, format, run_id FROM files "
        "WHERE (file_id = ? AND run_id IS NOT DISTINCT FROM ?) OR source_file = ?",
        [file_id, run_id, source],
    ).fetchall()
    if not prev:
        # nothing stored under this content for this run, nor under this name: a file's rows (and its
        # unparsed lines) are only ever stored and deleted in one transaction with its `files` row, so no
        # table holds rows of it. (A study's ingest into a new database asked every table of every format
        # for each file: 2.5 of the default study's 12 s.)
        return
    keys = {(file_id, run_id, fmt), *((fid, rid, f) for _, fid, f, rid in prev)}
    tables = {f: tables_of(f) for _, _, f in keys}
    if any(t is None for t in tables.values()):
        raise UnknownFormat(", ".join(sorted(f for f, t in tables.items() if t is None)))
    file_nos = sorted(int(n) for n, *_ in prev if n is not None)
    for fid, rid, f in keys:
        for table in tables[f] or ():
            if table in COMPACT:
                con.execute(f'DELETE FROM "{storage_table(table)}" WHERE list_contains(?, file_no)', [file_nos])
            else:
                con.execute(f'DELETE FROM "{table}" WHERE file_id = ? AND run_id IS NOT DISTINCT FROM ?', [fid, rid])
        con.execute("DELETE FROM unparsed_lines WHERE file_id = ? AND run_id IS NOT DISTINCT FROM ?", [fid, rid])
    con.execute(
        "DELETE FROM files WHERE list_contains(?, file_no) OR (file_id = ? AND run_id IS NOT DISTINCT FROM ?)",
        [file_nos, file_id, run_id],
    )


def files_row(
    path: Path,
    file_id: str,
    source: str,
    fmt: str,
    run_id: str | None,
    study: str | None,
    rows: int,
    warnings: int,
    origin: str,
    file_no: int,
    lines: LineCounts,
) -> dict[str, Any]:
    """The `files` row of an ingested file."""
    return {
        "file_id": file_id,
        "source_file": source,
        "format": fmt,
        "run_id": run_id,
        "study": study,
        "bytes": path.stat().st_size,
        "rows": rows,
        "warnings": warnings,
        "ingested_at": dt.datetime.now(dt.UTC),
        "origin": origin,
        "file_no": file_no,
        "lines": lines.total,
        "lines_parsed": lines.parsed,
        "lines_noise": lines.noise,
        "lines_not_understood": lines.not_understood,
    }


@dataclass(frozen=True)
class Target:
    """Where and as what a file goes: its format and table, its source name, run, study and origin."""

    fmt: str
    table: str
    source: str
    run_id: str | None
    study: str | None
    origin: str


def direct(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    loader: Callable[..., tuple[int, list[tuple[int | None, str]]] | None],
    target: Target,
    scan: FileScan | None,
    numeric_alphabet: bytes,
    *,
    tables_of: TablesOf,
    file_row: Callable[..., None],
    store_run: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
) -> FileResult | None:
    """One transaction of a format's DuckDB fast path; None (and the database untouched) when it
    does not apply or fails: the caller then takes the exact parser. With `scan` None (compact
    tables only) the file is hashed and checked in a thread while DuckDB reads it, and the result
    is committed only if that check agrees (only `numeric_alphabet`, one row per line). `file_row`
    stores the `files` row (the caller's, with the arguments of `files_row`); `store_run` the run."""
    table = target.table
    con.execute("BEGIN TRANSACTION")
    try:
        file_no = next_file_no(con)
        link: dict[str, Any] = (
            {"file_no": file_no}
            if table in COMPACT
            else {"file_id": scan.sha256 if scan else None, "source_file": target.source, "run_id": target.run_id}
        )
        if scan is None:
            with ThreadPoolExecutor(max_workers=1) as pool:
                pending = pool.submit(scan_file, path, numeric_alphabet)
                try:
                    loaded = loader(con, path, None, link, storage_table(table))
                finally:
                    check = pending.result()
            if (
                loaded is None
                or check.foreign
                or not check.ends_with_newline
                or check.size == 0
                or loaded[0] != check.newlines
            ):
                rollback(con)
                return None
        else:
            check = scan
            loaded = loader(con, path, scan, link, storage_table(table))
            if loaded is None:
                rollback(con)
                return None
        # old rows of this content or source go now: the new rows' files row is not there yet
        forget(con, check.sha256, target.source, target.fmt, target.run_id, tables_of)
        if store_run is not None:
            store_run(con)
        rows, items = loaded
        warnings = warning_texts(path, items)
        # the fast path takes only files whose every line is a row (each newline-terminated)
        lines = LineCounts(check.newlines, rows, 0, check.newlines - rows)
        if lines.not_understood:
            raise RuntimeError("rows and lines differ: the exact parser decides")
        file_row(
            con,
            path,
            check.sha256,
            target.source,
            target.fmt,
            target.run_id,
            target.study,
            rows,
            len(warnings),
            target.origin,
            file_no,
            lines,
        )
        con.execute("COMMIT")
        return FileResult(path, target.fmt, rows, None, warnings, direct=True, lines=lines, tables={table: rows})
    except Exception:
        rollback(con)  # the exact parser says what is wrong (or reads the file after all)
        return None
    except BaseException:
        rollback(con)
        raise
