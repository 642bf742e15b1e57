"""The ingest command's start for plain per-transaction logs: DuckDB alone, before polars, numpy or
yaml are imported (together 0.7–1 s of a process's start here, more than the rest of the command
on a million-line log).

`python -m pgfslab ingest --db X.duckdb tx.log ...` comes here first. When every file is a plain
pgbench per-transaction log (its first 64 KiB only digits, spaces and newlines, its first line the
format's shape) and the database is new or holds exactly the lab's schema, the files go through
the same DuckDB fast path as in `load.ingest_file` (`store.direct` with `pgbench_txlog`'s
`load_direct`), with the schema created from `schema.sql` (the statements `schema.create_schema`
runs, written by `python -m pgfslab schema --sql`; a test checks that they agree). Anything else
(another format, an older database, a file the fast path declines) returns None with the database
as it was, and the command takes the full ingest, which reads every format.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from pgfslab.ingest import store
from pgfslab.ingest import txlog_direct as txlog

SCHEMA_SQL = Path(__file__).with_name("schema.sql")
FORMAT = "pgbench-txlog"
TABLE = "pgbench_txlog"


def _tables_of(fmt: str) -> tuple[str, ...] | None:
    return (TABLE,) if fmt == FORMAT else None


def _plain(path: Path) -> bool:
    """A plain per-transaction log: digits, spaces and newlines only at its start, and a first line
    of the format's shape (what `detect_format` would call pgbench-txlog: an aggregate log's line
    starts with an epoch and has another field count)."""
    if not path.is_file() or not store.numeric_head(path, txlog.NUMERIC_ALPHABET):
        return False
    line = txlog.first_line(path).decode("ascii", errors="replace")
    return txlog._SNIFF.fullmatch(line) is not None and len(line.split(" ")) in (6, 7, 8)


def statements() -> list[str]:
    """The statements of schema.sql (one per line; `--` lines are comments)."""
    return [ln for ln in SCHEMA_SQL.read_text().splitlines() if ln.strip() and not ln.startswith("--")]


def _catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[str, ...]]:
    """Every table's and view's columns and types, and the sequences: what must match schema.sql."""
    cols = con.execute(
        "SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE NOT internal "
        "AND database_name = current_database() AND schema_name = current_schema() ORDER BY ALL"
    ).fetchall()
    seqs = con.execute(
        "SELECT sequence_name FROM duckdb_sequences() WHERE database_name = current_database() ORDER BY ALL"
    ).fetchall()
    return [tuple(map(str, r)) for r in cols + seqs]


def _ready(con: duckdb.DuckDBPyConnection) -> bool:
    """Create the schema in an empty database; True when it is (now) exactly the lab's schema."""
    if not _catalog(con):
        con.execute("BEGIN TRANSACTION")
        try:
            for sql in statements():
                con.execute(sql)
            con.execute("COMMIT")
        except BaseException:
            store.rollback(con)
            raise
        return True
    fresh = duckdb.connect(":memory:")
    try:
        for sql in statements():
            fresh.execute(sql)
        return _catalog(fresh) == _catalog(con)
    finally:
        fresh.close()


def _file_row(con: duckdb.DuckDBPyConnection, path: Path, *args: object) -> None:
    store.insert_row(con, "files", store.files_row(path, *args))  # type: ignore[arg-type]


def ingest(
    db: Path,
    paths: list[Path],
    *,
    fmt: str | None,
    run_id: str | None,
    study: str | None,
    origin: str,
) -> list[store.FileResult]:
    """Ingest `paths` into `db` by the fast path, in order, as long as it applies: the results of
    the files it took (a prefix of `paths`: none when the database or the first file is not for this
    path); the caller ingests the others the full way. Each file is one transaction, as in
    `load.ingest_file`."""
    if fmt not in (None, FORMAT) or not paths or not _plain(paths[0]):
        return []
    done: list[store.FileResult] = []
    con = duckdb.connect(str(db))
    try:
        if not _ready(con):
            return []
        for path in paths:
            if not _plain(path):
                break
            target = store.Target(FORMAT, TABLE, str(path), run_id, study, origin)
            res = store.direct(
                con,
                path,
                txlog.load_direct,
                target,
                None,
                txlog.NUMERIC_ALPHABET,
                tables_of=_tables_of,
                file_row=_file_row,
            )
            if res is None:
                break
            done.append(res)
        return done
    finally:
        con.close()
