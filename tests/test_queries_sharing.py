"""The analysis questions share one read-only connection per database while they are asked together (inside
`queries.sharing()`), and hold none afterwards; outside a scope each question opens and closes its own, so a
writer in another process (`pgfslab ingest` writes into a database in place) can open the database while a
notebook's kernel stays open."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pgfslab.analysis import queries
from pgfslab.analysis.queries import connection

WRITE = "import duckdb, sys; c = duckdb.connect(sys.argv[1]); c.execute('INSERT INTO t VALUES (2)'); c.close()"


def _db(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1)")
    return db


def _writer(db: Path) -> subprocess.CompletedProcess[str]:
    """Another process opening the database to write (DuckDB refuses while a connection here holds it)."""
    return subprocess.run([sys.executable, "-c", WRITE, str(db)], capture_output=True, text=True, timeout=60)


def test_questions_asked_together_share_one_connection_and_release_it(tmp_path: Path) -> None:
    db = _db(tmp_path)
    opened: list[object] = []
    real = connection.connect

    def counting(path: str | Path) -> duckdb.DuckDBPyConnection:
        con = real(path)
        opened.append(con)
        return con

    connection.connect = counting  # type: ignore[assignment]
    try:
        with queries.sharing():
            assert queries.frame(db, "SELECT sum(x) AS s FROM t")["s"][0] == 1
            assert queries.has_table(db, "t") and not queries.has_table(db, "u")
            assert len(opened) == 1
            assert _writer(db).returncode != 0  # held while the questions go on
        assert _writer(db).returncode == 0, "the shared connection outlived its scope"
        # outside a scope every question opens and closes its own
        assert queries.frame(db, "SELECT sum(x) AS s FROM t")["s"][0] == 3
        assert queries.frame(db, "SELECT count(*) AS n FROM t")["n"][0] == 2
        assert len(opened) == 3
    finally:
        connection.connect = real  # type: ignore[assignment]


def test_a_database_replaced_meanwhile_is_read_afresh(tmp_path: Path) -> None:
    db = _db(tmp_path)
    other = tmp_path / "new.duckdb"
    with duckdb.connect(str(other)) as con:
        con.execute("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (40), (2)")
    with queries.sharing():
        assert queries.frame(db, "SELECT sum(x) AS s FROM t")["s"][0] == 1
        other.replace(db)  # a new ingest renames its database into place
        assert queries.frame(db, "SELECT sum(x) AS s FROM t")["s"][0] == 42


def test_in_a_kernel_no_connection_outlives_a_question(tmp_path: Path) -> None:
    """A real IPython shell: after a question, even within the same cell, and after the cell, a writer gets in."""
    pytest.importorskip("IPython")
    db = _db(tmp_path)
    code = f"""
import subprocess, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
WRITE = {WRITE!r}
def writer():
    return subprocess.run([sys.executable, "-c", WRITE, {str(db)!r}], capture_output=True).returncode
shell.user_ns["writer"] = writer
r = shell.run_cell("from pgfslab.analysis import queries\\n"
                   "a = queries.frame({str(db)!r}, 'SELECT sum(x) AS s FROM t')['s'][0]\\n"
                   "during = writer()")
r.raise_error()
after = writer()
print(shell.user_ns["a"], shell.user_ns["during"] == 0, after == 0)
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["1", "True", "True"]
