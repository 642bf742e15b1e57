"""One raw log -> DuckDB.

* Every file is ingested in one transaction: a file that fails leaves the database as it was. A new
  study database (all or nothing as a whole, pgfslab.ingest.study) instead stores many files' rows
  together, one INSERT per table (`batched`, pgfslab.ingest.batch): the same rows, in the same order.
* Rows carry `file_id` (SHA-256 of the file's bytes): re-ingesting a file replaces its rows, and
  so does ingesting a changed file under the same `source_file` name (its old rows go).
* Big pgbench per-transaction logs go straight from DuckDB's CSV reader into their table when the
  file is plainly well-formed (`pgbench_txlog.load_direct`), hashed and checked in a thread
  meanwhile; anything doubtful takes the exact polars parser, which also gives the `path:line:
  message` of a bad file. Both give the same rows. Their table is stored compactly (see
  pgfslab.ingest.schema). `python -m benchmarks.ingest` measures all this against DuckDB's bare CSV scan.
* Every line is accounted for: parsed, noise or not understood (`line_counts`, table `unparsed_lines`).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pgfslab.errors import LabError
from pgfslab.ingest import parsers
from pgfslab.ingest.batch import Batch
from pgfslab.ingest.parsers._common import FileScan, scan_file
from pgfslab.ingest.schema import RUNS
from pgfslab.ingest.store import (
    COMPACT,
    COMPACT_OK,
    FileResult,
    LineCounts,
    Target,
    direct,
    files_row,
    forget,
    next_file_no,
    numeric_head,
    rollback,
    storage_table,
    warning_texts,
)
from pgfslab.ingest.store import insert_row as _insert_row_now


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# the connections whose writes a Batch holds (`batched`; pgfslab.ingest.batch says why)
_BATCHES: dict[int, Batch] = {}


@contextlib.contextmanager
def batched(con: duckdb.DuckDBPyConnection) -> Iterator[Batch]:
    """The rows written through this module to `con` inside the block are held and stored together, one
    INSERT per table, when the block ends without an error (on an error they are dropped: for a database
    that is then thrown away, as `new_study_database`'s is)."""
    batch = Batch(con, _insert_now)
    _BATCHES[id(con)] = batch
    try:
        yield batch
        batch.flush()
    finally:
        _BATCHES.pop(id(con), None)


def store_held(con: duckdb.DuckDBPyConnection) -> None:
    """Store what a batch holds for `con` now (before reading what was written through it)."""
    batch = _BATCHES.get(id(con))
    if batch is not None:
        batch.flush()


@contextlib.contextmanager
def _unbatched(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Writes inside go to the database at once (after what a batch holds): a direct load's transaction."""
    batch = _BATCHES.pop(id(con), None)
    if batch is None:
        yield
        return
    batch.flush()
    try:
        yield
    finally:
        _BATCHES[id(con)] = batch


def insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    batch = _BATCHES.get(id(con))
    if batch is not None:
        batch.frame(table, frame)
    else:
        _insert_now(con, table, frame)


def _insert_row(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, Any]) -> None:
    batch = _BATCHES.get(id(con))
    if batch is not None:
        batch.row(table, row)
    else:
        _insert_row_now(con, table, row)


def _insert_now(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.height == 0:
        return
    con.register("_frame", frame)
    try:
        con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM _frame')
    finally:
        con.unregister("_frame")


def _count_lines(path: Path) -> int:
    """Lines of a file as `wc -l` counts them, plus a last line without a newline."""
    n = 0
    last = b""
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 24), b""):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (1 if last not in (b"", b"\n") else 0)


def line_counts(path: Path, accounting: pl.DataFrame | None, warned: Iterable[int | None]) -> LineCounts:
    """The accounting of a parsed file: from its parser's `_lines` (every line classified), or,
    for the formats whose every line is a row (CSV/JSON/space-separated logs), all lines parsed
    but those a warning names (a torn last line, a dropped line), which count as not understood."""
    unparsed_schema = {"line": pl.Int64, "text": pl.Utf8}
    if accounting is not None:
        counts = dict(accounting.group_by("kind").len().iter_rows())
        unparsed = accounting.filter(pl.col("kind") == parsers.NOT_UNDERSTOOD).select("line", "text").sort("line")
        lc = LineCounts(
            accounting.height,
            counts.get(parsers.PARSED, 0),
            counts.get(parsers.NOISE, 0),
            counts.get(parsers.NOT_UNDERSTOOD, 0),
            unparsed.cast(unparsed_schema),  # type: ignore[arg-type]
        )
    else:
        total = _count_lines(path)
        bad = sorted({w for w in warned if w is not None and 1 <= w <= total})
        texts: dict[int, str] = {}
        if bad:
            wanted = set(bad)
            with open(path, "rb") as fh:
                for i, raw in enumerate(fh, 1):  # only when a warning names lines: rare, small
                    if i in wanted:
                        texts[i] = raw.rstrip(b"\r\n").decode("utf-8", errors="backslashreplace")
                    if i >= bad[-1]:
                        break
        unparsed = pl.DataFrame({"line": bad, "text": [texts.get(i, "") for i in bad]}, schema=unparsed_schema)
        lc = LineCounts(total, total - len(bad), 0, len(bad), unparsed)
    lc.first_unparsed = [(int(a), str(b)) for a, b in lc.unparsed.head(20).iter_rows()]
    return lc


def _tables_of(fmt: str) -> Iterable[str]:
    mod = parsers.FORMATS.get(fmt)
    return mod.TABLES if mod is not None else ()


def _forget(con: duckdb.DuckDBPyConnection, file_id: str, source: str, fmt: str, run_id: str | None = None) -> None:
    """store.forget with every format's tables (see there)."""
    forget(con, file_id, source, fmt, run_id, _tables_of)


def _file_row(
    con: duckdb.DuckDBPyConnection,
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
) -> None:
    _insert_row(
        con, "files", files_row(path, file_id, source, fmt, run_id, study, rows, warnings, origin, file_no, lines)
    )
    if lines.unparsed is not None and lines.unparsed.height:
        insert(
            con,
            "unparsed_lines",
            lines.unparsed.with_columns(
                pl.lit(file_id).alias("file_id"),
                pl.lit(source).alias("source_file"),
                pl.lit(run_id, dtype=pl.Utf8).alias("run_id"),
            ),
        )


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    *,
    fmt: str | None = None,
    run_id: str | None = None,
    study: str | None = None,
    source_name: str | None = None,
    origin: str = "local",
    run_record: dict[str, Any] | None = None,
    direct: bool = True,
    strict: bool = False,
    parsed: dict[str, pl.DataFrame] | None = None,
    tz: str | None = None,
) -> FileResult:
    """Parse one file and replace its rows in one transaction. Raises ParseError/LabError on failure,
    and then the database is exactly as before. `run_record` (a `runs` row) is stored in the same
    transaction, replacing the run of the same run_id. `direct=False` forces the polars parser.
    Every line is accounted for (`FileResult.lines`, `files.lines_*`, `unparsed_lines`); with
    `strict` a line not understood is an error (LabError naming the lines; nothing stored). `parsed`: the
    file's tables as parsers.parse gave them for `fmt` (pgfslab.ingest.prefetch), instead of parsing it here.
    `tz`: the zone of local time stamps the file does not name (`ingest --tz`; parsers.parse)."""
    path = Path(path)
    fmt = fmt or parsers.detect_format(path)
    if fmt is None:
        raise LabError(f"{path}: unknown format (see `python -m pgfslab formats`; force one with --format)")
    mod = parsers.FORMATS.get(fmt)
    if mod is None:
        raise LabError(f"{path}: unknown format {fmt!r} (known: {', '.join(parsers.FORMATS)})")
    source = source_name or str(path)
    loader = getattr(mod, "load_direct", None) if direct else None
    file_id: str | None = None
    if loader is not None:
        (table,) = mod.TABLES
        with _unbatched(con):  # a direct load is a transaction of its own
            if table in COMPACT and numeric_head(path, getattr(mod, "NUMERIC_ALPHABET", b"")):
                # the rows do not need the file's hash: hash and check it while DuckDB reads
                done = _direct(con, path, mod, loader, table, source, fmt, run_id, study, origin, run_record, None)
                if done is not None:
                    return done
            try:
                scan = scan_file(path, mod.DIRECT_ALPHABET, mod.DIRECT_COUNT)  # type: ignore[attr-defined]
            except OSError as exc:
                raise parsers.ParseError(path, None, f"cannot read file: {exc.strerror or exc}") from None
            file_id = scan.sha256
            if not scan.foreign:
                done = _direct(con, path, mod, loader, table, source, fmt, run_id, study, origin, run_record, scan)
                if done is not None:
                    return done
    if file_id is None:
        file_id = sha256(path)
    tables = dict(parsed) if parsed is not None else parsers.parse(path, fmt, **({"tz": tz} if tz else {}))
    warn_frame = tables.pop(parsers.WARNINGS_KEY, None)
    items = [] if warn_frame is None else [(r["line"], r["message"]) for r in warn_frame.iter_rows(named=True)]
    warnings = warning_texts(path, items)
    lines = line_counts(path, tables.pop(parsers.LINES_KEY, None), (line for line, _ in items))
    if strict and lines.not_understood:
        shown = "; ".join(f"{path}:{n}: {t[:80]!r}" for n, t in lines.first_unparsed[:5])
        more = f" (and {lines.not_understood - 5} more)" if lines.not_understood > 5 else ""
        raise LabError(
            f"{path}: {lines.not_understood} of {lines.total} lines not understood as {fmt} (--strict): {shown}{more}"
        )
    rows = 0
    per_table: dict[str, int] = {}
    # one transaction per file; inside `batched` the batch's, which stores this file's rows with the others'
    # (and first what it holds of an earlier copy of this file, which `_forget` must find)
    batch = _BATCHES.get(id(con))
    if batch is not None and batch.holds_file(file_id, run_id, source):
        batch.flush()
    if batch is None:
        con.execute("BEGIN TRANSACTION")
    try:
        _forget(con, file_id, source, fmt, run_id)
        if run_record is not None:
            store_run(con, run_record)
        file_no = next_file_no(con)
        for table, frame in tables.items():
            if table in COMPACT:
                frame = frame.with_columns(pl.lit(file_no, dtype=pl.Int64).alias("file_no"))
                if table in COMPACT_OK:
                    col, ok = COMPACT_OK[table]
                    frame = frame.with_columns(pl.when(pl.col(col) != ok).then(pl.col(col)).alias(col))
            else:
                frame = frame.with_columns(
                    pl.lit(file_id).alias("file_id"),
                    pl.lit(source).alias("source_file"),
                    pl.lit(run_id, dtype=pl.Utf8).alias("run_id"),
                )
            insert(con, storage_table(table), frame)
            rows += frame.height
            per_table[table] = frame.height
        _file_row(con, path, file_id, source, fmt, run_id, study, rows, len(warnings), origin, file_no, lines)
        if batch is None:
            con.execute("COMMIT")
        else:
            batch.file(file_id, run_id, source)
    except BaseException:
        # inside a batch, what this file put in it stays there: the error ends the batch unstored, and the new
        # database with it (a caller that goes on after a file's error catches only the parse errors above)
        if batch is None:
            rollback(con)
        raise
    return FileResult(path, fmt, rows, None, warnings, lines=lines, tables=per_table)


def _direct(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    mod: Any,
    loader: Any,
    table: str,
    source: str,
    fmt: str,
    run_id: str | None,
    study: str | None,
    origin: str,
    run_record: dict[str, Any] | None,
    scan: FileScan | None,
) -> FileResult | None:
    """store.direct with this module's files row and run (see there)."""
    return direct(
        con,
        path,
        loader,
        Target(fmt, table, source, run_id, study, origin),
        scan,
        mod.NUMERIC_ALPHABET,
        tables_of=_tables_of,
        file_row=lambda *args: _file_row(*args),  # looked up at call time (tests replace it)
        store_run=None if run_record is None else (lambda c: store_run(c, run_record)),
    )


def store_run(con: duckdb.DuckDBPyConnection, record: dict[str, Any]) -> None:
    batch = _BATCHES.get(id(con))
    if batch is not None and batch.holds_run(record["run_id"]):
        batch.flush()  # the run held is the one replaced
    con.execute("DELETE FROM runs WHERE run_id = ?", [record["run_id"]])
    _insert_row(con, "runs", {c: record.get(c) for c in RUNS})
