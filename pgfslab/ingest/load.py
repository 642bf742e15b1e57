"""Raw logs -> DuckDB.

* Every file is ingested in one transaction: a file that fails leaves the database as it was. A new
  study database (all or nothing as a whole, see below) instead stores many files' rows together, one
  INSERT per table (`batched`, pgfslab.ingest.batch): the same rows, in the same order.
* Rows carry `file_id` (SHA-256 of the file's bytes): re-ingesting a file replaces its rows, and
  so does ingesting a changed file under the same `source_file` name (its old rows go).
* Big pgbench per-transaction logs go straight from DuckDB's CSV reader into their table when the
  file is plainly well-formed (`pgbench_txlog.load_direct`), hashed and checked in a thread
  meanwhile; anything doubtful takes the exact polars parser, which also gives the `path:line:
  message` of a bad file. Both give the same rows. Their table is stored compactly (`COMPACT`:
  `pgbench_txlog_rows` keyed by `files.file_no`, and a view `pgbench_txlog` with the usual
  columns). `python -m benchmarks.ingest` measures all this against DuckDB's bare CSV scan.
* A study is ingested by `ingest_study`, which builds a fresh database next to the target and
  renames it into place only when every step succeeded: a failed study ingest leaves the old
  database untouched. Every study database also holds the published reference results of
  `data/external/` (`ingest_external`), marked `origin = 'published'` in `files` and `runs`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import yaml

from pgfslab import paths, yaml_text
from pgfslab.errors import LabError
from pgfslab.ingest import parsers
from pgfslab.ingest.batch import Batch
from pgfslab.ingest.parsers._common import FileScan, scan_file
from pgfslab.ingest.prefetch import Prefetch
from pgfslab.ingest.store import (
    COMPACT,
    COMPACT_OK,
    COMPACT_TYPES,
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

# Tables the lab itself defines (parsers define theirs in their module's TABLES).
RUNS: dict[str, Any] = {
    "run_id": pl.Utf8,
    "study": pl.Utf8,
    "host": pl.Utf8,
    "origin": pl.Utf8,
    "status": pl.Utf8,
    "error": pl.Utf8,
    "target": pl.Utf8,
    "target_label": pl.Utf8,
    "fs_label": pl.Utf8,
    "fs": pl.Utf8,
    "fallback": pl.Boolean,
    "mount_options": pl.Utf8,
    "device": pl.Utf8,
    "direct_io": pl.Boolean,
    "workload": pl.Utf8,
    "base_workload": pl.Utf8,
    "tool": pl.Utf8,
    "builtin": pl.Utf8,
    "clients": pl.Int64,
    "threads": pl.Int64,
    "repeat": pl.Int64,
    "plan_index": pl.Int64,
    "duration_s": pl.Float64,
    "scale": pl.Int64,
    "rung": pl.Int64,  # the data-set ladder's rung (null without a ladder)
    "dataset_bytes": pl.Int64,  # the run's database as loaded (before the run)
    "started_at": pl.Datetime("us", "UTC"),
    "ended_at": pl.Datetime("us", "UTC"),
    "wall_s": pl.Float64,
    "pg_version": pl.Utf8,
    "kernel": pl.Utf8,
    "cpu_model": pl.Utf8,
    "cpus": pl.Int64,
    "mem_total_kb": pl.Int64,
    "git_commit": pl.Utf8,
    "database_bytes_end": pl.Int64,
    "fs_used_bytes_end": pl.Int64,
    "checkpoints_timed": pl.Int64,
    "checkpoints_req": pl.Int64,
    "xact_commit": pl.Int64,
    "run_json": pl.Utf8,
}
RUN_PARAMS: dict[str, Any] = {"run_id": pl.Utf8, "key": pl.Utf8, "value": pl.Utf8}
TARGETS: dict[str, Any] = {
    "study": pl.Utf8,
    "host": pl.Utf8,
    "target": pl.Utf8,
    "fs": pl.Utf8,
    "fs_label": pl.Utf8,
    "fallback": pl.Boolean,
    "mount_options": pl.Utf8,
    "mkfs_command": pl.Utf8,
    "image_bytes": pl.Int64,
    "direct_io": pl.Boolean,
    "scale": pl.Int64,
    "load_wall_s": pl.Float64,
    "database_bytes": pl.Int64,
    "fs_used_bytes": pl.Int64,
    "target_json": pl.Utf8,
}
STUDY: dict[str, Any] = {"study": pl.Utf8, "title": pl.Utf8, "authors": pl.Utf8, "config_yaml": pl.Utf8}
DEVICE_BASELINES: dict[str, Any] = {
    "study": pl.Utf8,
    "target": pl.Utf8,
    "baseline_id": pl.Utf8,
    "fs": pl.Utf8,
    "fs_label": pl.Utf8,
    "fs_implementation": pl.Utf8,
    "device": pl.Utf8,
    "fio_version": pl.Utf8,
    "ioengine": pl.Utf8,
    "direct": pl.Boolean,
    "duration_s": pl.Float64,
    "pg_test_fsync_s": pl.Int64,
    "wall_s": pl.Float64,
    "notes": pl.Utf8,
    "baseline_json": pl.Utf8,
}
FILES: dict[str, Any] = {
    "file_id": pl.Utf8,
    "source_file": pl.Utf8,
    "format": pl.Utf8,
    "run_id": pl.Utf8,
    "study": pl.Utf8,
    "bytes": pl.Int64,
    "rows": pl.Int64,
    "warnings": pl.Int64,
    "ingested_at": pl.Datetime("us", "UTC"),
    "origin": pl.Utf8,
    "file_no": pl.Int64,
    "lines": pl.Int64,
    "lines_parsed": pl.Int64,
    "lines_noise": pl.Int64,
    "lines_not_understood": pl.Int64,
}
# the lines of ingested files that no parser understood (files.lines_not_understood counts them)
UNPARSED_LINES: dict[str, Any] = {
    "file_id": pl.Utf8,
    "source_file": pl.Utf8,
    "run_id": pl.Utf8,
    "line": pl.Int64,
    "text": pl.Utf8,
}
LAB_TABLES: dict[str, dict[str, Any]] = {
    "study": STUDY,
    "runs": RUNS,
    "run_params": RUN_PARAMS,
    "targets": TARGETS,
    "files": FILES,
    "device_baselines": DEVICE_BASELINES,
    "unparsed_lines": UNPARSED_LINES,
}
LINK_COLUMNS: dict[str, Any] = {"file_id": pl.Utf8, "source_file": pl.Utf8, "run_id": pl.Utf8}
TABLE_DOCS: dict[str, str] = {
    "study": "one row per study in the database: its name, title, authors and resolved config (YAML)",
    "runs": "one row per run (run.json): target, file system, workload, clients, repeat, timings, server "
    "counters; `origin` is 'local' for this lab's runs and 'published' (with a null `study`) for the "
    "reference results of data/external/; `host` is the host key of a study merged from several machines' "
    "raw folders (null on one machine; see pgfslab.ingest.merge)",
    "run_params": "every configured parameter of a run, flattened (`key` like `run.duration_s`, `value` as text)",
    "targets": "one row per storage target of a study (per target and host in a merged study): file system, "
    "mount options, mkfs command, image size, bulk-load time and sizes",
    "device_baselines": "one row per target measured without PostgreSQL (data/raw/<study>/_setup/<target>/device/): "
    "file system as labelled, fio version and engine; its fio reports are in `fio_job` and its pg_test_fsync "
    "output in `pg_test_fsync`, both with run_id = `baseline_id` (device-baseline:<target>)",
    "files": "one row per ingested file: `file_id` (SHA-256 of its bytes), where it came from, its format, "
    "rows and warnings; `origin` 'local' or 'published'; `file_no`, a small number of the file in this "
    "database, keys the rows of the compact tables; `lines` = `lines_parsed` + `lines_noise` + "
    "`lines_not_understood`: what became of every line of the file (noise: blank lines, banners, "
    "`starting vacuum...`; null for files ingested before the accounting existed)",
    "unparsed_lines": "one row per line of an ingested file that its parser did not understand (wrapper headers, "
    "a torn last line, an unknown line inside a report): `line` (1-based) and `text`, never silently dropped",
}
EXTERNAL_DIR = paths.EXTERNAL
PUBLISHED = "published"


def _duck_type(dtype: Any) -> str:
    base = dtype if isinstance(dtype, type) else type(dtype)
    if base is pl.Datetime:
        tz = getattr(dtype, "time_zone", None)
        return "TIMESTAMPTZ" if tz else "TIMESTAMP"
    names = {
        pl.Utf8: "VARCHAR",
        pl.String: "VARCHAR",
        pl.Int64: "BIGINT",
        pl.Int32: "INTEGER",
        pl.Float64: "DOUBLE",
        pl.Float32: "FLOAT",
        pl.Boolean: "BOOLEAN",
        pl.Date: "DATE",
    }
    for k, v in names.items():
        if base is k or dtype == k:
            return v
    raise TypeError(f"no DuckDB type for {dtype}")


def all_tables() -> dict[str, dict[str, Any]]:
    """Every table of the lab's database and its columns (the documented schema)."""
    tables = dict(LAB_TABLES)
    for mod in parsers.FORMATS.values():
        for name, cols in mod.TABLES.items():
            tables[name] = {**LINK_COLUMNS, **cols}
    return tables


def create_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table that is missing, add the columns a table of an older database lacks (new
    columns are null in its old rows), and (re)create the views of the compact tables, moving the
    rows of an older database's plain table into the compact one."""
    tables = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE NOT internal AND NOT temporary "
            "AND schema_name = current_schema() AND database_name = current_database()"
        ).fetchall()
    }
    existing: dict[str, set[str]] = {t: set() for t in tables}
    for table, column in con.execute(
        "SELECT table_name, column_name FROM duckdb_columns() WHERE NOT internal "
        "AND schema_name = current_schema() AND database_name = current_database()"
    ).fetchall():
        if table in existing:
            existing[table].add(column)
    con.execute("CREATE SEQUENCE IF NOT EXISTS file_no_seq")

    def ensure(name: str, cols: dict[str, Any], types: dict[str, str] | None = None) -> None:
        if name not in existing:
            body = ", ".join(f'"{c}" {(types or {}).get(c) or _duck_type(t)}' for c, t in cols.items())
            con.execute(f'CREATE TABLE "{name}" ({body})')
            existing[name] = set(cols)
            return
        for c, t in cols.items():
            if c not in existing[name]:
                con.execute(f'ALTER TABLE "{name}" ADD COLUMN "{c}" {_duck_type(t)}')
                existing[name].add(c)

    for name, cols in all_tables().items():
        if name not in COMPACT:
            ensure(name, cols)
    con.execute("UPDATE files SET file_no = nextval('file_no_seq') WHERE file_no IS NULL")
    for name in sorted(COMPACT):
        cols = {c: t for c, t in all_tables()[name].items() if c not in LINK_COLUMNS}
        ensure(storage_table(name), {"file_no": pl.Int64, **cols}, COMPACT_TYPES.get(name))
        names = ", ".join(f'"{c}"' for c in cols)
        ok_col, ok = COMPACT_OK.get(name, ("", ""))
        if name in existing:  # an older database: a plain table with the link columns on every row
            stored = ", ".join(f"nullif(\"{c}\", '{ok}')" if c == ok_col else f'"{c}"' for c in cols)
            con.execute(
                f'INSERT INTO "{storage_table(name)}" (file_no, {names}) SELECT f.file_no, {stored} '
                f'FROM "{name}" JOIN files f USING (file_id)'
            )
            con.execute(f'DROP TABLE "{name}"')
        picked = ", ".join(
            f'coalesce(r."{c}", \'{ok}\') AS "{c}"'
            if c == ok_col
            else f'r."{c}"::{_duck_type(t)} AS "{c}"'
            if c in COMPACT_TYPES.get(name, {})
            else f'r."{c}"'
            for c, t in cols.items()
        )
        con.execute(
            f'CREATE OR REPLACE VIEW "{name}" AS SELECT f.file_id, f.source_file, f.run_id, {picked} '
            f'FROM "{storage_table(name)}" r JOIN files f ON f.file_no = r.file_no'
        )


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---------------------------------------------------------------- writes, held back while a study is built

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


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
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
        _insert(
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
) -> FileResult:
    """Parse one file and replace its rows in one transaction. Raises ParseError/LabError on failure,
    and then the database is exactly as before. `run_record` (a `runs` row) is stored in the same
    transaction, replacing the run of the same run_id. `direct=False` forces the polars parser.
    Every line is accounted for (`FileResult.lines`, `files.lines_*`, `unparsed_lines`); with
    `strict` a line not understood is an error (LabError naming the lines; nothing stored). `parsed`: the
    file's tables as parsers.parse gave them for `fmt` (pgfslab.ingest.prefetch), instead of parsing it here."""
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
            if table in COMPACT and numeric_head(path, mod.NUMERIC_ALPHABET):
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
    tables = dict(parsed) if parsed is not None else parsers.parse(path, fmt)
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
            _store_run(con, run_record)
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
            _insert(con, storage_table(table), frame)
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
        store_run=None if run_record is None else (lambda c: _store_run(c, run_record)),
    )


def _store_run(con: duckdb.DuckDBPyConnection, record: dict[str, Any]) -> None:
    batch = _BATCHES.get(id(con))
    if batch is not None and batch.holds_run(record["run_id"]):
        batch.flush()  # the run held is the one replaced
    con.execute("DELETE FROM runs WHERE run_id = ?", [record["run_id"]])
    _insert_row(con, "runs", {c: record.get(c) for c in RUNS})


# ---------------------------------------------------------------- published reference results (data/external/)


@dataclass
class ExternalSummary:
    files: int = 0
    rows: int = 0
    warnings: list[str] = field(default_factory=list)


def external_manifest(root: Path = EXTERNAL_DIR) -> list[dict[str, Any]]:
    """The entries of `root/manifest.yaml`, checked: every entry names an existing file and a known
    format, and every file under `root` (but README.md and the manifest) has an entry."""
    mf = root / "manifest.yaml"
    if not mf.exists():
        raise LabError(f"{mf}: missing (it lists the published files and their formats)")
    try:
        doc = yaml_text.safe_load(mf.read_text())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise LabError(f"{mf}:{mark.line + 1 if mark else '?'}: not valid YAML: {exc}") from None
    entries = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise LabError(f"{mf}: expected a mapping with a 'files' list")
    seen: set[str] = set()
    for i, e in enumerate(entries):
        where = f"{mf}: files[{i}]"
        if not isinstance(e, dict) or not {"path", "format", "seed"} <= set(e):
            raise LabError(f"{where}: needs path, format and seed")
        if e["format"] not in parsers.FORMATS:
            raise LabError(f"{where}: unknown format {e['format']!r} (known: {', '.join(parsers.FORMATS)})")
        if not (root / e["path"]).is_file():
            raise LabError(f"{where}: {root / e['path']}: no such file")
        if e["path"] in seen:
            raise LabError(f"{where}: {e['path']} listed twice")
        seen.add(e["path"])
        unknown = set(e.get("run") or {}) - set(RUNS) - {"settings", "note", "command"}
        if unknown:
            raise LabError(f"{where}: run keys that are no column of runs: {', '.join(sorted(unknown))}")
    on_disk = {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()} - {"README.md", "manifest.yaml"}
    missing = sorted(on_disk - seen)
    if missing:
        raise LabError(f"{mf}: files not listed (add them, with their seed and format): {', '.join(missing)}")
    return entries


def published_run_id(path: str) -> str:
    return f"{PUBLISHED}/{path.rsplit('.', 1)[0]}"


def external_files(root: Path = EXTERNAL_DIR) -> list[tuple[Path, str]]:
    """The published files of `root` and their formats, in the order `ingest_external` takes them."""
    return [(root / e["path"], e["format"]) for e in external_manifest(root)]


def ingest_external(
    con: duckdb.DuckDBPyConnection, root: Path = EXTERNAL_DIR, ahead: Prefetch | None = None
) -> ExternalSummary:
    """Ingest the published results of `root` (data/external/) with the lab's parsers: files get
    origin 'published' and a null study; a manifest entry with a `run` block also gets a `runs` row
    (origin 'published', study null, run_id 'published/<path without suffix>'), in the same
    transaction as its file. Re-running replaces what an earlier run stored."""
    summary = ExternalSummary()
    for e in external_manifest(root):
        path = root / e["path"]
        run = e.get("run")
        run_id = published_run_id(e["path"]) if run else None
        record = None
        if run:
            record = {k: None for k in RUNS}
            record.update({k: v for k, v in run.items() if k in RUNS})
            record.update(
                {
                    "run_id": run_id,
                    "study": None,
                    "origin": PUBLISHED,
                    "status": "ok",
                    "target_label": f"{run.get('target')} (published)",
                    "fallback": False,
                    "run_json": json.dumps({**e, "run_id": run_id}, sort_keys=True),
                }
            )
        got = ahead.take(path) if ahead is not None else None
        res = ingest_file(
            con,
            path,
            fmt=e["format"],
            run_id=run_id,
            study=None,
            source_name=f"external/{e['path']}",
            origin=PUBLISHED,
            run_record=record,
            parsed=got[1] if got else None,
        )
        summary.files += 1
        summary.rows += res.rows
        summary.warnings += res.warnings
    return summary


# ---------------------------------------------------------------- the documented schema


def schema_markdown() -> str:
    """Every table and column as Markdown (for the README): what fills the table, then its columns."""
    owners = {t: (name, mod) for name, mod in parsers.FORMATS.items() for t in mod.TABLES}
    out = [
        "Every table produced from a log file also has `file_id` (SHA-256 of the file), `source_file` "
        "(`<study>/<run-id>/<file>`, or `external/<path>` for published results) and `run_id` (join with "
        "`runs`). Units are in the column names (`_ms`, `_us`, `_s`, `_kb`, `_gb`, `_pct`, `_per_s`).",
        "",
    ]
    for table, cols in all_tables().items():
        if table in TABLE_DOCS:
            what = TABLE_DOCS[table]
        else:
            name, mod = owners[table]
            what = f"format `{name}`: {mod.DESCRIPTION}"
        if table in COMPACT:
            what += (
                f". A view: the rows are stored in `{storage_table(table)}` (`file_no` and the columns "
                "below), file_id/source_file/run_id come from `files`"
            )
            narrow = ", ".join(f"`{c}` {t}" for c, t in COMPACT_TYPES.get(table, {}).items())
            if narrow:
                what += f"; stored narrower: {narrow}"
            if table in COMPACT_OK:
                what += f"; `{COMPACT_OK[table][0]}` '{COMPACT_OK[table][1]}' is stored as null"
        out += [f"### `{table}`", "", what, "", "| column | type |", "|---|---|"]
        out += [f"| `{c}` | {_duck_type(t)} |" for c, t in cols.items() if c not in LINK_COLUMNS or table in TABLE_DOCS]
        out.append("")
    return "\n".join(out)


def schema_sql() -> str:
    """The statements `create_schema` runs on an empty database, one per line, as DuckDB writes them
    back: `pgfslab/ingest/schema.sql` (`python -m pgfslab schema --sql`), which the ingest command's
    fast start (pgfslab.ingest.fast) runs without importing the parsers."""
    con = duckdb.connect(":memory:")
    try:
        create_schema(con)
        seqs = con.execute("SELECT sql FROM duckdb_sequences() ORDER BY sequence_name").fetchall()
        tables = con.execute("SELECT sql FROM duckdb_tables() WHERE NOT internal ORDER BY table_oid").fetchall()
        views = con.execute("SELECT sql FROM duckdb_views() WHERE NOT internal ORDER BY view_oid").fetchall()
    finally:
        con.close()
    head = [
        "-- The lab's database schema: the statements pgfslab.ingest.load.create_schema runs on an empty database.",
        "-- Generated by `python -m pgfslab schema --sql > pgfslab/ingest/schema.sql`; tests/test_fast_ingest.py checks it.",
    ]
    return "\n".join(head + [" ".join(str(r[0]).split("\n")) for r in seqs + tables + views]) + "\n"


# ---------------------------------------------------------------- study folders (run.json etc.)


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = json.dumps(value) if isinstance(value, (list, bool)) or value is None else str(value)


def _ts(text: str | None) -> dt.datetime | None:
    return dt.datetime.fromisoformat(text) if text else None


def run_row(rec: dict[str, Any], origin: str = "local") -> dict[str, Any]:
    mount = rec.get("mount") or {}
    pg = rec.get("postgres") or {}
    pg_before = rec.get("postgres_before") or {}
    bgw, bgw0 = pg.get("bgwriter") or {}, pg_before.get("bgwriter") or {}
    dbs, dbs0 = pg.get("database_stats") or {}, pg_before.get("database_stats") or {}

    def delta(a: dict[str, Any], b: dict[str, Any], k: str) -> int | None:
        return a[k] - b[k] if k in a and k in b else None

    fallback = bool(rec.get("fallback", mount.get("fallback", False)))
    target = rec["target"]
    wl = rec.get("workload_spec") or {}
    return {
        "run_id": rec["run_id"],
        "study": rec["study"],
        "host": rec.get("host_key"),
        "origin": origin,
        "status": rec.get("status"),
        "error": rec.get("error"),
        "target": target,
        "target_label": f"{target} (FALLBACK: plain directory)"
        if fallback
        else impl_label(target, rec.get("fs_label")),
        "fs_label": rec.get("fs_label") or rec.get("fs"),
        "fs": rec.get("fs"),
        "fallback": fallback,
        "mount_options": mount.get("mount_options"),
        "device": mount.get("device"),
        "direct_io": mount.get("direct_io"),
        # a ladder's rung is part of the cell: `tpcb.d2` (the base workload in base_workload)
        "workload": rec.get("workload") if rec.get("rung") is None else f"{rec.get('workload')}.d{rec['rung']}",
        "base_workload": rec.get("workload"),
        "tool": rec.get("tool"),
        "builtin": wl.get("builtin"),
        "clients": rec.get("clients"),
        "threads": _threads(rec),
        "repeat": rec.get("repeat"),
        "plan_index": rec.get("plan_index"),
        "duration_s": (rec.get("run") or {}).get("duration_s"),
        "scale": (rec.get("dataset") or {}).get("scale"),
        "rung": rec.get("rung"),
        "dataset_bytes": (rec.get("target_setup") or {}).get("database_bytes_loaded"),
        "started_at": _ts(rec.get("started_at")),
        "ended_at": _ts(rec.get("ended_at")),
        "wall_s": rec.get("wall_s"),
        "pg_version": pg.get("version"),
        "kernel": (rec.get("host") or {}).get("kernel"),
        "cpu_model": (rec.get("host") or {}).get("cpu_model"),
        "cpus": (rec.get("host") or {}).get("cpus"),
        "mem_total_kb": (rec.get("host") or {}).get("mem_total_kb"),
        "git_commit": (rec.get("git") or {}).get("commit"),
        "database_bytes_end": pg.get("database_bytes"),
        "fs_used_bytes_end": rec.get("fs_used_bytes"),
        "checkpoints_timed": delta(bgw, bgw0, "checkpoints_timed"),
        "checkpoints_req": delta(bgw, bgw0, "checkpoints_req"),
        "xact_commit": delta(dbs, dbs0, "xact_commit"),
        "run_json": json.dumps(rec, sort_keys=True),
    }


def impl_label(target: str, fs_label: str | None) -> str:
    """A target's label in tables and figures: which ZFS ran is part of it ('zfs (zfs-fuse, userspace)')."""
    if not fs_label or not fs_label.startswith("zfs ("):
        return target
    impl = fs_label.removeprefix("zfs (").removesuffix(")")
    return f"{target} ({impl})" if "zfs" in target else f"{target} (zfs: {impl})"


def _threads(rec: dict[str, Any]) -> int | None:
    for cmd in rec.get("commands") or []:
        if "-j" in cmd:
            return int(cmd[cmd.index("-j") + 1])
    return None


def run_params(rec: dict[str, Any]) -> list[dict[str, str]]:
    flat: dict[str, str] = {}
    for key in ("target_spec", "workload_spec", "dataset", "run", "sampler", "postgres_settings_config"):
        _flatten(key, rec.get(key), flat)
    flat["clients"] = str(rec.get("clients"))
    return [{"run_id": rec["run_id"], "key": k, "value": v} for k, v in sorted(flat.items())]


def target_row(rec: dict[str, Any]) -> dict[str, Any]:
    created, mount = rec.get("created") or {}, rec.get("mount") or {}
    return {
        "study": rec["study"],
        "host": rec.get("host_key"),
        "target": rec["target"],
        "fs": (rec.get("spec") or {}).get("fs"),
        "fs_label": created.get("fs_label") or mount.get("fs_label") or (rec.get("spec") or {}).get("fs"),
        "fallback": bool(mount.get("fallback", created.get("fallback", False))),
        "mount_options": mount.get("mount_options"),
        "mkfs_command": " ".join(created.get("mkfs_command") or []) or None,
        "image_bytes": created.get("image_bytes"),
        "direct_io": mount.get("direct_io"),
        "scale": (rec.get("load") or {}).get("scale"),
        "load_wall_s": (rec.get("load") or {}).get("wall_s"),
        "database_bytes": (rec.get("postgres") or {}).get("database_bytes"),
        "fs_used_bytes": rec.get("fs_used_bytes"),
        "target_json": json.dumps(rec, sort_keys=True),
    }


# Files of a run folder that are records, not logs: provenance (run.json), the server's log (read
# by notebooks from the raw folder), the runners' own diagnostics (sysbench and fsmicro print only
# errors and parameters on stderr; their failures are in run.json), and copies of pgbench scripts.
RUN_FILES_SKIPPED = {"run.json", "run.incomplete.json", "postgresql.log", "sysbench.stderr", "fsmicro.stderr"}


def _run_files(rdir: Path) -> Iterable[Path]:
    return sorted(
        p
        for p in rdir.iterdir()
        if p.is_file()
        and p.name not in RUN_FILES_SKIPPED
        and not p.name.endswith(".tmp")
        and not p.name.startswith("script_")
    )


def baseline_id(target: str) -> str:
    """The run_id under which a target's device-baseline files are stored (fio_job, pg_test_fsync, files)."""
    return f"device-baseline:{target}"


def _ingest_baseline(
    con: duckdb.DuckDBPyConnection, bj: Path, raw: Path, study: str, warnings: list[str], ahead: Prefetch | None
) -> int:
    """A target's device baseline: its record into `device_baselines`, its fio reports and pg_test_fsync
    output into their tables. Returns the number of files ingested."""
    rec = json.loads(bj.read_text())
    bl = rec.get("baseline") or {}
    mount = rec.get("mount") or {}
    bid = baseline_id(rec["target"])
    row = {
        "study": rec["study"],
        "target": rec["target"],
        "baseline_id": bid,
        "fs": (rec.get("spec") or {}).get("fs"),
        "fs_label": rec.get("fs_label"),
        "fs_implementation": mount.get("implementation"),
        "device": mount.get("device"),
        "fio_version": bl.get("fio_version"),
        "ioengine": bl.get("ioengine"),
        "direct": bl.get("direct"),
        "duration_s": bl.get("duration_s"),
        "pg_test_fsync_s": (rec.get("settings") or {}).get("pg_test_fsync_s"),
        "wall_s": rec.get("wall_s"),
        "notes": "; ".join(bl.get("notes") or []) or None,
        "baseline_json": json.dumps(rec, sort_keys=True),
    }
    _insert(con, "device_baselines", pl.DataFrame([row], schema=DEVICE_BASELINES))
    n = 0
    for f, fmt in baseline_files(bj):
        got = ahead.take(f) if ahead is not None else None
        res = ingest_file(
            con,
            f,
            fmt=fmt,
            run_id=bid,
            study=study,
            source_name=str(f.relative_to(raw.parent)),
            parsed=got[1] if got else None,
        )
        warnings += res.warnings
        n += 1
    return n


def baseline_files(bj: Path) -> list[tuple[Path, str]]:
    """A device baseline's fio reports and pg_test_fsync output (not empty), with their formats."""
    out = []
    for f in sorted(bj.parent.iterdir()):
        fmt = "fio" if f.suffix == ".json" and f.name not in ("baseline.json", "manifest.json") else None
        fmt = "pg-test-fsync" if f.name == "pg_test_fsync.txt" else fmt
        if fmt is not None and f.stat().st_size:
            out.append((f, fmt))
    return out


@dataclass
class StudySummary:
    runs: int = 0
    files: int = 0
    rows: int = 0
    failed_runs: list[str] = field(default_factory=list)
    skipped_runs: int = 0
    warnings: list[str] = field(default_factory=list)
    published_files: int = 0


def ingest_study(
    raw: Path, db_path: Path, *, progress: bool = True, external: Path | None = EXTERNAL_DIR
) -> StudySummary:
    """(Re)build the study database from a data/raw/<study>/ folder, atomically, with the published
    reference results of `external` (data/external/; None leaves them out)."""
    if not raw.is_dir():
        raise LabError(f"{raw}: no such study folder")
    study_file = raw / "study.yaml"
    if not study_file.exists():
        raise LabError(f"{study_file}: missing (every study folder carries its resolved config)")
    cfg = yaml_text.safe_load(study_file.read_text())
    summary = StudySummary()
    # every file parsed ahead, in the order stored: the published ones, the device baselines, the runs' logs
    files = [*(external_files(external) if external is not None else []), *folder_files(raw)]
    with (
        Prefetch(files) as ahead,
        new_study_database(db_path, cfg, study_file.read_text(), external, summary, ahead=ahead) as con,
    ):
        ingest_folder(con, raw, cfg, summary, progress=progress, ahead=ahead)
    return summary


@contextlib.contextmanager
def new_study_database(
    db_path: Path,
    cfg: dict[str, Any],
    config_yaml: str,
    external: Path | None,
    summary: StudySummary,
    *,
    ahead: Prefetch | None = None,
) -> Iterator[duckdb.DuckDBPyConnection]:
    """A study database built beside `db_path` (`.building`) and put in its place only when the block
    succeeds: a failed ingest leaves the old database as it was. Inside: the schema, the `study` row and
    the published reference results of `external` (None leaves them out); the caller adds the runs."""
    tmp = db_path.with_name(db_path.name + ".building")
    tmp.unlink(missing_ok=True)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        create_schema(con)
        row = {
            "study": cfg["study"],
            "title": cfg.get("title"),
            "authors": json.dumps(cfg.get("authors", [])),
            "config_yaml": config_yaml,
        }
        with batched(con):  # a new database, all or nothing anyway: rows stored together (batch.py)
            _insert(con, "study", pl.DataFrame([row], schema=STUDY))
            if external is not None:
                ext = ingest_external(con, external, ahead)
                summary.published_files = ext.files
                summary.warnings += ext.warnings
            yield con
        con.execute("CHECKPOINT")
    except BaseException:
        con.close()
        tmp.unlink(missing_ok=True)
        raise
    con.close()
    os.replace(tmp, db_path)


def ingest_folder(
    con: duckdb.DuckDBPyConnection,
    raw: Path,
    cfg: dict[str, Any],
    summary: StudySummary,
    *,
    progress: bool = True,
    host: str | None = None,
    source_prefix: str | None = None,
    ahead: Prefetch | None = None,
) -> None:
    """Targets, runs and logs of one raw folder into an open database. `host` (a merge of several
    machines' folders, pgfslab.ingest.merge) labels its runs and targets and ends its run ids in
    `@<host>`; `source_file` names are `<source_prefix>/<run-id>/<file>` (default prefix: the folder's name).
    `ahead`: a Prefetch holding `folder_files(raw)` (else the folder gets its own)."""
    if ahead is None:
        with Prefetch(folder_files(raw)) as own:
            ingest_folder(con, raw, cfg, summary, progress=progress, host=host, source_prefix=source_prefix, ahead=own)
        return
    prefix = Path(raw.name if source_prefix is None else source_prefix)
    for tj in sorted(raw.glob("_setup/*/target.json")):
        trec = json.loads(tj.read_text())
        if host is not None:
            trec["host_key"] = host
        _insert(con, "targets", pl.DataFrame([target_row(trec)], schema=TARGETS))
    for bj in _baselines(raw):
        summary.files += _ingest_baseline(con, bj, raw, cfg["study"], summary.warnings, ahead)
    _ingest_runs(con, raw, _run_dirs(raw), cfg, summary, ahead, progress=progress, host=host, prefix=prefix)


def _baselines(raw: Path) -> list[Path]:
    return sorted(raw.glob("_setup/*/device/baseline.json"))


def _run_dirs(raw: Path) -> list[Path]:
    return sorted(p for p in raw.iterdir() if p.is_dir() and not p.name.startswith(("_", ".")))


def folder_files(raw: Path) -> list[Path | tuple[Path, str]]:
    """The files `ingest_folder` parses, in its order: the device baselines' (with their formats), then the
    runs' logs (not empty)."""
    logs = [f for d in _run_dirs(raw) if (d / "run.json").exists() for f in _run_files(d) if f.stat().st_size]
    return [*(item for bj in _baselines(raw) for item in baseline_files(bj)), *logs]


def _ingest_runs(
    con: duckdb.DuckDBPyConnection,
    raw: Path,
    run_dirs: list[Path],
    cfg: dict[str, Any],
    summary: StudySummary,
    ahead: Prefetch,
    *,
    progress: bool,
    host: str | None,
    prefix: Path,
) -> None:
    for i, rdir in enumerate(run_dirs, 1):
        rj = rdir / "run.json"
        if not rj.exists():
            marker = rdir / "run.incomplete.json"
            if marker.exists():
                summary.warnings.append(f"{rdir}: incomplete run (no run.json), left out")
            continue
        try:
            rec = json.loads(rj.read_text())
        except json.JSONDecodeError as exc:
            raise LabError(f"{rj}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        if host is not None:
            suffix = f"@{host}"
            rec = {**rec, "host_key": host, "run_id": rec["run_id"].removesuffix(suffix) + suffix}
        _insert(con, "runs", pl.DataFrame([run_row(rec)], schema=RUNS))
        _insert(con, "run_params", pl.DataFrame(run_params(rec), schema=RUN_PARAMS))
        summary.runs += 1
        if rec.get("status") == "skipped":  # an optional precision round that was not needed: no output
            summary.skipped_runs += 1
            continue
        if rec.get("status") != "ok":
            summary.failed_runs.append(f"{rec['run_id']}: {rec.get('status')}: {rec.get('error')}")
        for f in _run_files(rdir):
            if f.stat().st_size == 0:  # an empty stream (a tool that printed nothing) holds no rows
                summary.warnings.append(f"{f}: not ingested (empty file)")
                continue
            # source_file is <study>/<run-id>/<file>: the same on every machine the folder is copied to
            got = ahead.take(f)
            try:
                res = ingest_file(
                    con,
                    f,
                    fmt=got[0] if got else None,
                    run_id=rec["run_id"],
                    study=cfg["study"],
                    source_name=str(prefix / f.relative_to(raw)),
                    parsed=got[1] if got else None,
                )
            except (parsers.ParseError, LabError) as exc:
                if rec.get("status") == "ok":
                    raise
                # a failed run's partial logs: what parses is in, the rest is said (never half a file)
                summary.warnings.append(f"{f}: not ingested (partial output of a failed run): {exc}")
                continue
            summary.files += 1
            summary.rows += res.rows
            summary.warnings += res.warnings
        if progress and (i % 10 == 0 or i == len(run_dirs)):
            print(
                f"[ingest {cfg['study']}{'@' + host if host else ''}] {i}/{len(run_dirs)} run folders, "
                f"{summary.rows} rows",
                file=sys.stderr,
                flush=True,
            )
