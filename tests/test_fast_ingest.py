"""The ingest command's fast start (pgfslab.ingest.fast): plain per-transaction logs by DuckDB alone,
without importing polars, into the same database the full ingest builds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pgfslab.cli import main as cli
from pgfslab.ingest import fast
from pgfslab.ingest import load as ingest
from pgfslab.ingest.schema import create_schema, schema_sql

DATA = Path(__file__).parent / "data"
PLAIN = DATA / "pg15" / "tx_sampled.25763"  # a real pgbench 15 --log --sampling-rate file: digits and spaces only
WITH_WORDS = DATA / "pg15" / "skip_tx.25812"  # --rate with `skipped` transactions: not plain
TORN = DATA / "pg15" / "killed_tx.26535.tail"  # a killed run's log: its last line has no newline
STDOUT = DATA / "pg15" / "tpcb.stdout"


def catalog(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    cols = con.execute(
        "SELECT table_name, column_name, data_type, column_index FROM duckdb_columns() WHERE NOT internal ORDER BY ALL"
    ).fetchall()
    views = con.execute("SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL").fetchall()
    seqs = con.execute(
        "SELECT sequence_name, start_value, increment_by FROM duckdb_sequences() ORDER BY ALL"
    ).fetchall()
    return cols + views + seqs


def test_schema_sql_is_what_create_schema_runs() -> None:
    assert fast.SCHEMA_SQL.read_text() == schema_sql(), (
        "pgfslab/ingest/schema.sql is stale: python -m pgfslab schema --sql > pgfslab/ingest/schema.sql"
    )
    full, quick = duckdb.connect(":memory:"), duckdb.connect(":memory:")
    create_schema(full)
    assert fast._ready(quick)
    assert catalog(quick) == catalog(full)
    assert fast._ready(full)  # a database of the lab's schema takes the fast path too
    create_schema(quick)  # and the full ingest accepts the fast path's database as it is
    assert catalog(quick) == catalog(full)


def rows(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        files = con.execute(
            "SELECT file_id, source_file, format, run_id, bytes, rows, warnings, origin, file_no, lines, lines_parsed, "
            "lines_noise, lines_not_understood FROM files ORDER BY file_no"
        ).fetchall()
        tx = con.execute("SELECT * FROM pgbench_txlog ORDER BY ALL").fetchall()
    finally:
        con.close()
    return files, tx


def test_cli_fast_start_stores_what_the_full_ingest_stores(tmp_path: Path) -> None:
    quick, full = tmp_path / "fast.duckdb", tmp_path / "full.duckdb"
    assert [r.path for r in fast.ingest(quick, [PLAIN], fmt=None, run_id=None, study=None, origin="local")] == [PLAIN]
    con = duckdb.connect(str(full))
    create_schema(con)
    assert ingest.ingest_file(con, PLAIN).direct
    con.close()
    assert rows(quick) == rows(full)
    assert rows(quick)[0][0][5] == len(PLAIN.read_bytes().splitlines()) == 124
    # again: the same file replaces its rows
    assert cli.main(["ingest", "--db", str(quick), str(PLAIN)]) == 0
    assert rows(quick)[1] == rows(full)[1] and len(rows(quick)[0]) == 1


def test_cli_takes_the_rest_the_full_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "mixed.duckdb"
    assert cli.main(["ingest", "--db", str(db), str(PLAIN), str(WITH_WORDS), str(STDOUT), str(TORN)]) == 0
    out = capsys.readouterr().out
    for p, fmt in ((PLAIN, "pgbench-txlog"), (WITH_WORDS, "pgbench-txlog"), (STDOUT, "pgbench-summary"), (TORN, "")):
        assert f"{p}: {fmt}" in out
    con = duckdb.connect(str(db), read_only=True)
    got = con.execute("SELECT source_file, format, lines_not_understood FROM files ORDER BY file_no").fetchall()
    con.close()
    assert got == [
        (str(PLAIN), "pgbench-txlog", 0),
        (str(WITH_WORDS), "pgbench-txlog", 0),
        (str(STDOUT), "pgbench-summary", 0),
        (str(TORN), "pgbench-txlog", 1),  # the torn last line, counted and kept by the exact parser
    ]


def test_fast_start_declines_what_is_not_for_it(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE files (file_id VARCHAR)")  # an older or foreign database: untouched
    con.close()
    assert fast.ingest(db, [PLAIN], fmt=None, run_id=None, study=None, origin="local") == []
    assert fast.ingest(tmp_path / "n.duckdb", [STDOUT], fmt=None, run_id=None, study=None, origin="local") == []
    assert (
        fast.ingest(tmp_path / "n.duckdb", [PLAIN], fmt="pgbench-aggregate", run_id=None, study=None, origin="x") == []
    )
    con = duckdb.connect(str(db))
    assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == [("files",)]
    con.close()


def test_fast_start_does_not_import_polars(tmp_path: Path) -> None:
    """The point of it: the command's start without polars, numpy or yaml (0.7-1 s here)."""
    code = (
        "import sys\n"
        "from pgfslab.cli import main\n"
        f"assert main.main(['ingest', '--db', {str(tmp_path / 'p.duckdb')!r}, {str(PLAIN)!r}]) == 0\n"
        "print(sorted(m for m in ('polars', 'numpy', 'yaml', 'pgfslab.ingest.parsers') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
